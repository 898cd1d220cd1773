//! The cli's side of the host's `Progress`: an indicatif bar on stderr for cold
//! convergences of large estates (shown only on a terminal and only when there is enough
//! work to be worth watching), phase timings for `-vv`, and warnings on stderr.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

use acompose_driver::{Findings, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::print_stderr;
use crate::terminal::{Terminal, render_diagnostics};

/// Below this many steps a bar would only flicker.
const MINIMUM_STEPS: usize = 20;

/// Progress shown on the terminal.
pub struct TerminalProgress<'a> {
    terminal: &'a Terminal,
    bar: Mutex<Option<ProgressBar>>,
    phase_started: Mutex<Instant>,
}

impl<'a> TerminalProgress<'a> {
    pub fn new(terminal: &'a Terminal) -> Self {
        TerminalProgress { terminal, bar: Mutex::new(None), phase_started: Mutex::new(Instant::now()) }
    }

    fn with_bar(&self, action: impl FnOnce(&ProgressBar)) {
        if let Ok(bar) = self.bar.lock()
            && let Some(bar) = bar.as_ref()
        {
            action(bar);
        }
    }
}

/// A bar of `steps` steps, hidden unless stderr is a terminal and `--quiet` is off.
fn bar(terminal: &Terminal, steps: usize, message: &'static str) -> ProgressBar {
    if terminal.quiet || steps < MINIMUM_STEPS || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(steps as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg} {bar:30} {pos}/{len}") {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar
}

impl Progress for TerminalProgress<'_> {
    fn phase_clock_reset(&self) {
        if let Ok(mut started) = self.phase_started.lock() {
            *started = Instant::now();
        }
    }

    fn phase(&self, name: &str) {
        if self.terminal.verbose < 2 {
            return;
        }
        if let Ok(mut started) = self.phase_started.lock() {
            let now = Instant::now();
            print_stderr(&format!("phase     {name}: {} ms\n", (now - *started).as_millis()));
            *started = now;
        }
    }

    fn begin(&self, message: &'static str, steps: usize) {
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar(self.terminal, steps, message));
        }
    }

    fn extend(&self, steps: usize) {
        self.with_bar(|bar| bar.inc_length(steps as u64));
    }

    fn advance(&self, steps: usize) {
        self.with_bar(|bar| bar.inc(steps as u64));
    }

    fn finish(&self) {
        if let Ok(mut slot) = self.bar.lock()
            && let Some(bar) = slot.take()
        {
            bar.finish_and_clear();
        }
    }

    fn warn(&self, message: &str) {
        crate::terminal::warn(self.terminal, message);
    }

    fn diagnostics(&self, findings: &Findings) {
        if !self.terminal.quiet {
            let shown = crate::terminal::visible(&findings.diagnostics, *self.terminal);
            print_stderr(&render_diagnostics(&shown, self.terminal.stderr, &|path| findings.text_of(path)));
        }
    }
}
