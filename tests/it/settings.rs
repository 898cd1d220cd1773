//! One resolution of the settings for every command: the home's `person_source`,
//! `personality_libraries`, `person_policy`, `projects_root` and `skill_policy` reach
//! every command that reads them, a flag overrides the file, and `config show` and
//! `config validate` say what was resolved and what is wrong.

use crate::common;

use std::path::Path;

use common::{Output, acompose_with, generated_estate, write_file};

/// `acompose` with a `PATH` holding only a fake `claude` (what `launch` needs before it
/// converges), so every roster-loading command can run.
fn acompose(directory: &Path, arguments: &[&str]) -> Output {
    let bin = directory.join("bin");
    if !bin.join("claude").exists() {
        write_file(&bin.join("claude"), "#!/bin/sh\nexit 0\n");
        let mut permissions = std::fs::metadata(bin.join("claude")).expect("claude").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(bin.join("claude"), permissions).expect("chmod");
    }
    let path = bin.display().to_string();
    acompose_with(directory, arguments, &[("PATH", path.as_str())])
}

/// A home whose configuration selects a copy of the base fixture package (`person:fixture`,
/// roles builder and reviewer) under `external-only`, and a request naming no person source.
fn external_home(root: &Path) {
    common::copy_dir(&common::fixtures().join("roster/base"), &root.join("pkg"));
    write_file(&root.join("home/agent-compose.yaml"), "person_source: ../pkg\nperson_policy: external-only\n");
    write_file(&root.join("request.kdl"), "compose {\n    role \"builder\"\n    delivery \"compiled\"\n}\n");
}

/// Every command that loads a roster, as the binary is run with `--home home`.
const ROSTER_COMMANDS: &[&[&str]] = &[
    &["--home", "home"],
    &["--home", "home", "roster", "show"],
    &["--home", "home", "roster", "show", "--json"],
    &["--home", "home", "roster", "validate"],
    &["--home", "home", "roster", "--out", "artifact"],
    &["--home", "home", "catalog", "roles"],
    &["--home", "home", "catalog", "personalities"],
    &["--home", "home", "catalog", "seats"],
    &["--home", "home", "compose", "request.kdl", "--out", "out"],
    &["--home", "home", "launch", "builder", "claude", "--yes"],
];

#[test]
fn every_roster_loading_command_uses_the_configured_person_source() {
    let temporary = tempfile::tempdir().expect("tempdir");
    external_home(temporary.path());
    for command in ROSTER_COMMANDS {
        let output = acompose(temporary.path(), command);
        assert_eq!(output.code, 0, "{command:?}: {}", output.stderr);
        let shown = format!("{}{}", output.stdout, output.stderr);
        assert!(!shown.contains("roster:core"), "{command:?} fell back to roster:core: {shown}");
    }
    let shown = acompose(temporary.path(), &["--home", "home", "roster", "show"]);
    assert!(shown.stdout.starts_with("person:fixture — 2 roles"), "{}", shown.stdout);
    let roles = acompose(temporary.path(), &["--home", "home", "catalog", "roles"]);
    assert!(roles.stdout.contains("builder") && !roles.stdout.contains("platform"), "{}", roles.stdout);
    let person = std::fs::read_to_string(temporary.path().join("artifact/person.json")).expect("person.json");
    assert!(person.contains("\"source\": \"person:fixture\""), "{person}");
}

#[test]
fn external_only_without_an_external_source_fails_every_roster_command_with_the_same_diagnostic() {
    let temporary = tempfile::tempdir().expect("tempdir");
    external_home(temporary.path());
    write_file(&temporary.path().join("home/agent-compose.yaml"), "person_policy: external-only\n");
    // `watch` too: it stops at once when its first convergence is refused.
    let watch: &[&str] = &["--home", "home", "watch"];
    let commands: Vec<&[&str]> = ROSTER_COMMANDS.iter().copied().chain([watch]).collect();
    let outputs: Vec<Output> = commands.iter().map(|command| acompose(temporary.path(), command)).collect();
    let first = &outputs[0];
    assert!(first.stderr.contains("config-external-only"), "{}", first.stderr);
    assert!(first.stderr.contains("home/agent-compose.yaml:1:16"), "the policy's line: {}", first.stderr);
    assert!(first.stderr.contains("--person-source DIR"), "the fix: {}", first.stderr);
    // `watch` names home by its absolute path (its events do); the diagnostic is the same.
    let absolute = format!("{}/", temporary.path().display());
    for (command, output) in commands.iter().zip(&outputs) {
        assert_eq!(output.code, 1, "{command:?}: {}", output.stderr);
        assert_eq!(output.stderr.replace(&absolute, ""), first.stderr, "{command:?} gives another diagnostic");
        assert_eq!(output.stdout, "", "{command:?}");
    }
    assert!(!temporary.path().join("home/sources").exists(), "nothing is written");
    // A flag naming an external source satisfies the policy.
    let output = acompose(temporary.path(), &["--home", "home", "roster", "show", "--person-source", "pkg"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // A request's own `person-source "roster:core"` is refused by the request's rule only
    // when the request says external-only; the home's policy refuses the fallback alone.
    write_file(
        &temporary.path().join("own.kdl"),
        "compose {\n    person-source \"pkg\"\n    role \"builder\"\n    delivery \"compiled\"\n}\n",
    );
    let output = acompose(temporary.path(), &["--home", "home", "compose", "own.kdl", "--out", "out"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
}

#[test]
fn a_flag_overrides_the_configured_person_source_and_its_libraries() {
    let temporary = tempfile::tempdir().expect("tempdir");
    external_home(temporary.path());
    let output = acompose(temporary.path(), &["--home", "home", "roster", "show", "--person-source", "roster:core"]);
    assert_eq!(output.code, 1, "external-only refuses the embedded default from a flag too");
    write_file(&temporary.path().join("home/agent-compose.yaml"), "person_source: ../pkg\n");
    let output = acompose(temporary.path(), &["--home", "home", "roster", "show", "--person-source", "roster:core"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.starts_with("roster:core — 7 roles"), "{}", output.stdout);
}

#[test]
fn the_projects_root_key_places_the_estate_and_a_flag_or_the_variable_overrides_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = generated_estate(temporary.path(), 2);
    let config = home.join("agent-compose.yaml");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, format!("{text}projects_root: {}\n", projects.display())).expect("config");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("bundles   7 new"), "{}", output.stdout);
    let shown = acompose(temporary.path(), &["--home", "home", "config", "show"]);
    assert!(
        shown.stdout.contains(&format!("projects_root          {}  ({}:4)", projects.display(), config_label())),
        "{}",
        shown.stdout
    );
    let environment = [("PROJECTS_ROOT", "/elsewhere")];
    let shown = acompose_with(temporary.path(), &["--home", "home", "config", "show"], &environment);
    assert!(shown.stdout.contains("projects_root          /elsewhere  ($PROJECTS_ROOT)"), "{}", shown.stdout);
    let shown = acompose_with(
        temporary.path(),
        &["--home", "home", "config", "show", "--projects-root", "/flag"],
        &environment,
    );
    assert!(shown.stdout.contains("projects_root          /flag  (--projects-root)"), "{}", shown.stdout);
}

fn config_label() -> &'static str {
    "home/agent-compose.yaml"
}

#[test]
fn config_show_names_every_setting_and_its_origin_in_text_and_json() {
    let temporary = tempfile::tempdir().expect("tempdir");
    external_home(temporary.path());
    let output = acompose(temporary.path(), &["--home", "home", "config", "show"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    for line in [
        "home                   home  (--home)",
        "configuration          home/agent-compose.yaml (read)",
        "person_source          home/../pkg  (home/agent-compose.yaml:1)",
        "person_policy          external-only  (home/agent-compose.yaml:2)",
        "skill_policy           warn  (default)",
    ] {
        assert!(output.stdout.contains(line), "{line}: {}", output.stdout);
    }
    let json = acompose(temporary.path(), &["--home", "home", "config", "show", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(document["format"], "acompose.config.v1");
    assert_eq!(document["settings"]["person_policy"]["origin"]["from"], "home/agent-compose.yaml:2");
    assert_eq!(document["settings"]["skill_policy"]["origin"]["kind"], "default");
    assert_eq!(document["configuration"]["found"], true);
}

#[test]
fn config_validate_reports_every_problem_with_its_line_and_accepts_a_good_file() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("bad.yaml"),
        "person_policy: external-only\nprojects_root: [a]\nmodel: large\nskill_policy: loose\n",
    );
    let output = acompose(temporary.path(), &["config", "validate", "bad.yaml"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    for expected in ["bad.yaml:2:16", "bad.yaml:3:1", "bad.yaml:4:15", "config-external-only", "(4 errors, 0 warnings)"]
    {
        assert!(output.stderr.contains(expected), "{expected}: {}", output.stderr);
    }
    let json = acompose(temporary.path(), &["config", "validate", "bad.yaml", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(document["errors"], 4);
    assert_eq!(document["diagnostics"][0]["line"], 2, "{}", json.stdout);
    assert_eq!(document["diagnostics"][0]["column"], 16, "{}", json.stdout);
    write_file(&temporary.path().join("good.yaml"), "projects_root: ~/src\nskill_policy: strict\n");
    let output = acompose(temporary.path(), &["config", "validate", "good.yaml"]);
    assert_eq!((output.code, output.stdout.as_str()), (0, "`good.yaml` is valid (0 errors, 0 warnings)\n"));
    let missing = acompose(temporary.path(), &["config", "validate", "missing.yaml"]);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    let home = acompose(temporary.path(), &["--home", "home", "config", "validate"]);
    assert_eq!(home.code, 0, "{}", home.stderr);
    assert!(home.stdout.contains("every setting is its default"), "{}", home.stdout);
}

#[test]
fn the_configured_skill_policy_applies_to_compose() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    write_file(
        &root.join("cat/.agents/skills/Bad_Name/SKILL.md"),
        "---\nname: Bad_Name\ndescription: d\n---\n\nBody.\n",
    );
    write_file(
        &root.join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"cat\" root=\"cat\"\n}\n",
    );
    let warned = acompose(root, &["--home", "home", "compose", "request.kdl", "--out", "out"]);
    assert_eq!(warned.code, 0, "warn by default: {}", warned.stderr);
    write_file(&root.join("home/agent-compose.yaml"), "skill_policy: strict\n");
    let refused = acompose(root, &["--home", "home", "compose", "request.kdl", "--out", "out"]);
    assert_eq!(refused.code, 1, "strict from the home: {}", refused.stderr);
}
