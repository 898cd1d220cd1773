//! `acompose project BUNDLE --layout H --scope repo|home`: the host verifies the bundle
//! and writes its instructions and skills into the harness layout transactionally; this
//! module prints what changed.

use std::path::PathBuf;

use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::harness_layout::{self, Scope};
use acompose_driver::engine::projection::Mode;
use acompose_driver::git_exclude::Excluded;
use acompose_driver::projection::{GitExclusion, Request, default_target, project};
use acompose_driver::transaction::NoFaults;

use crate::terminal::{Terminal, report_error};
use crate::{exit, print_stderr, print_stdout};

/// `--scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    /// A repository checkout: `CLAUDE.md`, `.claude/skills/`, …
    Repo,
    /// A home folder: `~/.claude/CLAUDE.md`, `~/.claude/skills/`, …
    Home,
}

impl ScopeArg {
    pub fn scope(self) -> Scope {
        match self {
            ScopeArg::Repo => Scope::Repository,
            ScopeArg::Home => Scope::Home,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ProjectArgs {
    /// The bundle directory (`<out>/<id>`).
    pub bundle: PathBuf,
    /// The harness layout to write.
    #[arg(long, value_name = "HARNESS", value_parser = clap::builder::PossibleValuesParser::new(harness_layout::harness_names()))]
    pub layout: String,
    /// Repository or home layout.
    #[arg(long, value_enum, default_value = "repo")]
    pub scope: ScopeArg,
    /// The folder to write into (default: the current folder for `repo`, the home folder
    /// for `home`).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Copy skill files instead of linking each skill folder to the bundle.
    #[arg(long)]
    pub copy: bool,
    /// Print the result as JSON (`acompose.project.v1`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ProjectArgs, terminal: &Terminal) -> u8 {
    let Some(layout) = harness_layout::layout(&args.layout) else {
        return exit::USAGE;
    };
    let scope = args.scope.scope();
    let target = match args.target.clone().map_or_else(|| default_target(scope), Ok) {
        Ok(target) => target,
        Err(error) => return report_error(&error, terminal),
    };
    let mode = if args.copy { Mode::Copy } else { Mode::Link };
    let request = Request {
        bundle: &args.bundle,
        layout,
        scope,
        target: &target,
        mode,
        extra_links: &[],
        git: GitExclusion::Local,
    };
    let report = match project(&request, &mut NoFaults) {
        Ok(report) => report,
        Err(error) => return report_error(&error, terminal),
    };
    let outcome = &report.outcome;
    if let Some(Excluded::Failed(reason)) = &report.excluded {
        print_stderr(&format!(
            "warning: the projection stands, but its paths could not be listed in the repository's exclude file: {}\n",
            sanitize(reason)
        ));
    }
    if args.json {
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            bundle: &'a str,
            layout: &'a str,
            scope: &'a str,
            mode: &'a str,
            target: String,
            skills: &'a [String],
            written: &'a [String],
            unchanged: usize,
            removed: &'a [String],
        }
        let details = &report.details;
        let document = Document {
            format: "acompose.project.v1",
            bundle: &details.bundle,
            layout: &details.layout,
            scope: &details.scope,
            mode: &details.mode,
            target: report.target.display().to_string(),
            skills: &details.skills,
            written: &outcome.written,
            unchanged: outcome.unchanged,
            removed: &outcome.removed,
        };
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)));
        return exit::SUCCESS;
    }
    if !terminal.quiet {
        let details = &report.details;
        let mut text = format!(
            "projected {} ({}) into `{}` as {} at {} scope\n",
            details.bundle,
            sanitize(&details.role),
            report.target.display(),
            layout.display_name,
            details.scope
        );
        text.push_str(&format!(
            "{} written, {} unchanged, {} removed; {} skills by {}\n",
            outcome.written.len(),
            outcome.unchanged,
            outcome.removed.len(),
            details.skills.len(),
            details.mode
        ));
        match &report.excluded {
            Some(Excluded::Listed(exclude)) => text.push_str(&format!(
                "git: its paths are listed in `{}` (local to this clone, never committed)\n",
                sanitize(&exclude.display().to_string())
            )),
            Some(Excluded::Cleared(exclude)) => text.push_str(&format!(
                "git: copies may be committed; its paths were taken out of `{}`\n",
                sanitize(&exclude.display().to_string())
            )),
            _ => {}
        }
        if terminal.verbose > 0 {
            for path in &outcome.written {
                text.push_str(&format!("  wrote   {}\n", sanitize(path)));
            }
            for path in &outcome.removed {
                text.push_str(&format!("  removed {}\n", sanitize(path)));
            }
        }
        print_stdout(&text);
    }
    exit::SUCCESS
}
