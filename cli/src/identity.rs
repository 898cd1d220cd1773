//! `acompose statusline` and `acompose whoami`: the identity of the nearest projection
//! (`.agent-compose/projection.json` at or above a folder), as one row or as a short
//! card. `statusline` is usable as Claude Code's `statusLine` command: it reads the
//! session JSON Claude Code sends on stdin for the working folder, and prints nothing
//! when no projection is found.

use std::io::{IsTerminal as _, Read as _};
use std::path::{Path, PathBuf};

use acompose_driver::delivery::identity::nearest;
use acompose_driver::delivery::tree_sight::start_folder_notes;
use acompose_driver::engine::projection::{Health, identity_row, whoami_text};

use crate::terminal::Terminal;
use crate::{exit, print_stderr, print_stdout};

/// The most stdin `statusline` reads; Claude Code's session JSON is a few KiB.
const STDIN_LIMIT: u64 = 256 * 1024;

#[derive(Debug, clap::Args)]
pub struct StatuslineArgs {
    /// The folder to start from (default: the working folder Claude Code sends on stdin,
    /// else the current folder).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct WhoamiArgs {
    /// The folder to start from (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Print the projection as JSON (`acompose.whoami.v1`).
    #[arg(long)]
    pub json: bool,
}

/// The working folder named in Claude Code's status line JSON, if stdin carries one.
fn folder_from_stdin() -> Option<PathBuf> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut bytes = Vec::new();
    stdin.lock().take(STDIN_LIMIT).read_to_end(&mut bytes).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let folder = value.pointer("/workspace/current_dir").or_else(|| value.get("cwd"))?.as_str()?;
    Some(PathBuf::from(folder))
}

fn current_folder() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

pub fn run_statusline(args: StatuslineArgs, terminal: &Terminal) -> u8 {
    let start = args.target.or_else(folder_from_stdin).unwrap_or_else(current_folder);
    if let Some(found) = nearest(&start) {
        print_stdout(&format!("{}\n", identity_row(&found.details, found.health, terminal.stdout)));
    }
    exit::SUCCESS
}

pub fn run_whoami(args: WhoamiArgs, terminal: &Terminal) -> u8 {
    let start = args.target.unwrap_or_else(current_folder);
    let found = nearest(&start);
    if let Some(found) = found.as_ref().filter(|_| !terminal.quiet) {
        for note in start_folder_notes(found, &start) {
            print_stderr(&format!("note: {note}\n"));
        }
    }
    match found {
        Some(found) if args.json => {
            #[derive(serde::Serialize)]
            struct Document<'a> {
                format: &'static str,
                target: String,
                health: &'static str,
                projection: &'a acompose_driver::engine::projection::Details,
            }
            let document = Document {
                format: "acompose.whoami.v1",
                target: found.target.display().to_string(),
                health: found.health.name(),
                projection: &found.details,
            };
            print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)));
            health_code(found.health)
        }
        Some(found) => {
            print_stdout(&whoami_text(&found.details, found.health, &found.target.display().to_string()));
            health_code(found.health)
        }
        None => {
            if !terminal.quiet {
                print_stderr(&format!(
                    "no projection at or above `{}`; `acompose project BUNDLE --layout H` makes one\n",
                    display(&start)
                ));
            }
            exit::INVALID
        }
    }
}

/// `whoami` succeeds only when the projection is whole and current: a harness reading a
/// missing, damaged or stale projection does not see the role it claims.
fn health_code(health: Health) -> u8 {
    if health == Health::Ok { exit::SUCCESS } else { exit::INVALID }
}

fn display(path: &Path) -> String {
    acompose_driver::engine::diagnostic::sanitize(&path.display().to_string())
}
