//! `people runners`, `people start`, `people sessions` and `people stop`: the cli of
//! People sessions. It parses, calls `acompose_driver::people::sessions` and
//! `session_runner`, prints the engine's reports and attaches the terminal
//! (`attach`). The start review is printed before anything runs.

use std::sync::Arc;

use acompose_driver::people::hosted::start_hosted;
use acompose_driver::people::isolation::clean_worktrees;
use acompose_driver::people::runner::PromptIntake;
use acompose_driver::people::session_report::{
    interruptions_text, review_json, review_text, sessions_json, sessions_text,
};
use acompose_driver::people::session_runner::{LaunchOptions, start_session};
use acompose_driver::people::sessions::{
    DEFAULT_GRACE, Reviewed, StartOptions, SystemClock, discover_runners, list_sessions, review_resume, review_session,
    stop_session,
};
use acompose_driver::people::{Stop, Workspace};
use acompose_driver::people::{printable, report};
use serde::Serialize;

use super::WorkspaceArgs;
use super::attach;
use crate::terminal::Terminal;
use crate::{print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct RunnersArgs {
    /// Print the runners as JSON.
    #[arg(long)]
    pub json: bool,
    /// Accepted as every People command accepts it; the runner table depends only on
    /// `PATH`.
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// The Person's id.
    pub person: String,
    /// The project: `projects/<PROJECT>` in the workspace must link to its folder.
    #[arg(long, value_name = "PROJECT")]
    pub project: String,
    /// The runner to start (see `acompose people runners`).
    #[arg(long, value_name = "RUNNER")]
    pub runner: String,
    /// The model to pass to the runner.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// A one-time task for this session; it is passed to the runner and written nowhere.
    #[arg(long, value_name = "TEXT")]
    pub task: Option<String>,
    /// Start although the Person declares limits a local terminal cannot enforce.
    #[arg(long)]
    pub acknowledge_unsupported: bool,
    /// Print the review and stop: nothing is started or written.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: print the review as JSON.
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The ended session whose conversation to open again (see `acompose people sessions`).
    pub session: String,
    /// Start although the Person declares limits a local terminal cannot enforce.
    #[arg(long)]
    pub acknowledge_unsupported: bool,
    /// Print the review and stop: no session is started or recorded.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the sessions as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The session id (see `acompose people sessions`).
    pub session: String,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// Only this session's worktree (default: every ended session's).
    pub session: Option<String>,
    /// Remove worktrees with uncommitted changes too (the changes are lost).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

/// The runner table with where each binary was found on `PATH`.
pub fn run_runners(args: &RunnersArgs) -> Result<(), Stop> {
    let path_variable = std::env::var_os("PATH");
    let found = discover_runners(path_variable.as_deref());
    if args.json {
        #[derive(Serialize)]
        struct Row<'a> {
            name: &'a str,
            binary: &'a str,
            takes_prompt: bool,
            takes_model: bool,
            path: Option<String>,
        }
        let rows: Vec<Row<'_>> = found
            .iter()
            .map(|row| Row {
                name: row.runner.name,
                binary: row.runner.binary,
                takes_prompt: row.runner.prompt != PromptIntake::CopyOnly,
                takes_model: row.runner.model_flag.is_some(),
                path: row.path.as_ref().map(|path| path.to_string_lossy().into_owned()),
            })
            .collect();
        let document = serde_json::json!({ "format": "acompose.people-runners.v1", "runners": rows });
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&document).unwrap_or_default()));
        return Ok(());
    }
    let mut text = format!("{:<10}  {:<13}  {:<13}  INSTALLED\n", "RUNNER", "BINARY", "PROMPT");
    for row in &found {
        let prompt = match row.runner.prompt {
            PromptIntake::Positional => "argument".to_owned(),
            PromptIntake::Flag(flag) => flag.to_owned(),
            PromptIntake::CopyOnly => "copy".to_owned(),
        };
        let installed =
            row.path.as_ref().map_or_else(|| "not found on PATH".to_owned(), |path| printable(&path.to_string_lossy()));
        text.push_str(&format!("{:<10}  {:<13}  {prompt:<13}  {installed}\n", row.runner.name, row.runner.binary));
    }
    let count = found.iter().filter(|row| row.path.is_some()).count();
    text.push_str(&format!("{count} of {} runners installed\n", found.len()));
    print_stdout(&text);
    Ok(())
}

/// Reviews, prints the review, then (unless a dry run) starts and attaches the session.
/// Exits 0 only when the runner completed.
pub(crate) fn run_start(args: &StartArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let options = StartOptions {
        person_id: args.person.clone(),
        project_id: args.project.clone(),
        runner: args.runner.clone(),
        model: args.model.clone(),
        task: args.task.clone(),
        roster: super::roster_place(home, terminal),
        conversation: None,
    };
    let path_variable = std::env::var_os("PATH");
    let reviewed = review_session(&workspace, &options, path_variable.as_deref())?;
    if let Some(hint) = &reviewed.review.unbound_hint {
        crate::terminal::warn(
            terminal,
            &format!("the Person's role is no role of the roster ({hint}); starting with the host's context"),
        );
    }
    run_reviewed(&workspace, &reviewed, args.dry_run, args.json, args.acknowledge_unsupported, terminal)
}

/// Reviews `people resume`, then starts the runner on the recorded conversation.
pub(crate) fn run_resume(args: &ResumeArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let path_variable = std::env::var_os("PATH");
    let roster = super::roster_place(home, terminal);
    let reviewed = review_resume(&workspace, &args.session, roster, path_variable.as_deref())?;
    run_reviewed(&workspace, &reviewed, args.dry_run, false, args.acknowledge_unsupported, terminal)
}

/// Prints a review, then (unless a dry run) starts and attaches the session.
fn run_reviewed(
    workspace: &Workspace,
    reviewed: &Reviewed,
    dry_run: bool,
    json: bool,
    acknowledge_unsupported: bool,
    terminal: &Terminal,
) -> Result<(), Stop> {
    let args = Flags { dry_run, json, acknowledge_unsupported };
    let hosting = super::host::workspace_hosting(workspace);
    if args.json {
        let mut document: serde_json::Value =
            serde_json::from_slice(&review_json(&reviewed.review)).unwrap_or_default();
        if let Some(object) = document.as_object_mut() {
            object.insert("host".to_owned(), serde_json::json!(hosting.host().map(|_| "tmux")));
            object.insert("host_detail".to_owned(), serde_json::json!(hosting.review_line()));
        }
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&document).unwrap_or_default()));
    } else {
        let text = review_text(&reviewed.review);
        let host = format!("  host:          {}\n", hosting.review_line());
        match text.find("\ninitial prompt:") {
            Some(at) => print_stdout(&format!("{}\n{host}{}", &text[..at], &text[at + 1..])),
            None => print_stdout(&format!("{text}{host}")),
        }
    }
    if args.dry_run {
        if !args.json && !terminal.quiet {
            let prepared = if reviewed.review.sight.is_some() { " (the role's runtime home was prepared)" } else { "" };
            print_stdout(&format!("dry run: no session was started or recorded{prepared}\n"));
        }
        return Ok(());
    }
    let size = attach::terminal_size().unwrap_or_default();
    let launch = LaunchOptions { acknowledge_unsupported: args.acknowledge_unsupported, size, grace: DEFAULT_GRACE };
    if let Some(host) = hosting.host() {
        let signals = super::host::detaching_signals();
        let hosted = start_hosted(workspace, reviewed, &launch, Arc::new(SystemClock), host)?;
        let id = hosted.id().to_owned();
        if !terminal.quiet {
            print_stderr(&format!(
                "session {id} is running in tmux; `acompose people attach {id}` reattaches, `acompose people stop {id}` ends it\n"
            ));
        }
        let ended = super::host::follow(workspace, host, &id, Some(hosted), signals)?;
        return super::host::report_end(&ended, terminal);
    }
    let handle = start_session(workspace, reviewed, &launch, Arc::new(SystemClock))?;
    if !terminal.quiet {
        print_stderr(&format!("session {} is running; `acompose people stop {}` ends it\n", handle.id(), handle.id()));
    }
    let finished = attach::attach(handle)?;
    if !finished.group_empty {
        crate::terminal::warn(terminal, "a process the runner started could not be ended");
    }
    super::host::report_end(&super::host::FollowEnd::Ended(Box::new(finished.record)), terminal)
}

struct Flags {
    dry_run: bool,
    json: bool,
    acknowledge_unsupported: bool,
}

/// Lists the sessions newest first, after reconciliation. Refused files are reported
/// and make the exit non-zero; the valid records are listed all the same.
pub fn run_sessions(args: &SessionsArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let listing = list_sessions(&workspace, &SystemClock)?;
    if args.json {
        let mut refused: Vec<&str> =
            listing.findings.iter().map(|finding| finding.file.as_deref().unwrap_or_default()).collect();
        refused.dedup();
        let bytes = sessions_json(&listing.records, &listing.interruptions, refused.len());
        print_stdout(&String::from_utf8_lossy(&bytes));
    } else {
        if !listing.interruptions.is_empty() && !terminal.quiet {
            print_stderr(&interruptions_text(&listing.interruptions));
        }
        print_stdout(&sessions_text(&listing.records));
    }
    if listing.findings.is_empty() {
        return Ok(());
    }
    if !args.json {
        print_stderr(&report::findings_text(&listing.findings));
        print_stderr(&format!(
            "error: some session records were not read ({})\n",
            report::count_summary(&listing.findings)
        ));
    }
    Err(Stop::Reported)
}

/// Stops a running session: `stopped`, then its process group is ended.
pub fn run_stop(args: &StopArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let stopped = stop_session(&workspace, &args.session, &SystemClock, DEFAULT_GRACE)?;
    let record = &stopped.record;
    if !stopped.signalled {
        print_stderr(&format!("session {} is {}; nothing was stopped\n", record.id, record.status.as_str()));
        return Ok(());
    }
    if !stopped.group_empty {
        return Err(Stop::Invalid(format!(
            "session {} is recorded as stopped, but a process of its group could not be ended",
            record.id
        )));
    }
    if !terminal.quiet {
        print_stdout(&format!("session {} stopped\n", record.id));
    }
    Ok(())
}

/// Removes the worktrees of ended isolated sessions; branches are kept. A worktree git
/// refuses to remove (uncommitted changes) is reported and makes the exit non-zero.
pub fn run_clean(args: &CleanArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let cleaned = clean_worktrees(&workspace, args.session.as_deref(), args.force, &SystemClock)?;
    if !terminal.quiet {
        for record in &cleaned.removed {
            let branch = record.links.branch.as_deref().unwrap_or_default();
            print_stdout(&format!("session {}: worktree removed; branch {branch} kept\n", record.id));
        }
        if cleaned.removed.is_empty() && cleaned.refused.is_empty() {
            print_stdout("no worktree to remove\n");
        }
    }
    for (record, said) in &cleaned.refused {
        print_stderr(&format!("session {}: worktree kept: {}\n", record.id, printable(said)));
    }
    if cleaned.refused.is_empty() {
        Ok(())
    } else {
        print_stderr("error: some worktrees hold uncommitted changes; commit them, or pass --force to discard them\n");
        Err(Stop::Reported)
    }
}
