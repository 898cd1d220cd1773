//! The home: where things live and how they are written. The acompose home (`--home`,
//! `$ACOMPOSE_HOME`, `~/.agent-compose`), the projects root and the layout inside home
//! ([`Home`]), the host configuration and settings, the lock, transactions and atomic
//! writes, the fingerprint cache of bare convergence and of `compose`, what a path looked
//! like when read (`observe`, `anchor`), and the debris an interrupted writer leaves.
//!
//! Calls nothing of composition, delivery, convergence or People; every other folder
//! calls it.

mod anchor;
pub mod atomic;
pub mod cache;
pub mod cache_log;
pub mod debris;
pub mod observe;
pub mod projection_record;
pub mod read;
pub mod settings;
pub mod transaction;

use std::path::{Path, PathBuf};
use std::time::Duration;

use acompose_engine::host_config::{CONFIG_FILE, HostConfig, PersonPolicy, parse_host_config};

use crate::error::error_kind;
use crate::error::{Findings, HostError};
use crate::home::read::{EMBEDDED, Location, Selection, printable};
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

/// The folder of runtime homes inside home.
pub const RUNTIME_DIR: &str = "runtime";
/// Where launches keep the bundles they compose for a tier other than the home's own
/// (bare convergence never prunes it).
pub const RUNTIME_BUNDLES_DIR: &str = "runtime/bundles";
/// The record of the links host delivery made, inside home.
pub const MOUNTS_FILE: &str = "skill-mounts.json";
/// The register's file name inside home.
pub const REGISTER_FILE: &str = "projections.json";
/// The store folder inside home.
pub const STORE_DIR: &str = "store";
/// The folder of a home whose `*.kdl` files are its overlays when the configuration
/// names none.
pub const OVERLAYS_DIR: &str = "overlays";
/// Where a home keeps signatures: `<home>/signatures/<id>.sig`.
pub const SIGNATURES_DIR: &str = "signatures";
/// How long a convergence waits for another one to finish.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// The acompose home and its layout: every path under the home comes from a method of
/// it, so no module joins the home's folder and file names itself. Opened once per
/// command ([`resolve_home`]) and passed as `&Home`. It dereferences to the home's own
/// path, for messages and for the few places that need the folder itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// The home at `root` (not read: nothing is checked or created).
    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    /// The home folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `agent-compose.yaml`, the host configuration.
    pub fn config_file(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }

    /// `layouts.kdl`, the user's own harness rows.
    pub fn layouts_file(&self) -> PathBuf {
        self.root.join(LAYOUTS_FILE)
    }

    /// `bundles/`, every role's bundles and their index.
    pub fn bundles(&self) -> PathBuf {
        self.root.join(BUNDLES_DIR)
    }

    /// One bundle's folder by its id.
    pub fn bundle(&self, id: &str) -> PathBuf {
        self.bundles().join(id)
    }

    /// `bundles/index.json`: each role's bundle and the earlier ones kept.
    pub fn index_file(&self) -> PathBuf {
        self.bundles().join(INDEX_FILE)
    }

    /// `bundles/.acompose-written`: bundles convergence wrote and has not pruned yet.
    pub fn written_file(&self) -> PathBuf {
        self.bundles().join(WRITTEN_FILE)
    }

    /// `.acompose-owned.json` at the home's top: the files the home's own transaction
    /// owns there (the plan among them).
    pub fn ownership_record(&self) -> PathBuf {
        self.root.join(transaction::OWNERSHIP_FILE)
    }

    /// `repository-plan.json`: the repositories the estate reads.
    pub fn plan_file(&self) -> PathBuf {
        self.root.join(PLAN_FILE)
    }

    /// `sources/personality/`, the roster artifact.
    pub fn artifact(&self) -> PathBuf {
        self.root.join(ARTIFACT_DIR)
    }

    /// `store/`, the content-addressed skill trees and slices bundles link into.
    pub fn store(&self) -> PathBuf {
        self.root.join(STORE_DIR)
    }

    /// `cache/`, the fingerprint caches.
    pub fn cache(&self) -> PathBuf {
        self.root.join(cache::CACHE_DIR)
    }

    /// `overlays/`, the private overlays read when `overlays:` is not set.
    pub fn overlays(&self) -> PathBuf {
        self.root.join(OVERLAYS_DIR)
    }

    /// `mcp.kdl`, the MCP inventory.
    pub fn mcp_inventory(&self) -> PathBuf {
        self.root.join(acompose_engine::mcp::FILE)
    }

    /// `signatures/`, each signed bundle's signature by its id.
    pub fn signatures(&self) -> PathBuf {
        self.root.join(SIGNATURES_DIR)
    }

    /// `runtime/`, the runtime homes of launched harnesses.
    pub fn runtime(&self) -> PathBuf {
        self.root.join(RUNTIME_DIR)
    }

    /// `runtime/bundles/`, bundles composed for a launch outside the index.
    pub fn runtime_bundles(&self) -> PathBuf {
        self.root.join(RUNTIME_BUNDLES_DIR)
    }

    /// `projections.json`, the projections register.
    pub fn projections_register(&self) -> PathBuf {
        self.root.join(REGISTER_FILE)
    }

    /// `skill-mounts.json`, the record of skills delivered into harness folders.
    pub fn mounts_record(&self) -> PathBuf {
        self.root.join(MOUNTS_FILE)
    }
}

impl std::ops::Deref for Home {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.root
    }
}

impl From<&Home> for PathBuf {
    fn from(home: &Home) -> PathBuf {
        home.root.clone()
    }
}

impl AsRef<Path> for Home {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

/// Resolves home: `--home`, else `$ACOMPOSE_HOME`, else `~/.agent-compose`.
pub fn resolve_home(flag: Option<&Path>) -> Result<Home, HostError> {
    if let Some(path) = flag {
        return Ok(Home::at(path));
    }
    if let Some(value) = std::env::var_os("ACOMPOSE_HOME").filter(|value| !value.is_empty()) {
        return Ok(Home::at(value));
    }
    match std::env::home_dir() {
        Some(home) if !home.as_os_str().is_empty() => Ok(Home::at(home.join(".agent-compose"))),
        _ => Err(HostError::environment("", "cannot find a home directory; pass `--home DIR` or set `ACOMPOSE_HOME`")),
    }
}

/// The role → bundle id index of the home's bundles (empty when there is none).
pub fn read_index(home: &Home) -> std::collections::BTreeMap<String, String> {
    std::fs::read(home.index_file())
        .ok()
        .and_then(|bytes| acompose_engine::convergence::parse_index(&bytes))
        .unwrap_or_default()
}

/// Each role's earlier bundles, newest first, as the home's index keeps them (empty when
/// there is none): `ROLE@{1}` is the first.
pub fn read_history(home: &Home) -> std::collections::BTreeMap<String, Vec<String>> {
    std::fs::read(home.index_file())
        .map(|bytes| acompose_engine::convergence::parse_history(&bytes))
        .unwrap_or_default()
}

/// Refuses a home that is a symbolic link or not a directory.
pub fn check_home(home: &Home) -> Result<(), HostError> {
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
pub fn create_home(home: &Home) -> Result<(), HostError> {
    std::fs::create_dir_all(home).map_err(|error| {
        HostError::environment(home, format!("cannot create home `{}`: {}", home.display(), error_kind(&error)))
    })
}

/// A host configuration file as read: its path, the label diagnostics name it by, its
/// printable text and what it parsed to (diagnostics included).
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub label: String,
    pub text: String,
    pub parsed: acompose_engine::diagnostic::Parsed<HostConfig>,
}

impl ConfigFile {
    /// The parse's diagnostics with the file's text.
    pub fn findings(&self) -> Findings {
        self.findings_of(self.parsed.diagnostics.clone())
    }

    /// `diagnostics` about this file, with its text for snippets.
    pub fn findings_of(&self, diagnostics: Vec<acompose_engine::Diagnostic>) -> Findings {
        Findings::collect(diagnostics, |file| (file == self.label).then(|| self.text.clone()))
    }

    /// The 1-based line of a byte offset of the file.
    pub fn line_of(&self, offset: usize) -> usize {
        acompose_engine::diagnostic::line_column(&self.text, offset).0
    }
}

/// Reads and parses a host configuration file; `None` when there is none at `path`. A
/// symbolic link, a file over the size limit or text that is not UTF-8 is refused.
pub fn read_config_file(path: &Path) -> Result<Option<ConfigFile>, HostError> {
    let unreadable = |error: &std::io::Error| format!("cannot read `{}`: {}", path.display(), error_kind(error));
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(HostError::environment(path, unreadable(&error))),
    };
    if metadata.file_type().is_symlink() || !metadata.is_file() {
        return Err(HostError::invalid(
            path,
            format!("`{}` is not a regular file; symbolic links are refused", path.display()),
        ));
    }
    let label = path.display().to_string();
    let bytes = match crate::home::read::read_limited(path, &label, acompose_engine::limits::PEOPLE_FILE) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(too_large)) => {
            let findings = Findings::collect(vec![too_large], |_| None);
            return Err(HostError::Diagnostics { subject: format!("`{label}` is refused"), findings });
        }
        Err(error) => return Err(HostError::environment(path, unreadable(&error))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(HostError::invalid(path, format!("`{label}` is not valid UTF-8")));
    };
    let parsed = parse_host_config(&text, &label);
    Ok(Some(ConfigFile { path: path.to_path_buf(), label, text: printable(&text), parsed }))
}

/// Reads `<home>/agent-compose.yaml` as a command uses it: absent is the default, a file
/// with errors stops the command.
pub fn read_config_checked(home: &Home) -> Result<Option<ConfigFile>, HostError> {
    let Some(file) = read_config_file(&home.config_file())? else { return Ok(None) };
    if file.parsed.has_errors() {
        return Err(HostError::Diagnostics {
            subject: format!("`{}` is invalid", file.label),
            findings: file.findings(),
        });
    }
    Ok(Some(file))
}

/// Reads and parses `<home>/agent-compose.yaml` when present. Warnings go to `progress`.
pub fn read_config(home: &Home, progress: &dyn Progress) -> Result<HostConfig, HostError> {
    let Some(file) = read_config_checked(home)? else { return Ok(HostConfig::default()) };
    let findings = file.findings();
    if !findings.is_empty() {
        progress.diagnostics(&findings);
    }
    Ok(file.parsed.value)
}

/// Resolves a path written in the configuration: `~/…` under the user's home, an
/// absolute path as it is, anything else relative to the acompose home.
pub fn config_path(text: &str, home: &Home) -> PathBuf {
    if let Some(rest) = text.strip_prefix("~/")
        && let Some(user) = std::env::home_dir().filter(|user| !user.as_os_str().is_empty())
    {
        return user.join(rest);
    }
    let path = Path::new(text);
    if path.is_absolute() { path.to_path_buf() } else { home.join(path) }
}

/// The overlay files of a home, in the order they apply; the folder listed when the
/// configuration names none (`None` for it then, so the caller can watch it).
pub fn overlay_paths(home: &Home, config: &HostConfig) -> (Vec<PathBuf>, Option<PathBuf>) {
    if !config.overlays.is_empty() {
        let paths = config.overlays.iter().map(|(text, _)| config_path(text, home)).collect();
        return (paths, None);
    }
    let folder = home.overlays();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    !name.starts_with('.') && name.ends_with(".kdl")
                })
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    (paths, Some(folder))
}

/// The file in home with the user's own harness rows (`docs/delivery.md`).
pub const LAYOUTS_FILE: &str = "layouts.kdl";

/// Lays `<home>/layouts.kdl`, when there is one, over the built-in harness table for the
/// rest of the process. A file with any error is not used, and its problems come back
/// with its text, for rendering with file, line and snippet.
pub fn install_layouts(home: &Home) -> Result<(), HostError> {
    let path = home.layouts_file();
    match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(metadata) if metadata.is_file() => {}
        _ => return Err(HostError::invalid(&path, format!("`{}` is not a regular file", path.display()))),
    }
    let display = path.display().to_string();
    let bytes = match crate::home::read::read_limited(&path, &display, acompose_engine::limits::PEOPLE_FILE) {
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
/// Under `person_policy: external-only` a configuration that selects no external source
/// is refused with [`acompose_engine::host_config::external_only_refusal`], shown with
/// the configuration's text: the same refusal every roster-loading command gives.
pub fn selection_for(config: &HostConfig, home: &Home) -> Result<Selection, HostError> {
    let resolve =
        |text: &str| if text == EMBEDDED { Location::Embedded } else { Location::Directory(config_path(text, home)) };
    let person = config.person_source.as_ref().map_or(Location::Embedded, |(text, _)| resolve(text));
    if person == Location::Embedded && config.person_policy == PersonPolicy::ExternalOnly {
        return Err(external_only_error(home, config.person_policy_span));
    }
    Ok(Selection {
        core_rules: person == Location::Embedded,
        person,
        libraries: config.personality_libraries.iter().map(|(text, _)| resolve(text)).collect(),
    })
}

/// The refusal of the embedded roster under `person_policy: external-only`, with the
/// configuration's text when it can still be read.
pub fn external_only_error(home: &Home, span: Option<acompose_engine::diagnostic::Span>) -> HostError {
    let path = home.config_file();
    let label = path.display().to_string();
    let diagnostic = acompose_engine::host_config::external_only_refusal(&label, span);
    let text = std::fs::read_to_string(&path).ok().map(|text| printable(&text));
    let findings = Findings::collect(vec![diagnostic], |_| text.clone());
    HostError::Diagnostics { subject: EXTERNAL_ONLY_SUBJECT.to_owned(), findings }
}

/// The subject line of the external-only refusal.
pub const EXTERNAL_ONLY_SUBJECT: &str = "no external person source is selected";

/// Refuses symbolic links between home and the artifact directory.
pub fn refuse_symlinked_parents(home: &Home, artifact: &Path) -> Result<(), HostError> {
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
