//! Where things live: the acompose home (`--home`, `$ACOMPOSE_HOME`, `~/.agent-compose`),
//! the projects root, the layout inside home, and the host configuration read from it.
//! Writes nothing; the converger and the transactions write.

use std::path::{Path, PathBuf};
use std::time::Duration;

use acompose_engine::host_config::{CONFIG_FILE, HostConfig, parse_host_config};

use crate::error::{Findings, HostError};
use crate::load::{EMBEDDED, Location, Selection, error_kind, printable};
use crate::progress::Progress;

/// Where things live inside home.
pub const ARTIFACT_DIR: &str = "sources/personality";
pub const BUNDLES_DIR: &str = "bundles";
pub const PLAN_FILE: &str = "repository-plan.json";
pub const INDEX_FILE: &str = "index.json";
/// The bundles host convergence materialized and has not pruned yet, one id per line.
/// Written before a new bundle folder appears, so a convergence that fails after
/// materializing leaves no bundle that a later one would not prune.
pub const WRITTEN_FILE: &str = ".acompose-written";

/// How long a convergence waits for another one to finish.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// Resolves home: `--home`, else `$ACOMPOSE_HOME`, else `~/.agent-compose`.
pub fn resolve_home(flag: Option<&Path>) -> Result<PathBuf, HostError> {
    if let Some(path) = flag {
        return Ok(path.to_path_buf());
    }
    if let Some(value) = std::env::var_os("ACOMPOSE_HOME").filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(value));
    }
    match std::env::home_dir() {
        Some(home) if !home.as_os_str().is_empty() => Ok(home.join(".agent-compose")),
        _ => Err(HostError::environment("", "cannot find a home directory; pass `--home DIR` or set `ACOMPOSE_HOME`")),
    }
}

/// Resolves the projects root: flag, `$PROJECTS_ROOT`, `~/projects`.
pub fn projects_root(flag: Option<&Path>) -> PathBuf {
    if let Some(path) = flag {
        return path.to_path_buf();
    }
    if let Some(value) = std::env::var_os("PROJECTS_ROOT").filter(|value| !value.is_empty()) {
        return PathBuf::from(value);
    }
    std::env::home_dir().map_or_else(|| PathBuf::from("projects"), |home| home.join("projects"))
}

/// Refuses a home that is a symbolic link or not a directory.
pub fn check_home(home: &Path) -> Result<(), HostError> {
    match std::fs::symlink_metadata(home) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(HostError::invalid(
            home,
            format!("home `{}` is a symbolic link; pass the real directory", home.display()),
        )),
        Ok(metadata) if !metadata.is_dir() => {
            Err(HostError::invalid(home, format!("home `{}` is not a directory", home.display())))
        }
        _ => Ok(()),
    }
}

/// Creates home when it does not exist yet.
pub fn create_home(home: &Path) -> Result<(), HostError> {
    std::fs::create_dir_all(home).map_err(|error| {
        HostError::environment(home, format!("cannot create home `{}`: {}", home.display(), error_kind(&error)))
    })
}

/// Reads and parses `<home>/agent-compose.yaml` when present. Warnings go to `progress`.
pub fn read_config(home: &Path, progress: &dyn Progress) -> Result<HostConfig, HostError> {
    let path = home.join(CONFIG_FILE);
    let unreadable = |error: &std::io::Error| format!("cannot read `{}`: {}", path.display(), error_kind(error));
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(HostConfig::default()),
        Err(error) => return Err(HostError::environment(&path, unreadable(&error))),
    };
    if metadata.file_type().is_symlink() || !metadata.is_file() {
        return Err(HostError::invalid(
            &path,
            format!("`{}` is not a regular file; symbolic links are refused", path.display()),
        ));
    }
    let display = path.display().to_string();
    let bytes = match crate::load::read_limited(&path, &display, acompose_engine::limits::PEOPLE_FILE) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(too_large)) => {
            let findings = Findings::collect(vec![too_large], |_| None);
            return Err(HostError::Diagnostics { subject: format!("`{display}` is refused"), findings });
        }
        Err(error) => return Err(HostError::environment(&path, unreadable(&error))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(HostError::invalid(&path, format!("`{display}` is not valid UTF-8")));
    };
    let parsed = parse_host_config(&text, &display);
    let printable = printable(&text);
    let findings = Findings::collect(parsed.diagnostics.clone(), |file| (file == display).then(|| printable.clone()));
    if parsed.has_errors() {
        return Err(HostError::Diagnostics { subject: format!("`{display}` is invalid"), findings });
    }
    if !findings.is_empty() {
        progress.diagnostics(&findings);
    }
    Ok(parsed.value)
}

/// The file in home with the user's own harness rows (`docs/delivery.md`).
pub const LAYOUTS_FILE: &str = "layouts.kdl";

/// Lays `<home>/layouts.kdl`, when there is one, over the built-in harness table for the
/// rest of the process. A file with any error is not used, and its problems come back
/// with its text, for rendering with file, line and snippet.
pub fn install_layouts(home: &Path) -> Result<(), HostError> {
    let path = home.join(LAYOUTS_FILE);
    match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(metadata) if metadata.is_file() => {}
        _ => return Err(HostError::invalid(&path, format!("`{}` is not a regular file", path.display()))),
    }
    let display = path.display().to_string();
    let bytes = match crate::load::read_limited(&path, &display, acompose_engine::limits::PEOPLE_FILE) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(too_large)) => {
            let findings = Findings::collect(vec![too_large], |_| None);
            return Err(HostError::Diagnostics { subject: format!("`{display}` is refused"), findings });
        }
        Err(error) => {
            let message = format!("cannot read `{}`: {}", path.display(), error_kind(&error));
            return Err(HostError::environment(&path, message));
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(HostError::invalid(&path, format!("`{display}` is not valid UTF-8")));
    };
    let diagnostics = acompose_engine::harness_layout::install(&text, &display);
    if diagnostics.is_empty() {
        return Ok(());
    }
    let printable = printable(&text);
    let findings = Findings::collect(diagnostics, |file| (file == display).then(|| printable.clone()));
    Err(HostError::Diagnostics { subject: format!("`{display}` is invalid; its rows were not used"), findings })
}

/// The person source a configuration selects; relative paths resolve against home.
pub fn selection_for(config: &HostConfig, home: &Path) -> Selection {
    let resolve = |text: &str| {
        if text == EMBEDDED {
            Location::Embedded
        } else {
            let path = Path::new(text);
            Location::Directory(if path.is_absolute() { path.to_path_buf() } else { home.join(path) })
        }
    };
    let person = config.person_source.as_ref().map_or(Location::Embedded, |(text, _)| resolve(text));
    Selection {
        core_rules: person == Location::Embedded,
        person,
        libraries: config.personality_libraries.iter().map(|(text, _)| resolve(text)).collect(),
    }
}

/// Refuses symbolic links between home and the artifact directory.
pub fn refuse_symlinked_parents(home: &Path, artifact: &Path) -> Result<(), HostError> {
    let mut current = home.to_path_buf();
    let relative = artifact.strip_prefix(home).unwrap_or(artifact);
    for component in relative.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(HostError::invalid(
                    &current,
                    format!("`{}` is a symbolic link; refusing to write through it", current.display()),
                ));
            }
            Ok(metadata) if !metadata.is_dir() => {
                return Err(HostError::invalid(
                    &current,
                    format!("`{}` is not a directory; move it away so the artifact can be written", current.display()),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
