//! `acompose people …`: durable, reviewed collaborators in a workspace. Parses the
//! arguments, reads the workspace through `storage`, hands bytes to
//! `acompose_engine::people` and prints its reports. Declarations only: no command here
//! starts a process or infers runtime activity.

mod edit;
mod import;
mod resolve;
mod storage;

use std::path::PathBuf;

use acompose_engine::people::contract;
use acompose_engine::people::workspace::{self, PEOPLE_DIRECTORY};
use acompose_engine::people::{Person, is_slug, printable, report};

pub use storage::Stop;
use storage::Workspace;

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

pub fn run(args: PeopleArgs, terminal: &Terminal) -> u8 {
    let (outcome, json) = match *args.command {
        PeopleCommand::Init(init) => (run_init(&init, terminal), false),
        PeopleCommand::Validate(validate) => return run_validate(&validate, terminal),
        PeopleCommand::List(list) => {
            let json = list.json;
            (run_list(&list, terminal), json)
        }
        PeopleCommand::Show(show) => {
            let json = show.json;
            (run_show(&show), json)
        }
        PeopleCommand::Add(add) => (edit::run_add(&add, terminal), false),
        PeopleCommand::Edit(change) => (edit::run_edit(&change, terminal), false),
        PeopleCommand::Archive(target) => (run_set_archived(&target, true, terminal), false),
        PeopleCommand::Restore(target) => (run_set_archived(&target, false, terminal), false),
        PeopleCommand::Import(import) => {
            let json = import.json;
            (import::run(&import, terminal), json)
        }
        PeopleCommand::Resolve(resolve) => {
            let json = resolve.json;
            (resolve::run(&resolve), json)
        }
    };
    match outcome {
        Ok(()) => exit::SUCCESS,
        Err(stop) => report_stop(stop, json),
    }
}

/// Prints why a command stopped and returns its exit code.
pub fn report_stop(stop: Stop, json: bool) -> u8 {
    match stop {
        Stop::Findings(findings) => {
            if json {
                print_stdout(&String::from_utf8_lossy(&report::findings_document(&findings)));
            } else {
                print_stderr(&report::findings_text(&findings));
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
            print_stderr(&format!("error: {error:#}\n"));
            exit::ENVIRONMENT
        }
    }
}

/// Checks a Person id from the command line before it becomes part of a path.
pub fn checked_id(id: &str) -> Result<&str, Stop> {
    if is_slug(id) {
        Ok(id)
    } else {
        Err(Stop::Invalid(format!(
            "`{}` is not a Person id: ids are lowercase slugs (`^[a-z0-9][a-z0-9_-]*$`, at most 64 characters)",
            printable(id)
        )))
    }
}

/// Reads and checks one existing Person.
pub fn existing_person(workspace: &Workspace, id: &str) -> Result<Person, Stop> {
    let Some(bytes) = workspace.person_file(id)? else {
        return Err(Stop::Invalid(format!("there is no Person `{id}` in `{PEOPLE_DIRECTORY}/`")));
    };
    workspace::check_person(PEOPLE_DIRECTORY, &format!("{id}.json"), &bytes).map_err(Stop::Findings)
}

/// Writes a changed Person over its file after checking the exact bytes to be written.
pub fn save_person(workspace: &Workspace, person: &Person) -> Result<String, Stop> {
    let name = format!("{}.json", checked_id(&person.id)?);
    let bytes = acompose_engine::people::document::person_bytes(person);
    workspace::check_person(PEOPLE_DIRECTORY, &name, &bytes).map_err(Stop::Findings)?;
    let folder = workspace.people_folder()?;
    workspace.refuse_symlinks(&[&format!("{PEOPLE_DIRECTORY}/{name}")])?;
    storage::replace(&folder, &name, &bytes)?;
    Ok(format!("{PEOPLE_DIRECTORY}/{name}"))
}

fn run_init(args: &InitArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::create(&args.workspace.workspace)?;
    let readme = format!("{PEOPLE_DIRECTORY}/README.md");
    // A workspace the Agent Toolkit made keeps its own mirrors and lock.
    let mirrors = contract::init_files(workspace.existing_lock()?.as_deref());
    let mut destinations = vec![PEOPLE_DIRECTORY, readme.as_str(), "schemas"];
    destinations.extend(mirrors.iter().map(|file| file.path.as_str()));
    // Every destination is checked before the first byte is written.
    workspace.refuse_symlinks(&destinations)?;
    let people = workspace.people_folder()?;
    let schemas = workspace.storage_folder("schemas")?;
    let readme_written = storage::create_new(&people, "README.md", report::people_readme().as_bytes())?;
    let mut written = Vec::new();
    if readme_written {
        written.push(readme.clone());
    }
    for file in &mirrors {
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        storage::replace(&schemas, name, &file.bytes)?;
        written.push(file.path.clone());
    }
    if !terminal.quiet {
        let mut kept = if readme_written { String::new() } else { format!("; kept the existing `{readme}`") };
        if mirrors.is_empty() {
            kept.push_str("; kept the Agent Toolkit's schema mirrors and lock");
        }
        let wrote = if written.is_empty() { "nothing".to_owned() } else { written.join(", ") };
        print_stdout(&format!("initialised the people workspace: wrote {wrote}{kept}\n"));
    }
    Ok(())
}

fn run_validate(args: &ReportArgs, terminal: &Terminal) -> u8 {
    let validation = Workspace::open(&args.workspace.workspace).and_then(|workspace| Ok(workspace.collect(true)?));
    let files = match validation {
        Ok(files) => files,
        Err(stop) => return report_stop(stop, args.json),
    };
    let validation = workspace::validate_workspace(&files);
    if args.json {
        print_stdout(&String::from_utf8_lossy(&report::validation_json(&validation)));
    } else if !validation.findings.is_empty() && (validation.has_errors() || !terminal.quiet) {
        print_stderr(&report::findings_text(&validation.findings));
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

fn run_list(args: &ReportArgs, terminal: &Terminal) -> Result<(), Stop> {
    let workspace = Workspace::open(&args.workspace.workspace)?;
    let validation = workspace::load_roster(&workspace.collect(false)?);
    if args.json {
        // One document: the findings travel inside it.
        print_stdout(&String::from_utf8_lossy(&report::list_json(&validation.roster.people, &validation.findings)));
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

fn run_show(args: &ShowArgs) -> Result<(), Stop> {
    let id = checked_id(&args.id)?;
    let workspace = Workspace::open(&args.workspace.workspace)?;
    let person = existing_person(&workspace, id)?;
    if args.json {
        print_stdout(&String::from_utf8_lossy(&acompose_engine::people::document::person_bytes(&person)));
    } else {
        print_stdout(&report::person_text(&person));
    }
    Ok(())
}

fn run_set_archived(args: &IdArgs, archived: bool, terminal: &Terminal) -> Result<(), Stop> {
    let id = checked_id(&args.id)?;
    let workspace = Workspace::open(&args.workspace.workspace)?;
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
