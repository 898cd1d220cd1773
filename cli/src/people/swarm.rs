//! `people swarm start|list|show|stop`: a recipe's roles started as one run, one real
//! session per role in its own PTY (each as its roster role where it has one). `start`
//! prints the review of the whole run, starts it, and holds the terminals until every
//! session has ended (Ctrl-C or `people swarm stop RUN` ends them); the web page
//! (`acompose serve`) is where each role's terminal is opened.

use std::path::PathBuf;
use std::sync::Arc;

use acompose_driver::people::hosted::start_hosted;
use acompose_driver::people::resolve::Assignment;
use acompose_driver::people::session::SessionRecord;
use acompose_driver::people::session_report::review_text;
use acompose_driver::people::session_runner::{LaunchOptions, SessionHandle};
use acompose_driver::people::sessions::{DEFAULT_GRACE, SystemClock, list_sessions, stop_session};
use acompose_driver::people::swarm::{
    Choices, RunRecord, SwarmOptions, SwarmReview, list_runs, review_swarm, show_run, start_swarm, start_swarm_with,
    stop_run,
};
use acompose_driver::people::tmux::{Followed, Host};
use acompose_driver::people::{Stop, Workspace, printable};

use super::WorkspaceArgs;
use crate::terminal::Terminal;
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct SwarmArgs {
    #[command(subcommand)]
    pub command: SwarmCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SwarmCommand {
    /// Review, then start one session per recipe role and hold them until they end.
    Start(Box<StartArgs>),
    /// List the recorded runs, newest first.
    List(ListArgs),
    /// Show one run: each role, its Person, runner and session.
    Show(RunArgs),
    /// Stop every running session of a run.
    Stop(RunArgs),
}

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// The swarm recipe (`.json`, `.yaml` or `.yml`).
    pub recipe: PathBuf,
    /// Assign a Person to a role explicitly; repeatable.
    #[arg(long = "assign", value_name = "ROLE=PERSON", value_parser = parse_pair)]
    pub assignments: Vec<(String, String)>,
    /// The runner of roles whose Person prefers none (`RUNNER`), or of one role
    /// (`ROLE=RUNNER`, over the Person's preference); repeatable.
    #[arg(long = "runner", value_name = "[ROLE=]RUNNER")]
    pub runners: Vec<String>,
    /// The model of roles whose Person prefers none (`MODEL`), or of one role
    /// (`ROLE=MODEL`); repeatable.
    #[arg(long = "model", value_name = "[ROLE=]MODEL")]
    pub models: Vec<String>,
    /// The project every role works in: `projects/<PROJECT>` must link to its folder.
    #[arg(long, value_name = "PROJECT")]
    pub project: String,
    /// A one-time task for every role; it is passed to the runners and written nowhere.
    #[arg(long, value_name = "TEXT")]
    pub task: Option<String>,
    /// Start although a Person declares limits a local terminal cannot enforce.
    #[arg(long)]
    pub acknowledge_unsupported: bool,
    /// Print the review and stop: no session is started or recorded.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the runs as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The run id (see `acompose people swarm list`).
    pub run: String,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((role, value)) if !role.is_empty() && !value.is_empty() => Ok((role.to_owned(), value.to_owned())),
        _ => Err("expected ROLE=VALUE, e.g. `reviewer=ada`".to_owned()),
    }
}

/// `R` sets the run's default; `ROLE=R` one role's choice.
fn split_choices(values: &[String]) -> (Option<String>, Vec<(String, String)>) {
    let mut default = None;
    let mut per_role = Vec::new();
    for value in values {
        match value.split_once('=') {
            Some((role, choice)) => per_role.push((role.to_owned(), choice.to_owned())),
            None => default = Some(value.clone()),
        }
    }
    (default, per_role)
}

pub(crate) fn run(args: SwarmArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    let (outcome, json) = match args.command {
        SwarmCommand::Start(start) => (run_start(&start, home, terminal), false),
        SwarmCommand::List(list) => (run_list(&list), list.json),
        SwarmCommand::Show(show) => (run_show(&show), show.json),
        SwarmCommand::Stop(stop) => (run_stop(&stop, terminal), stop.json),
    };
    match outcome {
        Ok(()) => exit::SUCCESS,
        Err(stop) => super::report_stop(stop, json, terminal),
    }
}

fn run_start(args: &StartArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let (label, recipe) = super::resolve::read_recipe(&args.recipe)?;
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let (runner, role_runners) = split_choices(&args.runners);
    let (model, role_models) = split_choices(&args.models);
    let options = SwarmOptions {
        project_id: args.project.clone(),
        assignments: args
            .assignments
            .iter()
            .map(|(role, person_id)| Assignment { role: role.clone(), person_id: person_id.clone() })
            .collect(),
        choices: Choices { runner, model, role_runners, role_models },
        task: args.task.clone(),
        roster: super::roster_place(home, terminal),
    };
    let path_variable = std::env::var_os("PATH");
    let review = review_swarm(&workspace, &recipe, &label, &options, path_variable.as_deref(), &SystemClock)?;
    print_stdout(&swarm_review_text(&review));
    if args.dry_run {
        if !terminal.quiet {
            print_stdout("dry run: no session was started or recorded\n");
        }
        return Ok(());
    }
    let launch = LaunchOptions {
        acknowledge_unsupported: args.acknowledge_unsupported,
        size: super::attach::terminal_size().unwrap_or_default(),
        grace: DEFAULT_GRACE,
    };
    let hosting = super::host::workspace_hosting(&workspace);
    let ended = match hosting.host() {
        Some(host) => start_hosted_run(&workspace, &review, &launch, host, terminal)?,
        None => {
            let (run, handles) = start_swarm(&workspace, &review, &launch, Arc::new(SystemClock))?;
            print_stdout(&format!(
                "run {} started {} sessions; `acompose people swarm stop {}` ends them, `acompose serve` opens their terminals\n",
                run.id,
                handles.len(),
                run.id
            ));
            hold(handles, terminal)
        }
    };
    for record in &ended {
        print_stderr(&format!("session {} ({}) {}\n", record.id, record.role, record.status.as_str()));
    }
    Ok(())
}

/// The review of every role, then the run's summary.
fn swarm_review_text(review: &SwarmReview) -> String {
    let mut text = format!(
        "swarm review: run {} of recipe {} in project {}, {} roles; nothing has run yet\n",
        review.run_id,
        review.recipe,
        review.project_id,
        review.roles.len()
    );
    for (planned, reviewed) in &review.roles {
        let who = match &planned.resolved.person_id {
            Some(id) => format!("Person {id} ({})", planned.resolved.rule.label()),
            None => "an ephemeral slot (no Person; nothing is saved)".to_owned(),
        };
        text.push_str(&format!("\nrole {}: {who}\n", planned.resolved.role));
        text.push_str(&format!(
            "  runner {} ({}), model {} ({})\n",
            planned.runner,
            planned.runner_from.label(),
            planned.model.as_deref().unwrap_or("default"),
            planned.model_from.label()
        ));
        text.push_str(&review_text(&reviewed.review));
    }
    text
}

/// Starts the run's sessions in the workspace's tmux server and follows each (a tmux
/// control client whose output is dropped) until every one has ended. Ctrl-C stops them
/// all; SIGHUP (the terminal closed) ends only this command, and the run goes on.
fn start_hosted_run(
    workspace: &Workspace,
    review: &acompose_driver::people::swarm::SwarmReview,
    launch: &LaunchOptions,
    host: &Host,
    terminal: &Terminal,
) -> Result<Vec<SessionRecord>, Stop> {
    let start = |reviewed: &acompose_driver::people::sessions::Reviewed| {
        let hosted = start_hosted(workspace, reviewed, launch, Arc::new(SystemClock), host)?;
        Ok((hosted.record().clone(), hosted.id().to_owned()))
    };
    let abandon = |id: String| {
        let _ = stop_session(workspace, &id, &SystemClock, DEFAULT_GRACE);
    };
    let (run, ids) = start_swarm_with(workspace, review, &SystemClock, start, abandon)?;
    print_stdout(&format!(
        "run {} started {} sessions in tmux; `acompose people attach SESSION` opens one, `acompose people swarm stop {}` ends them\n",
        run.id,
        ids.len(),
        run.id
    ));
    // Ctrl-C only: SIGHUP and SIGTERM end this command and leave the run going.
    match signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT]) {
        Ok(mut signals) => {
            let (workspace, ids) = (workspace.clone(), ids.clone());
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    for id in &ids {
                        let _ = stop_session(&workspace, id, &SystemClock, DEFAULT_GRACE);
                    }
                }
            });
        }
        Err(_) => {
            crate::terminal::warn(terminal, "cannot install the Ctrl-C handler; stop the run with `people swarm stop`")
        }
    }
    let followers: Vec<_> = ids
        .iter()
        .filter_map(|id| host.follow(id).ok())
        .map(|mut follower| {
            std::thread::spawn(move || {
                if let Some(mut reader) = follower.take_reader() {
                    while reader.next_event() != Followed::Exit {}
                }
                follower.wait();
            })
        })
        .collect();
    for follower in followers {
        let _ = follower.join();
    }
    let listing = list_sessions(workspace, &SystemClock)?;
    Ok(listing.records.into_iter().filter(|record| ids.contains(&record.id)).collect())
}

/// Holds every session's terminal (its output is read and dropped so the runner never
/// blocks) until each has ended; Ctrl-C stops them all.
fn hold(handles: Vec<SessionHandle>, terminal: &Terminal) -> Vec<SessionRecord> {
    let stoppers: Vec<_> = handles.iter().map(SessionHandle::stopper).collect();
    if ctrlc::set_handler(move || stoppers.iter().for_each(|stopper| stopper.stop())).is_err() {
        crate::terminal::warn(terminal, "cannot install the Ctrl-C handler; stop the run with `people swarm stop`");
    }
    let waiters: Vec<_> = handles
        .into_iter()
        .map(|handle| {
            if let Ok(mut reader) = handle.reader() {
                std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
            }
            let started = handle.record().clone();
            std::thread::spawn(move || handle.wait().map_or(started, |finished| finished.record))
        })
        .collect();
    waiters.into_iter().filter_map(|waiter| waiter.join().ok()).collect()
}

fn runs_json(runs: &[RunRecord]) -> String {
    let document = serde_json::json!({ "format": "acompose.people-runs.v1", "runs": runs });
    format!("{}\n", serde_json::to_string_pretty(&document).unwrap_or_default())
}

fn run_list(args: &ListArgs) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let runs = list_runs(&workspace)?;
    if args.json {
        print_stdout(&runs_json(&runs));
        return Ok(());
    }
    let mut text = String::new();
    for run in &runs {
        let roles: Vec<&str> = run.roles.iter().map(|role| role.role.as_str()).collect();
        text.push_str(&format!(
            "{}  {}  {}  {}  {}\n",
            run.id,
            run.started_at,
            run.project_id,
            run.recipe,
            roles.join(",")
        ));
    }
    text.push_str(&format!("{} runs\n", runs.len()));
    print_stdout(&text);
    Ok(())
}

fn run_show(args: &RunArgs) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let (run, sessions) = show_run(&workspace, &args.run, &SystemClock)?;
    if args.json {
        let roles: Vec<serde_json::Value> = run
            .roles
            .iter()
            .zip(&sessions)
            .map(|(role, session)| {
                serde_json::json!({
                    "role": role, "status": session.as_ref().map(|record| record.status.as_str()),
                })
            })
            .collect();
        let document = serde_json::json!({
            "format": "acompose.people-run.v1", "id": run.id, "recipe": run.recipe,
            "project_id": run.project_id, "started_at": run.started_at, "roles": roles,
        });
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&document).unwrap_or_default()));
        return Ok(());
    }
    let mut text =
        format!("run {} of {} in project {}, started {}\n", run.id, run.recipe, run.project_id, run.started_at);
    for (role, session) in run.roles.iter().zip(&sessions) {
        let status = session.as_ref().map_or("no record", |record| record.status.as_str());
        let person = role.person_id.as_deref().unwrap_or("(ephemeral)");
        text.push_str(&format!(
            "  {:<14} {:<14} {:<9} {:<12} {}\n",
            role.role, person, role.runner, status, role.session_id
        ));
    }
    print_stdout(&text);
    Ok(())
}

fn run_stop(args: &RunArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let stopped = stop_run(&workspace, &args.run, &SystemClock, DEFAULT_GRACE)?;
    let count = stopped.iter().filter(|stopped| stopped.signalled).count();
    if stopped.iter().any(|stopped| !stopped.group_empty) {
        return Err(Stop::Invalid(format!(
            "run {} is recorded as stopped, but a process of one of its sessions could not be ended",
            args.run
        )));
    }
    if !terminal.quiet {
        print_stdout(&format!("run {}: {count} sessions stopped\n", printable(&args.run)));
    }
    Ok(())
}
