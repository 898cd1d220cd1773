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

/// The script of a fake harness: writes what it sees to `$RECORDS/<name>.txt` (`skills`:
/// the skill folders the real harness reads, as shell words), then tries a nested launch.
fn fake_harness(name: &str, config_variable: &str, skills: &str) -> String {
    format!(
        r#"#!/bin/sh
out="$RECORDS/{name}.txt"
{{
  echo "argv: $*"
  echo "config: ${config_variable}"
  echo "home: $HOME"
  echo "runtime: $AGENT_COMPOSE_RUNTIME_HOME"
  echo "launch: $AGENT_COMPOSE_LAUNCH"
  echo "role: $AGENT_GIT_ATTRIBUTION_ROLE"
  for folder in {skills}; do
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
    for (name, variable, skills) in [
        // With its configuration folder moved, Claude Code reads no skills of the home.
        ("claude", "CLAUDE_CONFIG_DIR", "\"$CLAUDE_CONFIG_DIR/skills\"/*"),
        // Codex reads `~/.agents/skills` whatever CODEX_HOME says.
        ("codex", "CODEX_HOME", "\"$HOME/.agents/skills\"/* \"$CODEX_HOME/skills\"/*"),
    ] {
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
    // Claude Code keeps the user's home: its configuration folder alone moves.
    assert_eq!(lines_with(&record, "home: "), [machine.user_home.to_str().expect("utf-8")]);
    let runtime = PathBuf::from(lines_with(&record, "runtime: ")[0]);
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
    assert_eq!(lines_with(&record, "runtime: "), [runtime.to_str().expect("utf-8")], "Codex's home moves");
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
    let runtime = lines_with(&machine.record("claude"), "runtime: ")[0].to_owned();
    let elsewhere = machine.root.join("checkout");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let target = elsewhere.to_str().expect("utf-8");
    let inside = machine.run(
        &["statusline", "--target", target],
        &[("AGENT_COMPOSE_LAUNCH", "1"), ("AGENT_COMPOSE_RUNTIME_HOME", &runtime)],
    );
    assert!(inside.stdout.contains("platform@claude"), "{}", inside.stdout);
    let outside = machine.run(&["statusline", "--target", target], &[]);
    assert_eq!(outside.stdout, "");
}

/// A fake harness that reports what it can open where the real one looks: its user
/// configuration file (`$1`), its skills (`$2`, the folders it reads), the projects root
/// and the ordered repositories; it also appends to a history file in its home, as a
/// harness keeps sessions there.
fn observing_harness(configuration: &str, skills: &str) -> String {
    format!(
        r#"#!/bin/sh
out="$RECORDS/$(basename "$0").txt"
{{
  echo "home: $HOME"
  echo "runtime: $AGENT_COMPOSE_RUNTIME_HOME"
  if [ -f "{configuration}" ]; then echo "configuration: $(cat "{configuration}")"; else echo "configuration: none"; fi
  for folder in {skills}; do
    [ -f "$folder/SKILL.md" ] && echo "skill: $(basename "$folder")"
  done
  echo "projects root: $PROJECTS_ROOT"
  (cd "$PROJECTS_ROOT" && find . -type l | sort | sed 's/^/project: /')
  echo "repositories: $AGENT_COMPOSE_REPOSITORIES"
  echo "session" >> "$HOME/history.txt"
  echo "history: $(wc -l < "$HOME/history.txt")"
}} > "$out"
"#
    )
}

const ESTATE_ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role eval { use-repository benchmarks; }\n}\n";

/// A machine whose acompose home has an estate (a trusted root and two repositories), the
/// user's own Claude Code, OpenCode and Gemini CLI configuration, and observing fakes of
/// those three harnesses.
fn estate_machine() -> Machine {
    let machine = machine();
    let projects = machine.root.join("projects");
    let skill = |name: &str| format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\nUse it.\n");
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(&projects.join("acme/root/.agents/roles.kdl"), ESTATE_ROLES);
    write(&projects.join("acme/root/.agents/skills/estate-map/SKILL.md"), &skill("estate-map"));
    for name in ["machine-cpu", "machine-gpu"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name));
    }
    write(&projects.join("example/benchmarks/.agents/skills/bench-report/SKILL.md"), &skill("bench-report"));
    write(&projects.join("example/unrelated/README.md"), "not the role's\n");
    write(&machine.acompose_home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    let user = &machine.user_home;
    write(&user.join(".claude.json"), "claude user state with an MCP server\n");
    write(&user.join(".config/opencode/opencode.json"), "opencode providers\n");
    write(&user.join(".gemini/trustedFolders.json"), "gemini trust\n");
    for (name, configuration, skills) in [
        ("claude", "$CLAUDE_CONFIG_DIR/.claude.json", "\"$CLAUDE_CONFIG_DIR/skills\"/*"),
        (
            "opencode",
            "$XDG_CONFIG_HOME/opencode/opencode.json",
            "\"$XDG_CONFIG_HOME/opencode/skills\"/* \"$HOME/.agents/skills\"/* \"$HOME/.claude/skills\"/*",
        ),
        (
            "gemini",
            "$GEMINI_CLI_HOME/.gemini/trustedFolders.json",
            "\"$GEMINI_CLI_HOME/.gemini/skills\"/* \"$GEMINI_CLI_HOME/.agents/skills\"/*",
        ),
    ] {
        let path = machine.bin.join(name);
        std::fs::write(&path, observing_harness(configuration, skills)).expect("write");
        let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).expect("chmod");
    }
    machine
}

impl Machine {
    fn launch(&self, arguments: &[&str]) -> common::Output {
        let projects = self.root.join("projects");
        let mut full = arguments.to_vec();
        full.extend(["--yes", "--projects-root", projects.to_str().expect("utf-8")]);
        self.run(&full, &[])
    }
}

#[test]
fn each_harness_finds_the_users_own_configuration_where_it_reads_it() {
    let machine = estate_machine();
    for (harness, expected) in [
        ("claude", "claude user state with an MCP server"),
        ("opencode", "opencode providers"),
        ("gemini", "gemini trust"),
    ] {
        let output = machine.launch(&["launch", "platform", harness]);
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        let record = machine.record(harness);
        assert_eq!(lines_with(&record, "configuration: "), [expected], "{harness}: {record}");
        let skills = lines_with(&record, "skill: ");
        assert!(skills.contains(&"role-platform") && skills.contains(&"machine-cpu"), "{harness}: {skills:?}");
        assert!(!skills.iter().any(|skill| *skill == "bench-report" || *skill == "role-eval"), "{skills:?}");
        assert!(!skills.contains(&"global-mounted") && !skills.contains(&"agents-mounted"), "{skills:?}");
    }
}

#[test]
fn the_runtime_home_outlives_an_edit_and_gc_removes_a_deleted_roles() {
    let machine = estate_machine();
    assert_eq!(machine.launch(&["launch", "platform", "claude"]).code, 0);
    let first = machine.record("claude");
    let runtime = PathBuf::from(lines_with(&first, "runtime: ")[0]);
    assert_eq!(runtime, machine.acompose_home.join("runtime/claude-platform"));
    let skill = machine.root.join("projects/example/hardware/.agents/skills/machine-cpu/SKILL.md");
    std::fs::write(&skill, "---\nname: machine-cpu\ndescription: Revised.\n---\n\nRevised.\n").expect("edit");
    let index = || std::fs::read_to_string(machine.acompose_home.join("bundles/index.json")).expect("index");
    let before = index();
    assert_eq!(machine.launch(&["launch", "platform", "claude"]).code, 0);
    assert_ne!(index(), before, "the edit made a new bundle");
    let second = machine.record("claude");
    assert_eq!(lines_with(&second, "runtime: "), [runtime.to_str().expect("utf-8")], "the same runtime home");
    assert_eq!(lines_with(&second, "history: "), ["2"], "what the harness wrote there is still there");
    let text = std::fs::read_to_string(runtime.join(".claude/skills/machine-cpu/SKILL.md")).expect("skill");
    assert!(text.contains("Revised."), "the new bundle is in place: {text}");
    let homes: Vec<_> = std::fs::read_dir(machine.acompose_home.join("runtime"))
        .expect("runtime")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(homes.iter().filter(|name| name.starts_with("claude-")).count(), 1, "{homes:?}");

    // A runtime home of a role the roster does not have, and one of the old naming.
    for stale in ["claude-astronaut", "codex-platform-0123456789abcdef"] {
        std::fs::create_dir_all(machine.acompose_home.join("runtime").join(stale).join(".codex")).expect("stale");
    }
    let gc = machine.run(&["gc"], &[]);
    assert_eq!(gc.code, 0, "{}", gc.stderr);
    assert!(gc.stdout.contains("runtime   2 runtime homes"), "{}", gc.stdout);
    assert!(!machine.acompose_home.join("runtime/claude-astronaut").exists());
    assert!(!machine.acompose_home.join("runtime/codex-platform-0123456789abcdef").exists());
    assert!(runtime.join(".claude/skills/machine-cpu").exists(), "a live role's runtime home stays");
    assert!(machine.user_home.join("history.txt").is_file(), "the harness wrote to the user's own home");
}

#[test]
fn the_projects_root_under_launch_holds_exactly_the_roles_repositories_in_order() {
    let machine = estate_machine();
    assert_eq!(machine.launch(&["launch", "platform", "claude"]).code, 0);
    let record = machine.record("claude");
    let runtime = PathBuf::from(lines_with(&record, "runtime: ")[0]);
    let root = runtime.join(".agent-compose/projects");
    assert_eq!(lines_with(&record, "projects root: "), [root.to_str().expect("utf-8")]);
    assert_eq!(lines_with(&record, "project: "), ["./acme/root", "./example/hardware"]);
    let ordered = [root.join("acme/root"), root.join("example/hardware")];
    let joined = std::env::join_paths(&ordered).expect("join");
    assert_eq!(lines_with(&record, "repositories: "), [joined.to_str().expect("utf-8")]);
}

#[test]
fn another_roles_projection_in_the_checkout_refuses_the_launch_and_changes_nothing() {
    let machine = estate_machine();
    assert_eq!(machine.run(&["--projects-root", "projects"], &[]).code, 0);
    let checkout = machine.root.join("checkout");
    std::fs::create_dir_all(checkout.join(".git")).expect("checkout");
    let target = checkout.to_str().expect("utf-8");
    let projected = machine.run(&["project", "eval", "--layout", "claude", "--target", target], &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let inside = checkout.join("src");
    std::fs::create_dir_all(&inside).expect("src");
    let before = common::tree_of(&machine.root);
    let path = format!("{}:/usr/bin:/bin", machine.bin.display());
    let projects = machine.root.join("projects");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_acompose"));
    command
        .args(["launch", "platform", "claude", "--yes", "--projects-root"])
        .arg(&projects)
        .current_dir(&inside)
        .env("HOME", &machine.user_home)
        .env("ACOMPOSE_HOME", &machine.acompose_home)
        .env("PATH", &path)
        .env("RECORDS", &machine.records)
        .env("NO_COLOR", "1");
    let refused = command.output().expect("run");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("holds a projection of `eval` (claude)"), "{stderr}");
    assert!(stderr.contains("--allow-foreign-context"), "{stderr}");
    assert_eq!(common::tree_of(&machine.root), before, "nothing changed");
    let allowed = command.arg("--allow-foreign-context").output().expect("run");
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
    assert!(String::from_utf8_lossy(&allowed.stderr).contains("which the harness reads too"));
}

#[test]
fn a_harness_listing_limit_is_named_before_it_drops_anything() {
    let machine = estate_machine();
    let long = "Measures the machine. ".repeat(60);
    let skill = machine.root.join("projects/example/hardware/.agents/skills/machine-cpu/SKILL.md");
    std::fs::write(&skill, format!("---\nname: machine-cpu\ndescription: {long}\n---\n\nUse it.\n")).expect("long");
    assert_eq!(machine.run(&["--projects-root", "projects"], &[]).code, 0);
    let target = machine.root.join("work");
    std::fs::create_dir_all(&target).expect("work");
    let arguments = ["project", "platform", "--layout", "claude", "--target", target.to_str().expect("utf-8")];
    let projected = machine.run(&arguments, &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let expected = format!(
        "Claude Code takes descriptions of at most 1024 characters: `machine-cpu`'s has {}",
        long.trim_end().len()
    );
    assert!(projected.stderr.contains(&expected), "{}", projected.stderr);
    // Gemini CLI has no description limit in its row: nothing to say.
    let gemini = ["project", "platform", "--layout", "gemini", "--scope", "home", "--target"];
    let home_target = machine.root.join("gemini-home");
    std::fs::create_dir_all(&home_target).expect("gemini home");
    let mut gemini = gemini.to_vec();
    gemini.push(home_target.to_str().expect("utf-8"));
    let quiet = machine.run(&gemini, &[]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("warning:"), "{}", quiet.stderr);

    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(machine.acompose_home.join("bundles/index.json")).expect("index"),
    )
    .expect("json");
    let bundle = machine.acompose_home.join("bundles").join(index["bundles"]["platform"].as_str().expect("id"));
    let described = machine.run(&["describe", bundle.to_str().expect("utf-8"), "--harness", "codex"], &[]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    assert!(described.stderr.contains("Codex takes descriptions of at most 1024"), "{}", described.stderr);
    let fits = machine.run(&["describe", bundle.to_str().expect("utf-8"), "--harness", "gemini"], &[]);
    assert!(fits.stdout.contains("Gemini CLI: every skill fits its listing"), "{}", fits.stdout);
}

#[test]
fn a_bundle_from_elsewhere_is_launched_when_named_and_must_be_of_the_role() {
    let machine = estate_machine();
    assert_eq!(machine.run(&["--projects-root", "projects"], &[]).code, 0);
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(machine.acompose_home.join("bundles/index.json")).expect("index"),
    )
    .expect("json");
    let id = index["bundles"]["platform"].as_str().expect("id");
    // As a pulled or imported bundle would be: a folder outside the home's bundles.
    let archive = machine.root.join("platform.tar");
    let bundle = machine.acompose_home.join("bundles").join(id);
    let exported = machine
        .run(&["bundle", "export", bundle.to_str().expect("utf-8"), "--out", archive.to_str().expect("utf-8")], &[]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let elsewhere = machine.root.join("elsewhere");
    let imported = machine
        .run(&["bundle", "import", archive.to_str().expect("utf-8"), "--out", elsewhere.to_str().expect("utf-8")], &[]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let given = elsewhere.join(id);
    let launched = machine.launch(&["launch", "platform", "claude", "--bundle", given.to_str().expect("utf-8")]);
    assert_eq!(launched.code, 0, "{}", launched.stderr);
    let record = machine.record("claude");
    let runtime = PathBuf::from(lines_with(&record, "runtime: ")[0]);
    let link = std::fs::read_link(runtime.join(".claude/skills/role-platform")).expect("a skill link");
    assert!(link.starts_with(&given), "{}", link.display());
    let refused = machine.launch(&["launch", "eval", "claude", "--bundle", given.to_str().expect("utf-8")]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("is a bundle of `platform`, not of `eval`"), "{}", refused.stderr);
}

#[test]
fn a_harness_scoped_overlay_instruction_reaches_only_that_harness_under_launch() {
    let machine = estate_machine();
    let overlay = "instruction \"claude-hooks\" {\n    role \"platform\"\n    harness \"claude\"\n    text \"Run the hooks before each commit.\"\n}\ninstruction \"gemini-trust\" {\n    role \"platform\"\n    harness \"gemini\"\n    repository \"hardware\"\n    text \"Ask before trusting a folder.\"\n}\n";
    let overlays = machine.acompose_home.join("overlays");
    std::fs::create_dir_all(&overlays).expect("mkdir");
    std::fs::write(overlays.join("team.kdl"), overlay).expect("write");
    let mut seen = Vec::new();
    for (harness, instructions) in
        [("claude", ".claude/CLAUDE.md"), ("gemini", ".gemini/GEMINI.md"), ("opencode", ".config/opencode/AGENTS.md")]
    {
        let output = machine.launch(&["launch", "platform", harness]);
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        let runtime = machine.acompose_home.join(format!("runtime/{harness}-platform"));
        let text = std::fs::read_to_string(runtime.join(instructions)).expect("the runtime home's instructions");
        assert!(text.contains("Role: platform") || text.contains("platform"), "{harness}: {text}");
        seen.push(format!(
            "{harness}: hooks {}, trust {}",
            text.contains("Run the hooks before each commit."),
            text.contains("Ask before trusting a folder.")
        ));
    }
    assert_eq!(
        seen,
        ["claude: hooks true, trust false", "gemini: hooks false, trust true", "opencode: hooks false, trust false"]
    );
}

/// A fake harness that reports, through the user's own tools' paths, what a launched
/// agent's shell reaches: SSH, cluster, GitHub CLI and git identity.
const WORLD_HARNESS: &str = r#"#!/bin/sh
out="$RECORDS/$(basename "$0")-world.txt"
{
  echo "ssh: $(cat ~/.ssh/config)"
  echo "kube: $(cat ~/.kube/config)"
  echo "gh: $(cat ~/.config/gh/hosts.yml)"
  echo "npmrc: $(cat ~/.npmrc)"
  echo "email: $(git config --global user.email)"
  echo "commands: $(ls "${CLAUDE_CONFIG_DIR:-$HOME/.claude}/commands" 2>/dev/null)"
  echo "plugins: $(ls "${CLAUDE_CONFIG_DIR:-$HOME/.claude}/plugins" 2>/dev/null)"
  # Where each real harness reads user skills (docs/delivery.md's table).
  case "$(basename "$0")" in
    claude) set -- "$CLAUDE_CONFIG_DIR/skills"/* ;;
    codex) set -- "$HOME/.agents/skills"/* "$CODEX_HOME/skills"/* ;;
    *) set -- "$XDG_CONFIG_HOME/opencode/skills"/* "$HOME/.agents/skills"/* "$HOME/.claude/skills"/* ;;
  esac
  for folder in "$@"; do
    [ -f "$folder/SKILL.md" ] && echo "skill: $(basename "$folder")"
  done
} > "$out"
echo "written by the harness" > ~/.config/gh/written-in-launch.txt
"#;

#[test]
fn a_launched_harness_reaches_everything_the_users_own_shell_reaches() {
    let machine = estate_machine();
    let user = &machine.user_home;
    let write = |path: &str, text: &str| {
        let path = user.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(".ssh/config", "Host build\n");
    write(".kube/config", "clusters: []\n");
    write(".config/gh/hosts.yml", "github.com: {}\n");
    write(".npmrc", "registry=https://registry.example\n");
    write(".gitconfig", "[user]\n\temail = ada@example.com\n");
    write(".claude/commands/ship.md", "Ship it.\n");
    write(".claude/plugins/marketplace/plugin.json", "{}\n");
    for harness in ["claude", "codex", "opencode"] {
        let path = machine.bin.join(harness);
        std::fs::write(&path, WORLD_HARNESS).expect("write");
        let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).expect("chmod");
        let output = machine.launch(&["launch", "platform", harness]);
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        let seen = std::fs::read_to_string(machine.records.join(format!("{harness}-world.txt"))).expect("ran");
        for expected in [
            "ssh: Host build",
            "kube: clusters: []",
            "gh: github.com: {}",
            "npmrc: registry=https://registry.example",
            "email: ada@example.com",
        ] {
            assert!(seen.lines().any(|line| line == expected), "{harness}: no `{expected}` in\n{seen}");
        }
        let skills = lines_with(&seen, "skill: ");
        assert!(!skills.contains(&"global-mounted") && !skills.contains(&"agents-mounted"), "{harness}: {skills:?}");
        // What the harness writes into a folder of the user's lands there.
        let written = user.join(".config/gh/written-in-launch.txt");
        assert_eq!(std::fs::read_to_string(&written).expect("written through"), "written by the harness\n");
        std::fs::remove_file(written).expect("remove");
        if harness == "claude" {
            assert_eq!(lines_with(&seen, "commands: "), ["ship.md"], "{seen}");
            assert_eq!(lines_with(&seen, "plugins: "), [""], "plugins bring context the role did not select");
            assert!(skills.contains(&"role-platform"), "{skills:?}");
        }
    }
}

#[test]
fn the_launch_exits_as_the_harness_did() {
    let machine = machine();
    let path = machine.bin.join("claude");
    std::fs::write(&path, "#!/bin/sh\nexit 7\n").expect("write");
    assert_eq!(machine.run(&["launch", "platform", "claude", "--yes"], &[]).code, 7);
    std::fs::write(&path, "#!/bin/sh\nkill -TERM $$\n").expect("write");
    assert_eq!(machine.run(&["launch", "platform", "claude", "--yes"], &[]).code, 128 + 15);
}

#[test]
fn a_missing_provider_refuses_the_launch_of_the_role_that_selects_it_only() {
    let machine = estate_machine();
    let benchmarks = machine.root.join("projects/example/benchmarks");
    std::fs::rename(&benchmarks, machine.root.join("benchmarks-moved")).expect("move away");
    // Seed 001: the role that selects the unavailable provider cannot launch ...
    let refused = machine.launch(&["launch", "eval", "claude"]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("selected provider `benchmarks` is unavailable"), "{}", refused.stderr);
    assert!(refused.stderr.contains("roles.kdl"), "filed under the file that names it: {}", refused.stderr);
    assert!(!machine.records.join("claude.txt").exists(), "the harness never started");
    // ... and every other role still does.
    let launched = machine.launch(&["launch", "platform", "claude"]);
    assert_eq!(launched.code, 0, "{}", launched.stderr);
    assert!(lines_with(&machine.record("claude"), "skill: ").contains(&"machine-cpu"));
}

#[test]
fn launch_takes_a_roles_earlier_bundle_as_role_at_n() {
    let machine = estate_machine();
    let projects = machine.root.join("projects");
    assert_eq!(machine.launch(&["launch", "platform", "claude"]).code, 0);
    let first = machine.record("claude");
    std::fs::remove_dir_all(projects.join("example/hardware/.agents/skills/machine-gpu")).expect("drop a skill");
    let current = machine.launch(&["launch", "platform", "claude"]);
    assert_eq!(current.code, 0, "{}", current.stderr);
    assert!(!lines_with(&machine.record("claude"), "skill: ").contains(&"machine-gpu"), "the edit is launched");
    let earlier = machine.launch(&["launch", "platform", "claude", "--bundle", "platform@{1}"]);
    assert_eq!(earlier.code, 0, "{}", earlier.stderr);
    assert_eq!(lines_with(&machine.record("claude"), "skill: "), lines_with(&first, "skill: "), "the bundle before it");
}
