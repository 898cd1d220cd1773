//! A real OCI registry for the registry tests and the registry benchmark: Debian's
//! `docker-registry` (the CNCF distribution server) on 127.0.0.1, a free port, a
//! temporary storage folder and its request log, stopped when dropped. Absent, the
//! caller skips with a message; `ACOMPOSE_REGISTRY_TESTS=required` makes absence a
//! failure (`.ci/run` sets it and installs the package).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian installs the server.
const BINARY: &str = "/usr/bin/docker-registry";

/// One request from the registry's access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub uri: String,
    pub status: u16,
    /// Bytes of the response body.
    pub bytes: u64,
}

pub struct Registry {
    child: std::sync::Mutex<Child>,
    /// `127.0.0.1:<port>`.
    pub address: String,
    pub storage: PathBuf,
    log: PathBuf,
    _directory: tempfile::TempDir,
}

fn binary() -> Option<PathBuf> {
    let installed = Path::new(BINARY);
    if installed.is_file() {
        return Some(installed.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|folder| folder.join("docker-registry")).find(|path| path.is_file())
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// Whether `GET /v2/` answers (200, or 401 when it asks for credentials).
fn answers(address: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(address) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /v2/ HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && (answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 401"))
}

impl Registry {
    /// Starts a registry, or says why not: `None` when `docker-registry` is not installed
    /// (a failure when `ACOMPOSE_REGISTRY_TESTS=required`).
    pub fn start(test: &str) -> Option<Registry> {
        Registry::start_with(test, None)
    }

    /// [`Registry::start`] asking for basic authentication: `htpasswd` is one line of an
    /// htpasswd file (`user:<bcrypt hash>`).
    pub fn start_with(test: &str, htpasswd: Option<&str>) -> Option<Registry> {
        let required = std::env::var("ACOMPOSE_REGISTRY_TESTS").is_ok_and(|value| value == "required");
        let Some(binary) = binary() else {
            assert!(!required, "ACOMPOSE_REGISTRY_TESTS=required but docker-registry is not installed");
            eprintln!("skipped {test}: docker-registry is not installed (apt-get install docker-registry)");
            return None;
        };
        // A port taken between choosing it and the server binding it: try another.
        for _ in 0..3 {
            if let Some(registry) = Registry::try_start(&binary, htpasswd) {
                return Some(registry);
            }
        }
        panic!("docker-registry did not start on 127.0.0.1");
    }

    fn try_start(binary: &Path, htpasswd: Option<&str>) -> Option<Registry> {
        let directory = tempfile::tempdir().expect("tempdir");
        let storage = directory.path().join("storage");
        std::fs::create_dir_all(&storage).expect("storage");
        let address = format!("127.0.0.1:{}", free_port());
        let config = directory.path().join("config.yml");
        let yaml = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n  maintenance:\n    uploadpurging:\n      enabled: false\nhttp:\n  addr: {address}\n",
            storage.display()
        );
        let auth = match htpasswd {
            Some(line) => {
                let file = directory.path().join("htpasswd");
                std::fs::write(&file, format!("{line}\n")).expect("htpasswd");
                format!("auth:\n  htpasswd:\n    realm: acompose-tests\n    path: {}\n", file.display())
            }
            None => String::new(),
        };
        std::fs::write(&config, yaml + &auth).expect("config");
        let log = directory.path().join("registry.log");
        let output = std::fs::File::create(&log).expect("log");
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("log"))
            .stderr(output)
            .spawn()
            .expect("start docker-registry");
        let registry = Registry { child: std::sync::Mutex::new(child), address, storage, log, _directory: directory };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if answers(&registry.address) {
                return Some(registry);
            }
            if registry.child.lock().is_ok_and(|mut child| child.try_wait().ok().flatten().is_some()) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// `127.0.0.1:<port>/<repository>`.
    pub fn repository(&self, repository: &str) -> String {
        format!("{}/{repository}", self.address)
    }

    /// Every request the registry logged so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter_map(parse_access_line).collect()
    }

    /// The digests of the blob uploads completed among `requests` (the `PUT` that ends
    /// an upload names the blob's digest).
    pub fn uploads(requests: &[Request]) -> Vec<String> {
        requests
            .iter()
            .filter(|request| {
                request.method == "PUT" && request.uri.contains("/blobs/uploads/") && request.status == 201
            })
            .filter_map(|request| request.uri.split_once("digest=").map(|(_, digest)| digest.replace("%3A", ":")))
            .collect()
    }

    /// The file the registry keeps a blob's bytes in.
    pub fn blob_data(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage.join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }
}

/// `127.0.0.1 - - [date] "PUT /v2/… HTTP/1.1" 201 0 "" "agent"`.
fn parse_access_line(line: &str) -> Option<Request> {
    let (_, rest) = line.split_once("] \"")?;
    let (request, rest) = rest.split_once("\" ")?;
    let mut words = request.split(' ');
    let method = words.next()?.to_owned();
    let uri = words.next()?.to_owned();
    let mut numbers = rest.split(' ');
    let status = numbers.next()?.parse().ok()?;
    let bytes = numbers.next()?.parse().unwrap_or(0);
    Some(Request { method, uri, status, bytes })
}

impl Registry {
    /// Stops the server (a registry kept in a static is never dropped).
    pub fn stop(&self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
