//! MCP servers as the real harnesses list them: `claude mcp list`, `codex mcp list`,
//! `gemini mcp list` and `opencode mcp list` (all four read their configuration offline;
//! OpenCode also tries to start each server, which a script that exits at once answers)
//! must show exactly the role's servers after a repository projection and under an
//! assigned launch, where the user's own servers are hidden.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{git, installed, run_acompose, write};

/// The servers of the test's inventory and of the user's own configuration.
const ROLE_SERVER: &str = "role-server";
const OTHER_ROLE_SERVER: &str = "other-role-server";
const USER_SERVER: &str = "user-own-server";

/// The harnesses whose MCP listing the suite reads, with their listing arguments.
const LISTINGS: [(&str, &[&str]); 7] = [
    ("claude", &["mcp", "list"]),
    ("codex", &["mcp", "list", "--json"]),
    ("gemini", &["mcp", "list"]),
    ("opencode", &["mcp", "list"]),
    ("copilot", &["mcp", "list"]),
    ("qwen", &["mcp", "list"]),
    ("kilo", &["mcp", "list"]),
];

/// An estate whose home inventory tags one server for `platform` and one for `eval`.
fn estate(root: &Path, server: &Path) -> PathBuf {
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), "roles {\n    role platform {}\n}\n");
    git(&projects.join("acme/root"), &["init", "--quiet"]);
    let home = root.join("acompose-home");
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    let command = server.to_str().expect("utf-8");
    write(
        &home.join("mcp.kdl"),
        &format!(
            "server \"{ROLE_SERVER}\" {{\n    command \"{command}\"\n    roles \"platform\"\n}}\nserver \"{OTHER_ROLE_SERVER}\" {{\n    command \"{command}\"\n    roles \"eval\"\n}}\n"
        ),
    );
    std::fs::create_dir_all(root.join("user")).expect("user home");
    let converged = run_acompose(root, &root.join("user"), &["--projects-root", "projects"], &[]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    home
}

/// A user home whose own configuration of every harness names [`USER_SERVER`], and
/// trusts `folder` where a harness asks.
fn user_with_servers(root: &Path, name: &str, server: &Path, folder: &Path) -> PathBuf {
    let home = root.join(name);
    let command = server.to_str().expect("utf-8");
    let entry = serde_json::json!({ "command": command, "args": [] });
    write(
        &home.join(".claude.json"),
        &serde_json::json!({ "hasCompletedOnboarding": true, "mcpServers": { USER_SERVER: entry } }).to_string(),
    );
    write(
        &home.join(".codex/config.toml"),
        &format!(
            "[mcp_servers.{USER_SERVER}]\ncommand = \"{command}\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            folder.display()
        ),
    );
    write(
        &home.join(".gemini/settings.json"),
        &serde_json::json!({ "mcpServers": { USER_SERVER: entry } }).to_string(),
    );
    write(
        &home.join(".gemini/trustedFolders.json"),
        &serde_json::json!({ folder.to_str().expect("utf-8"): "TRUST_FOLDER" }).to_string(),
    );
    write(
        &home.join(".copilot/mcp-config.json"),
        &serde_json::json!({ "mcpServers": { USER_SERVER: entry } }).to_string(),
    );
    let local = serde_json::json!({ "type": "local", "command": [command], "enabled": true });
    write(
        &home.join(".config/opencode/opencode.json"),
        &serde_json::json!({ "$schema": "https://opencode.ai/config.json", "mcp": { USER_SERVER: local } }).to_string(),
    );
    write(&home.join(".config/kilo/kilo.json"), &serde_json::json!({ "mcp": { USER_SERVER: local } }).to_string());
    write(&home.join(".qwen/settings.json"), &serde_json::json!({ "mcpServers": { USER_SERVER: entry } }).to_string());
    home
}

/// A harness command with nothing of the machine's user: `home` as the home, the harness
/// folder first on `PATH`, no telemetry, no colour.
fn quiet_command(program: &Path, bin: &Path, home: &Path, cwd: &Path) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut folders = vec![bin.to_path_buf()];
    folders.extend(std::env::split_paths(&path));
    let mut command = Command::new(program);
    command.env_clear().current_dir(cwd).env("HOME", home).env("PATH", std::env::join_paths(folders).expect("PATH"));
    for (name, value) in [
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("COPILOT_OFFLINE", "true"),
        ("COPILOT_AUTO_UPDATE", "false"),
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("CI", "true"),
    ] {
        command.env(name, value);
    }
    // Copilot unpacks itself into its cache on first start: one cache for every run.
    command.env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("harness-cache"));
    // A temporary folder inside the run's home, which the test removes: a harness writes
    // there (Gemini CLI its error reports) and nothing is left in the machine's `/tmp`.
    let temporary = home.join(".tmp");
    std::fs::create_dir_all(&temporary).expect("the harness's temporary folder");
    command.env("TMPDIR", temporary);
    command.stdin(std::process::Stdio::null());
    command
}

/// Which of the three servers a listing names (acompose's own launch review left out).
fn listed(output: &std::process::Output) -> Vec<&'static str> {
    let text = shown(output);
    let harness: Vec<&str> = text
        .lines()
        .filter(|line| {
            !["launching ", "mcp servers: ", "hidden from this launch"].iter().any(|own| line.starts_with(own))
        })
        .collect();
    [ROLE_SERVER, OTHER_ROLE_SERVER, USER_SERVER]
        .into_iter()
        .filter(|name| harness.iter().any(|line| line.contains(name)))
        .collect()
}

fn shown(output: &std::process::Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Projects `platform` into a fresh checkout for `layout`, and lists the harness's MCP
/// servers there with a home that has none of its own.
fn projection_lists_exactly_the_role(root: &Path, bin: &Path, server: &Path, layout: &str, arguments: &[&str]) {
    let work = root.join(format!("{layout}-repo"));
    std::fs::create_dir_all(&work).expect("work");
    git(&work, &["init", "--quiet"]);
    let target = work.to_str().expect("utf-8");
    let projected = run_acompose(
        root,
        &root.join("user"),
        &["project", "platform", "--layout", layout, "--target", target, "--copy"],
        &[],
    );
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let fresh = root.join(format!("{layout}-fresh-home"));
    let trusting = user_with_servers(root, &format!("{layout}-trust"), server, &work);
    // Only the trust entries of the user's files: no server of the user's.
    for file in [".codex/config.toml", ".gemini/trustedFolders.json"] {
        let bytes = std::fs::read_to_string(trusting.join(file)).expect("read");
        let kept =
            if file.ends_with(".toml") { bytes[bytes.find("[projects.").expect("trust")..].to_owned() } else { bytes };
        write(&fresh.join(file), &kept);
    }
    let output = quiet_command(&bin.join(layout), bin, &fresh, &work).args(arguments).output().expect("run");
    assert_eq!(listed(&output), [ROLE_SERVER], "{layout} after projection: {}", shown(&output));
    eprintln!("{layout}: the projection's listing shows exactly {ROLE_SERVER}");
}

#[test]
fn the_harnesses_list_exactly_the_roles_mcp_servers_after_projection_and_launch() {
    let Some((bin, harnesses)) = installed() else { return };
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().canonicalize().expect("canonical");
    let server = root.join("quiet-server");
    write(&server, "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(&server).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&server, permissions).expect("chmod");
    let home = estate(&root, &server);
    for (layout, arguments) in LISTINGS {
        if !harnesses.iter().any(|harness| harness.layout == layout) {
            continue;
        }
        // A repository projection: the checkout's own file holds the role's server, and
        // a fresh home has no server of its own (Copilot gets none in a checkout).
        let reads_checkout = acompose_engine::harness_layout::layout(layout)
            .and_then(|row| row.mcp)
            .is_some_and(|places| !places.repository.is_empty());
        if reads_checkout {
            projection_lists_exactly_the_role(&root, &bin, &server, layout, arguments);
        }

        // An assigned launch: the user's own server is hidden, the role's is there.
        let cwd = root.join(format!("{layout}-launch-cwd"));
        std::fs::create_dir_all(&cwd).expect("cwd");
        let user = user_with_servers(&root, &format!("{layout}-launch-user"), &server, &cwd);
        let mut launch = quiet_command(Path::new(env!("CARGO_BIN_EXE_acompose")), &bin, &user, &cwd);
        launch
            .arg("--home")
            .arg(&home)
            .args(["launch", "platform", layout, "--yes", "--projects-root"])
            .arg(root.join("projects"))
            .arg("--")
            .args(arguments);
        let output = launch.output().expect("launch");
        assert_eq!(listed(&output), [ROLE_SERVER], "{layout} under launch: {}", shown(&output));
        assert!(
            shown(&output).contains(&format!("hidden from this launch (your own, not the role's): {USER_SERVER}")),
            "{}",
            shown(&output)
        );
        // The user's own file is untouched.
        let own = user.join(match layout {
            "claude" => ".claude.json",
            "codex" => ".codex/config.toml",
            "gemini" => ".gemini/settings.json",
            "copilot" => ".copilot/mcp-config.json",
            "qwen" => ".qwen/settings.json",
            "kilo" => ".config/kilo/kilo.json",
            _ => ".config/opencode/opencode.json",
        });
        assert!(std::fs::read_to_string(own).expect("read").contains(USER_SERVER));
        eprintln!("{layout}: the launch's listing shows exactly {ROLE_SERVER}, {USER_SERVER} hidden");
    }
}

/// The keys Claude Code writes into its state file at its first start, which it keeps
/// from then on (HARNESS-FACTS.md: `machineID`, `userID`, `firstStartTime`,
/// `migrationVersion`).
const CLAUDE_STATE: [&str; 3] = ["machineID", "userID", "firstStartTime"];

#[test]
fn claude_codes_own_state_written_under_launch_is_there_at_the_next_launch_and_in_the_users_file() {
    let Some((bin, harnesses)) = installed() else { return };
    if !harnesses.iter().any(|harness| harness.layout == "claude") {
        return;
    }
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().canonicalize().expect("canonical");
    let server = root.join("quiet-server");
    write(&server, "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(&server).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&server, permissions).expect("chmod");
    let home = estate(&root, &server);
    let cwd = root.join("claude-state-cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let user = user_with_servers(&root, "claude-state-user", &server, &cwd);
    let recorder = super::recorder::Recorder::start();
    let launch = || {
        let mut launch = quiet_command(Path::new(env!("CARGO_BIN_EXE_acompose")), &bin, &user, &cwd);
        launch
            .env("ANTHROPIC_BASE_URL", &recorder.url)
            .env("ANTHROPIC_API_KEY", "sk-test-recorded-not-a-key")
            .arg("--home")
            .arg(&home)
            .args(["launch", "platform", "claude", "--yes", "--projects-root"])
            .arg(root.join("projects"))
            .args(["--", "-p", "hello"]);
        launch.output().expect("launch")
    };
    let copy = home.join("runtime/claude-platform/.claude/.claude.json");
    let state = |path: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(path).expect("state file")).expect("json")
    };
    launch();
    let first = state(&copy);
    for key in CLAUDE_STATE {
        assert!(first.get(key).is_some(), "Claude Code wrote no `{key}`: {first}");
    }
    launch();
    let second = state(&copy);
    let mine = state(&user.join(".claude.json"));
    for key in CLAUDE_STATE {
        assert_eq!(second[key], first[key], "`{key}` is kept from one launch to the next");
        assert_eq!(mine[key], first[key], "`{key}` reached the user's own `.claude.json`");
    }
    assert!(mine["mcpServers"].get(ROLE_SERVER).is_none(), "the role's server stays out of the user's file");
    assert!(mine["mcpServers"].get(USER_SERVER).is_some());
    eprintln!("claude: its own state survived two launches and reached the user's file");
}
