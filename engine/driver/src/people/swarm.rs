//! Swarm runs on disk: a recipe resolved as `people resolve` previews it, each role
//! reviewed as `people start` reviews a start (as its roster role where it has one),
//! then one real session per role in its own PTY, and the run recorded in
//! `.agent-toolkit/runs/<id>.json`. Listing, showing and stopping a run read that record
//! and the session records it names. People's files are only read.

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use acompose_people::recipe::Recipe;
use acompose_people::resolve::{self, Assignment};
use acompose_people::session::{SessionLinks, SessionRecord, Timestamp};
use acompose_people::swarm::{self, RUN_SPEC, RUNS_DIRECTORY};
pub use acompose_people::swarm::{Choice, Choices, PlannedRole, RunRecord, RunRole, ephemeral_person};
use acompose_people::{finding, printable};

use super::as_role::RosterPlace;
use super::session_runner::{LaunchOptions, SessionHandle, start_session};
use super::sessions::{Clock, Reviewed, StartOptions, Stopped, list_sessions, review_person, stop_session};
use super::storage::{Stop, Workspace};
use crate::home::atomic::At as _;

/// What a swarm start asks for besides the recipe.
#[derive(Debug, Clone, Default)]
pub struct SwarmOptions {
    pub project_id: String,
    pub assignments: Vec<Assignment>,
    pub choices: Choices,
    /// One task for every role; it reaches each prompt and is written nowhere.
    pub task: Option<String>,
    pub roster: Option<RosterPlace>,
}

/// The review of a whole run: every role planned and reviewed, nothing started.
pub struct SwarmReview {
    pub run_id: String,
    pub recipe: String,
    pub project_id: String,
    pub roles: Vec<(PlannedRole, Reviewed)>,
}

/// Resolves the recipe, plans each role's runner and model, and reviews each role's
/// start. A role whose Person is bound by the recipe plays the recipe's role; a role
/// with no Person gets an ephemeral stand-in that is never saved.
pub fn review_swarm(
    workspace: &Workspace,
    recipe: &Recipe,
    label: &str,
    options: &SwarmOptions,
    path_variable: Option<&OsStr>,
    clock: &dyn Clock,
) -> Result<SwarmReview, Stop> {
    let validation = super::roster_for_resolution(workspace)?;
    let roster = &validation.roster;
    let resolved =
        resolve::resolve(recipe, &roster.people, &roster.bindings, &options.assignments).map_err(|rejections| {
            let messages: Vec<String> = rejections.iter().map(|rejection| rejection.message.clone()).collect();
            Stop::Invalid(format!("--assign was refused: {}", messages.join("; ")))
        })?;
    let planned =
        swarm::plan(&resolved, &roster.people, &options.choices).map_err(|error| Stop::Invalid(error.message()))?;
    let run_id = swarm::run_id(&clock.now(), super::session_runner::nonce(0));
    let mut roles = Vec::new();
    for role in planned {
        let mut person = match &role.resolved.person_id {
            Some(id) => super::existing_person(workspace, id)?,
            None => swarm::ephemeral_person(&role.resolved.role),
        };
        person.role.clone_from(&role.resolved.role);
        let start = StartOptions {
            person_id: person.id.clone(),
            project_id: options.project_id.clone(),
            runner: role.runner.clone(),
            model: role.model.clone(),
            task: options.task.clone(),
            roster: options.roster.clone(),
            conversation: None,
        };
        let links = SessionLinks {
            run: Some(run_id.clone()),
            ephemeral: role.resolved.person_id.is_none(),
            ..SessionLinks::default()
        };
        let reviewed = review_person(workspace, person, &start, links, path_variable)
            .map_err(|stop| within_role(stop, &role.resolved.role))?;
        roles.push((role, reviewed));
    }
    Ok(SwarmReview { run_id, recipe: printable(label), project_id: options.project_id.clone(), roles })
}

/// Names the role a refusal is about.
fn within_role(stop: Stop, role: &str) -> Stop {
    match stop {
        Stop::Invalid(message) => Stop::Invalid(format!("role `{role}`: {message}")),
        other => other,
    }
}

/// Starts one session per reviewed role, in recipe order, then writes the run record.
/// If one cannot start, those already started are stopped (their records say so) and
/// no run is recorded.
pub fn start_swarm(
    workspace: &Workspace,
    review: &SwarmReview,
    options: &LaunchOptions,
    clock: Arc<dyn Clock>,
) -> Result<(RunRecord, Vec<SessionHandle>), Stop> {
    let start = |reviewed: &Reviewed| {
        let handle = start_session(workspace, reviewed, options, Arc::clone(&clock))?;
        Ok((handle.record().clone(), handle))
    };
    // A handle dropped stops its session.
    start_swarm_with(workspace, review, clock.as_ref(), start, drop)
}

/// [`start_swarm`] with the caller's way of starting one role's session (`start`: its
/// `running` record and what the caller keeps of it) and of stopping one already started
/// when a later role cannot start or the run cannot be recorded (`abandon`).
pub fn start_swarm_with<S>(
    workspace: &Workspace,
    review: &SwarmReview,
    clock: &dyn Clock,
    mut start: impl FnMut(&Reviewed) -> Result<(SessionRecord, S), Stop>,
    mut abandon: impl FnMut(S),
) -> Result<(RunRecord, Vec<S>), Stop> {
    let mut started = Vec::new();
    let mut roles = Vec::new();
    let mut first_start = None;
    for (planned, reviewed) in &review.roles {
        let (record, kept) = match start(reviewed) {
            Ok(both) => both,
            Err(stop) => {
                started.into_iter().for_each(&mut abandon);
                return Err(within_role(stop, &planned.resolved.role));
            }
        };
        first_start.get_or_insert_with(|| record.started_at.as_str().to_owned());
        roles.push(RunRole {
            role: planned.resolved.role.clone(),
            person_id: planned.resolved.person_id.clone(),
            rule: planned.resolved.rule.code().to_owned(),
            runner: planned.runner.clone(),
            model: planned.model.clone(),
            session_id: record.id.clone(),
        });
        started.push(kept);
    }
    let record = RunRecord {
        spec: RUN_SPEC.to_owned(),
        id: review.run_id.clone(),
        recipe: review.recipe.clone(),
        project_id: review.project_id.clone(),
        started_at: first_start.unwrap_or_else(|| clock.now().as_str().to_owned()),
        roles,
    };
    let written = runs_folder(workspace, true).and_then(|folder| {
        let folder = folder.unwrap_or_default();
        Ok(crate::home::atomic::create_new(&folder, &format!("{}.json", record.id), &swarm::run_bytes(&record))?)
    });
    if let Err(stop) = written {
        started.into_iter().for_each(&mut abandon);
        return Err(stop);
    }
    Ok((record, started))
}

fn runs_folder(workspace: &Workspace, make: bool) -> Result<Option<PathBuf>, Stop> {
    workspace.refuse_symlinks(&[".agent-toolkit", RUNS_DIRECTORY])?;
    if make {
        workspace.storage_folder(".agent-toolkit")?;
        return workspace.storage_folder(RUNS_DIRECTORY).map(Some);
    }
    let path = workspace.path(RUNS_DIRECTORY);
    Ok(path.is_dir().then_some(path))
}

/// The recorded runs, newest first; files that are not run records are skipped.
pub fn list_runs(workspace: &Workspace) -> Result<Vec<RunRecord>, Stop> {
    let Some(folder) = runs_folder(workspace, false)? else {
        return Ok(Vec::new());
    };
    let listing = fs::read_dir(&folder).at(&folder, || format!("cannot list `{}`", folder.display()))?;
    let mut runs = Vec::new();
    for entry in listing.flatten().take(acompose_people::session::MAX_RECORDS) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let Ok(metadata) = fs::symlink_metadata(&path) else { continue };
        if !metadata.is_file() || name.starts_with('.') {
            continue;
        }
        let bytes = super::storage::read_regular(&path, swarm::MAX_RUN_BYTES).map_err(Stop::Io)?;
        runs.extend(swarm::check_run(&name, &bytes));
    }
    runs.sort_by(|left, right| right.started_at.cmp(&left.started_at).then_with(|| right.id.cmp(&left.id)));
    Ok(runs)
}

/// One run and the records of its sessions (reconciled), in recipe order; `None` for
/// a session whose record is gone.
pub fn show_run(
    workspace: &Workspace,
    id: &str,
    clock: &dyn Clock,
) -> Result<(RunRecord, Vec<Option<SessionRecord>>), Stop> {
    let run = list_runs(workspace)?.into_iter().find(|run| run.id == id).ok_or_else(|| {
        Stop::Findings(vec![finding::error("no-such-run", RUNS_DIRECTORY, "there is no run with this id")])
    })?;
    let records = list_sessions(workspace, clock)?.records;
    let sessions =
        run.roles.iter().map(|role| records.iter().find(|record| record.id == role.session_id).cloned()).collect();
    Ok((run, sessions))
}

/// Stops every running session of a run (`people stop` for each); ended ones are left.
pub fn stop_run(workspace: &Workspace, id: &str, clock: &dyn Clock, grace: Duration) -> Result<Vec<Stopped>, Stop> {
    let (run, _) = show_run(workspace, id, clock)?;
    run.roles.iter().map(|role| stop_session(workspace, &role.session_id, clock, grace)).collect()
}

/// The time a run started, for listings.
pub fn started(run: &RunRecord) -> Option<Timestamp> {
    Timestamp::parse(&run.started_at)
}
