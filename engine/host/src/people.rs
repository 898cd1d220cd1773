//! People on disk: a workspace read into the engine's inputs (`storage`) and Person files
//! checked and written atomically. The engine validates; this module only refuses
//! symlinks, bad ids and files in the way, and writes.

pub mod process;
pub mod session_runner;
pub mod sessions;
pub mod storage;

use acompose_engine::people::workspace::{self, PEOPLE_DIRECTORY};
use acompose_engine::people::{Person, contract, document, is_slug, printable, report};

pub use crate::atomic::FileError;
pub use storage::{Stop, Workspace};

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
    let mut destinations = vec![PEOPLE_DIRECTORY, readme.as_str(), "schemas"];
    destinations.extend(mirrors.iter().map(|file| file.path.as_str()));
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
    Ok(Initialised { written, readme, readme_written, kept_toolkit_contract: mirrors.is_empty() })
}
