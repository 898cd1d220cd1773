//! `GET /api/v1/world`: a live session's Person appears under its project, and goes
//! within 2 s of its runner's end, for a single session and for a swarm run; a Person
//! appears nowhere from its configuration alone. The test waits on the server's own
//! events socket, never on a clock.

use crate::support;

use std::fs;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::{Server, person};
use tungstenite::client::IntoClientRequest as _;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

/// A workspace with Pam (reception) and Ada (lead), projects `desk` and `yard`, and a
/// fake `claude` that waits for input.
fn sandbox() -> Server {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "desk", "yard", "bin"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
    for project in ["desk", "yard"] {
        std::os::unix::fs::symlink(root.join(project), root.join("ws/projects").join(project)).expect("link");
    }
    fs::write(root.join("ws/people/pam.json"), person("pam", "Pam", "reception")).expect("Pam");
    fs::write(root.join("ws/people/ada.json"), person("ada", "Ada", "lead")).expect("Ada");
    use std::os::unix::fs::PermissionsExt as _;
    let runner = root.join("bin/claude");
    fs::write(&runner, "#!/bin/sh\necho ready\nwhile read line; do :; done\n").expect("fake runner");
    fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("executable");
    let path_variable = root.join("bin").into_os_string();
    Server::start_with(dir, "ws", Some(path_variable))
}

fn events(server: &Server) -> WebSocket<TcpStream> {
    let mut request = format!("ws://{}/api/v1/events", server.host()).into_client_request().expect("request");
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_str(&format!("acompose.token.{}", server.handle.token)).expect("header"),
    );
    let stream = TcpStream::connect(server.host()).expect("connect");
    tungstenite::client(request, stream).map(|(socket, _)| socket).expect("the events socket opens")
}

/// Reads versions messages until one whose sessions version differs from `before`;
/// returns it. The socket's read timeout bounds the wait.
fn sessions_change(socket: &mut WebSocket<TcpStream>, before: &str) -> String {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                let message: serde_json::Value = serde_json::from_str(text.as_str()).expect("json");
                let now = message["sessions"].as_str().unwrap_or_default().to_owned();
                if now != before {
                    return now;
                }
            }
            Ok(_) => {}
            Err(error) => panic!("no change of sessions was pushed: {error}"),
        }
    }
}

/// Who the World shows in `project`: Person ids.
fn present(server: &Server, project: &str) -> Vec<String> {
    let world = server.get("/api/v1/world");
    assert_eq!(world.status, 200, "{}", world.text());
    let world = world.json();
    let place =
        world["places"].as_array().expect("places").iter().find(|place| place["project_id"] == project).cloned();
    let place = place.unwrap_or_else(|| panic!("no place {project} in {world}"));
    place["present"]
        .as_array()
        .expect("present")
        .iter()
        .filter_map(|entry| entry["person_id"].as_str().map(str::to_owned))
        .collect()
}

fn pid_of(server: &Server, id: &str) -> String {
    let record: serde_json::Value = serde_json::from_slice(
        &fs::read(server.path(&format!("ws/.agent-toolkit/sessions/{id}.json"))).expect("record"),
    )
    .expect("json");
    record["pid"].as_u64().expect("a pid").to_string()
}

/// Kills `pid` from outside (as `kill -9` in a shell would) and returns how long until
/// the server pushed the change of sessions that follows.
fn killed(socket: &mut WebSocket<TcpStream>, version: &str, pid: &str) -> Duration {
    let killed_at = Instant::now();
    assert!(std::process::Command::new("kill").args(["-KILL", pid]).status().expect("kill").success());
    sessions_change(socket, version);
    killed_at.elapsed()
}

#[test]
fn a_live_session_puts_its_person_in_its_project_until_the_runner_ends() {
    let server = sandbox();
    let mut socket = events(&server);
    socket.get_ref().set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let quiet = sessions_change(&mut socket, "");
    // Configuration alone puts nobody anywhere.
    assert!(present(&server, "desk").is_empty() && present(&server, "yard").is_empty());

    let body = serde_json::json!({"person_id": "pam", "project_id": "desk", "runner": "claude"});
    let started = server.post("/api/v1/sessions", &body.to_string());
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    let running = sessions_change(&mut socket, &quiet);
    assert_eq!(present(&server, "desk"), ["pam"]);
    assert!(present(&server, "yard").is_empty());
    let world = server.get("/api/v1/world").json();
    let pam = &world["places"][0]["present"][0];
    assert_eq!(pam["name"], "Pam");
    assert_eq!(pam["role"], "reception");
    assert_eq!(pam["sessions"][0]["id"], id.as_str());
    assert_eq!(pam["sessions"][0]["runner"], "claude");
    assert_eq!(pam["sessions"][0]["status"], "running");
    assert!(pam["sessions"][0]["started_at"].as_str().is_some(), "{pam}");

    socket.get_ref().set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    let took = killed(&mut socket, &running, &pid_of(&server, &id));
    assert!(present(&server, "desk").is_empty(), "Pam is still shown after her runner ended");
    assert!(took < Duration::from_secs(2), "dropped after {took:?}");
}

#[test]
fn a_swarm_run_shows_its_people_together_in_its_project() {
    let server = sandbox();
    let mut socket = events(&server);
    socket.get_ref().set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let quiet = sessions_change(&mut socket, "");
    let recipe = r#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "reception"}, {"role": "lead"}]}"#;
    let body = serde_json::json!({
        "recipe_file_name": "crew.json", "recipe": recipe, "assignments": [],
        "project_id": "yard", "runner": "claude",
    });
    let started = server.post("/api/v1/swarm", &body.to_string());
    assert_eq!(started.status, 201, "{}", started.text());
    let run = started.json();
    let mut running = sessions_change(&mut socket, &quiet);
    // Both sessions' records may land in two rounds of the watcher.
    while present(&server, "yard").len() < 2 {
        running = sessions_change(&mut socket, &running);
    }
    assert_eq!(present(&server, "yard"), ["ada", "pam"]);
    assert!(present(&server, "desk").is_empty());
    let world = server.get("/api/v1/world").json();
    let runs: Vec<&serde_json::Value> = world["places"][1]["present"]
        .as_array()
        .expect("present")
        .iter()
        .map(|person| &person["sessions"][0]["run"])
        .collect();
    assert!(runs.iter().all(|value| **value == run["id"]), "{world}");

    socket.get_ref().set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    let session =
        run["roles"].as_array().expect("roles").iter().find(|role| role["person_id"] == "pam").expect("Pam's role");
    let pid = pid_of(&server, session["session_id"].as_str().expect("a session id"));
    let took = killed(&mut socket, &running, &pid);
    assert_eq!(present(&server, "yard"), ["ada"], "Pam is still shown after her runner ended");
    assert!(took < Duration::from_secs(2), "dropped after {took:?}");
}
