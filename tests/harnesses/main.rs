//! The real harnesses, asked what they would give the model. Each harness CLI installed
//! from the npm registry (by `.ci/run`, into a cache folder) is run against a projection
//! or under an assigned launch, offline, and its own discovery — a listing command, or
//! the first request it sends to a recording endpoint on 127.0.0.1 — must show exactly
//! the role's skills (beside the harness's own built-in ones), none twice, and the role's
//! instructions where the discovery shows instructions. `budget` runs Claude Code and
//! Codex through a whole People session against a loopback model endpoint (`model`) and
//! holds them to a Person's `budget.max_tokens`.
//!
//! The harnesses are looked for in `$ACOMPOSE_HARNESS_BIN`, else in
//! `~/.cache/acompose-ci/harnesses/node_modules/.bin`. Without them the suite says so and
//! passes; with `ACOMPOSE_HARNESS_TESTS=required` (as `.ci/run` sets) it fails.

mod budget;
#[path = "../it/common/mod.rs"]
mod common;
mod discovery;
mod mcp;
mod model;
mod recorder;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{acompose_with, git};
use discovery::{HARNESSES, Harness, Seen};

/// The role every check projects and launches.
const ROLE: &str = "platform";
/// A line of the role's instructions that every delivery of them holds.
const ROLE_LINE: &str = "Assigned role: Developer Platform Engineer (`platform`)";
/// A private overlay's instruction for the role, scoped to Claude Code alone.
const CLAUDE_OVERLAY: &str = "instruction \"claude-only\" {\n    role \"platform\"\n    harness \"claude\"\n    text \"Only Claude Code is given this line of the platform role.\"\n}\n";
/// The text of [`CLAUDE_OVERLAY`].
const CLAUDE_LINE: &str = "Only Claude Code is given this line of the platform role.";
/// A private overlay's instruction for the role, for every harness.
const TEAM_OVERLAY: &str = "instruction \"team-review\" {\n    role \"platform\"\n    text \"Every harness of the platform role is given this review rule.\"\n}\n";
/// The text of [`TEAM_OVERLAY`].
const TEAM_LINE: &str = "Every harness of the platform role is given this review rule.";

fn harness_bin() -> Option<PathBuf> {
    let folder = std::env::var_os("ACOMPOSE_HARNESS_BIN")
        .map(PathBuf::from)
        .or_else(|| std::env::home_dir().map(|home| home.join(".cache/acompose-ci/harnesses/node_modules/.bin")))?;
    folder.is_dir().then_some(folder)
}

fn required() -> bool {
    std::env::var("ACOMPOSE_HARNESS_TESTS").is_ok_and(|value| value == "required")
}

/// The installed harnesses, or `None` (with the reason printed) when the suite is skipped.
fn installed() -> Option<(PathBuf, Vec<&'static Harness>)> {
    let Some(bin) = harness_bin() else {
        assert!(!required(), "ACOMPOSE_HARNESS_TESTS=required, but no harness folder was found");
        eprintln!("skipped: no harness CLIs installed (see .ci/run, or set ACOMPOSE_HARNESS_BIN)");
        return None;
    };
    let present: Vec<&Harness> = HARNESSES.iter().filter(|harness| bin.join(harness.binary).is_file()).collect();
    let missing: Vec<&str> =
        HARNESSES.iter().filter(|harness| !bin.join(harness.binary).is_file()).map(|harness| harness.binary).collect();
    assert!(!required() || missing.is_empty(), "ACOMPOSE_HARNESS_TESTS=required, but missing: {missing:?}");
    if !missing.is_empty() {
        eprintln!("not installed, not checked: {missing:?}");
    }
    Some((bin, present))
}

/// A small estate converged into a home: roles `platform` and `eval` of `roster:core`
/// with skills from two repositories, and the platform bundle's skill names.
struct Estate {
    _temporary: tempfile::TempDir,
    root: PathBuf,
    role_skills: BTreeSet<String>,
}

impl Drop for Estate {
    /// A harness may leave a process behind it (Cline starts a hub daemon with `--cwd` in
    /// the checkout, which outlives the command): whatever names a folder of the estate on
    /// its command line is stopped before the estate goes.
    fn drop(&mut self) {
        let root = self.root.to_string_lossy().into_owned();
        let own = std::process::id().to_string();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if pid == own || !pid.bytes().all(|byte| byte.is_ascii_digit()) {
                continue;
            }
            let named = std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|arguments| String::from_utf8_lossy(&arguments).contains(&root));
            if named {
                let _ = std::process::Command::new("kill").arg(&pid).status();
            }
        }
    }
}

fn skill(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\n# {name}\n\nUse it well.\n")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

const ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role eval { use-repository benchmarks; }\n}\n";

fn estate() -> Estate {
    let temporary = tempfile::tempdir().expect("tempdir");
    // The harnesses refuse some folders under the system's temporary folder; a real path
    // with no link in it keeps every harness's own path checks quiet.
    let root = temporary.path().canonicalize().expect("canonical");
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), ROLES);
    write(&projects.join("acme/root/.agents/skills/estate-map/SKILL.md"), &skill("estate-map"));
    for name in ["machine-cpu", "machine-gpu", "compute-stack"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name));
    }
    for name in ["bench-harness", "bench-report"] {
        write(&projects.join(format!("example/benchmarks/.agents/skills/{name}/SKILL.md")), &skill(name));
    }
    git(&projects.join("acme/root"), &["init", "--quiet"]);
    let home = root.join("acompose-home");
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    write(&home.join("overlays/claude.kdl"), CLAUDE_OVERLAY);
    write(&home.join("overlays/team.kdl"), TEAM_OVERLAY);
    std::fs::create_dir_all(root.join("user")).expect("user home");
    let converged = run_acompose(&root, &root.join("user"), &["--projects-root", "projects"], &[]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.join("bundles/index.json")).expect("index")).expect("json");
    let bundle = home.join("bundles").join(index["bundles"][ROLE].as_str().expect("platform bundle"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("manifest.json")).expect("manifest")).expect("json");
    // `content/skills/<source>/<skill>/SKILL.md`: the role's skills by name.
    let role_skills = manifest["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|entry| entry["path"].as_str()?.strip_suffix("/SKILL.md")?.rsplit('/').next().map(str::to_owned))
        .collect();
    Estate { _temporary: temporary, root, role_skills }
}

/// `acompose --home <estate home> ARGS` in `directory`, with `user` as the real home.
fn run_acompose(root: &Path, user: &Path, arguments: &[&str], environment: &[(&str, &str)]) -> common::Output {
    let home = root.join("acompose-home");
    let mut full = vec!["--home", home.to_str().expect("utf-8")];
    full.extend_from_slice(arguments);
    let user_text = user.to_str().expect("utf-8");
    let mut with_home: Vec<(&str, &str)> = vec![("HOME", user_text)];
    with_home.extend_from_slice(environment);
    acompose_with(root, &full, &with_home)
}

/// A fresh git checkout named `name` under the estate's root.
fn checkout(estate: &Estate, name: &str) -> PathBuf {
    let work = estate.root.join(name);
    std::fs::create_dir_all(&work).expect("work");
    std::fs::write(work.join("README.md"), "# work\n").expect("readme");
    git(&work, &["init", "--quiet"]);
    work
}

/// A fresh, empty home for a harness run.
fn user_home(estate: &Estate, name: &str) -> PathBuf {
    let home = estate.root.join(name);
    std::fs::create_dir_all(&home).expect("home");
    home
}

/// What `seen` must be: the harness's own skills (what it lists in an empty folder with an
/// empty home) and the role's, none twice, and the role's instructions, with a private
/// overlay's instruction, where shown.
fn check(harness: &Harness, case: &str, seen: &Seen, own: &BTreeSet<String>, role_skills: &BTreeSet<String>) {
    let unique: BTreeSet<String> = seen.skills.iter().cloned().collect();
    let twice: Vec<&String> =
        unique.iter().filter(|name| seen.skills.iter().filter(|seen| seen == name).count() > 1).collect();
    assert!(twice.is_empty(), "{} ({case}): listed twice: {twice:?}", harness.binary);
    let delivered: BTreeSet<String> = unique.difference(own).cloned().collect();
    assert_eq!(&delivered, role_skills, "{} ({case}): the skills beside its own ({own:?})", harness.binary);
    // A harness with no instructions file at home scope gets the role through its role
    // skill alone there (Cline).
    let home_scope = case != "repo-scope projection" && case != "every layout in one checkout";
    let layout = acompose_engine::harness_layout::layout(harness.layout).expect("a layout");
    let instructions_expected = !(home_scope && layout.home.instructions.is_empty());
    if let Some(text) = seen.instructions.as_ref().filter(|_| instructions_expected) {
        assert!(
            text.contains(ROLE_LINE),
            "{} ({case}): the role's instructions are not in what it sends",
            harness.binary
        );
        assert!(
            text.contains(TEAM_LINE),
            "{} ({case}): the overlay's instruction is not in what it sends",
            harness.binary
        );
        // The overlay's Claude Code instruction reaches Claude Code alone (in one checkout
        // with every layout, a harness may read another's file).
        if case != "every layout in one checkout" {
            let claude = harness.layout == "claude";
            assert_eq!(text.contains(CLAUDE_LINE), claude, "{} ({case}): the Claude Code instruction", harness.binary);
        }
    }
    assert!(seen.warnings.is_empty(), "{} ({case}): warned: {:?}", harness.binary, seen.warnings);
    eprintln!("{} ({case}): {} role skills, {} of its own", harness.binary, delivered.len(), own.len());
}

#[test]
fn every_installed_harness_sees_exactly_the_role() {
    let Some((bin, harnesses)) = installed() else { return };
    let estate = estate();
    let empty = checkout(&estate, "empty");
    for harness in harnesses {
        let own = discovery::discover(harness, &bin, &user_home(&estate, &format!("{}-own", harness.binary)), &empty)
            .skills
            .into_iter()
            .collect::<BTreeSet<_>>();

        let work = checkout(&estate, &format!("{}-repo", harness.binary));
        let mut arguments =
            vec!["project", ROLE, "--layout", harness.layout, "--target", work.to_str().expect("utf-8")];
        if harness.copies_in_repositories() {
            arguments.push("--copy");
        }
        let projected = run_acompose(&estate.root, &estate.root.join("user"), &arguments, &[]);
        assert_eq!(projected.code, 0, "{}", projected.stderr);
        let home = user_home(&estate, &format!("{}-repo-home", harness.binary));
        discovery::trust(harness, &home, &work);
        let seen = discovery::discover(harness, &bin, &home, &work);
        check(harness, "repo-scope projection", &seen, &own, &estate.role_skills);

        let home = user_home(&estate, &format!("{}-home", harness.binary));
        let projected = run_acompose(
            &estate.root,
            &home,
            &[
                "project",
                ROLE,
                "--layout",
                harness.layout,
                "--scope",
                "home",
                "--target",
                home.to_str().expect("utf-8"),
            ],
            &[],
        );
        assert_eq!(projected.code, 0, "{}", projected.stderr);
        let seen = discovery::discover(harness, &bin, &home, &empty);
        check(harness, "home-scope projection", &seen, &own, &estate.role_skills);

        let user = user_home(&estate, &format!("{}-launch-user", harness.binary));
        let setup = run_acompose(&estate.root, &user, &["setup", harness.layout, "--projects-root", "projects"], &[]);
        assert_eq!(setup.code, 0, "{}", setup.stderr);
        let seen = discovery::discover_launched(harness, &bin, &estate.root.join("acompose-home"), &user, ROLE, &empty);
        check(harness, "assigned launch with the roster mounted", &seen, &own, &estate.role_skills);
    }
}

/// Every layout of the role in one checkout whose `CLAUDE.md`, `AGENTS.md` and
/// `GEMINI.md` hold the user's text: harnesses read each other's folders there, and each
/// must still see every role skill once, without a conflict warning, beside the user's
/// text.
#[test]
fn every_layout_in_one_checkout_shows_each_skill_once() {
    let Some((bin, harnesses)) = installed() else { return };
    let estate = estate();
    let empty = checkout(&estate, "empty");
    let work = checkout(&estate, "all-layouts");
    let user_text = "Ask before pushing to main.";
    for file in ["CLAUDE.md", "AGENTS.md", "GEMINI.md"] {
        std::fs::write(work.join(file), format!("# Team rules\n\n{user_text}\n")).expect("user file");
    }
    // Kilo Code takes copies at repository scope, and a folder holds one mode: it is
    // checked with copies on its own.
    let harnesses: Vec<&Harness> = harnesses.into_iter().filter(|harness| !harness.copies_in_repositories()).collect();
    for harness in &harnesses {
        let projected = run_acompose(
            &estate.root,
            &estate.root.join("user"),
            &["project", ROLE, "--layout", harness.layout, "--target", work.to_str().expect("utf-8")],
            &[],
        );
        assert_eq!(projected.code, 0, "{}", projected.stderr);
    }
    for harness in harnesses {
        let own = discovery::discover(harness, &bin, &user_home(&estate, &format!("{}-own", harness.binary)), &empty)
            .skills
            .into_iter()
            .collect::<BTreeSet<_>>();
        let home = user_home(&estate, &format!("{}-all-home", harness.binary));
        discovery::trust(harness, &home, &work);
        let seen = discovery::discover(harness, &bin, &home, &work);
        check(harness, "every layout in one checkout", &seen, &own, &estate.role_skills);
        if let Some(text) = &seen.instructions {
            assert!(text.contains(user_text), "{}: the user's own instructions are kept", harness.binary);
        }
    }
}

/// `setup` for every harness into one home: each harness sees every roster skill once,
/// and none warns about a conflict.
#[test]
fn setup_for_every_harness_at_once_shows_each_skill_once() {
    let Some((bin, harnesses)) = installed() else { return };
    let estate = estate();
    let empty = checkout(&estate, "empty");
    let user = user_home(&estate, "setup-user");
    for harness in &harnesses {
        let setup = run_acompose(&estate.root, &user, &["setup", harness.layout, "--projects-root", "projects"], &[]);
        assert_eq!(setup.code, 0, "{}", setup.stderr);
    }
    // What `setup claude` linked into `~/.claude/skills`: the roster's skills.
    let roster: BTreeSet<String> = std::fs::read_dir(user.join(".claude/skills"))
        .expect("the roster's skills")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    for harness in harnesses {
        let own = discovery::discover(harness, &bin, &user_home(&estate, &format!("{}-own", harness.binary)), &empty)
            .skills
            .into_iter()
            .collect::<BTreeSet<_>>();
        let seen = discovery::discover(harness, &bin, &user, &empty);
        let unique: BTreeSet<String> = seen.skills.iter().cloned().collect();
        assert_eq!(unique.len(), seen.skills.len(), "{}: a skill listed twice: {:?}", harness.binary, seen.skills);
        let delivered: BTreeSet<String> = unique.difference(&own).cloned().collect();
        assert_eq!(delivered, roster, "{}: the roster's skills", harness.binary);
        assert!(seen.warnings.is_empty(), "{}: warned: {:?}", harness.binary, seen.warnings);
        eprintln!("{} (setup for every harness): {} roster skills", harness.binary, delivered.len());
    }
}

/// The suite can fail: a projected skill link broken by hand is missing from what every
/// harness lists, so `check` would not pass.
#[test]
fn a_broken_skill_link_is_missing_from_what_the_harness_lists() {
    let Some((bin, harnesses)) = installed() else { return };
    let estate = estate();
    // Kilo Code's repository skills are copies: there is no link to break.
    for harness in harnesses.into_iter().filter(|harness| !harness.copies_in_repositories()) {
        let work = checkout(&estate, &format!("{}-broken", harness.binary));
        let projected = run_acompose(
            &estate.root,
            &estate.root.join("user"),
            &["project", ROLE, "--layout", harness.layout, "--target", work.to_str().expect("utf-8")],
            &[],
        );
        assert_eq!(projected.code, 0, "{}", projected.stderr);
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(work.join(".agent-compose/projection.json")).expect("record"))
                .expect("json");
        let link = record["files"]
            .as_array()
            .expect("files")
            .iter()
            .filter_map(|file| file.as_str())
            .find(|file| file.ends_with("/machine-cpu"))
            .expect("the machine-cpu link");
        std::fs::remove_file(work.join(link)).expect("unlink");
        std::os::unix::fs::symlink(estate.root.join("nowhere"), work.join(link)).expect("dangling link");
        let home = user_home(&estate, &format!("{}-broken-home", harness.binary));
        discovery::trust(harness, &home, &work);
        let seen = discovery::discover(harness, &bin, &home, &work);
        assert!(!seen.skills.iter().any(|skill| skill == "machine-cpu"), "{}: {:?}", harness.binary, seen.skills);
        assert!(seen.skills.iter().any(|skill| skill == "machine-gpu"), "{}: {:?}", harness.binary, seen.skills);
    }
}

/// A repository projection seen from a nested package folder (`packages/pkg2`, with a
/// skill of its own): each harness lists every role skill once, or — where the harness
/// reads repository skills at its start folder alone (`skill_sight`, Gemini CLI) — none,
/// and `project` said so.
#[test]
fn a_nested_package_folder_sees_each_role_skill_once_or_the_start_folder_rule_is_said() {
    let Some((bin, harnesses)) = installed() else { return };
    let estate = estate();
    for harness in harnesses {
        let work = checkout(&estate, &format!("{}-nested", harness.binary));
        let package = work.join("packages/pkg2");
        write(&package.join("package.json"), "{}\n");
        let layout = acompose_engine::harness_layout::layout(harness.layout).expect("a layout");
        let own_skill = format!("{}/pkg2-own/SKILL.md", layout.repository.skills);
        write(&package.join(own_skill), &skill("pkg2-own"));
        let mut arguments =
            vec!["project", ROLE, "--layout", harness.layout, "--target", work.to_str().expect("utf-8")];
        if harness.copies_in_repositories() {
            arguments.push("--copy");
        }
        let projected = run_acompose(&estate.root, &estate.root.join("user"), &arguments, &[]);
        assert_eq!(projected.code, 0, "{}", projected.stderr);
        let home = user_home(&estate, &format!("{}-nested-home", harness.binary));
        discovery::trust(harness, &home, &work);
        discovery::trust(harness, &home, &package);
        let seen = discovery::discover(harness, &bin, &home, &package);
        let role: Vec<&String> = seen.skills.iter().filter(|skill| estate.role_skills.contains(*skill)).collect();
        let unique: BTreeSet<&String> = role.iter().copied().collect();
        assert_eq!(
            role.len(),
            unique.len(),
            "{}: a role skill listed twice from the package: {role:?}",
            harness.binary
        );
        if acompose_engine::skill_sight::skill_reading(harness.layout).start_folder_only {
            assert!(role.is_empty(), "{}: the documented start-folder rule no longer holds: {role:?}", harness.binary);
            assert!(
                projected.stdout.contains("only in the folder it starts in")
                    || projected.stderr.contains("only in the folder it starts in"),
                "{}: `project` did not say where it reads skills: {}{}",
                harness.binary,
                projected.stdout,
                projected.stderr
            );
            eprintln!("{}: from a nested package, no role skill, as `project` said", harness.binary);
        } else {
            let listed: BTreeSet<String> = unique.into_iter().cloned().collect();
            assert_eq!(listed, estate.role_skills, "{}: the role skills from a nested package", harness.binary);
            eprintln!("{}: from a nested package, each of {} role skills once", harness.binary, listed.len());
        }
    }
}
