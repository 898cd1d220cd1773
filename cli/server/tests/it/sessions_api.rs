//! Sessions through the API with a fake runner: the start review, the start, the live
//! terminal over a WebSocket (output, input, resize, reopening), stop, and what the
//! server ends when it stops.

use crate::support;

use std::fs;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use support::{Server, person};
use tungstenite::client::IntoClientRequest as _;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

const READY: &str = "fake runner ready";

/// A workspace at `ws/` with Pam, `ws/projects/desk` linked to `project/`, and a fake
/// `claude` in `bin/` that greets, then answers each line it reads.
fn sandbox() -> Server {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "project", "bin"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
    std::os::unix::fs::symlink(root.join("project"), root.join("ws/projects/desk")).expect("link the project");
    fs::write(root.join("ws/people/pam.json"), person("pam", "Pam", "reception")).expect("Pam");
    runner(root, "claude", &format!("echo '{READY}'\nwhile read line; do echo \"got $line\"; done"));
    let path_variable = root.join("bin").into_os_string();
    Server::start_with(dir, "ws", Some(path_variable))
}

fn runner(root: &Path, binary: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = root.join("bin").join(binary);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("fake runner");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("executable");
}

fn start_body(extra: serde_json::Value) -> String {
    let mut body =
        serde_json::json!({"person_id": "pam", "project_id": "desk", "runner": "claude", "task": "Sort the mail."});
    if let (Some(object), Some(more)) = (body.as_object_mut(), extra.as_object()) {
        object.extend(more.clone());
    }
    body.to_string()
}

fn connect(server: &Server, id: &str, token: Option<&str>) -> Result<WebSocket<TcpStream>, tungstenite::Error> {
    let url = format!("ws://{}/api/v1/sessions/{id}/terminal", server.host());
    let mut request = url.into_client_request().expect("request");
    if let Some(token) = token {
        request.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            HeaderValue::from_str(&format!("acompose.token.{token}")).expect("header"),
        );
    }
    let stream = TcpStream::connect(server.host()).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    tungstenite::client(request, stream).map(|(socket, _)| socket).map_err(|error| match error {
        tungstenite::HandshakeError::Failure(error) => error,
        tungstenite::HandshakeError::Interrupted(_) => tungstenite::Error::ConnectionClosed,
    })
}

/// Reads until the terminal output contains `needle`; returns everything read.
fn read_until(socket: &mut WebSocket<TcpStream>, needle: &str) -> String {
    let mut seen = String::new();
    let give_up = Instant::now() + Duration::from_secs(20);
    while !seen.contains(needle) {
        assert!(Instant::now() < give_up, "never saw {needle:?} in {seen:?}");
        match socket.read() {
            Ok(Message::Binary(bytes)) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Ok(Message::Text(text)) => seen.push_str(text.as_str()),
            Ok(_) => {}
            Err(error) => panic!("the terminal closed ({error}) before {needle:?}: {seen:?}"),
        }
    }
    seen
}

fn live_of(server: &Server, id: &str) -> bool {
    let listing = server.get("/api/v1/sessions").json();
    listing["sessions"].as_array().into_iter().flatten().any(|entry| entry["id"] == id && entry["live"] == true)
}

#[test]
fn runners_and_projects_show_what_this_machine_has() {
    let server = sandbox();
    let runners = server.get("/api/v1/runners").json();
    let claude = runners["runners"].as_array().into_iter().flatten().find(|row| row["name"] == "claude").cloned();
    assert_eq!(claude.map(|row| row["available"].clone()), Some(serde_json::json!(true)));
    let codex = runners["runners"].as_array().into_iter().flatten().find(|row| row["name"] == "codex").cloned();
    assert_eq!(codex.map(|row| row["available"].clone()), Some(serde_json::json!(false)));
    let projects = server.get("/api/v1/projects").json();
    assert_eq!(projects["projects"][0]["id"], "desk");
}

#[test]
fn the_start_review_shows_the_exact_prompt_and_writes_nothing() {
    let server = sandbox();
    let before = server.snapshot();
    let reply = server.post("/api/v1/sessions/review", &start_body(serde_json::json!({})));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let review = reply.json();
    let prompt = review["prompt"].as_str().unwrap_or_default();
    assert!(prompt.contains("Keep the work moving.") && prompt.contains("Sort the mail."), "{prompt}");
    assert_eq!(review["argv"].as_array().and_then(|argv| argv.last()).and_then(|last| last.as_str()), Some(prompt));
    assert!(review["command_line"].as_str().is_some_and(|line| line.contains("claude")));
    assert_eq!(server.snapshot(), before);
}

#[test]
fn refused_starts_name_a_code_and_echo_nothing() {
    let server = sandbox();
    const MARKER: &str = "zq-start-3301";
    let cases = [
        ("unknown runner", start_body(serde_json::json!({"runner": MARKER}))),
        ("bad project", start_body(serde_json::json!({"project_id": format!("../{MARKER}")}))),
        ("missing project", start_body(serde_json::json!({"project_id": "nowhere"}))),
        ("not installed", start_body(serde_json::json!({"runner": "codex"}))),
        ("bad model", start_body(serde_json::json!({"model": format!("-{MARKER}")}))),
        ("oversize task", start_body(serde_json::json!({"task": MARKER.repeat(1000)}))),
        ("unknown field", start_body(serde_json::json!({"shell": MARKER}))),
        ("missing person", start_body(serde_json::json!({"person_id": "nobody"}))),
    ];
    let before = server.snapshot();
    for (label, body) in cases {
        for path in ["/api/v1/sessions/review", "/api/v1/sessions"] {
            let reply = server.post(path, &body);
            assert!(reply.status >= 400, "{label} {path}: {}", reply.text());
            assert!(!reply.code().is_empty(), "{label}");
            assert!(!reply.text().contains(MARKER), "{label} echoed: {}", reply.text());
        }
    }
    assert_eq!(server.snapshot(), before);
    assert_eq!(server.get("/api/v1/sessions/Not%20An%20Id").code(), "invalid-session-id");
    assert_eq!(server.post("/api/v1/sessions/20260101-000000-pam-0000abcd/stop", "").code(), "no-such-session");
}

#[test]
fn unsupported_limits_need_an_explicit_acknowledgement() {
    let server = sandbox();
    let mut capped: serde_json::Value = serde_json::from_str(&person("pam", "Pam", "reception")).expect("json");
    // No runner's record carries its spending while it runs (Claude Code writes it as it
    // exits): a cost limit is refused for every runner.
    capped["budget"] = serde_json::json!({"max_cost_usd": 2.0});
    assert_eq!(server.put_current("/api/v1/people/pam", &capped.to_string()).status, 200);
    let claude = server.post("/api/v1/sessions/review", &start_body(serde_json::json!({}))).json();
    assert_eq!(claude["unsupported_details"][0]["field"], "budget.max_cost_usd");
    assert_eq!(claude["max_cost_usd"], serde_json::Value::Null);
    runner(&server.path(""), "codex", &format!("echo '{READY}'\nwhile read line; do echo \"got $line\"; done"));
    let codex = serde_json::json!({"runner": "codex"});
    let review = server.post("/api/v1/sessions/review", &start_body(codex.clone())).json();
    assert_eq!(review["unsupported_details"][0]["field"], "budget.max_cost_usd");
    let refused = server.post("/api/v1/sessions", &start_body(codex));
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(server.get("/api/v1/sessions").json()["sessions"], serde_json::json!([]));
    let started = server
        .post("/api/v1/sessions", &start_body(serde_json::json!({"runner": "codex", "acknowledge_unsupported": true})));
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(server.post(&format!("/api/v1/sessions/{id}/stop"), "").json()["status"], "stopped");
}

#[test]
fn a_started_session_streams_its_terminal_takes_input_reopens_and_stops() {
    let server = sandbox();
    let started = server.post("/api/v1/sessions", &start_body(serde_json::json!({"cols": 100, "rows": 30})));
    assert_eq!(started.status, 201, "{}", started.text());
    let session = started.json();
    let id = session["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(session["status"], "running");
    assert_eq!(session["attachable"], true);
    assert!(live_of(&server, &id), "Pam is not online while her PTY lives");

    assert!(connect(&server, &id, None).is_err(), "a terminal opened without the token");
    let mut foreign =
        format!("ws://{}/api/v1/sessions/{id}/terminal", server.host()).into_client_request().expect("request");
    foreign.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_str(&format!("acompose.token.{}", server.handle.token)).expect("header"),
    );
    foreign.headers_mut().insert("Origin", HeaderValue::from_static("http://evil.example"));
    let stream = TcpStream::connect(server.host()).expect("connect");
    assert!(tungstenite::client(foreign, stream).is_err(), "a terminal opened from another origin");
    assert!(connect(&server, &id, Some("0000")).is_err(), "a terminal opened with a wrong token");

    let mut first = connect(&server, &id, Some(&server.handle.token)).expect("the terminal opens");
    read_until(&mut first, READY);
    first.send(Message::text(r#"{"type":"resize","cols":120,"rows":40}"#)).expect("resize");
    first.send(Message::text(r#"{"type":"input","data":"ping\r"}"#)).expect("input");
    read_until(&mut first, "got ping");
    first.send(Message::text(r#"{"type":"bogus"}"#)).expect("an unknown message is ignored");
    drop(first);

    // Reopened while the PTY lives: what it printed is there again.
    let mut again = connect(&server, &id, Some(&server.handle.token)).expect("the terminal reopens");
    let replay = read_until(&mut again, "got ping");
    assert!(replay.contains(READY), "{replay}");

    let stopped = server.post(&format!("/api/v1/sessions/{id}/stop"), "");
    assert_eq!(stopped.status, 200, "{}", stopped.text());
    assert_eq!(stopped.json()["status"], "stopped");
    read_until(&mut again, "\"exit\"");
    assert!(!live_of(&server, &id), "Pam is still online after her PTY ended");
    let record: serde_json::Value = serde_json::from_slice(
        &fs::read(server.path(&format!("ws/.agent-toolkit/sessions/{id}.json"))).expect("record"),
    )
    .expect("json");
    assert_eq!(record["status"], "stopped");
    let task_written =
        fs::read_to_string(server.path(&format!("ws/.agent-toolkit/sessions/{id}.json"))).unwrap_or_default();
    assert!(!task_written.contains("Sort the mail."), "the one-time task was written");
    // An ended session's terminal tells how it ended and closes.
    let mut late = connect(&server, &id, Some(&server.handle.token)).expect("a late view opens");
    read_until(&mut late, "stopped");
}

#[test]
fn stopping_the_server_ends_its_own_sessions_and_no_other() {
    use acompose_driver::people::Workspace;
    use acompose_driver::people::session_runner::{LaunchOptions, start_session};
    use acompose_driver::people::sessions::{StartOptions, SystemClock, review_session, stop_session};

    let server = sandbox();
    let own = server.post("/api/v1/sessions", &start_body(serde_json::json!({})));
    assert_eq!(own.status, 201, "{}", own.text());
    let own_id = own.json()["id"].as_str().unwrap_or_default().to_owned();

    // A session started elsewhere (as `acompose people start` would) in the same workspace.
    let workspace = Workspace::open(&server.path("ws")).expect("workspace");
    let options = StartOptions {
        person_id: "pam".to_owned(),
        project_id: "desk".to_owned(),
        runner: "claude".to_owned(),
        model: None,
        task: None,
        roster: None,
        conversation: None,
    };
    let path_variable = server.path("bin").into_os_string();
    let reviewed = review_session(&workspace, &options, Some(&path_variable)).expect("review");
    let other = start_session(&workspace, &reviewed, &LaunchOptions::default(), std::sync::Arc::new(SystemClock))
        .expect("another session starts");
    let other_id = other.id().to_owned();
    let waiter = std::thread::spawn(move || other.wait());
    assert!(live_of(&server, &other_id));
    let elsewhere = server.get(&format!("/api/v1/sessions/{other_id}")).json();
    assert_eq!(elsewhere["attachable"], false);

    let Server { handle, dir, .. } = server;
    handle.stop();
    let record = |id: &str| -> serde_json::Value {
        serde_json::from_slice(
            &fs::read(dir.path().join(format!("ws/.agent-toolkit/sessions/{id}.json"))).expect("record"),
        )
        .expect("json")
    };
    assert_eq!(record(&own_id)["status"], "stopped");
    assert_eq!(record(&other_id)["status"], "running");
    stop_session(&workspace, &other_id, &SystemClock, Duration::from_secs(5)).expect("stop the other session");
    let finished = waiter.join().expect("the waiter").expect("the other session ends");
    assert_eq!(finished.record.status.as_str(), "stopped");
}

/// Opens `/api/v1/events` with the token.
fn events(server: &Server) -> WebSocket<TcpStream> {
    let mut request = format!("ws://{}/api/v1/events", server.host()).into_client_request().expect("request");
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_str(&format!("acompose.token.{}", server.handle.token)).expect("header"),
    );
    let stream = TcpStream::connect(server.host()).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    tungstenite::client(request, stream).map(|(socket, _)| socket).expect("the events socket opens")
}

/// The next versions message.
fn next_versions(socket: &mut WebSocket<TcpStream>) -> serde_json::Value {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                let message: serde_json::Value = serde_json::from_str(text.as_str()).expect("json");
                assert_eq!(message["type"], "versions");
                return message;
            }
            Ok(_) => {}
            Err(error) => panic!("the events socket ended: {error}"),
        }
    }
}

#[test]
fn a_session_killed_outside_is_pushed_as_ended_within_two_seconds() {
    let server = sandbox();
    let without = format!("ws://{}/api/v1/events", server.host()).into_client_request().expect("request");
    assert!(tungstenite::client(without, TcpStream::connect(server.host()).expect("connect")).is_err());
    let mut socket = events(&server);
    let first = next_versions(&mut socket);

    // A change of People is pushed.
    let created = server.post("/api/v1/people", &person("ada", "Ada", "lead"));
    assert_eq!(created.status, 201);
    let after_create = next_versions(&mut socket);
    assert_ne!(after_create["people"], first["people"]);

    let started = server.post("/api/v1/sessions", &start_body(serde_json::json!({})));
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    let record: serde_json::Value = serde_json::from_slice(
        &fs::read(server.path(&format!("ws/.agent-toolkit/sessions/{id}.json"))).expect("record"),
    )
    .expect("json");
    let pid = record["pid"].as_u64().expect("a pid").to_string();
    // Everything the start pushed is read, until the socket is quiet for a second.
    socket.get_ref().set_read_timeout(Some(Duration::from_secs(1))).expect("timeout");
    let mut running = after_create;
    while let Ok(message) = socket.read() {
        if let Message::Text(text) = message {
            running = serde_json::from_str(text.as_str()).expect("json");
        }
    }
    socket.get_ref().set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    // Killed from outside the page, as `kill -9` in a shell would.
    let killed_at = Instant::now();
    assert!(std::process::Command::new("kill").args(["-KILL", &pid]).status().expect("kill").success());
    let pushed = next_versions(&mut socket);
    assert!(killed_at.elapsed() < Duration::from_secs(2), "the end was pushed after {:?}", killed_at.elapsed());
    assert_ne!(pushed["sessions"], running["sessions"]);
    let ended = server.get(&format!("/api/v1/sessions/{id}")).json();
    assert_ne!(ended["status"], "running", "{ended}");
    assert_eq!(ended["live"], false);
    assert_eq!(ended["exit_code"], 137, "{ended}");
    assert!(ended["ended_at"].as_str().is_some(), "{ended}");
}

#[test]
fn a_start_takes_the_conversation_id_its_review_showed() {
    let server = sandbox();
    runner(&server.path(""), "claude", "echo \"args: $*\"\nwhile read line; do :; done");
    let review = server.post("/api/v1/sessions/review", &start_body(serde_json::json!({}))).json();
    let conversation = review["conversation"].as_str().expect("a conversation id").to_owned();
    assert!(review["command_line"].as_str().is_some_and(|line| line.contains(&conversation)), "{review}");
    let again = server.post("/api/v1/sessions/review", &start_body(serde_json::json!({}))).json();
    assert_ne!(again["conversation"], review["conversation"], "each review chooses one");
    let refused = server.post("/api/v1/sessions", &start_body(serde_json::json!({"conversation": "not-a-uuid"})));
    assert_eq!(refused.status / 100, 4, "{}", refused.text());
    let started = server.post("/api/v1/sessions", &start_body(serde_json::json!({"conversation": conversation})));
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    let mut terminal = connect(&server, &id, Some(&server.handle.token)).expect("the terminal opens");
    read_until(&mut terminal, &format!("--session-id {conversation}"));
    let record: serde_json::Value = serde_json::from_slice(
        &fs::read(server.path(&format!("ws/.agent-toolkit/sessions/{id}.json"))).expect("record"),
    )
    .expect("json");
    assert_eq!(record["conversation"], conversation.as_str());
    assert_eq!(server.post(&format!("/api/v1/sessions/{id}/stop"), "").status, 200);
}
