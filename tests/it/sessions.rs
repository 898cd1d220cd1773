//! People sessions with fake runners: small shell scripts on a `PATH` of the test's own,
//! started through the host (`acompose_driver::people::session_runner`) and through the
//! real binary. Each script records its arguments, environment and working folder
//! outside the workspace, so the test can compare them with the review and check that
//! the one-time task reached argv and no file of the workspace.

#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acompose_people::Person;
use acompose_people::document::person_bytes;
use acompose_people::runner::RUNNERS;
use acompose_people::session::{SessionRecord, Status, Timestamp, record_bytes};

use acompose_driver::people::process;
use acompose_driver::people::session_runner::{LaunchOptions, start_session};
use acompose_driver::people::sessions::{
    Clock, FixedClock, StartOptions, discover_runners, list_sessions, review_session, stop_session,
};
use acompose_driver::people::{Stop, Workspace};
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------
// Helpers

/// A temporary root with a workspace at `ws/`, a project folder linked as
/// `ws/projects/desk`, fake runners in `bin/` and their reports in `out/`.
struct Sandbox {
    root: TempDir,
}

const TASK: &str = "Order exactly 17 reams of paper";

impl Sandbox {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary folder");
        for folder in ["ws/people", "ws/projects", "project", "bin", "out"] {
            fs::create_dir_all(root.path().join(folder)).expect("create a folder");
        }
        std::os::unix::fs::symlink(root.path().join("project"), root.path().join("ws/projects/desk"))
            .expect("link the project");
        let sandbox = Sandbox { root };
        sandbox.person(Person::new("pam", "Pam", "reception", "Keep the desk running."));
        sandbox
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(&self.path("ws")).expect("the workspace opens")
    }

    fn person(&self, person: Person) {
        fs::write(self.path(&format!("ws/people/{}.json", person.id)), person_bytes(&person)).expect("write a Person");
    }

    /// A fake runner `bin/<binary>` that records `$0`, its arguments (NUL-separated), its
    /// environment hints and folder, then runs `body`.
    fn runner(&self, binary: &str, body: &str) {
        let out = self.path("out");
        let script = format!(
            "#!/bin/sh\nprintf '%s' \"$0\" > '{out}/argv0'\n: > '{out}/args'\nfor a in \"$@\"; do printf '%s\\0' \"$a\" >> '{out}/args'; done\n\
             printf '%s\\n' \"$AGENT_TOOLKIT_PERSON_ID\" \"$AGENT_TOOLKIT_SESSION_ID\" \"$(pwd -P)\" > '{out}/env'\n{body}\n",
            out = out.display()
        );
        let path = self.path(&format!("bin/{binary}"));
        fs::write(&path, script).expect("write a fake runner");
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("make it executable");
    }

    fn path_variable(&self) -> std::ffi::OsString {
        self.path("bin").into_os_string()
    }

    fn options(&self, runner: &str) -> StartOptions {
        StartOptions {
            person_id: "pam".to_owned(),
            project_id: "desk".to_owned(),
            runner: runner.to_owned(),
            model: None,
            task: Some(TASK.to_owned()),
            roster: None,
            conversation: None,
        }
    }

    /// Reviews and runs a session to its end with a fixed clock.
    fn run(&self, runner: &str, grace: Duration) -> (Vec<String>, SessionRecord, bool) {
        let path_variable = self.path_variable();
        let reviewed =
            review_session(&self.workspace(), &self.options(runner), Some(&path_variable)).expect("the review passes");
        let options = LaunchOptions { grace, ..LaunchOptions::default() };
        let handle = start_session(&self.workspace(), &reviewed, &options, clock()).expect("the session starts");
        assert_eq!(handle.record().status, Status::Running);
        drain(&handle);
        let finished = handle.wait().expect("the session ends");
        (reviewed.review.argv, finished.record, finished.group_empty)
    }

    fn recorded_args(&self) -> Vec<String> {
        let bytes = fs::read(self.path("out/args")).unwrap_or_default();
        bytes
            .split(|byte| *byte == 0)
            .filter(|part| !part.is_empty())
            .map(|part| String::from_utf8_lossy(part).into_owned())
            .collect()
    }

    fn records(&self) -> Vec<SessionRecord> {
        list_sessions(&self.workspace(), &FixedClock(later())).map(|listing| listing.records).unwrap_or_default()
    }

    /// Every file under the workspace with its bytes, for before/after comparisons.
    fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut folders = vec![self.path("ws")];
        while let Some(folder) = folders.pop() {
            for entry in fs::read_dir(&folder).into_iter().flatten().flatten() {
                let path = entry.path();
                let kind = fs::symlink_metadata(&path).map(|metadata| metadata.file_type());
                if kind.as_ref().is_ok_and(|kind| kind.is_dir()) {
                    folders.push(path);
                } else if kind.is_ok_and(|kind| kind.is_file()) {
                    let bytes = fs::read(&path).unwrap_or_default();
                    files.push((path, bytes));
                } else {
                    files.push((path, Vec::new()));
                }
            }
        }
        files.sort();
        files
    }
}

fn started() -> Timestamp {
    Timestamp::parse("2026-12-01T09:00:00Z").expect("a timestamp")
}

fn later() -> Timestamp {
    Timestamp::parse("2026-12-01T10:00:00Z").expect("a timestamp")
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(FixedClock(started()))
}

/// Reads the terminal until it closes, so a chatty runner never blocks on a full PTY.
fn drain(handle: &acompose_driver::people::session_runner::SessionHandle) {
    if let Ok(mut reader) = handle.reader() {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
    }
}

/// Whether `pid` can still run (a zombie cannot).
fn alive(pid: u32) -> bool {
    process::stat(pid).ok().flatten().is_some_and(|stat| !matches!(stat.state, 'Z' | 'X'))
}

fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

// ---------------------------------------------------------------------------------------
// The runner's outcome

#[test]
fn a_runner_that_exits_0_completes_in_the_project_with_the_hints() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "exit 0");
    let (_, record, group_empty) = sandbox.run("claude", Duration::from_secs(2));
    assert_eq!((record.status, record.exit_code), (Status::Completed, Some(0)));
    assert!(group_empty);
    assert!(record.pid.is_some() && record.pid_start.is_some());
    let env = fs::read_to_string(sandbox.path("out/env")).unwrap_or_default();
    let project = fs::canonicalize(sandbox.path("project")).expect("the project folder");
    assert_eq!(env, format!("pam\n{}\n{}\n", record.id, project.display()));
    assert_eq!(record.cwd, project.display().to_string());
    assert_eq!(sandbox.records(), vec![record]);
}

#[test]
fn a_runner_that_exits_3_fails_with_exit_code_3() {
    let sandbox = Sandbox::new();
    sandbox.runner("codex", "exit 3");
    let (_, record, _) = sandbox.run("codex", Duration::from_secs(2));
    assert_eq!((record.status, record.exit_code), (Status::Failed, Some(3)));
    assert_eq!(record.ended_at, Some(started()));
}

#[test]
fn a_runner_past_max_seconds_times_out_and_nothing_of_its_group_survives() {
    let sandbox = Sandbox::new();
    let mut pam = Person::new("pam", "Pam", "reception", "Keep the desk running.");
    pam.budget.max_seconds = Some(2);
    sandbox.person(pam);
    let out = sandbox.path("out");
    // The child ignores SIGTERM, so only the SIGKILL after the grace period ends it.
    sandbox.runner(
        "gemini",
        &format!(
            "sh -c 'trap \"\" TERM HUP; exec sleep 60' &\necho $! > '{out}/child'\necho $$ > '{out}/runner'\nsleep 60",
            out = out.display()
        ),
    );
    let (_, record, group_empty) = sandbox.run("gemini", Duration::from_secs(1));
    assert_eq!(record.status, Status::TimedOut);
    assert!(group_empty);
    let runner = read_pid(&out.join("runner")).expect("the runner wrote its pid");
    let child = read_pid(&out.join("child")).expect("the runner wrote its child's pid");
    assert!(!alive(runner), "the runner survived");
    assert!(!alive(child), "the runner's child survived");
}

#[test]
fn the_runner_receives_exactly_the_reviewed_argv_for_every_row_and_the_task_stays_out_of_files() {
    for row in RUNNERS {
        let sandbox = Sandbox::new();
        sandbox.runner(row.binary, "exit 0");
        let path_variable = sandbox.path_variable();
        let mut options = sandbox.options(row.name);
        options.model = row.model_flag.map(|_| "model-1.5".to_owned());
        let reviewed = review_session(&sandbox.workspace(), &options, Some(&path_variable)).expect("the review passes");
        let handle = start_session(&sandbox.workspace(), &reviewed, &LaunchOptions::default(), clock())
            .expect("the session starts");
        drain(&handle);
        let finished = handle.wait().expect("the session ends");
        assert_eq!(finished.record.status, Status::Completed, "{}", row.name);
        let argv = &reviewed.review.argv;
        assert_eq!(argv.first().map(String::as_str), Some(row.binary));
        assert_eq!(sandbox.recorded_args(), argv[1..].to_vec(), "{}", row.name);
        let argv0 = fs::read_to_string(sandbox.path("out/argv0")).unwrap_or_default();
        assert_eq!(Path::new(&argv0), reviewed.program.as_path(), "{}", row.name);
        assert_eq!(reviewed.program, sandbox.path(&format!("bin/{}", row.binary)));
        if reviewed.review.prompt_in_argv {
            assert!(argv.iter().any(|argument| argument.contains(TASK)), "{}", row.name);
        }
        for (path, bytes) in sandbox.snapshot() {
            let found = bytes.windows(TASK.len()).any(|window| window == TASK.as_bytes());
            assert!(!found, "the task was written to {}", path.display());
        }
    }
}

#[test]
fn a_stopper_or_people_stop_ends_the_session_as_stopped() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "sleep 60");
    let path_variable = sandbox.path_variable();
    let reviewed =
        review_session(&sandbox.workspace(), &sandbox.options("claude"), Some(&path_variable)).expect("a review");
    let options = LaunchOptions { grace: Duration::from_secs(1), ..LaunchOptions::default() };
    let handle = start_session(&sandbox.workspace(), &reviewed, &options, clock()).expect("it starts");
    drain(&handle);
    handle.stopper().stop();
    let finished = handle.wait().expect("it ends");
    assert_eq!(finished.record.status, Status::Stopped);
    assert!(finished.group_empty);

    // From another command: the record says `stopped` first, the launcher keeps it.
    let handle = start_session(&sandbox.workspace(), &reviewed, &options, clock()).expect("it starts");
    drain(&handle);
    let id = handle.id().to_owned();
    let pid = handle.record().pid.expect("a pid");
    let waiter = std::thread::spawn(move || handle.wait());
    let stopped =
        stop_session(&sandbox.workspace(), &id, &FixedClock(later()), Duration::from_secs(1)).expect("stop works");
    assert!(stopped.signalled && stopped.group_empty);
    assert_eq!(stopped.record.status, Status::Stopped);
    let finished = waiter.join().expect("the launcher ends").expect("and records");
    assert_eq!((finished.record.status, finished.record.ended_at.clone()), (Status::Stopped, Some(later())));
    assert!(!alive(pid));
    let again = stop_session(&sandbox.workspace(), &id, &FixedClock(later()), Duration::from_secs(1)).expect("ok");
    assert!(!again.signalled);
    assert!(matches!(
        stop_session(&sandbox.workspace(), "no-such-session", &FixedClock(later()), Duration::from_secs(1)),
        Err(Stop::Invalid(_))
    ));
}

// ---------------------------------------------------------------------------------------
// Reconciliation and hostile records

/// A hand-written `running` record for `pid` started at `pid_start`.
fn running_record(id: &str, pid: u32, pid_start: u64) -> SessionRecord {
    let review_free = acompose_people::session::Launch {
        id: id.to_owned(),
        person_id: "pam".to_owned(),
        person: "Pam".to_owned(),
        role: "reception".to_owned(),
        project_id: "desk".to_owned(),
        cwd: "/tmp".to_owned(),
        provider: "claude".to_owned(),
        model: None,
        started_at: started(),
        links: Default::default(),
    };
    let mut record = SessionRecord::launching(review_free);
    record.mark_running(pid, pid_start).expect("a valid pid");
    record
}

impl Sandbox {
    fn plant(&self, record: &SessionRecord) {
        let folder = self.path("ws/.agent-toolkit/sessions");
        fs::create_dir_all(&folder).expect("the sessions folder");
        fs::write(folder.join(record.file_name()), record_bytes(record)).expect("plant a record");
    }
}

#[test]
fn records_of_gone_or_reused_processes_become_interrupted_on_the_next_list() {
    let sandbox = Sandbox::new();
    let mut exited = std::process::Command::new("true").spawn().expect("spawn true");
    let gone_pid = exited.id();
    exited.wait().expect("reap it");
    let me = std::process::id();
    let my_start = process::stat(me).ok().flatten().expect("this process is visible").start;
    sandbox.plant(&running_record("s-gone", gone_pid, 1));
    sandbox.plant(&running_record("s-reused", me, my_start + 1));
    sandbox.plant(&running_record("s-alive", me, my_start));
    // A runner whose launcher died: it exited and was handed to pid 1, which may never
    // collect it. Its start time still matches, but it is gone.
    let orphan =
        std::process::Command::new("sh").args(["-c", "sleep 0.1 & echo $!"]).output().expect("leave an orphan");
    let orphan_pid: u32 = String::from_utf8_lossy(&orphan.stdout).trim().parse().expect("its pid");
    let orphan_start = process::stat(orphan_pid).ok().flatten().map(|stat| stat.start);
    for _ in 0..200 {
        if process::stat(orphan_pid).ok().flatten().is_none_or(|stat| stat.state == 'Z') {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(start) = orphan_start {
        sandbox.plant(&running_record("s-orphan", orphan_pid, start));
    }
    let listing = list_sessions(&sandbox.workspace(), &FixedClock(later())).expect("a listing");
    let status = |id: &str| listing.records.iter().find(|record| record.id == id).map(|record| record.status);
    assert_eq!(status("s-gone"), Some(Status::Interrupted));
    assert_eq!(status("s-reused"), Some(Status::Interrupted));
    assert_eq!(status("s-alive"), Some(Status::Running));
    let mut interrupted: Vec<&str> = listing.interruptions.iter().map(|item| item.record.id.as_str()).collect();
    interrupted.sort_unstable();
    let expected: &[&str] =
        if orphan_start.is_some() { &["s-gone", "s-orphan", "s-reused"] } else { &["s-gone", "s-reused"] };
    assert_eq!(interrupted, expected);
    // Written to disk: the next listing finds them ended and changes nothing.
    let next = list_sessions(&sandbox.workspace(), &FixedClock(later())).expect("a listing");
    assert!(next.interruptions.is_empty());
    assert_eq!(next.records, listing.records);
}

#[test]
fn hostile_records_are_reported_and_left_alone() {
    let sandbox = Sandbox::new();
    let folder = sandbox.path("ws/.agent-toolkit/sessions");
    sandbox.plant(&running_record("s-good", std::process::id(), 0));
    let good = fs::read(folder.join("s-good.json")).expect("the good record");
    fs::write(folder.join("s-big.json"), vec![b' '; 17 * 1024]).expect("plant");
    let bad_status =
        String::from_utf8_lossy(&good).replace("\"running\"", "\"SECRET-STATUS\"").replace("s-good", "s-bad");
    fs::write(folder.join("s-bad.json"), &bad_status).expect("plant");
    std::os::unix::fs::symlink(folder.join("s-good.json"), folder.join("s-link.json")).expect("plant a link");
    let before = sandbox.snapshot();
    let listing = list_sessions(&sandbox.workspace(), &FixedClock(later())).expect("a listing");
    let codes: Vec<(&str, &str)> =
        listing.findings.iter().map(|finding| (finding.file.as_deref().unwrap_or_default(), finding.code)).collect();
    assert!(codes.contains(&(".agent-toolkit/sessions/s-big.json", "record-too-large")), "{codes:?}");
    assert!(codes.contains(&(".agent-toolkit/sessions/s-bad.json", "invalid-field")), "{codes:?}");
    assert!(codes.contains(&(".agent-toolkit/sessions/s-link.json", "symlink-refused")), "{codes:?}");
    assert!(listing.findings.iter().all(|finding| !finding.message.contains("SECRET")));
    let ids: Vec<&str> = listing.records.iter().map(|record| record.id.as_str()).collect();
    assert_eq!(ids, ["s-good"]);
    // The pid is this process but the start time 0 is not its own: interrupted, and only
    // that record was rewritten.
    let after: std::collections::BTreeMap<PathBuf, Vec<u8>> = sandbox.snapshot().into_iter().collect();
    let before: std::collections::BTreeMap<PathBuf, Vec<u8>> = before.into_iter().collect();
    let lock = folder.join(".acompose.lock");
    let changed: Vec<&PathBuf> =
        after.keys().filter(|path| **path != lock && before.get(*path) != after.get(*path)).collect();
    assert_eq!(changed, vec![&folder.join("s-good.json")]);
    assert!(before.keys().all(|path| after.contains_key(path)));

    // A symlinked sessions folder or toolkit folder stops the listing before anything is read.
    let elsewhere = sandbox.path("elsewhere");
    fs::create_dir_all(&elsewhere).expect("a folder");
    fs::remove_dir_all(sandbox.path("ws/.agent-toolkit")).expect("clear");
    fs::create_dir_all(sandbox.path("ws/.agent-toolkit")).expect("a toolkit folder");
    std::os::unix::fs::symlink(&elsewhere, sandbox.path("ws/.agent-toolkit/sessions")).expect("a link");
    assert!(matches!(list_sessions(&sandbox.workspace(), &FixedClock(later())), Err(Stop::Findings(_))));
    fs::remove_dir_all(sandbox.path("ws/.agent-toolkit")).expect("clear");
    std::os::unix::fs::symlink(&elsewhere, sandbox.path("ws/.agent-toolkit")).expect("a link");
    assert!(matches!(list_sessions(&sandbox.workspace(), &FixedClock(later())), Err(Stop::Findings(_))));
    let path_variable = sandbox.path_variable();
    sandbox.runner("claude", "exit 0");
    let reviewed =
        review_session(&sandbox.workspace(), &sandbox.options("claude"), Some(&path_variable)).expect("a review");
    let started = start_session(&sandbox.workspace(), &reviewed, &LaunchOptions::default(), clock());
    assert!(matches!(started, Err(Stop::Findings(_))));
    assert_eq!(fs::read_dir(&elsewhere).map(Iterator::count).unwrap_or(0), 0, "nothing was written through the link");
}

#[test]
fn runner_discovery_finds_only_executables_on_absolute_path_entries() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "exit 0");
    fs::write(sandbox.path("bin/codex"), "not executable").expect("write");
    let path_variable = std::env::join_paths([PathBuf::from("bin"), sandbox.path("bin")]).expect("a PATH");
    let found = discover_runners(Some(&path_variable));
    let installed: Vec<&str> = found.iter().filter(|row| row.path.is_some()).map(|row| row.runner.name).collect();
    assert_eq!(installed, ["claude"]);
    assert_eq!(found.len(), RUNNERS.len());
    assert!(discover_runners(None).iter().all(|row| row.path.is_none()));
}

// ---------------------------------------------------------------------------------------
// The command line

impl Sandbox {
    /// Runs `acompose people ARGS --workspace ws` with the fake runners first on PATH and
    /// no standard input.
    fn people(&self, arguments: &[&str]) -> common::Output {
        let mut all: Vec<&str> = vec!["people"];
        all.extend_from_slice(arguments);
        let workspace = self.path("ws");
        let workspace = workspace.to_str().expect("a UTF-8 path");
        all.extend_from_slice(&["--workspace", workspace]);
        let path_variable = format!("{}:/usr/bin:/bin", self.path("bin").display());
        common::acompose_with(self.root.path(), &all, &[("PATH", &path_variable)])
    }
}

#[test]
fn people_start_reviews_then_runs_and_people_sessions_lists_it() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "echo hello from the runner; exit 0");
    let run = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "claude", "--task", TASK]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let review_at = run.stdout.find("start review: nothing has run yet").expect("the review is printed");
    let runner_at = run.stdout.find("hello from the runner").expect("the runner's output is forwarded");
    assert!(review_at < runner_at, "the review comes before the runner");
    assert!(run.stdout.contains("Your task for this session: Order exactly 17 reams of paper"));
    assert!(run.stderr.contains(" completed (exit code 0)"), "{}", run.stderr);
    let listed = sandbox.people(&["sessions", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let json: serde_json::Value = serde_json::from_str(&listed.stdout).expect("JSON");
    assert_eq!(json["sessions"][0]["status"], "completed");
    assert_eq!(json["sessions"][0]["exit_code"], 0);
    // Claude Code's conversation was given an id at the start: the session can resume.
    assert_eq!(json["sessions"][0]["resumable"], true);
    let text = sandbox.people(&["sessions"]);
    assert!(text.stdout.contains("1 with a conversation `acompose people resume` can reopen"), "{}", text.stdout);
    for (path, bytes) in sandbox.snapshot() {
        assert!(!bytes.windows(TASK.len()).any(|window| window == TASK.as_bytes()), "{}", path.display());
    }
    let path_variable = format!("{}:/usr/bin:/bin", sandbox.path("bin").display());
    let runners = common::acompose_with(sandbox.root.path(), &["people", "runners"], &[("PATH", &path_variable)]);
    assert_eq!(runners.code, 0);
    assert!(
        runners
            .stdout
            .contains(&format!("claude      claude         argument       {}", sandbox.path("bin/claude").display()))
    );
    assert!(runners.stdout.contains("1 of 6 runners installed"), "{}", runners.stdout);
}

#[test]
fn the_start_review_shows_a_right_to_left_override_escaped() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "exit 0");
    sandbox.person(Person::new("pam", "Pam \u{202e}exe.txt", "reception", "Keep \u{2066}the desk\u{2069} running."));
    let run = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "claude", "--dry-run"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Pam \u{fffd}exe.txt"), "{}", run.stdout);
    for hostile in ['\u{202e}', '\u{2066}', '\u{2069}'] {
        assert!(!run.stdout.contains(hostile) && !run.stderr.contains(hostile), "{}", run.stdout.escape_unicode());
    }
}

#[test]
fn a_project_linked_to_the_root_or_the_home_folder_is_started_only_with_a_warning() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "exit 0");
    // `acompose_with` runs with `HOME` set to `<root>/no-home`.
    fs::create_dir_all(sandbox.path("no-home")).expect("a home folder");
    std::os::unix::fs::symlink("/", sandbox.path("ws/projects/everything")).expect("a link to /");
    std::os::unix::fs::symlink(sandbox.path("no-home"), sandbox.path("ws/projects/home")).expect("a link to home");
    for (project, said) in [("everything", "the project folder is `/`"), ("home", "your home folder")] {
        let run = sandbox.people(&["start", "pam", "--project", project, "--runner", "claude", "--dry-run"]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        // Before: a runner started in `/` without a word.
        assert!(run.stdout.contains("warning:") && run.stdout.contains(said), "{project}: {}", run.stdout);
        let json = sandbox.people(&["start", "pam", "--project", project, "--runner", "claude", "--dry-run", "--json"]);
        let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
        assert_eq!(document["folder_warning"], if project == "home" { "home" } else { "root" });
    }
    let ordinary = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "claude", "--dry-run"]);
    assert!(!ordinary.stdout.contains("warning:"), "{}", ordinary.stdout);
}

#[test]
fn people_start_exits_non_zero_when_the_runner_fails() {
    let sandbox = Sandbox::new();
    sandbox.runner("codex", "exit 3");
    let run = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "codex"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains(" failed (exit code 3)"), "{}", run.stderr);
}

#[test]
fn every_rejected_start_exits_non_zero_with_a_message_and_writes_nothing() {
    let sandbox = Sandbox::new();
    for binary in ["claude", "cursor-agent"] {
        sandbox.runner(binary, "exit 0");
    }
    let mut jan = Person::new("jan", "Jan", "manager", "Manage.");
    jan.archived = true;
    sandbox.person(jan);
    let mut dwight = Person::new("dwight", "Dwight", "sales", "Sell paper.");
    dwight.budget.max_tokens = Some(1000);
    sandbox.person(dwight);
    fs::create_dir_all(sandbox.path("ws/projects/real")).expect("a real folder");
    fs::write(sandbox.path("a-file"), "x").expect("a file");
    std::os::unix::fs::symlink(sandbox.path("a-file"), sandbox.path("ws/projects/file")).expect("a link");
    std::os::unix::fs::symlink(sandbox.path("missing"), sandbox.path("ws/projects/dangling")).expect("a link");
    let cases: [(&[&str], &str); 12] = [
        (&["nobody", "--project", "desk", "--runner", "claude"], "there is no Person `nobody`"),
        (&["jan", "--project", "desk", "--runner", "claude"], "archived"),
        (&["pam", "--project", "desk", "--runner", "vim"], "not in the runner table"),
        (&["pam", "--project", "desk", "--runner", "codex"], "`codex` is not installed"),
        (&["pam", "--project", "real", "--runner", "claude"], "must be a symbolic link"),
        (&["pam", "--project", "file", "--runner", "claude"], "a link to a file"),
        (&["pam", "--project", "dangling", "--runner", "claude"], "does not exist"),
        (&["pam", "--project", "nowhere", "--runner", "claude"], "must be a symbolic link"),
        (&["pam", "--project", "../etc", "--runner", "claude"], "lowercase slug"),
        (&["pam", "--project", "desk", "--runner", "cursor", "--model", "gpt"], "takes no model"),
        (&["pam", "--project", "desk", "--runner", "claude", "--model=-x"], "must be a reference"),
        (&["dwight", "--project", "desk", "--runner", "cursor", "--task", TASK], "--acknowledge-unsupported"),
    ];
    let before = sandbox.snapshot();
    for (arguments, message) in cases {
        let mut all = vec!["start"];
        all.extend_from_slice(arguments);
        let run = sandbox.people(&all);
        assert_ne!(run.code, 0, "{arguments:?} was accepted");
        assert!(run.stderr.contains(message), "{arguments:?}: {}", run.stderr);
        assert_eq!(sandbox.snapshot(), before, "{arguments:?} wrote something");
        assert!(!sandbox.path("out/args").exists(), "{arguments:?} started the runner");
    }
    // The review of unenforceable limits is printed before the refusal (Cursor keeps no
    // usage record acompose follows).
    let run = sandbox.people(&["start", "dwight", "--project", "desk", "--runner", "cursor"]);
    assert!(run.stdout.contains("not enforced:  `budget.max_tokens`"), "{}", run.stdout);
    // A dry run prints the review and writes nothing either.
    let dry = sandbox.people(&["start", "dwight", "--project", "desk", "--runner", "cursor", "--dry-run", "--json"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let json: serde_json::Value = serde_json::from_str(&dry.stdout).expect("JSON");
    assert_eq!(json["unsupported"], serde_json::json!(["budget.max_tokens"]));
    // Claude Code's transcript is followed: its token limit is enforced, not refused.
    let claude = sandbox.people(&["start", "dwight", "--project", "desk", "--runner", "claude", "--dry-run", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&claude.stdout).expect("JSON");
    assert_eq!(
        (json["unsupported"].clone(), json["max_tokens"].clone()),
        (serde_json::json!([]), serde_json::json!(1000))
    );
    let text = sandbox.people(&["start", "dwight", "--project", "desk", "--runner", "claude", "--dry-run"]);
    assert!(
        text.stdout.contains("token limit:   1000 tokens, enforced from Claude Code's transcript"),
        "{}",
        text.stdout
    );
    assert_eq!(sandbox.snapshot(), before);
}

#[test]
fn people_stop_ends_a_session_another_command_started() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "sleep 60");
    let workspace = sandbox.path("ws");
    let path_variable = format!("{}:/usr/bin:/bin", sandbox.path("bin").display());
    let mut launcher = std::process::Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["people", "start", "pam", "--project", "desk", "--runner", "claude", "--workspace"])
        .arg(&workspace)
        .env("PATH", &path_variable)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the launcher");
    let mut running = None;
    for _ in 0..200 {
        running = sandbox.records().into_iter().find(|record| record.status == Status::Running);
        if running.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let record = running.expect("the session is running");
    let stop = sandbox.people(&["stop", &record.id]);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(stop.stdout.contains("stopped"), "{}", stop.stdout);
    let status = launcher.wait().expect("the launcher ends");
    assert_eq!(status.code(), Some(1));
    let records = sandbox.records();
    assert_eq!(records.first().map(|record| record.status), Some(Status::Stopped));
    assert!(!alive(record.pid.expect("a pid")));
    let again = sandbox.people(&["stop", &record.id]);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("is stopped; nothing was stopped"), "{}", again.stderr);
    let unknown = sandbox.people(&["stop", "../x"]);
    assert_eq!(unknown.code, 1);
}

#[test]
fn people_sessions_reports_hostile_records_and_exits_non_zero() {
    let sandbox = Sandbox::new();
    sandbox.plant(&running_record("s-good", 1, 1));
    let folder = sandbox.path("ws/.agent-toolkit/sessions");
    fs::write(folder.join("s-bad.json"), "{\"status\": \"\u{1b}[31mSECRET\"}").expect("plant");
    let run = sandbox.people(&["sessions"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains(".agent-toolkit/sessions/s-bad.json"), "{}", run.stderr);
    assert!(!run.stderr.contains("SECRET") && !run.stderr.contains('\u{1b}'), "{}", run.stderr);
    assert!(run.stdout.contains("s-good"), "{}", run.stdout);
    let json = sandbox.people(&["sessions", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(value["refused_files"], 1);
}

#[test]
fn a_start_reconciles_first_and_a_dropped_handle_stops_its_session() {
    let sandbox = Sandbox::new();
    let mut exited = std::process::Command::new("true").spawn().expect("spawn true");
    let gone_pid = exited.id();
    exited.wait().expect("reap it");
    sandbox.plant(&running_record("s-gone", gone_pid, 1));
    sandbox.runner("claude", "sleep 60");
    let path_variable = sandbox.path_variable();
    let reviewed =
        review_session(&sandbox.workspace(), &sandbox.options("claude"), Some(&path_variable)).expect("a review");
    let options = LaunchOptions { grace: Duration::from_secs(1), ..LaunchOptions::default() };
    let handle = start_session(&sandbox.workspace(), &reviewed, &options, clock()).expect("it starts");
    let folder = sandbox.path("ws/.agent-toolkit/sessions");
    let planted = fs::read_to_string(folder.join("s-gone.json")).unwrap_or_default();
    assert!(planted.contains("\"status\": \"interrupted\""), "{planted}");
    let (id, pid) = (handle.id().to_owned(), handle.record().pid.expect("a pid"));
    drop(handle);
    assert!(!alive(pid), "the runner of a dropped handle survived");
    let record = sandbox.records().into_iter().find(|record| record.id == id).expect("the record");
    assert_eq!(record.status, Status::Stopped);
}

#[test]
fn a_full_sessions_folder_refuses_a_start_and_writes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "exit 0");
    let folder = sandbox.path("ws/.agent-toolkit/sessions");
    fs::create_dir_all(&folder).expect("the sessions folder");
    for index in 0..512 {
        fs::write(folder.join(format!("old-{index}.json")), b"{}").expect("plant");
    }
    let before = sandbox.snapshot();
    let run = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "claude"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("is full"), "{}", run.stderr);
    fs::write(folder.join("old-512.json"), b"{}").expect("plant one more");
    let run = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "claude"]);
    assert!(run.stderr.contains("is full"), "{}", run.stderr);
    let listed = sandbox.people(&["sessions"]);
    assert!(listed.stderr.contains("more than 512 records"), "{}", listed.stderr);
    let after = sandbox.snapshot();
    let lock = folder.join(".acompose.lock");
    let written: Vec<&(PathBuf, Vec<u8>)> = after
        .iter()
        .filter(|file| file.0 != lock && !before.contains(file) && !file.0.ends_with("old-512.json"))
        .collect();
    assert!(written.is_empty(), "{written:?}");
    assert!(!sandbox.path("out/args").exists());
}

#[test]
fn in_a_terminal_keys_and_size_reach_the_runner_and_the_terminal_is_restored() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::{Read as _, Write as _};
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "echo \"size: $(stty size)\"; read line; echo \"got [$line]\"; exit 0");
    let pair = native_pty_system()
        .openpty(PtySize { rows: 33, cols: 101, pixel_width: 0, pixel_height: 0 })
        .expect("a pseudo-terminal");
    let spawn = |arguments: &[&str], program: &str| {
        let mut command = CommandBuilder::new(program);
        command.args(arguments);
        command.cwd(sandbox.path(""));
        command.env("PATH", format!("{}:/usr/bin:/bin", sandbox.path("bin").display()));
        command.env("NO_COLOR", "1");
        pair.slave.spawn_command(command).expect("spawn in the terminal")
    };
    let workspace = sandbox.path("ws").display().to_string();
    let arguments = ["people", "start", "pam", "--project", "desk", "--runner", "claude", "--workspace", &workspace];
    let mut launcher = spawn(&arguments, env!("CARGO_BIN_EXE_acompose"));
    let mut reader = pair.master.try_clone_reader().expect("a reader");
    let mut writer = pair.master.take_writer().expect("a writer");
    let output = Arc::new(std::sync::Mutex::new(Vec::new()));
    let collected = Arc::clone(&output);
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(count) = reader.read(&mut buffer) {
            if count == 0 {
                break;
            }
            if let Ok(mut output) = collected.lock() {
                output.extend_from_slice(&buffer[..count]);
            }
        }
    });
    let text = || output.lock().map(|bytes| String::from_utf8_lossy(&bytes).into_owned()).unwrap_or_default();
    for _ in 0..400 {
        if text().contains("size:") {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    writer.write_all(b"hello\r").expect("type a line");
    writer.flush().expect("flush");
    let status = launcher.wait().expect("the launcher ends");
    assert!(status.success(), "{}", text());
    let mut stty = spawn(&["-a"], "stty");
    assert!(stty.wait().expect("stty ends").success());
    for _ in 0..400 {
        if text().contains("icanon") {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let text = text();
    assert!(text.contains("size: 33 101"), "{text}");
    assert!(text.contains("got [hello]"), "{text}");
    assert!(text.contains(" completed (exit code 0)"), "{text}");
    let settings = text.rsplit("completed").next().unwrap_or_default();
    assert!(settings.contains(" icanon") && settings.contains(" echo "), "not restored: {settings}");
    assert!(!settings.contains("-icanon"), "not restored: {settings}");
}

/// Without tmux on `PATH` the runner lives in its launcher's terminal (with tmux it
/// outlives it: `hosted.rs`).
#[test]
fn without_tmux_a_launcher_killed_mid_session_leaves_a_record_the_next_list_interrupts() {
    let sandbox = Sandbox::new();
    sandbox.runner("claude", "/bin/sleep 60");
    let path_variable = sandbox.path("bin").display().to_string();
    let mut launcher = std::process::Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["people", "start", "pam", "--project", "desk", "--runner", "claude", "--workspace"])
        .arg(sandbox.path("ws"))
        .env("PATH", &path_variable)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the launcher");
    let mut running = None;
    for _ in 0..200 {
        running = sandbox.records().into_iter().find(|record| record.status == Status::Running);
        if running.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let record = running.expect("the session is running");
    launcher.kill().expect("kill the launcher");
    launcher.wait().expect("collect it");
    // Its terminal closed, so the runner got SIGHUP; the next listings see it gone.
    let mut status = None;
    for _ in 0..200 {
        status = sandbox.records().into_iter().find(|found| found.id == record.id).map(|found| found.status);
        if status == Some(Status::Interrupted) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status, Some(Status::Interrupted));
    let pid = record.pid.expect("a pid");
    assert!(!alive(pid));
}
