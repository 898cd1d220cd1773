//! `acompose catalog check|audit [DIR…] [--json] [--format text|json|sarif]`: renders
//! the host's Agent Skills check and content audit of catalogues (the audit under the
//! home's `audit_policy`). Owns no rule and reads no file itself.

use std::path::{Path, PathBuf};

use acompose_driver::doctor::catalogue_check::{Options, check_with};

use crate::exit;
use crate::output::CommandOutput;
use crate::terminal::{Terminal, ended_by_error, render_diagnostics, visible};

/// How `catalog check` and `catalog audit` print their report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Sarif,
}

/// Checks (or only audits) every folder (the current folder when none is given); exit 1
/// on an error-level finding.
pub(crate) fn run(
    directories: &[PathBuf],
    format: ReportFormat,
    audit_only: bool,
    home: Option<&Path>,
    terminal: &Terminal,
) -> u8 {
    let flags = acompose_driver::home::settings::Flags { home: home.map(Path::to_path_buf), ..Default::default() };
    let policy = match acompose_driver::home::settings::resolve(&flags) {
        Ok(settings) => settings.config.audit_policy,
        Err(error) => return crate::terminal::report_error(&error, terminal),
    };
    let options = Options { policy, audit_only };
    report_output(Path::new(""), directories, format, options, terminal).print()
}

/// What `catalog check` prints for `directories` as given, read under
/// `working_directory` (empty for the process's own): the same text the command prints
/// when run in that folder.
pub fn check_output(
    working_directory: &Path,
    directories: &[PathBuf],
    json: bool,
    terminal: &Terminal,
) -> CommandOutput {
    let format = if json { ReportFormat::Json } else { ReportFormat::Text };
    report_output(working_directory, directories, format, Options::default(), terminal)
}

/// What `catalog check` or `catalog audit` prints in `format`.
pub fn report_output(
    working_directory: &Path,
    directories: &[PathBuf],
    format: ReportFormat,
    options: Options,
    terminal: &Terminal,
) -> CommandOutput {
    let mut output = CommandOutput::default();
    let checked = match check_with(working_directory, directories, options) {
        Ok(checked) => checked,
        Err(error) => return ended_by_error(output, &error, terminal),
    };
    let report = &checked.report;
    // A folder with no skill at all is almost always the wrong folder: say so.
    let empty = report.skills == 0;
    if format == ReportFormat::Sarif {
        let text_of = |path: &str| checked.texts.get(path).cloned();
        output.stdout(String::from_utf8_lossy(&crate::sarif::log(&checked.diagnostics, &text_of)));
    } else if format == ReportFormat::Json {
        let mut bytes = acompose_driver::engine::snapshot::to_json_bytes(report);
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        output.stdout(String::from_utf8_lossy(&bytes));
    } else {
        let shown = visible(&checked.diagnostics, *terminal);
        if !shown.is_empty() && (report.errors > 0 || !terminal.quiet) {
            let text_of = |path: &str| checked.texts.get(path).cloned();
            output.stderr(render_diagnostics(&shown, terminal.stderr, &text_of));
        }
        if !terminal.quiet && !empty {
            output.stdout(format!(
                "{} {} skill{} in {} catalogue{}: {} error{}, {} warning{}, {} folder{} without SKILL.md\n",
                if options.audit_only { "audited" } else { "checked" },
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
    if empty {
        let folders = if directories.is_empty() {
            "the current folder".to_owned()
        } else {
            directories
                .iter()
                .map(|folder| {
                    format!("`{}`", acompose_driver::engine::diagnostic::sanitize(&folder.display().to_string()))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        output.stderr(format!(
            "error: no skill found in {folders}: a skill is a folder holding `SKILL.md`, under a repository's `.agents/skills/`; pass a repository, its `.agents/skills` folder or a skill folder\n"
        ));
        return output.exit(exit::INVALID);
    }
    output.exit(if report.errors > 0 { exit::INVALID } else { exit::SUCCESS })
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
