//! People who work as their role: the roster a People command binds roles against, and
//! the assigned launch a Person bound to a roster role starts through. The launch is
//! `crate::convergence::launch` itself (the stable runtime home, only the role's bundle in sight, the
//! role's environment); this module only asks it and turns what it prepared into the
//! review's [`RoleSight`] and the runner's environment.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use acompose_engine::harness_layout;
use acompose_people::roster_role::{self, Bound};
use acompose_people::start::RoleSight;

use super::storage::Stop;
use crate::convergence::launch::{LaunchRequest, Prepared, prepare};
use crate::home::Home;
use crate::progress::NoProgress;

/// Where the roster People bind against lives: the acompose home and the projects root
/// a launch isolates (`acompose --home`, `$ACOMPOSE_HOME`, `agent-compose.yaml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterPlace {
    pub home: Home,
    pub projects: PathBuf,
}

/// The role slugs of the home's roster, or why it could not be read.
pub fn roster_roles(place: &RosterPlace) -> Result<Vec<String>, String> {
    let model =
        crate::convergence::launch::person_model(&place.home, &NoProgress).map_err(|error| error.to_string())?;
    Ok(model.roles.iter().map(|role| role.slug.clone()).collect())
}

/// What a Person's role means against the roster of `place` (none given, or a roster
/// that cannot be read: nothing can be said).
pub fn bound_role(role: &str, place: Option<&RosterPlace>) -> Bound {
    let roles = place.and_then(|place| roster_roles(place).ok());
    roster_role::bind(role, roles.as_deref())
}

/// A runner prepared as a roster role: what the review shows, the program and the
/// environment it starts with.
pub struct AsRole {
    pub sight: RoleSight,
    pub program: PathBuf,
    pub environment: Vec<(String, OsString)>,
}

/// Prepares `role`'s assigned launch for `runner` in `cwd`: converges the home, finds or
/// composes the role's bundle and projects it into the runtime home, exactly as
/// `acompose launch` does. A runner with no harness layout cannot start as a role.
pub fn prepare_role(
    place: &RosterPlace,
    role: &str,
    runner: &str,
    cwd: &Path,
    path_variable: Option<&OsStr>,
) -> Result<AsRole, Stop> {
    let Some(layout) = harness_layout::layout(runner) else {
        return Err(Stop::Invalid(format!(
            "the runner `{runner}` has no harness layout, so it cannot start as the roster role `{role}`; choose another runner"
        )));
    };
    let request = LaunchRequest {
        home: &place.home,
        projects: &place.projects,
        role,
        layout,
        tier: None,
        cwd,
        allow_foreign: false,
        bundle: None,
        path_variable,
    };
    let prepared = prepare(&request, &NoProgress).map_err(|error| Stop::Invalid(error.to_string()))?;
    Ok(AsRole { sight: sight(&prepared), program: prepared.program.clone(), environment: prepared.environment })
}

/// The review's view of a prepared launch, from the bundle's manifest.
fn sight(prepared: &Prepared) -> RoleSight {
    let manifest = crate::convergence::launch::read_manifest(&prepared.bundle);
    let bundle_id = prepared.bundle.file_name().and_then(OsStr::to_str).unwrap_or_default().to_owned();
    let mut sight = RoleSight {
        role: prepared.role.clone(),
        bundle_id,
        tier: prepared.tier.clone(),
        runtime_home: prepared.runtime.to_string_lossy().into_owned(),
        mcp_servers: prepared.mcp_servers.clone(),
        ..RoleSight::default()
    };
    if let Some(manifest) = manifest {
        sight.display_name = manifest.role.display_name;
        sight.identity = manifest.identity.name;
        sight.pronouns = manifest.identity.pronouns;
        sight.favourite = manifest.favorite_color;
        sight.personalities = manifest.personalities.into_iter().map(|personality| personality.slug).collect();
        let mut skills: Vec<String> = manifest
            .content
            .iter()
            .filter_map(|entry| entry.path.strip_suffix("/SKILL.md"))
            .filter_map(|folder| folder.rsplit('/').next())
            .map(str::to_owned)
            .collect();
        skills.sort();
        skills.dedup();
        sight.skills = skills;
    }
    sight
}
