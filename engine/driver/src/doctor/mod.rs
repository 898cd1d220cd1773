//! `acompose doctor`: every check of a home's health, each with what it found and, for a
//! failure or a warning, how to fix it: the home, the configuration, the person source,
//! the projects root and the operating context, every configured harness folder and
//! delivered link, the harnesses and runners on `PATH`, the registered projections and
//! the store with the bundles the index names. Reads only; never writes or repairs. Also
//! `catalog check` (`catalogue_check`), the other check that composes nothing.
//!
//! The last folder: may call every other one; none calls it.

pub mod catalogue_check;

use std::path::{Path, PathBuf};

use acompose_engine::harness_layout::{self, Layout};
use acompose_engine::host_config::{Destination, LoadPoint};

use crate::delivery::projections::State;
use crate::error::HostError;
use crate::home::Home;
use crate::home::read_index;
use crate::home::settings::Settings;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Ok,
    /// Worth knowing; nothing is broken.
    Note,
    /// Something will not work as the user likely expects.
    Warning,
    /// A command will fail.
    Failure,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Note => "note",
            Status::Warning => "warning",
            Status::Failure => "fail",
        }
    }
}

/// One check: what was checked, how it came out, what was found and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub detail: String,
    pub fix: Option<String>,
}

fn check(name: impl Into<String>, status: Status, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check { name: name.into(), status, detail: detail.into(), fix }
}

fn shown(path: &Path) -> String {
    acompose_engine::diagnostic::sanitize(&path.display().to_string())
}

/// Every check, in a fixed order. `settings` is the resolution the command made (a
/// configuration that did not resolve is checked by `config_failure` instead);
/// `path_variable` is `PATH`.
pub fn examine(settings: &Settings, path_variable: Option<&std::ffi::OsStr>) -> Vec<Check> {
    let mut checks = Vec::new();
    let Some(home) = settings.home.as_ref().map(|home| home.value.clone()) else {
        checks.push(check(
            "home",
            Status::Failure,
            "no home can be named",
            Some("pass `--home DIR` or set `ACOMPOSE_HOME`".to_owned()),
        ));
        return checks;
    };
    checks.push(home_check(&home));
    checks.push(config_check(settings));
    checks.push(person_check(settings));
    checks.extend(projects_checks(settings));
    checks.extend(harness_folder_checks(&settings.config.load_points, &settings.config.skill_load_points));
    checks.extend(mount_checks(&home));
    checks.extend(path_checks(path_variable));
    checks.extend(projection_checks(&home));
    checks.extend(start_folder_checks(&home));
    checks.extend(store_checks(&home));
    checks.push(audit_check(&home));
    checks
}

/// What the content audit kept out of the indexed bundles (`crate::compose::audit`).
fn audit_check(home: &Home) -> Check {
    let refusals = crate::compose::audit::refusals_in_home(home);
    if refusals.is_empty() {
        return check("audit", Status::Ok, "the content audit refused nothing in the indexed bundles", None);
    }
    let listed: Vec<String> = refusals
        .iter()
        .map(|refusal| format!("{} of role {}: {}", refusal.subject, refusal.role, refusal.reason))
        .collect();
    check(
        "audit",
        Status::Warning,
        format!("{} text(s) kept out of the indexed bundles; {}", refusals.len(), listed.join("; ")),
        Some(
            "`acompose catalog audit DIR` shows each finding; fix the file, or set `audit_policy` in the configuration"
                .to_owned(),
        ),
    )
}

/// The check of a configuration that did not resolve: the error, and the fix.
pub fn config_failure(error: &HostError) -> Check {
    check(
        "config",
        Status::Failure,
        error.to_string(),
        Some("`acompose config validate` shows every problem with its line".to_owned()),
    )
}

fn home_check(home: &Home) -> Check {
    match std::fs::symlink_metadata(home) {
        Err(_) => check(
            "home",
            Status::Note,
            format!("`{}` does not exist yet", shown(home)),
            Some("bare `acompose` creates it".to_owned()),
        ),
        Ok(metadata) if metadata.file_type().is_symlink() => check(
            "home",
            Status::Failure,
            format!("`{}` is a symbolic link", shown(home)),
            Some("pass the real directory with `--home DIR`".to_owned()),
        ),
        Ok(metadata) if !metadata.is_dir() => check(
            "home",
            Status::Failure,
            format!("`{}` is not a directory", shown(home)),
            Some("move it away, or pass another `--home DIR`".to_owned()),
        ),
        Ok(_) if rustix::fs::access(home.root(), rustix::fs::Access::WRITE_OK).is_err() => check(
            "home",
            Status::Failure,
            format!("`{}` is not writable", shown(home)),
            Some("give yourself write access to it, or pass another `--home DIR`".to_owned()),
        ),
        Ok(_) => check("home", Status::Ok, format!("`{}`", shown(home)), None),
    }
}

fn config_check(settings: &Settings) -> Check {
    let Some(file) = &settings.config_file else {
        return check("config", Status::Ok, "no `agent-compose.yaml`: every setting is its default", None);
    };
    match settings.refusal() {
        Some(_) => check(
            "config",
            Status::Failure,
            format!("`{}`: `person_policy: external-only` and no external person source", shown(&file.path)),
            Some("set `person_source: <folder>` in it, or remove the policy".to_owned()),
        ),
        None => check("config", Status::Ok, format!("`{}` is valid", shown(&file.path)), None),
    }
}

fn person_check(settings: &Settings) -> Check {
    let Ok(selection) = settings.selection(false) else {
        return check(
            "person source",
            Status::Failure,
            "refused by `person_policy: external-only`",
            Some("set `person_source`".to_owned()),
        );
    };
    let validation = crate::Sources::default().validate(&selection);
    let model = &validation.model;
    let errors = validation.findings.diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
    if validation.has_errors {
        return check(
            "person source",
            Status::Failure,
            format!("`{}` has {errors} error(s)", model.source),
            Some("`acompose roster validate` shows each with its file and line".to_owned()),
        );
    }
    let detail = format!("{}: {} roles, {} personalities", model.source, model.roles.len(), model.personalities.len());
    let warnings = validation.findings.diagnostics.len();
    if warnings > 0 {
        return check(
            "person source",
            Status::Warning,
            format!("{detail}; {warnings} warning(s)"),
            Some("`acompose roster validate` shows them".to_owned()),
        );
    }
    check("person source", Status::Ok, detail, None)
}

fn projects_checks(settings: &Settings) -> Vec<Check> {
    let root = &settings.projects_root.value;
    let origin = settings.projects_root.origin.describe();
    let change = "change it with `--projects-root DIR`, `$PROJECTS_ROOT` or `projects_root:` in agent-compose.yaml";
    let context = &settings.config.operating_context;
    if !root.is_dir() {
        let status = if context.is_empty() { Status::Note } else { Status::Failure };
        return vec![check(
            "projects root",
            status,
            format!("`{}` ({origin}) is not a folder", shown(root)),
            Some(format!("create it, or {change}")),
        )];
    }
    let mut checks = vec![check("projects root", Status::Ok, format!("`{}` ({origin})", shown(root)), None)];
    let mut declared = Vec::new();
    for (repository, _) in context {
        let folder = root.join(repository);
        let name = format!("repository {repository}");
        match repository_state(&folder) {
            RepositoryState::Present => {
                checks.push(check(name, Status::Ok, format!("`{}`", shown(&folder)), None));
                checks.extend(read_trusted_root(repository, &folder, &mut declared));
            }
            RepositoryState::NoCatalogue => checks.push(check(
                name,
                Status::Warning,
                format!("`{}` {}", shown(&folder), RepositoryState::NoCatalogue.finding()),
                Some("add skills under `.agents/skills/` (or a trusted root's `.agents/roles.kdl`), or remove it from `operating_context`".to_owned()),
            )),
            state => checks.push(check(
                name,
                Status::Failure,
                format!("`{}` {}; every role fails while it is", shown(&folder), state.finding()),
                Some(format!("check it out there, remove it from `operating_context`, or {change}")),
            )),
        }
    }
    checks.extend(declared_checks(root, &declared));
    checks
}

/// How a repository folder under the projects root stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RepositoryState {
    Present,
    Missing,
    NotAFolder,
    Unreadable,
    /// There, but with no `.agents` catalogue: it gives no skill.
    NoCatalogue,
}

impl RepositoryState {
    fn finding(self) -> &'static str {
        match self {
            RepositoryState::Present => "is there",
            RepositoryState::Missing => "does not exist",
            RepositoryState::NotAFolder => "is not a folder",
            RepositoryState::Unreadable => "cannot be read",
            RepositoryState::NoCatalogue => "has no `.agents/` catalogue, so it gives no skill",
        }
    }
}

fn repository_state(folder: &Path) -> RepositoryState {
    match std::fs::metadata(folder) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => RepositoryState::Missing,
        Err(_) => RepositoryState::Unreadable,
        Ok(metadata) if !metadata.is_dir() => RepositoryState::NotAFolder,
        Ok(_) if std::fs::read_dir(folder).is_err() => RepositoryState::Unreadable,
        Ok(_) if !folder.join(".agents").is_dir() => RepositoryState::NoCatalogue,
        Ok(_) => RepositoryState::Present,
    }
}

/// A repository a trusted root's `roles.kdl` declares: its path, and where and for whom.
struct Declared {
    path: String,
    /// `owner/repo` of the trusted root and the repository's id there.
    named_by: String,
    /// The roles that use it, or `every role` for a global one.
    roles: Vec<String>,
}

/// Reads the `roles.kdl` of an operating-context repository, when it has one, and adds
/// what it declares to `declared`; a file that cannot be read or has errors is a check.
fn read_trusted_root(repository: &str, folder: &Path, declared: &mut Vec<Declared>) -> Option<Check> {
    let path = folder.join(".agents/roles.kdl");
    if !path.is_file() {
        return None;
    }
    let label = crate::compose::load::label_of(folder);
    let name = format!("roles.kdl of {repository}");
    let fix = Some("run `acompose`: it shows each problem with its line".to_owned());
    let bytes = match crate::compose::load::read_limited(&path, &label, acompose_engine::limits::ROLES_KDL) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(too_large)) => return Some(check(name, Status::Failure, too_large.message, fix)),
        Err(error) => {
            let detail = format!("`{}` cannot be read: {}", shown(&path), crate::compose::load::error_kind(&error));
            return Some(check(name, Status::Failure, detail, fix));
        }
    };
    let db = acompose_engine::Database::default();
    let file = acompose_engine::SourceFile::new(&db, label, ".agents/roles.kdl".to_owned(), bytes.into());
    let parsed = acompose_engine::provider::trusted_root(&db, file);
    for declaration in &parsed.value.repositories {
        let global = parsed.value.globals.iter().any(|(id, _)| *id == declaration.id);
        let mut roles: Vec<String> = parsed
            .value
            .roles
            .iter()
            .filter(|role| role.repositories.iter().any(|(id, _)| *id == declaration.id))
            .map(|role| role.slug.clone())
            .collect();
        if global {
            roles = vec!["every role".to_owned()];
        }
        declared.push(Declared {
            path: declaration.path.clone(),
            named_by: format!("`{repository}` as `{}`", declaration.id),
            roles,
        });
    }
    let errors = parsed.diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
    (errors > 0).then(|| check(name, Status::Failure, format!("`{}` has {errors} error(s)", shown(&path)), fix))
}

/// How many missing repositories doctor names one by one; the rest are counted.
const LISTED_PROBLEMS: usize = 20;

/// The repositories the trusted roots declare: one check for those present, and one per
/// repository that is missing, unreadable or without a catalogue, with the roles it
/// fails and the fix.
fn declared_checks(root: &Path, declared: &[Declared]) -> Vec<Check> {
    let mut seen = std::collections::BTreeSet::new();
    let mut present = 0;
    let mut problems = Vec::new();
    for repository in declared.iter().filter(|repository| seen.insert((&repository.path, &repository.named_by))) {
        let folder = root.join(&repository.path);
        match repository_state(&folder) {
            RepositoryState::Present => present += 1,
            state => problems.push((repository, folder, state)),
        }
    }
    if present + problems.len() == 0 {
        return Vec::new();
    }
    let total = present + problems.len();
    let summary_status = if problems.is_empty() { Status::Ok } else { Status::Failure };
    let mut checks = vec![check(
        "declared repositories",
        summary_status,
        format!("{present} of {total} repositories the trusted roots declare are there with a catalogue"),
        None,
    )];
    for (repository, folder, state) in problems.iter().take(LISTED_PROBLEMS) {
        let roles = match repository.roles.as_slice() {
            [] => "no role uses it".to_owned(),
            roles => format!("used by {}", roles.join(", ")),
        };
        let (status, consequence) = match state {
            RepositoryState::NoCatalogue => (Status::Warning, "those roles receive nothing from it"),
            _ => (Status::Failure, "those roles get no bundle until it is there"),
        };
        checks.push(check(
            format!("repository {}", repository.path),
            status,
            format!("`{}` {}; declared by {} ({roles})", shown(folder), state.finding(), repository.named_by),
            Some(format!("check it out under the projects root, or remove it from that roles.kdl; {consequence}")),
        ));
    }
    if problems.len() > LISTED_PROBLEMS {
        checks.push(check(
            "declared repositories",
            Status::Failure,
            format!("and {} more missing or unreadable", problems.len() - LISTED_PROBLEMS),
            Some("`acompose` names each with the roles it fails".to_owned()),
        ));
    }
    checks
}

/// `~/…` against the user's home; an absolute path as it is.
fn expand(text: &str) -> Option<PathBuf> {
    match text.strip_prefix("~/") {
        Some(rest) => std::env::home_dir().map(|home| home.join(rest)),
        None => Some(PathBuf::from(text)),
    }
}

fn harness_folder_checks(load_points: &Option<Vec<LoadPoint>>, skill_points: &Option<Vec<LoadPoint>>) -> Vec<Check> {
    let mut checks = Vec::new();
    for (key, points, place) in [
        ("load_points", load_points, (|layout: &Layout| layout.home.instructions) as fn(&Layout) -> &'static str),
        ("skill_load_points", skill_points, |layout: &Layout| layout.home.skills),
    ] {
        for point in points.iter().flatten() {
            let Some(layout) = harness_layout::layout(&point.harness) else { continue };
            let destination = match &point.destination {
                Destination::Off => continue,
                Destination::Default => std::env::home_dir().map(|home| home.join(place(layout))),
                Destination::Path(text) => expand(text),
            };
            let Some(destination) = destination else { continue };
            let name = format!("{key}.{}", point.harness);
            let folder = destination.parent().map(Path::to_path_buf).unwrap_or_default();
            checks.push(if folder.is_dir() {
                check(name, Status::Ok, format!("`{}`", shown(&destination)), None)
            } else {
                check(
                    name,
                    Status::Warning,
                    format!("`{}` does not exist, so {} reads nothing from there", shown(&folder), layout.display_name),
                    Some(format!(
                        "install {} (or create the folder), or set `{key}.{}: null` to opt out",
                        layout.display_name, point.harness
                    )),
                )
            });
        }
    }
    checks
}

fn mount_checks(home: &Home) -> Vec<Check> {
    let links = match crate::delivery::mounts::recorded_links(home) {
        Ok(links) => links,
        Err(error) => {
            return vec![check(
                "delivered links",
                Status::Failure,
                error.to_string(),
                Some("remove the record and run `acompose`".to_owned()),
            )];
        }
    };
    if links.is_empty() {
        return Vec::new();
    }
    let broken: Vec<String> = links
        .iter()
        .filter(|link| {
            std::fs::read_link(&link.path).map_or(true, |target| target != link.target) || !link.path.exists()
        })
        .map(|link| format!("`{}`", shown(&link.path)))
        .collect();
    if broken.is_empty() {
        return vec![check("delivered links", Status::Ok, format!("{} link(s) in place", links.len()), None)];
    }
    vec![check(
        "delivered links",
        Status::Warning,
        format!("{} of {} link(s) changed or dangling: {}", broken.len(), links.len(), broken.join(", ")),
        Some("run `acompose` to deliver again (links it did not make are left alone)".to_owned()),
    )]
}

fn path_checks(path_variable: Option<&std::ffi::OsStr>) -> Vec<Check> {
    let harnesses: Vec<&str> = harness_layout::layouts()
        .iter()
        .filter(|layout| crate::people::sessions::find_binary(layout.binary, path_variable).is_some())
        .map(|layout| layout.harness)
        .collect();
    let runners: Vec<&str> = crate::people::sessions::discover_runners(path_variable)
        .iter()
        .filter(|found| found.path.is_some())
        .map(|found| found.runner.name)
        .collect();
    let list = |names: &[&str]| if names.is_empty() { "none".to_owned() } else { names.join(", ") };
    let status = |names: &[&str]| if names.is_empty() { Status::Note } else { Status::Ok };
    let install = Some("install one to launch it: `acompose ROLE HARNESS` needs it on `PATH`".to_owned());
    vec![
        check(
            "harnesses on PATH",
            status(&harnesses),
            list(&harnesses),
            harnesses.is_empty().then(|| install.clone()).flatten(),
        ),
        check(
            "People runners on PATH",
            status(&runners),
            list(&runners),
            runners.is_empty().then(|| "`acompose people runners` lists every runner and its binary".to_owned()),
        ),
        session_host_check(path_variable),
    ]
}

/// Whether People sessions can be hosted in tmux, so they outlive the command that
/// started them (docs/sessions.md).
fn session_host_check(path_variable: Option<&std::ffi::OsStr>) -> Check {
    match crate::people::sessions::find_binary(crate::people::tmux::HOST_BINARY, path_variable) {
        Some(tmux) => check(
            "People session host",
            Status::Ok,
            format!("tmux at {}: sessions outlive the command or server that started them", shown(&tmux)),
            None,
        ),
        None => check(
            "People session host",
            Status::Warning,
            "tmux is not installed: a session ends with the command or server that started it",
            Some("install tmux (Debian: `apt-get install tmux`)".to_owned()),
        ),
    }
}

fn projection_checks(home: &Home) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut repositories = Vec::new();
    for entry in crate::delivery::projections::list(home) {
        let name = format!("projection {}", shown(&entry.target));
        let (status, fix) = match entry.state {
            State::Current | State::Pinned | State::Runtime => (Status::Ok, None),
            State::Stale => (Status::Warning, Some("run `acompose`: it projects the role's new bundle".to_owned())),
            State::Missing => (
                Status::Warning,
                Some(format!(
                    "its folder or record is gone and is never recreated; `acompose project {} --layout HARNESS --target {}` projects it again",
                    entry.role,
                    shown(&entry.target)
                )),
            ),
            State::ChangedByHand => (
                Status::Warning,
                Some(format!(
                    "`acompose unproject --target {}` takes it out; project it again afterwards",
                    shown(&entry.target)
                )),
            ),
        };
        checks.push(check(name, status, format!("{} ({})", entry.role, entry.state.name()), fix));
        if let Some(note) = &entry.git {
            checks.push(check(
                format!("git for projection {}", shown(&entry.target)),
                Status::Warning,
                note.clone(),
                Some("`acompose` (or `acompose project` again) brings git's files in line".to_owned()),
            ));
        }
        if entry.state != State::Runtime {
            let repository = crate::delivery::git_exclude::Repository::of(&entry.target);
            if repository.as_ref().is_some_and(|repository| !repositories.contains(repository)) {
                repositories.extend(repository);
                checks.extend(leftover_checks(&entry.target));
            }
        }
    }
    checks
}

/// A check for each block of a repository's `info/` files whose projection is gone.
fn leftover_checks(target: &Path) -> Vec<Check> {
    crate::delivery::projection_git::leftovers(target)
        .into_iter()
        .map(|(file, folder)| {
            let marked = crate::delivery::projection_git::marked_instructions(&folder);
            let mut fix = format!("`acompose unproject --target {}` takes them out", shown(&folder));
            if !marked.is_empty() {
                let files: Vec<String> = marked.iter().map(|path| format!("`{}`", shown(Path::new(path)))).collect();
                fix.push_str(&format!(
                    "; {} marked skip-worktree, perhaps by an earlier acompose: `git update-index --no-skip-worktree FILE` takes a mark you did not set off",
                    files.join(", ")
                ));
            }
            check(
                format!("git lines in {}", shown(&file)),
                Status::Warning,
                format!("a block of lines for a projection into `{}`, which has none", shown(&folder)),
                Some(fix),
            )
        })
        .collect()
}

/// A note per registered repository projection for each of its harnesses that reads a
/// repository's skills only in the folder it starts in (Gemini CLI).
fn start_folder_checks(home: &Home) -> Vec<Check> {
    let mut checks = Vec::new();
    for entry in crate::delivery::projections::list(home) {
        if matches!(entry.state, State::Missing | State::Runtime) {
            continue;
        }
        let repository = crate::home::projection_record::read_record(&entry.target)
            .is_some_and(|record| record.details.scope == harness_layout::Scope::Repository.name());
        if !repository {
            continue;
        }
        for harness in acompose_engine::skill_sight::start_folder_only(&entry.layout) {
            checks.push(check(
                format!("projection {} in {harness}", shown(&entry.target)),
                Status::Note,
                format!(
                    "{harness} reads a repository's skills only in the folder it starts in: it sees the role's skills only when started in this folder itself"
                ),
                Some("start it there, or project the role into the subfolder you work in too".to_owned()),
            ));
        }
    }
    checks
}

fn store_checks(home: &Home) -> Vec<Check> {
    let store = crate::compose::store::Store::of_home(home);
    let entries = std::fs::read_dir(store.root()).map(|entries| entries.flatten().count()).unwrap_or(0);
    let index = read_index(home);
    let mut damaged = Vec::new();
    for (role, id) in &index {
        let bundle = home.bundles().join(id);
        if crate::compose::bundle::verify_directory(&bundle).is_err() {
            damaged.push(format!("{role} ({id})"));
        }
    }
    let detail = format!(
        "{entries} store entries; {} of {} indexed bundle(s) verified",
        index.len() - damaged.len(),
        index.len()
    );
    if damaged.is_empty() {
        return vec![check("store", Status::Ok, detail, None)];
    }
    vec![check(
        "store",
        Status::Failure,
        format!("{detail}; damaged: {}", damaged.join(", ")),
        Some(
            "`acompose verify ROLE` names each problem; run `acompose` after removing the damaged bundle folder"
                .to_owned(),
        ),
    )]
}
