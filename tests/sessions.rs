//! People sessions with fake runners: small shell scripts on a `PATH` of the test's own,
//! started through the host (`acompose_host::people::session_runner`) and through the
//! real binary. Each script records its arguments, environment and working folder
//! outside the workspace, so the test can compare them with the review and check that
//! the one-time task reached argv and no file of the workspace.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acompose_engine::people::document::person_bytes;
use acompose_engine::people::runner::RUNNERS;
use acompose_engine::people::session::{SessionRecord, Status, Timestamp, record_bytes};
use acompose_engine::people::{Isolation, Person};
use acompose_host::people::process;
use acompose_host::people::session_runner::{LaunchOptions, start_session};
use acompose_host::people::sessions::{
    Clock, FixedClock, StartOptions, discover_runners, list_sessions, review_session, stop_session,
};
use acompose_host::people::{Stop, Workspace};
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
fn drain(handle: &acompose_host::people::session_runner::SessionHandle) {
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
