//! Delivery into harnesses: `project` into every layout at both scopes (exact trees,
//! repeat writes nothing, foreign files refused, a fault at every step restores the
//! previous projection, stale entries removed, compiled bundles), and the identity
//! surfaces `statusline` and `whoami` read back from the projection record.

use crate::common;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use acompose_driver::delivery::projection::{GitExclusion, Request, project};
use acompose_driver::home::transaction::{Hooks, NoFaults, Step};
use acompose_engine::harness_layout::{Scope, layouts};
use acompose_engine::projection::Mode;
use common::{acompose, copy_dir, git, tree_of};

/// A composed bundle of one of the compose fixtures, in its own temporary estate.
struct Composed {
    _temporary: tempfile::TempDir,
    root: PathBuf,
    bundle: PathBuf,
}

fn compose(case: &str) -> Composed {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("case");
    copy_dir(&common::fixtures().join("compose").join(case), &root);
    copy_dir(&common::fixtures().join("roster/base"), &temporary.path().join("person-base"));
    let output = acompose(&root, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bundle = std::fs::read_dir(root.join("out"))
        .expect("out")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_dir() && !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
        .expect("a bundle");
    Composed { _temporary: temporary, root, bundle }
}

/// The skill folders of a bundle: name → `content/skills/<source>/<name>`.
fn bundle_skills(bundle: &Path) -> BTreeMap<String, PathBuf> {
    let mut skills = BTreeMap::new();
    for source in std::fs::read_dir(bundle.join("content/skills")).expect("skills").filter_map(Result::ok) {
        for skill in std::fs::read_dir(source.path()).expect("source").filter_map(Result::ok) {
            skills.insert(skill.file_name().to_string_lossy().into_owned(), skill.path());
        }
    }
    skills
}

fn project_cli(root: &Path, bundle: &Path, layout: &str, scope: &str, target: &Path, extra: &[&str]) -> common::Output {
    let mut arguments = vec![
        "project",
        bundle.to_str().expect("utf-8"),
        "--layout",
        layout,
        "--scope",
        scope,
        "--target",
        target.to_str().expect("utf-8"),
        "--json",
    ];
    arguments.extend_from_slice(extra);
    acompose(root, &arguments)
}

fn written_count(output: &common::Output) -> usize {
    let report: serde_json::Value = serde_json::from_str(&output.stdout).expect("json report");
    report["written"].as_array().expect("written").len()
}

/// The folders on the way to `path` (`a`, `a/b` for `a/b/c`).
fn ancestors(path: &str) -> Vec<String> {
    let segments: Vec<&str> = path.split('/').collect();
    (1..segments.len()).map(|count| segments[..count].join("/")).collect()
}

#[test]
fn every_layout_at_both_scopes_gets_the_exact_tree_and_a_repeat_writes_nothing() {
    let composed = compose("selector-slice");
    let bundle = composed.bundle.canonicalize().expect("bundle");
    let skills = bundle_skills(&bundle);
    assert!(skills.len() >= 3, "{skills:?}");
    let instructions = std::fs::read_to_string(bundle.join("content/instructions.md")).expect("instructions");
    for layout in layouts() {
        for (scope, scope_name) in [(Scope::Repository, "repo"), (Scope::Home, "home")] {
            if scope == Scope::Repository && !layout.repository_links {
                // Kilo takes copies at repository scope (tested on its own).
                continue;
            }
            let target = tempfile::tempdir().expect("target");
            let output = project_cli(&composed.root, &bundle, layout.harness, scope_name, target.path(), &[]);
            assert_eq!(output.code, 0, "{} {scope_name}: {}", layout.harness, output.stderr);
            let places = layout.places(scope);
            let mut expected = BTreeMap::new();
            for folder in ancestors(places.instructions).into_iter().chain(ancestors(&format!("{}/x", places.skills))) {
                expected.insert(folder, "dir".to_owned());
            }
            if !places.instructions.is_empty() {
                expected.insert(places.instructions.to_owned(), instructions.clone());
            }
            for (skill, folder) in &skills {
                expected.insert(format!("{}/{skill}", places.skills), format!("link -> {}", folder.display()));
            }
            expected.insert(".agent-compose".to_owned(), "dir".to_owned());
            let mut actual = tree_of(target.path());
            let record = actual.remove(".agent-compose/projection.json").expect("the projection record");
            assert_eq!(actual, expected, "{} {scope_name}", layout.harness);
            let record: serde_json::Value = serde_json::from_str(&record).expect("record");
            assert_eq!(record["format"], "acompose.projection.v1");
            assert_eq!(record["details"]["layout"], layout.harness);
            for (skill, folder) in &skills {
                let through_link = std::fs::read(target.path().join(places.skills).join(skill).join("SKILL.md"))
                    .expect("SKILL.md through the link");
                assert_eq!(through_link, std::fs::read(folder.join("SKILL.md")).expect("bundle SKILL.md"));
            }
            let again = project_cli(&composed.root, &bundle, layout.harness, scope_name, target.path(), &[]);
            assert_eq!(again.code, 0, "{}", again.stderr);
            assert_eq!(written_count(&again), 0, "{} {scope_name}: {}", layout.harness, again.stdout);
            assert_eq!(tree_of(target.path()).len(), expected.len() + 1);
        }
    }
}

#[test]
fn copies_are_plain_files_and_a_repeat_writes_nothing() {
    let composed = compose("selector-slice");
    let bundle = composed.bundle.canonicalize().expect("bundle");
    let target = tempfile::tempdir().expect("target");
    let output = project_cli(&composed.root, &bundle, "codex", "repo", target.path(), &["--copy"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    for (skill, folder) in bundle_skills(&bundle) {
        let copied = target.path().join(".agents/skills").join(&skill);
        assert!(!copied.is_symlink() && copied.is_dir(), "{skill}");
        assert_eq!(
            std::fs::read(copied.join("SKILL.md")).expect("copy"),
            std::fs::read(folder.join("SKILL.md")).expect("bundle")
        );
    }
    let again = project_cli(&composed.root, &bundle, "codex", "repo", target.path(), &["--copy"]);
    assert_eq!(written_count(&again), 0, "{}", again.stdout);
}

/// The text between the managed block's markers in `text`.
fn block_of(text: &str) -> Option<&str> {
    let start = text.find("<!-- acompose: the projected role's instructions begin")?;
    let end = text.find("<!-- acompose: the projected role's instructions end -->")?;
    Some(&text[start..end])
}

#[test]
fn an_instructions_file_of_the_user_gets_a_managed_block_and_unproject_gives_it_back() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    let mine = "# my own instructions\n\nkeep me";
    std::fs::write(target.path().join("CLAUDE.md"), mine).expect("write");
    let before = tree_of(target.path());
    let output = project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let projected = std::fs::read_to_string(target.path().join("CLAUDE.md")).expect("read");
    assert!(projected.starts_with(mine), "the user's text stays first, byte for byte: {projected}");
    let instructions = std::fs::read_to_string(composed.bundle.join("content/instructions.md")).expect("instructions");
    assert!(block_of(&projected).expect("a block").contains(instructions.trim_end()), "{projected}");
    let record = std::fs::read_to_string(target.path().join(".agent-compose/projection.json")).expect("record");
    let record: serde_json::Value = serde_json::from_str(&record).expect("json");
    let owned: Vec<&str> = record["files"].as_array().expect("files").iter().filter_map(|file| file.as_str()).collect();
    assert!(!owned.contains(&"CLAUDE.md"), "the user's file is never owned: {owned:?}");
    assert_eq!(record["details"]["blocks"][0]["path"], "CLAUDE.md");

    let repeat = project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]);
    assert_eq!(repeat.code, 0, "{}", repeat.stderr);
    let repeat: serde_json::Value = serde_json::from_str(&repeat.stdout).expect("json");
    assert_eq!(repeat["written"], serde_json::json!([]), "a repeat writes nothing");

    let unprojected = acompose(&composed.root, &["unproject", "--target", target.path().to_str().expect("utf-8")]);
    assert_eq!(unprojected.code, 0, "{}", unprojected.stderr);
    assert!(unprojected.stdout.contains("restored CLAUDE.md"), "{}", unprojected.stdout);
    assert_eq!(tree_of(target.path()), before, "the folder is exactly as it was, tree and bytes");
}

#[test]
fn two_layouts_share_a_folder_a_second_role_is_refused_and_unproject_gives_both_files_back() {
    let composed = compose("selector-slice");
    let other_role = compose("global-with-selectors");
    let target = tempfile::tempdir().expect("target");
    let claude = "# claude notes\n";
    let agents = "# agents notes\n\nmore\n";
    std::fs::write(target.path().join("CLAUDE.md"), claude).expect("write");
    std::fs::write(target.path().join("AGENTS.md"), agents).expect("write");
    let before = tree_of(target.path());
    let target_text = target.path().to_str().expect("utf-8");
    assert_eq!(project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]).code, 0);
    let codex = project_cli(&composed.root, &composed.bundle, "codex", "repo", target.path(), &[]);
    assert_eq!(codex.code, 0, "{}", codex.stderr);
    for (file, user) in [("CLAUDE.md", claude), ("AGENTS.md", agents)] {
        let text = std::fs::read_to_string(target.path().join(file)).expect("read");
        assert!(text.starts_with(user) && block_of(&text).is_some(), "{file}: {text}");
    }
    for skills in [".claude/skills", ".agents/skills"] {
        assert!(target.path().join(skills).join("role-platform/SKILL.md").is_file(), "{skills}");
    }
    let row = acompose(&composed.root, &["statusline", "--target", target_text]);
    assert!(row.stdout.contains("platform@claude+codex"), "{}", row.stdout);

    let occupied = tree_of(target.path());
    let refused = project_cli(&other_role.root, &other_role.bundle, "gemini", "repo", target.path(), &[]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("role `platform`") && refused.stderr.contains(".agents/skills"),
        "{}",
        refused.stderr
    );
    assert_eq!(tree_of(target.path()), occupied, "nothing changed");

    let projected = std::fs::read_to_string(target.path().join("CLAUDE.md")).expect("read");
    let end = "<!-- acompose: the projected role's instructions end -->";
    std::fs::write(target.path().join("CLAUDE.md"), projected.replacen(end, &format!("my line\n{end}"), 1))
        .expect("edit the block");
    let edited = tree_of(target.path());
    let refused = project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]);
    assert!(refused.code == 1 && refused.stderr.contains("edited by hand"), "{}", refused.stderr);
    let refused = acompose(&composed.root, &["unproject", "--target", target_text]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert_eq!(tree_of(target.path()), edited, "a hand-edited block stops both before anything changes");

    std::fs::write(target.path().join("CLAUDE.md"), &projected).expect("undo the edit");
    let unprojected = acompose(&composed.root, &["unproject", "--target", target_text]);
    assert_eq!(unprojected.code, 0, "{}", unprojected.stderr);
    assert_eq!(tree_of(target.path()), before, "both files and the folder exactly as they were");
}

#[test]
fn a_foreign_skill_folder_in_the_way_is_refused() {
    let composed = compose("selector-slice");
    let skill = bundle_skills(&composed.bundle).into_keys().next().expect("a skill");
    let target = tempfile::tempdir().expect("target");
    let folder = target.path().join(".claude/skills").join(&skill);
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("SKILL.md"), "mine\n").expect("write");
    let before = tree_of(target.path());
    let output = project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]);
    assert_eq!(output.code, 1, "{}", output.stdout);
    assert!(output.stderr.contains(&skill), "{}", output.stderr);
    assert_eq!(tree_of(target.path()), before);
}

#[test]
fn projecting_another_bundle_removes_stale_owned_entries_only() {
    let slice = compose("selector-slice");
    let star = compose("selector-star");
    let slice_skills = bundle_skills(&slice.bundle);
    let star_skills = bundle_skills(&star.bundle);
    assert_ne!(slice_skills.keys().collect::<Vec<_>>(), star_skills.keys().collect::<Vec<_>>());
    let target = tempfile::tempdir().expect("target");
    std::fs::create_dir_all(target.path().join(".claude/skills/users-own")).expect("mkdir");
    std::fs::write(target.path().join(".claude/skills/users-own/SKILL.md"), "mine\n").expect("write");
    assert_eq!(project_cli(&star.root, &star.bundle, "claude", "repo", target.path(), &[]).code, 0);
    let output = project_cli(&slice.root, &slice.bundle, "claude", "repo", target.path(), &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let mut present: Vec<String> = std::fs::read_dir(target.path().join(".claude/skills"))
        .expect("skills")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    present.sort();
    let mut expected: Vec<String> = slice_skills.into_keys().chain(["users-own".to_owned()]).collect();
    expected.sort();
    assert_eq!(present, expected);
}

#[test]
fn a_compiled_bundle_delivers_its_single_document() {
    let composed = compose("compiled-delivery");
    let target = tempfile::tempdir().expect("target");
    let output = project_cli(&composed.root, &composed.bundle, "gemini", "repo", target.path(), &[]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let mut actual = tree_of(target.path());
    actual.remove(".agent-compose/projection.json").expect("record");
    let compiled = std::fs::read_to_string(composed.bundle.join("delivery/compiled.md")).expect("compiled");
    let expected: BTreeMap<String, String> =
        [(".agent-compose".to_owned(), "dir".to_owned()), ("GEMINI.md".to_owned(), compiled)].into_iter().collect();
    assert_eq!(actual, expected);
}

/// Fails the `fail_at`-th step (counting from zero) and counts the steps seen.
struct FailAt {
    fail_at: usize,
    seen: usize,
}

impl Hooks for FailAt {
    fn before(&mut self, _step: Step<'_>) -> io::Result<()> {
        self.seen += 1;
        if self.seen - 1 == self.fail_at { Err(io::Error::other("injected fault")) } else { Ok(()) }
    }
}

#[test]
fn a_fault_at_each_step_restores_the_previous_projection() {
    let star = compose("selector-star");
    let slice = compose("selector-slice");
    for (mode, user_file) in [(Mode::Link, false), (Mode::Copy, false), (Mode::Link, true)] {
        let target = tempfile::tempdir().expect("target");
        if user_file {
            // The instructions then go into a managed block of the user's file, rewritten
            // under the same journal.
            std::fs::write(target.path().join("CLAUDE.md"), "# mine\n").expect("user file");
        }
        let first = Request {
            bundle: &star.bundle,
            layout: acompose_engine::harness_layout::layout("claude").expect("claude"),
            scope: Scope::Repository,
            target: target.path(),
            mode,
            extra_links: &[],
            mcp_file: None,
            git: GitExclusion::LeaveAlone,
        };
        project(&first, &mut NoFaults).expect("first projection");
        let before = tree_of(target.path());
        let second = Request { bundle: &slice.bundle, ..first };
        let mut step = 0;
        loop {
            let mut hooks = FailAt { fail_at: step, seen: 0 };
            match project(&second, &mut hooks) {
                Err(error) => {
                    assert_eq!(error.blame(), acompose_driver::Blame::Environment, "{error}");
                    assert_eq!(tree_of(target.path()), before, "{mode:?}: after a fault at step {step}");
                }
                Ok(report) => {
                    assert!(step > 3, "{mode:?}: only {step} steps");
                    assert!(!report.outcome.written.is_empty());
                    break;
                }
            }
            step += 1;
        }
        assert_ne!(tree_of(target.path()), before);
    }
}

#[test]
fn statusline_prints_the_row_in_a_projection_and_nothing_elsewhere() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    assert_eq!(project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]).code, 0);
    let inside = target.path().join("src/deep");
    std::fs::create_dir_all(&inside).expect("mkdir");
    let output = acompose(&composed.root, &["statusline", "--target", inside.to_str().expect("utf-8")]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    insta::assert_snapshot!(output.stdout, @"●● rowan keel [she] · platform@claude · frontier · 8 skills ~1.1k tokens · ok");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let output = acompose(&composed.root, &["statusline", "--target", elsewhere.path().to_str().expect("utf-8")]);
    assert_eq!((output.code, output.stdout.as_str()), (0, ""));
}

#[test]
fn whoami_names_the_role_and_reports_a_missing_bundle() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    assert_eq!(project_cli(&composed.root, &composed.bundle, "codex", "repo", target.path(), &[]).code, 0);
    let output = acompose(&composed.root, &["whoami", "--target", target.path().to_str().expect("utf-8")]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("platform@codex"), "{}", output.stdout);
    assert!(output.stdout.lines().next().expect("row").ends_with(" ok"), "{}", output.stdout);
    let json = acompose(&composed.root, &["whoami", "--json", "--target", target.path().to_str().expect("utf-8")]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!((document["format"].as_str(), document["health"].as_str()), (Some("acompose.whoami.v1"), Some("ok")));
    assert_eq!(document["projection"]["role"], "platform");
    std::fs::remove_dir_all(&composed.bundle).expect("remove bundle");
    let output = acompose(&composed.root, &["whoami", "--target", target.path().to_str().expect("utf-8")]);
    assert!(output.stdout.lines().next().expect("row").ends_with("bundle missing"), "{}", output.stdout);
    assert_eq!(output.code, 1, "a harness under a dangling projection does not see its role");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let output = acompose(&composed.root, &["whoami", "--target", elsewhere.path().to_str().expect("utf-8")]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("no projection"), "{}", output.stderr);
}

#[test]
fn whoami_tells_a_projection_whose_home_indexes_a_newer_bundle_for_its_role() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    assert_eq!(project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]).code, 0);
    let id = composed.bundle.file_name().and_then(|name| name.to_str()).expect("bundle id").to_owned();
    let index = composed.bundle.parent().expect("bundles folder").join("index.json");
    let whoami = || acompose(&composed.root, &["whoami", "--target", target.path().to_str().expect("utf-8")]);
    let write_index = |bundle: &str| {
        let text = format!("{{\"format\": \"acompose.bundle-index.v1\", \"bundles\": {{\"platform\": \"{bundle}\"}}}}");
        std::fs::write(&index, text).expect("index");
    };
    write_index(&id);
    let current = whoami();
    assert_eq!(current.code, 0, "{}", current.stdout);
    assert!(current.stdout.lines().next().expect("row").ends_with(" ok"), "{}", current.stdout);
    write_index("0000000000000000");
    let stale = whoami();
    assert_eq!(stale.code, 1, "{}", stale.stdout);
    assert!(stale.stdout.lines().next().expect("row").ends_with(" stale"), "{}", stale.stdout);
    let statusline = acompose(&composed.root, &["statusline", "--target", target.path().to_str().expect("utf-8")]);
    assert_eq!(statusline.code, 0, "the status line never fails: {}", statusline.stderr);
    assert!(statusline.stdout.trim_end().ends_with(" stale"), "{}", statusline.stdout);
}

#[test]
fn a_linked_projection_is_excluded_locally_and_a_copied_one_is_not() {
    let composed = compose("selector-slice");
    let repository = tempfile::tempdir().expect("repository");
    let root = repository.path();
    git(root, &["init", "--quiet"]);
    std::fs::write(root.join("README.md"), "# a project\n").expect("readme");
    git(root, &["add", "README.md"]);
    git(root, &["commit", "--quiet", "-m", "start"]);
    let exclude = root.join(".git/info/exclude");
    let user_lines = "# the user's own\n*.log\n";
    std::fs::write(&exclude, user_lines).expect("exclude");
    let target = root.join("service");
    std::fs::create_dir(&target).expect("service");

    let linked = project_cli(&composed.root, &composed.bundle, "claude", "repo", &target, &[]);
    assert_eq!(linked.code, 0, "{}", linked.stderr);
    assert_eq!(git(root, &["status", "--porcelain"]), "", "a linked projection leaves git clean");
    let listed = std::fs::read_to_string(&exclude).expect("exclude");
    assert!(listed.starts_with(user_lines), "the user's lines stay first and unchanged: {listed}");
    for line in ["/service/.agent-compose", "/service/CLAUDE.md", "/service/.claude/skills/role-platform"] {
        assert!(listed.lines().any(|listed_line| listed_line == line), "{line} missing: {listed}");
    }
    let repeat = project_cli(&composed.root, &composed.bundle, "claude", "repo", &target, &[]);
    assert_eq!(repeat.code, 0, "{}", repeat.stderr);
    assert_eq!(std::fs::read_to_string(&exclude).expect("exclude"), listed, "a repeat lists nothing twice");

    let copies = root.join("docs");
    std::fs::create_dir(&copies).expect("docs");
    std::fs::write(copies.join("CLAUDE.md"), "# docs\n").expect("tracked instructions");
    git(root, &["add", "docs/CLAUDE.md"]);
    git(root, &["commit", "--quiet", "-m", "docs"]);
    let copied = project_cli(&composed.root, &composed.bundle, "claude", "repo", &copies, &["--copy"]);
    assert_eq!(copied.code, 0, "{}", copied.stderr);
    assert_eq!(std::fs::read_to_string(&exclude).expect("exclude"), listed, "copies may be committed: none listed");
    let status = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.contains(" M docs/CLAUDE.md"), "a copied block is not hidden from git: {status}");
    assert!(status.contains("?? docs/.claude/skills/role-platform/SKILL.md"), "{status}");
    assert!(!status.contains("service/"), "{status}");
}

#[test]
fn a_linked_block_in_a_tracked_file_is_filtered_from_git_until_unproject() {
    let composed = compose("selector-slice");
    let repository = tempfile::tempdir().expect("repository");
    let root = repository.path();
    git(root, &["init", "--quiet"]);
    std::fs::write(root.join("CLAUDE.md"), "# ours\n").expect("claude");
    std::fs::write(root.join("GEMINI.md"), "# skipped by us\n").expect("gemini");
    git(root, &["add", "CLAUDE.md", "GEMINI.md"]);
    git(root, &["commit", "--quiet", "-m", "start"]);
    git(root, &["update-index", "--skip-worktree", "GEMINI.md"]);

    for layout in ["claude", "gemini"] {
        let linked = project_cli(&composed.root, &composed.bundle, layout, "repo", root, &[]);
        assert_eq!(linked.code, 0, "{}", linked.stderr);
    }
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    assert_eq!(git(root, &["ls-files", "-v"]), "H CLAUDE.md\nS GEMINI.md\n", "no mark of its own; the user's stays");
    assert_eq!(git(root, &["check-attr", "filter", "CLAUDE.md"]), "CLAUDE.md: filter: acompose\n");
    git(root, &["add", "--all"]);
    assert_eq!(git(root, &["diff", "--cached", "--name-only"]), "", "`git add` stages nothing of the projection");
    let record = std::fs::read_to_string(root.join(".agent-compose/projection.json")).expect("record");
    assert!(!record.contains("hidden_from_git") && !record.contains("\"git\""), "nothing left to do: {record}");

    let unprojected = acompose(root, &["unproject", "--target", root.to_str().expect("utf-8")]);
    assert_eq!(unprojected.code, 0, "{}", unprojected.stderr);
    assert_eq!(git(root, &["ls-files", "-v"]), "H CLAUDE.md\nS GEMINI.md\n", "the user's own mark stays");
    assert_eq!(git(root, &["check-attr", "filter", "CLAUDE.md"]), "CLAUDE.md: filter: unspecified\n");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

#[test]
fn statusline_reads_the_working_folder_claude_code_sends_on_stdin() {
    use std::io::Write as _;
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    assert_eq!(project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]).code, 0);
    let session = serde_json::json!({
        "session_id": "abc",
        "cwd": "/nowhere",
        "workspace": { "current_dir": target.path(), "project_dir": target.path() },
        "model": { "id": "some-model", "display_name": "Some Model" }
    });
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_acompose"))
        .arg("statusline")
        .current_dir(&composed.root)
        .env("NO_COLOR", "1")
        .env("HOME", composed.root.join("no-home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(session.to_string().as_bytes()).expect("write");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("platform@claude · frontier"));
}

#[test]
fn a_pinned_projection_keeps_the_store_entries_of_its_bundle_until_it_is_taken_out() {
    let composed = compose("selector-slice");
    let home = composed.root.join("home");
    std::fs::create_dir(&home).expect("home");
    let store = home.join("store");
    let arguments = [
        "compose",
        "request.kdl",
        "--out",
        "pinned",
        "--projects-root",
        "projects",
        "--store",
        store.to_str().expect("utf-8"),
    ];
    let output = acompose(&composed.root, &arguments);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let bundle = std::fs::read_dir(composed.root.join("pinned"))
        .expect("pinned")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_dir() && !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
        .expect("a bundle");
    let target = tempfile::tempdir().expect("target");
    let target_text = target.path().to_str().expect("utf-8");
    let home_text = home.to_str().expect("utf-8");
    let projected = acompose(
        &composed.root,
        &[
            "--home",
            home_text,
            "project",
            bundle.to_str().expect("utf-8"),
            "--layout",
            "claude",
            "--target",
            target_text,
        ],
    );
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    assert!(!projected.stdout.contains("it follows its role"), "{}", projected.stdout);
    let listed = acompose(&composed.root, &["--home", home_text, "projections"]);
    assert!(listed.stdout.trim_end().ends_with("pinned"), "{}", listed.stdout);

    let kept = acompose(&composed.root, &["--home", home_text, "gc", "--json"]);
    let kept: serde_json::Value = serde_json::from_str(&kept.stdout).expect("json");
    assert_eq!(kept["removed"], serde_json::json!([]), "a pinned bundle's entries stay: {kept}");
    let skill = target.path().join(".claude/skills/role-platform/SKILL.md");
    assert!(skill.is_file(), "the projection still reads");

    let unprojected = acompose(&composed.root, &["--home", home_text, "unproject", "--target", target_text]);
    assert_eq!(unprojected.code, 0, "{}", unprojected.stderr);
    let reclaimed = acompose(&composed.root, &["--home", home_text, "gc", "--json"]);
    let reclaimed: serde_json::Value = serde_json::from_str(&reclaimed.stdout).expect("json");
    assert!(!reclaimed["removed"].as_array().expect("removed").is_empty(), "{reclaimed}");
}

/// Changes a file of the bundle just before the projection's commit line.
struct TamperAtCommit(PathBuf);

impl Hooks for TamperAtCommit {
    fn before(&mut self, step: Step<'_>) -> io::Result<()> {
        if matches!(step, Step::Commit(_)) {
            let mut permissions = std::fs::metadata(&self.0)?.permissions();
            #[expect(
                clippy::permissions_set_readonly_false,
                reason = "the test writes a read-only store file on purpose"
            )]
            permissions.set_readonly(false);
            std::fs::set_permissions(&self.0, permissions)?;
            std::fs::write(&self.0, "changed behind the projection's back\n")?;
        }
        Ok(())
    }
}

#[test]
fn a_projected_file_that_reads_back_differently_rolls_the_projection_back() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    std::fs::write(target.path().join("CLAUDE.md"), "# mine\n").expect("user file");
    let before = tree_of(target.path());
    let skill = bundle_skills(&composed.bundle)["role-platform"].join("SKILL.md").canonicalize().expect("skill file");
    let request = Request {
        bundle: &composed.bundle,
        layout: acompose_engine::harness_layout::layout("claude").expect("claude"),
        scope: Scope::Repository,
        target: target.path(),
        mode: Mode::Link,
        extra_links: &[],
        mcp_file: None,
        git: GitExclusion::LeaveAlone,
    };
    let error = project(&request, &mut TamperAtCommit(skill)).expect_err("the read-back fails");
    let message = error.to_string();
    assert!(message.contains("read back differently") && message.contains("was restored"), "{message}");
    assert_eq!(tree_of(target.path()), before, "the previous state, exactly");
}

#[test]
fn unproject_of_one_layout_leaves_the_others_and_the_last_one_gives_the_folder_back() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    let (claude, agents) = ("# claude notes\n", "# agents notes\n");
    std::fs::write(target.path().join("CLAUDE.md"), claude).expect("write");
    std::fs::write(target.path().join("AGENTS.md"), agents).expect("write");
    let before = tree_of(target.path());
    let target_text = target.path().to_str().expect("utf-8");
    for layout in ["claude", "codex"] {
        assert_eq!(project_cli(&composed.root, &composed.bundle, layout, "repo", target.path(), &[]).code, 0);
    }
    let taken = acompose(&composed.root, &["unproject", "--layout", "claude", "--target", target_text]);
    assert_eq!(taken.code, 0, "{}", taken.stderr);
    assert_eq!(std::fs::read_to_string(target.path().join("CLAUDE.md")).expect("read"), claude, "given back");
    assert!(!target.path().join(".claude").exists(), "the claude layout's own paths are gone");
    let agents_now = std::fs::read_to_string(target.path().join("AGENTS.md")).expect("read");
    assert!(agents_now.starts_with(agents) && block_of(&agents_now).is_some(), "{agents_now}");
    assert!(target.path().join(".agents/skills/role-platform/SKILL.md").is_file());
    let row = acompose(&composed.root, &["statusline", "--target", target_text]);
    assert!(row.stdout.contains("platform@codex "), "{}", row.stdout);
    let missing = acompose(&composed.root, &["unproject", "--layout", "gemini", "--target", target_text]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    let last = acompose(&composed.root, &["unproject", "--layout", "codex", "--target", target_text]);
    assert_eq!(last.code, 0, "{}", last.stderr);
    assert_eq!(tree_of(target.path()), before, "the folder exactly as it was");
}

#[test]
fn a_homes_own_layout_row_is_used_and_a_broken_one_is_refused_with_its_line() {
    let composed = compose("selector-slice");
    let home = tempfile::tempdir().expect("home");
    let target = tempfile::tempdir().expect("target");
    let row = "harness \"mine\" name=\"My Agent\" binary=\"mine\" prompt=\"mine PROMPT\" {\n    source \"my own notes\"\n    repository instructions=\"MINE.md\" skills=\".mine/skills\"\n    home instructions=\"\" skills=\".mine/skills\"\n}\n";
    std::fs::write(home.path().join("layouts.kdl"), row).expect("layouts");
    let environment = [("ACOMPOSE_HOME", home.path().to_str().expect("utf-8"))];
    let bundle = composed.bundle.to_str().expect("utf-8");
    let arguments = ["project", bundle, "--layout", "mine", "--target", target.path().to_str().expect("utf-8")];
    let projected = common::acompose_with(&composed.root, &arguments, &environment);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    assert!(projected.stdout.contains("as My Agent"), "{}", projected.stdout);
    assert!(target.path().join("MINE.md").is_file());
    assert!(target.path().join(".mine/skills/role-platform/SKILL.md").is_file());

    std::fs::write(
        home.path().join("layouts.kdl"),
        row.replace("skills=\".mine/skills\"\n    home", "skills=\"../out\"\n    home"),
    )
    .expect("broken");
    let refused = common::acompose_with(&composed.root, &arguments, &environment);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("layouts.kdl:3:"), "{}", refused.stderr);
    assert!(refused.stderr.contains("`skills` must be a relative path inside the scope"), "{}", refused.stderr);
}

#[test]
fn kilo_refuses_a_linked_repository_projection_and_takes_copies() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    let linked = project_cli(&composed.root, &composed.bundle, "kilo", "repo", target.path(), &[]);
    assert_ne!(linked.code, 0);
    assert!(linked.stderr.contains("project with `--copy`"), "{}", linked.stderr);
    assert_eq!(std::fs::read_dir(target.path()).expect("target").count(), 0, "nothing written");
    let copied = project_cli(&composed.root, &composed.bundle, "kilo", "repo", target.path(), &["--copy"]);
    assert_eq!(copied.code, 0, "{}", copied.stderr);
    assert!(target.path().join(".kilo/skills/role-platform/SKILL.md").is_file());
}

#[test]
fn statusline_and_whoami_tell_a_bundle_without_its_manifest_from_the_record_and_the_manifest_alone() {
    let composed = compose("selector-slice");
    let target = tempfile::tempdir().expect("target");
    assert_eq!(project_cli(&composed.root, &composed.bundle, "claude", "repo", target.path(), &[]).code, 0);
    let target_text = target.path().to_str().expect("utf-8");
    let row = || acompose(&composed.root, &["statusline", "--target", target_text]);
    let whoami = || acompose(&composed.root, &["whoami", "--target", target_text]);
    // A projected skill link taken away is not looked for on every prompt update: the
    // full check is `verify`'s and the projection's read-back's.
    std::fs::remove_file(target.path().join(".claude/skills/role-platform")).expect("remove a link");
    assert!(row().stdout.trim_end().ends_with(" ok"), "{}", row().stdout);
    assert_eq!(whoami().code, 0);
    let manifest = composed.bundle.join("manifest.json");
    let bytes = std::fs::read(&manifest).expect("manifest");
    std::fs::remove_file(&manifest).expect("remove the manifest");
    let damaged = row();
    assert_eq!(damaged.code, 0, "the status line never fails: {}", damaged.stderr);
    assert!(damaged.stdout.trim_end().ends_with(" damaged"), "{}", damaged.stdout);
    let told = whoami();
    assert_eq!(told.code, 1, "{}", told.stdout);
    assert!(told.stdout.lines().next().expect("row").ends_with(" damaged"), "{}", told.stdout);
    std::fs::write(&manifest, bytes).expect("restore");
    assert_eq!(whoami().code, 0);
}
