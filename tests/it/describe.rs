//! `describe`, `--why`, `--json` and `diff` over the composition fixtures.

use crate::common;

use std::path::{Path, PathBuf};

use common::{acompose, copy_dir};

/// Composes a fixture case in a temporary folder and returns (folder, bundle path).
fn composed(name: &str) -> (tempfile::TempDir, PathBuf) {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("case");
    copy_dir(&common::fixtures().join("compose").join(name), &root);
    let output = acompose(&root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let id = output.stdout.split_whitespace().nth(1).expect("bundle id").to_owned();
    let bundle = root.join("out").join(id);
    (temporary, bundle)
}

fn run(directory: &Path, arguments: &[&str]) -> String {
    let output = acompose(directory, arguments);
    format!("exit: {}\n{}{}", output.code, output.stdout, output.stderr)
}

fn in_case(bundle: &Path) -> (&Path, &str) {
    (bundle.parent().and_then(Path::parent).expect("case"), "out")
}

fn relative(bundle: &Path) -> String {
    format!("out/{}", bundle.file_name().and_then(|name| name.to_str()).expect("id"))
}

#[test]
fn describe_and_describe_all() {
    let (_temporary, bundle) = composed("other-role-provider");
    let (case, _) = in_case(&bundle);
    let path = relative(&bundle);
    insta::assert_snapshot!("describe", run(case, &["describe", &path]));
    insta::assert_snapshot!("describe_all", run(case, &["describe", &path, "--all"]));
}

#[test]
fn why_follows_every_outcome_kind() {
    let (_first, slice) = composed("other-role-provider");
    let (case, _) = in_case(&slice);
    let path = relative(&slice);
    for (name, item) in [
        ("selected", "skill:machine-gpu"),
        ("selector_excluded", "skill:network-basics"),
        ("role_excluded", "skill:bench-harness"),
        ("personality_inactive", "personality:warm"),
        ("role_inactive", "role:eval"),
        ("delivered", "skill:role-platform"),
        ("source_selected", "source:hardware"),
        ("source_excluded", "source:benchmarks"),
    ] {
        insta::assert_snapshot!(format!("why_{name}"), run(case, &["describe", &path, "--why", item]));
    }
    let (_second, shadow) = composed("identical-duplicate");
    let (case, _) = in_case(&shadow);
    insta::assert_snapshot!(
        "why_shadowed",
        run(case, &["describe", &relative(&shadow), "--why", "skill:shared-glossary"])
    );
    let (_third, composed_overlap) = composed("composed-overlap");
    let (case, _) = in_case(&composed_overlap);
    insta::assert_snapshot!(
        "why_overlap",
        run(case, &["describe", &relative(&composed_overlap), "--why", "skill:design-review"])
    );
}

#[test]
fn why_an_unknown_item_suggests_the_closest_names() {
    let (_temporary, bundle) = composed("other-role-provider");
    let (case, _) = in_case(&bundle);
    let output = acompose(case, &["describe", &relative(&bundle), "--why", "skill:machine-gp"]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("skill:machine-gpu"), "{}", output.stderr);
    let malformed = acompose(case, &["describe", &relative(&bundle), "--why", "machine-gpu"]);
    assert_eq!(malformed.code, 2, "{}", malformed.stderr);
}

#[test]
fn describe_and_why_as_json() {
    let (_temporary, bundle) = composed("selector-slice");
    let (case, _) = in_case(&bundle);
    let path = relative(&bundle);
    let describe = acompose(case, &["describe", &path, "--json"]);
    assert_eq!(describe.code, 0, "{}", describe.stderr);
    let document: serde_json::Value = serde_json::from_str(&describe.stdout).expect("json");
    assert_eq!(document["format"], "acompose.describe.v1");
    let keys: Vec<&str> = document.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "format",
            "bundle",
            "role",
            "display_name",
            "meld",
            "favorite_color",
            "model_tier",
            "delivery",
            "person_source",
            "profile",
            "providers",
            "budget",
            "selection"
        ]
    );
    let why = acompose(case, &["describe", &path, "--why", "skill:network-basics", "--json"]);
    insta::assert_snapshot!("why_json", why.stdout);
}

#[test]
fn the_compat_selector_estate_names_the_selector_and_its_share() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    common::compat_selector_estate(root, &["board-layout", "sensor-camera", "wiring-loom", "power-rail"]);
    let output = acompose(root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let id = output.stdout.split_whitespace().nth(1).expect("id");
    let why = acompose(root, &["describe", &format!("out/{id}"), "--why", "skill:wiring-loom"]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    assert!(why.stdout.contains("board-layout, sensor-*"), "names the selector: {}", why.stdout);
    assert!(why.stdout.contains("admitted 2 of 4 catalogue skills"), "{}", why.stdout);
}

#[test]
fn diff_reports_decisions_and_content_or_nothing() {
    let (_first, slice) = composed("selector-slice");
    let (_second, star) = composed("selector-star");
    let same = acompose(Path::new("/"), &["diff", slice.to_str().expect("utf-8"), slice.to_str().expect("utf-8")]);
    assert_eq!(same.code, 0);
    assert_eq!(same.stdout, "no semantic differences\n");
    let different = acompose(Path::new("/"), &["diff", slice.to_str().expect("utf-8"), star.to_str().expect("utf-8")]);
    assert_eq!(different.code, 1, "differences exit 1, as diff does: {}", different.stderr);
    insta::assert_snapshot!("diff", different.stdout);
    let json =
        acompose(Path::new("/"), &["diff", slice.to_str().expect("utf-8"), star.to_str().expect("utf-8"), "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(document["format"], "acompose.diff.v1");
    assert!(document["content"].as_array().is_some_and(|changes| !changes.is_empty()));
}

#[test]
fn a_damaged_bundle_is_a_clear_error_not_a_panic() {
    let (_temporary, bundle) = composed("selector-slice");
    let case = bundle.parent().and_then(Path::parent).expect("case").to_path_buf();
    let path = relative(&bundle);
    std::fs::write(bundle.join("trace.json"), "{ not json").expect("damage");
    let bad = acompose(&case, &["describe", &path]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("trace.json") && bad.stderr.contains("line 1"), "{}", bad.stderr);
    assert!(!bad.stderr.contains("panicked"));
    std::fs::remove_file(bundle.join("trace.json")).expect("remove");
    let missing = acompose(&case, &["describe", &path]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("no readable `trace.json`"), "{}", missing.stderr);
    std::fs::write(bundle.join("manifest.json"), "[1, 2]").expect("damage");
    assert_eq!(acompose(&case, &["describe", &path]).code, 1);
    assert_eq!(acompose(&case, &["describe", "does-not-exist"]).code, 1);
    assert_eq!(acompose(&case, &["diff", &path, "does-not-exist"]).code, 2, "trouble exits 2, as diff does");
}

fn schema(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(name)).expect("schema");
    jsonschema::validator_for(&serde_json::from_str(&text).expect("schema json")).expect("valid schema")
}

#[test]
fn json_documents_validate_against_their_published_schemas() {
    let describe_schema = schema("describe.schema.json");
    let why_schema = schema("why.schema.json");
    for name in ["selector-slice", "composed-overlap", "identical-duplicate", "declared-source", "compiled-delivery"] {
        let (_temporary, bundle) = composed(name);
        let (case, _) = in_case(&bundle);
        let path = relative(&bundle);
        let describe: serde_json::Value =
            serde_json::from_str(&acompose(case, &["describe", &path, "--json"]).stdout).expect("json");
        let errors: Vec<String> = describe_schema.iter_errors(&describe).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        for decision in describe["selection"].as_array().expect("selection") {
            let item = decision["subject"].as_str().expect("subject");
            let why: serde_json::Value =
                serde_json::from_str(&acompose(case, &["describe", &path, "--why", item, "--json"]).stdout)
                    .expect("json");
            let errors: Vec<String> = why_schema.iter_errors(&why).map(|error| error.to_string()).collect();
            assert!(errors.is_empty(), "{name} {item}: {errors:#?}");
        }
    }
}

#[test]
fn hostile_numbers_in_a_trace_are_not_a_crash() {
    let (_temporary, bundle) = composed("selector-slice");
    let case = bundle.parent().and_then(Path::parent).expect("case").to_path_buf();
    let path = relative(&bundle);
    let text = std::fs::read_to_string(bundle.join("trace.json")).expect("trace");
    let mut trace: serde_json::Value = serde_json::from_str(&text).expect("json");
    for provider in trace["providers"].as_array_mut().expect("providers") {
        provider["context_bytes"] = serde_json::json!(u64::MAX);
        provider["skills"] = serde_json::json!(u64::MAX);
    }
    std::fs::write(bundle.join("trace.json"), serde_json::to_vec_pretty(&trace).expect("json")).expect("write");
    let described = acompose(&case, &["describe", &path]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    let verified = acompose(&case, &["verify", &path]);
    assert_eq!(verified.code, 1, "{}", verified.stderr);
    assert!(!verified.stderr.contains("panicked"), "{}", verified.stderr);
}

/// One `--why` answer as the cli prints it: text, JSON, or the error.
fn why_answer(bundle: &Path, item: &str) -> String {
    use acompose_driver::compose::why::{WhyFailure, why};
    use acompose_driver::engine::describe::why_text;
    use acompose_driver::engine::render::Palette;
    match why(bundle, item) {
        Ok(why) => {
            let json = acompose_driver::engine::snapshot::to_json_bytes(&why);
            format!("{}{}", why_text(&why, Palette::Plain), String::from_utf8_lossy(&json))
        }
        Err(WhyFailure::Item(error)) => format!("item: {error:?}"),
        Err(WhyFailure::Bundle(error)) => format!("bundle: {error}"),
    }
}

/// The bundle as one written before the trace index: its `trace.json`, and its
/// `manifest.json` without the index's entry, in a folder of their own.
fn without_index(bundle: &Path) -> PathBuf {
    let whole = bundle.parent().expect("out").join("whole-trace");
    std::fs::create_dir_all(&whole).expect("mkdir");
    std::fs::copy(bundle.join("trace.json"), whole.join("trace.json")).expect("copy");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("manifest.json")).expect("manifest")).expect("json");
    let content = manifest["content"].as_array_mut().expect("content");
    let listed = content.len();
    content.retain(|entry| entry["path"] != "trace.index");
    assert_eq!(content.len() + 1, listed, "the manifest lists the index");
    let mut bytes = serde_json::to_vec_pretty(&manifest).expect("json");
    bytes.push(b'\n');
    std::fs::write(whole.join("manifest.json"), bytes).expect("manifest");
    whole
}

/// Every subject of a bundle's trace, and items the trace does not hold.
fn items_of(bundle: &Path) -> Vec<String> {
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("trace.json")).expect("trace")).expect("json");
    let mut items: Vec<String> = trace["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .map(|decision| decision["subject"].as_str().expect("subject").to_owned())
        .collect();
    items.sort();
    items.dedup();
    let near_misses: Vec<String> = items.iter().map(|item| item[..item.len() - 1].to_owned()).collect();
    items.extend(near_misses);
    for kind in ["source", "skill", "role", "personality", "instruction"] {
        items.push(format!("{kind}:not-in-any-trace"));
    }
    items.extend(["skill:".to_owned(), "no-kind".to_owned(), "other:thing".to_owned(), "skill:\"q\"\u{1b}".to_owned()]);
    items
}

#[test]
fn every_why_answer_over_the_fixtures_is_the_same_with_and_without_the_trace_index() {
    let mut cases = 0;
    let mut answered = 0;
    let mut names: Vec<PathBuf> = std::fs::read_dir(common::fixtures().join("compose"))
        .expect("fixtures")
        .map(|entry| entry.expect("entry").path())
        .collect();
    names.sort();
    for case in names {
        let name = case.file_name().and_then(|name| name.to_str()).expect("name").to_owned();
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path().join("case");
        copy_dir(&case, &root);
        let output = acompose(&root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
        if output.code != 0 {
            continue;
        }
        let id = output.stdout.split_whitespace().nth(1).expect("bundle id");
        let bundle = root.join("out").join(id);
        assert!(bundle.join("trace.index").is_file(), "{name}: a new bundle has its trace index");
        let whole = without_index(&bundle);
        cases += 1;
        for item in items_of(&bundle) {
            let (indexed, read_whole) = (why_answer(&bundle, &item), why_answer(&whole, &item));
            assert_eq!(indexed, read_whole, "{name}: `{item}`");
            answered += usize::from(!indexed.starts_with("item:") && !indexed.starts_with("bundle:"));
        }
        let item = "skill:role-platform";
        let through_the_binary =
            |path: &Path| acompose(&root, &["describe", path.to_str().expect("utf-8"), "--why", item]);
        assert_eq!(through_the_binary(&bundle), through_the_binary(&whole), "{name}");
    }
    assert!(cases >= 10 && answered >= 100, "{cases} cases, {answered} answers");
}

#[test]
fn a_changed_trace_index_or_trace_is_refused_naming_the_file() {
    let (_temporary, bundle) = composed("other-role-provider");
    let (case, _) = in_case(&bundle);
    let path = relative(&bundle);
    let why = || acompose(case, &["describe", &path, "--why", "skill:machine-gpu"]);
    assert_eq!(why().code, 0);
    let index_path = bundle.join("trace.index");
    let index = std::fs::read_to_string(&index_path).expect("index");
    // Point the skill at another decision: the index no longer matches its digest.
    let line = index.lines().find(|line| line.ends_with(" \"skill:machine-gpu\"")).expect("the skill's line");
    let other = index.lines().find(|other| other.starts_with("d ") && *other != line).expect("another line");
    let fields: Vec<&str> = other.splitn(4, ' ').collect();
    let moved = format!("d {} {} \"skill:machine-gpu\"", fields[1], fields[2]);
    std::fs::write(&index_path, index.replacen(line, &moved, 1)).expect("tamper");
    let refused = why();
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(refused.stderr.contains("trace.index` does not match its digest in the manifest"), "{}", refused.stderr);
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    std::fs::remove_file(&index_path).expect("remove");
    let missing = why();
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("trace.index` is listed in the manifest but missing"), "{}", missing.stderr);
    std::fs::write(&index_path, &index).expect("restore");
    assert_eq!(why().code, 0, "restored");
    // A byte of `trace.json` changed where the decision is: its block no longer matches.
    let trace_path = bundle.join("trace.json");
    let trace = std::fs::read_to_string(&trace_path).expect("trace");
    let changed = trace.replacen("\"subject\": \"skill:machine-gpu\"", "\"subject\": \"skill:machine-gpv\"", 1);
    assert_ne!(changed, trace);
    std::fs::write(&trace_path, &changed).expect("tamper");
    let refused = why();
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("trace.json` differs from its index in bytes"), "{}", refused.stderr);
    std::fs::write(&trace_path, format!("{trace} ")).expect("grow");
    let refused = why();
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("trace.json` is"), "{}", refused.stderr);
    assert!(refused.stderr.contains("its index records"), "{}", refused.stderr);
    let verified = acompose(case, &["verify", &path]);
    assert_eq!(verified.code, 1, "{}", verified.stdout);
}

#[test]
fn verify_checks_that_the_trace_index_indexes_the_trace() {
    let (_temporary, bundle) = composed("selector-slice");
    let (case, _) = in_case(&bundle);
    let path = relative(&bundle);
    assert_eq!(acompose(case, &["verify", &path]).code, 0);
    // A consistent forgery: the index rewritten, the manifest listing its new digest and
    // the folder renamed to the manifest's new id. Only the comparison with the trace
    // can tell.
    let index_path = bundle.join("trace.index");
    let index = std::fs::read_to_string(&index_path).expect("index");
    let forged = index.replacen("\nd ", "\nd 0", 1);
    std::fs::write(&index_path, &forged).expect("forge");
    let manifest_path = bundle.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).expect("manifest")).expect("json");
    for entry in manifest["content"].as_array_mut().expect("content") {
        if entry["path"] == "trace.index" {
            entry["bytes"] = serde_json::json!(forged.len());
            entry["digest"] = serde_json::json!(format!("blake3:{}", blake3::hash(forged.as_bytes()).to_hex()));
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&manifest).expect("json");
    bytes.push(b'\n');
    std::fs::write(&manifest_path, &bytes).expect("manifest");
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"acompose-bundle\0");
    hasher.update(&bytes);
    let id = hasher.finalize().to_hex()[..16].to_owned();
    let renamed = bundle.parent().expect("out").join(&id);
    std::fs::rename(&bundle, &renamed).expect("rename");
    let verified = acompose(case, &["verify", &format!("out/{id}")]);
    assert_eq!(verified.code, 1, "{}", verified.stdout);
    assert!(verified.stderr.contains("trace.index: does not index `trace.json`"), "{}", verified.stderr);
}
