//! `acompose doctor [--json]`: the host examines the home (`acompose_driver::doctor`);
//! this module prints one line per check, and the fix under each failure or warning.
//! Exit code 1 when any check failed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use acompose_driver::doctor::{Check, Status, config_failure, examine};
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::home::settings::{self, Flags};

use crate::terminal::Terminal;
use crate::{exit, print_stdout};

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The folder `owner/repo` paths resolve under, as a command given it would see it.
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// Print JSON (`acompose.doctor.v1`).
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: &DoctorArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let flags =
        Flags { home: home.map(Path::to_path_buf), projects_root: args.projects_root.clone(), ..Flags::default() };
    let path_variable = std::env::var_os("PATH");
    let checks = match settings::resolve(&flags) {
        Ok(settings) => examine(&settings, path_variable.as_deref()),
        Err(error) => vec![config_failure(&error)],
    };
    let failed = checks.iter().any(|check| check.status == Status::Failure);
    if args.json {
        print_stdout(&document(&checks));
    } else {
        print_stdout(&text(&checks, terminal.quiet));
    }
    if failed { exit::INVALID } else { exit::SUCCESS }
}

fn document(checks: &[Check]) -> String {
    #[derive(serde::Serialize)]
    struct Entry<'a> {
        name: &'a str,
        status: &'static str,
        detail: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        fix: Option<&'a str>,
    }
    #[derive(serde::Serialize)]
    struct Document<'a> {
        format: &'static str,
        failed: usize,
        warnings: usize,
        checks: Vec<Entry<'a>>,
    }
    let count = |status: Status| checks.iter().filter(|check| check.status == status).count();
    let document = Document {
        format: "acompose.doctor.v1",
        failed: count(Status::Failure),
        warnings: count(Status::Warning),
        checks: checks
            .iter()
            .map(|check| Entry {
                name: &check.name,
                status: check.status.name(),
                detail: &check.detail,
                fix: check.fix.as_deref(),
            })
            .collect(),
    };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

/// One line per check (`-q`: failures only), the fix indented under it, and a total.
fn text(checks: &[Check], quiet: bool) -> String {
    let width = checks.iter().map(|check| check.name.len()).max().unwrap_or(0);
    let mut text = String::new();
    for check in checks.iter().filter(|check| !quiet || check.status == Status::Failure) {
        let _ =
            writeln!(text, "{:<7} {:<width$}  {}", check.status.name(), sanitize(&check.name), sanitize(&check.detail));
        if let Some(fix) = check.fix.as_deref().filter(|_| check.status >= Status::Note) {
            let _ = writeln!(text, "{:<7} {:<width$}  fix: {}", "", "", sanitize(fix));
        }
    }
    let failed = checks.iter().filter(|check| check.status == Status::Failure).count();
    let warnings = checks.iter().filter(|check| check.status == Status::Warning).count();
    if !quiet {
        let _ = writeln!(text, "{} checks: {failed} failed, {warnings} warning(s)", checks.len());
    }
    text
}
