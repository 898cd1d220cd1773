//! People on disk: a workspace read into the engine's inputs (`storage`) and Person files
//! checked and written atomically. The engine validates; this module only refuses
//! symlinks, bad ids and files in the way, and writes.
//!
//! May call the home, composition, delivery and convergence (a bound Person starts as
//! an assigned launch); doctor calls it.

pub mod as_role;
pub mod authoring;
pub mod budget;
pub mod hosted;
pub mod isolation;
pub mod process;
pub mod session_runner;
pub mod sessions;
pub mod storage;
pub mod swarm;
pub mod tmux;

use acompose_people::workspace::PEOPLE_DIRECTORY;
use acompose_people::{Bindings, contract};

pub use crate::home::atomic::FileError;
pub use storage::{Stop, Workspace};

// The People core's values and pure functions a face shows or hands back (reports,
// the reviewed import, swarm resolution, session records), so that the cli and the
// server reach People through the driver alone.
pub use acompose_people::{Avatar, Isolation, Person};
pub use acompose_people::{
    BINDINGS_SPEC, RECIPE_SPEC, document, finding, hire, is_slug, json, printable, recipe, report, resolve,
    roster_role, runner, session, session_report, start, workspace,
};

/// The version of a file as it is on disk: the SHA-256 of its bytes, lowercase hex, or
/// `absent` when there is no file. A writer that read one version refuses to write over
/// another (the server's `If-Match`), so no edit silently replaces a change made since.
pub fn version(bytes: Option<&[u8]>) -> String {
    bytes.map_or_else(|| ABSENT_VERSION.to_owned(), contract::sha256_hex)
}

/// The version of a file that does not exist.
pub const ABSENT_VERSION: &str = "absent";

/// The version of `people/<id>.json` as it is now.
pub fn person_version(workspace: &Workspace, id: &str) -> Result<String, Stop> {
    Ok(version(workspace.person_file(checked_id(id)?)?.as_deref()))
}

/// The version of `people/bindings.yaml` as it is now.
pub fn bindings_version(workspace: &Workspace) -> Result<String, Stop> {
    Ok(version(workspace.collect()?.bindings.as_deref()))
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
/// Returns the workspace-relative path written.
pub fn save_person(workspace: &Workspace, person: &Person) -> Result<String, Stop> {
    let name = format!("{}.json", checked_id(&person.id)?);
    let bytes = document::person_bytes(person);
    workspace::check_person(PEOPLE_DIRECTORY, &name, &bytes).map_err(Stop::Findings)?;
    let folder = workspace.people_folder()?;
    workspace.refuse_symlinks(&[&format!("{PEOPLE_DIRECTORY}/{name}")])?;
    storage::replace(&folder, &name, &bytes)?;
    Ok(format!("{PEOPLE_DIRECTORY}/{name}"))
}

/// Writes a new Person file after checking its exact bytes; refuses to replace one.
pub fn create_person(workspace: &Workspace, person: &Person) -> Result<String, Stop> {
    let id = checked_id(&person.id)?;
    let name = format!("{id}.json");
    let path = format!("{PEOPLE_DIRECTORY}/{name}");
    let bytes = document::person_bytes(person);
    workspace::check_person(PEOPLE_DIRECTORY, &name, &bytes).map_err(Stop::Findings)?;
    let folder = workspace.people_folder()?;
    workspace.refuse_symlinks(&[&path])?;
    if !storage::create_new(&folder, &name, &bytes)? {
        return Err(Stop::Invalid(format!("`{path}` already exists; edit it with `acompose people edit {id}`")));
    }
    Ok(path)
}

/// Writes `people/bindings.yaml` after checking its exact bytes as `people validate`
/// would, with every referenced Person required to have a file. Returns the path written.
pub fn save_bindings(workspace: &Workspace, bindings: &Bindings) -> Result<String, Stop> {
    let bytes = document::bindings_bytes(bindings);
    let files = workspace.collect()?;
    let present = files.people.iter().filter_map(|file| workspace::slug_stem(&file.name)).map(str::to_owned).collect();
    let (checked, findings) = workspace::check_bindings(&bytes, &present);
    if checked.is_none() || !findings.is_empty() {
        return Err(Stop::Findings(findings));
    }
    let folder = workspace.people_folder()?;
    workspace.refuse_symlinks(&[workspace::BINDINGS_PATH])?;
    let name = workspace::BINDINGS_PATH.rsplit('/').next().unwrap_or(workspace::BINDINGS_PATH);
    storage::replace(&folder, name, &bytes)?;
    Ok(workspace::BINDINGS_PATH.to_owned())
}

/// Replaces `people/bindings.yaml` with a submitted people-bindings@1 document (JSON is
/// also YAML), checked exactly as `people validate` checks the file, every referenced
/// Person required to have a file. Writes the canonical form; returns what was saved.
pub fn replace_bindings(workspace: &Workspace, submitted: &[u8]) -> Result<Bindings, Stop> {
    let files = workspace.collect()?;
    let present = files.people.iter().filter_map(|file| workspace::slug_stem(&file.name)).map(str::to_owned).collect();
    let (checked, findings) = workspace::check_bindings(submitted, &present);
    let Some(bindings) = checked.filter(|_| findings.is_empty()) else {
        return Err(Stop::Findings(findings));
    };
    save_bindings(workspace, &bindings)?;
    Ok(bindings)
}

/// The roster a resolution preview reads. A broken Person or bindings file stops it; a
/// binding that names a Person with no file does not (resolution skips that candidate as
/// missing), and comes back among the findings.
pub fn roster_for_resolution(workspace: &Workspace) -> Result<acompose_people::Validation, Stop> {
    let validation = workspace::load_roster(&workspace.collect()?);
    let blocking =
        validation.findings.iter().any(|finding| finding.is_error() && finding.code != workspace::MISSING_BINDING_CODE);
    if blocking {
        return Err(Stop::Findings(validation.findings));
    }
    Ok(validation)
}

/// What `people init` wrote.
pub struct Initialised {
    /// Workspace-relative paths written, in order.
    pub written: Vec<String>,
    /// The README path, and whether it was written (an existing one is kept).
    pub readme: String,
    pub readme_written: bool,
    /// Whether the workspace's own Agent Toolkit mirrors and lock were kept as they are.
    pub kept_toolkit_contract: bool,
}

/// Scaffolds `people/README.md` and the schema mirrors. Every destination is checked
/// before the first byte is written.
pub fn initialise(workspace: &Workspace) -> Result<Initialised, Stop> {
    let readme = format!("{PEOPLE_DIRECTORY}/README.md");
    // A workspace the Agent Toolkit made keeps its own mirrors and lock.
    let mirrors = contract::init_files(workspace.existing_lock()?.as_deref());
    let mut destinations = vec![PEOPLE_DIRECTORY, readme.as_str(), "schemas", sessions::PROJECTS_DIRECTORY];
    destinations.extend(mirrors.iter().map(|file| file.path.as_str()));
    workspace.refuse_symlinks(&destinations)?;
    let people = workspace.people_folder()?;
    let schemas = workspace.storage_folder("schemas")?;
    // Where `projects/<id>` links to checkouts go (`ln -s ~/src/app projects/app`).
    let projects_existed = workspace.path(sessions::PROJECTS_DIRECTORY).is_dir();
    workspace.storage_folder(sessions::PROJECTS_DIRECTORY)?;
    let readme_written = storage::create_new(&people, "README.md", report::people_readme().as_bytes())?;
    let mut written = Vec::new();
    if readme_written {
        written.push(readme.clone());
    }
    if !projects_existed {
        written.push(format!("{}/", sessions::PROJECTS_DIRECTORY));
    }
    for file in &mirrors {
        let name = file.path.rsplit('/').next().unwrap_or(&file.path);
        storage::replace(&schemas, name, &file.bytes)?;
        written.push(file.path.clone());
    }
    Ok(Initialised { written, readme, readme_written, kept_toolkit_contract: mirrors.is_empty() })
}

/// One project a session can start in: `projects/<id>`, a link to an existing folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub id: String,
    /// The canonical folder the link resolves to.
    pub folder: std::path::PathBuf,
}

/// The projects of a workspace, by id: every entry of `projects/` with a slug name that
/// [`sessions::project_folder`] accepts. Entries it refuses are left out; a workspace
/// without `projects/` has none.
pub fn projects(workspace: &Workspace) -> Result<Vec<Project>, Stop> {
    workspace.refuse_symlinks(&[sessions::PROJECTS_DIRECTORY])?;
    let folder = workspace.path(sessions::PROJECTS_DIRECTORY);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(Stop::Io(FileError::caused(&folder, "cannot list the projects".to_owned(), error))),
    };
    let mut projects: Vec<Project> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().filter(|name| is_slug(name)).map(str::to_owned))
        .filter_map(|id| sessions::project_folder(workspace, &id).ok().map(|folder| Project { id, folder }))
        .collect();
    projects.sort_by(|left, right| left.id.cmp(&right.id));
    Ok(projects)
}

/// The warnings of the People's `mcp_servers` references the home's MCP inventory does
/// not declare. An inventory that cannot be read resolves nothing, so every reference is
/// reported; its own problems are `acompose mcp list`'s to show.
pub fn mcp_reference_findings(
    people: &[acompose_people::Person],
    home: &crate::home::Home,
) -> Vec<acompose_people::Diagnostic> {
    let known: Option<std::collections::BTreeSet<String>> = match crate::compose::mcp_inventory::read(home) {
        Ok(Some((inventory, _))) => Some(inventory.servers.into_iter().map(|entry| entry.server.name).collect()),
        Ok(None) | Err(_) => None,
    };
    acompose_people::workspace::unknown_mcp_references(people, known.as_ref())
}
