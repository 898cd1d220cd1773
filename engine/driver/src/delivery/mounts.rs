//! Host delivery after bare convergence: links the native roster document into each
//! configured harness's user instructions file (`load_points`) and the roster skills into
//! its user skills folder (`skill_load_points`), owned through `<home>/skill-mounts.json`.
//! A path that holds anything but a link we made is the user's and is never touched (it
//! wins and is reported); a link we made and no longer want is removed only while it
//! still points where we made it point. Without either key no harness folder is touched,
//! except to remove the links a previous configuration made.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::harness_layout;
use acompose_engine::host_config::{CONFIG_FILE, Destination, HostConfig, KeyChange, LoadPoint, enable_harness};

use crate::compose::load::error_kind;
use crate::error::HostError;
use crate::home::Home;

pub use crate::home::MOUNTS_FILE;
const MOUNTS_FORMAT: &str = "acompose.skill-mounts.v1";
/// The largest record read.
const RECORD_LIMIT: u64 = 4 << 20;

/// What host delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MountReport {
    /// Whether `load_points` or `skill_load_points` is set.
    pub configured: bool,
    pub created: Vec<PathBuf>,
    pub unchanged: usize,
    pub removed: Vec<PathBuf>,
    /// Paths we would link that hold the user's own file, folder or link, or have a file
    /// of the user's on the way: left alone.
    pub kept: Vec<Kept>,
}

/// A path host delivery leaves to the user, and what it would have delivered there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub path: PathBuf,
    /// The harness whose load point it is.
    pub harness: String,
    /// The roster's document (`load_points`), else one of its skills
    /// (`skill_load_points`).
    pub instructions: bool,
}

impl Kept {
    fn of(mount: Mount) -> Self {
        let instructions = mount.target.file_name().is_some_and(|name| name == "ROSTER.md");
        Kept { path: mount.path, harness: mount.harness, instructions }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Mount {
    harness: String,
    path: PathBuf,
    target: PathBuf,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    format: String,
    links: Vec<Mount>,
}

fn read_record(home: &Home) -> Result<Vec<Mount>, HostError> {
    let path = home.mounts_record();
    let invalid = || {
        HostError::invalid(
            &path,
            format!(
                "`{}` is not a valid delivery record; remove it (links it names stay) and converge again",
                path.display()
            ),
        )
    };
    match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(HostError::environment(
                &path,
                format!("cannot read `{}`: {}", path.display(), error_kind(&error)),
            ));
        }
        Ok(metadata) if !metadata.is_file() || metadata.len() > RECORD_LIMIT => return Err(invalid()),
        Ok(_) => {}
    }
    let bytes = std::fs::read(&path).map_err(|error| {
        HostError::environment(&path, format!("cannot read `{}`: {}", path.display(), error_kind(&error)))
    })?;
    let record: Record = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if record.format != MOUNTS_FORMAT || record.links.iter().any(|mount| !mount.path.is_absolute()) {
        return Err(invalid());
    }
    Ok(record.links)
}

/// One link the delivery record owns: the harness, the link, and what it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedLink {
    pub harness: String,
    pub path: PathBuf,
    pub target: PathBuf,
}

/// The links `<home>/skill-mounts.json` records (for `acompose doctor`).
pub fn recorded_links(home: &Home) -> Result<Vec<RecordedLink>, HostError> {
    Ok(read_record(home)?
        .into_iter()
        .map(|mount| RecordedLink { harness: mount.harness, path: mount.path, target: mount.target })
        .collect())
}

/// `~/…` against the user's home folder; an absolute path as it is.
fn expand(text: &str, user_home: Option<&Path>) -> Option<PathBuf> {
    match text.strip_prefix("~/") {
        Some(rest) => user_home.map(|home| home.join(rest)),
        None => Some(PathBuf::from(text)),
    }
}

/// The configured destinations: harness → path, opted-out harnesses left out.
fn destinations(
    points: Option<&Vec<LoadPoint>>,
    default: impl Fn(&harness_layout::Layout) -> &'static str,
    user_home: Option<&Path>,
) -> Vec<(String, PathBuf)> {
    points
        .into_iter()
        .flatten()
        .filter_map(|point| {
            let row = harness_layout::layout(&point.harness)?;
            let path = match &point.destination {
                Destination::Off => return None,
                // A harness with no file of this kind at home scope gets none.
                Destination::Default if default(row).is_empty() => return None,
                Destination::Default => user_home?.join(default(row)),
                Destination::Path(text) => expand(text, user_home)?,
            };
            Some((point.harness.clone(), path))
        })
        .collect()
}

/// The folders the roster's skills are linked into. Harnesses read each other's home
/// folders (Gemini CLI reads `~/.agents/skills` beside `~/.gemini/skills`), so the
/// harnesses whose load point is their own default share the folders
/// [`harness_layout::skill_folders`] chooses for them together, and none sees a skill
/// twice; a load point the user moved elsewhere is used as written.
fn skill_folders(points: Vec<(String, PathBuf)>, user_home: Option<&Path>) -> Vec<(String, PathBuf)> {
    let Some(user_home) = user_home else {
        return points;
    };
    let at_default = |harness: &str, path: &Path| {
        harness_layout::layout(harness).is_some_and(|row| path == user_home.join(row.home.skills))
    };
    let (defaults, mut folders): (Vec<_>, Vec<_>) =
        points.into_iter().partition(|(harness, path)| at_default(harness, path));
    let layouts: Vec<&harness_layout::Layout> =
        defaults.iter().filter_map(|(harness, _)| harness_layout::layout(harness)).collect();
    for folder in harness_layout::skill_folders(&layouts, harness_layout::Scope::Home) {
        let owner = layouts.iter().find(|row| row.home.skills == folder).map_or("", |row| row.harness);
        folders.push((owner.to_owned(), user_home.join(folder)));
    }
    folders
}

/// The roster skill folders of the artifact, by id.
fn artifact_skills(artifact: &Path) -> Vec<String> {
    let mut skills: Vec<String> = std::fs::read_dir(artifact.join(".agents/skills"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    skills.sort();
    skills
}

/// Every link the configuration wants: path → mount.
fn desired(home: &Home, config: &HostConfig, user_home: Option<&Path>) -> BTreeMap<PathBuf, Mount> {
    let artifact = std::path::absolute(home.artifact()).unwrap_or_else(|_| home.artifact());
    let mut wanted = BTreeMap::new();
    for (harness, path) in destinations(config.load_points.as_ref(), |row| row.home.instructions, user_home) {
        let target = artifact.join("ROSTER.md");
        wanted.insert(path.clone(), Mount { harness, path, target });
    }
    let skills = artifact_skills(&artifact);
    let points = destinations(config.skill_load_points.as_ref(), |row| row.home.skills, user_home);
    for (harness, folder) in skill_folders(points, user_home) {
        for skill in &skills {
            let path = folder.join(skill);
            let target = artifact.join(".agents/skills").join(skill);
            wanted.insert(path.clone(), Mount { harness: harness.clone(), path, target });
        }
    }
    wanted
}

fn link_target(path: &Path) -> Option<PathBuf> {
    std::fs::symlink_metadata(path).ok().filter(|metadata| metadata.file_type().is_symlink())?;
    std::fs::read_link(path).ok()
}

fn make_link(mount: &Mount) -> Result<(), HostError> {
    let failed = |error: std::io::Error| {
        HostError::environment(&mount.path, format!("cannot link `{}`: {}", mount.path.display(), error_kind(&error)))
    };
    if let Some(parent) = mount.path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(&mount.target, &mount.path);
    #[cfg(not(unix))]
    let made = Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "links need a Unix system"));
    made.map_err(failed)
}

/// What one run will do, decided before any link is touched.
#[derive(Default)]
struct Plan {
    stale: Vec<Mount>,
    create: Vec<Mount>,
    unchanged: Vec<Mount>,
    kept: Vec<Kept>,
}

fn plan(previous: &[Mount], wanted: BTreeMap<PathBuf, Mount>) -> Result<Plan, HostError> {
    let mut plan = Plan::default();
    for mount in previous.iter().filter(|mount| !wanted.contains_key(&mount.path)) {
        if link_target(&mount.path).as_deref() == Some(mount.target.as_path()) {
            plan.stale.push(mount.clone());
        }
    }
    for mount in wanted.into_values() {
        match std::fs::symlink_metadata(&mount.path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => plan.create.push(mount),
            // A file of the user's where a folder on the way would be.
            Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => plan.kept.push(Kept::of(mount)),
            Err(error) => {
                let message = format!("cannot look at `{}`: {}", mount.path.display(), error_kind(&error));
                return Err(HostError::environment(&mount.path, message));
            }
            Ok(_) if link_target(&mount.path).as_deref() == Some(mount.target.as_path()) => plan.unchanged.push(mount),
            Ok(_) => plan.kept.push(Kept::of(mount)),
        }
    }
    Ok(plan)
}

/// Brings the harness folders in line with the configuration and records our links. The
/// record is written first with every link this run may leave behind (stale ones not yet
/// removed, new ones about to be made), so a run that stops part-way leaves no link the
/// next run would not recognise as ours.
pub fn deliver(home: &Home, config: &HostConfig) -> Result<MountReport, HostError> {
    let user_home = std::env::home_dir().filter(|path| !path.as_os_str().is_empty());
    let previous = read_record(home)?;
    let plan = plan(&previous, desired(home, config, user_home.as_deref()))?;
    let final_record: Vec<Mount> = plan.unchanged.iter().chain(&plan.create).cloned().collect();
    let interim: Vec<Mount> = final_record.iter().chain(&plan.stale).cloned().collect();
    if !plan.create.is_empty() {
        write_record(home, &previous, interim.clone())?;
    }
    let mut report = MountReport {
        configured: config.load_points.is_some() || config.skill_load_points.is_some(),
        unchanged: plan.unchanged.len(),
        kept: plan.kept,
        ..MountReport::default()
    };
    for mount in &plan.stale {
        std::fs::remove_file(&mount.path).map_err(|error| {
            HostError::environment(
                &mount.path,
                format!("cannot remove `{}`: {}", mount.path.display(), error_kind(&error)),
            )
        })?;
        report.removed.push(mount.path.clone());
    }
    for mount in &plan.create {
        make_link(mount)?;
        report.created.push(mount.path.clone());
    }
    let written = if plan.create.is_empty() { previous } else { interim };
    write_record(home, &written, final_record)?;
    Ok(report)
}

fn write_record(home: &Home, previous: &[Mount], mut owned: Vec<Mount>) -> Result<(), HostError> {
    owned.sort();
    let path = home.mounts_record();
    if owned.is_empty() {
        if previous.is_empty() {
            return Ok(());
        }
        return std::fs::remove_file(&path).or_else(|error| match error.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(HostError::environment(
                &path,
                format!("cannot remove `{}`: {}", path.display(), error_kind(&error)),
            )),
        });
    }
    let mut previous = previous.to_vec();
    previous.sort();
    if owned == previous {
        return Ok(());
    }
    let bytes = acompose_engine::snapshot::to_json_bytes(&Record { format: MOUNTS_FORMAT.to_owned(), links: owned });
    crate::home::atomic::replace(home, MOUNTS_FILE, &bytes)
        .map_err(|error| HostError::environment(&path, error.to_string()))
}

/// A projection refused at a path host delivery made (a link `<home>/skill-mounts.json`
/// records) said as that: a role projected at home scope and the roster delivered by
/// `setup` want the same paths, and neither replaces the other behind the user's back.
/// Any other error comes back as it was.
pub fn explain_refusal(home: Option<&Home>, error: HostError) -> HostError {
    // The projection words a refusal of its transaction as an invalid input at the path.
    let path = match &error {
        HostError::Transaction(crate::home::transaction::TransactionError::Refused { path, .. }) => path,
        HostError::Invalid { path, message } if message.starts_with("refused to write") => path,
        _ => return error,
    };
    let Some(mount) = home.and_then(|home| read_record(home).ok()).and_then(|links| {
        links.into_iter().find(|mount| mount.path == *path && link_target(path).as_deref() == Some(&mount.target))
    }) else {
        return error;
    };
    let key = if mount.target.file_name().is_some_and(|name| name == "ROSTER.md") {
        "load_points"
    } else {
        "skill_load_points"
    };
    let harness = &mount.harness;
    HostError::invalid(
        path,
        format!(
            "`{}` is the roster's host delivery (`acompose setup {harness}`, `{key}.{harness}`), not a projection's: a role projected at home scope and the whole roster delivered there want the same paths, and acompose replaces neither with the other; to project the role at home scope, set `load_points.{harness}: null` and `skill_load_points.{harness}: null` in agent-compose.yaml and run `acompose` (it takes the roster's links out), then project again; or project into a repository (`--scope repository`), or start the role with `acompose launch ROLE {harness}`, which uses a runtime home of its own",
            path.display()
        ),
    )
}

/// `acompose setup HARNESS`: wires the harness into `load_points` and
/// `skill_load_points` of `<home>/agent-compose.yaml` (created when missing), adding lines
/// only. Returns what happened to each key; the file is written only when a key changed.
pub fn enable(home: &Home, harness: &str) -> Result<Vec<KeyChange>, HostError> {
    let path = home.config_file();
    let text = match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(HostError::environment(
                &path,
                format!("cannot read `{}`: {}", path.display(), error_kind(&error)),
            ));
        }
        Ok(metadata) if !metadata.is_file() => {
            return Err(HostError::invalid(&path, format!("`{}` is not a regular file", path.display())));
        }
        Ok(_) => {
            let bytes = std::fs::read(&path).map_err(|error| {
                HostError::environment(&path, format!("cannot read `{}`: {}", path.display(), error_kind(&error)))
            })?;
            String::from_utf8(bytes)
                .map_err(|_| HostError::invalid(&path, format!("`{}` is not valid UTF-8", path.display())))?
        }
    };
    let (edited, changes) = enable_harness(&text, harness)
        .map_err(|message| HostError::invalid(&path, format!("`{}`: {message}", path.display())))?;
    if edited != text {
        crate::home::create_home(home)?;
        crate::home::atomic::replace(home, CONFIG_FILE, edited.as_bytes())
            .map_err(|error| HostError::environment(&path, error.to_string()))?;
    }
    Ok(changes)
}
