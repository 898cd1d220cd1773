//! How the host tells its caller what it is doing while it works: phases, counted work
//! and warnings that do not stop the run. The cli draws a bar and prints; a server can
//! stream the same calls. Decides nothing about how or whether anything is shown.

use crate::error::Findings;

/// Receives progress from long operations. Every method has a silent default, so a
/// caller implements only what it shows.
pub trait Progress: Sync {
    /// A convergence begins: phases are timed from here.
    fn phase_clock_reset(&self) {}
    /// A phase of a convergence has ended (the caller may time phases for `-vv`).
    fn phase(&self, _name: &str) {}
    /// Work of `steps` steps begins.
    fn begin(&self, _message: &'static str, _steps: usize) {}
    /// More steps than announced turned out to be needed.
    fn extend(&self, _steps: usize) {}
    /// `steps` steps are done.
    fn advance(&self, _steps: usize) {}
    /// The work announced by `begin` is over.
    fn finish(&self) {}
    /// A problem that does not stop the run (a cache discarded, a folder not watched).
    fn warn(&self, _message: &str) {}
    /// Diagnostics of a run that goes on: warnings only.
    fn diagnostics(&self, _findings: &Findings) {}
}

/// Progress nobody looks at (tests, benchmarks, `--quiet` callers).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
