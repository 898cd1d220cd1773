//! A real server on a loopback port over a temporary workspace, and a plain HTTP/1.1
//! client on a `TcpStream` so a test can send any `Host`, `Origin` or body it likes.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use acompose_server::{ConnectionLimits, Handle, Options};

pub struct Server {
    pub handle: Handle,
    pub dir: tempfile::TempDir,
    pub options: Options,
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.text()))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The version the answer carries in `ETag`, without quotes.
    pub fn version(&self) -> String {
        self.header("etag").unwrap_or_default().trim_matches('"').to_owned()
    }

    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
}

impl Server {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("temporary workspace");
        Self::start_in(dir)
    }

    pub fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with(dir, "", None)
    }

    /// A server on `dir/<workspace>` (the folder itself when empty) that looks runners
    /// up on `path_variable`.
    pub fn start_with(dir: tempfile::TempDir, workspace: &str, path_variable: Option<std::ffi::OsString>) -> Self {
        let root = if workspace.is_empty() { dir.path().to_path_buf() } else { dir.path().join(workspace) };
        let home = Some(dir.path().join("home"));
        let options = Options {
            workspace: root,
            port: 0,
            path_variable,
            limits: ConnectionLimits::default(),
            home,
            roster: None,
            supervisor: None,
        };
        let handle = acompose_server::start(&options).expect("server starts");
        Self { handle, dir, options }
    }

    /// A server as [`Server::start_with`] whose People bind roles against the roster of
    /// the acompose home `dir/acompose-home` (`roster:core`).
    pub fn start_with_roster(dir: tempfile::TempDir, workspace: &str, path_variable: std::ffi::OsString) -> Self {
        let roster = acompose_driver::people::as_role::RosterPlace {
            home: acompose_driver::home::Home::at(dir.path().join("acompose-home")),
            projects: dir.path().join("projects-root"),
        };
        let options = Options {
            workspace: dir.path().join(workspace),
            port: 0,
            path_variable: Some(path_variable),
            limits: ConnectionLimits::default(),
            home: Some(dir.path().join("acompose-home")),
            roster: Some(roster),
            supervisor: None,
        };
        let handle = acompose_server::start(&options).expect("server starts");
        Self { handle, dir, options }
    }

    /// A server over an empty workspace whose connections have `limits`.
    pub fn start_limited(limits: ConnectionLimits) -> Self {
        let dir = tempfile::tempdir().expect("temporary workspace");
        let home = Some(dir.path().join("home"));
        let options = Options {
            workspace: dir.path().to_path_buf(),
            port: 0,
            path_variable: None,
            limits,
            home,
            roster: None,
            supervisor: None,
        };
        let handle = acompose_server::start(&options).expect("server starts");
        Self { handle, dir, options }
    }

    /// Stops the server (as Ctrl-C would); [`Server::start_again`] brings it back.
    pub fn stop_for_now(&mut self) {
        self.handle.shut_down();
    }

    /// The server again, on the same port with the same token, as an open page knew it.
    pub fn start_again(&mut self) {
        let options = Options { port: self.handle.port, ..self.options.clone() };
        let token = self.handle.token.clone();
        self.handle = acompose_server::start_with_token(&options, token).expect("server starts again");
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.handle.port)
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.handle.token)
    }

    /// A request with the right Host and token; `extra` headers are added (or replace
    /// `Host` / `Authorization` when named).
    pub fn send(&self, method: &str, path: &str, extra: &[(&str, &str)], body: &[u8]) -> Reply {
        let host = self.host();
        let bearer = self.bearer();
        let mut headers: Vec<(&str, &str)> = vec![("Host", &host), ("Authorization", &bearer)];
        for (name, value) in extra {
            headers.retain(|(key, _)| !key.eq_ignore_ascii_case(name));
            if !value.is_empty() {
                headers.push((name, value));
            }
        }
        raw(self.handle.port, method, path, &headers, body)
    }

    pub fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], b"")
    }

    pub fn post(&self, path: &str, body: &str) -> Reply {
        self.send("POST", path, &[("Content-Type", "application/json")], body.as_bytes())
    }

    pub fn put(&self, path: &str, body: &str) -> Reply {
        self.send("PUT", path, &[("Content-Type", "application/json")], body.as_bytes())
    }

    /// A PUT that names the version it edits in `If-Match`.
    pub fn put_at(&self, path: &str, version: &str, body: &str) -> Reply {
        let tag = format!("\"{version}\"");
        self.send("PUT", path, &[("Content-Type", "application/json"), ("If-Match", &tag)], body.as_bytes())
    }

    /// A PUT of the version read just before: an edit nobody raced.
    pub fn put_current(&self, path: &str, body: &str) -> Reply {
        let version = self.get(path).version();
        self.put_at(path, &version, body)
    }

    /// Every file under the workspace with its bytes, for "nothing was written".
    pub fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut pending = vec![self.root().to_path_buf()];
        while let Some(folder) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    files.push((path.clone(), Vec::new()));
                    pending.push(path);
                } else {
                    files.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
                }
            }
        }
        files.sort();
        files
    }
}

/// One request on a fresh connection; the server closes it after answering.
pub fn raw(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the server");
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes()).expect("send the head");
    // A refused oversize body may be answered before it is all sent.
    let _ = stream.write_all(body);
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    parse(&bytes)
}

fn parse(bytes: &[u8]) -> Reply {
    let split = bytes.windows(4).position(|window| window == b"\r\n\r\n").expect("a complete response head");
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status =
        lines.next().and_then(|line| line.split(' ').nth(1)).and_then(|code| code.parse().ok()).expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let raw_body = &bytes[split + 4..];
    let chunked = headers
        .iter()
        .any(|(name, value)| name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked"));
    let body = if chunked { dechunk(raw_body) } else { raw_body.to_vec() };
    Reply { status, headers, body }
}

fn dechunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = bytes.windows(2).position(|window| window == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&bytes[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        body.extend_from_slice(&bytes[start..(start + size).min(bytes.len())]);
        bytes = &bytes[(start + size + 2).min(bytes.len())..];
    }
    body
}

/// A valid person@1 document.
pub fn person(id: &str, name: &str, role: &str) -> String {
    serde_json::json!({
        "spec": "agent-toolkit/person@1",
        "id": id,
        "name": name,
        "role": role,
        "goal": "Keep the work moving.",
        "archived": false
    })
    .to_string()
}

/// A complete hire@1 file.
pub const HIRE: &str = r#"{
  "spec": "munder-difflin/hire@1",
  "id": "pam",
  "name": "Pam Beesly",
  "description": "Receptionist",
  "goal": "Keep the front desk running.",
  "character": "pam",
  "accent": "lavender",
  "provider": "codex",
  "skills": ["scheduling"],
  "mcpServers": ["calendar", "mail"],
  "author": "Munder Difflin Paper Company"
}"#;

/// A recipe with two roles.
pub const RECIPE: &str = r#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "lead"}, {"role": "qa"}]}"#;
