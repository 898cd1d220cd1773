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
