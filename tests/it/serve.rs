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
