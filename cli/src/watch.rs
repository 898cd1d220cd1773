//! `acompose watch`: converge, then keep the database alive and reconverge on every
//! change of an input (person package, libraries, catalogues, the host configuration),
//! recomputing only what depends on it. One line per reconvergence. A broken edit prints
//! its diagnostics and keeps the last good outputs. Ctrl-C stops after the current step.
//! The host's `Watcher` decides what to re-read; this module owns Ctrl-C and printing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use acompose_driver::convergence::watch::{WatchEvent, Watcher};

use crate::progress::TerminalProgress;
use crate::terminal::{Terminal, report_error, summary};
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
    /// `projects_root` in `agent-compose.yaml`, else `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// How long changes settle before a reconvergence, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub debounce: u64,
}

pub(crate) fn run(home: Option<&Path>, args: &WatchArgs, terminal: &Terminal) -> u8 {
    let (home, projects) = match crate::home_and_projects(home, args.projects_root.as_deref()) {
        Ok(places) => places,
        Err(error) => return report_error(&error, terminal),
    };
    let progress = TerminalProgress::new(terminal);
    let started = Instant::now();
    let mut watcher = match Watcher::start(&home, &projects, Duration::from_millis(args.debounce), &progress) {
        Ok((watcher, report)) => {
            print_stdout(&summary(&report, started.elapsed()));
            watcher
        }
        Err(error) => return report_error(&error, terminal),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = Arc::clone(&stop);
    if ctrlc::set_handler(move || handler_stop.store(true, Ordering::SeqCst)).is_err() {
        crate::terminal::warn(terminal, "cannot install the Ctrl-C handler; stop with a signal");
    }
    print_stdout(&format!("watching {} folders; Ctrl-C stops\n", watcher.watched_folders()));
    while !stop.load(Ordering::SeqCst) {
        match watcher.next(&progress) {
            WatchEvent::Nothing => {}
            WatchEvent::Settled if terminal.verbose > 0 => {
                print_stdout("settled: fingerprints saved\n");
            }
            WatchEvent::Settled => {}
            WatchEvent::Disconnected => break,
            WatchEvent::Reconverged { what, report, elapsed } => {
                print_stdout(&format!(
                    "reconverged: {what} changed; queries {} executed, {} reused; {} files written; {} ms\n",
                    report.queries_executed,
                    report.queries_reused,
                    report.files_written,
                    elapsed.as_millis()
                ));
                if !report.failed.is_empty() {
                    print_stderr(&crate::terminal::failed_lines(&report.failed));
                }
            }
            WatchEvent::Failed { what, error } => {
                report_error(&error, terminal);
                print_stderr(&format!("reconvergence failed after {what} changed; keeping the last good outputs\n"));
            }
            WatchEvent::ConfigurationInvalid { error } => {
                report_error(&error, terminal);
                print_stderr("reconvergence skipped: the configuration is invalid; keeping the last good outputs\n");
            }
        }
    }
    watcher.stop();
    print_stdout("stopped watching\n");
    exit::SUCCESS
}
