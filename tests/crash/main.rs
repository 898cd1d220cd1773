//! Crash consistency: a real `acompose` convergence and a real `compose` are killed with
//! SIGKILL at seeded pseudo-random moments, many times over, on a small generated estate.
//! After each kill: every indexed bundle verifies, the index, the plan and `person.json`
//! are all of the previous generation or all of the new one, `person.json` parses, a
//! recovery run succeeds, the run after it writes nothing, and nothing is left over.
//! `project` and `unproject` beside a git repository's tracked files are killed too, each
//! followed by one run of the tool, after which the projection is whole or wholly gone.
//! Times are used only to choose when to kill, never asserted.
//!
//! A binary of its own: its kills are aimed within the measured length of a run, which
//! the other suites' parallel load would stretch unpredictably if they shared a process.

#[path = "../it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{change_estate, debris, generated_estate, generation, unused_space};

/// How many convergences and composes are killed.
const CONVERGENCE_KILLS: usize = 50;
const COMPOSE_KILLS: usize = 20;

/// A small deterministic generator (xorshift64*): the same kill moments on every run.
struct Moments(u64);

impl Moments {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A moment between zero and `span`.
    fn within(&mut self, span: Duration) -> Duration {
        let micros = u64::try_from(span.as_micros()).unwrap_or(u64::MAX).max(1);
        Duration::from_micros(self.next() % micros)
    }
}

fn command(root: &Path, arguments: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
    command
        .args(arguments)
        .current_dir(root)
        .env_remove("ACOMPOSE_HOME")
        .env_remove("PROJECTS_ROOT")
        .env("NO_COLOR", "1")
        .env("HOME", root.join("no-home"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

const BARE: [&str; 4] = ["--home", "home", "--projects-root", "projects"];

/// Runs to the end; returns (exit code, stdout, stderr).
fn run(root: &Path, arguments: &[&str]) -> (i32, String, String) {
    let output = command(root, arguments).output().expect("run acompose");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Starts a run and kills it with SIGKILL after `moment` (unless it finished first).
fn kill_after(root: &Path, arguments: &[&str], moment: Duration) -> bool {
    let mut child: Child = command(root, arguments).spawn().expect("spawn acompose");
    std::thread::sleep(moment);
    let finished = child.try_wait().expect("poll").is_some();
    if !finished {
        child.kill().expect("SIGKILL");
    }
    child.wait().expect("reap");
    !finished
}

/// The index and the plan must name the same roles (the index names their bundles).
fn assert_index_matches_plan(home: &Path, context: &str) {
    let (Ok(index), Ok(plan)) =
        (std::fs::read(home.join("bundles/index.json")), std::fs::read(home.join("repository-plan.json")))
    else {
        return;
    };
    let index = acompose_engine::convergence::parse_index(&index).expect("the index parses");
    let plan: serde_json::Value = serde_json::from_slice(&plan).expect("the plan parses");
    let indexed: Vec<&String> = index.keys().collect();
    let planned: Vec<&String> = plan["roles"].as_object().expect("roles").keys().collect();
    assert_eq!(indexed, planned, "{context}: index and plan name the same roles");
}

/// Whether a kill landed inside the output transaction: its journal is on disk, and the
/// outputs are mid-commit until the next run rolls the journal back.
fn mid_commit(home: &Path) -> bool {
    home.join(acompose_driver::home::transaction::JOURNAL_DIR).exists()
}

fn assert_consistent(home: &Path, context: &str) {
    if let Ok(bytes) = std::fs::read(home.join("bundles/index.json")) {
        let index = acompose_engine::convergence::parse_index(&bytes).expect("the index parses");
        for id in index.values() {
            let verified = acompose_driver::compose::bundle::verify_directory(&home.join("bundles").join(id));
            assert!(verified.is_ok(), "{context}: indexed bundle {id} does not verify: {verified:?}");
        }
    }
    if let Ok(bytes) = std::fs::read(home.join("sources/personality/person.json")) {
        serde_json::from_slice::<serde_json::Value>(&bytes).expect("person.json parses");
    }
    if !mid_commit(home) {
        assert_index_matches_plan(home, context);
    }
}

#[test]
fn killed_convergences_leave_one_generation_and_recover_without_debris() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, projects) = generated_estate(root, 3);
    let (code, _, stderr) = run(root, &BARE);
    assert_eq!(code, 0, "{stderr}");
    // Three convergences of a change, timed: kills land anywhere within the median length
    // (one slow run, on a disk still busy with what earlier suites deleted, would put most
    // kills after the runs end). Rounds go on until enough kills interrupted a run (one
    // that finished first still counts its checks), with a bound.
    let mut spans: Vec<Duration> = (0..3)
        .map(|calibration| {
            change_estate(&home, &projects, 1_000 + calibration);
            let started = Instant::now();
            let (code, _, stderr) = run(root, &BARE);
            assert_eq!(code, 0, "{stderr}");
            started.elapsed()
        })
        .collect();
    spans.sort();
    let span = spans[1];
    let mut moments = Moments(0x5eed_0018);
    let mut interrupted = 0;
    let mut mid_commit_kills = 0;
    let mut torn_kills = 0;
    let mut round = 0;
    while interrupted < CONVERGENCE_KILLS && round < 3 * CONVERGENCE_KILLS {
        round += 1;
        let previous = generation(&home);
        change_estate(&home, &projects, round);
        let context = format!("convergence kill {round}");
        interrupted += usize::from(kill_after(root, &BARE, moments.within(span)));
        assert_consistent(&home, &context);
        let after_kill = generation(&home);
        let torn_until_recovery = mid_commit(&home);
        mid_commit_kills += usize::from(torn_until_recovery);
        let (code, _, stderr) = run(root, &BARE);
        assert_eq!(code, 0, "{context}: the recovery run succeeds: {stderr}");
        let recovered = generation(&home);
        let one_generation = after_kill == previous || after_kill == recovered;
        assert!(torn_until_recovery || one_generation, "{context}: all old or all new: {after_kill:?}");
        torn_kills += usize::from(!one_generation);
        assert_consistent(&home, &context);
        assert_eq!(debris(&home), Vec::<PathBuf>::new(), "{context}: nothing left over");
        // Space comes back: no bundle the index does not name, no store entry no bundle
        // reaches (before the prune was journalled, a kill between removing the old
        // bundles and their entries left up to 40 entries nothing referenced).
        assert_eq!(unused_space(&home), Vec::<String>::new(), "{context}: space came back");
        let (code, stdout, stderr) = run(root, &BARE);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("0 written"), "{context}: the next run writes nothing: {stdout}");
    }
    assert_eq!(interrupted, CONVERGENCE_KILLS, "kills that interrupted a run, in {round} rounds");
    eprintln!(
        "{interrupted} kills in {round} rounds: {mid_commit_kills} inside the output transaction, \
         {torn_kills} of them between its first and last rename"
    );
}

/// How many convergences are killed in the last quarter of their run, where the old
/// bundles are pruned.
const PRUNE_KILLS: usize = 12;

#[test]
fn convergences_killed_while_they_prune_leave_no_store_entry_behind() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, projects) = generated_estate(root, 6);
    let (code, _, stderr) = run(root, &BARE);
    assert_eq!(code, 0, "{stderr}");
    let mut spans: Vec<Duration> = (0..3)
        .map(|calibration| {
            change_estate(&home, &projects, 2_000 + calibration);
            let started = Instant::now();
            let (code, _, stderr) = run(root, &BARE);
            assert_eq!(code, 0, "{stderr}");
            started.elapsed()
        })
        .collect();
    spans.sort();
    let span = spans[1];
    let mut moments = Moments(0x5eed_0034);
    let (mut interrupted, mut round) = (0, 0);
    while interrupted < PRUNE_KILLS && round < 4 * PRUNE_KILLS {
        round += 1;
        change_estate(&home, &projects, 3_000 + round);
        let context = format!("late kill {round}");
        // The last quarter of a run: commit, projections, the prune.
        let moment = span * 3 / 4 + moments.within(span / 4);
        interrupted += usize::from(kill_after(root, &BARE, moment));
        let (code, _, stderr) = run(root, &BARE);
        assert_eq!(code, 0, "{context}: the recovery run succeeds: {stderr}");
        assert_consistent(&home, &context);
        assert_eq!(debris(&home), Vec::<PathBuf>::new(), "{context}: nothing left over");
        assert_eq!(unused_space(&home), Vec::<String>::new(), "{context}: space came back");
    }
    eprintln!("{interrupted} late kills in {round} rounds");
}

/// Every folder in `out` is a whole bundle that verifies; returns how many.
fn assert_out_holds_whole_bundles(out: &Path, context: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(out) else { return 0 };
    let mut bundles = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        let verified = acompose_driver::compose::bundle::verify_directory(&entry.path());
        assert!(verified.is_ok(), "{context}: {name} does not verify: {verified:?}");
        bundles += 1;
    }
    bundles
}

#[test]
fn killed_composes_leave_whole_bundles_and_recover_without_debris() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (_home, projects) = generated_estate(root, 3);
    std::fs::write(
        root.join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"root\" root=\"projects/acme/root\"\n}\n",
    )
    .expect("request");
    let compose = ["compose", "request.kdl", "--out", "out", "--projects-root", "projects"];
    let started = Instant::now();
    let (code, _, stderr) = run(root, &compose);
    assert_eq!(code, 0, "{stderr}");
    let span = started.elapsed() + started.elapsed() / 4;
    std::fs::remove_dir_all(root.join("out")).expect("a fresh out folder");
    let mut moments = Moments(0x5eed_c0de);
    for round in 1..=COMPOSE_KILLS {
        let skill = projects.join("example/repo0/.agents/skills/skill0-alpha/SKILL.md");
        std::fs::write(&skill, format!("---\nname: skill0-alpha\ndescription: Alpha.\n---\n\nRound {round}.\n"))
            .expect("edit");
        let context = format!("compose kill {round}");
        kill_after(root, &compose, moments.within(span));
        let before = assert_out_holds_whole_bundles(&root.join("out"), &context);
        let (code, _, stderr) = run(root, &compose);
        assert_eq!(code, 0, "{context}: the recovery compose succeeds: {stderr}");
        let after = assert_out_holds_whole_bundles(&root.join("out"), &context);
        assert!(after >= before.max(1), "{context}: the bundle is there");
        assert_eq!(debris(&root.join("out")), Vec::<PathBuf>::new(), "{context}: nothing left over");
    }
}

/// Kills of `project` and `unproject` beside tracked files of a git repository. Linux
/// only: the `git` a killed run started is waited for as a child of this process, a
/// child subreaper (`PR_SET_CHILD_SUBREAPER`).
#[cfg(target_os = "linux")]
mod projection_kills {
    use super::*;

    /// How many `project` and `unproject` runs are killed (plain and `--copy`).
    const PROJECTION_KILLS: usize = 200;

    const PROJECTION_ROLES: &str = "roles {\n    role platform { mcp-server \"docs\"; }\n}\n";
    const PROJECTION_INVENTORY: &str = "server \"docs\" {\n    url \"https://docs.example.com/mcp\"\n}\n";
    const USER_CLAUDE: &str = "# How we work\n\nTabs, not spaces.\n";
    const USER_MCP: &str =
        "{\n    \"mcpServers\": {\n        \"mine\": {\n            \"command\": \"my-server\"\n        }\n    }\n}\n";

    /// Starts a run in a process group of its own, kills it with SIGKILL after `moment`
    /// (unless it finished first), and waits for every process of the group: the `git` a
    /// killed run had started lives on, and holds git's locks until it ends. The test
    /// process is a child subreaper, so those processes become its children when the run
    /// dies, and are waited for.
    fn kill_group_after(root: &Path, arguments: &[&str], moment: Duration) -> bool {
        use std::os::unix::process::CommandExt as _;
        let mut child: Child = command(root, arguments).process_group(0).spawn().expect("spawn acompose");
        let group = rustix::process::Pid::from_child(&child);
        std::thread::sleep(moment);
        let finished = child.try_wait().expect("poll").is_some();
        if !finished {
            child.kill().expect("SIGKILL");
        }
        child.wait().expect("reap");
        while rustix::process::waitpgid(group, rustix::process::WaitOptions::empty()).is_ok() {}
        !finished
    }

    /// The lines acompose may have left in the repository's own files.
    fn acompose_lines(work: &Path) -> Vec<String> {
        let mut left = Vec::new();
        for file in ["info/exclude", "info/attributes", "config"] {
            let text = std::fs::read_to_string(work.join(".git").join(file)).unwrap_or_default();
            left.extend(text.lines().filter(|line| line.contains("acompose")).map(|line| format!("{file}: {line}")));
        }
        left
    }

    /// Asserts the projection in `work` is whole, or wholly gone; returns whether it is
    /// there and copied (`Some(true)`), there and linked (`Some(false)`), or gone (`None`).
    fn assert_whole_or_gone(work: &Path, context: &str) -> Option<bool> {
        let record = std::fs::read(work.join(".agent-compose/projection.json")).ok();
        let claude = std::fs::read_to_string(work.join("CLAUDE.md")).expect("CLAUDE.md");
        let mcp = std::fs::read_to_string(work.join(".mcp.json")).expect(".mcp.json");
        let status = common::git(work, &["status", "--porcelain", "--untracked-files=all"]);
        let Some(record) = record else {
            assert_eq!(claude, USER_CLAUDE, "{context}: gone: the user's file as committed");
            assert_eq!(mcp, USER_MCP, "{context}: gone: the user's file as committed");
            assert_eq!(status, "", "{context}: gone: nothing for git to see");
            assert_eq!(acompose_lines(work), Vec::<String>::new(), "{context}: gone: no line left");
            assert_eq!(common::git(work, &["ls-files", "-v"]), "H .mcp.json\nH CLAUDE.md\n", "{context}: no mark");
            let left: Vec<String> = walkdir::WalkDir::new(work.join(".claude"))
                .into_iter()
                .flatten()
                .map(|entry| entry.path().display().to_string())
                .collect();
            assert_eq!(left, Vec::<String>::new(), "{context}: gone: no skill left");
            return None;
        };
        let record: serde_json::Value = serde_json::from_slice(&record).expect("the record parses");
        let details = &record["details"];
        assert_eq!(details.get("unprojecting"), None, "{context}: no unproject left half done: {record}");
        assert_eq!(details.get("git"), None, "{context}: no git work left pending: {record}");
        assert!(claude.starts_with(USER_CLAUDE) && claude.contains("acompose: the projected role's"), "{context}");
        assert!(mcp.contains("\"docs\"") && mcp.contains("my-server"), "{context}: {mcp}");
        let copied = details["mode"] == "copy";
        if copied {
            assert!(status.contains(" M CLAUDE.md\n") && status.contains(" M .mcp.json\n"), "{context}: {status}");
            assert_eq!(acompose_lines(work), Vec::<String>::new(), "{context}: copies are not hidden from git");
        } else {
            assert_eq!(status, "", "{context}: linked: git sees nothing of it");
        }
        assert_eq!(common::git(work, &["ls-files", "-v"]), "H .mcp.json\nH CLAUDE.md\n", "{context}: no mark");
        Some(copied)
    }

    #[test]
    fn killed_projections_and_unprojections_leave_a_state_the_next_run_repairs() {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())).expect("a child subreaper");
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        common::write_file(&root.join("projects/acme/root/.agents/roles.kdl"), PROJECTION_ROLES);
        common::write_file(
            &root.join("home/agent-compose.yaml"),
            "operating_context:\n  - acme/root\nprojects_root: ../projects\n",
        );
        common::write_file(&root.join("home/mcp.kdl"), PROJECTION_INVENTORY);
        let (code, _, stderr) = run(root, &["--home", "home"]);
        assert_eq!(code, 0, "{stderr}");
        let work = root.join("work");
        std::fs::create_dir(&work).expect("work");
        common::git(&work, &["init", "--quiet"]);
        common::write_file(&work.join("CLAUDE.md"), USER_CLAUDE);
        common::write_file(&work.join(".mcp.json"), USER_MCP);
        common::git(&work, &["add", "."]);
        common::git(&work, &["commit", "--quiet", "-m", "start"]);

        let project = ["--home", "home", "project", "platform", "--layout", "claude", "--target", "work"];
        let project_copy =
            ["--home", "home", "project", "platform", "--layout", "claude", "--target", "work", "--copy"];
        let unproject = ["--home", "home", "unproject", "--target", "work"];
        let bare = ["--home", "home"];
        let timed = |arguments: &[&str]| {
            let started = Instant::now();
            let (code, _, stderr) = run(root, arguments);
            assert_eq!(code, 0, "{stderr}");
            started.elapsed()
        };
        // Kills land within the shortest of three runs of each command, so that few runs end
        // before their kill on a busy machine (each round costs two runs and a look at git).
        let spans: Vec<(Duration, Duration)> = (0..3).map(|_| (timed(&project), timed(&unproject))).collect();
        let project_span = spans.iter().map(|(project, _)| *project).min().unwrap_or_default();
        let unproject_span = spans.iter().map(|(_, unproject)| *unproject).min().unwrap_or_default();
        eprintln!("project takes {project_span:?}, unproject {unproject_span:?}");

        let mut moments = Moments(0x5eed_0045);
        let (mut interrupted, mut round) = (0, 0);
        let mut state = None;
        let (mut mid_transaction, mut git_pending, mut half_unprojected, mut named) = (0, 0, 0, 0);
        while interrupted < PROJECTION_KILLS && round < 3 * PROJECTION_KILLS {
            round += 1;
            let copy = round % 4 >= 2;
            let forward: &[&str] = if copy { &project_copy } else { &project };
            // Killed: a projection where there is none, else the one there taken out.
            let (killed, span, inverse): (&[&str], Duration, &[&str]) = match state {
                None => (forward, project_span, &unproject),
                Some(copied) => (&unproject, unproject_span, if copied { &project_copy } else { &project }),
            };
            let context = format!("round {round}: {} killed", killed[2]);
            interrupted += usize::from(kill_group_after(root, killed, moments.within(span)));
            let record = std::fs::read_to_string(work.join(".agent-compose/projection.json")).unwrap_or_default();
            mid_transaction += usize::from(work.join(".agent-compose/transaction").exists());
            git_pending += usize::from(record.contains("\"pending\": true") && !record.contains("\"unprojecting\""));
            half_unprojected += usize::from(record.contains("\"unprojecting\": true"));
            let unfinished = work.join(".agent-compose/transaction").exists()
                || record.contains("\"pending\": true")
                || record.contains("\"unprojecting\": true");
            if unfinished && round % 4 == 0 {
                let (_, doctor, _) = run(root, &["--home", "home", "doctor"]);
                assert!(doctor.contains("git for projection"), "{context}: doctor names what is left: {doctor}");
                named += 1;
            }
            // One run of the tool: the same command again, bare `acompose`, or the inverse.
            let next: &[&str] = match round % 3 {
                0 => killed,
                1 => &bare,
                _ => inverse,
            };
            let (code, stdout, stderr) = run(root, next);
            let context = format!("{context} ({stdout}{stderr})");
            let nothing_to_take_out =
                next[2..].first() == Some(&"unproject") && stderr.contains("there is no projection");
            assert!(code == 0 || nothing_to_take_out, "{context}, then `{next:?}`: {stdout}{stderr}");
            state = assert_whole_or_gone(&work, &format!("{context}, then `{next:?}`"));
        }
        assert_eq!(interrupted, PROJECTION_KILLS, "kills that interrupted a run, in {round} rounds");
        let (code, _, stderr) = run(root, &unproject);
        assert!(code == 0 || stderr.contains("there is no projection"), "{stderr}");
        assert_eq!(assert_whole_or_gone(&work, "after the last unproject"), None);
        assert!(!work.join(".agent-compose").exists(), "no record folder left");
        eprintln!(
            "{interrupted} kills of project and unproject in {round} rounds: {mid_transaction} inside a transaction, \
             {git_pending} with git's files pending, {half_unprojected} in an unproject past its transaction; \
             doctor named what was left {named} times"
        );
    }
}
