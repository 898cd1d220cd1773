//! What the page writes for a user who should not have to make files by hand: the
//! `projects/<id>` link to a project's folder, and swarm recipes under `recipes/` in the
//! format `acompose people resolve --recipe FILE` reads. Every check of a recipe is the
//! People core's (`recipe::parse`); this module only places and lists files.

use std::path::Path;

use acompose_people::recipe::{self, Recipe, Syntax};
use acompose_people::{Diagnostic, is_slug};

use super::sessions::{PROJECTS_DIRECTORY, project_folder};
use super::{Project, Stop, Workspace, storage};
use crate::home::atomic::FileError;

/// The workspace folder the page keeps recipes in.
pub const RECIPES_DIRECTORY: &str = "recipes";

/// Links `projects/<id>` to an existing folder, given as an absolute path, so sessions can
/// start there. Refuses an id that is not a slug, a path that is not an existing folder
/// and an id already taken; the folder itself is never written.
pub fn link_project(workspace: &Workspace, id: &str, folder: &Path) -> Result<Project, Stop> {
    if !is_slug(id) {
        return Err(Stop::Invalid(
            "a project id is a lowercase slug: letters, digits, `-` and `_`, starting with a letter or digit"
                .to_owned(),
        ));
    }
    if !folder.is_absolute() {
        return Err(Stop::Invalid("the project folder must be a full path, starting with `/`".to_owned()));
    }
    let Ok(target) = std::fs::canonicalize(folder) else {
        return Err(Stop::Invalid("there is no folder at this path".to_owned()));
    };
    if !target.is_dir() {
        return Err(Stop::Invalid("this path is a file, not a folder".to_owned()));
    }
    let projects = workspace.storage_folder(PROJECTS_DIRECTORY)?;
    let link = projects.join(id);
    if std::fs::symlink_metadata(&link).is_ok() {
        return Err(Stop::Invalid(format!("there is already a project `{id}`; choose another id")));
    }
    make_link(&target, &link)?;
    let folder = project_folder(workspace, id)?;
    Ok(Project { id: id.to_owned(), folder })
}

#[cfg(unix)]
fn make_link(target: &Path, link: &Path) -> Result<(), Stop> {
    std::os::unix::fs::symlink(target, link)
        .map_err(|error| Stop::Io(FileError::caused(link, "cannot create the project link".to_owned(), error)))
}

#[cfg(not(unix))]
fn make_link(_target: &Path, link: &Path) -> Result<(), Stop> {
    Err(Stop::Io(FileError::new(link, "project links need a system with symbolic links".to_owned())))
}

/// One recipe of `recipes/`: its file name, text and roles, or why it cannot be read.
#[derive(Debug, Clone)]
pub struct StoredRecipe {
    pub file: String,
    pub text: Vec<u8>,
    pub parsed: Result<Recipe, Vec<Diagnostic>>,
}

/// The recipes of `recipes/` (`.json`, `.yaml`, `.yml`), each parsed as `people resolve`
/// parses it, sorted by file name.
pub fn recipes(workspace: &Workspace) -> Result<(Vec<StoredRecipe>, Vec<Diagnostic>), Stop> {
    let (files, refused) = workspace.folder_files(RECIPES_DIRECTORY, &[".json", ".yaml", ".yml"])?;
    let recipes = files
        .into_iter()
        .filter_map(|file| {
            let syntax = Syntax::from_file_name(&file.name)?;
            let label = format!("{RECIPES_DIRECTORY}/{}", file.name);
            let parsed = recipe::parse(&label, syntax, &file.bytes);
            Some(StoredRecipe { file: label, text: file.bytes, parsed })
        })
        .collect();
    Ok((recipes, refused))
}

/// Writes a new recipe `recipes/<name>.json` after checking its exact bytes as
/// `people resolve` will read them. Refuses a name that is not a slug and one taken.
/// Returns the workspace-relative path written.
pub fn save_recipe(workspace: &Workspace, name: &str, bytes: &[u8]) -> Result<String, Stop> {
    if !is_slug(name) {
        return Err(Stop::Invalid(
            "a recipe name is a lowercase slug: letters, digits, `-` and `_`, starting with a letter or digit"
                .to_owned(),
        ));
    }
    let file = format!("{name}.json");
    let path = format!("{RECIPES_DIRECTORY}/{file}");
    recipe::parse(&path, Syntax::Json, bytes).map_err(Stop::Findings)?;
    workspace.refuse_symlinks(&[RECIPES_DIRECTORY, &path])?;
    let folder = workspace.storage_folder(RECIPES_DIRECTORY)?;
    let taken = [".yaml", ".yml"].iter().any(|extension| folder.join(format!("{name}{extension}")).exists());
    if taken || !storage::create_new(&folder, &file, bytes)? {
        return Err(Stop::Invalid(format!("there is already a recipe `{name}`; choose another name")));
    }
    Ok(path)
}
