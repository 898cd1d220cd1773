//! Real skill catalogues end to end: every folder under `tests/fixtures/catalogue/<case>/`
//! is a repository whose `.agents/skills/` breaks one Agent Skills rule, holds a resource
//! folder, uses harness extension fields or is valid in every way. `check` runs `catalog
//! check` and a composition over it in-process (the cli's own rendering, with the paths
//! the binary would print) and the report is snapshotted; one case also runs through the
//! real binary, which must print exactly the same. The policies and the loading budget are
//! asserted through the binary.

use crate::common;

use std::path::{Path, PathBuf};

use acompose_cli::catalogue_check::check_output;
use acompose_cli::terminal::Terminal;
use common::{Output, acompose, copy_dir};

const REQUEST: &str = "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"knowledge\" root=\"knowledge\"\n}\n";

/// Copies a case as the `knowledge` source of a request; `extra` goes inside `compose`.
fn stage(name: &str, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("case");
    copy_dir(&common::fixtures().join("catalogue").join(name), &root.join("knowledge"));
    let request = REQUEST.replace("}\n", &format!("{extra}}}\n"));
    std::fs::write(root.join("request.kdl"), request).expect("request");
    (temporary, root)
}

fn compose_in(root: &Path, extra: &[&str]) -> common::Output {
    let mut arguments = vec!["compose", "request.kdl", "--out", "out"];
    arguments.extend_from_slice(extra);
    acompose(root, &arguments)
}

fn bundle_dir(root: &Path) -> Option<PathBuf> {
    std::fs::read_dir(root.join("out"))
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_dir() && !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
}

fn trace_of(root: &Path) -> serde_json::Value {
    let bundle = bundle_dir(root).expect("a bundle");
    serde_json::from_str(&std::fs::read_to_string(bundle.join("trace.json")).expect("trace")).expect("json")
}

fn decisions<'a>(trace: &'a serde_json::Value, subject: &str) -> Vec<&'a serde_json::Value> {
    trace["decisions"].as_array().expect("decisions").iter().filter(|decision| decision["subject"] == subject).collect()
}

/// The snapshotted report of one case: `catalog check -v` in the case's folder, then the
/// diagnostics of composing the case as a source.
fn report(check: &Output, composed: &Output) -> String {
    format!(
        "--- catalog check -v (exit {})\n{}{}--- compose (exit {})\n{}",
        check.code, check.stdout, check.stderr, composed.code, composed.stderr
    )
}

/// `acompose -v catalog check` in the case's folder and `acompose compose request.kdl
/// --out out` over the staged case, both run in-process; the report, and the composition's
/// output for comparing it with the binary's.
fn check(name: &str) -> (String, Output) {
    let case = common::fixtures().join("catalogue").join(name);
    let verbose = Terminal { verbose: 1, ..Terminal::plain() };
    let checked = Output::from(check_output(&case, &[], false, &verbose));
    let (_temporary, root) = stage(name, "");
    let composed = common::compose_in_process(&root, None);
    (report(&checked, &composed), composed)
}

/// The same commands as [`check`], run by the real binary.
fn check_through_the_binary(name: &str) -> (String, Output) {
    let checked = acompose(&common::fixtures().join("catalogue").join(name), &["-v", "catalog", "check"]);
    let (_temporary, root) = stage(name, "");
    let composed = compose_in(&root, &[]);
    (report(&checked, &composed), composed)
}

#[test]
fn every_catalogue_case_matches_its_snapshot() {
    insta::glob!("../fixtures", "catalogue/*/case.md", |path| {
        let case = path.parent().expect("case folder");
        let (report, _) = check(&case.file_name().expect("name").to_string_lossy());
        insta::assert_snapshot!(report);
    });
}

#[test]
fn the_binary_prints_what_the_in_process_check_returns() {
    // One case with a finding at error level (the composition warns) and one with a
    // resource folder (the composition succeeds with a note).
    for name in ["rule-name-mismatch", "resource-folder"] {
        assert_eq!(check_through_the_binary(name), check(name), "{name}");
    }
}

#[test]
fn catalog_check_json_names_each_finding_with_line_and_column() {
    let case = common::fixtures().join("catalogue/rule-frontmatter-yaml");
    let output = acompose(&case, &["catalog", "check", "--json"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    let report: serde_json::Value = serde_json::from_str(&output.stdout).expect("json");
    let finding = &report["catalogues"][0]["skills"][0]["findings"][0];
    assert_eq!(finding["code"], "skill-frontmatter-yaml");
    assert_eq!(finding["severity"], "error");
    assert_eq!((finding["line"].as_u64(), finding["column"].as_u64()), (Some(3), Some(22)));
    assert_eq!(report["errors"], 1);
}

#[test]
fn catalog_check_takes_a_single_skill_folder_and_several_folders() {
    let fixtures = common::fixtures().join("catalogue");
    let single = acompose(&fixtures, &["catalog", "check", "valid/.agents/skills/tidy-imports"]);
    assert_eq!(single.code, 0, "{}", single.stderr);
    assert!(single.stdout.starts_with("checked 1 skill in 1 catalogue"), "{}", single.stdout);
    let both = acompose(&fixtures, &["catalog", "check", "valid", "rule-name-mismatch/.agents/skills"]);
    assert_eq!(both.code, 1);
    assert!(both.stdout.starts_with("checked 2 skills in 2 catalogues: 1 error"), "{}", both.stdout);
}

#[test]
fn a_resource_folder_is_not_a_skill_and_the_composition_succeeds() {
    let (_temporary, root) = stage("resource-folder", "");
    let output = compose_in(&root, &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stderr.contains("not-a-skill"), "{}", output.stderr);
    let trace = trace_of(&root);
    let shared = decisions(&trace, "skill:shared");
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0]["outcome"], "excluded");
    assert_eq!(shared[0]["cause"], "not-a-skill");
    assert_eq!(decisions(&trace, "skill:tidy-imports")[0]["outcome"], "selected");
    assert!(decisions(&trace, "skill:README.md").is_empty(), "plain files are ignored");
}

#[test]
fn strict_fails_on_a_broken_rule_and_writes_nothing() {
    for strict in [&["--strict"][..], &[]] {
        let extra = if strict.is_empty() { "    skill-policy \"strict\"\n" } else { "" };
        let (_temporary, root) = stage("rule-name-mismatch", extra);
        let output = compose_in(&root, strict);
        assert_eq!(output.code, 1, "{}", output.stderr);
        assert!(output.stderr.contains("skill-name-mismatch"), "{}", output.stderr);
        assert!(bundle_dir(&root).is_none(), "nothing is written");
    }
    // The same catalogue under the default policy composes with a warning.
    let (_temporary, root) = stage("rule-name-mismatch", "");
    let output = compose_in(&root, &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stderr.contains("Warning") || output.stderr.contains("⚠"), "{}", output.stderr);
}

#[test]
fn skip_excludes_an_invalid_skill_and_why_explains_its_findings() {
    let (_temporary, root) = stage("rule-description-length", "    skill-policy \"skip\"\n");
    let output = compose_in(&root, &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let trace = trace_of(&root);
    let skipped = decisions(&trace, "skill:tidy-imports");
    assert_eq!(skipped[0]["outcome"], "excluded");
    assert_eq!(skipped[0]["cause"], "invalid-skill");
    let bundle = bundle_dir(&root).expect("bundle");
    assert!(!bundle.join("content/skills/knowledge/tidy-imports").exists());
    let why = acompose(&root, &["describe", bundle.to_str().expect("utf-8"), "--why", "skill:tidy-imports"]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    assert!(why.stdout.contains("finding   skill-description-length (violation)"), "{}", why.stdout);
}

#[test]
fn a_delivered_skill_keeps_its_findings_for_why() {
    let (_temporary, root) = stage("rule-field-unknown", "");
    assert_eq!(compose_in(&root, &[]).code, 0);
    let trace = trace_of(&root);
    let findings = &decisions(&trace, "skill:tidy-imports")[0]["findings"];
    assert_eq!(findings[0]["code"], "skill-field-unknown");
}

/// Bytes of every file under `folder`, following the links into the store.
fn bytes_under(folder: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(folder).expect("read_dir") {
        let path = entry.expect("entry").path();
        let metadata = std::fs::metadata(&path).expect("metadata");
        total += if metadata.is_dir() { bytes_under(&path) } else { metadata.len() };
    }
    total
}

#[test]
fn describe_splits_the_budget_and_the_parts_sum_to_the_skill_bytes() {
    let (_temporary, root) = stage("valid", "");
    assert_eq!(compose_in(&root, &[]).code, 0);
    let bundle = bundle_dir(&root).expect("bundle");
    let path = bundle.to_str().expect("utf-8");
    let json = acompose(&root, &["describe", path, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let budget = &report["budget"];
    let part = |key: &str| budget[key].as_u64().expect(key);
    let parts = part("total_metadata_bytes") + part("total_instruction_bytes") + part("total_resource_bytes");
    assert_eq!(parts, bytes_under(&bundle.join("content/skills")));
    assert_eq!(part("total_bytes"), parts);
    assert_eq!(part("total_binary_bytes"), 8, "the badge is binary");
    let text = acompose(&root, &["describe", path]);
    let header = text.stdout.lines().find(|line| line.trim_start().starts_with("loading")).expect("loading table");
    for part in ["metadata", "instructions", "resources"] {
        assert!(header.contains(part), "{part}: {header}");
    }
    assert!(text.stdout.contains("(8 bytes of binary files not counted)"), "{}", text.stdout);
    assert!(!text.stdout.contains("would cut"), "{}", text.stdout);
    assert_eq!(budget["listing_warnings"], serde_json::json!([]));
}

#[test]
fn the_listing_budget_warning_names_the_harness_and_the_cut_skills() {
    let (_temporary, root) = stage("long-descriptions", "");
    assert_eq!(compose_in(&root, &[]).code, 0);
    let bundle = bundle_dir(&root).expect("bundle");
    let text = acompose(&root, &["describe", bundle.to_str().expect("utf-8")]);
    let start = text.stdout.find("warning: Codex").expect("a listing warning");
    let warning = &text.stdout[start..text.stdout[start..].find("\n\n").map_or(text.stdout.len(), |end| start + end)];
    assert!(warning.contains("would cut") && warning.contains("about 8000"), "{warning}");
    assert!(warning.contains("style-pass-12"), "{warning}");
    assert!(!warning.contains("style-pass-01"), "the first skills fit: {warning}");
    let json = acompose(&root, &["describe", bundle.to_str().expect("utf-8"), "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let listed = &report["budget"]["listing_warnings"][0];
    assert_eq!(listed["harness"], "Codex");
    assert!(listed["metadata_bytes"].as_u64().is_some_and(|bytes| bytes > 8000), "{listed}");
    assert_eq!(listed["cut"].as_array().and_then(|cut| cut.last()), Some(&serde_json::json!("style-pass-12")));
}

#[test]
fn the_host_configuration_can_make_findings_errors() {
    for (policy, expected) in [("", 0), ("skill_policy: strict\n", 1)] {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        copy_dir(&common::fixtures().join("catalogue/rule-name-mismatch"), &root.join("projects/example/knowledge"));
        std::fs::create_dir_all(root.join("home")).expect("home");
        std::fs::write(
            root.join("home/agent-compose.yaml"),
            format!("operating_context:\n  - example/knowledge\n{policy}"),
        )
        .expect("config");
        let output = common::acompose_with(root, &["--home", "home"], &[("PROJECTS_ROOT", "projects")]);
        assert_eq!(output.code, expected, "{policy}: {}", output.stderr);
        assert!(output.stderr.contains("skill-name-mismatch"), "{}", output.stderr);
        assert_eq!(root.join("home/bundles/index.json").exists(), expected == 0, "a strict failure writes no bundle");
    }
}

#[test]
fn extension_fields_show_only_under_verbose_and_always_in_json() {
    let case = common::fixtures().join("catalogue/extensions");
    let quiet = acompose(&case, &["catalog", "check"]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("skill-field-extension"), "{}", quiet.stderr);
    let verbose = acompose(&case, &["-v", "catalog", "check"]);
    assert_eq!(verbose.stderr.matches("skill-field-extension").count(), 8, "{}", verbose.stderr);
    let json = acompose(&case, &["catalog", "check", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let findings = report["catalogues"][0]["skills"][0]["findings"].as_array().expect("findings");
    assert!(findings.iter().all(|finding| finding["severity"] == "detail" && finding["level"] == "extension"));
    assert_eq!(findings.len(), 8);
}
