//! `acompose catalog check [DIR…] [--json]`: renders the host's Agent Skills check of
//! catalogues. Owns no rule and reads no file itself.

use std::path::{Path, PathBuf};

use acompose_driver::catalogue_check::check;

use crate::terminal::{Terminal, render_diagnostics, report_error, visible};
use crate::{exit, print_stderr, print_stdout};

/// Checks every folder (the current folder when none is given); exit 1 on an
/// error-level finding.
pub fn run(directories: &[PathBuf], json: bool, terminal: &Terminal) -> u8 {
    let checked = match check(Path::new(""), directories) {
        Ok(checked) => checked,
        Err(error) => return report_error(&error, terminal),
    };
    let report = &checked.report;
    if json {
        let mut bytes = acompose_driver::engine::snapshot::to_json_bytes(report);
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        print_stdout(&String::from_utf8_lossy(&bytes));
    } else {
        let shown = visible(&checked.diagnostics, *terminal);
        if !shown.is_empty() && (report.errors > 0 || !terminal.quiet) {
            let text_of = |path: &str| checked.texts.get(path).cloned();
            print_stderr(&render_diagnostics(&shown, terminal.stderr, &text_of));
        }
        if !terminal.quiet {
            print_stdout(&format!(
                "checked {} skill{} in {} catalogue{}: {} error{}, {} warning{}, {} folder{} without SKILL.md\n",
                report.skills,
                plural(report.skills),
                report.catalogues.len(),
                plural(report.catalogues.len()),
                report.errors,
                plural(report.errors),
                report.warnings,
                plural(report.warnings),
                checked.not_skills,
                plural(checked.not_skills),
            ));
        }
    }
    if report.errors > 0 { exit::INVALID } else { exit::SUCCESS }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
