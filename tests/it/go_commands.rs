//! The Go program's remaining commands: `bundle materialize` (one role's bundle for one
//! harness in one step) and `compose REQUEST -- COMMAND` (a command run with the bundle).
//! `overlay` and `catalog expressions` are in `overlays.rs`.

use crate::common::{self, acompose};

#[test]
fn bundle_materialize_composes_one_role_for_one_harness_at_its_seats_tier() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    std::fs::create_dir_all(root.join("projects")).expect("projects");
    let materialize = |harness: &str, extra: &[&str]| {
        let mut arguments =
            vec!["bundle", "materialize", "--home", "home", "--projects-root", "projects", "--role", "platform"];
        arguments.extend(["--harness", harness, "--json"]);
        arguments.extend(extra);
        acompose(root, &arguments)
    };
    // Platform's gemini seat is a commodity seat; its claude seat a frontier one.
    let gemini = materialize("gemini", &[]);
    assert_eq!(gemini.code, 0, "{}", gemini.stderr);
    let report: serde_json::Value = serde_json::from_str(&gemini.stdout).expect("json");
    assert_eq!((report["tier"].as_str(), report["seat"].as_str()), (Some("commodity"), Some("gemini")));
    let path = report["path"].as_str().expect("path").to_owned();
    assert!(path.starts_with("home/bundles/"), "{path}");
    let verified = acompose(root, &["verify", &path]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(&path).join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["model_tier"], "commodity");
    assert_eq!(manifest["role"]["slug"], "platform");

    let claude = materialize("claude", &["--out", "elsewhere"]);
    assert_eq!(claude.code, 0, "{}", claude.stderr);
    let report: serde_json::Value = serde_json::from_str(&claude.stdout).expect("json");
    assert_eq!(report["tier"], "frontier");
    assert!(report["path"].as_str().expect("path").starts_with("elsewhere/"));

    // Again: the same bundle, the same id.
    let again: serde_json::Value = serde_json::from_str(&materialize("gemini", &[]).stdout).expect("json");
    assert_eq!(again["path"].as_str(), Some(path.as_str()));

    let unknown = materialize("vim", &["--out", "never"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("`vim` is not a harness"), "{}", unknown.stderr);
    assert!(!root.join("never").exists());
}

#[test]
fn compose_runs_a_command_with_the_bundles_path_and_identity() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    common::copy_dir(&common::fixtures().join("compat"), &root.join("compat"));
    let script = "printf '%s|%s|%s|%s\\n' \"$AGENT_COMPOSE_ROLE\" \"$AGENT_COMPOSE_IDENTITY_NAME\" \
                  \"$AGENT_COMPOSE_IDENTITY_PRONOUNS\" \"$AGENT_COMPOSE_BUNDLE_ID\" > seen.txt; \
                  test -f \"$AGENT_COMPOSE_BUNDLE/manifest.json\" || exit 9; echo from-the-command; exit 7";
    let arguments = ["--home", "home", "compose", "compat/person-package/request.kdl", "--", "sh", "-c", script];
    let output = acompose(root, &arguments);
    assert_eq!(output.code, 7, "the command's exit code: {}", output.stderr);
    assert_eq!(output.stdout, "from-the-command\n", "the report goes to stderr");
    let id = output.stderr.lines().next().and_then(|line| line.split(' ').nth(1)).expect("bundle id").to_owned();
    let seen = std::fs::read_to_string(root.join("seen.txt")).expect("seen");
    assert_eq!(seen, format!("field-notes|sample field scribe|they|{id}\n"));

    // A request that fails to compose runs nothing.
    std::fs::write(root.join("broken.kdl"), "compose {\n    role \"nobody\"\n}\n").expect("write");
    let failed = acompose(root, &["--home", "home", "compose", "broken.kdl", "--", "sh", "-c", "touch ran"]);
    assert_ne!(failed.code, 0);
    assert!(!root.join("ran").exists());
    // A command that cannot start is an error naming it.
    let missing = acompose(
        root,
        &["--home", "home", "compose", "compat/person-package/request.kdl", "--", "/nonexistent/program"],
    );
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert!(missing.stderr.contains("cannot run `/nonexistent/program`"), "{}", missing.stderr);
}
