//! An assigned launch's runtime home, `<home>/runtime/<harness>-<role>/`: one per role
//! and harness, kept across bundles so the harness's own state (history, sessions,
//! `--continue`) survives every edit. What it carries from the real home (links only),
//! the isolated projects root it offers, what `gc` removes, and what a harness would
//! still see of other roles from the working folder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acompose_engine::harness_layout::{self, Layout};
use acompose_engine::projection::LAYOUT_SEPARATOR;

use crate::compose::load::error_kind;
use crate::error::HostError;
use crate::home::Home;

/// Set in a launched harness; a launch that sees it is refused.
pub const LAUNCH_VARIABLE: &str = "AGENT_COMPOSE_LAUNCH";
/// Set in a launched harness: its runtime home (where `statusline` finds the role when
/// `HOME` is the user's own).
pub const RUNTIME_VARIABLE: &str = "AGENT_COMPOSE_RUNTIME_HOME";
pub use crate::home::RUNTIME_BUNDLES_DIR;
pub use crate::home::RUNTIME_DIR;
/// The runtime home's own folder: its projection record and journal, the isolated
/// projects root and the record of a launch copy.
pub const RECORD_FOLDER: &str = ".agent-compose";
/// The isolated projects root inside a runtime home (in its own folder, so a home
/// mirrored whole keeps the user's `~/projects`).
pub const PROJECTS_DIR: &str = ".agent-compose/projects";

/// The runtime home's folder name for `role` under `layout`.
pub fn name(layout: &Layout, role: &str) -> String {
    format!("{}-{role}", layout.harness)
}

/// Where the user keeps what a runtime home mirrors: the real home, and the folders the
/// user's own environment moves (the layout's configuration variable, `XDG_CONFIG_HOME`).
#[derive(Debug, Clone, Copy)]
pub struct UserPlaces<'a> {
    pub home: &'a Path,
    /// The value of the layout's configuration variable in the user's environment.
    pub config_folder: Option<&'a Path>,
    /// `XDG_CONFIG_HOME` in the user's environment.
    pub xdg_config: Option<&'a Path>,
    /// The acompose home, which holds the runtime homes: never mirrored into one, so no
    /// runtime home holds a link back to itself.
    pub acompose_home: Option<&'a Path>,
}

/// The most entries of one folder a runtime home mirrors; the rest are not linked.
const MIRROR_LIMIT: usize = 4096;

/// The runtime-home folder the mirror starts at: the whole home when a launch moves
/// `HOME`, the configuration folder alone when it keeps it.
pub fn mirror_root(layout: &Layout) -> &'static str {
    match layout.config_variable {
        Some(variable) if layout.keeps_home => variable.relative_to_home,
        _ => "",
    }
}

/// The paths of the runtime home the user's entries never fill: the harness's skills
/// and instructions at home scope (the role's go there), what the row hides, and the
/// runtime home's own bookkeeping.
pub fn reserved(layout: &Layout) -> BTreeSet<String> {
    let places = layout.places(harness_layout::Scope::Home);
    std::iter::once(places.instructions)
        .chain(std::iter::once(places.skills))
        .chain(places.also_reads.iter().copied())
        .chain(layout.hidden.iter().copied())
        .chain(std::iter::once(RECORD_FOLDER))
        .filter(|path| !path.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The folder of the user's that the runtime home's `relative` path stands for: below a
/// configuration folder the user moved, there; else below the real home.
pub fn user_path(layout: &Layout, user: &UserPlaces<'_>, relative: &str) -> PathBuf {
    let below = |prefix: &str, folder: &Path| -> Option<PathBuf> {
        if prefix.is_empty() {
            return Some(if relative.is_empty() { folder.to_path_buf() } else { folder.join(relative) });
        }
        if relative == prefix {
            return Some(folder.to_path_buf());
        }
        relative.strip_prefix(prefix).and_then(|rest| rest.strip_prefix('/')).map(|rest| folder.join(rest))
    };
    if let Some(carried) = layout.carried.iter().find(|carried| carried.runtime == relative) {
        return match (user.config_folder, carried.config) {
            (Some(folder), Some(config)) => folder.join(config),
            _ => user.home.join(carried.home),
        };
    }
    let moved = layout
        .config_variable
        .zip(user.config_folder)
        .and_then(|(variable, folder)| below(variable.relative_to_home, folder));
    moved
        .or_else(|| user.xdg_config.and_then(|folder| below(".config", folder)))
        .unwrap_or_else(|| if relative.is_empty() { user.home.to_path_buf() } else { user.home.join(relative) })
}

/// What a runtime home links for `layout`: runtime-relative path → the user's entry.
/// From [`mirror_root`] down, every entry of the user's folder is linked, except the
/// [`reserved`] paths; a folder holding a reserved path is made in the runtime home and
/// its other entries linked one by one. A `carry` row links a user file the runtime
/// home names differently (Claude Code's `.claude.json`).
pub fn carried_links(layout: &Layout, user: &UserPlaces<'_>) -> Vec<(String, PathBuf)> {
    let mut reserved = reserved(layout);
    let own = user.acompose_home.and_then(|home| home.strip_prefix(user.home).ok()).and_then(Path::to_str);
    if let Some(own) = own.filter(|own| !own.is_empty()) {
        reserved.insert(own.to_owned());
    }
    let mut links = Vec::new();
    mirror(layout, user, mirror_root(layout), &reserved, &mut links);
    for carried in layout.carried {
        let real = user_path(layout, user, carried.runtime);
        let covered =
            links.iter().any(|(path, _): &(String, PathBuf)| carried.runtime.starts_with(&format!("{path}/")));
        if covered || reserved.contains(carried.runtime) || std::fs::symlink_metadata(&real).is_err() {
            continue;
        }
        links.retain(|(path, _)| path != carried.runtime);
        links.push((carried.runtime.to_owned(), real));
    }
    links.sort();
    links
}

fn mirror(
    layout: &Layout,
    user: &UserPlaces<'_>,
    folder: &str,
    reserved: &BTreeSet<String>,
    links: &mut Vec<(String, PathBuf)>,
) {
    let source = user_path(layout, user, folder);
    let Ok(entries) = std::fs::read_dir(&source) else { return };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .take(MIRROR_LIMIT)
        .collect();
    names.sort();
    for name in names {
        let relative = if folder.is_empty() { name.clone() } else { format!("{folder}/{name}") };
        if reserved.contains(&relative) {
            continue;
        }
        let inside = format!("{relative}/");
        if reserved.iter().any(|path| path.starts_with(&inside)) {
            if source.join(&name).is_dir() {
                mirror(layout, user, &relative, reserved, links);
            }
            continue;
        }
        links.push((relative, source.join(&name)));
    }
}

/// Builds `<runtime>/projects/` as links to the role's repositories (`locations`,
/// relative to `projects`, in resolution order), at the same relative paths, so a tool
/// walking the projects root sees only the role's repositories. A location inside one
/// already linked is reached through it. Returns the links in order. The folder holds
/// only links and the folders leading to them; anything else in it is an error.
pub fn isolate_projects(runtime: &Path, projects: &Path, locations: &[String]) -> Result<Vec<PathBuf>, HostError> {
    let root = runtime.join(PROJECTS_DIR);
    let mut linked: Vec<&str> = Vec::new();
    for location in locations {
        let inside = linked.iter().any(|done| location.starts_with(&format!("{done}/")) || location == done);
        if !inside && plain_location(location) {
            linked.push(location);
        }
    }
    let wanted: BTreeSet<(PathBuf, PathBuf)> =
        linked.iter().map(|location| (root.join(location), projects.join(location))).collect();
    if current_links(&root) != wanted {
        rebuild(&root, &wanted)?;
    }
    Ok(linked.iter().map(|location| root.join(location)).collect())
}

/// Removes the isolated projects root of the earlier layout (`<runtime>/projects`, links
/// and the folders leading to them only), which a runtime home mirroring the user's home
/// would otherwise keep in place of the user's own `~/projects`.
pub fn retire_old_projects_root(runtime: &Path) -> Result<(), HostError> {
    let old = runtime.join("projects");
    let Ok(metadata) = std::fs::symlink_metadata(&old) else { return Ok(()) };
    let ours = metadata.is_dir()
        && walkdir::WalkDir::new(&old)
            .follow_links(false)
            .into_iter()
            .all(|entry| entry.is_ok_and(|entry| entry.path_is_symlink() || entry.file_type().is_dir()));
    let owned = crate::home::projection_record::read_record(runtime)
        .is_some_and(|record| record.files.iter().any(|file| file == "projects"));
    if !ours || owned {
        return Ok(());
    }
    std::fs::remove_dir_all(&old).map_err(|error| {
        HostError::environment(&old, format!("cannot remove `{}`: {}", old.display(), error_kind(&error)))
    })
}

/// A location that names a folder below the projects root (no `..`, not absolute).
fn plain_location(location: &str) -> bool {
    !location.is_empty()
        && !location.starts_with('/')
        && location.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

/// Every link under `root` and where it points; folders are walked, links not followed.
fn current_links(root: &Path) -> BTreeSet<(PathBuf, PathBuf)> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.path_is_symlink())
        .filter_map(|entry| Some((entry.path().to_path_buf(), std::fs::read_link(entry.path()).ok()?)))
        .collect()
}

fn rebuild(root: &Path, wanted: &BTreeSet<(PathBuf, PathBuf)>) -> Result<(), HostError> {
    let failed = |path: &Path, error: std::io::Error| {
        HostError::environment(path, format!("cannot prepare `{}`: {}", path.display(), error_kind(&error)))
    };
    if std::fs::symlink_metadata(root).is_ok() {
        let foreign = walkdir::WalkDir::new(root)
            .follow_links(false)
            .into_iter()
            .filter_map(Result::ok)
            .find(|entry| !entry.path_is_symlink() && !entry.file_type().is_dir());
        if let Some(entry) = foreign {
            return Err(HostError::invalid(
                entry.path(),
                format!("`{}` is not a link acompose made; move it out of the runtime home", entry.path().display()),
            ));
        }
        std::fs::remove_dir_all(root).map_err(|error| failed(root, error))?;
    }
    std::fs::create_dir_all(root).map_err(|error| failed(root, error))?;
    for (link, target) in wanted {
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent).map_err(|error| failed(parent, error))?;
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(target, link).map_err(|error| failed(link, error))?;
    }
    Ok(())
}

/// The runtime homes `gc` removes: those of roles `roles` does not name, and those left
/// by the earlier naming (`<harness>-<role>-<bundle id>`). The bundles folder stays.
pub fn unused(home: &Home, roles: &BTreeSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(home.runtime()) else {
        return Vec::new();
    };
    let mut unused: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let (harness, role) = name.split_once('-')?;
            harness_layout::layout(harness)?;
            let old_naming = role.rsplit_once('-').is_some_and(|(_, id)| is_bundle_id(id));
            (old_naming || !roles.contains(role)).then(|| entry.path())
        })
        .collect();
    unused.sort();
    unused
}

fn is_bundle_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// What a harness would read besides the runtime home, from the working folder up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InSight {
    /// Projections of another role: the folder, its role and layouts.
    pub foreign: Vec<(PathBuf, String, String)>,
    /// Other skills in the folders the harness reads (not a projection of this role).
    pub other_skills: Vec<PathBuf>,
}

/// The largest number of skill entries listed per folder.
const SIGHT_LIMIT: usize = 1000;

/// Looks from `cwd` up to its git work tree's root (or `cwd` alone outside one) at the
/// folders `layout` reads at repository scope: projection records of another role, and
/// skills no projection of `role` owns (in `cwd` alone for a harness that reads skills
/// only where it starts, `acompose_engine::skill_sight`).
pub fn in_sight(cwd: &Path, layout: &Layout, role: &str) -> InSight {
    let folders: Vec<&Path> = match cwd.ancestors().position(|folder| folder.join(".git").exists()) {
        Some(root) => cwd.ancestors().take(root + 1).collect(),
        None => vec![cwd],
    };
    let places = layout.places(harness_layout::Scope::Repository);
    let mut sight = InSight::default();
    for folder in folders {
        let record = crate::home::projection_record::read_record(folder);
        if let Some(record) = &record
            && record.details.role != role
        {
            let layouts = record.details.layout.split(LAYOUT_SEPARATOR).collect::<Vec<_>>().join("+");
            sight.foreign.push((folder.to_path_buf(), record.details.role.clone(), layouts));
            continue;
        }
        let owned: BTreeSet<String> = record.map(|record| record.files.into_iter().collect()).unwrap_or_default();
        if folder != cwd && acompose_engine::skill_sight::skill_reading(layout.harness).start_folder_only {
            continue;
        }
        for skills in std::iter::once(places.skills).chain(places.also_reads.iter().copied()) {
            let Ok(entries) = std::fs::read_dir(folder.join(skills)) else { continue };
            for entry in entries.filter_map(Result::ok).take(SIGHT_LIMIT) {
                let relative = format!("{skills}/{}", entry.file_name().to_string_lossy());
                if !owned.contains(&relative) && entry.path().join("SKILL.md").exists() {
                    sight.other_skills.push(entry.path());
                }
            }
        }
    }
    sight
}

/// The harness MCP file of a runtime home: the user's own file with exactly the role's
/// servers under its key, every other key kept. The runtime home owns it because no
/// harness's own listing (`claude mcp list`, `qwen mcp list`, `kilo mcp list`) takes a
/// per-run server option; what the harness writes to its other keys goes back to the
/// user's file ([`carry_back`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpFile {
    pub path: &'static str,
    pub bytes: Vec<u8>,
    /// The user's servers left out.
    pub hidden: Vec<String>,
    /// The user's own file (there or not), where the harness's writes go back to.
    pub source: PathBuf,
    /// The key holding the servers.
    pub key: &'static str,
}

/// The MCP file a launch writes instead of linking the user's (taken out of `links`):
/// none when the harness reads no MCP file, or when neither the role nor the user's file
/// has a server (the link then stays). The user's file is read bounded; one that cannot
/// be read as its harness reads it is refused when the role has servers, naming its
/// path, and stays linked when it has none.
pub fn mcp_file(
    layout: &Layout,
    servers: &[acompose_engine::mcp::McpServer],
    user: &UserPlaces<'_>,
    links: &mut Vec<(String, PathBuf)>,
) -> Result<Option<McpFile>, HostError> {
    use acompose_engine::mcp::harness_config;
    let Some(places) = layout.mcp.as_ref() else { return Ok(None) };
    let path = places.launch;
    let source = user_path(layout, user, path);
    let existing = read_bounded(&source)?;
    let shown = source.display().to_string();
    let user_servers =
        if existing.is_empty() { Ok(Vec::new()) } else { harness_config::configured(path, &existing, places.key) };
    let user_servers = match user_servers {
        Ok(names) => names,
        // A role without servers leaves a file the harness reads its own way linked.
        Err(_) if servers.is_empty() => return Ok(None),
        Err(problem) => return Err(HostError::invalid(&source, problem.message(&shown, places.key))),
    };
    if servers.is_empty() && user_servers.is_empty() {
        return Ok(None);
    }
    let (bytes, hidden) = harness_config::exactly(path, &existing, places, servers)
        .map_err(|problem| HostError::invalid(&source, problem.message(&shown, places.key)))?;
    links.retain(|(runtime, _)| runtime != path);
    Ok(Some(McpFile { path, bytes, hidden, source, key: places.key }))
}

/// The record of a runtime home's launch copy, beside its projection record.
const COPY_RECORD: &str = ".agent-compose/launch-copy.json";
const COPY_FORMAT: &str = "acompose.launch-copy.v1";

/// What a launch copy held when it was written: digests of its keys, no value.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct CopyRecord {
    format: String,
    path: String,
    source: PathBuf,
    key: String,
    written: std::collections::BTreeMap<String, String>,
}

/// Notes what the runtime home's launch copy holds now (after a launch wrote it), or
/// forgets the note when the launch wrote none.
pub fn remember_copy(runtime: &Path, file: Option<&McpFile>) -> Result<(), HostError> {
    let record_path = runtime.join(COPY_RECORD);
    let Some(file) = file else {
        return match std::fs::remove_file(&record_path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(HostError::environment(
                &record_path,
                format!("cannot remove `{}`: {}", record_path.display(), error_kind(&error)),
            )),
            _ => Ok(()),
        };
    };
    let written = acompose_engine::mcp::harness_config::key_digests(file.path, &file.bytes, file.key)
        .map_err(|problem| HostError::invalid(&file.source, problem.message(file.path, file.key)))?;
    let record = CopyRecord {
        format: COPY_FORMAT.to_owned(),
        path: file.path.to_owned(),
        source: file.source.clone(),
        key: file.key.to_owned(),
        written,
    };
    write_copy_record(runtime, &record)
}

fn write_copy_record(runtime: &Path, record: &CopyRecord) -> Result<(), HostError> {
    let record_path = runtime.join(COPY_RECORD);
    let mut bytes = serde_json::to_vec_pretty(record).unwrap_or_default();
    bytes.push(b'\n');
    if std::fs::read(&record_path).is_ok_and(|held| held == bytes) {
        return Ok(());
    }
    let folder = record_path.parent().unwrap_or(runtime);
    crate::home::atomic::replace(folder, "launch-copy.json", &bytes).map_err(|error| {
        HostError::environment(&record_path, format!("cannot write `{}`: {error}", record_path.display()))
    })
}

/// Carries what the harness wrote to its launch copy in `runtime` since the copy was
/// written (a folder it trusted, its counters, its migrations) back into the user's own
/// file: each top-level key it changed, never the servers' key. Returns the user's file
/// when it changed. A runtime home without a copy, or whose copy is unchanged, is left
/// alone.
pub fn carry_back(runtime: &Path) -> Result<Option<PathBuf>, HostError> {
    use acompose_engine::mcp::harness_config;
    let Some(mut record) = read_copy_record(runtime) else { return Ok(None) };
    let copy = read_bounded(&runtime.join(&record.path))?;
    if copy.is_empty() {
        return Ok(None);
    }
    let source = record.source.canonicalize().unwrap_or_else(|_| record.source.clone());
    let user = read_bounded(&source)?;
    let shown = source.display().to_string();
    let merged = harness_config::carried_back(&record.path, &user, &copy, &record.written, &record.key)
        .map_err(|problem| HostError::invalid(&source, problem.message(&shown, &record.key)))?;
    let Some(merged) = merged else { return Ok(None) };
    let (Some(folder), Some(name)) = (source.parent(), source.file_name().and_then(|name| name.to_str())) else {
        return Ok(None);
    };
    std::fs::create_dir_all(folder).map_err(|error| {
        HostError::environment(folder, format!("cannot create `{}`: {}", folder.display(), error_kind(&error)))
    })?;
    crate::home::atomic::replace(folder, name, &merged)
        .map_err(|error| HostError::environment(&source, format!("cannot write `{shown}`: {error}")))?;
    record.written = harness_config::key_digests(&record.path, &copy, &record.key)
        .map_err(|problem| HostError::invalid(&source, problem.message(&shown, &record.key)))?;
    write_copy_record(runtime, &record)?;
    Ok(Some(source))
}

/// [`carry_back`] for every runtime home of the acompose home; the failures, each
/// naming its file (the runtime homes after a failed one are still done).
pub fn carry_back_all(home: &Home) -> Vec<HostError> {
    let Ok(entries) = std::fs::read_dir(home.runtime()) else { return Vec::new() };
    let mut runtimes: Vec<PathBuf> = entries.filter_map(Result::ok).map(|entry| entry.path()).collect();
    runtimes.sort();
    runtimes
        .iter()
        .filter(|runtime| runtime.join(COPY_RECORD).is_file())
        .filter_map(|runtime| carry_back(runtime).err())
        .collect()
}

fn read_copy_record(runtime: &Path) -> Option<CopyRecord> {
    let path = runtime.join(COPY_RECORD);
    let metadata = std::fs::symlink_metadata(&path).ok()?;
    if !metadata.is_file() || metadata.len() > 64 * 1024 {
        return None;
    }
    let record: CopyRecord = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    (record.format == COPY_FORMAT && plain_location(&record.path)).then_some(record)
}

/// A user's harness configuration file, at most 4 MiB; nothing when it is not there.
fn read_bounded(path: &Path) -> Result<Vec<u8>, HostError> {
    const LIMIT: u64 = 4 * 1024 * 1024;
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() && metadata.len() <= LIMIT => std::fs::read(path).map_err(|error| {
            HostError::environment(
                path,
                format!("cannot read `{}`: {}", path.display(), crate::compose::load::error_kind(&error)),
            )
        }),
        Ok(metadata) if metadata.is_file() => Err(HostError::invalid(
            path,
            format!("`{}` is larger than 4 MiB; a launch does not read it", path.display()),
        )),
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "x").expect("write");
    }

    fn paths(links: &[(String, PathBuf)]) -> Vec<&str> {
        links.iter().map(|(path, _)| path.as_str()).collect()
    }

    #[test]
    fn a_moved_home_mirrors_every_entry_but_the_reserved_paths_and_the_acompose_home() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = temporary.path();
        for file in
            [".ssh/config", ".gitconfig", ".agents/skills/mine/SKILL.md", ".agents/notes.md", ".codex/auth.json"]
        {
            touch(&home.join(file));
        }
        touch(&home.join(".codex/skills/mine/SKILL.md"));
        touch(&home.join(".agent-compose/runtime/codex-platform/x"));
        touch(&home.join("work/acompose/runtime/x"));
        touch(&home.join("work/notes.md"));
        let codex = harness_layout::layout("codex").expect("codex");
        let user = UserPlaces {
            home,
            config_folder: None,
            xdg_config: None,
            acompose_home: Some(&home.join("work/acompose")),
        };
        let links = carried_links(codex, &user);
        assert_eq!(
            paths(&links),
            [".agents/notes.md", ".codex/auth.json", ".gitconfig", ".ssh", "work/notes.md"],
            "the skills folders, the bookkeeping folder and the acompose home are not linked"
        );
        assert!(links.iter().all(|(path, target)| *target == home.join(path)));
    }

    #[test]
    fn a_kept_home_mirrors_the_configuration_folder_and_links_a_renamed_file() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = temporary.path().join("home");
        let moved = temporary.path().join("elsewhere");
        for file in [".claude/commands/ship.md", ".claude/skills/a/SKILL.md", ".claude/plugins/p.json", ".claude.json"]
        {
            touch(&home.join(file));
        }
        touch(&moved.join("settings.local.json"));
        touch(&moved.join(".claude.json"));
        let claude = harness_layout::layout("claude").expect("claude");
        let user = UserPlaces { home: &home, config_folder: None, xdg_config: None, acompose_home: None };
        let links = carried_links(claude, &user);
        assert_eq!(paths(&links), [".claude/.claude.json", ".claude/commands"]);
        assert_eq!(links[0].1, home.join(".claude.json"));
        // With CLAUDE_CONFIG_DIR set by the user, its folder is the one mirrored.
        let user = UserPlaces { home: &home, config_folder: Some(&moved), xdg_config: None, acompose_home: None };
        let links = carried_links(claude, &user);
        assert_eq!(paths(&links), [".claude/.claude.json", ".claude/settings.local.json"]);
        assert!(links.iter().all(|(_, target)| target.starts_with(&moved)), "{links:?}");
    }
}
