//! Sessions hosted in the workspace's own tmux server, with fake runners: they outlive
//! the `people start` that started them (SIGHUP, SIGTERM, SIGKILL), `people attach`
//! reaches them through a terminal, `people stop` ends them, `max_seconds` is enforced
//! with nobody attached, and killing the tmux server makes them `interrupted`. Every
//! wait is on the programs' own words: a line of the starter, the runner's output through
//! a terminal, a tmux control client's `%exit`, a process's exit.
//!
//! Each test has its own workspace, hence its own tmux socket; none touches the user's
//! default tmux server.

#![cfg(target_os = "linux")]

use std::fs;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use acompose_people::Person;
use acompose_people::document::person_bytes;
use tempfile::TempDir;

/// A workspace at `ws/` with Pam, `ws/projects/desk` linked to `project/`, fake runners
/// in `bin/`.
struct Sandbox {
    root: TempDir,
}

impl Drop for Sandbox {
    /// Ends the test's tmux server, if one is left.
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).stderr(Stdio::null()).status();
    }
}

impl Sandbox {
    fn new(person: Person) -> Self {
        let root = tempfile::tempdir().expect("a temporary folder");
        for folder in ["ws/people", "ws/projects", "project", "bin"] {
            fs::create_dir_all(root.path().join(folder)).expect("create a folder");
        }
        std::os::unix::fs::symlink(root.path().join("project"), root.path().join("ws/projects/desk"))
            .expect("link the project");
        fs::write(root.path().join(format!("ws/people/{}.json", person.id)), person_bytes(&person))
            .expect("write a Person");
        Sandbox { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn runner(&self, binary: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.path(&format!("bin/{binary}"));
        fs::write(&path, format!("#!/bin/sh\necho $$ > '{}'\n{body}\n", self.path("pid").display()))
            .expect("a fake runner");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("executable");
    }

    fn path_variable(&self) -> String {
        format!("{}:/usr/bin:/bin", self.path("bin").display())
    }

    /// `acompose people ARGS --workspace ws`, not yet run.
    fn command(&self, arguments: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
        command
            .arg("people")
            .args(arguments)
            .arg("--workspace")
            .arg(self.path("ws"))
            .current_dir(self.root.path())
            .env("PATH", self.path_variable())
            .env("HOME", self.path("no-home"))
            .env("NO_COLOR", "1")
            .env_remove("TMUX")
            .env_remove("ACOMPOSE_HOME");
        command
    }

    fn people(&self, arguments: &[&str]) -> std::process::Output {
        self.command(arguments).stdin(Stdio::null()).output().expect("run acompose")
    }

    /// A tmux command on the workspace's own server.
    fn tmux(&self, arguments: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(self.path("ws/.agent-toolkit/tmux/server")).args(arguments).env_remove("TMUX");
        command
    }

    /// Starts `people start pam …` without a terminal and waits for its line naming the
    /// running session; returns the starter and the session id.
    fn start(&self) -> (Child, String) {
        let mut starter = self
            .command(&["start", "pam", "--project", "desk", "--runner", "claude"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the starter");
        let stderr = starter.stderr.take().expect("its stderr");
        let mut lines = BufReader::new(stderr).lines();
        let id = loop {
            let line = lines.next().expect("the starter names the session").expect("a line");
            if let Some(rest) = line.strip_prefix("session ")
                && line.contains(" is running in tmux")
            {
                break rest.split(' ').next().unwrap_or_default().to_owned();
            }
        };
        // The rest of its stderr is drained so the starter never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        (starter, id)
    }

    /// The session's entry in `people sessions --json`.
    fn entry(&self, id: &str) -> serde_json::Value {
        let listed = self.people(&["sessions", "--json"]);
        assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
        let document: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
        document["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|entry| entry["id"] == id).cloned())
            .expect("listed")
    }

    /// A tmux control client on the session: its output ends with `%exit` when the
    /// session ends.
    fn control_client(&self, id: &str) -> Child {
        self.tmux(&["-C", "attach-session", "-t", &format!("={id}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("a control client")
    }

    fn runner_pid(&self) -> u32 {
        fs::read_to_string(self.path("pid")).expect("the runner's pid").trim().parse().expect("a pid")
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z ")
}

fn signal(child: &Child, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).expect("a pid")).expect("a pid");
    rustix::process::kill_process(pid, signal).expect("signal the starter");
}

fn pam() -> Person {
    Person::new("pam", "Pam", "reception", "Keep the desk running.")
}

/// Reads a terminal's output on a thread; `until` waits for a text to appear.
struct Screen {
    received: mpsc::Receiver<Vec<u8>>,
    seen: String,
}

impl Screen {
    fn new(mut reader: Box<dyn std::io::Read + Send>) -> Self {
        let (sender, received) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(count) = reader.read(&mut buffer) {
                if count == 0 || sender.send(buffer[..count].to_vec()).is_err() {
                    break;
                }
            }
        });
        Screen { received, seen: String::new() }
    }

    fn until(&mut self, needle: &str) {
        while !self.seen.contains(needle) {
            let bytes =
                self.received.recv().unwrap_or_else(|_| panic!("the terminal closed before {needle:?}: {}", self.seen));
            self.seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
}

#[test]
fn a_session_outlives_sighup_and_sigterm_of_its_starter_and_attach_reaches_it() {
    for hangup in [rustix::process::Signal::HUP, rustix::process::Signal::TERM] {
        let sandbox = Sandbox::new(pam());
        sandbox.runner("claude", "echo ready\nwhile read line; do echo \"got [$line]\"; done");
        let (mut starter, id) = sandbox.start();
        signal(&starter, hangup);
        let status = starter.wait().expect("the starter ends");
        assert!(status.success(), "{hangup:?}: {status:?}");
        let entry = sandbox.entry(&id);
        assert_eq!(entry["status"], "running", "{hangup:?}: {entry}");
        assert_eq!(entry["host"], "tmux");
        let pid = sandbox.runner_pid();
        assert!(alive(pid), "{hangup:?}: the runner died with its starter");
        attach_types_and_detaches(&sandbox, &id);
        assert_eq!(sandbox.entry(&id)["status"], "running", "detaching ends nothing");
        let stop = sandbox.people(&["stop", &id]);
        assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
        assert_eq!(sandbox.entry(&id)["status"], "stopped");
        assert!(!alive(pid), "people stop left the runner");
    }
}

/// `people attach` in a terminal: the runner's greeting is on the screen, a line typed
/// reaches it, Ctrl-b d detaches.
fn attach_types_and_detaches(sandbox: &Sandbox, id: &str) {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let pair = native_pty_system()
        .openpty(PtySize { rows: 30, cols: 100, pixel_width: 0, pixel_height: 0 })
        .expect("a pseudo-terminal");
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_acompose"));
    command.args(["people", "attach", id, "--workspace"]);
    command.arg(sandbox.path("ws"));
    command.cwd(sandbox.path(""));
    command.env("PATH", sandbox.path_variable());
    command.env("NO_COLOR", "1");
    command.env("TERM", "xterm");
    command.env_remove("TMUX");
    let mut attach = pair.slave.spawn_command(command).expect("people attach");
    drop(pair.slave);
    let mut screen = Screen::new(pair.master.try_clone_reader().expect("a reader"));
    let mut keys = pair.master.take_writer().expect("a writer");
    screen.until("ready");
    keys.write_all(b"hello attach\r").expect("type");
    keys.flush().expect("flush");
    screen.until("got [hello attach]");
    keys.write_all(b"\x02d").expect("Ctrl-b d");
    keys.flush().expect("flush");
    let status = attach.wait().expect("attach ends");
    assert!(status.success(), "{}", screen.seen);
    screen.until("keeps running in tmux");
}

#[test]
fn a_session_outlives_a_killed_starter_and_a_killed_tmux_server_makes_it_interrupted() {
    let sandbox = Sandbox::new(pam());
    sandbox.runner("claude", "echo ready\nsleep 600");
    let (mut starter, id) = sandbox.start();
    starter.kill().expect("kill the starter");
    starter.wait().expect("collect it");
    assert_eq!(sandbox.entry(&id)["status"], "running");
    // The tmux server dies at once (SIGKILL), as in a crash: its socket file stays, and no
    // tmux session is left. (`tmux kill-server` would wait on the killed starter's
    // orphaned control client.)
    let pid = sandbox.tmux(&["display-message", "-p", "#{pid}"]).output().expect("the server's pid");
    let pid: i32 = String::from_utf8_lossy(&pid.stdout).trim().parse().expect("a pid");
    let server = rustix::process::Pid::from_raw(pid).expect("a pid");
    rustix::process::kill_process(server, rustix::process::Signal::KILL).expect("kill the tmux server");
    let entry = sandbox.entry(&id);
    assert_eq!(entry["status"], "interrupted", "{entry}");
    assert_eq!(entry["exit_code"], serde_json::Value::Null);
}

#[test]
fn max_seconds_is_enforced_with_nobody_attached() {
    let mut person = pam();
    person.budget.max_seconds = Some(4);
    let sandbox = Sandbox::new(person);
    sandbox.runner("claude", "echo ready\nsleep 600");
    let (mut starter, id) = sandbox.start();
    let mut watcher = sandbox.control_client(&id);
    signal(&starter, rustix::process::Signal::HUP);
    assert!(starter.wait().expect("the starter ends").success());
    assert_eq!(sandbox.entry(&id)["status"], "running");
    let pid = sandbox.runner_pid();
    // The control client's output ends when the tmux session does.
    let mut output = String::new();
    watcher.stdout.take().expect("its output").read_to_string(&mut output).expect("read");
    watcher.wait().expect("the client ends");
    assert!(output.contains("%exit"), "{output}");
    let entry = sandbox.entry(&id);
    assert_eq!(entry["status"], "timed_out", "{entry}");
    assert!(!alive(pid), "the runner outlived its time limit");
}

#[test]
fn without_tmux_the_review_says_so_and_the_session_runs_in_the_starters_terminal() {
    let sandbox = Sandbox::new(pam());
    sandbox.runner("claude", "echo hello from the runner");
    // Only the fake runners: no tmux on PATH.
    let run = sandbox
        .command(&["start", "pam", "--project", "desk", "--runner", "claude"])
        .env("PATH", sandbox.path("bin"))
        .stdin(Stdio::null())
        .output()
        .expect("run acompose");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("host:          this command's terminal: tmux is not installed"), "{stdout}");
    assert!(stdout.contains("hello from the runner"), "{stdout}");
    let listed = sandbox.command(&["sessions", "--json"]).env("PATH", sandbox.path("bin")).output().expect("list");
    let document: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(document["sessions"][0]["status"], "completed");
    assert_eq!(document["sessions"][0]["host"], serde_json::Value::Null);
    let hosted = sandbox.people(&["start", "pam", "--project", "desk", "--runner", "claude", "--dry-run", "--json"]);
    let review: serde_json::Value = serde_json::from_slice(&hosted.stdout).expect("JSON");
    assert_eq!(review["host"], "tmux");
}

#[test]
fn a_swarm_run_outlives_its_starter_and_swarm_stop_ends_it() {
    let sandbox = Sandbox::new(pam());
    sandbox.runner("claude", "echo ready\nsleep 600");
    fs::write(sandbox.path("swarm.yaml"), "spec: acompose/people-recipe@1\nroles:\n  - role: reception\n")
        .expect("a recipe");
    let mut starter = sandbox
        .command(&["swarm", "start"])
        .arg(sandbox.path("swarm.yaml"))
        .args(["--project", "desk", "--runner", "claude"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the run");
    let stdout = starter.stdout.take().expect("its stdout");
    let mut lines = BufReader::new(stdout).lines();
    let run = loop {
        let line = lines.next().expect("the starter names the run").expect("a line");
        if let Some(rest) = line.strip_prefix("run ")
            && line.contains(" sessions in tmux")
        {
            break rest.split(' ').next().unwrap_or_default().to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    signal(&starter, rustix::process::Signal::HUP);
    starter.wait().expect("the starter ends");
    let shown = sandbox.people(&["swarm", "show", &run, "--json"]);
    let document: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(document["roles"][0]["status"], "running", "{document}");
    let pid = sandbox.runner_pid();
    assert!(alive(pid), "the run died with its starter");
    let stop = sandbox.people(&["swarm", "stop", &run]);
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    let shown = sandbox.people(&["swarm", "show", &run, "--json"]);
    let document: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(document["roles"][0]["status"], "stopped", "{document}");
    assert!(!alive(pid));
}
