//! Errors about the right thing: a missing repository names the projects root and how to
//! change it; a flag value is reported as the flag; a launch or compose error says what
//! was wrong with the request before anything about the estate.

use crate::common;

use common::{acompose, acompose_with, write_file};

#[test]
fn a_missing_repository_names_the_projects_root_and_how_to_change_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(&temporary.path().join("home/agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    let output = acompose(temporary.path(), &["--home", "home", "--projects-root", "src"]);
    assert_eq!(output.code, 1);
    let root = temporary.path().join("src");
    assert!(output.stderr.contains(&format!("under the projects root `{}`", root.display())), "{}", output.stderr);
    assert!(output.stderr.contains("--projects-root DIR"), "{}", output.stderr);
    assert!(output.stderr.contains("projects_root:"), "{}", output.stderr);
    // A repository a trusted root names, composed by a request, too.
    write_file(
        &temporary.path().join("trusted/.agents/roles.kdl"),
        "repositories {\n    repository kit path=\"ex/kit\" { skill \"k\" }\n}\nroles {\n    role platform { use-repository kit }\n}\n",
    );
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"trusted\" root=\"trusted\"\n}\n",
    );
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out", "--projects-root", "src"]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("looked for `ex/kit` under the projects root"), "{}", output.stderr);
}

#[test]
fn a_flag_value_is_reported_as_the_flag_with_the_form_it_expects() {
    let temporary = tempfile::tempdir().expect("tempdir");
    assert_eq!(acompose(temporary.path(), &["people", "init"]).code, 0);
    let output = acompose(
        temporary.path(),
        &[
            "people",
            "add",
            "bob",
            "--name",
            "Bob",
            "--role",
            "reviewer",
            "--goal",
            "Review.",
            "--avatar-character",
            "bob",
            "--avatar-accent",
            "#12345",
        ],
    );
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("`--avatar-accent` is invalid"), "{}", output.stderr);
    assert!(output.stderr.contains("`#rrggbb`"), "{}", output.stderr);
    assert!(!output.stderr.contains("people/bob.json"), "no file that does not exist: {}", output.stderr);
    assert!(!temporary.path().join("people/bob.json").exists());
}

#[test]
fn a_compose_error_about_the_request_comes_before_anything_about_the_estate() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"platfrom\"\n    delivery \"compiled\"\n    source \"gone\" root=\"gone\" required=#true\n}\n",
    );
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("unknown-role"), "{}", output.stderr);
    assert!(!output.stderr.contains("source-unavailable"), "{}", output.stderr);
}

#[test]
fn a_launch_at_a_tier_the_role_lacks_says_so_and_not_that_the_estate_failed() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let bin = temporary.path().join("bin");
    write_file(&bin.join("claude"), "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(bin.join("claude")).expect("claude").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(bin.join("claude"), permissions).expect("chmod");
    let path = bin.display().to_string();
    let output = acompose_with(
        temporary.path(),
        &["--home", "home", "launch", "platform", "claude", "--tier", "oss", "--yes"],
        &[("PATH", &path)],
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("cannot launch `platform` at tier `oss`"), "{}", output.stderr);
    assert!(output.stderr.contains("unsupported-tier"), "{}", output.stderr);
    assert!(!output.stderr.contains("estate"), "{}", output.stderr);
    let unknown = acompose_with(
        temporary.path(),
        &["--home", "home", "launch", "platfrom", "claude", "--yes"],
        &[("PATH", &path)],
    );
    assert!(unknown.stderr.contains("did you mean `platform`?"), "{}", unknown.stderr);
}
