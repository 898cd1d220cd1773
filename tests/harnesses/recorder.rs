//! A model endpoint on 127.0.0.1 that records what a harness sends and answers every
//! request with an error the harness does not retry, so the harness stops by itself
//! after its first turn. It never reaches any network.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The largest request body recorded.
const BODY_LIMIT: usize = 16 << 20;

pub struct Recorder {
    pub url: String,
    address: std::net::SocketAddr,
    bodies: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        let address = listener.local_addr().expect("address");
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_bodies, thread_stop) = (Arc::clone(&bodies), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream
                    && let Some(body) = answer(stream)
                {
                    thread_bodies.lock().expect("bodies").push(body);
                }
            }
        });
        Recorder { url: format!("http://{address}"), address, bodies, stop, thread: Some(thread) }
    }

    /// Every request body received so far, in order.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().expect("bodies").clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request and answers it with `400 invalid_request_error`; the body read.
fn answer(stream: TcpStream) -> Option<String> {
    let request = read_request(&stream)?;
    let reply = br#"{"type":"error","error":{"type":"invalid_request_error","message":"recorded by the acompose harness suite"}}"#;
    respond(stream, "400 Bad Request", "application/json", reply)?;
    Some(request.body)
}

/// One request as read: its method, its path (with the query) and its body.
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: String,
}

/// Reads one request from `stream`: the request line, the headers and a body of
/// `content-length` bytes (at most [`BODY_LIMIT`]).
pub fn read_request(stream: &TcpStream) -> Option<Request> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).ok()? == 0 {
        return None;
    }
    let mut words = request_line.split_whitespace();
    let (method, path) = (words.next()?.to_owned(), words.next()?.to_owned());
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(BODY_LIMIT)];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, body: String::from_utf8_lossy(&body).into_owned() })
}

/// Writes one whole response with `status` (`"200 OK"`) and ends the connection.
pub fn respond(mut stream: TcpStream, status: &str, content_type: &str, body: &[u8]) -> Option<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    stream.flush().ok()
}
