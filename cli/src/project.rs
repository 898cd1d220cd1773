//! `acompose project BUNDLE --layout H --scope repo|home`: the driver verifies the bundle
//! and writes its instructions and skills into the harness layout transactionally; and
//! `acompose unproject`, which takes a projection out again. This module prints what
//! changed.

use std::path::{Path, PathBuf};

use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::harness_layout::{self, Scope};
use acompose_driver::engine::projection::Mode;
use acompose_driver::git_exclude::Excluded;
use acompose_driver::home::resolve_home;
use acompose_driver::projection::{
    GitExclusion, Hidden, Report, Request, TakenOut, Unprojected, default_target, project, unproject, unproject_layout,
};
use acompose_driver::projections;
use acompose_driver::transaction::NoFaults;

use crate::terminal::{Terminal, report_error, warn};
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
    /// The bundle directory (`<out>/<id>`), a bundle id prefix of at least four hex
    /// digits, or a role of the home: its bundle in the home's index, which the
    /// projection then follows through every convergence.
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

pub fn run(args: ProjectArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let Some(layout) = harness_layout::layout(&args.layout) else {
        return exit::USAGE;
    };
    let home = resolve_home(home).ok();
    let bundle = match acompose_driver::bundle_name::resolve(home.as_deref(), &args.bundle) {
        Ok(bundle) => bundle,
        Err(error) => return report_error(&error, terminal),
    };
    let scope = args.scope.scope();
    let target = match args.target.clone().map_or_else(|| default_target(scope), Ok) {
        Ok(target) => target,
        Err(error) => return report_error(&error, terminal),
    };
    let mode = if args.copy { Mode::Copy } else { Mode::Link };
    let request = Request {
        bundle: &bundle,
        layout,
        scope,
        target: &target,
        mode,
        extra_links: &[],
        mcp_file: None,
        git: GitExclusion::Local,
    };
    let report = match project(&request, &mut NoFaults) {
        Ok(report) => report,
        Err(error) => return report_error(&acompose_driver::mounts::explain_refusal(home.as_deref(), error), terminal),
    };
    let follows = match home.as_deref().map(|home| projections::register(home, &target, &bundle, &report.details.role))
    {
        Some(Ok(follows)) => follows,
        Some(Err(error)) => return report_error(&error, terminal),
        None => false,
    };
    if let Some(Excluded::Failed(reason)) = &report.excluded {
        warn(
            terminal,
            &format!(
                "the projection stands, but its paths could not be listed in the repository's exclude file: {}",
                sanitize(reason)
            ),
        );
    }
    for warning in &report.listing {
        print_stderr(&format!("warning: {warning}\n"));
    }
    if let Hidden::Failed(reason) = &report.hidden {
        warn(
            terminal,
            &format!("the projection stands, but git will show its managed blocks as changes: {}", sanitize(reason)),
        );
    }
    if args.json {
        print_stdout(&projected_json(&report));
    } else if !terminal.quiet {
        let mut text = projected_text(&report, layout.display_name, terminal.verbose > 0);
        if follows {
            text.push_str("it follows its role: every convergence projects the role's new bundle here\n");
        }
        print_stdout(&text);
    }
    exit::SUCCESS
}

/// The `acompose.project.v1` document.
fn projected_json(report: &Report) -> String {
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
        hidden_from_git: &'a [String],
    }
    let (details, outcome) = (&report.details, &report.outcome);
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
        hidden_from_git: match &report.hidden {
            Hidden::Files(files) => files,
            Hidden::Failed(_) => &[],
        },
    };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

/// What a projection did, as text; each written and removed path with `verbose`.
fn projected_text(report: &Report, harness: &str, verbose: bool) -> String {
    let (details, outcome) = (&report.details, &report.outcome);
    let mut text = format!(
        "projected {} ({}) into `{}` as {harness} at {} scope\n",
        details.bundle,
        sanitize(&details.role),
        report.target.display(),
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
    for block in &details.blocks {
        text.push_str(&format!("instructions: a managed block in your `{}`\n", sanitize(&block.path)));
    }
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
    if let Hidden::Files(files) = &report.hidden {
        for path in files {
            text.push_str(&format!(
                "git: `{}` is tracked; its block is hidden from `git status` (skip-worktree, this clone only) until `acompose unproject`\n",
                sanitize(path)
            ));
        }
    }
    if verbose {
        for path in &outcome.written {
            text.push_str(&format!("  wrote   {}\n", sanitize(path)));
        }
        for path in &outcome.removed {
            text.push_str(&format!("  removed {}\n", sanitize(path)));
        }
    }
    text
}

#[derive(Debug, clap::Args)]
pub struct UnprojectArgs {
    /// The folder holding the projection (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Take out only this layout; the projection's other layouts stay.
    #[arg(long, value_name = "HARNESS", value_parser = clap::builder::PossibleValuesParser::new(harness_layout::harness_names()))]
    pub layout: Option<String>,
    /// Print the result as JSON (`acompose.unproject.v1`).
    #[arg(long)]
    pub json: bool,
}

pub fn run_unproject(args: UnprojectArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let target = match args.target.clone().map_or_else(|| default_target(Scope::Repository), Ok) {
        Ok(target) => target,
        Err(error) => return report_error(&error, terminal),
    };
    let taken = match &args.layout {
        Some(harness) => unproject_layout(&target, harness, &mut NoFaults),
        None => unproject(&target, &mut NoFaults).map(TakenOut::Whole),
    };
    let report = match taken {
        Ok(TakenOut::Whole(report)) => report,
        Ok(TakenOut::Layout(report)) => {
            if args.json {
                print_stdout(&projected_json(&report));
            } else if !terminal.quiet {
                print_stdout(&projected_text(&report, &report.details.layout, terminal.verbose > 0));
            }
            return exit::SUCCESS;
        }
        Err(error) => return report_error(&error, terminal),
    };
    if let Some(Err(error)) = resolve_home(home).ok().map(|home| projections::unregister(&home, &target)) {
        return report_error(&error, terminal);
    }
    if let Excluded::Failed(reason) = &report.excluded {
        warn(
            terminal,
            &format!("the projection is gone, but the repository's exclude file still lists it: {}", sanitize(reason)),
        );
    }
    if let Err(reason) = &report.shown {
        warn(
            terminal,
            &format!(
                "the projection is gone, but git still skips its instructions files (`git update-index --no-skip-worktree FILE`): {}",
                sanitize(reason)
            ),
        );
    }
    if args.json {
        print_stdout(&unprojected_json(&report));
    } else if !terminal.quiet {
        print_stdout(&unprojected_text(&report));
    }
    exit::SUCCESS
}

fn unprojected_json(report: &Unprojected) -> String {
    #[derive(serde::Serialize)]
    struct Document<'a> {
        format: &'static str,
        target: String,
        bundle: &'a str,
        layout: &'a str,
        removed: &'a [String],
        restored: &'a [String],
    }
    let document = Document {
        format: "acompose.unproject.v1",
        target: report.target.display().to_string(),
        bundle: &report.details.bundle,
        layout: &report.details.layout,
        removed: &report.removed,
        restored: &report.restored,
    };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

fn unprojected_text(report: &Unprojected) -> String {
    let mut text = format!(
        "unprojected {} ({}) from `{}`: {} removed, {} restored\n",
        report.details.bundle,
        sanitize(&report.details.role),
        sanitize(&report.target.display().to_string()),
        report.removed.len(),
        report.restored.len()
    );
    for path in &report.restored {
        text.push_str(&format!("  restored {} (its acompose block taken out)\n", sanitize(path)));
    }
    if let Excluded::Cleared(exclude) = &report.excluded {
        text.push_str(&format!("git: its paths were taken out of `{}`\n", sanitize(&exclude.display().to_string())));
    }
    text
}

#[derive(Debug, clap::Args)]
pub struct ProjectionsArgs {
    /// Print the list as JSON (`acompose.projections.v1`).
    #[arg(long)]
    pub json: bool,
}

pub fn run_projections(args: &ProjectionsArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(error) => return report_error(&error, terminal),
    };
    let listed = projections::list(&home);
    if args.json {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            target: String,
            role: &'a str,
            layout: &'a str,
            bundle: &'a str,
            state: &'static str,
        }
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            projections: Vec<Row<'a>>,
        }
        let projections = listed
            .iter()
            .map(|entry| Row {
                target: entry.target.display().to_string(),
                role: &entry.role,
                layout: &entry.layout,
                bundle: &entry.bundle,
                state: entry.state.name(),
            })
            .collect();
        let document = Document { format: "acompose.projections.v1", projections };
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)));
        return exit::SUCCESS;
    }
    if listed.is_empty() && !terminal.quiet {
        print_stderr("no projection follows a role of this home; `acompose project ROLE --layout H` makes one\n");
    }
    let mut text = String::new();
    for entry in &listed {
        let layout = if entry.layout.is_empty() { "-" } else { entry.layout.as_str() };
        let bundle = if entry.bundle.is_empty() { "-" } else { entry.bundle.as_str() };
        text.push_str(&format!(
            "{}  {}@{}  {}  {}\n",
            sanitize(&entry.target.display().to_string()),
            sanitize(&entry.role),
            sanitize(layout),
            sanitize(bundle),
            entry.state.name()
        ));
    }
    print_stdout(&text);
    exit::SUCCESS
}
