//! MCP servers scoped to roles: the home's inventory (`mcp.kdl`), selection per role by
//! tag and by `roles.kdl`, fail-closed on an unknown server, refusal of secret-looking
//! values without echoing them, the manifest and trace, `describe --why mcp:NAME`,
//! selection by a private overlay for the roles it names, and each harness's own file
//! written by `project` (merged into a file of the user's and taken out again by
//! `unproject`).

use crate::common;

use std::path::Path;

use common::acompose;

const INVENTORY: &str = r#"server "files" {
    command "run-files" "--root" "."
    env "FILES_ROOT"
    roles "sysadmin"
}
server "docs" {
    url "https://docs.example.com/mcp"
}
server "search" {
    command "run-search"
    roles "platform"
}
"#;

/// A home whose operating context is a trusted root naming `docs` for `platform`, and
/// the inventory `inventory`; returns the root folder.
fn home_with(inventory: &str, roles: &str) -> tempfile::TempDir {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    common::write_file(&root.join("projects/acme/root/.agents/roles.kdl"), roles);
    common::write_file(
        &root.join("home/agent-compose.yaml"),
        "operating_context:\n  - acme/root\nprojects_root: ../projects\n",
    );
    common::write_file(&root.join("home/mcp.kdl"), inventory);
    std::fs::create_dir_all(root.join("repo")).expect("mkdir");
    temporary
}

const ROLES: &str = "roles {\n    role platform { mcp-server \"docs\"; }\n}\n";

fn manifest_servers(root: &Path, role: &str) -> Vec<String> {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("home/bundles/index.json")).expect("index")).expect("json");
    let id = index["bundles"][role].as_str().expect("role indexed");
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join(format!("home/bundles/{id}/manifest.json"))).expect("manifest"),
    )
    .expect("json");
    manifest["mcp_servers"]
        .as_array()
        .map(|servers| servers.iter().map(|server| server["name"].as_str().unwrap_or("").to_owned()).collect())
        .unwrap_or_default()
}

fn bundle_id(root: &Path, role: &str) -> String {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("home/bundles/index.json")).expect("index")).expect("json");
    index["bundles"][role].as_str().expect("role indexed").to_owned()
}

fn json_keys(path: &Path, key: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    value[key].as_object().map(|table| table.keys().cloned().collect()).unwrap_or_default()
}

#[test]
fn two_roles_with_different_servers_get_different_manifests_and_harness_files() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(manifest_servers(root, "platform"), ["docs", "search"]);
    assert_eq!(manifest_servers(root, "sysadmin"), ["files"]);
    assert_eq!(manifest_servers(root, "tpm"), Vec::<String>::new());
    let manifest =
        std::fs::read_to_string(root.join(format!("home/bundles/{}/manifest.json", bundle_id(root, "sysadmin"))))
            .expect("manifest");
    assert!(manifest.contains("\"FILES_ROOT\""), "{manifest}");

    let why = acompose(root, &["--home", "home", "describe", "platform", "--why", "mcp:docs"]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    assert!(why.stdout.contains("mcp-selected"), "{}", why.stdout);
    let why = acompose(root, &["--home", "home", "describe", "tpm", "--why", "mcp:search"]);
    assert!(why.stdout.contains("mcp-not-for-role"), "{}", why.stdout);
    let described = acompose(root, &["--home", "home", "describe", "sysadmin"]);
    assert!(described.stdout.contains("files (stdio) run-files --root . · env FILES_ROOT"), "{}", described.stdout);

    for (role, folder) in [("platform", "platform-repo"), ("sysadmin", "sysadmin-repo")] {
        std::fs::create_dir_all(root.join(folder)).expect("mkdir");
        for layout in ["claude", "codex", "gemini", "opencode"] {
            let output =
                acompose(root, &["--home", "home", "project", role, "--layout", layout, "--target", folder, "--copy"]);
            assert_eq!(output.code, 0, "{role} {layout}: {}", output.stderr);
        }
    }
    let platform = root.join("platform-repo");
    assert_eq!(json_keys(&platform.join(".mcp.json"), "mcpServers"), ["docs", "search"]);
    assert_eq!(json_keys(&platform.join(".gemini/settings.json"), "mcpServers"), ["docs", "search"]);
    assert_eq!(json_keys(&platform.join("opencode.json"), "mcp"), ["docs", "search"]);
    let codex = std::fs::read_to_string(platform.join(".codex/config.toml")).expect("codex");
    assert!(codex.contains("[mcp_servers.docs]") && codex.contains("[mcp_servers.search]"), "{codex}");
    let sysadmin = root.join("sysadmin-repo");
    assert_eq!(json_keys(&sysadmin.join(".mcp.json"), "mcpServers"), ["files"]);
    let claude = std::fs::read_to_string(sysadmin.join(".mcp.json")).expect("claude");
    assert!(claude.contains("\"FILES_ROOT\": \"${FILES_ROOT}\""), "{claude}");
    let opencode = std::fs::read_to_string(sysadmin.join("opencode.json")).expect("opencode");
    assert!(opencode.contains("\"FILES_ROOT\": \"{env:FILES_ROOT}\""), "{opencode}");

    // A changed selection is a new bundle.
    let before = bundle_id(root, "platform");
    let untagged = INVENTORY.replace("    roles \"platform\"\n", "");
    common::write_file(&root.join("home/mcp.kdl"), &untagged);
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(manifest_servers(root, "platform"), ["docs"]);
    assert_ne!(bundle_id(root, "platform"), before);

    // The projection owns the files it created: unproject removes them.
    let output = acompose(root, &["unproject", "--target", "sysadmin-repo"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    for file in [".mcp.json", ".gemini/settings.json", "opencode.json", ".codex/config.toml"] {
        assert!(!sysadmin.join(file).exists(), "{file} is left");
    }
}

#[test]
fn servers_merge_into_the_users_file_and_come_out_again() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    assert_eq!(acompose(root, &["--home", "home"]).code, 0);
    let repo = root.join("repo");
    let user_claude =
        "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mine\": {\n      \"command\": \"x\"\n    }\n  }\n}\n";
    std::fs::write(repo.join(".mcp.json"), user_claude).expect("write");
    let user_codex = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"x\"\n";
    std::fs::create_dir_all(repo.join(".codex")).expect("mkdir");
    std::fs::write(repo.join(".codex/config.toml"), user_codex).expect("write");
    for layout in ["claude", "codex"] {
        let output = acompose(root, &["--home", "home", "project", "platform", "--layout", layout, "--target", "repo"]);
        assert_eq!(output.code, 0, "{layout}: {}", output.stderr);
    }
    assert_eq!(json_keys(&repo.join(".mcp.json"), "mcpServers"), ["docs", "search", "mine"], "the role's first");
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo.join(".mcp.json")).expect("read")).expect("json");
    assert_eq!(merged["theme"], "dark");
    let codex = std::fs::read_to_string(repo.join(".codex/config.toml")).expect("codex");
    assert!(codex.starts_with("# my settings\nmodel = \"o3\"\n"), "{codex}");
    assert!(codex.contains("[mcp_servers.mine]") && codex.contains("[mcp_servers.docs]"), "{codex}");

    // Reprojecting another role replaces the servers, never duplicates them.
    let output = acompose(root, &["unproject", "--target", "repo"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(std::fs::read_to_string(repo.join(".mcp.json")).expect("read"), user_claude);
    assert_eq!(std::fs::read_to_string(repo.join(".codex/config.toml")).expect("read"), user_codex);

    // A server of the user's with a name the role's servers use is refused, and nothing
    // is written.
    let taken = "{\n  \"mcpServers\": {\n    \"docs\": {\n      \"command\": \"mine\"\n    }\n  }\n}\n";
    std::fs::write(repo.join(".mcp.json"), taken).expect("write");
    let output = acompose(root, &["--home", "home", "project", "platform", "--layout", "claude", "--target", "repo"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("already configures an MCP server `docs`"), "{}", output.stderr);
    assert_eq!(std::fs::read_to_string(repo.join(".mcp.json")).expect("read"), taken);
    assert!(!repo.join(".agent-compose").exists());
}

#[test]
fn an_unknown_server_fails_the_composition() {
    let roles = "roles {\n    role platform { mcp-server \"dcos\"; }\n}\n";
    let temporary = home_with(INVENTORY, roles);
    let root = temporary.path();
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("unknown-mcp-server"), "{}", output.stderr);
    assert!(output.stderr.contains("MCP server `dcos` is not in `home/mcp.kdl`"), "{}", output.stderr);
    assert!(output.stderr.contains("did you mean `docs`"), "{}", output.stderr);
    assert!(!root.join("home/bundles/index.json").exists());
}

#[test]
fn an_overlay_selects_servers_for_the_roles_it_names_only() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    assert_eq!(acompose(root, &["--home", "home"]).code, 0);
    let before: Vec<String> = ["platform", "sysadmin", "tpm"].iter().map(|role| bundle_id(root, role)).collect();
    common::write_file(&root.join("home/overlays/team.kdl"), "// team\nmcp-server role=\"tpm\" \"docs\" \"files\"\n");
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(manifest_servers(root, "tpm"), ["files", "docs"]);
    assert_ne!(bundle_id(root, "tpm"), before[2]);
    assert_eq!(bundle_id(root, "platform"), before[0], "platform is named by no entry");
    assert_eq!(bundle_id(root, "sysadmin"), before[1], "sysadmin is named by no entry");

    let trace = std::fs::read_to_string(root.join(format!("home/bundles/{}/trace.json", bundle_id(root, "tpm"))))
        .expect("trace");
    assert!(trace.contains("\"overlay-mcp-selected\""), "{trace}");
    let why = acompose(root, &["--home", "home", "describe", "tpm", "--why", "mcp:docs"]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    assert!(why.stdout.contains("selected (overlay-mcp-selected)"), "{}", why.stdout);
    assert!(why.stdout.contains("by overlay `team.kdl`"), "{}", why.stdout);
    let why = acompose(root, &["--home", "home", "describe", "tpm", "--why", "mcp:search"]);
    assert!(why.stdout.contains("mcp-not-for-role"), "{}", why.stdout);
    let why = acompose(root, &["--home", "home", "describe", "tpm", "--why", "overlay:team.kdl"]);
    assert!(why.stdout.contains("selects the MCP servers `docs`, `files`"), "{}", why.stdout);

    // Removed: every bundle is what it was.
    std::fs::remove_file(root.join("home/overlays/team.kdl")).expect("remove");
    assert_eq!(acompose(root, &["--home", "home"]).code, 0);
    assert_eq!(bundle_id(root, "tpm"), before[2]);
}

#[test]
fn an_unknown_server_in_an_overlay_fails_with_the_overlays_file_and_line() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    assert_eq!(acompose(root, &["--home", "home"]).code, 0);
    let index = std::fs::read(root.join("home/bundles/index.json")).expect("index");
    common::write_file(&root.join("home/overlays/mine.kdl"), "// mine\nmcp-server role=\"tpm\" \"docs\" \"dcos\"\n");
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("unknown-mcp-server"), "{}", output.stderr);
    assert!(output.stderr.contains("line 2: MCP server `dcos` is not in `home/mcp.kdl`"), "{}", output.stderr);
    assert!(output.stderr.contains("mine.kdl:2:"), "{}", output.stderr);
    assert!(output.stderr.contains("did you mean `docs`"), "{}", output.stderr);
    assert_eq!(std::fs::read(root.join("home/bundles/index.json")).expect("index"), index);
    // Without an inventory every name an overlay selects is unknown.
    std::fs::remove_file(root.join("home/mcp.kdl")).expect("remove");
    common::write_file(&root.join("home/overlays/mine.kdl"), "mcp-server role=\"tpm\" \"docs\"\n");
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("home has no `mcp.kdl`"), "{}", output.stderr);
    assert_eq!(std::fs::read(root.join("home/bundles/index.json")).expect("index"), index);
}

#[test]
fn a_secret_looking_value_is_refused_without_being_echoed() {
    let secret = "ghp_R8xk2LmQ9vT4nW7pZ1yB6cD3fG5hJ0sAeU";
    let inventory =
        format!("server \"github\" {{\n    command \"gh-mcp\" \"--token\" \"{secret}\"\n    roles \"platform\"\n}}\n");
    let temporary = home_with(&inventory, ROLES);
    let root = temporary.path();
    let output = acompose(root, &["--home", "home"]);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("line 2 holds a value that looks like a secret"), "{}", output.stderr);
    assert!(output.stderr.contains("env \\\"NAME\\\"") || output.stderr.contains("env \"NAME\""), "{}", output.stderr);
    for shown in [&output.stdout, &output.stderr] {
        assert!(!shown.contains("R8xk2LmQ9"), "the secret was echoed: {shown}");
    }
    let listed = acompose(root, &["--home", "home", "mcp", "list"]);
    assert_eq!(listed.code, 1, "{}", listed.stderr);
    assert!(!listed.stdout.contains("R8xk2LmQ9") && !listed.stderr.contains("R8xk2LmQ9"));
}

#[test]
fn mcp_list_shows_each_server_with_its_roles_and_json_is_stable() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    let listed = acompose(root, &["--home", "home", "mcp", "list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    insta::assert_snapshot!(listed.stdout, @r"
    files   stdio  run-files --root .  env FILES_ROOT  roles sysadmin
    docs    http   https://docs.example.com/mcp  roles (roles.kdl only)
    search  stdio  run-search  roles platform
    ");
    let json = acompose(root, &["--home", "home", "mcp", "list", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(value["format"], "acompose.mcp-inventory.v1");
    assert_eq!(value["servers"][0]["roles"], serde_json::json!(["sysadmin"]));
    let broken = temporary.path().join("home/mcp.kdl");
    std::fs::write(&broken, "server \"x\" {\n    command \"a\"\n    colour \"red\"\n}\n").expect("write");
    let listed = acompose(root, &["--home", "home", "mcp", "list"]);
    assert_eq!(listed.code, 1);
    assert!(listed.stderr.contains("mcp.kdl:3:5"), "{}", listed.stderr);
}

#[test]
fn a_persons_unknown_mcp_server_is_a_validation_warning_that_names_no_value() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    assert_eq!(acompose(root, &["--home", "home", "people", "init", "--workspace", "ws"]).code, 0);
    let person = "{\n  \"spec\": \"agent-toolkit/person@1\",\n  \"id\": \"ada\",\n  \"name\": \"Ada\",\n  \"role\": \"platform\",\n  \"goal\": \"Keep the toolchain paved.\",\n  \"archived\": false,\n  \"mcp_servers\": [\"docs\", \"planted-unknown\"]\n}\n";
    common::write_file(&root.join("ws/people/ada.json"), person);
    let json = acompose(root, &["--home", "home", "people", "validate", "--workspace", "ws", "--json"]);
    assert_eq!(json.code, 0, "{}{}", json.stdout, json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let text = report.to_string();
    assert!(text.contains("unknown-mcp-server") && text.contains("/mcp_servers/1"), "{text}");
    assert!(!text.contains("/mcp_servers/0"), "{text}");
    assert!(!json.stdout.contains("planted-unknown") && !json.stderr.contains("planted-unknown"));
}

#[test]
fn a_launch_shows_the_harness_exactly_the_roles_servers_and_keeps_the_users_file() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    let user = root.join("user");
    let own = "{\n  \"hasCompletedOnboarding\": true,\n  \"mcpServers\": {\n    \"personal-notes\": {\n      \"command\": \"notes\"\n    }\n  }\n}\n";
    common::write_file(&user.join(".claude.json"), own);
    let bin = root.join("bin");
    // A stand-in harness that prints the configuration it would read.
    common::write_file(&bin.join("claude"), "#!/bin/sh\ncat \"$CLAUDE_CONFIG_DIR/.claude.json\"\n");
    let mut permissions = std::fs::metadata(bin.join("claude")).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(bin.join("claude"), permissions).expect("chmod");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let environment = [("HOME", user.to_str().expect("utf-8")), ("PATH", path.as_str())];
    let output =
        common::acompose_with(root, &["--home", "home", "launch", "platform", "claude", "--yes"], &environment);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let seen: serde_json::Value = serde_json::from_str(&output.stdout).expect("the harness's configuration");
    let servers: Vec<&String> = seen["mcpServers"].as_object().expect("servers").keys().collect();
    assert_eq!(servers, ["docs", "search"]);
    assert_eq!(seen["hasCompletedOnboarding"], true);
    assert!(output.stderr.contains("mcp servers: docs, search"), "{}", output.stderr);
    assert!(
        output.stderr.contains("hidden from this launch (your own, not the role's): personal-notes"),
        "{}",
        output.stderr
    );
    assert_eq!(std::fs::read_to_string(user.join(".claude.json")).expect("read"), own);
    let runtime = root.join("home/runtime/claude-platform/.claude/.claude.json");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&runtime).expect("runtime file").permissions());
    assert_eq!(mode & 0o777, 0o600);
    // Nothing changed: the second launch shows the same and writes nothing new.
    let again = common::acompose_with(root, &["--home", "home", "launch", "platform", "claude", "--yes"], &environment);
    assert_eq!(again.stdout, output.stdout);
}

/// A stand-in Claude Code that reads its state file as the real one does
/// (`$CLAUDE_CONFIG_DIR/.claude.json`), records the servers, trust and machine id it
/// finds, then writes its state back the way the real one saves: a whole new file
/// renamed over the old, with a trusted folder, a machine id it keeps and a start
/// counted.
const STATEFUL_CLAUDE: &str = r#"#!/bin/sh
python3 - "$CLAUDE_CONFIG_DIR/.claude.json" "$RECORDS" <<'PY'
import json, os, sys
path, records = sys.argv[1], sys.argv[2]
state = json.load(open(path)) if os.path.exists(path) else {}
seen = {
    "servers": sorted(state.get("mcpServers", {})),
    "trusted": state.get("projects", {}).get("/work/service", {}).get("hasTrustDialogAccepted", False),
    "machineID": state.get("machineID"),
    "numStartups": state.get("numStartups", 0),
}
count = len(os.listdir(records))
json.dump(seen, open(os.path.join(records, "seen-%d.json" % count), "w"))
state.setdefault("projects", {})["/work/service"] = {"hasTrustDialogAccepted": True, "allowedTools": ["Bash(make:*)"]}
state.setdefault("machineID", "machine-%d" % count)
state["numStartups"] = state.get("numStartups", 0) + 1
with open(path + ".tmp", "w") as out:
    json.dump(state, out, indent=2)
os.replace(path + ".tmp", path)
PY
"#;

#[test]
fn what_a_launched_harness_writes_to_its_state_stays_and_reaches_the_users_own_file() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    let user = root.join("user");
    let own = "{\n  \"hasCompletedOnboarding\": true,\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"personal-notes\": {\n      \"command\": \"notes\"\n    }\n  }\n}\n";
    common::write_file(&user.join(".claude.json"), own);
    let bin = root.join("bin");
    common::write_file(&bin.join("claude"), STATEFUL_CLAUDE);
    let mut permissions = std::fs::metadata(bin.join("claude")).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(bin.join("claude"), permissions).expect("chmod");
    let records = root.join("records");
    std::fs::create_dir_all(&records).expect("mkdir");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let environment = [
        ("HOME", user.to_str().expect("utf-8")),
        ("PATH", path.as_str()),
        ("RECORDS", records.to_str().expect("utf-8")),
    ];
    let launch = || {
        let output =
            common::acompose_with(root, &["--home", "home", "launch", "platform", "claude", "--yes"], &environment);
        assert_eq!(output.code, 0, "{}", output.stderr);
        let count = std::fs::read_dir(&records).expect("records").count();
        let seen = std::fs::read(records.join(format!("seen-{}.json", count - 1))).expect("the harness ran");
        serde_json::from_slice::<serde_json::Value>(&seen).expect("json")
    };
    let first = launch();
    assert_eq!(first["servers"], serde_json::json!(["docs", "search"]), "exactly the role's servers");
    assert_eq!(first["trusted"], false);
    // As soon as the harness has exited, its writes are in the user's own file.
    let mine: serde_json::Value =
        serde_json::from_slice(&std::fs::read(user.join(".claude.json")).expect("read")).expect("json");
    assert_eq!(mine["projects"]["/work/service"]["hasTrustDialogAccepted"], true, "{mine}");
    assert_eq!(mine["machineID"], "machine-0");
    assert_eq!(mine["mcpServers"], serde_json::json!({"personal-notes": {"command": "notes"}}));
    let second = launch();
    assert_eq!(second["servers"], serde_json::json!(["docs", "search"]));
    assert_eq!(second["trusted"], true, "the trust the harness accepted is there at the next launch");
    assert_eq!(second["machineID"], first_machine_id(&user), "the same machine id");
    assert_eq!(second["numStartups"], 1);

    // An edit and a convergence: the harness's writes are in the user's own file, with
    // the user's own server and keys, and no server of the role's.
    common::write_file(
        &root.join("projects/acme/root/.agents/roles.kdl"),
        "roles {\n    role platform { mcp-server \"docs\"; }\n    role eval {}\n}\n",
    );
    let converged = common::acompose_with(root, &["--home", "home"], &environment);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    let mine: serde_json::Value =
        serde_json::from_slice(&std::fs::read(user.join(".claude.json")).expect("read")).expect("json");
    assert_eq!(mine["projects"]["/work/service"]["hasTrustDialogAccepted"], true, "{mine}");
    assert_eq!(mine["projects"]["/work/service"]["allowedTools"], serde_json::json!(["Bash(make:*)"]));
    assert_eq!(mine["numStartups"], 2);
    assert_eq!(mine["theme"], "dark");
    assert_eq!(mine["mcpServers"], serde_json::json!({"personal-notes": {"command": "notes"}}));
    let third = launch();
    assert_eq!(third["trusted"], true);
    assert_eq!(third["numStartups"], 2);
    assert_eq!(third["machineID"], mine["machineID"]);
}

/// The machine id the stand-in wrote at its first start, as the user's file now has it
/// (the second launch carried the first one's writes back first).
fn first_machine_id(user: &Path) -> serde_json::Value {
    let mine: serde_json::Value =
        serde_json::from_slice(&std::fs::read(user.join(".claude.json")).expect("read")).expect("json");
    mine["machineID"].clone()
}

#[test]
fn a_launch_of_a_harness_without_an_mcp_file_says_it_gets_none_of_the_roles_servers() {
    let temporary = home_with(INVENTORY, ROLES);
    let root = temporary.path();
    let bin = root.join("bin");
    common::write_file(&bin.join("goose"), "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(bin.join("goose")).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(bin.join("goose"), permissions).expect("chmod");
    let user = root.join("user");
    std::fs::create_dir_all(&user).expect("mkdir");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let environment = [("HOME", user.to_str().expect("utf-8")), ("PATH", path.as_str())];
    let output = common::acompose_with(root, &["--home", "home", "launch", "platform", "goose", "--yes"], &environment);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stderr.contains(
            "mcp servers: none delivered to Goose (acompose writes no MCP file for it; the role selects docs, search)"
        ),
        "{}",
        output.stderr
    );
    assert!(!output.stderr.contains("mcp servers: docs"), "{}", output.stderr);
}
