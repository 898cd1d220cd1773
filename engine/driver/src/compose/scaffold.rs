//! `acompose roster init DIR`: the small external person package of `acompose-roster`
//! (two roles, three personalities, every definition) written into a new or empty
//! folder, its `person.kdl` naming the package after the folder. The files are written
//! into a hidden sibling first and renamed into place, so a failure leaves no half
//! package; an existing file is never overwritten.

use std::path::{Path, PathBuf};

use crate::compose::load::error_kind;
use crate::error::HostError;

/// What `roster init` wrote.
#[derive(Debug, Clone)]
pub struct Scaffolded {
    /// The package name `person.kdl` declares (`person:<name>`).
    pub name: String,
    /// The files written, relative to the folder, sorted.
    pub files: Vec<String>,
}

/// The package name a folder suggests: its name as a slug, else the scaffold's own.
pub fn package_name(folder: &Path) -> String {
    let name = folder.file_name().map(|name| name.to_string_lossy().to_lowercase()).unwrap_or_default();
    let slug: String =
        name.chars().map(|character| if character.is_ascii_alphanumeric() { character } else { '-' }).collect();
    let mut collapsed = String::new();
    for character in slug.chars() {
        if !(character == '-' && collapsed.ends_with('-')) {
            collapsed.push(character);
        }
    }
    let trimmed = collapsed.trim_matches('-');
    if trimmed.is_empty() { acompose_roster::SCAFFOLD_NAME.to_owned() } else { trimmed.to_owned() }
}

/// Writes the scaffold package into `folder`, which must not exist or be an empty folder.
pub fn init_package(folder: &Path) -> Result<Scaffolded, HostError> {
    let shown = folder.display();
    match std::fs::symlink_metadata(folder) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(HostError::invalid(folder, format!("`{shown}` is a symbolic link; pass a new folder")));
        }
        Ok(metadata) if !metadata.is_dir() => {
            return Err(HostError::invalid(folder, format!("`{shown}` is a file; pass a new or empty folder")));
        }
        Ok(_) if std::fs::read_dir(folder).map(|mut entries| entries.next().is_some()).unwrap_or(true) => {
            return Err(HostError::invalid(
                folder,
                format!("`{shown}` is not empty; `roster init` writes only into a new or empty folder"),
            ));
        }
        _ => {}
    }
    let name = package_name(folder);
    let parent = match folder.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let environment = |error: std::io::Error| {
        HostError::environment(folder, format!("cannot write `{shown}`: {}", error_kind(&error)))
    };
    std::fs::create_dir_all(&parent).map_err(environment)?;
    let staging = tempfile::Builder::new().prefix(".acompose-init-").tempdir_in(&parent).map_err(environment)?;
    let mut files = Vec::new();
    for (relative, bytes) in acompose_roster::scaffold() {
        let target = staging.path().join(relative);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).map_err(environment)?;
        }
        let bytes: Vec<u8> = if *relative == "person.kdl" {
            let quoted = format!("\"{}\"", acompose_roster::SCAFFOLD_NAME);
            String::from_utf8_lossy(bytes).replace(&quoted, &format!("\"{name}\"")).into_bytes()
        } else {
            bytes.to_vec()
        };
        std::fs::write(&target, bytes).map_err(environment)?;
        files.push((*relative).to_owned());
    }
    // An empty folder in the way is replaced; anything else was refused above.
    if folder.is_dir() {
        std::fs::remove_dir(folder).map_err(environment)?;
    }
    let staged = staging.keep();
    if let Err(error) = std::fs::rename(&staged, folder) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(environment(error));
    }
    files.sort();
    Ok(Scaffolded { name, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_name_becomes_the_package_name_and_a_full_folder_is_refused() {
        assert_eq!(package_name(Path::new("/x/My Team_2")), "my-team-2");
        assert_eq!(package_name(Path::new("/x/___")), "my-team");
        let temporary = tempfile::tempdir().expect("tempdir");
        let made = init_package(&temporary.path().join("pkg")).expect("written");
        assert_eq!(made.name, "pkg");
        assert!(temporary.path().join("pkg/person.kdl").is_file());
        assert!(init_package(&temporary.path().join("pkg")).is_err(), "not empty now");
        let leftovers: Vec<_> = std::fs::read_dir(temporary.path()).expect("list").flatten().collect();
        assert_eq!(leftovers.len(), 1, "no staging folder is left");
    }
}
