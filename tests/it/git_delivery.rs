//! What git sees of a projection, with the real `git`: a projection beside tracked
//! instructions and MCP files leaves `git status` empty, a user's own edit shows and
//! commits as exactly that edit, a pull of an upstream change works while projected (and
//! the next `acompose` puts the role's text back), worktrees see nothing of each other's
//! projections, an earlier version's `skip-worktree` marks are migrated, and `unproject`
//! leaves no filter, attribute, exclude line or mark behind.

use std::path::{Path, PathBuf};

use crate::common::{self, acompose, git, write_file};

const ROLES: &str = "roles {\n    role platform { mcp-server \"docs\"; }\n}\n";
const INVENTORY: &str = "server \"docs\" {\n    url \"https://docs.example.com/mcp\"\n}\n";

const CLAUDE: &str = "# How we work\n\nTabs, not spaces.\n";
const AGENTS: &str = "# Agents\n\nAsk before pushing.";
/// A user's own `.mcp.json`, indented with four spaces (acompose's own files use two).
const MCP: &str =
    "{\n    \"mcpServers\": {\n        \"mine\": {\n            \"command\": \"my-server\"\n        }\n    }\n}\n";
const CODEX: &str = "# my Codex settings\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"my-server\"\n";

/// A home whose role `platform` has the MCP server `docs`, converged; and an empty
/// folder `work`. Returns the temporary folder.
fn home() -> tempfile::TempDir {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    write_file(&root.join("projects/acme/root/.agents/roles.kdl"), ROLES);
    write_file(
        &root.join("home/agent-compose.yaml"),
        "operating_context:\n  - acme/root\nprojects_root: ../projects\n",
    );
    write_file(&root.join("home/mcp.kdl"), INVENTORY);
    let converged = acompose(root, &["--home", "home"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    temporary
}

/// A repository at `folder` whose first commit holds the user's instructions and harness
/// files.
fn repository(folder: &Path) {
    std::fs::create_dir_all(folder).expect("mkdir");
    git(folder, &["init", "--quiet"]);
    write_file(&folder.join("CLAUDE.md"), CLAUDE);
    write_file(&folder.join("AGENTS.md"), AGENTS);
    write_file(&folder.join(".mcp.json"), MCP);
    write_file(&folder.join(".codex/config.toml"), CODEX);
    git(folder, &["add", "."]);
    git(folder, &["commit", "--quiet", "-m", "start"]);
}

fn project(root: &Path, target: &Path, layout: &str) {
    let target = target.to_str().expect("utf-8");
    let output = acompose(root, &["--home", "home", "project", "platform", "--layout", layout, "--target", target]);
    assert_eq!(output.code, 0, "{}", output.stderr);
}

fn unproject(root: &Path, target: &Path) -> common::Output {
    acompose(root, &["--home", "home", "unproject", "--target", target.to_str().expect("utf-8")])
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("readable")
}

/// The `+` and `-` lines of a diff, without its file headers.
fn changed_lines(diff: &str) -> Vec<&str> {
    diff.lines()
        .filter(|line| {
            (line.starts_with('+') || line.starts_with('-')) && !line.starts_with("+++") && !line.starts_with("---")
        })
        .collect()
}

/// Every line acompose may have left in the repository's own files.
fn acompose_lines(repository: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for file in ["info/exclude", "info/attributes", "config"] {
        let text = std::fs::read_to_string(repository.join(".git").join(file)).unwrap_or_default();
        left.extend(text.lines().filter(|line| line.contains("acompose")).map(|line| format!("{file}: {line}")));
    }
    left
}

#[test]
fn git_sees_only_the_users_own_edit_of_a_projected_tracked_file_and_commits_it_without_the_block() {
    let temporary = home();
    let root = temporary.path();
    let work = root.join("work");
    repository(&work);
    let config_before = std::fs::read(work.join(".git/config")).expect("config");
    project(root, &work, "claude");
    project(root, &work, "codex");
    assert!(read(&work.join("CLAUDE.md")).contains("acompose: the projected role's instructions begin"));
    assert!(read(&work.join(".mcp.json")).contains("\"docs\""), "{}", read(&work.join(".mcp.json")));
    assert!(read(&work.join(".codex/config.toml")).contains("[mcp_servers.docs]"));
    assert_eq!(git(&work, &["status", "--porcelain"]), "", "git sees nothing of the projection");
    assert_eq!(git(&work, &["diff"]), "");
    assert_eq!(git(&work, &["ls-files", "-v"]), "H .codex/config.toml\nH .mcp.json\nH AGENTS.md\nH CLAUDE.md\n");

    // The user's own edit, outside the block.
    let projected = read(&work.join("CLAUDE.md"));
    let edited = projected.replacen("Tabs, not spaces.\n", "Tabs, not spaces.\nSpaces in YAML.\n", 1);
    std::fs::write(work.join("CLAUDE.md"), &edited).expect("edit");
    assert_eq!(git(&work, &["status", "--porcelain"]), " M CLAUDE.md\n");
    let diff = git(&work, &["diff"]);
    assert_eq!(changed_lines(&diff), ["+Spaces in YAML."], "the edit alone: {diff}");
    git(&work, &["commit", "--quiet", "-am", "a rule of ours"]);
    assert_eq!(git(&work, &["show", "HEAD:CLAUDE.md"]), "# How we work\n\nTabs, not spaces.\nSpaces in YAML.\n");
    assert_eq!(git(&work, &["show", "HEAD:.mcp.json"]), MCP, "the role's servers never reach a commit");
    assert_eq!(git(&work, &["show", "HEAD:.codex/config.toml"]), CODEX);
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(read(&work.join("CLAUDE.md")), edited, "the block stays in the file the harness reads");

    let unprojected = unproject(root, &work);
    assert_eq!(unprojected.code, 0, "{}", unprojected.stderr);
    assert_eq!(read(&work.join("CLAUDE.md")), "# How we work\n\nTabs, not spaces.\nSpaces in YAML.\n");
    assert_eq!(read(&work.join(".mcp.json")), MCP, "byte for byte");
    assert_eq!(read(&work.join(".codex/config.toml")), CODEX, "byte for byte");
    assert_eq!(read(&work.join("AGENTS.md")), AGENTS);
    assert_eq!(git(&work, &["status", "--porcelain", "--ignored"]), "", "nothing of the projection is left");
    assert_eq!(acompose_lines(&work), Vec::<String>::new(), "no filter, attribute or exclude line left");
    assert!(!work.join(".git/info/attributes").exists(), "the attributes file it made is gone");
    assert_eq!(std::fs::read(work.join(".git/config")).expect("config"), config_before, "the config as it was");
    assert_eq!(git(&work, &["ls-files", "-v"]), "H .codex/config.toml\nH .mcp.json\nH AGENTS.md\nH CLAUDE.md\n");
}

#[test]
fn a_pull_that_changes_a_projected_file_works_and_the_next_run_puts_the_role_back() {
    let temporary = home();
    let root = temporary.path();
    let origin = root.join("origin.git");
    git(root, &["init", "--quiet", "--bare", origin.to_str().expect("utf-8")]);
    let seed = root.join("seed");
    repository(&seed);
    git(&seed, &["push", "--quiet", origin.to_str().expect("utf-8"), "HEAD:refs/heads/main"]);
    let work = root.join("work");
    let teammate = root.join("teammate");
    for clone in [&work, &teammate] {
        git(root, &["clone", "--quiet", origin.to_str().expect("utf-8"), clone.to_str().expect("utf-8")]);
    }
    project(root, &work, "claude");
    assert_eq!(git(&work, &["status", "--porcelain"]), "");

    let upstream = format!("{CLAUDE}Review every migration.\n");
    std::fs::write(teammate.join("CLAUDE.md"), &upstream).expect("upstream edit");
    let servers = MCP.replace("my-server", "our-server");
    std::fs::write(teammate.join(".mcp.json"), &servers).expect("upstream edit");
    git(&teammate, &["commit", "--quiet", "-am", "a team rule"]);
    git(&teammate, &["push", "--quiet"]);

    git(&work, &["pull", "--quiet", "--no-rebase"]);
    assert_eq!(git(&work, &["log", "-1", "--format=%s"]), "a team rule\n");
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(read(&work.join("CLAUDE.md")), upstream, "the pull wrote the team's file");

    let converged = acompose(root, &["--home", "home"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    assert!(converged.stdout.contains("again"), "{}", converged.stdout);
    let claude = read(&work.join("CLAUDE.md"));
    assert!(claude.starts_with(&upstream) && claude.contains("acompose: the projected role's"), "{claude}");
    let mcp = read(&work.join(".mcp.json"));
    assert!(mcp.contains("\"docs\"") && mcp.contains("our-server"), "{mcp}");
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    let repeat = acompose(root, &["--home", "home"]);
    assert!(!repeat.stdout.contains("again"), "nothing left to repair: {}", repeat.stdout);

    assert_eq!(unproject(root, &work).code, 0);
    assert_eq!(read(&work.join("CLAUDE.md")), upstream);
    assert_eq!(read(&work.join(".mcp.json")), servers);
    assert_eq!(acompose_lines(&work), Vec::<String>::new());
}

#[test]
fn an_earlier_versions_skip_worktree_mark_is_migrated_and_the_users_own_marks_stay() {
    let temporary = home();
    let root = temporary.path();
    let work = root.join("work");
    repository(&work);
    write_file(&work.join("notes.md"), "mine\n");
    git(&work, &["add", "notes.md"]);
    git(&work, &["commit", "--quiet", "-m", "notes"]);
    git(&work, &["update-index", "--skip-worktree", "notes.md"]);
    git(&work, &["update-index", "--assume-unchanged", "AGENTS.md"]);
    project(root, &work, "claude");
    // What an earlier version left: the block's file marked `skip-worktree` and recorded
    // so, `.mcp.json` rewritten by its merge (two-space indentation, the servers recorded
    // by name only), and no filter.
    let record_path = work.join(".agent-compose/projection.json");
    let mut record: serde_json::Value = serde_json::from_str(&read(&record_path)).expect("record");
    record["details"]["blocks"][0]["hidden_from_git"] = serde_json::Value::Bool(true);
    record["details"]["mcp"][0].as_object_mut().expect("the servers' record").remove("inserted");
    std::fs::write(&record_path, serde_json::to_string_pretty(&record).expect("json")).expect("an earlier record");
    let merged: serde_json::Value = serde_json::from_str(&read(&work.join(".mcp.json"))).expect("json");
    let rewritten = format!("{}\n", serde_json::to_string_pretty(&merged).expect("json"));
    std::fs::write(work.join(".mcp.json"), rewritten).expect("an earlier merge");
    std::fs::remove_file(work.join(".git/info/attributes")).expect("no attributes then");
    git(&work, &["config", "--remove-section", "filter.acompose"]);
    git(&work, &["update-index", "--skip-worktree", "CLAUDE.md"]);

    let listed = acompose(root, &["--home", "home", "projections"]);
    assert!(listed.stdout.contains("git:"), "{}", listed.stdout);
    let converged = acompose(root, &["--home", "home"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    assert_eq!(
        git(&work, &["ls-files", "-v"]),
        "H .codex/config.toml\nH .mcp.json\nh AGENTS.md\nH CLAUDE.md\nS notes.md\n"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]), "", "the filter hides the block and the servers now");
    assert!(read(&work.join(".mcp.json")).starts_with("{\n    \"mcpServers\": {\n"), "the user's layout is back");
    assert!(!read(&record_path).contains("hidden_from_git"), "{}", read(&record_path));
    let listed = acompose(root, &["--home", "home", "projections"]);
    assert!(!listed.stdout.contains("git:"), "{}", listed.stdout);

    assert_eq!(unproject(root, &work).code, 0);
    assert_eq!(
        git(&work, &["ls-files", "-v"]),
        "H .codex/config.toml\nH .mcp.json\nh AGENTS.md\nH CLAUDE.md\nS notes.md\n"
    );
    assert_eq!(acompose_lines(&work), Vec::<String>::new());
}

#[test]
fn a_projection_in_one_worktree_hides_and_changes_nothing_in_another() {
    let temporary = home();
    let root = temporary.path();
    let work = root.join("work");
    repository(&work);
    let other: PathBuf = root.join("other");
    git(&work, &["worktree", "add", "--quiet", other.to_str().expect("utf-8")]);
    project(root, &work, "claude");
    assert_eq!(git(&other, &["status", "--porcelain"]), "");
    let edit = format!("{CLAUDE}Only here.\n");
    std::fs::write(other.join("CLAUDE.md"), &edit).expect("edit");
    assert_eq!(git(&other, &["status", "--porcelain"]), " M CLAUDE.md\n");
    assert_eq!(changed_lines(&git(&other, &["diff"])), ["+Only here."]);
    git(&other, &["checkout", "--quiet", "--", "CLAUDE.md"]);

    project(root, &other, "claude");
    assert_eq!(git(&other, &["status", "--porcelain"]), "");
    let exclude = read(&work.join(".git/info/exclude"));
    assert!(exclude.contains("# acompose projection into .\n"), "{exclude}");
    assert!(exclude.contains("# acompose projection into . in worktree other\n"), "{exclude}");
    assert_eq!(unproject(root, &work).code, 0);
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(git(&other, &["status", "--porcelain"]), "", "the other worktree's projection is still hidden");
    assert!(read(&work.join(".git/config")).contains("acompose"), "its filter stays while another uses it");
    assert_eq!(unproject(root, &other).code, 0);
    assert_eq!(git(&other, &["status", "--porcelain"]), "");
    assert_eq!(acompose_lines(&work), Vec::<String>::new());
}

#[test]
fn a_filter_git_cannot_run_is_named_and_the_next_run_points_git_at_this_acompose() {
    let temporary = home();
    let root = temporary.path();
    let work = root.join("work");
    repository(&work);
    project(root, &work, "claude");
    git(&work, &["config", "filter.acompose.clean", "'/nowhere/acompose' git-clean %f"]);
    std::fs::write(work.join("CLAUDE.md"), format!("{}\n", read(&work.join("CLAUDE.md")))).expect("touch");
    let status = git(&work, &["status", "--porcelain"]);
    assert_eq!(status, " M .mcp.json\n M CLAUDE.md\n", "git stores the files as they are: the role's text shows");
    let listed = acompose(root, &["--home", "home", "projections"]);
    assert!(listed.stdout.contains("/nowhere/acompose"), "{}", listed.stdout);
    let doctor = acompose(root, &["--home", "home", "doctor"]);
    assert!(doctor.stdout.contains("/nowhere/acompose"), "{}", doctor.stdout);
    let converged = acompose(root, &["--home", "home"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    let diff = git(&work, &["diff"]);
    assert_eq!(changed_lines(&diff), ["+"], "only the user's own blank line: {diff}");
}

#[test]
fn what_an_earlier_versions_stopped_unproject_left_is_named_and_unproject_takes_it_out() {
    let temporary = home();
    let root = temporary.path();
    let work = root.join("work");
    repository(&work);
    let docs = work.join("docs");
    write_file(&docs.join("CLAUDE.md"), "# Docs\n");
    git(&work, &["add", "docs/CLAUDE.md"]);
    git(&work, &["commit", "--quiet", "-m", "docs"]);
    project(root, &work, "claude");
    // What an earlier version's `unproject` of `docs`, stopped after its transaction,
    // left: a record owning nothing, its exclude lines and its mark.
    let exclude = work.join(".git/info/exclude");
    let left = "# acompose projection into docs\n/docs/.agent-compose\n# end of acompose projection into docs\n";
    std::fs::write(&exclude, format!("{}{left}", read(&exclude))).expect("lines left");
    write_file(
        &docs.join(".agent-compose/projection.json"),
        "{\n  \"format\": \"acompose.projection.v1\",\n  \"files\": []\n}\n",
    );
    git(&work, &["update-index", "--skip-worktree", "docs/CLAUDE.md"]);

    let doctor = acompose(root, &["--home", "home", "doctor"]);
    assert!(doctor.stdout.contains("git lines in"), "{}", doctor.stdout);
    assert!(doctor.stdout.contains("docs/CLAUDE.md"), "the mark is named: {}", doctor.stdout);
    let taken = unproject(root, &docs);
    assert_eq!(taken.code, 1, "{}", taken.stdout);
    assert!(taken.stderr.contains("were taken out") && taken.stderr.contains("empty record"), "{}", taken.stderr);
    assert!(!docs.join(".agent-compose").exists());
    assert!(!read(&exclude).contains("into docs"), "{}", read(&exclude));
    assert!(read(&exclude).contains("# acompose projection into .\n"), "the root's projection keeps its lines");
    let doctor = acompose(root, &["--home", "home", "doctor"]);
    assert!(!doctor.stdout.contains("git lines in"), "{}", doctor.stdout);
}

#[test]
fn git_is_brought_in_line_from_the_record_alone_when_the_bundle_is_gone() {
    let temporary = home();
    let root = temporary.path();
    let work = root.join("work");
    repository(&work);
    project(root, &work, "claude");
    std::fs::remove_file(work.join(".git/info/attributes")).expect("attributes");
    git(&work, &["config", "--remove-section", "filter.acompose"]);
    std::fs::write(work.join("CLAUDE.md"), format!("{}\n", read(&work.join("CLAUDE.md")))).expect("touch");
    assert_ne!(git(&work, &["status", "--porcelain"]), "", "without the filter the block shows");
    let record: serde_json::Value =
        serde_json::from_str(&read(&work.join(".agent-compose/projection.json"))).expect("record");
    let bundle = record["details"]["bundle_path"].as_str().expect("bundle path").to_owned();
    std::fs::remove_dir_all(&bundle).expect("the bundle gone");

    let converged = acompose(root, &["--home", "home"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    assert!(converged.stdout.contains("brought git's files in line"), "{}", converged.stdout);
    assert_eq!(changed_lines(&git(&work, &["diff"])), ["+"], "the user's own blank line alone");
    assert!(read(&work.join(".git/info/attributes")).contains("/CLAUDE.md filter=acompose"));
}
