//! The home's register of projections (`<home>/projections.json`): every target a bundle
//! of the home was projected into follows its role, and convergence re-projects the
//! role's new bundle there before the old one is pruned, so a harness never reads a
//! dangling link. A target deleted or changed by hand is reported, never recreated. Also
//! lists each registered projection with its state for `acompose projections`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::convergence::parse_index;
use acompose_engine::harness_layout::{Scope, layout};
use acompose_engine::projection::{Health, LAYOUT_SEPARATOR, Mode};
use serde::{Deserialize, Serialize};

use crate::delivery::projection::{GitExclusion, Request, find_projection, project};
use crate::error::HostError;
use crate::home::Home;
use crate::home::transaction::NoFaults;

pub use crate::home::REGISTER_FILE;
/// The register's `format`.
pub const REGISTER_FORMAT: &str = "acompose.projections.v1";
/// The largest register read.
const REGISTER_LIMIT: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Register {
    format: String,
    /// Target folder (absolute) → what its projection shows.
    targets: BTreeMap<String, Registered>,
}

/// What one registered target shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Registered {
    role: String,
    /// The bundle folder a projection pins (one made from a bundle other than the one the
    /// home's index names for its role); `None` when it follows its role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pinned: Option<String>,
    /// An assigned launch's runtime home: pinned to the bundle its last launch showed
    /// (the next launch moves it on; convergence never re-projects it, since the launch
    /// also links the user's own harness files there).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    runtime: bool,
}

/// Where one registered projection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// It shows the bundle the home's index names for its role.
    Current,
    /// It shows an older bundle of its role (the next convergence re-projects it).
    Stale,
    /// The target, or its projection record, is gone.
    Missing,
    /// Its record now names another role, or a path it owns was changed by hand.
    ChangedByHand,
    /// It shows the bundle it was made from, which no convergence replaces; `gc` keeps
    /// the store entries that bundle links.
    Pinned,
    /// An assigned launch's runtime home, showing the bundle of its last launch (kept
    /// like a pinned one until the next launch moves it on).
    Runtime,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Current => "current",
            State::Stale => "stale",
            State::Missing => "missing",
            State::ChangedByHand => "changed by hand",
            State::Pinned => "pinned",
            State::Runtime => "runtime home",
        }
    }
}

/// One registered projection as `acompose projections` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub target: PathBuf,
    pub role: String,
    /// The layouts its record names (`claude+codex`), empty when it is missing.
    pub layout: String,
    /// The bundle its record names, empty when it is missing.
    pub bundle: String,
    pub state: State,
    /// What git sees of it that it should not, and why (the filter cannot run, a stopped
    /// run's work is left): `None` when git sees only the user's own changes.
    pub git: Option<String>,
}

/// What convergence did about one registered projection whose role has a new bundle.
#[derive(Debug, Clone)]
pub struct Followed {
    pub target: PathBuf,
    pub role: String,
    /// The bundle now projected, or why the projection was left alone.
    pub outcome: Result<String, String>,
}

/// The bundle the home's index names for `role` (a role slug given where a bundle path
/// is expected), when there is one on disk.
pub fn bundle_of_role(home: &Home, role: &Path) -> Option<PathBuf> {
    let role = role.to_str().filter(|role| !role.contains(['/', '.']))?;
    let bundle = home.bundles().join(read_index(home).get(role)?);
    bundle.is_dir().then_some(bundle)
}

/// Registers the projection just made into `target`: it follows `role` when `bundle` is
/// the bundle the home's index names for the role, and is pinned to `bundle` otherwise.
/// Returns whether it follows its role. A home that does not exist registers nothing.
pub fn register(home: &Home, target: &Path, bundle: &Path, role: &str) -> Result<bool, HostError> {
    // Without a home folder there is no register to keep, and nothing prunes or collects.
    if !home.is_dir() {
        return Ok(false);
    }
    let bundle = bundle.canonicalize().unwrap_or_else(|_| bundle.to_path_buf());
    let indexed = read_index(home)
        .get(role)
        .and_then(|id| home.bundles().join(id).canonicalize().ok())
        .is_some_and(|current| current == bundle);
    let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let registered =
        Registered { role: role.to_owned(), pinned: (!indexed).then(|| bundle.display().to_string()), runtime: false };
    insert(home, &target, registered)?;
    Ok(indexed)
}

/// What the register said of a target before [`register_ahead`] wrote it.
#[derive(Debug, Clone)]
pub struct Ahead(Option<Registered>);

/// Registers `target` before a projection of `bundle` is made there, so that a run
/// stopped anywhere in the projection leaves one that bare `acompose` knows to finish.
/// A projection that then fails gives back what the register said with
/// [`register_failed`]. A home that does not exist registers nothing.
pub fn register_ahead(home: &Home, target: &Path, bundle: &Path) -> Result<Ahead, HostError> {
    let canonical = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let before = read(home).targets.get(&canonical.display().to_string()).cloned();
    let Ok(manifest) = crate::compose::bundle::read_manifest(bundle) else {
        // The projection verifies the bundle and says what is wrong with it.
        return Ok(Ahead(before));
    };
    register(home, target, bundle, &manifest.role.slug)?;
    Ok(Ahead(before))
}

/// Puts back what the register said of `target` before [`register_ahead`].
pub fn register_failed(home: &Home, target: &Path, ahead: Ahead) -> Result<(), HostError> {
    match ahead.0 {
        Some(registered) => {
            let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
            if home.is_dir() { insert(home, &target, registered) } else { Ok(()) }
        }
        None => unregister(home, target),
    }
}

/// Registers an assigned launch's runtime home, pinned to the bundle it shows now.
pub fn register_runtime(home: &Home, runtime: &Path, bundle: &Path, role: &str) -> Result<(), HostError> {
    let bundle = bundle.canonicalize().unwrap_or_else(|_| bundle.to_path_buf());
    let runtime = runtime.canonicalize().unwrap_or_else(|_| runtime.to_path_buf());
    let registered = Registered { role: role.to_owned(), pinned: Some(bundle.display().to_string()), runtime: true };
    insert(home, &runtime, registered)
}

/// Writes `registered` for `target`, unless the register already says exactly that.
fn insert(home: &Home, target: &Path, registered: Registered) -> Result<(), HostError> {
    let mut register = read(home);
    if register.targets.get(&target.display().to_string()) != Some(&registered) {
        register.targets.insert(target.display().to_string(), registered);
        write(home, &register)?;
    }
    Ok(())
}

/// Takes `target` out of the register, if it is there.
pub fn unregister(home: &Home, target: &Path) -> Result<(), HostError> {
    let target = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let mut register = read(home);
    if register.targets.remove(&target.display().to_string()).is_some() {
        write(home, &register)?;
    }
    Ok(())
}

/// Every registered projection and where it stands against the home's index.
pub fn list(home: &Home) -> Vec<Listed> {
    let index = read_index(home);
    read(home)
        .targets
        .into_iter()
        .map(|(target, registered)| listed(PathBuf::from(target), registered, &index))
        .collect()
}

/// The bundles pinned projections show: `gc` keeps the store entries they link.
pub fn pinned_bundles(home: &Home) -> Vec<PathBuf> {
    read(home).targets.into_values().filter_map(|registered| registered.pinned.map(PathBuf::from)).collect()
}

fn listed(target: PathBuf, registered: Registered, index: &BTreeMap<String, String>) -> Listed {
    let Registered { role, pinned, runtime } = registered;
    let record = target.is_dir().then(|| find_projection(&target)).flatten().filter(|found| found.target == target);
    let Some(found) = record else {
        let git = crate::delivery::projection::needs_repair(&target)
            .then(|| "a stopped `project` or `unproject` left work here; run `acompose` to finish it".to_owned());
        return Listed { target, role, layout: String::new(), bundle: String::new(), state: State::Missing, git };
    };
    let state = if found.details.role != role || found.health == Health::Damaged {
        State::ChangedByHand
    } else if runtime {
        State::Runtime
    } else if pinned.is_some() {
        State::Pinned
    } else if index.get(&role) == Some(&found.details.bundle) {
        State::Current
    } else {
        State::Stale
    };
    let git = git_note(&target, &found.details);
    Listed { target, role, layout: found.details.layout, bundle: found.details.bundle, state, git }
}

/// What git sees of the projection in `target` that it should not, for `projections` and
/// `doctor`.
fn git_note(target: &Path, details: &acompose_engine::projection::Details) -> Option<String> {
    if let Some(problem) = crate::delivery::projection_git::filter_problem(target, details) {
        return Some(format!(
            "{problem}: git shows the role's text in your files as changes (and `git commit -a` would commit it); run `acompose` or project again to point git at this acompose"
        ));
    }
    if crate::delivery::projection::needs_repair(target) {
        return Some(
            "git's files are not yet as the projection says (a stopped run, a checkout that replaced a file, or marks of an earlier version); run `acompose` to finish it".to_owned(),
        );
    }
    None
}

/// What bare `acompose` did about a registered projection left unfinished.
#[derive(Debug, Clone)]
pub struct Repaired {
    pub target: PathBuf,
    pub role: String,
    /// What was done, or why it could not be.
    pub outcome: Result<crate::delivery::projection::Repair, String>,
}

/// Finishes, for every registered projection (not a launch's runtime home), what a
/// stopped `project` or `unproject` left there, and puts back the role's text a checkout
/// took out of the user's files ([`crate::delivery::projection::repair`]). A projection whose
/// `unproject` is finished leaves the register. Only the projections needing it are
/// touched; the others are only looked at.
pub fn repair(home: &Home) -> Vec<Repaired> {
    let mut repaired = Vec::new();
    for (target, registered) in read(home).targets {
        if registered.runtime {
            continue;
        }
        let target = PathBuf::from(target);
        if !target.is_dir() {
            continue;
        }
        let outcome = match crate::delivery::projection::repair(&target) {
            Ok(None) => continue,
            Ok(Some(repair)) => Ok(repair),
            Err(error) => Err(error.to_string()),
        };
        if let Ok(crate::delivery::projection::Repair::Unprojected) = &outcome
            && let Err(error) = unregister(home, &target)
        {
            repaired.push(Repaired {
                target: target.clone(),
                role: registered.role.clone(),
                outcome: Err(error.to_string()),
            });
        }
        repaired.push(Repaired { target, role: registered.role, outcome });
    }
    repaired
}

/// What a convergence did about the registered projections.
#[derive(Debug, Clone, Default)]
pub struct Following {
    /// Each one it re-projected or had to leave alone.
    pub followed: Vec<Followed>,
    /// The bundle ids registered projections show afterwards: bundles pruning must keep.
    pub showing: Vec<String>,
}

/// Re-projects every registered projection whose role's bundle in the home's new index
/// is not the one it shows. A failure leaves that projection as it was, still showing
/// its bundle, which the caller then keeps from pruning.
pub fn follow(home: &Home) -> Following {
    let index = read_index(home);
    let bundles = home.bundles();
    let mut following = Following::default();
    for entry in list(home) {
        // `None`: current, pinned, or a role the index no longer names; nothing to do.
        let outcome = match (entry.state, index.get(&entry.role)) {
            (State::Stale, Some(current)) => Some(reproject(&entry, &bundles.join(current)).map(|()| current.clone())),
            (State::Missing, Some(_)) => {
                Some(Err("the target or its projection record is gone; it is not recreated".to_owned()))
            }
            (State::ChangedByHand, Some(_)) => Some(Err("it was changed by hand; it is left alone".to_owned())),
            _ => None,
        };
        match &outcome {
            Some(Ok(bundle)) => following.showing.push(bundle.clone()),
            _ if entry.state != State::Missing => following.showing.push(entry.bundle.clone()),
            _ => {}
        }
        if let Some(outcome) = outcome {
            following.followed.push(Followed { target: entry.target, role: entry.role, outcome });
        }
    }
    following
}

/// The bundle ids registered projections show now: bundles pruning must keep.
pub fn showing(home: &Home) -> Vec<String> {
    list(home).into_iter().filter(|entry| entry.state != State::Missing).map(|entry| entry.bundle).collect()
}

fn reproject(entry: &Listed, bundle: &Path) -> Result<(), String> {
    let found = find_projection(&entry.target).ok_or_else(|| "its projection record is gone".to_owned())?;
    let first = found.details.layout.split(LAYOUT_SEPARATOR).next().unwrap_or_default();
    let layout = layout(first).ok_or_else(|| format!("its record names an unknown layout `{first}`"))?;
    let scope = if found.details.scope == Scope::Home.name() { Scope::Home } else { Scope::Repository };
    let mode = if found.details.mode == Mode::Copy.name() { Mode::Copy } else { Mode::Link };
    let request = Request {
        bundle,
        layout,
        scope,
        target: &entry.target,
        mode,
        extra_links: &[],
        mcp_file: None,
        git: GitExclusion::Local,
    };
    project(&request, &mut NoFaults).map(|_| ()).map_err(|error| error.to_string())
}

fn read_index(home: &Home) -> BTreeMap<String, String> {
    std::fs::read(home.index_file()).ok().and_then(|bytes| parse_index(&bytes)).unwrap_or_default()
}

/// The register, empty when there is none (or it is not one this build wrote).
fn read(home: &Home) -> Register {
    let path = home.projections_register();
    let readable =
        std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_file() && metadata.len() <= REGISTER_LIMIT);
    readable
        .then(|| std::fs::read(&path).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Register>(&bytes).ok())
        .filter(|register| register.format == REGISTER_FORMAT)
        .unwrap_or_default()
}

fn write(home: &Home, register: &Register) -> Result<(), HostError> {
    let register = Register { format: REGISTER_FORMAT.to_owned(), targets: register.targets.clone() };
    let bytes = acompose_engine::snapshot::to_json_bytes(&register);
    crate::home::atomic::replace(home, REGISTER_FILE, &bytes)
        .map_err(|error| HostError::environment(home.projections_register(), error.to_string()))
}
