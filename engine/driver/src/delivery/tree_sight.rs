//! What a projection shares its git work tree with: another role's projection anywhere
//! above or below the target (which `project` refuses unless told to allow it), skills
//! named like the role's in the repository skills folders a harness reads there (which
//! `project` and `launch` name, with what the harness does about them), and where a
//! harness that reads skills only in the folder it starts in sees none of the role's
//! (`project`, `whoami`, `doctor`). Reads projection records and lists folders, with the
//! walk below a target bounded; writes nothing. What each harness does is the engine's
//! (`skill_sight`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acompose_engine::diagnostic::sanitize;
use acompose_engine::harness_layout::{self, Layout, Scope};
use acompose_engine::projection::{Details, LAYOUT_SEPARATOR};
use acompose_engine::skill_sight::{self, RoleSkillsAt};

use crate::delivery::projection::{Found, Report, Request};
use crate::delivery::runtime_home::InSight;
use crate::error::HostError;
use crate::home::projection_record::read_record;
use crate::home::transaction::Hooks;

/// The most directory entries the walk below a target looks at.
pub const WALK_LIMIT: usize = 50_000;
/// The most skills listed per skills folder above a target.
const FOLDER_LIMIT: usize = 1000;
/// Folders the walk below a target never enters: git's own, package managers' installs,
/// and projection records (an acompose home kept under a target holds runtime homes,
/// which are no repository's projections).
const NOT_ENTERED: &[&str] = &[".git", "node_modules", ".agent-compose"];
/// Files that mark a folder the walk does not enter: a cache (the Cache Directory
/// Tagging convention, which Cargo's `target` follows) or a Python virtual environment.
const NOT_ENTERED_MARKS: &[&str] = &["CACHEDIR.TAG", "pyvenv.cfg"];

/// Another role's projection in the work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub folder: PathBuf,
    pub role: String,
    /// Its layouts as its record names them (`claude+codex`).
    pub layouts: String,
}

/// A skill folder in a repository skills folder of the work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherSkill {
    /// The folder a harness starts in to read it (the one holding the skills folder).
    pub owner: PathBuf,
    /// The skills folder, relative to `owner` (`.agents/skills`).
    pub folder: &'static str,
    pub name: String,
    pub path: PathBuf,
}

/// What the work tree of a target holds besides the target's own projection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeSight {
    /// The work tree's root; `None` outside a git work tree (then nothing is looked at).
    pub root: Option<PathBuf>,
    pub foreign: Vec<Foreign>,
    pub other_skills: Vec<OtherSkill>,
    /// The walk below the target stopped at [`WALK_LIMIT`] entries.
    pub cut_short: bool,
}

/// The nearest folder at or above `folder` that holds `.git` (a folder, or the file of a
/// linked worktree or submodule).
pub fn work_tree_root(folder: &Path) -> Option<PathBuf> {
    folder.ancestors().find(|ancestor| ancestor.join(".git").exists()).map(Path::to_path_buf)
}

/// Every repository skills folder of the harness table, each once.
fn skills_folders() -> Vec<&'static str> {
    let mut folders: Vec<&'static str> = harness_layout::layouts()
        .iter()
        .flat_map(|layout| {
            std::iter::once(layout.repository.skills).chain(layout.repository.also_reads.iter().copied())
        })
        .collect();
    folders.sort_unstable();
    folders.dedup();
    folders
}

/// Looks at `target`'s git work tree: the folders above it up to the root, and below it
/// (at most [`WALK_LIMIT`] entries, never into a nested checkout or a folder of
/// [`NOT_ENTERED`]), for projections of a role other than `role` and for skills in the
/// repository skills folders harnesses read. The target's own folder is the projection's
/// business, not looked at here.
pub fn around(target: &Path, role: &str) -> TreeSight {
    let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let Some(root) = work_tree_root(&target) else { return TreeSight::default() };
    let folders = skills_folders();
    let mut sight = TreeSight { root: Some(root.clone()), ..TreeSight::default() };
    let above = target.ancestors().skip(1).take_while(|folder| folder.starts_with(&root));
    for folder in above {
        note_record(&mut sight, folder, role);
        for &relative in &folders {
            let Ok(entries) = std::fs::read_dir(folder.join(relative)) else { continue };
            let mut entries: Vec<_> =
                entries.filter_map(Result::ok).take(FOLDER_LIMIT).map(|entry| entry.path()).collect();
            entries.sort();
            for path in entries {
                note_skill(&mut sight, folder, relative, &path);
            }
        }
    }
    walk_below(&mut sight, &target, role, &folders);
    sight
}

fn note_record(sight: &mut TreeSight, folder: &Path, role: &str) {
    if let Some(record) = read_record(folder)
        && record.details.role != role
    {
        sight.foreign.push(Foreign {
            folder: folder.to_path_buf(),
            role: record.details.role.clone(),
            layouts: record.details.layout.clone(),
        });
    }
}

fn note_skill(sight: &mut TreeSight, owner: &Path, folder: &'static str, path: &Path) {
    if path.join("SKILL.md").is_file()
        && let Some(name) = path.file_name().and_then(|name| name.to_str())
    {
        sight.other_skills.push(OtherSkill {
            owner: owner.to_path_buf(),
            folder,
            name: name.to_owned(),
            path: path.to_path_buf(),
        });
    }
}

fn walk_below(sight: &mut TreeSight, target: &Path, role: &str, folders: &[&'static str]) {
    let mut walk = walkdir::WalkDir::new(target).follow_links(false).min_depth(1).sort_by_file_name().into_iter();
    let mut looked_at = 0usize;
    while let Some(entry) = walk.next() {
        looked_at += 1;
        if looked_at > WALK_LIMIT {
            sight.cut_short = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let Some(parent) = path.parent() else { continue };
        if entry.file_type().is_dir() {
            let name = entry.file_name().to_string_lossy();
            if name == ".agent-compose" && parent != target {
                note_record(sight, parent, role);
            }
            let marked = || NOT_ENTERED_MARKS.iter().any(|mark| path.join(mark).exists());
            if NOT_ENTERED.contains(&name.as_ref()) || path.join(".git").exists() || marked() {
                walk.skip_current_dir();
                continue;
            }
        }
        for &folder in folders {
            if let Some(owner) = owner_of(parent, folder)
                && owner != target
            {
                note_skill(sight, &owner, folder, path);
            }
        }
    }
}

/// The folder holding `skills_folder` when `parent` is that skills folder.
fn owner_of(parent: &Path, skills_folder: &str) -> Option<PathBuf> {
    let depth = Path::new(skills_folder).components().count();
    parent.ends_with(skills_folder).then(|| parent.ancestors().nth(depth).map(Path::to_path_buf)).flatten()
}

/// Whether `project` refuses another role's projection in the target's work tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForeignContext {
    Refuse,
    /// `--allow-foreign-context`: project anyway, and say so.
    Allow,
}

/// A projection made by `project`, with what its work tree holds beside it.
#[derive(Debug, Clone)]
pub struct TreeReport {
    pub report: Report,
    /// Other roles' projections let through with [`ForeignContext::Allow`].
    pub foreign: Vec<Foreign>,
    /// One warning per skill of the tree that a harness of the projection shows beside,
    /// or instead of, a role skill of its name.
    pub same_name: Vec<String>,
    /// One note per harness of the projection that sees its skills only when started in
    /// the target itself.
    pub start_folder: Vec<String>,
    /// The walk below the target stopped at [`WALK_LIMIT`] entries.
    pub cut_short: bool,
}

/// `project`: refuses when another role's projection is in the target's work tree (the
/// folders above it to the root and below it), unless `context` allows it; then projects
/// as [`crate::delivery::projection::project`] does and says what else the tree shows its
/// harnesses.
pub fn project_in_tree(
    request: &Request<'_>,
    context: ForeignContext,
    hooks: &mut dyn Hooks,
) -> Result<TreeReport, HostError> {
    let sight = match bundle_role(request.bundle) {
        Some(role) => around(request.target, &role),
        // The projection's own verification says what is wrong with the bundle.
        None => TreeSight::default(),
    };
    if !sight.foreign.is_empty() && context == ForeignContext::Refuse {
        return Err(HostError::invalid(request.target, refusal(request.target, &sight.foreign)));
    }
    let report = crate::delivery::projection::project(request, hooks)?;
    let same_name = same_name_warnings(&sight, &report.target, &report.details);
    let start_folder = if report.details.scope == Scope::Repository.name() {
        let target = report.target.canonicalize().unwrap_or_else(|_| report.target.clone());
        let target = target.display().to_string();
        skill_sight::start_folder_only(&report.details.layout)
            .into_iter()
            .map(|harness| skill_sight::start_folder_note(harness, &target))
            .collect()
    } else {
        Vec::new()
    };
    Ok(TreeReport { report, foreign: sight.foreign, same_name, start_folder, cut_short: sight.cut_short })
}

/// The role of the bundle at `bundle`, from its manifest; `None` when it cannot be read.
fn bundle_role(bundle: &Path) -> Option<String> {
    const MANIFEST_LIMIT: u64 = 256 << 20;
    #[derive(serde::Deserialize)]
    struct Role {
        slug: String,
    }
    #[derive(serde::Deserialize)]
    struct Manifest {
        role: Role,
    }
    let path = bundle.join("manifest.json");
    // A manifest kept as parts is within the manifest's own limit, far below this one.
    let bytes = match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_file() && metadata.len() <= MANIFEST_LIMIT => std::fs::read(&path).ok()?,
        Ok(_) => return None,
        Err(_) => crate::compose::parted::manifest_bytes(bundle).ok()?,
    };
    serde_json::from_slice::<Manifest>(&bytes).ok().map(|manifest| manifest.role.slug)
}

/// One line per other role's projection in the work tree, for a refusal or a warning.
pub fn named(foreign: &[Foreign]) -> Vec<String> {
    foreign
        .iter()
        .map(|other| {
            format!(
                "`{}` holds a projection of `{}` ({})",
                sanitize(&other.folder.display().to_string()),
                sanitize(&other.role),
                sanitize(&other.layouts)
            )
        })
        .collect()
}

fn refusal(target: &Path, foreign: &[Foreign]) -> String {
    let unproject = match foreign {
        [only] => format!("`acompose unproject --target {}`", sanitize(&only.folder.display().to_string())),
        _ => "`acompose unproject --target FOLDER` each".to_owned(),
    };
    format!(
        "another role's projection is in the git work tree of `{}`: {}; one work tree holds one role, because a harness started in a folder also reads the skills and instructions of the folders above it, so it would be given both roles: {unproject}, project into another checkout, or pass `--allow-foreign-context`",
        sanitize(&target.display().to_string()),
        named(foreign).join("; ")
    )
}

/// The real paths of the role's skill `name` as the projection in `target` shows it.
fn role_skill_paths(target: &Path, name: &str) -> BTreeSet<PathBuf> {
    skills_folders().iter().filter_map(|folder| target.join(folder).join(name).canonicalize().ok()).collect()
}

/// Whether `other` is one of the role's own skill folders by another path (a link into
/// the same bundle folder): harnesses that compare real paths see it once.
fn same_folder(other: &Path, role: &BTreeSet<PathBuf>) -> bool {
    other.canonicalize().is_ok_and(|real| role.contains(&real))
}

/// The warnings for the skills of `sight` named like a role skill of the projection
/// `details` in `target`, for each harness of it that reads both.
pub fn same_name_warnings(sight: &TreeSight, target: &Path, details: &Details) -> Vec<String> {
    let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let role_at = if details.scope == Scope::Home.name() { RoleSkillsAt::User } else { RoleSkillsAt::Repository };
    let skills: BTreeSet<&str> = details.skills.iter().map(String::as_str).collect();
    let mut warnings = Vec::new();
    for layout in details.layout.split(LAYOUT_SEPARATOR).filter_map(harness_layout::layout) {
        // Started anywhere but the target, it does not see the role's skills at all:
        // the start-folder note says so.
        if role_at == RoleSkillsAt::Repository && skill_sight::skill_reading(layout.harness).start_folder_only {
            continue;
        }
        let reads = reads(layout, Scope::Repository);
        for other in sight.other_skills.iter().filter(|other| reads.contains(&other.folder)) {
            if !skills.contains(other.name.as_str())
                || same_folder(&other.path, &role_skill_paths(&target, &other.name))
            {
                continue;
            }
            let started = if other.owner.starts_with(&target) { &other.owner } else { &target };
            let started = format!("started in `{}` or below", sanitize(&started.display().to_string()));
            let shown = other.path.display().to_string();
            if let Some(warning) =
                skill_sight::same_name_warning(layout.harness, role_at, &other.name, &shown, &started)
            {
                warnings.push(warning);
            }
        }
    }
    warnings.dedup();
    warnings
}

/// The skills folders `layout` reads at `scope`.
fn reads(layout: &Layout, scope: Scope) -> Vec<&'static str> {
    let places = layout.places(scope);
    std::iter::once(places.skills).chain(places.also_reads.iter().copied()).collect()
}

/// The warnings for the skills a launch's harness reads from its working folder
/// (`sight`, [`crate::delivery::runtime_home::in_sight`]) named like a role skill of the runtime
/// home `runtime`: the role's skills are the harness's user skills there.
pub fn launch_same_name_warnings(sight: &InSight, runtime: &Path, layout: &Layout) -> Vec<String> {
    let Some(record) = read_record(runtime) else { return Vec::new() };
    let skills: BTreeSet<&str> = record.details.skills.iter().map(String::as_str).collect();
    let home_skills = layout.places(Scope::Home).skills;
    let mut warnings = Vec::new();
    for path in &sight.other_skills {
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else { continue };
        let role: BTreeSet<PathBuf> = runtime.join(home_skills).join(name).canonicalize().into_iter().collect();
        if !skills.contains(name) || same_folder(path, &role) {
            continue;
        }
        let shown = path.display().to_string();
        if let Some(warning) =
            skill_sight::same_name_warning(layout.harness, RoleSkillsAt::User, name, &shown, "launched here")
        {
            warnings.push(warning);
        }
    }
    warnings
}

/// The notes for a projection `found` at or above `start` when `start` is below it: each
/// harness of it that reads a repository's skills only where it starts sees none there.
pub fn start_folder_notes(found: &Found, start: &Path) -> Vec<String> {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    if found.details.scope != Scope::Repository.name() || start == found.target {
        return Vec::new();
    }
    let target = found.target.display().to_string();
    skill_sight::start_folder_only(&found.details.layout)
        .into_iter()
        .map(|harness| skill_sight::start_folder_note(harness, &target))
        .collect()
}
