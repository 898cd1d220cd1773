//! A progress bar on stderr for cold convergences of large estates: shown only on a
//! terminal and only when there is enough work to be worth watching.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::terminal::Terminal;

/// Below this many steps a bar would only flicker.
const MINIMUM_STEPS: usize = 20;

/// A bar of `steps` steps, hidden unless stderr is a terminal and `--quiet` is off.
pub fn bar(terminal: &Terminal, steps: usize, message: &'static str) -> ProgressBar {
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
