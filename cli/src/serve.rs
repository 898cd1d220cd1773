//! `acompose serve`: starts the local server (`acompose_server`) on loopback, prints the
//! address with its per-run token, optionally opens a browser, and stops cleanly on
//! Ctrl-C. Everything the server does is in `acompose_server`; this module only starts
//! it, prints and waits.

use std::path::PathBuf;
use std::sync::mpsc;

use acompose_driver::people::Stop;
use acompose_driver::people::report;
use acompose_server::{ConnectionLimits, Options, ServeError};

use crate::terminal::Terminal;
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The People workspace folder.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    /// The loopback port (default: one the system chooses).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
}

pub(crate) fn run(args: &ServeArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    let options = Options {
        roster: crate::people::roster_place(home, terminal),
        workspace: args.workspace.clone(),
        port: args.port,
        path_variable: std::env::var_os("PATH"),
        limits: ConnectionLimits::default(),
        home: home.map(std::path::Path::to_path_buf),
        supervisor: std::env::current_exe().ok(),
    };
    let handle = match acompose_server::start(&options) {
        Ok(handle) => handle,
        Err(ServeError::Workspace(stop)) => return report_workspace(stop),
        Err(ServeError::Environment(message)) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::ENVIRONMENT;
        }
    };
    let (stopped, stop_requested) = mpsc::channel();
    if ctrlc::set_handler(move || {
        let _ = stopped.send(());
    })
    .is_err()
    {
        crate::terminal::warn(terminal, "cannot install the Ctrl-C handler; stop with a signal");
    }
    // The address is printed even with --quiet: without it the server cannot be used.
    print_stdout(&format!("{}\n", handle.url()));
    if !terminal.quiet {
        print_stderr(
            "serving on loopback only; the token in the address is needed by every API request; Ctrl-C stops\n",
        );
    }
    if args.open {
        open_browser(&handle.url(), terminal);
    }
    // Waits for Ctrl-C; a dropped sender (no handler) also ends the wait.
    let _ = stop_requested.recv();
    handle.stop();
    if !terminal.quiet {
        print_stderr("stopped\n");
    }
    exit::SUCCESS
}

fn report_workspace(stop: Stop) -> u8 {
    match stop {
        Stop::Findings(findings) => {
            print_stderr(&report::findings_text(&findings));
            exit::INVALID
        }
        Stop::Invalid(message) => {
            print_stderr(&format!("error: {message}\n"));
            exit::INVALID
        }
        Stop::Reported => exit::INVALID,
        Stop::Io(error) => {
            print_stderr(&format!("error: {error}\n"));
            exit::ENVIRONMENT
        }
    }
}

/// Asks the desktop to open the page; a failure is only a warning (the address is printed).
fn open_browser(url: &str, terminal: &Terminal) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if std::process::Command::new(opener).arg(url).spawn().is_err() {
        crate::terminal::warn(terminal, "could not open a browser; open the address above yourself");
    }
}
