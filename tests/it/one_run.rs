//! Every mistake in one run: the request, roster and `roles.kdl` readers report every
//! independent error of a file at once, and keep quiet about errors that only follow
//! from an earlier one; a `roles.kdl` role the roster lacks is a warning on every run (an
//! error under `skill_policy: strict`).

use crate::common;

use std::path::Path;

use common::{acompose, write_file};

/// The codes of the diagnostics in `stderr`, in order (each is on a line of its own).
fn codes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| {
            !line.is_empty() && line.chars().all(|character| character.is_ascii_lowercase() || character == '-')
        })
        .collect()
}

#[test]
fn a_request_with_a_bad_role_delivery_and_tier_reports_all_three_in_one_run() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"platfrom\"\n    delivery \"zip\"\n    model-tier \"gpt\"\n}\n",
    );
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert_eq!(codes(&output.stderr), ["unknown-role", "unknown-delivery", "unknown-model-tier"], "{}", output.stderr);
    assert!(output.stderr.contains("did you mean `platform`?"), "{}", output.stderr);
    assert!(output.stderr.contains("(3 errors, 0 warnings)"), "{}", output.stderr);
    // A known role with a tier it does not support: both mistakes, still one run.
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"zip\"\n    model-tier \"oss\"\n}\n",
    );
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(codes(&output.stderr), ["unknown-delivery", "unsupported-tier"], "{}", output.stderr);
    assert!(!temporary.path().join("out").exists(), "nothing is written");
}

#[test]
fn a_request_whose_person_source_is_refused_is_not_checked_against_another_roster() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    person-source \"/abs\"\n    role \"builder\"\n    delivery \"compiled\"\n}\n",
    );
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(codes(&output.stderr), ["request-path"], "no unknown-role against roster:core: {}", output.stderr);
}

/// `roster validate` of the base fixture package with `change` applied.
fn validate_changed(change: impl FnOnce(&Path)) -> common::Output {
    let temporary = tempfile::tempdir().expect("tempdir");
    let package = temporary.path().join("pkg");
    common::copy_dir(&common::fixtures().join("roster/base"), &package);
    change(&package);
    acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg"])
}

fn replace(path: &Path, old: &str, new: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(old), "{old} in {}", path.display());
    std::fs::write(path, text.replace(old, new)).expect("write");
}

#[test]
fn roster_errors_that_only_follow_from_an_earlier_one_are_not_reported() {
    // A missing personality skill: the personality is broken, not unknown to its roles.
    let output = validate_changed(|package| {
        std::fs::remove_file(package.join("definitions/skills/personality-steady/SKILL.md")).expect("remove");
    });
    assert_eq!(codes(&output.stderr), ["definition-missing"], "{}", output.stderr);
    // A misspelt property: one diagnostic that names the right one, not "missing
    // pronouns" and "seat has no identity" twice more.
    let output = validate_changed(|package| {
        replace(&package.join("roles/01-builder.kdl"), "pronouns=\"they\"", "pronoun=\"they\"");
    });
    assert_eq!(codes(&output.stderr), ["unknown-property"], "{}", output.stderr);
    assert!(output.stderr.contains("did you mean `pronouns`?"), "{}", output.stderr);
    // A misspelt node: not also "role has no purpose".
    let output = validate_changed(|package| {
        replace(&package.join("roles/01-builder.kdl"), "    purpose \"", "    purpos \"");
    });
    assert_eq!(codes(&output.stderr), ["unknown-node"], "{}", output.stderr);
    assert!(output.stderr.contains("did you mean `purpose`?"), "{}", output.stderr);
}

#[test]
fn independent_roster_mistakes_of_one_role_are_all_reported_in_one_run() {
    // The role skill is missing and the role file has a bad seat tier: both, at once.
    let output = validate_changed(|package| {
        std::fs::remove_file(package.join("roles/builder/SKILL.md")).expect("remove");
        replace(
            &package.join("roles/01-builder.kdl"),
            "agent \"codex\" tier=\"commodity\"",
            "agent \"codex\" tier=\"oss\"",
        );
    });
    let found = codes(&output.stderr);
    assert!(found.contains(&"role-skill-missing"), "{}", output.stderr);
    assert!(found.contains(&"seat-tier-unsupported"), "{}", output.stderr);
}

#[test]
fn every_independent_mistake_of_a_roles_file_is_reported_in_one_run() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    write_file(
        &root.join("trusted/.agents/roles.kdl"),
        "repositories {\n    repository kit path=\"not a path\"\n    repository docs path=\"ex/docs\"\n    globl docs\n}\nroles {\n    role platform { use-repository dcs }\n}\n",
    );
    write_file(
        &root.join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"trusted\" root=\"trusted\"\n}\n",
    );
    let output = acompose(root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    let found = codes(&output.stderr);
    for code in ["repository-path", "unknown-node", "unknown-repository"] {
        assert!(found.contains(&code), "{code}: {}", output.stderr);
    }
    assert!(output.stderr.contains("did you mean `global`?"), "{}", output.stderr);
    assert!(output.stderr.contains("did you mean `docs`?"), "{}", output.stderr);
}

/// A home whose trusted root admits a kit to `platfrom`, a role `roster:core` lacks.
fn estate_with_a_misspelt_role(root: &Path) {
    write_file(
        &root.join("projects/ex/kit/.agents/skills/review-kit/SKILL.md"),
        "---\nname: review-kit\ndescription: Review kit.\n---\n\nBody.\n",
    );
    write_file(
        &root.join("projects/acme/root/.agents/roles.kdl"),
        "repositories {\n    repository kit path=\"ex/kit\" { skill \"review-kit\" }\n}\nroles {\n    role platfrom { use-repository kit }\n}\n",
    );
    write_file(
        &root.join("home/agent-compose.yaml"),
        "operating_context:\n  - acme/root\nprojects_root: ../projects\n",
    );
}

#[test]
fn a_roles_file_role_the_roster_lacks_warns_on_every_run_and_fails_under_strict() {
    let temporary = tempfile::tempdir().expect("tempdir");
    estate_with_a_misspelt_role(temporary.path());
    for run in 0..2 {
        let output = acompose(temporary.path(), &["--home", "home"]);
        assert_eq!(output.code, 0, "run {run}: {}", output.stderr);
        assert_eq!(codes(&output.stderr), ["role-not-in-roster"], "run {run}: {}", output.stderr);
        assert!(output.stderr.contains("did you mean `platform`?"), "run {run}: {}", output.stderr);
    }
    let config = temporary.path().join("home/agent-compose.yaml");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, format!("{text}skill_policy: strict\n")).expect("config");
    let index = std::fs::read(temporary.path().join("home/bundles/index.json")).expect("index");
    let output = acompose(temporary.path(), &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("role-not-in-roster"), "{}", output.stderr);
    assert_eq!(std::fs::read(temporary.path().join("home/bundles/index.json")).expect("index"), index);
}
