//! `budget.max_tokens` enforced from the runners' own usage records, with fake runners
//! that write those records as Claude Code and Codex do: a transcript under
//! `CLAUDE_CONFIG_DIR/projects/` named for the conversation, a rollout under
//! `CODEX_HOME/sessions/YYYY/MM/DD/` naming its working folder. Each fake writes usage
//! below the limit, says `below`, waits for a line from the terminal, says `after`, then
//! passes the limit and keeps running: the session must end `budget_exceeded`, and only
//! after `after` (a session ended early never prints it).

#![cfg(target_os = "linux")]

use std::fs;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use acompose_people::Person;
use acompose_people::document::person_bytes;
use acompose_people::session::{Status, Timestamp};
use acompose_people::start::UnsupportedLimit;

use acompose_driver::people::Workspace;
use acompose_driver::people::budget::UsageWatch;
use acompose_driver::people::session_runner::{LaunchOptions, start_session};
use acompose_driver::people::sessions::{Clock, FixedClock, StartOptions, review_session};
use tempfile::TempDir;

struct Place {
    root: TempDir,
}

impl Place {
    fn new(max_tokens: u64) -> Self {
        Self::with_budget(|person| person.budget.max_tokens = Some(max_tokens))
    }

    fn with_budget(budget: impl FnOnce(&mut Person)) -> Self {
        let root = tempfile::tempdir().expect("a temporary folder");
        for folder in ["ws/people", "ws/projects", "project", "bin", "config"] {
            fs::create_dir_all(root.path().join(folder)).expect("create a folder");
        }
        std::os::unix::fs::symlink(root.path().join("project"), root.path().join("ws/projects/desk"))
            .expect("link the project");
        let mut person = Person::new("oscar", "Oscar", "accounts", "Keep the books.");
        budget(&mut person);
        fs::write(root.path().join("ws/people/oscar.json"), person_bytes(&person)).expect("write a Person");
        Place { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn runner(&self, binary: &str, body: &str) {
        let path = self.path(&format!("bin/{binary}"));
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write a fake runner");
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("make it executable");
    }

    /// Runs `runner` with `variable` naming the config folder, answers its `below`, and
    /// returns how it ended and everything it printed.
    fn run(&self, runner: &str, variable: &str) -> (Status, String, u64) {
        let workspace = Workspace::open(&self.path("ws")).expect("the workspace opens");
        let options = StartOptions {
            person_id: "oscar".to_owned(),
            project_id: "desk".to_owned(),
            runner: runner.to_owned(),
            model: None,
            task: None,
            roster: None,
            conversation: None,
        };
        let path_variable = format!("{}:/usr/bin:/bin", self.path("bin").display());
        let mut reviewed =
            review_session(&workspace, &options, Some(path_variable.as_ref())).expect("the review passes");
        assert_eq!(reviewed.review.unsupported, Vec::<UnsupportedLimit>::new());
        reviewed.environment.push((variable.to_owned(), self.path("config").into_os_string()));
        let launch = LaunchOptions { grace: Duration::from_secs(2), ..LaunchOptions::default() };
        let clock: Arc<dyn Clock> = Arc::new(FixedClock(Timestamp::parse("2026-12-01T09:00:00Z").expect("a time")));
        let handle = start_session(&workspace, &reviewed, &launch, clock).expect("the session starts");
        let watch = UsageWatch::for_session(&reviewed, handle.record()).expect("the limit is watched");
        let mut reader = handle.reader().expect("a reader");
        let (chunks, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(count @ 1..) = std::io::Read::read(&mut reader, &mut buffer) {
                let _ = chunks.send(String::from_utf8_lossy(&buffer[..count]).into_owned());
            }
        });
        let mut seen = String::new();
        while !seen.contains("below") {
            seen.push_str(&output.recv().expect("the runner says `below`"));
        }
        let mut writer = handle.take_writer().expect("a writer");
        writer.write_all(b"go\n").expect("answer the runner");
        let finished = handle.wait().expect("the session ends");
        seen.extend(output.try_iter());
        assert!(finished.group_empty);
        assert_eq!(watch.exceeded(), finished.record.status == Status::BudgetExceeded);
        (finished.record.status, seen, watch.tokens())
    }
}

#[test]
fn a_claude_transcript_past_max_tokens_ends_the_session_and_not_before() {
    let place = Place::new(1000);
    // The first message is written twice, as Claude Code writes one line per content
    // block: it counts once (600), so the session lives until the second (600 + 500).
    place.runner(
        "claude",
        r#"while [ $# -gt 0 ]; do if [ "$1" = --session-id ]; then id=$2; fi; shift; done
dir="$CLAUDE_CONFIG_DIR/projects/-work-desk"; mkdir -p "$dir"
line() { printf '{"type":"assistant","message":{"id":"%s","usage":{"input_tokens":%s,"cache_read_input_tokens":0,"output_tokens":100}}}\n' "$1" "$2" >> "$dir/$id.jsonl"; }
line m1 500; line m1 500
echo below; read answer; echo after
line m2 400
exec sleep 600"#,
    );
    let (status, output, tokens) = place.run("claude", "CLAUDE_CONFIG_DIR");
    assert_eq!(tokens, 600 + 500);
    assert_eq!(status, Status::BudgetExceeded, "{output}");
    assert!(output.contains("after"), "the session was ended before the limit: {output}");
}

#[test]
fn a_codex_rollout_past_max_tokens_ends_the_session_and_others_do_not_count() {
    let place = Place::new(1000);
    // Another session's rollout (another folder) far over the limit must not count.
    place.runner(
        "codex",
        r#"dir="$CODEX_HOME/sessions/2026/12/01"; mkdir -p "$dir"
count() { printf '{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":%s}}}}\n' "$1" >> "$2"; }
printf '{"timestamp":"t","type":"session_meta","payload":{"cwd":"/elsewhere"}}\n' > "$dir/rollout-other.jsonl"
count 999999 "$dir/rollout-other.jsonl"
mine="$dir/rollout-2026-12-01T09-00-00-mine.jsonl"
printf '{"timestamp":"t","type":"session_meta","payload":{"cwd":"%s"}}\n' "$(pwd -P)" > "$mine"
count 400 "$mine"
echo below; read answer; echo after
count 1500 "$mine"
exec sleep 600"#,
    );
    let (status, output, tokens) = place.run("codex", "CODEX_HOME");
    assert_eq!(tokens, 1500);
    assert_eq!(status, Status::BudgetExceeded, "{output}");
    assert!(output.contains("after"), "the session was ended before the limit: {output}");
}

#[test]
fn a_runner_below_max_tokens_completes() {
    let place = Place::new(1000);
    place.runner(
        "claude",
        r#"while [ $# -gt 0 ]; do if [ "$1" = --session-id ]; then id=$2; fi; shift; done
dir="$CLAUDE_CONFIG_DIR/projects/-work-desk"; mkdir -p "$dir"
printf '{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":900,"output_tokens":99}}}\n' >> "$dir/$id.jsonl"
echo below; read answer; echo after; exit 0"#,
    );
    let (status, output, tokens) = place.run("claude", "CLAUDE_CONFIG_DIR");
    assert_eq!(tokens, 999);
    assert_eq!(status, Status::Completed, "{output}");
}

#[test]
fn a_cost_limit_is_refused_without_acknowledgement_for_every_runner() {
    let place = Place::with_budget(|person| person.budget.max_cost_usd = Some(1.0));
    place.runner("codex", "exit 0");
    place.runner("claude", "exit 0");
    let workspace = Workspace::open(&place.path("ws")).expect("the workspace opens");
    let path_variable = format!("{}:/usr/bin:/bin", place.path("bin").display());
    let review = |runner: &str| {
        let options = StartOptions {
            person_id: "oscar".to_owned(),
            project_id: "desk".to_owned(),
            runner: runner.to_owned(),
            ..StartOptions::default()
        };
        review_session(&workspace, &options, Some(path_variable.as_ref())).expect("the review passes").review
    };
    let codex = review("codex");
    assert_eq!(codex.unsupported, vec![UnsupportedLimit::MaxCostUsd]);
    assert_eq!(codex.max_cost_usd, None);
    // Claude Code writes its spending only as it exits: a running session's cannot be
    // followed.
    let claude = review("claude");
    assert_eq!(claude.unsupported, vec![UnsupportedLimit::MaxCostUsd]);
    assert_eq!(claude.max_cost_usd, None);
    let text = acompose_people::session_report::review_text(&claude);
    assert!(text.contains("not enforced:  `budget.max_cost_usd`"), "{text}");
}
