//! Crash consistency: a real `acompose` convergence and a real `compose` are killed with
//! SIGKILL at seeded pseudo-random moments, many times over, on a small generated estate.
//! After each kill: every indexed bundle verifies, the index, the plan and `person.json`
//! are all of the previous generation or all of the new one, `person.json` parses, a
//! recovery run succeeds, the run after it writes nothing, and nothing is left over.
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

/// The role → bundle map of the index and of the plan must be the same map.
fn assert_index_matches_plan(home: &Path, context: &str) {
    let (Ok(index), Ok(plan)) =
        (std::fs::read(home.join("bundles/index.json")), std::fs::read(home.join("repository-plan.json")))
    else {
        return;
    };
    let index = acompose_engine::convergence::parse_index(&index).expect("the index parses");
    let plan: serde_json::Value = serde_json::from_slice(&plan).expect("the plan parses");
    let planned: std::collections::BTreeMap<String, String> = plan["roles"]
        .as_object()
        .expect("roles")
        .iter()
        .map(|(role, entry)| (role.clone(), entry["bundle"].as_str().expect("bundle").to_owned()))
        .collect();
    assert_eq!(index, planned, "{context}: index and plan name the same bundles");
}

/// Whether a kill landed inside the output transaction: its journal is on disk, and the
/// outputs are mid-commit until the next run rolls the journal back.
fn mid_commit(home: &Path) -> bool {
    home.join(acompose_driver::transaction::JOURNAL_DIR).exists()
}

fn assert_consistent(home: &Path, context: &str) {
    if let Ok(bytes) = std::fs::read(home.join("bundles/index.json")) {
        let index = acompose_engine::convergence::parse_index(&bytes).expect("the index parses");
        for id in index.values() {
            let verified = acompose_driver::bundle::verify_directory(&home.join("bundles").join(id));
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
        let verified = acompose_driver::bundle::verify_directory(&entry.path());
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
