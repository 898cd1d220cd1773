//! `acompose project BUNDLE --layout H --scope repo|home`: the driver verifies the bundle
//! and writes its instructions and skills into the harness layout transactionally; and
//! `acompose unproject`, which takes a projection out again. This module prints what
//! changed.

use std::path::{Path, PathBuf};

use acompose_driver::delivery::git_exclude::Excluded;
use acompose_driver::delivery::git_filter;
use acompose_driver::delivery::projection::{
    GitExclusion, Report, Request, TakenOut, Unprojected, default_target, unproject, unproject_layout,
};
use acompose_driver::delivery::projection_git::GitOutcome;
use acompose_driver::delivery::projections;
use acompose_driver::delivery::tree_sight::{self, ForeignContext, TreeReport, project_in_tree};
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::harness_layout::{self, Scope};
use acompose_driver::engine::projection::Mode;
use acompose_driver::home::resolve_home;
use acompose_driver::home::transaction::NoFaults;

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
    /// Project although another role's projection is in the target's git work tree
    /// (above or below it); a harness started there then reads both roles.
    #[arg(long)]
    pub allow_foreign_context: bool,
}

pub(crate) fn run(args: ProjectArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let Some(layout) = harness_layout::layout(&args.layout) else {
        return exit::USAGE;
    };
    let home = resolve_home(home).ok();
    let bundle = match acompose_driver::convergence::bundle_name::resolve(home.as_ref(), &args.bundle) {
        Ok(bundle) => bundle,
        Err(error) => return report_error(&error, terminal),
    };
    // A pulled bundle must pass the home's `bundle_signers` policy.
    if let Some(home) = &home
        && let Err(error) = acompose_driver::compose::signature::enforce_for_use(home, &bundle)
    {
        return report_error(&error, terminal);
    }
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
    // Registered before anything is written: a run stopped anywhere is one bare
    // `acompose` finishes.
    let ahead = match home.as_ref().map(|home| projections::register_ahead(home, &target, &bundle)) {
        Some(Ok(ahead)) => Some(ahead),
        Some(Err(error)) => return report_error(&error, terminal),
        None => None,
    };
    let context = if args.allow_foreign_context { ForeignContext::Allow } else { ForeignContext::Refuse };
    let in_tree = match project_in_tree(&request, context, &mut NoFaults) {
        Ok(in_tree) => in_tree,
        Err(error) => {
            if let (Some(home), Some(ahead)) = (home.as_ref(), ahead) {
                let _ = projections::register_failed(home, &target, ahead);
            }
            return report_error(&acompose_driver::delivery::mounts::explain_refusal(home.as_ref(), error), terminal);
        }
    };
    let report = &in_tree.report;
    let follows = match home.as_ref().map(|home| projections::register(home, &target, &bundle, &report.details.role)) {
        Some(Ok(follows)) => follows,
        Some(Err(error)) => return report_error(&error, terminal),
        None => false,
    };
    if let Some(git) = &report.git {
        warn_git(git, terminal);
    }
    for warning in &report.listing {
        print_stderr(&format!("warning: {warning}\n"));
    }
    warn_about_tree(&in_tree, terminal);
    if args.json {
        print_stdout(&projected_json(report));
    } else if !terminal.quiet {
        let mut text = projected_text(report, layout.display_name, terminal.verbose > 0);
        if follows {
            text.push_str("it follows its role: every convergence projects the role's new bundle here\n");
        }
        print_stdout(&text);
    }
    exit::SUCCESS
}

/// What the target's work tree shows the projection's harnesses besides the role: other
/// roles' projections let through with `--allow-foreign-context`, skills named like a
/// role skill, and where a harness that reads skills only where it starts sees none.
fn warn_about_tree(in_tree: &TreeReport, terminal: &Terminal) {
    for other in tree_sight::named(&in_tree.foreign) {
        print_stderr(&format!("warning: {other}, which a harness started in this work tree may read too\n"));
    }
    for warning in &in_tree.same_name {
        print_stderr(&format!("warning: {warning}\n"));
    }
    if terminal.quiet {
        return;
    }
    for note in &in_tree.start_folder {
        print_stderr(&format!("note: {note}\n"));
    }
    if in_tree.cut_short {
        print_stderr(&format!(
            "note: looked at the first {} entries below `{}` for other roles' projections and skills; deeper ones were not looked at\n",
            tree_sight::WALK_LIMIT,
            sanitize(&in_tree.report.target.display().to_string())
        ));
    }
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
        hidden_from_git: report.git.as_ref().map_or(&[], |git| git.filtered.as_slice()),
    };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

/// The warnings of a projection's changes to git's files: steps that failed (the next
/// run finishes them), files whose own filter acompose leaves alone.
fn warn_git(git: &GitOutcome, terminal: &Terminal) {
    for reason in &git.failed {
        warn(
            terminal,
            &format!(
                "the projection stands, but git's files are not yet in line with it: {}; the next `acompose` or `acompose project` finishes it",
                sanitize(reason)
            ),
        );
    }
    for path in &git.own_filter {
        warn(
            terminal,
            &format!(
                "your git attributes give `{}` a filter of its own, which acompose leaves alone: git shows the role's text in it as a change",
                sanitize(path)
            ),
        );
    }
}

/// The lines telling what a projection did to git's files.
fn git_text(git: &GitOutcome) -> String {
    let mut text = String::new();
    match &git.excluded {
        Excluded::Listed(exclude) => text.push_str(&format!(
            "git: its paths are listed in `{}` (local to this clone, never committed)\n",
            sanitize(&exclude.display().to_string())
        )),
        Excluded::Cleared(exclude) => text.push_str(&format!(
            "git: its paths are no longer listed in `{}`\n",
            sanitize(&exclude.display().to_string())
        )),
        _ => {}
    }
    for path in &git.filtered {
        text.push_str(&format!(
            "git: reads `{}` without the role's text (a clean filter, this clone only), so your own edits show and commit as they are\n",
            sanitize(path)
        ));
    }
    for path in &git.unmarked {
        text.push_str(&format!("git: the skip-worktree mark an earlier acompose set on `{}` is off\n", sanitize(path)));
    }
    text
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
    if let Some(git) = &report.git {
        text.push_str(&git_text(git));
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

pub(crate) fn run_unproject(args: UnprojectArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
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
        Err(error) => {
            // A target holding no projection leaves the register too.
            if !acompose_driver::delivery::projection::has_record(&target)
                && let Ok(home) = resolve_home(home)
            {
                let _ = projections::unregister(&home, &target);
            }
            return report_error(&error, terminal);
        }
    };
    for reason in &report.git.failed {
        warn(
            terminal,
            &format!(
                "the projection's paths are gone, but git's files are not yet put back: {}; run `acompose unproject --target {}` again (or bare `acompose`) to finish",
                sanitize(reason),
                sanitize(&target.display().to_string())
            ),
        );
    }
    if report.git.settled()
        && let Some(Err(error)) = resolve_home(home).ok().map(|home| projections::unregister(&home, &target))
    {
        return report_error(&error, terminal);
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
    if report.resumed {
        text.push_str("  finished taking out a projection a stopped `unproject` had begun\n");
    }
    for path in &report.restored {
        text.push_str(&format!("  restored {} (the role's text taken out)\n", sanitize(path)));
    }
    if let Excluded::Cleared(exclude) = &report.git.excluded {
        text.push_str(&format!("git: its paths were taken out of `{}`\n", sanitize(&exclude.display().to_string())));
    }
    for path in &report.git.unmarked {
        text.push_str(&format!("git: the skip-worktree mark an earlier acompose set on `{}` is off\n", sanitize(path)));
    }
    text
}

#[derive(Debug, clap::Args)]
pub struct ProjectionsArgs {
    /// Print the list as JSON (`acompose.projections.v1`).
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run_projections(args: &ProjectionsArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
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
            #[serde(skip_serializing_if = "Option::is_none")]
            git: Option<&'a str>,
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
                git: entry.git.as_deref(),
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
        if let Some(note) = &entry.git {
            text.push_str(&format!("  git: {}\n", sanitize(note)));
        }
    }
    print_stdout(&text);
    exit::SUCCESS
}

/// The path of `acompose git-clean PATH`, git's clean filter, when that is the command
/// line (read before anything else: the filter needs nothing of the home).
pub fn git_clean_path(arguments: impl Iterator<Item = std::ffi::OsString>) -> Option<String> {
    let arguments: Vec<std::ffi::OsString> = arguments.skip(1).collect();
    match arguments.as_slice() {
        [command, path] if command == git_filter::SUBCOMMAND => Some(path.to_string_lossy().into_owned()),
        _ => None,
    }
}

/// Runs git's clean filter on standard input: what git stores of `path` (relative to the
/// work tree's root, the folder git runs the filter in). A file larger than the filter
/// reads passes through as it is.
pub fn run_git_clean(path: &str) -> u8 {
    use std::io::{Read as _, Write as _};
    let limit = git_filter::FILTER_LIMIT as u64 + 1;
    let mut stdin = std::io::stdin().lock();
    let mut input = Vec::new();
    if stdin.by_ref().take(limit).read_to_end(&mut input).is_err() {
        return exit::ENVIRONMENT;
    }
    let mut stdout = std::io::stdout().lock();
    let written = if input.len() as u64 >= limit {
        stdout.write_all(&input).and_then(|()| std::io::copy(&mut stdin, &mut stdout).map(drop))
    } else {
        let top = std::env::current_dir().unwrap_or_default();
        stdout.write_all(&git_filter::clean(&top, path, &input))
    };
    match written.and_then(|()| stdout.flush()) {
        Ok(()) => exit::SUCCESS,
        Err(_) => exit::ENVIRONMENT,
    }
}
