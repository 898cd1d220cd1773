//! Host convergence end to end: bare `acompose`, the roster artifact, `person.json`,
//! transactions, locking and hostile inputs.

use crate::common;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use acompose_driver::home::transaction::{self, Hooks, Step};
use acompose_engine::OutputFile;
use common::{acompose, acompose_with};

/// Every file under `root` (following nothing) with its bytes and mtime.
fn tree(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else { continue };
        for entry in entries {
            let entry = entry.expect("entry");
            let path = entry.path();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            if metadata.is_dir() {
                pending.push(path);
            } else if metadata.is_file() {
                let relative = path.strip_prefix(root).expect("under root").to_path_buf();
                files.insert(relative, (std::fs::read(&path).expect("read"), metadata.modified().expect("mtime")));
            }
        }
    }
    files
}

fn bytes_only(tree: &BTreeMap<PathBuf, (Vec<u8>, SystemTime)>) -> BTreeMap<PathBuf, Vec<u8>> {
    tree.iter().map(|(path, (bytes, _))| (path.clone(), bytes.clone())).collect()
}

fn compat_args(compat: &Path) -> Vec<String> {
    vec![
        "--person-source".to_owned(),
        compat.join("person-package").display().to_string(),
        "--personality-library".to_owned(),
        compat.join("personality-library").display().to_string(),
    ]
}

#[test]
fn bare_run_converges_then_a_second_run_writes_nothing() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let first = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("source    roster:core"), "{}", first.stdout);
    let artifact = temporary.path().join("home/sources/personality");
    for expected in ["person.json", "ROSTER.md", "INVARIANT.md", ".agents/skills/role-platform/SKILL.md"] {
        assert!(artifact.join(expected).is_file(), "{expected} missing");
    }
    let before = tree(&artifact);
    let second = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stdout.contains(" 0 written,"), "{}", second.stdout);
    assert!(second.stdout.contains("0 removed"), "{}", second.stdout);
    assert_eq!(before, tree(&artifact), "bytes and mtimes are unchanged");
}

#[test]
fn home_comes_from_the_environment_and_from_home() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let by_variable = acompose_with(temporary.path(), &[], &[("ACOMPOSE_HOME", "via-variable")]);
    assert_eq!(by_variable.code, 0, "{}", by_variable.stderr);
    assert!(temporary.path().join("via-variable/sources/personality/person.json").is_file());
    let by_home = acompose(temporary.path(), &[]);
    assert_eq!(by_home.code, 0, "{}", by_home.stderr);
    assert!(temporary.path().join("no-home/.agent-compose/sources/personality/person.json").is_file());
}

#[test]
fn person_json_bytes_do_not_depend_on_home_or_directory() {
    let first = tempfile::tempdir().expect("tempdir");
    let second = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(second.path().join("nested/deeper")).expect("mkdir");
    let compat = common::compat_dir().canonicalize().expect("compat fixtures");
    let config = format!(
        "person_source: {}\npersonality_libraries:\n  - {}\n",
        compat.join("person-package").display(),
        compat.join("personality-library").display()
    );
    for (root, home) in [(first.path().to_path_buf(), "a"), (second.path().join("nested/deeper"), "../../b")] {
        std::fs::create_dir_all(root.join(home)).expect("home");
        std::fs::write(root.join(home).join("agent-compose.yaml"), &config).expect("config");
        let output = acompose(&root, &["--home", home]);
        assert_eq!(output.code, 0, "{}", output.stderr);
    }
    let one = std::fs::read(first.path().join("a/sources/personality/person.json")).expect("first");
    let two = std::fs::read(second.path().join("b/sources/personality/person.json")).expect("second");
    assert_eq!(one, two);
    let embedded_one = tempfile::tempdir().expect("tempdir");
    let embedded_two = tempfile::tempdir().expect("tempdir");
    acompose(embedded_one.path(), &["--home", "x"]);
    acompose(embedded_two.path(), &["--home", "somewhere/else"]);
    assert_eq!(
        std::fs::read(embedded_one.path().join("x/sources/personality/person.json")).expect("one"),
        std::fs::read(embedded_two.path().join("somewhere/else/sources/personality/person.json")).expect("two"),
    );
}

#[test]
fn compat_person_json_snapshot() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let compat = common::compat_dir();
    let mut arguments = vec!["roster".to_owned(), "--out".to_owned(), "out".to_owned()];
    arguments.extend(compat_args(&compat));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let output = acompose(temporary.path(), &arguments);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let snapshot = std::fs::read_to_string(temporary.path().join("out/person.json")).expect("person.json");
    let value: serde_json::Value = serde_json::from_str(&snapshot).expect("json");
    assert_eq!(value["format"], "agent-compose.person-snapshot.v3");
    assert_eq!(value["schema_version"], 3);
    assert_eq!(value["source"], "person:sample");
    assert_eq!(value["role_order"], serde_json::json!(["field-notes", "notes-review", "archive-keeper"]));
    // The legacy role has only an inline briefing: its skill id is implied and the
    // briefing is its body, reported where it was written.
    let legacy = &value["roles"]["archive-keeper"];
    assert_eq!(legacy["skill"], "role-archive-keeper");
    assert_eq!(legacy["skill_source"], "person:sample/roles/03-archive-keeper.kdl#briefing");
    assert!(legacy["briefing"].as_str().is_some_and(|text| text.starts_with("The archive keeper receives")));
    assert_eq!(value["roles"]["field-notes"]["personalities"], serde_json::json!(["plain-speaker", "steady-hand"]));
    assert_eq!(value["roles"]["field-notes"]["seats"][0]["channel"], "chatbot");
    assert_eq!(value["roles"]["field-notes"]["supported_model_tiers"], serde_json::json!(["frontier", "commodity"]));
    assert_eq!(value["roles"]["field-notes"]["copy_contract"]["rules"][0]["forbid"], "submitted");
    assert_eq!(value["personalities"]["steady-hand"]["aliases"], serde_json::json!(["dependable"]));
    assert!(value["personalities"]["idle-ember"].is_object(), "unused library personalities are exported");
    assert!(snapshot.ends_with("}\n"));
    insta::assert_snapshot!(snapshot);
}

fn schema_validator() -> jsonschema::Validator {
    let schema_text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/person.schema.json")).expect("schema");
    let schema: serde_json::Value = serde_json::from_str(&schema_text).expect("schema json");
    jsonschema::validator_for(&schema).expect("valid schema")
}

#[test]
fn every_produced_snapshot_validates_against_the_published_schema() {
    let validator = schema_validator();
    let temporary = tempfile::tempdir().expect("tempdir");
    let compat = common::compat_dir();
    let mut arguments = vec!["roster".to_owned(), "--out".to_owned(), "compat".to_owned()];
    arguments.extend(compat_args(&compat));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    assert_eq!(acompose(temporary.path(), &["roster", "--out", "core"]).code, 0);
    common::copy_dir(&common::fixtures().join("roster/base"), &temporary.path().join("base"));
    assert_eq!(acompose(temporary.path(), &["roster", "--out", "fixture", "--person-source", "base"]).code, 0);
    for name in ["compat", "core", "fixture"] {
        let text = std::fs::read_to_string(temporary.path().join(name).join("person.json")).expect("snapshot");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        let errors: Vec<String> = validator.iter_errors(&value).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    // The schema is strict enough to fail: an unknown top-level key is refused.
    let text = std::fs::read_to_string(temporary.path().join("core/person.json")).expect("snapshot");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
    value["model"] = serde_json::json!("large");
    assert!(!validator.is_valid(&value));
}

#[test]
fn config_selects_an_external_source_and_removes_stale_files() {
    let temporary = tempfile::tempdir().expect("tempdir");
    assert_eq!(acompose(temporary.path(), &["--home", "home"]).code, 0);
    let artifact = temporary.path().join("home/sources/personality");
    assert!(artifact.join(".agents/skills/role-platform/SKILL.md").is_file());
    let compat = common::compat_dir().canonicalize().expect("compat");
    std::fs::write(
        temporary.path().join("home/agent-compose.yaml"),
        format!(
            "person_source: {}\nperson_policy: external-only\npersonality_libraries:\n  - {}\n",
            compat.join("person-package").display(),
            compat.join("personality-library").display()
        ),
    )
    .expect("config");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("person:sample"), "{}", output.stdout);
    assert!(!artifact.join(".agents/skills/role-platform/SKILL.md").exists(), "stale Core files are removed");
    assert!(!artifact.join(".agents/skills/role-platform").exists(), "and their empty folders");
    assert!(artifact.join(".agents/skills/role-field-notes/SKILL.md").is_file());
}

#[test]
fn external_only_policy_refuses_the_embedded_default() {
    let temporary = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(temporary.path().join("home")).expect("home");
    std::fs::write(temporary.path().join("home/agent-compose.yaml"), "person_policy: external-only\n").expect("config");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("config-external-only"), "{}", output.stderr);
    assert!(!temporary.path().join("home/sources").exists(), "nothing is written");
}

#[test]
fn invalid_config_names_the_key_and_line_and_changes_nothing() {
    let temporary = tempfile::tempdir().expect("tempdir");
    assert_eq!(acompose(temporary.path(), &["--home", "home"]).code, 0);
    let before = tree(&temporary.path().join("home/sources"));
    std::fs::write(temporary.path().join("home/agent-compose.yaml"), "person_source: roster:core\nmodel: large\n")
        .expect("config");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("config-unknown-key"), "{}", output.stderr);
    assert!(output.stderr.contains("agent-compose.yaml:2:1"), "{}", output.stderr);
    assert_eq!(before, tree(&temporary.path().join("home/sources")));
    for hostile in ["a: &x [1]\nb: *x\n", "person_source: [unclosed\n", "person_source: one\nperson_source: two\n"] {
        std::fs::write(temporary.path().join("home/agent-compose.yaml"), hostile).expect("config");
        let output = acompose(temporary.path(), &["--home", "home"]);
        assert_eq!(output.code, 1, "{hostile}: {}", output.stderr);
        assert_eq!(before, tree(&temporary.path().join("home/sources")));
    }
}

#[test]
fn hostile_homes_and_sources_change_nothing() {
    let temporary = tempfile::tempdir().expect("tempdir");
    // A symlinked home.
    std::fs::create_dir_all(temporary.path().join("real")).expect("real");
    std::os::unix::fs::symlink("real", temporary.path().join("link")).expect("symlink");
    let output = acompose(temporary.path(), &["--home", "link"]);
    assert_ne!(output.code, 0);
    assert!(output.stderr.contains("symbolic link"), "{}", output.stderr);
    assert_eq!(std::fs::read_dir(temporary.path().join("real")).expect("real").count(), 0);

    // The artifact directory replaced by a file.
    assert_eq!(acompose(temporary.path(), &["--home", "home"]).code, 0);
    std::fs::remove_dir_all(temporary.path().join("home/sources/personality")).expect("remove");
    std::fs::write(temporary.path().join("home/sources/personality"), "not a folder").expect("file");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_ne!(output.code, 0);
    assert!(output.stderr.contains("not a directory"), "{}", output.stderr);
    assert_eq!(std::fs::read(temporary.path().join("home/sources/personality")).expect("file"), b"not a folder");

    // A person source that is a file, and one that does not exist.
    std::fs::remove_file(temporary.path().join("home/sources/personality")).expect("remove");
    assert_eq!(acompose(temporary.path(), &["--home", "home"]).code, 0);
    let before = tree(&temporary.path().join("home/sources"));
    std::fs::write(temporary.path().join("a-file"), "x").expect("file");
    for source in ["../a-file", "../missing"] {
        std::fs::write(temporary.path().join("home/agent-compose.yaml"), format!("person_source: {source}\n"))
            .expect("config");
        let output = acompose(temporary.path(), &["--home", "home"]);
        assert_eq!(output.code, 1, "{source}: {}", output.stderr);
        assert_eq!(before, tree(&temporary.path().join("home/sources")), "{source}");
    }

    // A source entry that cannot be read as a file (a named pipe).
    let package = temporary.path().join("piped");
    common::copy_dir(&common::fixtures().join("roster/base"), &package);
    let status = std::process::Command::new("mkfifo").arg(package.join("roles/03-pipe.kdl")).status().expect("mkfifo");
    assert!(status.success());
    std::fs::write(temporary.path().join("home/agent-compose.yaml"), "person_source: ../piped\n").expect("config");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("unreadable-file"), "{}", output.stderr);
    assert_eq!(before, tree(&temporary.path().join("home/sources")));

    // An unreadable source file (only meaningful when permissions are enforced).
    let package = temporary.path().join("package");
    common::copy_dir(&common::fixtures().join("roster/base"), &package);
    let locked = package.join("roles/01-builder.kdl");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).expect("chmod");
    std::fs::write(temporary.path().join("home/agent-compose.yaml"), "person_source: ../package\n").expect("config");
    let output = acompose(temporary.path(), &["--home", "home"]);
    if std::fs::read(&locked).is_err() {
        assert_eq!(output.code, 1, "{}", output.stderr);
        assert!(output.stderr.contains("unreadable-file"), "{}", output.stderr);
        assert_eq!(before, tree(&temporary.path().join("home/sources")));
    } else {
        // Running with privileges that read any file: the source is simply valid.
        assert_eq!(output.code, 0, "{}", output.stderr);
    }
}

#[test]
fn a_foreign_file_in_the_way_is_refused() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let artifact = temporary.path().join("home/sources/personality");
    std::fs::create_dir_all(&artifact).expect("mkdir");
    std::fs::write(artifact.join("person.json"), "mine").expect("foreign");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("does not own"), "{}", output.stderr);
    assert_eq!(std::fs::read(artifact.join("person.json")).expect("kept"), b"mine");
    assert_eq!(tree(&artifact).len(), 1, "nothing else was written");
}

#[test]
fn two_convergences_at_once_both_succeed_with_one_result() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let spawn = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_acompose"))
            .args(["--home", "home"])
            .current_dir(temporary.path())
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let first = spawn();
    let second = spawn();
    let first = first.wait_with_output().expect("first");
    let second = second.wait_with_output().expect("second");
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    let reference = tempfile::tempdir().expect("tempdir");
    assert_eq!(acompose(reference.path(), &["--home", "home"]).code, 0);
    assert_eq!(
        bytes_only(&tree(&temporary.path().join("home/sources"))),
        bytes_only(&tree(&reference.path().join("home/sources")))
    );
    let written: Vec<String> = [&first, &second]
        .iter()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .filter(|stdout| stdout.contains(" 0 written,"))
        .collect();
    assert_eq!(written.len(), 1, "exactly one of the two found nothing left to write");
}

/// Fails the `fail_at`-th step (1-based); counts steps when `fail_at` is 0.
struct FailAt {
    fail_at: usize,
    seen: usize,
}

impl Hooks for FailAt {
    fn before(&mut self, _step: Step<'_>) -> io::Result<()> {
        self.seen += 1;
        if self.seen == self.fail_at { Err(io::Error::other("injected fault")) } else { Ok(()) }
    }
}

fn file(path: &str, bytes: &str) -> OutputFile {
    OutputFile { path: path.to_owned(), bytes: bytes.as_bytes().into() }
}

#[test]
fn a_failure_at_any_step_restores_the_previous_artifact_exactly() {
    let previous = vec![
        file("person.json", "{\"v\": 1}\n"),
        file("ROSTER.md", "# old\n"),
        file(".agents/skills/role-a/SKILL.md", "a\n"),
        file(".agents/skills/role-gone/SKILL.md", "gone\n"),
        file(".agents/skills/role-same/SKILL.md", "same\n"),
    ];
    let next = vec![
        file("person.json", "{\"v\": 2}\n"),
        file("ROSTER.md", "# new\n"),
        file(".agents/skills/role-a/SKILL.md", "a changed\n"),
        file(".agents/skills/role-new/SKILL.md", "new\n"),
        file(".agents/skills/role-same/SKILL.md", "same\n"),
        file("deep/er/folder/file.txt", "nested\n"),
    ];
    let setup = || {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path().join("artifact");
        transaction::apply(&root, &previous, &mut transaction::NoFaults).expect("previous artifact");
        (temporary, root)
    };
    let (_counting_dir, counting_root) = setup();
    let mut counter = FailAt { fail_at: 0, seen: 0 };
    let outcome = transaction::apply(&counting_root, &next, &mut counter).expect("clean run");
    assert_eq!(outcome.removed, [".agents/skills/role-gone/SKILL.md"]);
    assert_eq!(outcome.unchanged, 1);
    let steps = counter.seen;
    assert!(steps > 10, "the transaction has many steps: {steps}");
    for fail_at in 1..=steps {
        let (_temporary, root) = setup();
        let before = tree(&root);
        let result = transaction::apply(&root, &next, &mut FailAt { fail_at, seen: 0 });
        assert!(result.is_err(), "step {fail_at} fails");
        assert_eq!(before, tree(&root), "step {fail_at}: the previous artifact is restored exactly");
        // The restored artifact converges normally afterwards.
        transaction::apply(&root, &next, &mut transaction::NoFaults).expect("recovers");
    }
}

#[test]
fn a_prepared_unit_swaps_in_only_when_committed_and_dropping_it_changes_nothing() {
    let previous = [file("person.json", "{\"v\": 1}\n"), file("gone.md", "gone\n")];
    let next = [file("person.json", "{\"v\": 2}\n"), file("deep/er/new.md", "new\n")];
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("artifact");
    transaction::apply(&root, &previous, &mut transaction::NoFaults).expect("previous artifact");
    let before = tree(&root);
    let parts = [transaction::Part { folder: "", files: &next }];
    // Staged, every temporary flushed, then dropped: the folders staging made go with
    // the journal, and the old files stay.
    let prepared = transaction::prepare(&root, &parts, &mut transaction::NoFaults).expect("prepared");
    assert!(root.join(transaction::JOURNAL_DIR).is_dir(), "the temporaries wait in the journal folder");
    assert_eq!(std::fs::read(root.join("person.json")).expect("old"), b"{\"v\": 1}\n", "nothing swapped in yet");
    drop(prepared);
    assert_eq!(before, tree(&root), "dropping a prepared unit leaves the directory exactly as it was");
    assert!(!root.join("deep").exists() && !root.join(transaction::JOURNAL_DIR).exists());
    // Prepared, then committed: the same outcome as applying it in one go.
    let mut steps = FailAt { fail_at: 0, seen: 0 };
    let prepared = transaction::prepare(&root, &parts, &mut steps).expect("prepared");
    let staging_steps = steps.seen;
    let outcomes = prepared.commit(&mut steps).expect("committed");
    assert!(steps.seen > staging_steps, "committing journals and swaps: {} after {staging_steps}", steps.seen);
    assert_eq!(outcomes[0].written, ["person.json", "deep/er/new.md"]);
    assert_eq!(outcomes[0].removed, ["gone.md"]);
    assert_eq!(std::fs::read(root.join("deep/er/new.md")).expect("new"), b"new\n");
    assert!(!root.join("gone.md").exists() && !root.join(transaction::JOURNAL_DIR).exists());
    // A failure while committing restores the prepared directory's previous state.
    let committed = tree(&root);
    let again = [file("person.json", "{\"v\": 3}\n")];
    let parts = [transaction::Part { folder: "", files: &again }];
    let mut counter = FailAt { fail_at: 0, seen: 0 };
    let prepared = transaction::prepare(&root, &parts, &mut counter).expect("prepared");
    let fail_at = counter.seen + 1;
    assert!(prepared.commit(&mut FailAt { fail_at, seen: counter.seen }).is_err(), "the first commit step fails");
    assert_eq!(committed, tree(&root), "a failed commit restores the directory exactly");
    assert!(!root.join(transaction::JOURNAL_DIR).exists());
}

#[test]
fn an_interrupted_transaction_is_rolled_back_by_the_next_run() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("artifact");
    transaction::apply(&root, &[file("a.txt", "old\n")], &mut transaction::NoFaults).expect("first");
    let before = tree(&root);
    // Simulate a crash after the old file was moved aside and the new one put in place.
    let journal = root.join(transaction::JOURNAL_DIR);
    std::fs::create_dir(&journal).expect("journal");
    std::fs::rename(root.join("a.txt"), journal.join("backup-1")).expect("aside");
    std::fs::write(root.join("a.txt"), "half-written\n").expect("new");
    std::fs::write(journal.join("journal"), "replaced\ta.txt\tbackup-1\n").expect("journal");
    let outcome = transaction::apply(&root, &[file("a.txt", "old\n")], &mut transaction::NoFaults).expect("recovers");
    assert!(outcome.recovered);
    assert_eq!(before, tree(&root));
}

#[test]
fn a_planted_journal_symlink_is_refused_and_nothing_outside_is_touched() {
    let temporary = tempfile::tempdir().expect("tempdir");
    assert_eq!(acompose(temporary.path(), &["roster", "--out", "art"]).code, 0);
    let victim = temporary.path().join("victim");
    std::fs::create_dir(&victim).expect("victim");
    std::os::unix::fs::symlink(&victim, temporary.path().join("art/.acompose-transaction")).expect("symlink");
    std::fs::write(temporary.path().join("art/person.json"), "changed").expect("change");
    let output = acompose(temporary.path(), &["roster", "--out", "art"]);
    assert_ne!(output.code, 0, "{}", output.stdout);
    assert_eq!(std::fs::read_dir(&victim).expect("victim").count(), 0, "nothing was written outside");
    assert_eq!(std::fs::read(temporary.path().join("art/person.json")).expect("kept"), b"changed");
}

#[test]
fn bare_and_verify_reports_are_json_on_request() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let first = acompose(temporary.path(), &["--home", "home", "--json", "--stats"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let report: serde_json::Value = serde_json::from_str(&first.stdout).expect("json");
    assert_eq!(report["format"], "acompose.converge.v1");
    assert_eq!(report["inputs_unchanged"], false);
    assert!(report["files"]["written"].as_array().is_some_and(|written| written.len() > 20));
    let second = acompose(temporary.path(), &["--home", "home", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&second.stdout).expect("json");
    assert_eq!(report["inputs_unchanged"], true);
    assert_eq!(report["files"]["written"], serde_json::json!([]));

    let compat = common::compat_dir().join("person-package/request.kdl");
    let composed = acompose(temporary.path(), &["compose", compat.to_str().expect("utf-8"), "--out", "b"]);
    let id = composed.stdout.split_whitespace().nth(1).expect("id");
    let verified = acompose(temporary.path(), &["verify", &format!("b/{id}"), "--json"]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    let document: serde_json::Value = serde_json::from_str(&verified.stdout).expect("json");
    assert_eq!(document["verified"], true);
    std::fs::write(temporary.path().join(format!("b/{id}/content/instructions.md")), "tampered").expect("tamper");
    let broken = acompose(temporary.path(), &["verify", &format!("b/{id}"), "--json"]);
    assert_eq!(broken.code, 1);
    let document: serde_json::Value = serde_json::from_str(&broken.stdout).expect("json");
    assert_eq!(document["verified"], false);
    assert!(document["problems"].as_array().is_some_and(|problems| !problems.is_empty()));
}
