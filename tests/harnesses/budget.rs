//! `budget.max_tokens` held against the real Claude Code and Codex. A Person of the
//! roster role `platform` with a token limit starts a hosted session (`people start`,
//! so as the role, in its runtime home, inside the workspace's tmux server) of the real
//! harness in its interactive terminal, talking to a loopback model endpoint
//! ([`crate::model`]) that reports the usage the test chooses. The first turn's figures
//! stay below the limit: once the harness has written them to its own usage record and
//! acompose has read that record, the session is still running, and it takes a second
//! prompt typed into its tmux pane. The second turn's figures pass the limit: the session
//! must end `budget_exceeded`, with no process of it left.
//!
//! Every wait is on a signal, with a failsafe deadline: the endpoint receiving a turn's
//! request, the record changing on disk (inotify, through `notify`), the record's reads
//! while the harness is stopped (inotify's `IN_CLOSE_NOWRITE`), the starter's line
//! naming the session and its end.

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use acompose_people::Person;
use acompose_people::document::person_bytes;
use acompose_people::usage;
use notify::Watcher as _;

use crate::model::{ModelEndpoint, Turn};
use crate::{Estate, ROLE, checkout, estate, installed, user_home, write};

/// The Person's `budget.max_tokens`.
const MAX_TOKENS: u64 = 1000;
/// The first turn stays below the limit (400), the second passes it (400 + 700). Each
/// marker is the prompt that starts its turn: the first is the session's task.
const TURNS: [Turn; 2] = [
    Turn { marker: "Report the first figures.", input_tokens: 300, output_tokens: 100 },
    Turn { marker: "Report the second figures.", input_tokens: 500, output_tokens: 200 },
];
/// How long any one signal may take before the test gives up on it.
const FAILSAFE: Duration = Duration::from_secs(300);
/// Whole reads of the record the test waits for while the harness is stopped, so that
/// every read is by acompose's watcher. The watcher reads the record once per look
/// (Claude Code's transcript) or twice (Codex's rollout: its first line for the folder,
/// then its totals), and looks again only when the limit was not reached. Of six reads,
/// two may be the harness's own ending as it stops, one the watcher's begun before the
/// first turn was in the record; the rest hold a whole look begun after it, and the look
/// after that one: the watcher has seen the first turn's figures and let the session go on.
const WATCHER_READS: usize = 6;
/// The key the harnesses send the loopback endpoint.
const API_KEY: &str = "sk-loopback-test-not-a-key-0123456789";
/// The variable Codex's loopback model provider reads its key from.
const KEY_VARIABLE: &str = "ACOMPOSE_LOOPBACK_KEY";

#[test]
fn real_claude_code_ends_budget_exceeded_past_max_tokens_and_not_before() {
    past_max_tokens(Runner::Claude);
}

#[test]
fn real_codex_ends_budget_exceeded_past_max_tokens_and_not_before() {
    past_max_tokens(Runner::Codex);
}

fn past_max_tokens(runner: Runner) {
    let Some((bin, harnesses)) = installed() else { return };
    if !harnesses.iter().any(|harness| harness.binary == runner.name()) {
        return;
    }
    let estate = estate();
    let (sender, signals) = mpsc::channel();
    let requests = sender.clone();
    let endpoint = ModelEndpoint::start(&TURNS, move |turn| {
        let _ = requests.send(Signal::Requested(turn));
    });
    let project = checkout(&estate, "desk");
    let user = user_home(&estate, &format!("{}-budget-user", runner.name()));
    runner.prepare(&user, &project, &endpoint);
    let workspace = workspace(&estate, &project);
    let environment = environment(&estate, &bin, &user, &endpoint);
    let mut session = Session::start(&estate, &workspace, environment, runner, (sender, signals));

    session.requested(0);
    let conversation = session.entry()["conversation"].as_str().map(str::to_owned);
    // `<home>/runtime/<harness>-<role>/`, the runtime home a session as the role runs in
    // (docs/sessions.md), holds the harness's configuration folder under launch.
    let runtime = estate.root.join("acompose-home/runtime").join(format!("{}-{ROLE}", runner.name()));
    let record = Record::watch(runner, runtime.join(runner.config_folder()), conversation);
    endpoint.release(0);
    record.wait_until_it_holds(&TURNS[0]);
    assert_eq!(record.tokens(), 400, "acompose's reading of {}'s record after the first turn", runner.name());
    // A harness may read its own record too (Codex did, after each write): stopped, it
    // cannot, so the reads counted are the watcher's.
    session.signal_runner(rustix::process::Signal::STOP);
    session.wait_for_reads(&record.files(), WATCHER_READS);
    session.signal_runner(rustix::process::Signal::CONT);
    assert_eq!(session.status(), "running", "{} was ended below the limit", runner.name());

    session.type_line(TURNS[1].marker);
    // A session ended at the first turn's figures sends no second request: `requested`
    // fails on its end.
    session.requested(1);
    assert_eq!(session.status(), "running", "{} was ended below the limit", runner.name());
    endpoint.release(1);
    let end = session.wait_for_end();
    assert!(end.contains(" budget_exceeded"), "{}: {end}", runner.name());
    let entry = session.entry();
    assert_eq!(entry["status"], "budget_exceeded", "{}: {entry}", runner.name());
    let left = processes_of(&session.id);
    assert!(left.is_empty(), "{}'s processes outlived its session: {left:?}", runner.name());
    assert!(record.holds(&TURNS[1]), "{} ended before its record held the second turn", runner.name());
    assert_eq!(record.tokens(), 1100, "acompose's reading of {}'s record at the end", runner.name());
    eprintln!("{}: running at 400 of {MAX_TOKENS} tokens, budget_exceeded at 1100", runner.name());
}

/// What the test waits on: the endpoint receiving a turn's request, a line the starter
/// printed on stderr, a whole read of the harness's record by another process.
enum Signal {
    Requested(usize),
    Said(String),
    RecordRead,
}

/// The two runners whose usage record acompose follows.
#[derive(Debug, Clone, Copy)]
enum Runner {
    Claude,
    Codex,
}

impl Runner {
    fn name(self) -> &'static str {
        match self {
            Runner::Claude => "claude",
            Runner::Codex => "codex",
        }
    }

    /// The harness's configuration folder inside the runtime home (`CLAUDE_CONFIG_DIR`,
    /// `CODEX_HOME`), where its usage record lands.
    fn config_folder(self) -> &'static str {
        match self {
            Runner::Claude => ".claude",
            Runner::Codex => ".codex",
        }
    }

    /// The user's own configuration, which the runtime home carries: the model at the
    /// loopback endpoint, and nothing for the interactive terminal to stop at on a first
    /// start in `project`.
    fn prepare(self, user: &Path, project: &Path, endpoint: &ModelEndpoint) {
        let project = project.to_str().expect("utf-8");
        match self {
            // Onboarding done, the key approved (Claude Code keeps its last 20
            // characters), the project's folder trusted: `~/.claude.json`, which a
            // launch links as `$CLAUDE_CONFIG_DIR/.claude.json`.
            Runner::Claude => {
                let key_end = &API_KEY[API_KEY.len() - 20..];
                let state = serde_json::json!({
                    "hasCompletedOnboarding": true,
                    "customApiKeyResponses": { "approved": [key_end], "rejected": [] },
                    "projects": { project: { "hasTrustDialogAccepted": true } }
                });
                write(&user.join(".claude.json"), &state.to_string());
            }
            // A model provider at the endpoint, the project trusted, no update check,
            // and no paste-burst detection (keys typed at once would be a paste, in
            // which Enter is a new line).
            Runner::Codex => {
                let config = format!(
                    "model = \"loopback-model\"\nmodel_provider = \"loopback\"\ncheck_for_update_on_startup = false\n\
                     disable_paste_burst = true\n\n[model_providers.loopback]\nname = \"loopback\"\n\
                     base_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"{KEY_VARIABLE}\"\n\n\
                     [projects.\"{project}\"]\ntrust_level = \"trusted\"\n",
                    endpoint.url
                );
                write(&user.join(".codex/config.toml"), &config);
            }
        }
    }

    /// Whether the record's text holds `turn`'s figures as the harness records a reply:
    /// Claude Code's `assistant` line with the message's `usage`, Codex's `token_count`
    /// event with the turn's `last_token_usage`.
    fn holds(self, text: &str, turn: &Turn) -> bool {
        text.lines().filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok()).any(|line| {
            let usage = match self {
                Runner::Claude if line["type"] == "assistant" => &line["message"]["usage"],
                Runner::Codex if line["type"] == "event_msg" && line["payload"]["type"] == "token_count" => {
                    &line["payload"]["info"]["last_token_usage"]
                }
                _ => return false,
            };
            usage["input_tokens"] == turn.input_tokens && usage["output_tokens"] == turn.output_tokens
        })
    }

    /// The tokens acompose reads in the record's text.
    fn tokens(self, text: &str) -> u64 {
        match self {
            Runner::Claude => usage::claude_transcript_tokens(text),
            Runner::Codex => usage::codex_rollout_tokens(text),
        }
    }
}

/// `<root>/ws`: Pam, of the role, with the token limit, and `projects/desk` linked to
/// `project`.
fn workspace(estate: &Estate, project: &Path) -> PathBuf {
    let workspace = estate.root.join("ws");
    let mut person = Person::new("pam", "Pam", ROLE, "Keep the platform up.");
    person.budget.max_tokens = Some(MAX_TOKENS);
    write(&workspace.join("people/pam.json"), &String::from_utf8(person_bytes(&person)).expect("utf-8"));
    std::fs::create_dir_all(workspace.join("projects")).expect("projects");
    std::os::unix::fs::symlink(project, workspace.join("projects/desk")).expect("link the project");
    workspace
}

/// Everything acompose and the harness see: `user` as the home, the harness folder first
/// on `PATH`, the estate's projects root, both harnesses' model at the endpoint, no
/// telemetry or update checks.
fn environment(estate: &Estate, bin: &Path, user: &Path, endpoint: &ModelEndpoint) -> Vec<(OsString, OsString)> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut folders = vec![bin.to_path_buf()];
    folders.extend(std::env::split_paths(&path));
    let mut environment: Vec<(OsString, OsString)> = vec![
        ("HOME".into(), user.into()),
        ("PATH".into(), std::env::join_paths(folders).expect("PATH")),
        ("PROJECTS_ROOT".into(), estate.root.join("projects").into()),
        ("ANTHROPIC_BASE_URL".into(), endpoint.url.clone().into()),
    ];
    for (name, value) in [
        ("ANTHROPIC_API_KEY", API_KEY),
        (KEY_VARIABLE, API_KEY),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("NO_COLOR", "1"),
        ("TERM", "xterm-256color"),
    ] {
        environment.push((name.into(), value.into()));
    }
    if let Some(temporary) = std::env::var_os("TMPDIR") {
        environment.push(("TMPDIR".into(), temporary));
    }
    environment
}

/// A hosted session and the `people start` that started it, which follows it (its
/// input and output are pipes) and names its end on stderr.
struct Session {
    id: String,
    runner: Runner,
    starter: Child,
    /// Where the starter's lines and the record's reads are sent.
    sender: mpsc::Sender<Signal>,
    signals: Receiver<Signal>,
    /// Signals received that no wait has taken yet.
    pending: Vec<Signal>,
    /// Every line the starter printed on stderr so far.
    said: Vec<String>,
    /// The runner's process group while the test has it stopped.
    stopped: std::cell::Cell<Option<rustix::process::Pid>>,
    /// The workspace's tmux server.
    server: Option<rustix::process::Pid>,
    home: PathBuf,
    workspace: PathBuf,
    environment: Vec<(OsString, OsString)>,
}

impl Session {
    /// Starts the session (its first prompt is the first turn's marker) and waits for the
    /// starter to name it; the starter's lines go to `channel` with the endpoint's.
    fn start(
        estate: &Estate,
        workspace: &Path,
        environment: Vec<(OsString, OsString)>,
        runner: Runner,
        channel: (mpsc::Sender<Signal>, Receiver<Signal>),
    ) -> Session {
        let home = estate.root.join("acompose-home");
        let arguments = ["start", "pam", "--project", "desk", "--runner", runner.name(), "--task", TURNS[0].marker];
        let mut starter = people(&home, workspace, &environment, &arguments)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the starter");
        let stderr = starter.stderr.take().expect("its stderr");
        let (sender, signals) = channel;
        let lines = sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if lines.send(Signal::Said(line)).is_err() {
                    break;
                }
            }
        });
        let mut session = Session {
            id: String::new(),
            runner,
            starter,
            sender,
            signals,
            pending: Vec::new(),
            said: Vec::new(),
            stopped: std::cell::Cell::new(None),
            server: None,
            home,
            workspace: workspace.to_path_buf(),
            environment,
        };
        session.id = session.wait_for("the starter naming the session", |signal| match signal {
            Signal::Said(line) if line.contains(" is running in tmux") => {
                line.strip_prefix("session ").and_then(|rest| rest.split(' ').next()).map(str::to_owned)
            }
            _ => None,
        });
        let server = session.tmux().args(["display-message", "-p", "#{pid}"]).output().expect("tmux");
        session.server =
            String::from_utf8_lossy(&server.stdout).trim().parse().ok().and_then(rustix::process::Pid::from_raw);
        session
    }

    /// The first signal `found` takes (an earlier one kept from another wait first).
    fn wait_for<T>(&mut self, what: &str, mut found: impl FnMut(&Signal) -> Option<T>) -> T {
        if let Some(index) = self.pending.iter().position(|signal| found(signal).is_some()) {
            let signal = self.pending.remove(index);
            return found(&signal).expect("found before");
        }
        let deadline = Instant::now() + FAILSAFE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let signal = self.signals.recv_timeout(left).unwrap_or_else(|error| {
                panic!("{}: no {what} ({error}); the starter said: {}", self.runner.name(), self.said.join("\n"))
            });
            if let Signal::Said(line) = &signal {
                self.said.push(line.clone());
            }
            match found(&signal) {
                Some(value) => return value,
                None => self.pending.push(signal),
            }
        }
    }

    /// Waits for the harness to ask for turn `index`'s reply; fails at once if the
    /// session ends first.
    fn requested(&mut self, index: usize) {
        let id = self.id.clone();
        let runner = self.runner.name();
        self.wait_for(&format!("request for turn {}", index + 1), |signal| match signal {
            Signal::Requested(turn) if *turn == index => Some(()),
            Signal::Said(line) if is_end(&id, line) => {
                panic!("{runner} ended before it asked for turn {}: {line}", index + 1)
            }
            _ => None,
        });
    }

    /// Waits until `files` have been read whole `count` times from now on (each read ends
    /// with an `IN_CLOSE_NOWRITE`; the test reads none of them meanwhile); fails as soon
    /// as the session ends.
    fn wait_for_reads(&mut self, files: &[PathBuf], count: usize) {
        use rustix::fs::inotify;
        let watch = inotify::init(inotify::CreateFlags::CLOEXEC).expect("inotify");
        for file in files {
            inotify::add_watch(&watch, file, inotify::WatchFlags::CLOSE_NOWRITE).expect("watch the record's reads");
        }
        let sender = self.sender.clone();
        // The thread ends after `count` reads, or when the files go (the test's folder is
        // removed at its end).
        std::thread::spawn(move || {
            let mut buffer = [std::mem::MaybeUninit::uninit(); 4096];
            let mut events = inotify::Reader::new(&watch, &mut buffer);
            let mut sent = 0;
            while sent < count {
                let Ok(event) = events.next() else { return };
                if event.events().contains(inotify::ReadFlags::IGNORED) {
                    return;
                }
                if event.events().contains(inotify::ReadFlags::CLOSE_NOWRITE) {
                    sent += 1;
                    if sender.send(Signal::RecordRead).is_err() {
                        return;
                    }
                }
            }
        });
        let id = self.id.clone();
        let runner = self.runner.name();
        for read in 1..=count {
            self.wait_for(&format!("read {read} of the record"), |signal| match signal {
                Signal::RecordRead => Some(()),
                Signal::Said(line) if is_end(&id, line) => {
                    panic!("{runner} ended while its record held the first turn, below the limit: {line}")
                }
                _ => None,
            });
        }
    }

    /// The starter's line naming how the session ended.
    fn wait_for_end(&mut self) -> String {
        let id = self.id.clone();
        self.wait_for("end of the session", |signal| match signal {
            Signal::Said(line) if is_end(&id, line) => Some(line.clone()),
            _ => None,
        })
    }

    /// The session's entry in `people sessions --json`.
    fn entry(&self) -> serde_json::Value {
        let listed = people(&self.home, &self.workspace, &self.environment, &["sessions", "--json"])
            .stdin(Stdio::null())
            .output()
            .expect("people sessions");
        assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
        let document: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
        document["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|entry| entry["id"] == self.id.as_str()).cloned())
            .expect("listed")
    }

    fn status(&self) -> String {
        self.entry()["status"].as_str().unwrap_or_default().to_owned()
    }

    /// Sends `signal` to the runner's process group (the runner leads it; its pid is in
    /// the session's record, `.agent-toolkit/sessions/<id>.json`).
    fn signal_runner(&self, signal: rustix::process::Signal) {
        let path = self.workspace.join(format!(".agent-toolkit/sessions/{}.json", self.id));
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("the session's record")).expect("JSON");
        let pid = record["pid"].as_i64().and_then(|pid| i32::try_from(pid).ok()).expect("the runner's pid");
        let group = rustix::process::Pid::from_raw(pid).expect("a pid");
        rustix::process::kill_process_group(group, signal).expect("signal the runner's group");
        self.stopped.set((signal == rustix::process::Signal::STOP).then_some(group));
    }

    /// Types `text` and Enter into the session's pane, through the workspace's tmux server.
    fn type_line(&self, text: &str) {
        let typed = self
            .tmux()
            .args(["send-keys", "-t", &format!("={}:", self.id), "-l", &format!("{text}\r")])
            .status()
            .expect("tmux send-keys");
        assert!(typed.success(), "tmux send-keys failed");
    }

    /// A tmux command on the workspace's own server.
    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(self.workspace.join(".agent-toolkit/tmux/server")).env_remove("TMUX");
        command
    }
}

/// The processes whose environment names session `id` (`AGENT_TOOLKIT_SESSION_ID`,
/// which the runner and whatever it starts inherit), with their command lines: a
/// process that left the runner's process group is found too.
fn processes_of(id: &str) -> Vec<(i32, String)> {
    let marker = format!("AGENT_TOOLKIT_SESSION_ID={id}");
    let carries = |pid: i32| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|environment| environment.split(|byte| *byte == 0).any(|entry| entry == marker.as_bytes()))
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| carries(*pid))
        .map(|pid| {
            let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            (pid, String::from_utf8_lossy(&command).replace('\0', " ").trim().to_owned())
        })
        .collect()
}

/// Whether `line` is the starter's line naming how session `id` ended (`session ID
/// STATUS (exit code N)`), not where it goes on.
fn is_end(id: &str, line: &str) -> bool {
    line.starts_with(&format!("session {id} ")) && !line.contains(" in tmux")
}

impl Drop for Session {
    /// Ends the workspace's tmux server (and with it a session still running), the
    /// starter, and any process of the session that left its process group.
    fn drop(&mut self) {
        if let Some(group) = self.stopped.get() {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::CONT);
        }
        let _ = self.tmux().arg("kill-server").stderr(Stdio::null()).status();
        let _ = self.starter.kill();
        let _ = self.starter.wait();
        // A starter killed while it follows a running session leaves its tmux control
        // client behind, and the server, told to exit, waits on it (a `SIGTERM` too): it
        // is killed, which ends the client and hangs up on the session's supervisor.
        let socket = self.workspace.join(".agent-toolkit/tmux/server");
        if let Some(server) = self.server
            && std::fs::read(format!("/proc/{}/cmdline", server.as_raw_nonzero()))
                .is_ok_and(|command| String::from_utf8_lossy(&command).contains(&*socket.to_string_lossy()))
        {
            let _ = rustix::process::kill_process(server, rustix::process::Signal::KILL);
        }
        for (pid, _) in processes_of(&self.id) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// `acompose --home HOME people ARGUMENTS --workspace WORKSPACE` with exactly
/// `environment`, not yet run.
fn people(home: &Path, workspace: &Path, environment: &[(OsString, OsString)], arguments: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
    command
        .env_clear()
        .envs(environment.iter().map(|(name, value)| (name, value)))
        .current_dir(workspace.parent().expect("the root"))
        .arg("--home")
        .arg(home)
        .arg("people")
        .args(arguments)
        .arg("--workspace")
        .arg(workspace);
    command
}

/// The harness's own usage record of the session, and the changes on disk below its
/// configuration folder.
struct Record {
    runner: Runner,
    config: PathBuf,
    conversation: Option<String>,
    changes: Receiver<notify::Result<notify::Event>>,
    _watcher: notify::RecommendedWatcher,
}

impl Record {
    /// Watches `config` (which exists once the runtime home is made) from now on.
    fn watch(runner: Runner, config: PathBuf, conversation: Option<String>) -> Record {
        let (sender, changes) = mpsc::channel();
        let mut watcher = notify::recommended_watcher(sender).expect("a watcher");
        watcher.watch(&config, notify::RecursiveMode::Recursive).expect("watch the configuration folder");
        Record { runner, config, conversation, changes, _watcher: watcher }
    }

    /// The record's files now: Claude Code's transcript
    /// `projects/<folder>/<conversation>.jsonl`, Codex's rollouts
    /// `sessions/YYYY/MM/DD/rollout-*.jsonl`.
    fn files(&self) -> Vec<PathBuf> {
        match self.runner {
            Runner::Claude => {
                let name = format!("{}.jsonl", self.conversation.as_deref().expect("Claude Code's conversation id"));
                std::fs::read_dir(self.config.join("projects"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|entry| entry.path().join(&name))
                    .filter(|path| path.is_file())
                    .collect()
            }
            Runner::Codex => {
                let mut rollouts: Vec<PathBuf> = walkdir::WalkDir::new(self.config.join("sessions"))
                    .into_iter()
                    .flatten()
                    .map(walkdir::DirEntry::into_path)
                    .filter(|path| {
                        path.file_name()
                            .and_then(|name| name.to_str())
                            .is_some_and(|name| name.starts_with("rollout-") && name.ends_with(".jsonl"))
                    })
                    .collect();
                rollouts.sort();
                rollouts
            }
        }
    }

    /// The record's text now, its files one after the other.
    fn text(&self) -> String {
        self.files().iter().map(|path| std::fs::read_to_string(path).unwrap_or_default()).collect()
    }

    fn holds(&self, turn: &Turn) -> bool {
        self.runner.holds(&self.text(), turn)
    }

    fn tokens(&self) -> u64 {
        self.runner.tokens(&self.text())
    }

    /// Reads the record again on every change below the folder until it holds `turn`.
    fn wait_until_it_holds(&self, turn: &Turn) {
        let deadline = Instant::now() + FAILSAFE;
        while !self.holds(turn) {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.changes.recv_timeout(left).is_err() {
                panic!("{}'s record never held {turn:?}: {}", self.runner.name(), self.text());
            }
        }
    }
}
