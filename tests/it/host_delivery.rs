//! Host delivery in bare convergence: `load_points` and `skill_load_points` link the
//! roster document and skills into a harness's user folders, owned by
//! `<home>/skill-mounts.json`; a second run changes nothing, the user's own same-named
//! skill wins, removing the keys removes exactly our links; `setup` writes the keys.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::acompose_with;

struct Host {
    _temporary: tempfile::TempDir,
    root: PathBuf,
    user_home: PathBuf,
    acompose_home: PathBuf,
}

fn host() -> Host {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().to_path_buf();
    let user_home = root.join("user");
    std::fs::create_dir_all(&user_home).expect("mkdir");
    Host { acompose_home: root.join("acompose-home"), user_home, root, _temporary: temporary }
}

impl Host {
    fn run(&self, arguments: &[&str]) -> common::Output {
        let environment = [
            ("HOME", self.user_home.to_str().expect("utf-8")),
            ("ACOMPOSE_HOME", self.acompose_home.to_str().expect("utf-8")),
        ];
        acompose_with(&self.root, arguments, &environment)
    }

    fn configure(&self, text: &str) {
        std::fs::create_dir_all(&self.acompose_home).expect("mkdir");
        std::fs::write(self.acompose_home.join("agent-compose.yaml"), text).expect("write");
    }

    fn artifact(&self) -> PathBuf {
        self.acompose_home.join("sources/personality")
    }
}

/// Every entry under `root` (links not followed): path → `dir`, `link -> …` or bytes.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name().min_depth(1) {
        let entry = entry.expect("entry");
        let relative = entry.path().strip_prefix(root).expect("under").to_string_lossy().into_owned();
        let kind = if entry.path_is_symlink() {
            format!("link -> {}", std::fs::read_link(entry.path()).expect("link").display())
        } else if entry.file_type().is_dir() {
            "dir".to_owned()
        } else {
            String::from_utf8_lossy(&std::fs::read(entry.path()).expect("read")).into_owned()
        };
        entries.insert(relative, kind);
    }
    entries
}

fn roster_skills(artifact: &Path) -> Vec<String> {
    let mut skills: Vec<String> = std::fs::read_dir(artifact.join(".agents/skills"))
        .expect("skills")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    skills.sort();
    skills
}

const CONFIG: &str =
    "load_points:\n  claude: ~/.claude/CLAUDE.md\n  codex: null\nskill_load_points:\n  claude: ~/.claude/skills\n";

#[test]
fn skill_load_points_link_the_roster_and_a_second_run_changes_nothing() {
    let host = host();
    let own = host.user_home.join(".claude/skills/role-platform");
    std::fs::create_dir_all(&own).expect("mkdir");
    std::fs::write(own.join("SKILL.md"), "my own platform skill\n").expect("write");
    host.configure(CONFIG);
    let first = host.run(&[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stderr.contains("role-platform` is taken by something of yours"), "{}", first.stderr);
    assert!(first.stdout.contains("kept as yours"), "{}", first.stdout);
    let artifact = host.artifact().canonicalize().expect("artifact");
    let skills = roster_skills(&artifact);
    assert!(skills.len() > 10, "{skills:?}");
    let claude = host.user_home.join(".claude");
    assert_eq!(std::fs::read_link(claude.join("CLAUDE.md")).expect("link"), artifact.join("ROSTER.md"));
    for skill in skills.iter().filter(|skill| *skill != "role-platform") {
        let link = claude.join("skills").join(skill);
        assert_eq!(std::fs::read_link(&link).expect("link"), artifact.join(".agents/skills").join(skill));
        assert!(std::fs::read_to_string(link.join("SKILL.md")).expect("readable").starts_with("---"));
    }
    assert_eq!(std::fs::read_to_string(own.join("SKILL.md")).expect("own"), "my own platform skill\n");
    assert!(!host.user_home.join(".codex").exists(), "an opted-out harness is not touched");
    let before = tree(&host.user_home);
    let record = std::fs::read(host.acompose_home.join("skill-mounts.json")).expect("record");
    let second = host.run(&[]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stdout.contains("delivery  0 linked"), "{}", second.stdout);
    assert_eq!(tree(&host.user_home), before);
    assert_eq!(std::fs::read(host.acompose_home.join("skill-mounts.json")).expect("record"), record);
}

#[test]
fn removing_the_keys_removes_exactly_our_links() {
    let host = host();
    let skills = host.user_home.join(".claude/skills");
    std::fs::create_dir_all(skills.join("mine")).expect("mkdir");
    std::fs::write(skills.join("mine/SKILL.md"), "mine\n").expect("write");
    std::os::unix::fs::symlink("/nowhere/theirs", skills.join("theirs")).expect("a link we did not make");
    let before = tree(&host.user_home);
    host.configure(CONFIG);
    assert_eq!(host.run(&[]).code, 0);
    assert_ne!(tree(&host.user_home), before);
    host.configure("skill_policy: warn\n");
    let output = host.run(&[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("removed"), "{}", output.stdout);
    assert_eq!(tree(&host.user_home), before);
    assert!(!host.acompose_home.join("skill-mounts.json").exists());
}

#[test]
fn a_link_the_user_repointed_is_left_alone() {
    let host = host();
    host.configure(CONFIG);
    assert_eq!(host.run(&[]).code, 0);
    let repointed = host.user_home.join(".claude/skills/role-platform");
    std::fs::remove_file(&repointed).expect("remove our link");
    std::os::unix::fs::symlink("/elsewhere", &repointed).expect("the user's own link");
    host.configure("");
    assert_eq!(host.run(&[]).code, 0);
    assert_eq!(std::fs::read_link(&repointed).expect("kept"), Path::new("/elsewhere"));
}

#[test]
fn without_the_keys_no_harness_folder_is_touched_and_one_hint_is_printed() {
    let host = host();
    let output = host.run(&[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(output.stdout.matches("acompose setup claude").count(), 1, "{}", output.stdout);
    assert!(tree(&host.user_home).is_empty());
    assert!(!host.acompose_home.join("skill-mounts.json").exists());
}

#[test]
fn an_unknown_harness_in_the_keys_is_an_error_with_its_line() {
    let host = host();
    host.configure("skill_load_points:\n  vim: ~/.vim/skills\n");
    let output = host.run(&[]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(output.stderr.contains("not a known harness"), "{}", output.stderr);
    assert!(output.stderr.contains("agent-compose.yaml:2"), "{}", output.stderr);
    assert!(tree(&host.user_home).is_empty());
}

#[test]
fn setup_writes_the_keys_and_converges() {
    let host = host();
    let output = host.run(&["setup", "codex"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        std::fs::read_to_string(host.acompose_home.join("agent-compose.yaml")).expect("config"),
        "load_points:\n  codex: ~/.codex/AGENTS.md\nskill_load_points:\n  codex: ~/.agents/skills\n"
    );
    assert!(host.user_home.join(".codex/AGENTS.md").is_symlink());
    assert!(host.user_home.join(".agents/skills/role-platform/SKILL.md").is_file());
    let again = host.run(&["setup", "codex"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("kept      `skill_load_points.codex` as written"), "{}", again.stdout);
    assert!(again.stdout.contains("0 linked"), "{}", again.stdout);
}

#[test]
fn a_file_of_the_user_on_the_way_wins_and_the_other_harness_is_still_delivered() {
    let host = host();
    std::fs::write(host.user_home.join("blocked"), "a file where a folder would go\n").expect("write");
    let before = tree(&host.user_home);
    host.configure("skill_load_points:\n  claude: ~/.claude/skills\n  codex: ~/blocked/skills\n");
    let output = host.run(&[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stderr.contains("blocked/skills/role-platform` is taken by something of yours"),
        "{}",
        output.stderr
    );
    assert!(host.user_home.join(".claude/skills/role-platform").is_symlink());
    assert_eq!(
        std::fs::read_to_string(host.user_home.join("blocked")).expect("kept"),
        "a file where a folder would go\n"
    );
    host.configure("");
    assert_eq!(host.run(&[]).code, 0);
    let mut after = tree(&host.user_home);
    // Folders made for the links stay (docs/delivery.md); every link is gone.
    assert_eq!(after.remove(".claude"), Some("dir".to_owned()));
    assert_eq!(after.remove(".claude/skills"), Some("dir".to_owned()));
    assert_eq!(after, before);
}

#[test]
fn harnesses_that_read_each_others_folders_get_each_skill_once() {
    let host = host();
    // Gemini CLI first, alone: its own folder.
    assert_eq!(host.run(&["setup", "gemini"]).code, 0);
    let gemini = host.user_home.join(".gemini/skills");
    let skills = roster_skills(&host.artifact());
    assert_eq!(std::fs::read_dir(&gemini).expect("gemini skills").count(), skills.len());
    // Codex reads only `~/.agents/skills`, which Gemini CLI reads too: the skills move
    // there, and Gemini CLI's own folder is emptied of our links.
    let codex = host.run(&["setup", "codex"]);
    assert_eq!(codex.code, 0, "{}", codex.stderr);
    let agents = host.user_home.join(".agents/skills");
    assert_eq!(std::fs::read_dir(&agents).expect("agents skills").count(), skills.len());
    assert_eq!(std::fs::read_dir(&gemini).map(Iterator::count).unwrap_or(0), 0, "no skill twice for Gemini CLI");
    // A load point moved by hand is used as written.
    host.configure(
        "skill_load_points:\n  gemini: ~/elsewhere/skills\n  codex: ~/.agents/skills\nload_points:\n  gemini: null\n  codex: null\n",
    );
    assert_eq!(host.run(&[]).code, 0);
    assert_eq!(std::fs::read_dir(host.user_home.join("elsewhere/skills")).expect("moved").count(), skills.len());
}

#[test]
fn a_users_own_instructions_file_is_kept_with_a_fix_that_ends_the_warning() {
    let host = host();
    let own = host.user_home.join(".claude/CLAUDE.md");
    std::fs::create_dir_all(own.parent().expect("parent")).expect("mkdir");
    std::fs::write(&own, "my own instructions\n").expect("write");
    let setup = host.run(&["setup", "claude"]);
    assert_eq!(setup.code, 0, "{}", setup.stderr);
    assert!(setup.stderr.contains("CLAUDE.md` is your own file"), "{}", setup.stderr);
    assert!(setup.stderr.contains("set `load_points.claude: null`"), "the fix is named: {}", setup.stderr);
    // Every run repeats it while the configuration asks for what cannot be done.
    assert!(host.run(&[]).stderr.contains("CLAUDE.md` is your own file"));
    // The fix it names: opt the instructions file out; the skills stay delivered.
    let config = std::fs::read_to_string(host.acompose_home.join("agent-compose.yaml")).expect("config");
    assert!(config.contains("claude: ~/.claude/CLAUDE.md"), "{config}");
    let fixed = config.replace("claude: ~/.claude/CLAUDE.md", "claude: null");
    host.configure(&fixed);
    let after = host.run(&[]);
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert!(!after.stderr.contains("your own file"), "{fixed}\n{}", after.stderr);
    assert_eq!(std::fs::read_to_string(&own).expect("own"), "my own instructions\n");
    assert!(host.user_home.join(".claude/skills/role-platform").is_symlink(), "skills are still delivered");
}

#[test]
fn a_home_projection_over_the_roster_host_delivery_names_the_conflict_and_its_fix() {
    let host = host();
    assert_eq!(host.run(&["setup", "claude"]).code, 0);
    let request = host.root.join("request.kdl");
    std::fs::write(&request, "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n}\n").expect("request");
    let composed = host.run(&["compose", "request.kdl", "--out", "out"]);
    assert_eq!(composed.code, 0, "{}", composed.stderr);
    let bundle = std::fs::read_dir(host.root.join("out"))
        .expect("out")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.join("manifest.json").is_file())
        .expect("a bundle");
    let claude = host.user_home.join(".claude");
    let project = [
        "project",
        bundle.to_str().expect("utf-8"),
        "--layout",
        "claude",
        "--scope",
        "home",
        "--target",
        host.user_home.to_str().expect("utf-8"),
    ];
    let refused = host.run(&project);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("is the roster's host delivery (`acompose setup claude`"), "{}", refused.stderr);
    assert!(!refused.stderr.contains("did not make"), "{}", refused.stderr);
    // The fix it names: opt the harness out of host delivery, converge, project again.
    let config = std::fs::read_to_string(host.acompose_home.join("agent-compose.yaml")).expect("config");
    let config = config
        .replace("claude: ~/.claude/CLAUDE.md", "claude: null")
        .replace("claude: ~/.claude/skills", "claude: null");
    host.configure(&config);
    assert_eq!(host.run(&[]).code, 0);
    let projected = host.run(&project);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    assert!(claude.join("skills/role-platform").exists(), "the role's bundle is projected at home scope");
}
