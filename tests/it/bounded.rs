//! Bounded work on hostile input, through the real binary: oversized files are refused by
//! the limit that names them, a file of very many problems gets a bounded report, and no
//! raw control byte from a file reaches the terminal. Never asserts a time: the bounds are
//! counted in diagnostics.

use crate::common;

use std::path::Path;

use acompose_engine::limits::{self, MAX_DIAGNOSTICS_PER_FILE};
use common::{acompose, write_embedded};

/// The hostile package: `person.kdl` followed by `count` small unknown nodes of
/// `width` bytes each (newline included).
fn package_of_unknown_nodes(root: &Path, count: usize, width: usize) {
    write_embedded(root);
    let mut text = String::from("person \"core\"\n");
    for index in 0..count {
        // Names of one width, made unique when there is room for digits.
        let name = if width > 2 { format!("n{index:0>digits$}", digits = width - 2) } else { "n".to_owned() };
        text.push_str(&name);
        text.push('\n');
    }
    std::fs::write(root.join("person.kdl"), text).expect("write person.kdl");
}

/// The rendered diagnostic headers (` × message` lines) of some output.
fn reported(output: &str) -> usize {
    output.lines().filter(|line| line.trim_start().starts_with('×')).count()
}

#[test]
fn the_six_megabyte_package_of_437000_nodes_is_refused_by_its_size_limit() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let package = temporary.path().join("pkg");
    package_of_unknown_nodes(&package, 437_000, 14);
    let size = std::fs::metadata(package.join("person.kdl")).expect("stat").len();
    assert!(size > 6_000_000, "the package is the issue's size: {size}");
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains(limits::KDL_PACKAGE_FILE.code), "{}", output.stderr);
    assert!(reported(&output.stderr) <= MAX_DIAGNOSTICS_PER_FILE + 1, "{}", output.stderr);
}

#[test]
fn a_package_of_437000_unknown_nodes_under_the_limit_gets_a_bounded_report() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let package = temporary.path().join("pkg");
    package_of_unknown_nodes(&package, 437_000, 2);
    let size = std::fs::metadata(package.join("person.kdl")).expect("stat").len();
    assert!(size <= limits::KDL_PACKAGE_FILE.bytes as u64, "under the limit: {size}");
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    let unknown = output.stderr.lines().filter(|line| *line == "unknown-node").count();
    assert_eq!(unknown, MAX_DIAGNOSTICS_PER_FILE, "{}", &output.stderr[..2000.min(output.stderr.len())]);
    let omitted = 437_000 - MAX_DIAGNOSTICS_PER_FILE;
    assert!(output.stderr.contains(&format!("and {omitted} more diagnostics in this file")), "{}", output.stderr);
    assert_eq!(reported(&output.stderr), MAX_DIAGNOSTICS_PER_FILE + 1);
}

#[test]
fn a_fifty_megabyte_skill_document_gets_a_size_error() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let package = temporary.path().join("pkg");
    write_embedded(&package);
    let skill = package.join("roles/platform/SKILL.md");
    let mut text = std::fs::read_to_string(&skill).expect("read skill");
    let paragraph = "Words of a paragraph that goes on.\n\n";
    text.push_str(&paragraph.repeat(50 * 1024 * 1024 / paragraph.len()));
    std::fs::write(&skill, text).expect("write skill");
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains(limits::SKILL_DOCUMENT.code), "{}", output.stderr);
    assert!(output.stderr.contains("roles/platform/SKILL.md"), "{}", output.stderr);
    assert!(output.stderr.contains("over the limit of 4 MiB"), "{}", output.stderr);
}

#[test]
fn an_oversized_request_gets_a_size_error() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("compose {\n    role \"platform\"\n}\n");
    // Comments keep the request valid KDL: only its size is wrong.
    while text.len() <= limits::REQUEST_KDL.bytes {
        text.push_str("// a comment line that only takes up room in the request file\n");
    }
    std::fs::write(temporary.path().join("request.kdl"), text).expect("write request");
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains(limits::REQUEST_KDL.code), "{}", output.stderr);
    assert!(!temporary.path().join("out").exists(), "nothing was written");
}

#[test]
fn an_oversized_trace_is_refused_by_describe_diff_and_verify() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    common::copy_dir(&common::fixtures().join("compose/selector-star"), &root.join("case"));
    common::copy_dir(&common::fixtures().join("roster/base"), &root.join("person-base"));
    let case = root.join("case");
    let composed = acompose(&case, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(composed.code, 0, "{}", composed.stderr);
    let bundle = std::fs::read_dir(case.join("out"))
        .expect("out")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_dir())
        .expect("a bundle");
    let bundle = bundle.to_str().expect("utf-8").to_owned();
    assert_eq!(acompose(&case, &["describe", &bundle]).code, 0);
    // Trailing whitespace keeps the trace valid JSON: only its size is wrong.
    let trace = Path::new(&bundle).join("trace.json");
    let mut bytes = std::fs::read(&trace).expect("trace");
    bytes.resize(limits::BUNDLE_TRACE.bytes + 1, b' ');
    std::fs::write(&trace, bytes).expect("write trace");
    for arguments in [vec!["describe", &bundle], vec!["diff", &bundle, &bundle], vec!["verify", &bundle]] {
        let output = acompose(&case, &arguments);
        assert_ne!(output.code, 0, "{arguments:?}");
        let all = format!("{}{}", output.stdout, output.stderr);
        assert!(all.contains(limits::BUNDLE_TRACE.code), "{arguments:?}: {all}");
    }
}

/// Every C0 control byte and DEL.
fn control_bytes() -> impl Iterator<Item = u8> {
    (0x00..=0x1f).chain(std::iter::once(0x7f))
}

/// Fails when `output` holds a control byte other than a newline.
fn assert_no_raw_control(output: &str, context: &str) {
    if let Some(byte) = output.bytes().find(|byte| (*byte < 0x20 && *byte != b'\n') || *byte == 0x7f) {
        panic!("{context}: raw byte {byte:#04x} in output:\n{}", output.escape_debug());
    }
}

#[test]
fn no_control_byte_from_a_file_reaches_the_terminal() {
    for byte in control_bytes() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let package = temporary.path().join("pkg");
        write_embedded(&package);
        let escaped = format!("\\u{{{byte:x}}}");
        // Names and values, through KDL escapes: an unknown node and property, a bad slug.
        let person = format!("person \"core\"\n\"node{escaped}\" \"value{escaped}\" key{byte:x}=\"v{escaped}\"\n");
        std::fs::write(package.join("person.kdl"), person).expect("person");
        let role = package.join("roles/02-sysadmin.kdl");
        let text = std::fs::read_to_string(&role).expect("role");
        std::fs::write(&role, text.replacen("\"sysadmin\"", &format!("\"sys{escaped}admin\""), 1)).expect("role");
        // Snippets: the raw byte in a file that fails to parse, on the reported line.
        let mut raw = b"role \"eval\" {\n    purpose \"x".to_vec();
        raw.push(byte);
        raw.extend_from_slice(b"\" = =\n}\n");
        std::fs::write(package.join("roles/03-eval.kdl"), raw).expect("raw");
        // Names of files (NUL cannot be in one).
        if byte != 0 {
            let name = format!("roles/99-x{}.kdl", char::from(byte));
            std::fs::write(package.join(name), "role \"x\"\n").expect("odd file name");
        }
        for verbose in [false, true] {
            let mut arguments = vec!["roster", "validate", "--person-source", "pkg"];
            if verbose {
                arguments.push("-v");
            }
            let output = acompose(temporary.path(), &arguments);
            assert_eq!(output.code, 1, "byte {byte:#04x}: {}", output.stderr);
            assert!(reported(&output.stderr) >= 3, "byte {byte:#04x}: {}", output.stderr);
            assert_no_raw_control(&output.stdout, &format!("stdout, byte {byte:#04x}"));
            assert_no_raw_control(&output.stderr, &format!("stderr, byte {byte:#04x}"));
        }
    }
}

#[test]
fn a_roles_kdl_of_many_unknown_references_gets_a_bounded_report_with_short_hints() {
    let mut text = String::from("repositories {\n");
    for index in 0..50 {
        text.push_str(&format!("    repository known{index} path=\"acme/known{index}\"\n"));
    }
    text.push_str("}\nroles {\n    role platform {\n");
    for index in 0..20_000 {
        text.push_str(&format!("        use-repository missing{index}\n"));
    }
    text.push_str("    }\n}\n");
    let db = acompose_engine::Database::default();
    let file = acompose_engine::SourceFile::new(
        &db,
        "root".to_owned(),
        ".agents/roles.kdl".to_owned(),
        text.into_bytes().into(),
    );
    let parsed = acompose_engine::provider::trusted_root(&db, file);
    assert_eq!(parsed.value.repositories.len(), 50);
    assert_eq!(parsed.diagnostics.len(), MAX_DIAGNOSTICS_PER_FILE + 1);
    let last = parsed.diagnostics.last().expect("a summary");
    assert_eq!(last.code, limits::OMITTED_DIAGNOSTICS_CODE);
    assert!(last.message.starts_with(&format!("and {} more", 20_000 - MAX_DIAGNOSTICS_PER_FILE)), "{}", last.message);
    let hint = &parsed.diagnostics[0].hints[0];
    assert!(hint.contains("known0") && hint.ends_with("and 40 more"), "{hint}");
}

#[test]
fn an_oversized_roles_kdl_is_refused_unparsed() {
    let db = acompose_engine::Database::default();
    let bytes = vec![b'\n'; limits::ROLES_KDL.bytes + 1];
    let file = acompose_engine::SourceFile::new(&db, "root".to_owned(), ".agents/roles.kdl".to_owned(), bytes.into());
    let parsed = acompose_engine::provider::trusted_root(&db, file);
    let codes: Vec<&str> = parsed.diagnostics.iter().map(|diagnostic| diagnostic.code).collect();
    assert_eq!(codes, [limits::ROLES_KDL.code]);
}

/// Every file under `root` with its bytes, for byte-identical comparisons.
fn tree_bytes(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| {
            let relative = entry.path().strip_prefix(root).expect("under root").to_string_lossy().into_owned();
            (relative, std::fs::read(entry.path()).expect("read"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn an_unportable_skill_folder_name_is_refused_where_the_catalogue_is_read() {
    for name in ["esc\u{1b}[31mred", "new\nline", "con", "bell\u{7}"] {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        let (home, projects) = common::generated_estate(root, 2);
        let bare = ["--home", "home", "--projects-root", "projects"];
        assert_eq!(acompose(root, &bare).code, 0);
        // The lock file is rewritten by every run; everything else must stay as it was.
        let before: Vec<_> =
            tree_bytes(&home).into_iter().filter(|(path, _)| !path.ends_with(".acompose.lock")).collect();
        let folder = projects.join("example/repo0/.agents/skills").join(name);
        std::fs::create_dir_all(&folder).expect("odd folder");
        std::fs::write(folder.join("SKILL.md"), "---\nname: odd\ndescription: Odd.\n---\n\nOdd.\n").expect("skill");
        let context = name.escape_debug().to_string();
        let output = acompose(root, &bare);
        assert_eq!(output.code, 1, "{context}: an input error: {}", output.stderr);
        assert!(output.stderr.contains("unportable-name"), "{context}: {}", output.stderr);
        assert_no_raw_control(&output.stdout, &context);
        assert_no_raw_control(&output.stderr, &context);
        let after: Vec<_> =
            tree_bytes(&home).into_iter().filter(|(path, _)| !path.ends_with(".acompose.lock")).collect();
        assert!(before == after, "{context}: previous bundles and index are byte-identical");
        // `compose` refuses it the same way.
        std::fs::write(
            root.join("request.kdl"),
            "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"root\" root=\"projects/acme/root\"\n}\n",
        )
        .expect("request");
        let composed = acompose(root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
        assert_eq!(composed.code, 1, "{context}: {}", composed.stderr);
        assert_no_raw_control(&composed.stderr, &context);
        assert!(!root.join("out").exists() || std::fs::read_dir(root.join("out")).expect("out").count() <= 1);
    }
}

#[test]
fn a_roles_kdl_naming_100000_missing_repositories_gets_a_bounded_report() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (_home, projects) = common::generated_estate(root, 1);
    let mut roles = String::from("repositories {\n");
    for index in 0..100_000 {
        roles.push_str(&format!("    repository missing{index} path=\"nowhere/missing{index}\"\n"));
    }
    roles.push_str("}\nroles {\n    role platform {\n");
    for index in 0..100_000 {
        roles.push_str(&format!("        use-repository missing{index}\n"));
    }
    roles.push_str("    }\n}\n");
    std::fs::write(projects.join("acme/root/.agents/roles.kdl"), roles).expect("roles.kdl");
    let output = acompose(root, &["--home", "home", "--projects-root", "projects"]);
    let shown = reported(&output.stderr);
    assert!(shown <= MAX_DIAGNOSTICS_PER_FILE + 1, "at most the bound and a summary: {shown}");
    assert!(output.stderr.len() < 200_000, "a bounded report: {} bytes", output.stderr.len());
    assert!(output.code == 0 || output.code == 1, "{}", output.stderr);
    if shown > MAX_DIAGNOSTICS_PER_FILE {
        assert!(output.stderr.contains(limits::OMITTED_DIAGNOSTICS_CODE), "{}", output.stderr);
    }
}

#[test]
fn no_control_byte_from_an_estate_reaches_the_terminal() {
    for byte in control_bytes() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        let (_home, projects) = common::generated_estate(root, 1);
        let raw = char::from(byte);
        // A folder name (NUL and `/` cannot be in one), a frontmatter name and value, and a
        // body line, all holding the raw byte.
        let skills = projects.join("example/repo0/.agents/skills");
        if byte != 0 {
            let folder = skills.join(format!("odd{raw}name"));
            std::fs::create_dir_all(&folder).expect("odd folder");
            std::fs::write(folder.join("SKILL.md"), "---\nname: odd\ndescription: Odd.\n---\n\nOdd.\n").expect("skill");
        }
        let text = format!("---\nname: skill0{raw}alpha\ndescription: The {raw} skill.\n---\n\nA body {raw} line.\n");
        std::fs::write(skills.join("skill0-alpha/SKILL.md"), text).expect("skill");
        std::fs::write(
            root.join("request.kdl"),
            "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"root\" root=\"projects/acme/root\"\n}\n",
        )
        .expect("request");
        let context = format!("byte {byte:#04x}");
        for arguments in [
            vec!["--home", "home", "--projects-root", "projects"],
            vec!["--home", "home", "--projects-root", "projects", "-v"],
            vec!["compose", "request.kdl", "--out", "out", "--projects-root", "projects"],
        ] {
            let output = acompose(root, &arguments);
            assert!(matches!(output.code, 0 | 1), "{context} {arguments:?}: {}", output.stderr);
            assert_no_raw_control(&output.stdout, &format!("stdout, {context}, {arguments:?}"));
            assert_no_raw_control(&output.stderr, &format!("stderr, {context}, {arguments:?}"));
        }
    }
}

/// The `roles_kdl` fuzz target's timeout (243 bytes of nested `/-{` blocks that kept the
/// KDL parser busy for minutes): refused before parsing.
#[test]
fn the_fuzzed_roles_kdl_of_nested_slashdash_blocks_is_refused_unparsed() {
    // The first timeout, and the slow base of the second (1.3 s on a release build: `/-`
    // followed by other tokens before each `{`).
    for bytes in [
        include_bytes!("../fixtures/fuzz/roles_kdl-timeout-440f2465.kdl").to_vec(),
        include_bytes!("../fixtures/fuzz/roles_kdl-slow-507add82.kdl").to_vec(),
    ] {
        let db = acompose_engine::Database::default();
        let file =
            acompose_engine::SourceFile::new(&db, "root".to_owned(), ".agents/roles.kdl".to_owned(), bytes.into());
        let parsed = acompose_engine::provider::trusted_root(&db, file);
        let codes: Vec<&str> = parsed.diagnostics.iter().map(|diagnostic| diagnostic.code).collect();
        assert!(codes.contains(&"kdl-too-deep"), "{codes:?}");
    }
}
