//! tmux as the host of People sessions: one tmux server of acompose's own per workspace
//! (its socket `<workspace>/.agent-toolkit/tmux/server`, its configuration the file
//! acompose writes next to it, never the user's `~/.tmux.conf`), one tmux session per
//! People session, named by the session id. The tmux session runs `acompose people host`
//! (the supervisor, `hosted`), which runs the runner and writes its record, so the runner
//! outlives the command that started it.
//!
//! A follower ([`Follower`]) is a tmux control-mode client (`tmux -C attach`): it gets
//! the pane's output as the bytes the pane received and types by `send-keys -H`, so a
//! command or a server without a terminal of its own can show and drive a session.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::sessions::find_binary;
use super::storage::{Stop, Workspace};
use crate::home::atomic::FileError;

/// The multiplexer's binary, found on `PATH`.
pub const HOST_BINARY: &str = "tmux";
/// The folder of the workspace's tmux server.
pub const STATE_DIRECTORY: &str = ".agent-toolkit/tmux";
/// The socket's name inside it.
const SOCKET_NAME: &str = "server";
/// The configuration's name inside it.
const CONFIG_NAME: &str = "tmux.conf";
/// The longest socket path a Unix socket address holds, with room for a handoff name.
const MAX_SOCKET_PATH: usize = 100;

/// acompose's own tmux configuration: no status line (the runner has the whole
/// window), a long history for reattaching, the window as large as the latest client,
/// no delay after Escape; the server ends with its last session.
const CONFIG: &str = "\
# Written by acompose for the tmux server of its People sessions; rewritten when it differs.
set -g status off
set -g history-limit 50000
set -g window-size latest
set -g escape-time 0
set -g exit-empty on
set -g destroy-unattached off
set -g remain-on-exit off
set -g mouse off
set -g assume-paste-time 0
";

/// Whether sessions of a workspace can be hosted, and by what.
#[derive(Debug, Clone)]
pub enum Hosting {
    Tmux(Host),
    /// Sessions run in their starter's own terminal, as without a multiplexer; why.
    Missing(String),
}

impl Hosting {
    /// The host when there is one.
    pub fn host(&self) -> Option<&Host> {
        match self {
            Hosting::Tmux(host) => Some(host),
            Hosting::Missing(_) => None,
        }
    }

    /// What the start review says about where the session runs.
    pub fn review_line(&self) -> String {
        match self {
            Hosting::Tmux(_) => "tmux (acompose's own server for this workspace): the session outlives this command; \
                                 `acompose people attach SESSION` reattaches, Ctrl-b d detaches"
                .to_owned(),
            Hosting::Missing(why) => format!("this command's terminal: {why}; the session ends with this command"),
        }
    }
}

/// The tmux server of one workspace.
#[derive(Debug, Clone)]
pub struct Host {
    pub tmux: PathBuf,
    pub socket: PathBuf,
    pub config: PathBuf,
    /// The folder of the socket, the configuration and the handoff sockets.
    pub state: PathBuf,
    /// The program every tmux session runs: `acompose` (its `people host` command).
    pub supervisor: PathBuf,
}

/// The hosting of a workspace's sessions: tmux found on `path_variable` and a socket path
/// short enough, else why not. `supervisor` is the `acompose` binary.
pub fn hosting(workspace: &Workspace, path_variable: Option<&OsStr>, supervisor: PathBuf) -> Hosting {
    let Some(tmux) = find_binary(HOST_BINARY, path_variable) else {
        return Hosting::Missing("tmux is not installed (no `tmux` on PATH)".to_owned());
    };
    let state = workspace.path(STATE_DIRECTORY);
    if state.join(SOCKET_NAME).as_os_str().len() > MAX_SOCKET_PATH {
        return Hosting::Missing("the workspace's path is too long for a tmux socket".to_owned());
    }
    Hosting::Tmux(Host { socket: state.join(SOCKET_NAME), config: state.join(CONFIG_NAME), state, tmux, supervisor })
}

/// The socket a workspace's tmux server listens on, when tmux is on `PATH`: what
/// reconciliation asks which sessions still have a host.
pub fn workspace_host(sessions_folder: &Path) -> Option<(PathBuf, PathBuf)> {
    let tmux = find_binary(HOST_BINARY, std::env::var_os("PATH").as_deref())?;
    let toolkit = sessions_folder.parent()?;
    Some((tmux, toolkit.join("tmux").join(SOCKET_NAME)))
}

fn host_error(path: &Path, message: String) -> Stop {
    Stop::Io(FileError::new(path, message))
}

impl Host {
    /// A tmux command on this workspace's server with acompose's configuration. `TMUX` is
    /// removed, so a command run inside the user's own tmux still reaches this server.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.tmux);
        command.arg("-S").arg(&self.socket).arg("-f").arg(&self.config).env_remove("TMUX");
        command
    }

    /// Makes the state folder (owner only) and writes the configuration when it differs.
    pub fn prepare(&self, workspace: &Workspace) -> Result<(), Stop> {
        workspace.storage_folder(".agent-toolkit")?;
        let state = workspace.storage_folder(STATE_DIRECTORY)?;
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).map_err(|error| {
            Stop::Io(FileError::caused(&state, format!("cannot restrict `{}`", state.display()), error))
        })?;
        if std::fs::read(&self.config).ok().as_deref() != Some(CONFIG.as_bytes()) {
            crate::home::atomic::replace(&state, CONFIG_NAME, CONFIG.as_bytes())?;
        }
        Ok(())
    }

    /// Starts tmux session `name` (detached, `size` cells) running `argv`.
    pub fn new_session(&self, name: &str, cols: u16, rows: u16, argv: &[&OsStr]) -> Result<(), Stop> {
        let mut command = self.command();
        command.args(["new-session", "-d", "-s", name, "-x", &cols.to_string(), "-y", &rows.to_string(), "--"]);
        command.args(argv);
        let output = command
            .stdin(Stdio::null())
            .output()
            .map_err(|error| host_error(&self.tmux, format!("cannot run `{}`: {error}", self.tmux.display())))?;
        if output.status.success() {
            return Ok(());
        }
        Err(host_error(
            &self.socket,
            format!(
                "tmux could not start the session: {}",
                acompose_people::printable(String::from_utf8_lossy(&output.stderr).trim())
            ),
        ))
    }

    /// Ends tmux session `name` (its supervisor gets SIGHUP). A session already gone is
    /// not an error.
    pub fn kill_session(&self, name: &str) {
        let _ = self
            .command()
            .args(["kill-session", "-t", &exact(name)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// A client that attaches the caller's terminal to session `name`.
    pub fn attach_command(&self, name: &str) -> Command {
        let mut command = self.command();
        command.args(["attach-session", "-t", &exact(name)]);
        command
    }

    /// Starts a control-mode client on session `name`.
    pub fn follow(&self, name: &str) -> Result<Follower, Stop> {
        let mut child = self
            .command()
            .args(["-C", "attach-session", "-t", &exact(name)])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| host_error(&self.tmux, format!("cannot run `{}`: {error}", self.tmux.display())))?;
        let input = child.stdin.take();
        let output = child.stdout.take().map(BufReader::new);
        match (input, output) {
            (Some(input), Some(output)) => Ok(Follower { child, input, output: Some(output), name: name.to_owned() }),
            _ => Err(host_error(&self.tmux, "the tmux client's pipes could not be opened".to_owned())),
        }
    }
}

/// The names of the sessions a workspace's tmux server hosts now; empty when no server
/// runs; `None` when tmux cannot be asked.
pub fn hosted_sessions(tmux: &Path, socket: &Path) -> Option<BTreeSet<String>> {
    if !socket.exists() {
        return Some(BTreeSet::new());
    }
    let output = Command::new(tmux)
        .arg("-S")
        .arg(socket)
        .args(["list-sessions", "-F", "#{session_name}"])
        .env_remove("TMUX")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        // No server listens on the socket: no session has a host.
        return Some(BTreeSet::new());
    }
    Some(String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect())
}

/// `=name`: the session of exactly this name, never a prefix match.
fn exact(name: &str) -> String {
    format!("={name}")
}

/// What a control-mode client reads.
#[derive(Debug, PartialEq, Eq)]
pub enum Followed {
    /// Bytes the pane received.
    Output(Vec<u8>),
    /// The client is attached: output from here on reaches it.
    Attached,
    /// The session ended or the client was detached.
    Exit,
}

/// A tmux control-mode client on one session.
pub struct Follower {
    child: Child,
    input: ChildStdin,
    output: Option<BufReader<ChildStdout>>,
    name: String,
}

impl Follower {
    /// Takes the reader of the client's notifications (once).
    pub fn take_reader(&mut self) -> Option<FollowReader> {
        self.output.take().map(|output| FollowReader { output })
    }

    /// Waits until the client is attached, then asks the pane for its history and screen
    /// with their colours (`capture-pane -p -e -J -S -`) through the client itself, lines
    /// ended by CR LF as a terminal needs them; empty when the session is gone. Output
    /// the client reports before the answer is in the answer already and is dropped, and
    /// all that follows the answer is new: no byte is lost or repeated between the two,
    /// and input typed after this reaches a client that sees its echo. Call it before
    /// [`Follower::take_reader`].
    pub fn catch_up(&mut self) -> Vec<u8> {
        let Some(output) = self.output.as_mut() else {
            return Vec::new();
        };
        let mut block: Option<Vec<u8>> = None;
        let mut attached = false;
        let mut asked = false;
        let mut answer: Option<Vec<u8>> = None;
        let mut line = Vec::new();
        loop {
            if attached && block.is_none() && !asked {
                let command = format!("capture-pane -p -e -J -S - -t {}:\n", exact(&self.name));
                if self.input.write_all(command.as_bytes()).and_then(|()| self.input.flush()).is_err() {
                    return Vec::new();
                }
                asked = true;
            }
            line.clear();
            match output.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return Vec::new(),
                Ok(_) => {}
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            match (&block, &mut answer) {
                // Inside the answer: its lines, until the block's own end.
                (Some(end), Some(lines)) if text == end.as_slice() => return terminal_lines(lines),
                (Some(end), Some(_)) if failed(text, end) => return Vec::new(),
                (Some(_), Some(lines)) => {
                    lines.extend_from_slice(text);
                    lines.push(b'\n');
                }
                (Some(end), None) if text == end.as_slice() || failed(text, end) => block = None,
                _ if text.starts_with(b"%begin ") => {
                    block = Some([b"%end ", &text[7..]].concat());
                    if asked {
                        answer = Some(Vec::new());
                    }
                }
                _ if text.starts_with(b"%session-changed") => attached = true,
                _ if text.starts_with(b"%exit") => return Vec::new(),
                _ => {}
            }
        }
    }

    /// Types `bytes` into the session's pane.
    pub fn input(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        for chunk in bytes.chunks(256) {
            let mut line = format!("send-keys -t ={}: -H", self.name);
            for byte in chunk {
                line.push_str(&format!(" {byte:02x}"));
            }
            line.push('\n');
            self.input.write_all(line.as_bytes())?;
        }
        self.input.flush()
    }

    /// Sets the size this client asks the window to have.
    pub fn resize(&mut self, cols: u16, rows: u16) -> std::io::Result<()> {
        self.input.write_all(format!("refresh-client -C {cols}x{rows}\n").as_bytes())?;
        self.input.flush()
    }

    /// Detaches the client; the session goes on.
    pub fn detach(&mut self) {
        let _ = self.input.write_all(b"detach-client\n");
        let _ = self.input.flush();
    }

    /// Waits for the client to end.
    pub fn wait(&mut self) {
        let _ = self.child.wait();
    }

    /// Ends the client at once (the session goes on).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The notifications of a control-mode client.
pub struct FollowReader {
    output: BufReader<ChildStdout>,
}

impl FollowReader {
    /// The next notification that matters; `Exit` at the end of the stream.
    pub fn next_event(&mut self) -> Followed {
        let mut line = Vec::new();
        loop {
            line.clear();
            match self.output.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return Followed::Exit,
                Ok(_) => {}
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if let Some(rest) = text.strip_prefix(b"%output ") {
                let data = rest.splitn(2, |byte| *byte == b' ').nth(1).unwrap_or_default();
                return Followed::Output(unescape(data));
            }
            if text.starts_with(b"%session-changed") {
                return Followed::Attached;
            }
            if text.starts_with(b"%exit") {
                return Followed::Exit;
            }
        }
    }
}

/// Whether `text` is the `%error` line that ends the block `end` (`%end …`) would end.
fn failed(text: &[u8], end: &[u8]) -> bool {
    text.strip_prefix(b"%error") == end.strip_prefix(b"%end")
}

/// A command's answer (lines ended by LF, the last ones blank) as a terminal shows it:
/// lines ended by CR LF, the trailing blank lines left out.
fn terminal_lines(answer: &[u8]) -> Vec<u8> {
    let mut end = answer.len();
    while end > 0 && answer[end - 1] == b'\n' {
        end -= 1;
    }
    let mut bytes = Vec::with_capacity(end + 64);
    for (index, line) in answer[..end].split(|byte| *byte == b'\n').enumerate() {
        if index > 0 {
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(line);
    }
    bytes
}

/// Undoes control mode's escaping: `\ooo` (three octal digits) is a byte; every other
/// byte stands for itself.
pub fn unescape(data: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(data.len());
    let mut index = 0;
    while let Some(&byte) = data.get(index) {
        let octal =
            data.get(index + 1..index + 4).filter(|digits| digits.iter().all(|digit| (b'0'..=b'7').contains(digit)));
        match (byte, octal) {
            (b'\\', Some(digits)) => {
                let value = digits.iter().fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
                bytes.push(u8::try_from(value & 0xff).unwrap_or_default());
                index += 4;
            }
            _ => {
                bytes.push(byte);
                index += 1;
            }
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_mode_output_is_unescaped() {
        assert_eq!(unescape(b"got x\\015\\012"), b"got x\r\n".to_vec());
        assert_eq!(unescape(b"a\\134b"), b"a\\b".to_vec());
        assert_eq!(unescape(b"\\33[1m\\"), b"\\33[1m\\".to_vec());
    }
}
