//! `bundle pull` against a hostile registry on 127.0.0.1 (a few lines of HTTP in a
//! thread of this test): a redirect off loopback is refused, naming where it led; a
//! registry that drips its answer a byte at a time fails at the pull's deadline; a
//! 100 MB manifest, a manifest of a million layers and a 900 MB blob (each sent as a
//! stream, never held by the test) are refused with the acompose process's peak
//! resident memory (`VmHWM` of `/proc/<pid>/status`) at most 128 MiB, and the home is
//! left without a bundle.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const ZERO_DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// What the test registry sends for one request.
enum Answer {
    /// A status, headers and a body of `length` bytes made by `fill` (no
    /// `Content-Length` when `declared` is false: the body ends when the connection does).
    Body { status: &'static str, headers: Vec<(String, String)>, length: u64, declared: bool, fill: Fill },
    /// The head at once, then one byte every `interval`.
    Drip { interval: Duration },
}

/// How a body's bytes are made, chunk by chunk, so no body is ever held whole.
#[derive(Clone)]
enum Fill {
    Text(Arc<Vec<u8>>),
    /// A manifest of `layers` layers, generated as it is sent.
    Layers(u64),
    Zeros,
}

type Route = dyn Fn(&str, &str) -> Answer + Send + Sync;

/// A registry on 127.0.0.1 answering every request with `route(method, path)`.
fn hostile_registry(route: Box<Route>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let route: Arc<Route> = Arc::from(route);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let route = Arc::clone(&route);
            std::thread::spawn(move || serve(stream, &*route));
        }
    });
    port
}

fn serve(stream: TcpStream, route: &Route) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
        }
        let mut parts = request_line.split(' ');
        let (method, path) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
        if !answer(&mut stream, route(&method, &path)) {
            return;
        }
    }
}

/// Sends one answer; whether the connection may carry another.
fn answer(stream: &mut TcpStream, answer: Answer) -> bool {
    match answer {
        Answer::Drip { interval } => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {MANIFEST_TYPE}\r\nContent-Length: 1000\r\n\r\n");
            if stream.write_all(head.as_bytes()).is_err() {
                return false;
            }
            for _ in 0..1000 {
                std::thread::sleep(interval);
                if stream.write_all(b" ").is_err() {
                    return false;
                }
            }
            true
        }
        Answer::Body { status, headers, length, declared, fill } => {
            let mut head = format!("HTTP/1.1 {status}\r\n");
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            if declared {
                head.push_str(&format!("Content-Length: {length}\r\n\r\n"));
            } else {
                head.push_str("Connection: close\r\n\r\n");
            }
            if stream.write_all(head.as_bytes()).is_err() {
                return false;
            }
            let sent = send_body(stream, length, &fill);
            sent && declared
        }
    }
}

fn send_body(stream: &mut TcpStream, length: u64, fill: &Fill) -> bool {
    match fill {
        Fill::Text(bytes) => stream.write_all(bytes).is_ok(),
        Fill::Zeros => {
            let chunk = vec![0_u8; 1 << 16];
            let mut left = length;
            while left > 0 {
                let now = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
                if stream.write_all(&chunk[..now]).is_err() {
                    return false;
                }
                left -= now as u64;
            }
            true
        }
        Fill::Layers(layers) => {
            let head = format!(
                "{{\"schemaVersion\":2,\"mediaType\":\"{MANIFEST_TYPE}\",\"artifactType\":\"application/vnd.acompose.bundle.v1\",\"config\":{{\"mediaType\":\"application/vnd.acompose.bundle.config.v1+json\",\"digest\":\"{ZERO_DIGEST}\",\"size\":2}},\"layers\":["
            );
            if stream.write_all(head.as_bytes()).is_err() {
                return false;
            }
            let layer = format!(
                "{{\"mediaType\":\"application/vnd.acompose.bundle.file.v1\",\"digest\":\"{ZERO_DIGEST}\",\"size\":1}},"
            );
            let batch = layer.repeat(1000);
            for _ in 0..layers / 1000 {
                if stream.write_all(batch.as_bytes()).is_err() {
                    return false;
                }
            }
            stream.write_all(b"{}]}").is_ok()
        }
    }
}

/// The answer to `/v2/`: no sign-in.
fn open_door() -> Answer {
    text("200 OK", "{}", "application/json")
}

fn text(status: &'static str, body: &str, content_type: &str) -> Answer {
    Answer::Body {
        status,
        headers: vec![("Content-Type".to_owned(), content_type.to_owned())],
        length: body.len() as u64,
        declared: true,
        fill: Fill::Text(Arc::new(body.as_bytes().to_vec())),
    }
}

/// A bundle artifact's manifest: a config of `config_size` bytes and one file layer of
/// `file_size` bytes.
fn manifest(config_size: u64, file_size: u64) -> String {
    format!(
        "{{\"schemaVersion\":2,\"mediaType\":\"{MANIFEST_TYPE}\",\"artifactType\":\"application/vnd.acompose.bundle.v1\",\
\"config\":{{\"mediaType\":\"application/vnd.acompose.bundle.config.v1+json\",\"digest\":\"{ZERO_DIGEST}\",\"size\":{config_size}}},\
\"layers\":[{{\"mediaType\":\"application/vnd.acompose.bundle.file.v1\",\"digest\":\"{ZERO_DIGEST}\",\"size\":{file_size},\
\"annotations\":{{\"org.opencontainers.image.title\":\"manifest.json\"}}}}],\
\"annotations\":{{\"dev.acompose.bundle.id\":\"0123456789abcdef\",\"dev.acompose.role\":\"platform\"}}}}"
    )
}

/// Runs `acompose` in `root` and its peak resident memory in KiB, read from the child's
/// own `/proc/<pid>/status` (`VmHWM`, which only grows) until it exits.
fn pull_measured(root: &Path, arguments: &[&str]) -> (i32, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(arguments)
        .current_dir(root)
        .env_remove("ACOMPOSE_HOME")
        .env("NO_COLOR", "1")
        .env("HOME", root.join("no-home"))
        .env("DOCKER_CONFIG", root.join("docker"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start acompose");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0_u64;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_file)
            && let Some(line) = status.lines().find(|line| line.starts_with("VmHWM:"))
        {
            let kib = line.split_whitespace().nth(1).and_then(|value| value.parse().ok()).unwrap_or(0);
            peak = peak.max(kib);
        }
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code().unwrap_or(-1), stderr, peak)
}

fn pull(root: &Path, port: u16, extra: &[&str]) -> (i32, String, u64) {
    let reference = format!("127.0.0.1:{port}/acme/bundle:latest");
    let mut arguments = vec!["--home", "home", "bundle", "pull", reference.as_str()];
    arguments.extend_from_slice(extra);
    std::fs::create_dir_all(root.join("home")).expect("home");
    pull_measured(root, &arguments)
}

/// The home holds no bundle after a refused pull.
fn assert_no_bundle(root: &Path) {
    let bundles = root.join("home/bundles");
    let held = std::fs::read_dir(&bundles).map(|entries| entries.flatten().count()).unwrap_or(0);
    assert_eq!(held, 0, "nothing was kept in {}", bundles.display());
}

const PEAK_KIB: u64 = 128 * 1024;

#[test]
fn a_redirect_off_loopback_is_refused_naming_where_it_led() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let port = hostile_registry(Box::new(|_, path| match path {
        "/v2/" => open_door(),
        _ => Answer::Body {
            status: "307 Temporary Redirect",
            headers: vec![("Location".to_owned(), format!("http://10.0.0.1:9{path}"))],
            length: 0,
            declared: true,
            fill: Fill::Text(Arc::new(Vec::new())),
        },
    }));
    let (code, stderr, _) = pull(temporary.path(), port, &["--deadline", "60"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("http://10.0.0.1:9/v2/acme/bundle/manifests/latest"), "names the address: {stderr}");
    assert!(stderr.contains("is refused: only HTTPS is followed"), "the refusal, not a failed connection: {stderr}");
    assert!(!stderr.contains("did not finish"), "refused at once, not at the deadline: {stderr}");
    assert_no_bundle(temporary.path());
}

#[test]
fn a_registry_that_drips_its_answer_fails_at_the_pulls_deadline() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let port = hostile_registry(Box::new(|_, path| match path {
        "/v2/" => open_door(),
        _ => Answer::Drip { interval: Duration::from_millis(500) },
    }));
    // Each byte comes well within the per-read timeout: only the deadline stops it.
    let (code, stderr, _) = pull(temporary.path(), port, &["--deadline", "2"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("did not finish within 2 s"), "{stderr}");
    assert_no_bundle(temporary.path());
}

#[test]
fn a_hundred_megabyte_manifest_is_refused_within_128_mib() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let port = hostile_registry(Box::new(|_, path| match path {
        "/v2/" => open_door(),
        // Undeclared: the reader's own limit must stop it.
        _ => Answer::Body {
            status: "200 OK",
            headers: vec![("Content-Type".to_owned(), MANIFEST_TYPE.to_owned())],
            length: 100 << 20,
            declared: false,
            fill: Fill::Zeros,
        },
    }));
    let (code, stderr, peak) = pull(temporary.path(), port, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("is larger than the 4194304 bytes it may have"), "{stderr}");
    assert!(peak > 0 && peak <= PEAK_KIB, "peak {peak} KiB");
    assert_no_bundle(temporary.path());
}

#[test]
fn a_manifest_of_a_million_layers_is_refused_within_128_mib() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let port = hostile_registry(Box::new(|_, path| match path {
        "/v2/" => open_door(),
        _ => Answer::Body {
            status: "200 OK",
            headers: vec![("Content-Type".to_owned(), MANIFEST_TYPE.to_owned())],
            length: 0,
            declared: false,
            fill: Fill::Layers(1_000_000),
        },
    }));
    let (code, stderr, peak) = pull(temporary.path(), port, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("the manifest is larger than"), "{stderr}");
    assert!(peak > 0 && peak <= PEAK_KIB, "peak {peak} KiB");
    assert_no_bundle(temporary.path());
}

#[test]
fn a_nine_hundred_megabyte_blob_is_refused_within_128_mib() {
    // Declared as such: refused before it is asked for.
    let temporary = tempfile::tempdir().expect("tempdir");
    let declared = manifest(100, 900 << 20);
    let port = hostile_registry(Box::new(move |_, path| match path {
        "/v2/" => open_door(),
        _ if path.contains("/manifests/") => text("200 OK", &declared, MANIFEST_TYPE),
        _ => {
            Answer::Body { status: "200 OK", headers: Vec::new(), length: 900 << 20, declared: true, fill: Fill::Zeros }
        }
    }));
    let (code, stderr, peak) = pull(temporary.path(), port, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("more than a pull holds"), "{stderr}");
    assert!(peak > 0 && peak <= PEAK_KIB, "peak {peak} KiB");
    assert_no_bundle(temporary.path());

    // Declared small, sent as 900 MB (no length given): cut at the declared size.
    let temporary = tempfile::tempdir().expect("tempdir");
    let small = manifest(100, 10);
    let port = hostile_registry(Box::new(move |_, path| match path {
        "/v2/" => open_door(),
        _ if path.contains("/manifests/") => text("200 OK", &small, MANIFEST_TYPE),
        _ => Answer::Body {
            status: "200 OK",
            headers: Vec::new(),
            length: 900 << 20,
            declared: false,
            fill: Fill::Zeros,
        },
    }));
    let (code, stderr, peak) = pull(temporary.path(), port, &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("is larger than the 100 bytes it may have"), "{stderr}");
    assert!(peak > 0 && peak <= PEAK_KIB, "peak {peak} KiB");
    assert_no_bundle(temporary.path());
}

#[test]
fn a_token_realm_off_loopback_is_refused_naming_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let port = hostile_registry(Box::new(|_, _| Answer::Body {
        status: "401 Unauthorized",
        headers: vec![(
            "WWW-Authenticate".to_owned(),
            "Bearer realm=\"http://10.0.0.1:9/token\",service=\"registry\"".to_owned(),
        )],
        length: 0,
        declared: true,
        fill: Fill::Text(Arc::new(Vec::new())),
    }));
    let (code, stderr, _) = pull(temporary.path(), port, &["--deadline", "60"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("the token service `http://10.0.0.1:9/token` is refused"), "{stderr}");
    assert_no_bundle(temporary.path());
}
