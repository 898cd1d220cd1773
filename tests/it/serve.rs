//! `acompose serve` as a user runs it: the printed address, the page and the API behind
//! it, and a clean stop on Ctrl-C (SIGINT) and on `SIGTERM`; a workspace that cannot be
//! opened.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn get(port: u16, path: &str, token: Option<&str>) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let authorization = token.map_or_else(String::new, |token| format!("Authorization: Bearer {token}\r\n"));
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{authorization}Connection: close\r\n\r\n")
        .expect("send");
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
}

#[test]
fn serve_prints_its_address_answers_and_stops_on_ctrl_c() {
    serve_and_stop_with("-INT");
}

#[test]
fn serve_stops_as_cleanly_on_sigterm() {
    serve_and_stop_with("-TERM");
}

fn serve_and_stop_with(signal: &str) {
    let workspace = tempfile::tempdir().expect("workspace");
    let mut child = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["serve", "--workspace"])
        .arg(workspace.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("acompose serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the address");
    let address = line.trim().strip_prefix("http://127.0.0.1:").expect("a loopback address").to_owned();
    let (port, token) = address.split_once("/?token=").expect("a token in the address");
    let port: u16 = port.parse().expect("a port");
    assert_eq!(token.len(), 64);

    assert!(get(port, "/", None).starts_with("HTTP/1.1 200"));
    assert!(get(port, "/api/v1/people", None).starts_with("HTTP/1.1 401"));
    let listing = get(port, "/api/v1/people", Some(token));
    assert!(listing.starts_with("HTTP/1.1 200") && listing.contains("acompose.people-list.v1"), "{listing}");

    let status = Command::new("kill").args([signal, &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let output = child.wait_with_output().expect("acompose serve ends");
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("stopped"));
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "still listening after {signal}");
}

#[test]
fn serve_refuses_a_workspace_that_does_not_exist() {
    let root = tempfile::tempdir().expect("root");
    let output = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["serve", "--workspace"])
        .arg(root.path().join("missing"))
        .output()
        .expect("acompose serve runs");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("does not exist"), "{output:?}");
}

/// A running `acompose serve`, killed if the test ends before stopping it.
struct Served(Option<std::process::Child>);

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `acompose serve` on `workspace` with `path_variable`: the child, its port and token.
fn serve(workspace: &std::path::Path, path_variable: &str, home: &std::path::Path) -> (Served, u16, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["serve", "--workspace"])
        .arg(workspace)
        .env("PATH", path_variable)
        .env("HOME", home)
        .env_remove("TMUX")
        .env_remove("ACOMPOSE_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("acompose serve starts");
    let mut served = Served(Some(child));
    let stdout = served.0.as_mut().and_then(|child| child.stdout.take()).expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("the address");
    let address = line.trim().strip_prefix("http://127.0.0.1:").expect("a loopback address").to_owned();
    let (port, token) = address.split_once("/?token=").expect("a token in the address");
    (served, port.parse().expect("a port"), token.to_owned())
}

fn post(port: u16, path: &str, token: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
}

/// A WebSocket client of a session's terminal, written out by hand (RFC 6455: the
/// handshake, unmasked frames from the server, masked text frames to it).
struct TerminalView {
    stream: TcpStream,
    seen: String,
}

impl TerminalView {
    fn open(port: u16, token: &str, id: &str) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        // A failsafe against a hang, not a wait: every read below waits for the server's output.
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("a timeout");
        write!(
            stream,
            "GET /api/v1/sessions/{id}/terminal HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: acompose.token.{token}\r\n\r\n"
        )
        .expect("the handshake");
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).expect("the handshake's answer");
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        TerminalView { stream, seen: String::new() }
    }

    /// Reads frames until the terminal's output holds `needle`.
    fn until(&mut self, needle: &str) {
        while !self.seen.contains(needle) {
            let mut header = [0u8; 2];
            self.stream
                .read_exact(&mut header)
                .unwrap_or_else(|error| panic!("{error} before {needle:?}: {}", self.seen));
            let mut length = u64::from(header[1] & 0x7f);
            if length == 126 {
                let mut extended = [0u8; 2];
                self.stream.read_exact(&mut extended).expect("a length");
                length = u64::from(u16::from_be_bytes(extended));
            } else if length == 127 {
                let mut extended = [0u8; 8];
                self.stream.read_exact(&mut extended).expect("a length");
                length = u64::from_be_bytes(extended);
            }
            let mut payload = vec![0u8; usize::try_from(length).expect("a size")];
            self.stream.read_exact(&mut payload).expect("a payload");
            assert_ne!(header[0] & 0x0f, 8, "the terminal closed before {needle:?}: {}", self.seen);
            self.seen.push_str(&String::from_utf8_lossy(&payload));
        }
    }

    fn send_text(&mut self, text: &str) {
        let mask = [0x11u8, 0x22, 0x33, 0x44];
        let length = u8::try_from(text.len()).expect("a short message");
        assert!(length < 126);
        let mut frame = vec![0x81, 0x80 | length];
        frame.extend_from_slice(&mask);
        frame.extend(text.bytes().enumerate().map(|(index, byte)| byte ^ mask[index % 4]));
        self.stream.write_all(&frame).expect("send a frame");
    }
}

fn stop_serve(mut served: Served) {
    let mut child = served.0.take().expect("a server");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    assert!(child.wait().expect("acompose serve ends").success());
}

#[cfg(target_os = "linux")]
#[test]
fn a_session_started_by_serve_outlives_it_and_the_next_server_shows_its_terminal() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().expect("root");
    let path = |relative: &str| root.path().join(relative);
    for folder in ["ws/people", "ws/projects", "project", "bin", "no-home"] {
        std::fs::create_dir_all(path(folder)).expect("a folder");
    }
    std::os::unix::fs::symlink(path("project"), path("ws/projects/desk")).expect("link the project");
    let pam = acompose_people::Person::new("pam", "Pam", "reception", "Keep the desk running.");
    std::fs::write(path("ws/people/pam.json"), acompose_people::document::person_bytes(&pam)).expect("Pam");
    std::fs::write(
        path("bin/claude"),
        "#!/bin/sh\necho 'first words'\nwhile read line; do echo \"got [$line]\"; done\n",
    )
    .expect("a fake runner");
    std::fs::set_permissions(path("bin/claude"), std::fs::Permissions::from_mode(0o755)).expect("executable");
    let path_variable = format!("{}:/usr/bin:/bin", path("bin").display());
    let socket = path("ws/.agent-toolkit/tmux/server");
    let _tmux = KillTmux(socket.clone());

    let (first, port, token) = serve(&path("ws"), &path_variable, &path("no-home"));
    let started =
        post(port, "/api/v1/sessions", &token, r#"{"person_id":"pam","project_id":"desk","runner":"claude"}"#);
    assert!(started.starts_with("HTTP/1.1 201"), "{started}");
    let body = started.split("\r\n\r\n").nth(1).unwrap_or_default();
    let entry: serde_json::Value = serde_json::from_str(body).expect("the session's entry");
    let id = entry["id"].as_str().expect("an id").to_owned();
    assert_eq!(entry["host"], "tmux", "{entry}");
    TerminalView::open(port, &token, &id).until("first words");
    stop_serve(first);

    let listed = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["people", "sessions", "--json", "--workspace"])
        .arg(path("ws"))
        .env("PATH", &path_variable)
        .output()
        .expect("list");
    let document: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(document["sessions"][0]["status"], "running", "the session ended with the server");

    let (second, port, token) = serve(&path("ws"), &path_variable, &path("no-home"));
    let mut view = TerminalView::open(port, &token, &id);
    view.until("first words");
    view.send_text(r#"{"type":"input","data":"again\r"}"#);
    view.until("got [again]");
    let stopped = post(port, &format!("/api/v1/sessions/{id}/stop"), &token, "");
    assert!(stopped.contains("\"status\": \"stopped\""), "{stopped}");
    stop_serve(second);
}

/// Ends a test's tmux server when the test ends, however it ends.
struct KillTmux(std::path::PathBuf);

impl Drop for KillTmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.0).arg("kill-server").stderr(Stdio::null()).status();
    }
}
