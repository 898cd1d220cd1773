//! `acompose doctor`: one line per check of the home, with a fix for each failure, exit 1
//! when one failed, and the same checks as JSON.

use crate::common;

use common::{acompose, acompose_with, generated_estate, write_file};

/// The status and detail of the line whose check is `name`.
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout.lines().find(|line| line[8..].starts_with(name)).unwrap_or_else(|| panic!("no `{name}` line: {stdout}"))
}

#[test]
fn a_fresh_machine_passes_and_says_what_it_found() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["--home", "home", "doctor"]);
    assert_eq!(output.code, 0, "{}", output.stdout);
    assert!(line(&output.stdout, "home").starts_with("note"), "{}", output.stdout);
    assert!(line(&output.stdout, "person source").contains("roster:core: 7 roles, 10 personalities"));
    assert!(line(&output.stdout, "store").starts_with("ok"), "{}", output.stdout);
    assert!(output.stdout.ends_with("0 failed, 0 warning(s)\n"), "{}", output.stdout);
}

#[test]
fn every_failure_has_a_fix_and_fails_the_command() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("home/agent-compose.yaml"),
        "operating_context:\n  - acme/gone\nprojects_root: ../projects\n",
    );
    std::fs::create_dir_all(temporary.path().join("projects")).expect("projects");
    let output = acompose(temporary.path(), &["--home", "home", "doctor"]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    let failed = line(&output.stdout, "repository acme/gone");
    assert!(failed.starts_with("fail"), "{failed}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    let at = lines.iter().position(|candidate| *candidate == failed).expect("line");
    assert!(lines[at + 1].trim_start().starts_with("fix: check it out there"), "{}", output.stdout);
    // A configuration that refuses every roster command.
    write_file(&temporary.path().join("home/agent-compose.yaml"), "person_policy: external-only\n");
    let output = acompose(temporary.path(), &["--home", "home", "doctor"]);
    assert_eq!(output.code, 1);
    assert!(line(&output.stdout, "config").starts_with("fail"), "{}", output.stdout);
    // An invalid one.
    write_file(&temporary.path().join("home/agent-compose.yaml"), "colour: blue\n");
    let output = acompose(temporary.path(), &["--home", "home", "doctor", "--json"]);
    assert_eq!(output.code, 1);
    let document: serde_json::Value = serde_json::from_str(&output.stdout).expect("json");
    assert_eq!(document["format"], "acompose.doctor.v1");
    assert_eq!(document["checks"][0]["name"], "config");
    assert!(document["checks"][0]["fix"].as_str().expect("fix").contains("config validate"));
}

#[test]
fn a_damaged_bundle_a_missing_projection_and_a_harness_on_path_are_seen() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (_home, projects) = generated_estate(temporary.path(), 1);
    let projects = projects.display().to_string();
    assert_eq!(acompose(temporary.path(), &["--home", "home", "--projects-root", &projects]).code, 0);
    let bin = temporary.path().join("bin");
    write_file(&bin.join("claude"), "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(bin.join("claude")).expect("claude").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(bin.join("claude"), permissions).expect("chmod");
    let path = bin.display().to_string();
    let doctor = |arguments: &[&str]| {
        let mut all = vec!["--home", "home", "doctor", "--projects-root", &projects];
        all.extend_from_slice(arguments);
        acompose_with(temporary.path(), &all, &[("PATH", path.as_str())])
    };
    let healthy = doctor(&[]);
    assert_eq!(healthy.code, 0, "{}", healthy.stdout);
    assert!(line(&healthy.stdout, "harnesses on PATH").contains("claude"), "{}", healthy.stdout);
    assert!(line(&healthy.stdout, "store").contains("7 of 7 indexed bundle(s) verified"), "{}", healthy.stdout);
    // A registered projection whose target was deleted: a warning with the way to forget it.
    let target = temporary.path().join("checkout");
    std::fs::create_dir_all(&target).expect("target");
    let target_text = target.display().to_string();
    let projected = acompose(
        temporary.path(),
        &["--home", "home", "project", "platform", "--layout", "claude", "--target", &target_text],
    );
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    std::fs::remove_dir_all(&target).expect("delete the checkout");
    let missing = doctor(&[]);
    assert_eq!(missing.code, 0, "a warning does not fail: {}", missing.stdout);
    let warned = line(&missing.stdout, &format!("projection {target_text}"));
    assert!(warned.starts_with("warning") && warned.contains("platform (missing)"), "{}", missing.stdout);
    assert!(missing.stdout.contains(&format!("--layout HARNESS --target {target_text}`")), "{}", missing.stdout);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(temporary.path().join("home/bundles/index.json")).expect("index"))
            .expect("json");
    let bundle = temporary.path().join("home/bundles").join(index["bundles"]["tpm"].as_str().expect("tpm"));
    let instructions = bundle.join("content/instructions.md");
    let mut permissions = std::fs::metadata(&instructions).expect("instructions").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o644);
    std::fs::set_permissions(&instructions, permissions).expect("chmod");
    std::fs::write(&instructions, "changed by hand\n").expect("damage");
    let damaged = doctor(&[]);
    assert_eq!(damaged.code, 1, "{}", damaged.stdout);
    assert!(line(&damaged.stdout, "store").contains("damaged: tpm"), "{}", damaged.stdout);
}

#[test]
fn a_repository_a_trusted_root_declares_that_is_missing_fails_with_the_roles_it_fails() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    write_file(
        &root.join("home/agent-compose.yaml"),
        "operating_context:\n  - acme/root\nprojects_root: ../projects\n",
    );
    write_file(
        &root.join("projects/acme/root/.agents/roles.kdl"),
        "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository web path=\"acme/web-skills\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role frontend { use-repository web; }\n}\n",
    );
    write_file(
        &root.join("projects/example/hardware/.agents/skills/machine-cpu/SKILL.md"),
        "---\nname: machine-cpu\ndescription: CPU.\n---\n",
    );
    let output = acompose(root, &["--home", "home", "doctor"]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    let failed = line(&output.stdout, "repository acme/web-skills");
    assert!(failed.starts_with("fail"), "{failed}");
    assert!(failed.contains("acme/web-skills` does not exist"), "{failed}");
    assert!(failed.contains("declared by `acme/root` as `web` (used by frontend)"), "{failed}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    let at = lines.iter().position(|candidate| *candidate == failed).expect("line");
    assert!(lines[at + 1].trim_start().starts_with("fix: check it out under the projects root"), "{}", output.stdout);
    assert!(line(&output.stdout, "declared repositories").contains("1 of 2"), "{}", output.stdout);
    // Once it is there, every check passes.
    write_file(
        &root.join("projects/acme/web-skills/.agents/skills/web-a11y/SKILL.md"),
        "---\nname: web-a11y\ndescription: A.\n---\n",
    );
    let output = acompose(root, &["--home", "home", "doctor"]);
    assert_eq!(output.code, 0, "{}", output.stdout);
    assert!(line(&output.stdout, "declared repositories").starts_with("ok"), "{}", output.stdout);
}

#[test]
fn the_people_session_host_is_tmux_when_installed_and_a_warning_when_not() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let empty = temporary.path().join("empty");
    std::fs::create_dir_all(&empty).expect("an empty folder");
    let with = acompose_with(temporary.path(), &["--home", "home", "doctor"], &[("PATH", "/usr/bin:/bin")]);
    let host = line(&with.stdout, "People session host");
    assert!(host.starts_with("ok") && host.contains("tmux at /usr/bin/tmux"), "{}", with.stdout);
    let empty = empty.display().to_string();
    let without = acompose_with(temporary.path(), &["--home", "home", "doctor"], &[("PATH", empty.as_str())]);
    let host = line(&without.stdout, "People session host");
    assert!(host.starts_with("warning") && host.contains("tmux is not installed"), "{}", without.stdout);
    assert!(without.stdout.contains("apt-get install tmux"), "{}", without.stdout);
}
