//! Connections against hostile clients: heads dripped a byte at a time, idle
//! connections by the thousand, a declared body of a gibibyte, a body that stalls, and
//! clients without the token. Each bound is asserted in counts (bytes a client got to
//! send, connections held, file descriptors of this process, which runs the server);
//! the deadlines are set short for the test and only ever waited past, never measured.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use acompose_server::ConnectionLimits;

use crate::support::Server;

/// Held by the tests that open many sockets in this process or count its descriptors,
/// so one's sockets do not count in the other's.
static MANY_SOCKETS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn many_sockets() -> std::sync::MutexGuard<'static, ()> {
    MANY_SOCKETS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Short deadlines, so a test waits seconds, not the defaults' tens of seconds.
fn quick(per_client: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        per_client,
        unproven_per_client: per_client,
        token_timeout: Duration::from_secs(1),
    }
}

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", server.handle.port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    stream
}

/// Whether the server closed `stream`: a read ends (EOF or reset) rather than waiting.
fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).expect("read timeout");
    let mut buffer = [0_u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return false,
            Err(_) => return true,
        }
    }
}

/// The file descriptors this process holds.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map(Iterator::count).unwrap_or(0)
}

/// The response to one request written on `stream` (its head and what body came).
fn response_of(stream: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn a_head_dripped_a_byte_at_a_time_is_cut_off_at_its_deadline() {
    let server = Server::start_limited(quick(64));
    let head =
        format!("GET /api/v1/people HTTP/1.1\r\nHost: {}\r\nX-Padding: {}\r\n\r\n", server.host(), "x".repeat(4000));
    let mut streams: Vec<TcpStream> = (0..20).map(|_| connect(&server)).collect();
    let mut sent = vec![0_usize; streams.len()];
    let mut open = streams.len();
    // One byte per connection every 50 ms: the whole head would take over three minutes.
    for byte in head.bytes() {
        for (stream, count) in streams.iter_mut().zip(sent.iter_mut()) {
            if *count == usize::MAX {
                continue;
            }
            if stream.write_all(&[byte]).is_ok() && !closed_within(stream, Duration::from_millis(1)) {
                *count += 1;
            } else {
                *count = usize::MAX;
                open -= 1;
            }
        }
        if open == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(open, 0, "every dripping connection was closed");
    // Before: all 20 stayed open for the whole head (and 30 s and more).
    let longest = sent.iter().filter(|count| **count != usize::MAX).max().copied().unwrap_or(0);
    assert!(longest < head.len(), "no head got through");
}

#[test]
fn idle_connections_past_a_clients_cap_are_closed_at_once_and_the_rest_at_their_deadline() {
    const CAP: usize = 16;
    let _alone = many_sockets();
    let server = Server::start_limited(ConnectionLimits { header_timeout: Duration::from_secs(2), ..quick(CAP) });
    let before = open_descriptors();
    let mut streams: Vec<TcpStream> = (0..200).map(|_| connect(&server)).collect();
    // Closed at once: every connection past the cap (well before the 2 s deadline).
    let mut closed = vec![false; streams.len()];
    for _ in 0..20 {
        for (stream, closed) in streams.iter_mut().zip(closed.iter_mut()).filter(|(_, closed)| !**closed) {
            *closed = closed_within(stream, Duration::from_millis(5));
        }
        if closed.iter().filter(|closed| !**closed).count() <= CAP {
            break;
        }
    }
    let held = closed.iter().filter(|closed| !**closed).count();
    assert!(held <= CAP, "{held} idle connections held, the cap is {CAP}");
    // This process holds the clients' 200 sockets and the server's: at most the cap more.
    let descriptors = open_descriptors().saturating_sub(before);
    assert!(descriptors <= streams.len() + CAP + 8, "{descriptors} descriptors for 200 clients");
    // The held ones are closed at the head deadline; then a real request gets through.
    for (stream, _) in streams.iter_mut().zip(&closed).filter(|(_, closed)| !**closed) {
        assert!(closed_within(stream, Duration::from_secs(30)), "an idle connection outlived its deadline");
    }
    drop(streams);
    assert_eq!(server.get("/api/v1/people").status, 200, "the real page is not locked out");
}

/// One request with the token on a fresh connection: whether it was answered 200.
fn answered(server: &Server) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", server.handle.port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let head = format!(
        "GET /api/v1/people HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        server.host(),
        server.bearer()
    );
    if stream.write_all(head.as_bytes()).is_err() {
        return false;
    }
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    bytes.starts_with(b"HTTP/1.1 200")
}

#[test]
fn tokenless_connections_at_the_cap_do_not_lock_the_page_out() {
    // The defaults: 64 places per address for connections without the token (before:
    // 64 shared by all, so 64 tokenless ones left the page 5 of 100 requests).
    let _alone = many_sockets();
    let server = Server::start_limited(ConnectionLimits::default());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (opened, ready) = std::sync::mpsc::channel();
    let hostile = {
        let stop = std::sync::Arc::clone(&stop);
        let port = server.handle.port;
        std::thread::spawn(move || {
            // 64 idle connections without the token, each reopened as soon as it is closed.
            let open = || TcpStream::connect(("127.0.0.1", port)).ok();
            let mut streams: Vec<Option<TcpStream>> = (0..64).map(|_| open()).collect();
            let _ = opened.send(());
            let mut reopened = 0_usize;
            // One more whole pass after the page's requests are done: the connection
            // closed for the first of them is seen however fast they were answered.
            loop {
                let last = stop.load(std::sync::atomic::Ordering::Acquire);
                for stream in &mut streams {
                    let closed = match stream {
                        Some(held) => closed_within(held, Duration::from_millis(1)),
                        None => true,
                    };
                    if closed {
                        *stream = open();
                        reopened += 1;
                    }
                }
                if last {
                    break;
                }
            }
            reopened
        })
    };
    ready.recv().expect("the hostile client opened its connections");
    let answers = (0..100).filter(|_| answered(&server)).count();
    stop.store(true, std::sync::atomic::Ordering::Release);
    let reopened = hostile.join().expect("the hostile client");
    assert!(answers >= 90, "the page answered {answers} of 100 requests");
    assert!(reopened > 0, "the tokenless connections were closed to make room ({answers} answers)");
}

#[test]
fn a_declared_one_gibibyte_body_is_refused_before_it_is_read() {
    let server = Server::start_limited(ConnectionLimits::default());
    let mut stream = connect(&server);
    let head = format!(
        "POST /api/v1/people HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n",
        server.host(),
        server.bearer()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    // Not one byte of the body is sent: the answer must come from the declared length
    // (before: the server waited for the body, 40 s and more).
    let response = response_of(&mut stream);
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(response.contains("body-too-large"), "{response}");
}

#[test]
fn a_body_that_stalls_is_refused_at_its_deadline() {
    let server = Server::start_limited(quick(64));
    let mut stream = connect(&server);
    let head = format!(
        "POST /api/v1/people HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"id\"",
        server.host(),
        server.bearer()
    );
    stream.write_all(head.as_bytes()).expect("send the head and a little");
    let response = response_of(&mut stream);
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("body-timeout"), "{response}");
    assert!(server.snapshot().iter().all(|(path, _)| !path.to_string_lossy().ends_with(".json")), "nothing written");
}

#[test]
fn a_connection_refused_for_its_token_host_or_origin_is_closed_after_the_answer() {
    // A long head deadline: a close seen here is the refusal's, not the deadline's.
    let server = Server::start_limited(ConnectionLimits { header_timeout: Duration::from_secs(60), ..quick(64) });
    let host = server.host();
    let bearer = server.bearer();
    for (what, headers) in [
        ("no token", format!("Host: {host}\r\n")),
        ("a wrong token", format!("Host: {host}\r\nAuthorization: Bearer 00\r\n")),
        ("a foreign host", format!("Host: example.com\r\nAuthorization: {bearer}\r\n")),
        ("a foreign origin", format!("Host: {host}\r\nOrigin: http://example.com\r\nAuthorization: {bearer}\r\n")),
    ] {
        let mut stream = connect(&server);
        // Keep-alive is HTTP/1.1's default: only the server can end this connection.
        stream.write_all(format!("GET /api/v1/people HTTP/1.1\r\n{headers}\r\n").as_bytes()).expect("send");
        let response = response_of(&mut stream);
        assert!(response.starts_with("HTTP/1.1 40"), "{what}: {response}");
        assert!(response.to_ascii_lowercase().contains("connection: close"), "{what}: {response}");
    }
}
