//! Composition end to end: every folder under `tests/fixtures/compose/<case>/` is a small
//! estate with a `request.kdl`; `check` composes it in-process (the cli's own rendering,
//! with the paths the binary would print) and the bundle's manifest, trace and
//! instructions (or the diagnostics) are snapshotted. One case also runs through the real
//! binary, which must print and write exactly the same; the other tests here run the
//! binary.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Output, acompose, acompose_with, copy_dir};

/// Copies a case next to the base person package and creates the symlinks it lists.
fn stage(case: &Path) -> (tempfile::TempDir, PathBuf) {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("case");
    copy_dir(case, &root);
    copy_dir(&common::fixtures().join("roster/base"), &temporary.path().join("person-base"));
    if let Ok(links) = std::fs::read_to_string(root.join("links.txt")) {
        for line in links.lines() {
            let (link, target) = line.split_once(" -> ").expect("link -> target");
            std::os::unix::fs::symlink(target, root.join(link)).expect("symlink");
        }
    }
    (temporary, root)
}

fn compose_in(root: &Path) -> common::Output {
    acompose(root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"])
}

fn bundle_dir(root: &Path) -> Option<PathBuf> {
    std::fs::read_dir(root.join("out"))
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        // `out/.store` holds the skill trees the bundle links to.
        .find(|path| path.is_dir() && !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
}

/// The snapshotted report of one composition: what it printed, then the manifest, trace
/// and instructions of the bundle it wrote (and the size of a compiled delivery).
fn report(root: &Path, output: &Output) -> String {
    let mut report = format!("exit: {}\n--- stdout\n{}--- stderr\n{}", output.code, output.stdout, output.stderr);
    if let Some(bundle) = bundle_dir(root) {
        for file in ["manifest.json", "trace.json", "content/instructions.md"] {
            let text = std::fs::read_to_string(bundle.join(file)).expect("bundle file");
            report.push_str(&format!("--- {file}\n{text}"));
        }
        if let Ok(compiled) = std::fs::read_to_string(bundle.join("delivery/compiled.md")) {
            report.push_str(&format!("--- delivery/compiled.md ({} bytes)\n", compiled.len()));
        }
    }
    report
}

/// `acompose compose request.kdl --out out --projects-root projects` over the staged case,
/// run in-process; the bundle it wrote, if any, is verified.
fn check(case: &Path) -> String {
    let (_temporary, root) = stage(case);
    let output = common::compose_in_process(&root, Some("projects"));
    if let Some(bundle) = bundle_dir(&root) {
        let verified = acompose_driver::compose::bundle::verify_directory(&bundle);
        assert!(verified.is_ok(), "{}: {verified:?}", case.display());
    }
    report(&root, &output)
}

/// The same command as [`check`], run and verified by the real binary.
fn check_through_the_binary(case: &Path) -> String {
    let (_temporary, root) = stage(case);
    let output = compose_in(&root);
    if let Some(bundle) = bundle_dir(&root) {
        let verified = acompose(&root, &["verify", bundle.to_str().expect("utf-8")]);
        assert_eq!(verified.code, 0, "{}", verified.stderr);
    }
    report(&root, &output)
}

#[test]
fn every_compose_case_matches_its_snapshot() {
    insta::glob!("../fixtures", "compose/*/request.kdl", |path| {
        let report = check(path.parent().expect("case folder"));
        insta::assert_snapshot!(report);
    });
}

#[test]
fn the_binary_prints_and_writes_what_the_in_process_check_returns() {
    // One bundle from an external person package, and one composition refused with a
    // diagnostic in a catalogue file.
    for name in ["external-person-package", "selector-matches-nothing"] {
        let case = common::fixtures().join("compose").join(name);
        assert_eq!(check_through_the_binary(&case), check(&case), "{name}");
    }
}

fn case(name: &str) -> (tempfile::TempDir, PathBuf) {
    stage(&common::fixtures().join("compose").join(name))
}

fn trace_of(root: &Path) -> serde_json::Value {
    let bundle = bundle_dir(root).expect("a bundle");
    serde_json::from_str(&std::fs::read_to_string(bundle.join("trace.json")).expect("trace")).expect("json")
}

fn decision<'a>(trace: &'a serde_json::Value, subject: &str) -> Vec<&'a serde_json::Value> {
    trace["decisions"].as_array().expect("decisions").iter().filter(|decision| decision["subject"] == subject).collect()
}

#[test]
fn a_selector_admits_exactly_its_slice() {
    let (_temporary, root) = case("selector-slice");
    let output = compose_in(&root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let trace = trace_of(&root);
    for selected in ["skill:compute-stack", "skill:machine-cpu", "skill:machine-gpu"] {
        assert_eq!(decision(&trace, selected)[0]["outcome"], "selected", "{selected}");
    }
    let excluded = decision(&trace, "skill:network-basics");
    assert_eq!(excluded[0]["outcome"], "excluded");
    assert_eq!(excluded[0]["cause"], "selector-excluded");
}

#[test]
fn composed_overlap_selects_once_warns_and_keeps_both_selectors() {
    let (_temporary, root) = case("composed-overlap");
    let output = compose_in(&root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stderr.contains("composed-selector-overlap"), "{}", output.stderr);
    let trace = trace_of(&root);
    let review = decision(&trace, "skill:design-review");
    assert_eq!(review.len(), 1);
    assert_eq!(review[0]["selectors"], serde_json::json!(["design-*", "*-review"]));
    assert_eq!(decision(&trace, "skill:metrics-board")[0]["cause"], "role-excluded");
    assert_eq!(decision(&trace, "skill:release-notes")[0]["cause"], "selector-excluded");
}

#[test]
fn different_duplicates_fail_closed_naming_both_providers() {
    let (_temporary, root) = case("different-duplicate");
    let output = compose_in(&root);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("`first`") && output.stderr.contains("`second`"), "{}", output.stderr);
    assert!(!root.join("out").exists() || bundle_dir(&root).is_none(), "nothing is written");
}

#[test]
fn the_compat_request_composes_and_is_reused() {
    let compat = common::compat_dir().join("person-package/request.kdl");
    let temporary = tempfile::tempdir().expect("tempdir");
    let request = compat.to_str().expect("utf-8");
    let first = acompose(temporary.path(), &["compose", request, "--out", "bundles"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.starts_with("bundle ") && first.stdout.contains("(new)"), "{}", first.stdout);
    let second = acompose(temporary.path(), &["compose", request, "--out", "bundles"]);
    assert!(second.stdout.contains("(reused)"), "{}", second.stdout);
    let bundle = bundle_dir(temporary.path().join("bundles").parent().expect("parent").join("").as_path());
    let _ = bundle;
    let id = first.stdout.split_whitespace().nth(1).expect("id").to_owned();
    let directory = temporary.path().join("bundles").join(&id);
    assert!(directory.join("delivery/compiled.md").is_file(), "compiled delivery");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(directory.join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["model_tier"], "commodity");
    assert_eq!(manifest["person_source"], "person:sample");
}

#[test]
fn the_same_request_gives_the_same_id_anywhere_and_verify_catches_a_flipped_byte() {
    let (_first_dir, first) = case("selector-slice");
    let (_second_dir, second) = case("selector-slice");
    let one = compose_in(&first);
    // Another working directory and another HOME.
    let nested = second.join("elsewhere");
    std::fs::create_dir_all(&nested).expect("mkdir");
    let two = acompose_with(
        &nested,
        &["compose", "../request.kdl", "--out", "../out", "--projects-root", "../projects"],
        &[("HOME", "/nonexistent-home")],
    );
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(two.code, 0, "{}", two.stderr);
    let id_one = one.stdout.split_whitespace().nth(1).expect("id");
    let id_two = two.stdout.split_whitespace().nth(1).expect("id");
    assert_eq!(id_one, id_two);
    let again = acompose_with(
        &nested,
        &["compose", "../request.kdl", "--out", "../out", "--projects-root", "../projects"],
        &[("HOME", "/another-home")],
    );
    assert!(again.stdout.contains("(reused)"), "{}", again.stdout);

    let bundle = bundle_dir(&first).expect("bundle");
    let verified = acompose(&first, &["verify", bundle.to_str().expect("utf-8")]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    assert!(verified.stdout.starts_with("bundle verified: "), "{}", verified.stdout);
    let target = bundle.join("content/skills/hardware/machine-gpu/SKILL.md");
    let mut bytes = std::fs::read(&target).expect("skill");
    bytes[10] ^= 0x01;
    std::fs::write(&target, bytes).expect("flip");
    let broken = acompose(&first, &["verify", bundle.to_str().expect("utf-8")]);
    assert_eq!(broken.code, 1);
    assert!(broken.stderr.contains("content/skills/hardware/machine-gpu/SKILL.md"), "{}", broken.stderr);
    // A damaged bundle is not reused.
    let recompose = compose_in(&first);
    assert_ne!(recompose.code, 0);
    assert!(recompose.stderr.contains("damaged"), "{}", recompose.stderr);
}

#[test]
fn two_identical_composes_at_once_end_with_one_bundle() {
    let (_temporary, root) = case("selector-slice");
    let spawn = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_acompose"))
            .args(["compose", "request.kdl", "--out", "out", "--projects-root", "projects"])
            .current_dir(&root)
            .env("NO_COLOR", "1")
            .output()
    };
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(spawn);
        let second = scope.spawn(spawn);
        (first.join().expect("thread").expect("run"), second.join().expect("thread").expect("run"))
    });
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    // The out folder's lock file stays (it serializes writers), and so does its store;
    // nothing else but the bundle.
    let entries: Vec<_> = std::fs::read_dir(root.join("out"))
        .expect("out")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name() != ".store" && entry.file_name() != ".acompose.lock")
        .collect();
    assert_eq!(entries.len(), 1, "one bundle and no staging leftovers: {entries:?}");
    let staged: Vec<_> = std::fs::read_dir(root.join("out/.store"))
        .expect("store")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(staged.is_empty(), "no staging leftovers in the store: {staged:?}");
}

#[test]
fn the_compat_trusted_root_admits_exactly_the_selected_slice() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    common::compat_selector_estate(
        root,
        &["board-layout", "sensor-camera", "sensor-radar", "wiring-loom", "power-rail"],
    );
    let output = compose_in(root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let trace = trace_of(root);
    let selected: Vec<&str> = trace["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .filter(|decision| {
            decision["source"] == "devices" && decision["outcome"] == "selected" && decision["kind"] == "ordinary-skill"
        })
        .filter_map(|decision| decision["subject"].as_str())
        .collect();
    assert_eq!(selected, ["skill:board-layout", "skill:sensor-camera", "skill:sensor-radar"]);
    let provider = trace["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|provider| provider["source"] == "devices")
        .expect("devices");
    assert_eq!(provider["category"], "skill-provider");
    assert_eq!(provider["selector"]["admitted"], 3);
    assert_eq!(provider["selector"]["catalogue"], 5);
}

#[test]
fn budgets_equal_the_bytes_on_disk() {
    let (_temporary, root) = case("selector-slice");
    assert_eq!(compose_in(&root).code, 0);
    let bundle = bundle_dir(&root).expect("bundle");
    let trace = trace_of(&root);
    let mut total = 0;
    for provider in trace["providers"].as_array().expect("providers") {
        let source = provider["source"].as_str().expect("source");
        let folder = bundle.join("content/skills").join(source);
        let mut bytes = 0u64;
        if folder.is_dir() {
            let mut pending = vec![folder];
            while let Some(directory) = pending.pop() {
                for entry in std::fs::read_dir(directory).expect("read") {
                    let path = entry.expect("entry").path();
                    if path.is_dir() {
                        pending.push(path)
                    } else {
                        bytes += std::fs::metadata(&path).expect("meta").len()
                    }
                }
            }
        }
        assert_eq!(provider["context_bytes"], bytes, "{source}");
        assert_eq!(provider["approximate_tokens"], bytes.div_ceil(4), "{source}");
        total += bytes;
    }
    assert!(total > 0);
}

#[test]
fn catalogue_copies_of_inactive_skills_never_enter() {
    let (_temporary, root) = case("inactive-names-in-a-catalogue");
    let output = compose_in(&root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bundle = bundle_dir(&root).expect("bundle");
    for name in ["role-sysadmin", "personality-playful", "sysadmin-change-window"] {
        assert!(!bundle.join("content/skills/knowledge").join(name).exists(), "{name} entered the bundle");
    }
    assert!(bundle.join("content/skills/knowledge/estate-map/SKILL.md").is_file());
    let trace = trace_of(&root);
    let copies: Vec<&serde_json::Value> = decision(&trace, "skill:role-sysadmin")
        .into_iter()
        .filter(|decision| decision["source"] == "knowledge")
        .collect();
    assert_eq!(copies.len(), 1);
    assert_eq!(copies[0]["outcome"], "excluded");
    assert_eq!(copies[0]["cause"], "role-inactive");
}

#[test]
fn a_global_repository_with_selectors_gives_every_role_only_its_slice() {
    let (_temporary, root) = case("global-with-selectors");
    let output = compose_in(&root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bundle = bundle_dir(&root).expect("bundle");
    assert!(bundle.join("content/skills/hardware/compute-stack/SKILL.md").is_file());
    assert!(!bundle.join("content/skills/hardware/secret-keys").exists());
    let trace = trace_of(&root);
    assert_eq!(decision(&trace, "skill:secret-keys")[0]["cause"], "selector-excluded");
}

#[test]
fn external_only_without_a_person_source_is_refused_before_anything_is_read() {
    let temporary = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        temporary.path().join("request.kdl"),
        "compose {\n    person-policy \"external-only\"\n    role \"platform\"\n    delivery \"compiled\"\n}\n",
    )
    .expect("request");
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("request-external-only"), "{}", output.stderr);
    assert!(output.stderr.contains("request.kdl:2:"), "names the line: {}", output.stderr);
    assert!(!temporary.path().join("out").exists(), "nothing is written");
}

#[test]
fn request_nodes_for_unmodelled_concepts_compose_with_a_warning() {
    let temporary = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        temporary.path().join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"compiled\"\n    density \"full\"\n    boundary-omit \"no-deploys\"\n}\n",
    )
    .expect("request");
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stderr.contains("request-node-ignored"), "{}", output.stderr);
    assert!(output.stdout.starts_with("bundle "), "{}", output.stdout);
}
