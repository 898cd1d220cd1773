//! Bare `acompose`: host convergence. Resolves home, reads the host configuration,
//! loads and validates the person source, then writes the roster artifact in one
//! transaction under the home lock. A missing or invalid source aborts before anything
//! is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acompose_engine::Database;
use acompose_engine::converge::{CONFIG_FILE, HostConfig, parse_host_config};

use crate::load::{EMBEDDED, Loader, Location, Selection};
use crate::terminal::{Terminal, count_summary, render_diagnostics};
use crate::transaction::{self, Hooks, NoFaults, Outcome};
use crate::{exit, print_stderr, print_stdout};

/// Where the roster artifact lives inside home.
pub const ARTIFACT_DIR: &str = "sources/personality";
/// How long a convergence waits for another one to finish.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// Resolves home: `--home`, else `$ACOMPOSE_HOME`, else `~/.agent-compose`.
pub fn resolve_home(flag: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = flag {
        return Ok(path.to_path_buf());
    }
    if let Some(value) = std::env::var_os("ACOMPOSE_HOME").filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(value));
    }
    match std::env::home_dir() {
        Some(home) if !home.as_os_str().is_empty() => Ok(home.join(".agent-compose")),
        _ => Err("cannot find a home directory; pass `--home DIR` or set `ACOMPOSE_HOME`".to_owned()),
    }
}

/// Refuses a home that is a symbolic link or not a directory.
fn check_home(home: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(home) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            Err(format!("home `{}` is a symbolic link; pass the real directory", home.display()))
        }
        Ok(metadata) if !metadata.is_dir() => Err(format!("home `{}` is not a directory", home.display())),
        _ => Ok(()),
    }
}

/// Reads and parses `<home>/agent-compose.yaml` when present.
pub fn read_config(home: &Path, terminal: &Terminal) -> Result<HostConfig, u8> {
    let path = home.join(CONFIG_FILE);
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(HostConfig::default()),
        Err(error) => {
            print_stderr(&format!("error: cannot read `{}`: {}\n", path.display(), crate::load::error_kind(&error)));
            return Err(exit::ENVIRONMENT);
        }
    };
    if metadata.file_type().is_symlink() || !metadata.is_file() {
        print_stderr(&format!("error: `{}` is not a regular file; symbolic links are refused\n", path.display()));
        return Err(exit::INVALID);
    }
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            print_stderr(&format!("error: cannot read `{}`: {}\n", path.display(), crate::load::error_kind(&error)));
            return Err(exit::ENVIRONMENT);
        }
    };
    let display = path.display().to_string();
    let Ok(text) = String::from_utf8(bytes) else {
        print_stderr(&format!("error: `{display}` is not valid UTF-8\n"));
        return Err(exit::INVALID);
    };
    let parsed = parse_host_config(&text, &display);
    if !parsed.diagnostics.is_empty() {
        let printable = crate::load::printable(&text);
        let text_of = |file: &str| (file == display).then(|| printable.clone());
        print_stderr(&render_diagnostics(&parsed.diagnostics, terminal.stderr, &text_of));
    }
    if parsed.has_errors() {
        print_stderr(&format!("error: `{display}` is invalid ({})\n", count_summary(&parsed.diagnostics)));
        return Err(exit::INVALID);
    }
    Ok(parsed.value)
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

/// What one convergence did, for the summary.
pub struct Report {
    pub source: String,
    pub roles: usize,
    pub personalities: usize,
    pub artifact: PathBuf,
    pub outcome: Outcome,
}

/// Converges home once with the given hooks. Errors are printed; the exit code returned.
pub fn converge(home: &Path, terminal: &Terminal, hooks: &mut dyn Hooks) -> Result<Report, u8> {
    if let Err(message) = check_home(home) {
        print_stderr(&format!("error: {message}\n"));
        return Err(exit::INVALID);
    }
    let config = read_config(home, terminal)?;
    let selection = selection_for(&config, home);
    let mut db = Database::default();
    let mut loader = Loader::default();
    let model = crate::roster::load_model(&mut db, &mut loader, &selection, terminal)?;
    let files = acompose_engine::converge::roster_files(&model);

    if let Err(error) = std::fs::create_dir_all(home) {
        print_stderr(&format!("error: cannot create home `{}`: {}\n", home.display(), crate::load::error_kind(&error)));
        return Err(exit::ENVIRONMENT);
    }
    let _lock = transaction::lock(home, LOCK_TIMEOUT).map_err(|error| {
        print_stderr(&format!("error: {error}\n"));
        error.exit_code()
    })?;
    let artifact = home.join(ARTIFACT_DIR);
    if let Err(error) = refuse_symlinked_parents(home, &artifact) {
        print_stderr(&format!("error: {error}\n"));
        return Err(exit::INVALID);
    }
    let outcome = transaction::apply(&artifact, &files, hooks).map_err(|error| {
        print_stderr(&format!("error: {error}\n"));
        error.exit_code()
    })?;
    Ok(Report {
        source: model.source.clone(),
        roles: model.roles.len(),
        personalities: model.personalities.len(),
        artifact,
        outcome,
    })
}

/// Refuses symbolic links between home and the artifact directory.
fn refuse_symlinked_parents(home: &Path, artifact: &Path) -> Result<(), String> {
    let mut current = home.to_path_buf();
    let relative = artifact.strip_prefix(home).unwrap_or(artifact);
    for component in relative.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(format!("`{}` is a symbolic link; refusing to write through it", current.display()));
            }
            Ok(metadata) if !metadata.is_dir() => {
                return Err(format!(
                    "`{}` is not a directory; move it away so the artifact can be written",
                    current.display()
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The one-screen summary of a convergence.
pub fn summary(report: &Report, elapsed: Duration) -> String {
    let outcome = &report.outcome;
    let mut text = format!(
        "source    {} ({} roles, {} personalities)\nartifact  {}\nfiles     {} written, {} unchanged, {} removed\n",
        report.source,
        report.roles,
        report.personalities,
        report.artifact.display(),
        outcome.written.len(),
        outcome.unchanged,
        outcome.removed.len()
    );
    if outcome.recovered {
        text.push_str("recovered an interrupted convergence before this one\n");
    }
    text.push_str(&format!("time      {} ms\n", elapsed.as_millis()));
    text
}

/// Runs bare `acompose`.
pub fn run(home: Option<&Path>, terminal: &Terminal) -> u8 {
    let started = Instant::now();
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::ENVIRONMENT;
        }
    };
    match converge(&home, terminal, &mut NoFaults) {
        Ok(report) => {
            if !terminal.quiet {
                print_stdout(&summary(&report, started.elapsed()));
            }
            if terminal.verbose > 0 {
                for path in &report.outcome.written {
                    print_stderr(&format!("wrote {path}\n"));
                }
                for path in &report.outcome.removed {
                    print_stderr(&format!("removed {path}\n"));
                }
            }
            exit::SUCCESS
        }
        Err(code) => code,
    }
}
