//! Assigned launch with fake `claude` and `codex` executables on `PATH` that record
//! their argv, environment and the skills they can see: only the assigned role's bundle
//! is visible, the host's global skill mount is hidden, nested launches are refused and
//! no credential's bytes reach a bundle, a runtime home or the output.

use crate::common;

use std::path::{Path, PathBuf};

use common::acompose_with;

/// A user's machine: a real home with a global skill mount and credentials, a `PATH`
/// folder with fake harnesses, and an acompose home.
struct Machine {
    _temporary: tempfile::TempDir,
    root: PathBuf,
    user_home: PathBuf,
    acompose_home: PathBuf,
    bin: PathBuf,
    records: PathBuf,
}

const CLAUDE_SECRET: &str = "claude-credential-7f3a9c";
const CODEX_SECRET: &str = "codex-credential-51be02";

/// The script of a fake harness: writes what it sees to `$RECORDS/<name>.txt`, then
/// tries a nested launch.
fn fake_harness(name: &str, config_variable: &str, skills: &str) -> String {
    format!(
        r#"#!/bin/sh
out="$RECORDS/{name}.txt"
{{
  echo "argv: $*"
  echo "config: ${config_variable}"
  echo "home: $HOME"
  echo "launch: $AGENT_COMPOSE_LAUNCH"
  echo "role: $AGENT_GIT_ATTRIBUTION_ROLE"
  for folder in "{skills}"/* "$HOME/.agents/skills"/* "$HOME/.claude/skills"/*; do
    [ -f "$folder/SKILL.md" ] && echo "skill: $(basename "$folder")"
  done
}} > "$out"
"$ACOMPOSE_BIN" launch tpm {name} --yes > "$RECORDS/{name}-nested.txt" 2>&1
echo "nested exit: $?" >> "$out"
"#
    )
}

fn machine() -> Machine {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().to_path_buf();
    let user_home = root.join("user");
    let global = user_home.join(".claude/skills/global-mounted");
    std::fs::create_dir_all(&global).expect("mkdir");
    std::fs::write(global.join("SKILL.md"), "---\nname: global-mounted\ndescription: the host mount\n---\n")
        .expect("write");
    let agents = user_home.join(".agents/skills/agents-mounted");
    std::fs::create_dir_all(&agents).expect("mkdir");
    std::fs::write(agents.join("SKILL.md"), "---\nname: agents-mounted\ndescription: the host mount\n---\n")
        .expect("write");
    std::fs::write(user_home.join(".claude/.credentials.json"), CLAUDE_SECRET).expect("write");
    std::fs::create_dir_all(user_home.join(".codex")).expect("mkdir");
    std::fs::write(user_home.join(".codex/auth.json"), CODEX_SECRET).expect("write");
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    for (name, variable, skills) in
        [("claude", "CLAUDE_CONFIG_DIR", "$CLAUDE_CONFIG_DIR/skills"), ("codex", "CODEX_HOME", "$HOME/.agents/skills")]
    {
        let path = bin.join(name);
        std::fs::write(&path, fake_harness(name, variable, skills)).expect("write");
        let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).expect("chmod");
    }
    let records = root.join("records");
    std::fs::create_dir_all(&records).expect("mkdir");
    Machine { acompose_home: root.join("acompose-home"), _temporary: temporary, root, user_home, bin, records }
}

impl Machine {
    fn run(&self, arguments: &[&str], extra: &[(&str, &str)]) -> common::Output {
        let path = format!("{}:/usr/bin:/bin", self.bin.display());
        let mut environment = vec![
            ("HOME", self.user_home.to_str().expect("utf-8")),
            ("ACOMPOSE_HOME", self.acompose_home.to_str().expect("utf-8")),
            ("PATH", path.as_str()),
            ("RECORDS", self.records.to_str().expect("utf-8")),
            ("ACOMPOSE_BIN", env!("CARGO_BIN_EXE_acompose")),
        ];
        environment.extend_from_slice(extra);
        acompose_with(&self.root, arguments, &environment)
    }

    fn record(&self, name: &str) -> String {
        std::fs::read_to_string(self.records.join(format!("{name}.txt"))).expect("the harness ran")
    }
}

fn lines_with<'a>(record: &'a str, prefix: &str) -> Vec<&'a str> {
    record.lines().filter_map(|line| line.strip_prefix(prefix)).collect()
}

/// Every regular file under `root`, links not followed.
fn files_under(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| entry.path().to_path_buf())
        .collect()
}

#[test]
fn claude_sees_only_the_assigned_role_and_a_nested_launch_is_refused() {
    let machine = machine();
    let output = machine.run(&["launch", "platform", "claude", "--yes", "--", "--resume", "abc"], &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let record = machine.record("claude");
    assert_eq!(lines_with(&record, "argv: "), ["--resume abc"]);
    assert_eq!(lines_with(&record, "launch: "), ["1"]);
    assert_eq!(lines_with(&record, "role: "), ["platform"]);
    let runtime = PathBuf::from(lines_with(&record, "home: ")[0]);
    assert!(runtime.starts_with(machine.acompose_home.join("runtime")), "{}", runtime.display());
    assert_eq!(lines_with(&record, "config: "), [runtime.join(".claude").to_str().expect("utf-8")]);
    let skills = lines_with(&record, "skill: ");
    assert!(skills.contains(&"role-platform"), "{skills:?}");
    assert!(!skills.iter().any(|skill| skill.starts_with("role-") && *skill != "role-platform"), "{skills:?}");
    assert!(!skills.contains(&"global-mounted") && !skills.contains(&"agents-mounted"), "{skills:?}");
    let nested = std::fs::read_to_string(machine.records.join("claude-nested.txt")).expect("nested");
    assert!(nested.contains("already an assigned launch"), "{nested}");
    assert_eq!(lines_with(&record, "nested exit: "), ["1"]);
    // The credentials are linked, never copied.
    let linked = runtime.join(".claude/.credentials.json");
    assert_eq!(std::fs::read_link(&linked).expect("a link"), machine.user_home.join(".claude/.credentials.json"));
    for file in files_under(&machine.acompose_home) {
        let bytes = std::fs::read(&file).expect("read");
        assert!(!String::from_utf8_lossy(&bytes).contains(CLAUDE_SECRET), "{} holds the credential", file.display());
    }
    assert!(!output.stdout.contains(CLAUDE_SECRET) && !output.stderr.contains(CLAUDE_SECRET));
}

#[test]
fn the_shorthand_launches_codex_with_its_home_moved_and_the_user_skills_hidden() {
    let machine = machine();
    let output = machine.run(&["sysadmin", "codex", "exec", "--full-auto"], &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let record = machine.record("codex");
    assert_eq!(lines_with(&record, "argv: "), ["exec --full-auto"]);
    let runtime = PathBuf::from(lines_with(&record, "home: ")[0]);
    assert_eq!(lines_with(&record, "config: "), [runtime.join(".codex").to_str().expect("utf-8")]);
    let skills = lines_with(&record, "skill: ");
    assert!(skills.contains(&"role-sysadmin"), "{skills:?}");
    assert!(!skills.contains(&"agents-mounted") && !skills.contains(&"role-platform"), "{skills:?}");
    assert!(runtime.join(".codex/AGENTS.md").is_file());
    assert!(std::fs::symlink_metadata(runtime.join(".codex/auth.json")).expect("link").file_type().is_symlink());
    for file in files_under(&machine.acompose_home) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        assert!(!text.contains(CODEX_SECRET), "{} holds the credential", file.display());
    }
}

#[test]
fn a_launch_inside_a_launch_is_refused_before_anything_is_written() {
    let machine = machine();
    let output = machine.run(&["launch", "platform", "claude", "--yes"], &[("AGENT_COMPOSE_LAUNCH", "1")]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("already an assigned launch"), "{}", output.stderr);
    assert!(!machine.acompose_home.exists());
    assert!(!machine.records.join("claude.txt").exists());
}

#[test]
fn an_unknown_role_names_the_valid_ones_and_a_missing_harness_says_so() {
    let machine = machine();
    let output = machine.run(&["launch", "astronaut", "claude", "--yes"], &[]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("valid roles: platform"), "{}", output.stderr);
    let runtime_homes: Vec<_> = std::fs::read_dir(machine.acompose_home.join("runtime"))
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.file_name()).collect())
        .unwrap_or_default();
    assert!(runtime_homes.iter().all(|name| name == "bundles"), "{runtime_homes:?}");
    let output = machine.run(&["launch", "platform", "gemini", "--yes"], &[]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("`gemini` (Gemini CLI) is not on `PATH`"), "{}", output.stderr);
}

#[test]
fn statusline_inside_a_launch_reads_the_runtime_home() {
    let machine = machine();
    let output = machine.run(&["launch", "platform", "claude", "--yes"], &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let runtime = lines_with(&machine.record("claude"), "home: ")[0].to_owned();
    let elsewhere = machine.root.join("checkout");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let target = elsewhere.to_str().expect("utf-8");
    let inside = machine.run(&["statusline", "--target", target], &[("AGENT_COMPOSE_LAUNCH", "1"), ("HOME", &runtime)]);
    assert!(inside.stdout.contains("platform@claude"), "{}", inside.stdout);
    let outside = machine.run(&["statusline", "--target", target], &[]);
    assert_eq!(outside.stdout, "");
}
