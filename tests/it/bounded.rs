//! Bounded work on hostile input, through the real binary: oversized files are refused by
//! the limit that names them, a file of very many problems gets a bounded report, and no
//! raw control byte from a file reaches the terminal. Never asserts a time: the bounds are
//! counted in diagnostics.

use crate::common;

use std::path::{Path, PathBuf};

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

/// A bundle composed from the `selector-star` fixture under `root`: the case folder and
/// the bundle's folder (`case/out/<id>`).
fn composed_bundle(root: &Path) -> (PathBuf, PathBuf) {
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
    (case, bundle)
}

#[test]
fn an_oversized_trace_is_refused_by_describe_diff_and_verify() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (case, bundle) = composed_bundle(temporary.path());
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

/// Fails when `output` holds a control character other than a newline (C0, DEL, C1), a
/// line or paragraph separator, or a bidirectional formatting character.
fn assert_no_raw_control(output: &str, context: &str) {
    let hostile = |character: char| {
        (character.is_control() && character != '\n')
            || matches!(character, '\u{2028}' | '\u{2029}' | '\u{61c}' | '\u{200e}' | '\u{200f}')
            || ('\u{202a}'..='\u{202e}').contains(&character)
            || ('\u{2066}'..='\u{2069}').contains(&character)
    };
    if let Some(character) = output.chars().find(|character| hostile(*character)) {
        panic!("{context}: raw {} in output:\n{}", character.escape_unicode(), output.escape_debug());
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

/// A name that retitles and clears a terminal, forges a line and reverses what follows
/// it, if it is printed as it is.
const HOSTILE_NAME: &str = "x\u{1b}]0;PWNED\u{7}\u{1b}[2J\nforged line \u{202e}txt.exe";

/// Fails when a line of `output` starts where a newline inside [`HOSTILE_NAME`] would
/// have started one.
fn assert_no_forged_line(output: &str, context: &str) {
    assert!(!output.lines().any(|line| line.starts_with("forged line")), "{context}: a forged line:\n{output}");
}

/// `bundle export` of `bundle` into `case/<name>`, with `extra` regular files appended
/// under the bundle's folder (after its own entries).
fn archive_with(case: &Path, bundle: &Path, name: &str, extra: impl Iterator<Item = (String, Vec<u8>)>) -> PathBuf {
    let plain = case.join("plain.tar");
    let exported = acompose(case, &["bundle", "export", bundle.to_str().expect("utf-8"), "--out", "plain.tar"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let id = bundle.file_name().expect("an id").to_string_lossy().into_owned();
    let mut builder = tar::Builder::new(std::fs::File::create(case.join(name)).expect("create the archive"));
    let mut archive = tar::Archive::new(std::fs::File::open(&plain).expect("open the export"));
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("an entry");
        let mut header = entry.header().clone();
        let path = entry.path().expect("a path").into_owned();
        builder.append_data(&mut header, path, &mut entry).expect("copy an entry");
    }
    for (path, bytes) in extra {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        builder.append_data(&mut header, format!("{id}/{path}"), bytes.as_slice()).expect("an extra entry");
    }
    builder.into_inner().expect("finish the archive");
    case.join(name)
}

#[test]
fn a_hostile_name_in_an_archive_or_a_bundle_reaches_the_terminal_escaped() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (case, bundle) = composed_bundle(temporary.path());
    // `bundle import`: the name of a tar entry.
    let archive =
        archive_with(&case, &bundle, "hostile.tar", std::iter::once((HOSTILE_NAME.to_owned(), b"x".to_vec())));
    let file = archive.to_str().expect("utf-8");
    let imported = acompose(&case, &["bundle", "import", file, "--out", "imported"]);
    assert_eq!(imported.code, 1, "{}", imported.stderr);
    assert!(imported.stderr.contains("not a valid bundle"), "{}", imported.stderr);
    assert_no_raw_control(&imported.stderr, "bundle import");
    assert_no_forged_line(&imported.stderr, "bundle import");
    // `verify`: the name of a file inside a bundle folder.
    let copy = case.join("copy").join(bundle.file_name().expect("an id"));
    common::copy_dir(&bundle, &copy);
    std::fs::write(copy.join(HOSTILE_NAME), "x").expect("a hostile file name");
    for json in [false, true] {
        let mut arguments = vec!["verify", copy.to_str().expect("utf-8")];
        if json {
            arguments.push("--json");
        }
        let verified = acompose(&case, &arguments);
        assert_eq!(verified.code, 1, "{}", verified.stderr);
        let all = format!("{}{}", verified.stdout, verified.stderr);
        assert!(all.contains("not portable"), "{all}");
        assert_no_raw_control(&all, &format!("verify, json {json}"));
        assert_no_forged_line(&all, "verify");
    }
}

#[test]
fn a_right_to_left_override_in_a_skill_folder_name_is_shown_escaped() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (_home, projects) = common::generated_estate(root, 1);
    let folder = projects.join("example/repo0/.agents/skills/odd\u{202e}gnp.exe");
    std::fs::create_dir_all(&folder).expect("odd folder");
    std::fs::write(folder.join("SKILL.md"), "---\nname: odd\ndescription: Odd.\n---\n\nOdd.\n").expect("skill");
    let output = acompose(root, &["--home", "home", "--projects-root", "projects"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("unportable-name"), "{}", output.stderr);
    assert_no_raw_control(&output.stdout, "stdout");
    assert_no_raw_control(&output.stderr, "stderr");
}

#[test]
fn a_fifteen_mebibyte_line_in_roles_kdl_gets_a_diagnostic_of_a_few_kilobytes() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (_home, projects) = common::generated_estate(root, 1);
    let long = "a".repeat(15 << 20);
    let roles = format!(
        "repositories {{\n    repository repo0 path=\"example/repo0\"\n    repository big path=\"{long}\"\n}}\nroles {{\n    role platform {{\n        use-repository repo0\n    }}\n}}\n"
    );
    assert!(roles.len() < limits::ROLES_KDL.bytes, "under the limit");
    std::fs::write(projects.join("acme/root/.agents/roles.kdl"), roles).expect("roles.kdl");
    let output = acompose(root, &["--home", "home", "--projects-root", "projects"]);
    assert_eq!(output.code, 1, "{}", &output.stderr[..output.stderr.len().min(4000)]);
    assert!(output.stderr.contains("roles.kdl:3:"), "{}", &output.stderr[..output.stderr.len().min(4000)]);
    // Before: 70.8 MB, the whole line as a snippet and a 47 MB underline.
    assert!(output.stderr.len() < 8 * 1024, "{} bytes:\n{}", output.stderr.len(), &output.stderr[..4000]);
    assert!(output.stderr.contains('…'), "the cut is marked:\n{}", output.stderr);
}

#[test]
fn skills_with_four_megabyte_descriptions_print_a_few_kilobytes_of_warnings() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (_home, projects) = common::generated_estate(root, 1);
    let description = "Long words. ".repeat(3_900_000 / 12);
    for index in 0..3 {
        let name = format!("long{index}");
        let folder = projects.join(format!("example/repo0/.agents/skills/{name}"));
        std::fs::create_dir_all(&folder).expect("folder");
        let text = format!("---\nname: {name}\ndescription: {description}\n---\n\nBody.\n");
        assert!(text.len() < limits::SKILL_DOCUMENT.bytes);
        std::fs::write(folder.join("SKILL.md"), text).expect("skill");
    }
    for run in 0..2 {
        let output = acompose(root, &["--home", "home", "--projects-root", "projects"]);
        assert!(matches!(output.code, 0 | 1), "run {run}: {}", &output.stderr[..output.stderr.len().min(4000)]);
        // Before: 12 MB of warnings on every run.
        assert!(output.stderr.len() < 32 * 1024, "run {run}: {} bytes", output.stderr.len());
    }
}

#[test]
fn an_archive_of_a_bundle_and_99000_extra_entries_gets_a_short_error() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (case, bundle) = composed_bundle(temporary.path());
    let extra = (0..99_000).map(|index| (format!("extra/file{index}.md"), Vec::new()));
    let archive = archive_with(&case, &bundle, "crowded.tar", extra);
    let imported = acompose(&case, &["bundle", "import", archive.to_str().expect("utf-8"), "--out", "imported"]);
    assert_eq!(imported.code, 1, "{}", &imported.stderr[..imported.stderr.len().min(4000)]);
    // Before: one error line of 7.2 MB.
    assert!(imported.stderr.len() < 4 * 1024, "{} bytes", imported.stderr.len());
    assert!(imported.stderr.contains("more"), "the rest is counted: {}", imported.stderr);
}

#[test]
fn a_package_of_many_files_of_many_problems_gets_a_report_cut_at_its_byte_cap() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let package = temporary.path().join("pkg");
    write_embedded(&package);
    let mut unknown = String::new();
    for index in 0..150 {
        unknown.push_str(&format!("unknown-node-with-a-long-name-{index} \"and a value that takes room\"\n"));
    }
    std::fs::create_dir_all(package.join("inspirations")).expect("inspirations");
    for index in 0..60 {
        std::fs::write(package.join(format!("inspirations/{index:02}-extra{index}.kdl")), &unknown).expect("file");
    }
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg"]);
    assert_eq!(output.code, 1);
    let cap = acompose_cli::terminal::MAX_RENDERED_BYTES;
    assert!(output.stderr.len() < cap + 16 * 1024, "{} bytes", output.stderr.len());
    assert!(output.stderr.contains("more diagnostics not shown"), "{}", &output.stderr[output.stderr.len() - 2000..]);
    assert!(output.stderr.trim_end().ends_with("warnings)"), "the count comes last");
}

/// The peak memory allowed to a run refused by a count limit or a streaming check, in
/// KiB: a debug build starts at about 20 MiB; the reproductions took 1 to 2.5 GiB.
const REFUSAL_PEAK_KIB: u64 = 256 * 1024;

#[test]
fn a_roles_kdl_of_a_million_roles_is_refused_before_it_is_parsed() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (_home, projects) = common::generated_estate(root, 1);
    let mut roles = String::from("repositories {\nrepository repo0 path=\"example/repo0\"\n}\nroles {\n");
    for index in 0..1_000_000 {
        roles.push_str(&format!("role r{index}\n"));
    }
    roles.push_str("}\n");
    assert!(roles.len() < limits::ROLES_KDL.bytes, "under the size limit: {}", roles.len());
    std::fs::write(projects.join("acme/root/.agents/roles.kdl"), roles).expect("roles.kdl");
    let (output, peak) = common::acompose_peak(root, &["--home", "home", "--projects-root", "projects"]);
    // Before: exit 0, no diagnostic, 2.5 GB at its peak.
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains(limits::ROLES_KDL_NODES.code), "{}", output.stderr);
    assert!(peak < REFUSAL_PEAK_KIB, "peak {peak} KiB");
}

#[test]
fn a_roles_kdl_over_a_count_limit_gets_one_diagnostic_naming_it() {
    let read = |text: String| {
        let db = acompose_engine::Database::default();
        let file = acompose_engine::SourceFile::new(
            &db,
            "root".to_owned(),
            ".agents/roles.kdl".to_owned(),
            text.into_bytes().into(),
        );
        acompose_engine::provider::trusted_root(&db, file)
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code)
            .collect::<Vec<_>>()
    };
    let roles: String = (0..=limits::ROLES.count).map(|index| format!("    role r{index}\n")).collect();
    assert_eq!(read(format!("roles {{\n{roles}}}\n")), [limits::ROLES.code]);
    let selectors: String =
        (0..=limits::SELECTORS.count).map(|index| format!("        skill \"s{index}\"\n")).collect();
    let text = format!("repositories {{\n    repository a path=\"acme/a\" {{\n{selectors}    }}\n}}\n");
    assert_eq!(read(text), [limits::SELECTORS.code]);
}

#[test]
fn a_request_of_33000_sources_is_refused_before_one_is_read() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let skill = root.join("r/.agents/skills/x");
    std::fs::create_dir_all(&skill).expect("a repository");
    std::fs::write(skill.join("SKILL.md"), "---\nname: x\ndescription: X.\n---\n\nX.\n").expect("a skill");
    let mut request = String::from("compose {\nrole \"platform\"\ndelivery \"native-skills\"\n");
    for index in 0..33_000 {
        request.push_str(&format!("source \"s{index}\" root=\"r\"\n"));
    }
    request.push_str("}\n");
    assert!(request.len() < limits::REQUEST_KDL.bytes, "under the size limit");
    std::fs::write(root.join("request.kdl"), request).expect("request");
    let (output, peak) = common::acompose_peak(root, &["compose", "request.kdl", "--out", "out"]);
    // Before: exit 0 with every source read (978 MB at its peak in the case).
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains(limits::REQUEST_SOURCES.code), "{}", output.stderr);
    assert!(peak < REFUSAL_PEAK_KIB, "peak {peak} KiB");
}

#[test]
fn an_archive_of_a_900_megabyte_entry_is_refused_without_holding_it() {
    const ENTRY: u64 = 900 << 20;
    let temporary = tempfile::tempdir().expect("tempdir");
    let (case, bundle) = composed_bundle(temporary.path());
    let archive = archive_with(&case, &bundle, "sparse.tar", std::iter::empty());
    // One more entry of 900 MB of zeros, its data a hole in the file: the archive takes
    // a few kilobytes of disk, its reader 900 MB of bytes.
    let id = bundle.file_name().expect("an id").to_string_lossy().into_owned();
    let mut file = std::fs::OpenOptions::new().read(true).write(true).open(&archive).expect("the archive");
    let end = file.metadata().expect("size").len() - 1024;
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(ENTRY);
    header.set_mode(0o644);
    header.set_path(format!("{id}/content/zeros.bin")).expect("a path");
    header.set_cksum();
    use std::io::{Seek as _, Write as _};
    file.seek(std::io::SeekFrom::Start(end)).expect("seek");
    file.write_all(header.as_bytes()).expect("the header");
    file.set_len(end + 512 + ENTRY + 1024).expect("a hole for the data and the end");
    drop(file);
    let path = archive.to_str().expect("utf-8");
    let (output, peak) = common::acompose_peak(&case, &["bundle", "import", path, "--out", "imported"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("content/zeros.bin: is not listed in the manifest"), "{}", output.stderr);
    // Before: the whole archive was read into memory first, 1.06 GB at the peak.
    assert!(peak < REFUSAL_PEAK_KIB, "peak {peak} KiB");
    // A good archive still imports, through the same two passes.
    let good = archive_with(&case, &bundle, "good.tar", std::iter::empty());
    let imported = acompose(&case, &["bundle", "import", good.to_str().expect("utf-8"), "--out", "imported"]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    assert!(acompose(&case, &["verify", &format!("imported/{id}")]).code == 0);
    let left: Vec<_> = std::fs::read_dir(case.join("imported"))
        .expect("out")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(".staging"))
        .collect();
    assert!(left.is_empty(), "no staging folder is left");
}

#[test]
fn a_hidden_file_in_a_skill_folder_is_left_out_with_a_warning() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, projects) = common::generated_estate(root, 1);
    let skill = projects.join("example/repo0/.agents/skills/skill0-alpha");
    std::fs::write(skill.join(".notes"), "private\n").expect("a hidden file");
    std::fs::create_dir_all(skill.join(".cache")).expect("a hidden folder");
    std::fs::write(skill.join(".cache/blob"), "cached\n").expect("a file in it");
    let output = acompose(root, &["--home", "home", "--projects-root", "projects"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // Before: both left out without a word.
    for name in [".notes", ".cache"] {
        let line = output.stderr.lines().find(|line| line.contains(name) && line.contains("not a portable name"));
        assert!(line.is_some(), "{name}: {}", output.stderr);
    }
    assert!(output.stderr.contains("unportable-name"), "{}", output.stderr);
    assert!(!output.stderr.contains("blob"), "a hidden folder is not entered: {}", output.stderr);
    let delivered = walkdir::WalkDir::new(home.join("bundles")).follow_links(true).into_iter().flatten();
    assert!(delivered.filter(|entry| entry.file_name() == ".notes").count() == 0, "not delivered");
}

#[test]
fn a_users_link_at_a_path_a_projection_owns_is_reported_not_replaced() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (case, bundle) = composed_bundle(temporary.path());
    let target = temporary.path().join("target");
    std::fs::create_dir_all(&target).expect("target");
    let project = || {
        let arguments =
            ["project", bundle.to_str().expect("utf-8"), "--layout", "claude", "--scope", "repo", "--target"];
        let mut arguments: Vec<&str> = arguments.to_vec();
        arguments.push(target.to_str().expect("utf-8"));
        acompose(&case, &arguments)
    };
    let first = project();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let link = std::fs::read_dir(target.join(".claude/skills"))
        .expect("projected skills")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.is_symlink())
        .expect("a projected link");
    // The user points the projected name at a folder of their own.
    let mine = temporary.path().join("mine");
    std::fs::create_dir_all(&mine).expect("the user's folder");
    std::fs::remove_file(&link).expect("remove the link");
    std::os::unix::fs::symlink(&mine, &link).expect("the user's link");
    let again = project();
    // Before: exit 0, the user's link silently replaced.
    assert_eq!(again.code, 1, "{}{}", again.stdout, again.stderr);
    let name = link.file_name().expect("a name").to_string_lossy().into_owned();
    assert!(again.stderr.contains(&name) && again.stderr.contains("did not make"), "{}", again.stderr);
    assert_eq!(std::fs::read_link(&link).expect("still a link"), mine, "the user's link stays");
}

#[test]
fn an_oversized_trace_index_is_refused_by_why_and_verify() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let case = temporary.path().join("case");
    common::copy_dir(&common::fixtures().join("compose/selector-star"), &case);
    let composed = acompose(&case, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(composed.code, 0, "{}", composed.stderr);
    let id = composed.stdout.split_whitespace().nth(1).expect("bundle id").to_owned();
    let bundle = format!("out/{id}");
    // Sparse: a size over the limit whose bytes were never written.
    let index = std::fs::OpenOptions::new().write(true).open(case.join(&bundle).join("trace.index")).expect("index");
    index.set_len(limits::BUNDLE_TRACE_INDEX.bytes as u64 + 1).expect("grow");
    for arguments in [vec!["describe", &bundle, "--why", "source:knowledge"], vec!["verify", &bundle]] {
        let output = acompose(&case, &arguments);
        assert_eq!(output.code, 1, "{arguments:?}: {}", output.stdout);
        let all = format!("{}{}", output.stdout, output.stderr);
        assert!(all.contains(limits::BUNDLE_TRACE_INDEX.code), "{arguments:?}: {all}");
    }
}
