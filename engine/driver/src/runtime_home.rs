//! An assigned launch's runtime home, `<home>/runtime/<harness>-<role>/`: one per role
//! and harness, kept across bundles so the harness's own state (history, sessions,
//! `--continue`) survives every edit. What it carries from the real home (links only),
//! the isolated projects root it offers, what `gc` removes, and what a harness would
//! still see of other roles from the working folder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acompose_engine::harness_layout::{self, Layout};
use acompose_engine::projection::LAYOUT_SEPARATOR;

use crate::error::HostError;
use crate::load::error_kind;

/// The folder of runtime homes inside home.
pub const RUNTIME_DIR: &str = "runtime";
/// Where launches keep the bundles they compose for a tier other than the home's own
/// (bare convergence never prunes it).
pub const RUNTIME_BUNDLES_DIR: &str = "runtime/bundles";
/// The isolated projects root inside a runtime home.
pub const PROJECTS_DIR: &str = "projects";

/// The runtime home's folder name for `role` under `layout`.
pub fn name(layout: &Layout, role: &str) -> String {
    format!("{}-{role}", layout.harness)
}

/// Files of the real home every runtime home links, whatever the harness (the user's git
/// identity, so commits made in a launch are theirs).
const COMMON: &[&str] = &[".gitconfig", ".config/git/config"];

/// The user's files the runtime home links for `layout`: runtime-relative path → the real
/// file, for each one that exists. `real_home` is the user's home; `config_folder` the
/// value of the layout's configuration variable in the user's environment, if set.
pub fn carried_links(layout: &Layout, real_home: &Path, config_folder: Option<&Path>) -> Vec<(String, PathBuf)> {
    let harness = layout.carried.iter().map(|carried| {
        let real = match (config_folder, carried.config) {
            (Some(folder), Some(relative)) => folder.join(relative),
            _ => real_home.join(carried.home),
        };
        (carried.runtime.to_owned(), real)
    });
    let common = COMMON.iter().map(|relative| ((*relative).to_owned(), real_home.join(relative)));
    harness.chain(common).filter(|(_, real)| std::fs::symlink_metadata(real).is_ok()).collect()
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
pub fn unused(home: &Path, roles: &BTreeSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(home.join(RUNTIME_DIR)) else {
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
        let record = crate::projection_record::read_record(folder);
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

/// The harness MCP file of a runtime home: the user's own file (the carried link's
/// target) with exactly the role's servers under its key, every other key kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpFile {
    pub path: &'static str,
    pub bytes: Vec<u8>,
    /// The user's servers left out.
    pub hidden: Vec<String>,
}

/// The MCP file a launch writes instead of linking the user's (taken out of `links`):
/// none when the harness reads no MCP file, or when neither the role nor the user's file
/// has a server (the link then stays). The user's file is read bounded; one that cannot
/// be read as its harness reads it is refused when the role has servers, naming its
/// path, and stays linked when it has none.
pub fn mcp_file(
    layout: &Layout,
    servers: &[acompose_engine::mcp::McpServer],
    links: &mut Vec<(String, PathBuf)>,
) -> Result<Option<McpFile>, HostError> {
    use acompose_engine::mcp::harness_config;
    let Some(places) = layout.mcp.as_ref() else { return Ok(None) };
    let path = places.launch;
    let position = links.iter().position(|(runtime, _)| runtime == path);
    let user = position.map(|index| links[index].1.clone());
    let existing = match &user {
        Some(file) => read_bounded(file)?,
        None => Vec::new(),
    };
    let user_servers =
        if existing.is_empty() { Ok(Vec::new()) } else { harness_config::configured(path, &existing, places.key) };
    let user_servers = match user_servers {
        Ok(names) => names,
        // A role without servers leaves a file the harness reads its own way linked.
        Err(_) if servers.is_empty() => return Ok(None),
        Err(problem) => {
            let shown = user.as_deref().unwrap_or(Path::new(path)).display().to_string();
            return Err(HostError::invalid(user.clone().unwrap_or_default(), problem.message(&shown, places.key)));
        }
    };
    if servers.is_empty() && user_servers.is_empty() {
        return Ok(None);
    }
    let (bytes, hidden) = harness_config::exactly(path, &existing, places, servers).map_err(|problem| {
        let shown = user.as_deref().unwrap_or(Path::new(path)).display().to_string();
        HostError::invalid(user.clone().unwrap_or_default(), problem.message(&shown, places.key))
    })?;
    if let Some(index) = position {
        links.remove(index);
    }
    Ok(Some(McpFile { path, bytes, hidden }))
}

/// A user's harness configuration file, at most 4 MiB; nothing when it is not there.
fn read_bounded(path: &Path) -> Result<Vec<u8>, HostError> {
    const LIMIT: u64 = 4 * 1024 * 1024;
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() && metadata.len() <= LIMIT => std::fs::read(path).map_err(|error| {
            HostError::environment(
                path,
                format!("cannot read `{}`: {}", path.display(), crate::load::error_kind(&error)),
            )
        }),
        Ok(metadata) if metadata.is_file() => Err(HostError::invalid(
            path,
            format!("`{}` is larger than 4 MiB; a launch does not read it", path.display()),
        )),
        _ => Ok(Vec::new()),
    }
}
