//! `acompose people …`: durable, reviewed collaborators in a workspace. Parses the
//! arguments, reads the workspace through the host (`acompose_driver::people`), hands bytes to
//! `acompose_driver::people` and prints its reports. Only `start` runs anything: a
//! reviewed runner, through the host's session runner (`session`).

mod attach;
mod edit;
mod host;
mod import;
mod resolve;
mod session;
mod swarm;

use std::path::PathBuf;

use acompose_driver::people::as_role::{RosterPlace, roster_roles};
use acompose_driver::people::{Stop, Workspace, checked_id, existing_person, initialise, save_person};
use acompose_driver::people::{report, workspace};

use crate::terminal::Terminal;
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct PeopleArgs {
    /// Boxed so the top-level command enum stays small (the editing flags are many).
    #[command(subcommand)]
    pub command: Box<PeopleCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum PeopleCommand {
    /// Scaffold `people/README.md` and the schema mirrors with their SHA-256 lock.
    Init(InitArgs),
    /// Check the workspace offline: schema mirrors first, then every file.
    Validate(ReportArgs),
    /// List the configured People, active and archived.
    List(ReportArgs),
    /// Show one Person.
    Show(ShowArgs),
    /// Declare a new Person as `people/<id>.json`.
    Add(edit::AddArgs),
    /// Change fields of a Person.
    Edit(edit::EditArgs),
    /// Mark a Person archived: kept on disk, never chosen for a role.
    Archive(IdArgs),
    /// Mark an archived Person active again.
    Restore(IdArgs),
    /// Review a munder-difflin/hire@1 file; `--save` writes the reviewed Person.
    Import(import::ImportArgs),
    /// Preview which Person fills each role of a swarm recipe; nothing is started.
    Resolve(resolve::ResolveArgs),
    /// List the known runners and where each is installed on PATH.
    Runners(session::RunnersArgs),
    /// Review, then start a runner for a Person in a project, in a terminal.
    Start(Box<session::StartArgs>),
    /// List session records, newest first; ended processes become `interrupted`.
    Sessions(session::SessionsArgs),
    /// Attach this terminal to a running session hosted in tmux (Ctrl-b d detaches).
    Attach(host::AttachArgs),
    /// The supervisor a tmux session runs for a hosted session (started by acompose).
    #[command(hide = true)]
    Host(host::HostArgs),
    /// Stop a running session: its process group is ended.
    Stop(session::StopArgs),
    /// Remove the worktrees of ended isolated sessions (their branches are kept).
    Clean(session::CleanArgs),
    /// Start a new session on an ended session's conversation (runners that keep one).
    Resume(Box<session::ResumeArgs>),
    /// Start, list, show and stop swarm runs: one session per recipe role.
    Swarm(swarm::SwarmArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct WorkspaceArgs {
    /// The workspace folder.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The Person's id.
    pub id: String,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the Person file's canonical JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct IdArgs {
    /// The Person's id.
    pub id: String,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

/// Where the roster People bind roles against is, from `--home` and the settings; `None`
/// (with a warning) when it cannot be resolved: roles then bind to nothing.
pub(crate) fn roster_place(home: Option<&std::path::Path>, terminal: &Terminal) -> Option<RosterPlace> {
    match crate::home_and_projects(home, None) {
        Ok((home, projects)) => Some(RosterPlace { home, projects }),
        Err(error) => {
            crate::terminal::warn(terminal, &format!("no roster roles are bound: {error}"));
            None
        }
    }
}

pub(crate) fn run(args: PeopleArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    let (outcome, json) = match *args.command {
        PeopleCommand::Init(init) => (run_init(&init, terminal), false),
        PeopleCommand::Validate(validate) => return run_validate(&validate, home, terminal),
        PeopleCommand::List(list) => {
            let json = list.json;
            (run_list(&list, home, terminal), json)
        }
        PeopleCommand::Show(show) => {
            let json = show.json;
            (run_show(&show, home, terminal), json)
        }
        PeopleCommand::Add(add) => (edit::run_add(&add, home, terminal), false),
        PeopleCommand::Edit(change) => (edit::run_edit(&change, home, terminal), false),
        PeopleCommand::Archive(target) => (run_set_archived(&target, true, terminal), false),
        PeopleCommand::Restore(target) => (run_set_archived(&target, false, terminal), false),
        PeopleCommand::Import(import) => {
            let json = import.json;
            (import::run(&import, terminal), json)
        }
        PeopleCommand::Resolve(resolve) => {
            let json = resolve.json;
            (resolve::run(&resolve, terminal), json)
        }
        PeopleCommand::Runners(runners) => (session::run_runners(&runners), false),
        PeopleCommand::Start(start) => (session::run_start(&start, home, terminal), false),
        PeopleCommand::Resume(resume) => (session::run_resume(&resume, home, terminal), false),
        PeopleCommand::Swarm(swarm) => return swarm::run(swarm, home, terminal),
        PeopleCommand::Sessions(sessions) => {
            let json = sessions.json;
            (session::run_sessions(&sessions, terminal), json)
        }
        PeopleCommand::Stop(stop) => (session::run_stop(&stop, terminal), false),
        PeopleCommand::Attach(attach) => (host::run_attach(&attach, terminal), false),
        PeopleCommand::Host(host) => (host::run_host(&host), false),
        PeopleCommand::Clean(clean) => (session::run_clean(&clean, terminal), false),
    };
    match outcome {
        Ok(()) => exit::SUCCESS,
        Err(stop) => report_stop(stop, json, terminal),
    }
}

/// The People findings a terminal shows: errors only under `-q`.
pub fn shown_findings(findings: &[acompose_driver::engine::Diagnostic], terminal: &Terminal) -> String {
    let shown: Vec<_> = findings.iter().filter(|finding| !terminal.quiet || finding.is_error()).cloned().collect();
    report::findings_text(&shown)
}

/// Prints why a command stopped and returns its exit code.
pub fn report_stop(stop: Stop, json: bool, terminal: &Terminal) -> u8 {
    match stop {
        Stop::Findings(findings) => {
            if json {
                print_stdout(&String::from_utf8_lossy(&report::findings_document(&findings)));
            } else {
                print_stderr(&shown_findings(&findings, terminal));
                print_stderr(&format!("error: stopped ({})\n", report::count_summary(&findings)));
            }
            exit::INVALID
        }
        Stop::Reported => exit::INVALID,
        Stop::Invalid(message) => {
            print_stderr(&format!("error: {message}\n"));
            exit::INVALID
        }
        Stop::Io(error) => {
            print_stderr(&format!("error: {error}\n"));
            exit::ENVIRONMENT
        }
    }
}

fn run_init(args: &InitArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::create(&args.workspace.workspace)?;
    let initialised = initialise(&workspace)?;
    if !terminal.quiet {
        let mut kept = if initialised.readme_written {
            String::new()
        } else {
            format!("; kept the existing `{}`", initialised.readme)
        };
        if initialised.kept_toolkit_contract {
            kept.push_str("; kept the Agent Toolkit's schema mirrors and lock");
        }
        let wrote = if initialised.written.is_empty() { "nothing".to_owned() } else { initialised.written.join(", ") };
        print_stdout(&format!("initialised the people workspace: wrote {wrote}{kept}\n"));
    }
    Ok(())
}

fn run_validate(args: &ReportArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    let validation = Workspace::open_initialised(&args.workspace.workspace)
        .and_then(|workspace| Ok(workspace.collect_with_contract()?));
    let files = match validation {
        Ok(files) => files,
        Err(stop) => return report_stop(stop, args.json, terminal),
    };
    let mut validation = workspace::validate_workspace(&files);
    // A Person's MCP servers resolve against the home's inventory (when there is a home).
    if !validation.stopped_at_contract
        && let Ok(home) = acompose_driver::home::resolve_home(home)
    {
        let references = acompose_driver::people::mcp_reference_findings(&validation.roster.people, &home);
        validation.findings.extend(references);
    }
    if args.json {
        print_stdout(&String::from_utf8_lossy(&report::validation_json(&validation)));
    } else if !validation.findings.is_empty() && (validation.has_errors() || !terminal.quiet) {
        print_stderr(&shown_findings(&validation.findings, terminal));
    }
    if validation.has_errors() {
        if !args.json {
            let stage = if validation.stopped_at_contract { "; nothing was evaluated" } else { "" };
            print_stderr(&format!(
                "error: the people workspace is invalid ({}){stage}\n",
                report::count_summary(&validation.findings)
            ));
        }
        return exit::INVALID;
    }
    if !args.json && !terminal.quiet {
        print_stdout(&report::validation_text(&validation));
    }
    exit::SUCCESS
}

fn run_list(args: &ReportArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let mut validation = workspace::load_roster(&workspace.collect()?);
    let roles = roster_place(home, terminal).and_then(|place| roster_roles(&place).ok());
    if let Some(roles) = &roles {
        let unbound = acompose_driver::people::roster_role::unbound_findings(&validation.roster, roles);
        validation.findings.extend(unbound);
    }
    if args.json {
        // One document: the findings travel inside it.
        let bytes = report::list_json(&validation.roster.people, &validation.findings, roles.as_deref());
        print_stdout(&String::from_utf8_lossy(&bytes));
        return if validation.has_errors() { Err(Stop::Reported) } else { Ok(()) };
    }
    print_stdout(&report::list_text(&validation.roster.people));
    if validation.has_errors() {
        return Err(Stop::Findings(validation.findings));
    }
    if !validation.findings.is_empty() && !terminal.quiet {
        print_stderr(&report::findings_text(&validation.findings));
    }
    Ok(())
}

fn run_show(args: &ShowArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let id = checked_id(&args.id)?;
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let person = existing_person(&workspace, id)?;
    if args.json {
        print_stdout(&String::from_utf8_lossy(&acompose_driver::people::document::person_bytes(&person)));
    } else {
        let place = roster_place(home, terminal);
        let bound = acompose_driver::people::as_role::bound_role(&person.role, place.as_ref());
        print_stdout(&report::person_text(&person));
        print_stdout(&report::roster_role_line(&bound));
    }
    Ok(())
}

fn run_set_archived(args: &IdArgs, archived: bool, terminal: &Terminal) -> Result<(), Stop> {
    let id = checked_id(&args.id)?;
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let mut person = existing_person(&workspace, id)?;
    let state = if archived { "archived" } else { "active" };
    if person.archived == archived {
        if !terminal.quiet {
            print_stdout(&format!("`{id}` is already {state}; nothing was written\n"));
        }
        return Ok(());
    }
    person.archived = archived;
    let path = save_person(&workspace, &person)?;
    if !terminal.quiet {
        print_stdout(&format!("`{id}` is now {state} (wrote `{path}`)\n"));
    }
    Ok(())
}
