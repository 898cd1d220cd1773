//! Assigned launch: converge the host, compose one role's bundle, project it at home
//! scope into a runtime home under `<home>/runtime/` (so the host's global skill mount
//! and every other role's skills stay out of sight), link the harness's own settings and
//! credential files from the real home (links only: their bytes are never read), and
//! exec the harness found on `PATH` with its configuration folder moved there.
//! Everything before exec is transactional: a failure leaves no half-made runtime home.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use acompose_engine::harness_layout::{Layout, Scope};
use acompose_engine::person::PersonModel;
use acompose_engine::projection::Mode;

use crate::convergence::converger::{Converger, RoleRequest};
use crate::convergence::{BareRun, converge_home};
use crate::error::HostError;
use crate::home::read_config;
use crate::progress::Progress;
use crate::projection::{self, Report};
use crate::transaction::NoFaults;

/// The folder of runtime homes inside home.
pub const RUNTIME_DIR: &str = "runtime";
/// Where launches keep the bundles they compose (bare convergence never prunes it).
pub const RUNTIME_BUNDLES_DIR: &str = "runtime/bundles";
/// Set in a launched harness; a launch that sees it is refused.
pub const LAUNCH_VARIABLE: &str = "AGENT_COMPOSE_LAUNCH";
/// The role a launched harness plays, for commit attribution.
pub const ROLE_VARIABLE: &str = "AGENT_GIT_ATTRIBUTION_ROLE";
/// The model tier a launch composes for when `--tier` is not given.
pub const TIER_VARIABLE: &str = "AGENT_COMPOSE_MODEL_TIER";
/// The tier when neither `--tier` nor the variable names one.
pub const DEFAULT_TIER: &str = "frontier";
/// Files of the real home every runtime home links, whatever the harness (the user's git
/// identity, so commits made in a launch are theirs).
const COMMON_LINKED_FILES: &[&str] = &[".gitconfig", ".config/git/config"];

/// One launch to prepare.
#[derive(Debug, Clone, Copy)]
pub struct LaunchRequest<'a> {
    pub home: &'a Path,
    pub projects: &'a Path,
    pub role: &'a str,
    pub layout: &'static Layout,
    /// `--tier`; `None` reads [`TIER_VARIABLE`], else [`DEFAULT_TIER`].
    pub tier: Option<&'a str>,
}

/// A launch ready to exec.
pub struct Prepared {
    pub model: PersonModel,
    pub role: String,
    pub tier: String,
    pub bundle: PathBuf,
    pub runtime: PathBuf,
    pub projection: Report,
    /// The harness executable found on `PATH`.
    pub program: PathBuf,
    /// What the harness's environment gains.
    pub environment: Vec<(String, OsString)>,
}

/// Refuses a launch from inside a launched harness.
pub fn refuse_nested() -> Result<(), HostError> {
    match std::env::var_os(LAUNCH_VARIABLE) {
        Some(value) if !value.is_empty() => Err(HostError::invalid(
            "",
            format!(
                "this is already an assigned launch (`{LAUNCH_VARIABLE}` is set); a role is fixed for the converger: leave this harness and launch the other role from a plain shell"
            ),
        )),
        _ => Ok(()),
    }
}

/// The first executable file named `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).filter(|folder| folder.is_absolute()).map(|folder| folder.join(name)).find(
        |candidate| std::fs::metadata(candidate).is_ok_and(|metadata| metadata.is_file() && is_executable(&metadata)),
    )
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    true
}

fn runtime_name(layout: &Layout, role: &str, bundle: &Path) -> String {
    let id = bundle.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{}-{role}-{id}", layout.harness)
}

/// The harness's own files in the real home, as links for the runtime home.
fn linked_files(layout: &Layout) -> Vec<(String, PathBuf)> {
    let Some(real_home) = std::env::home_dir().filter(|home| !home.as_os_str().is_empty()) else {
        return Vec::new();
    };
    layout
        .linked_files
        .iter()
        .chain(COMMON_LINKED_FILES)
        .filter(|relative| std::fs::symlink_metadata(real_home.join(relative)).is_ok())
        .map(|relative| ((*relative).to_owned(), real_home.join(relative)))
        .collect()
}

fn environment(layout: &Layout, role: &str, home: &Path, runtime: &Path) -> Vec<(String, OsString)> {
    let mut environment = vec![
        // `~/.agent-compose` would now name the runtime home's own bookkeeping folder.
        ("ACOMPOSE_HOME".to_owned(), home.as_os_str().to_owned()),
        // The real home holds the host's global skill mount and every harness's user
        // skills (`~/.agents/skills`, `~/.claude/skills`, …): the runtime home replaces it.
        ("HOME".to_owned(), runtime.as_os_str().to_owned()),
        (LAUNCH_VARIABLE.to_owned(), OsString::from("1")),
        (ROLE_VARIABLE.to_owned(), OsString::from(role)),
    ];
    if let Some(variable) = layout.config_variable {
        let folder = if variable.relative_to_home.is_empty() {
            runtime.to_path_buf()
        } else {
            runtime.join(variable.relative_to_home)
        };
        environment.push((variable.name.to_owned(), folder.into_os_string()));
    }
    environment
}

/// Converges the host, composes the role's bundle and projects it into its runtime home.
pub fn prepare(request: &LaunchRequest<'_>, progress: &dyn Progress) -> Result<Prepared, HostError> {
    refuse_nested()?;
    let layout = request.layout;
    let program = find_on_path(layout.binary).ok_or_else(|| {
        HostError::invalid(
            "",
            format!(
                "`{}` ({}) is not on `PATH`; install it or add its folder to `PATH`",
                layout.binary, layout.display_name
            ),
        )
    })?;
    if let BareRun::Converged { converger, .. } = converge_home(request.home, request.projects, progress)? {
        drop(converger);
    }
    let config = read_config(request.home, progress)?;
    let tier = request
        .tier
        .map(str::to_owned)
        .or_else(|| std::env::var(TIER_VARIABLE).ok().filter(|tier| !tier.is_empty()))
        .unwrap_or_else(|| DEFAULT_TIER.to_owned());
    let mut converger = Converger::default();
    let bundles = request.home.join(RUNTIME_BUNDLES_DIR);
    let (bundle, model) = converger.compose_role(
        request.home,
        request.projects,
        &config,
        &RoleRequest { role: request.role, tier: &tier, bundles: &bundles },
        progress,
    )?;
    let runtime = request.home.join(RUNTIME_DIR).join(runtime_name(layout, request.role, &bundle));
    std::fs::create_dir_all(&runtime).map_err(|error| {
        HostError::environment(
            &runtime,
            format!("cannot create `{}`: {}", runtime.display(), crate::load::error_kind(&error)),
        )
    })?;
    let links = linked_files(layout);
    let projection_request = projection::Request {
        bundle: &bundle,
        layout,
        scope: Scope::Home,
        target: &runtime,
        mode: Mode::Link,
        extra_links: &links,
        git: projection::GitExclusion::LeaveAlone,
    };
    let projection = projection::project(&projection_request, &mut NoFaults).inspect_err(|_| {
        // A runtime home the failed projection left empty is removed; one with a previous
        // projection was restored by the transaction and stays.
        let _ = std::fs::remove_dir(&runtime);
    })?;
    let environment = environment(layout, request.role, request.home, &runtime);
    Ok(Prepared { model, role: request.role.to_owned(), tier, bundle, runtime, projection, program, environment })
}

/// Replaces this process with the harness. Returns only when exec failed.
#[cfg(unix)]
pub fn exec(prepared: &Prepared, arguments: &[OsString]) -> HostError {
    use std::os::unix::process::CommandExt as _;
    let mut command = std::process::Command::new(&prepared.program);
    command.args(arguments);
    for (name, value) in &prepared.environment {
        command.env(name, value);
    }
    let error = command.exec();
    HostError::environment(
        &prepared.program,
        format!("cannot start `{}`: {}", prepared.program.display(), crate::load::error_kind(&error)),
    )
}

#[cfg(not(unix))]
pub fn exec(prepared: &Prepared, _arguments: &[OsString]) -> HostError {
    HostError::environment(&prepared.program, "assigned launch needs a Unix system")
}

/// [`projection::find_projection`] from `start`; inside an assigned launch (whose working folder is
/// the user's checkout) the runtime home's projection when nothing is found above it.
pub fn find_nearest(start: &Path) -> Option<projection::Found> {
    projection::find_projection(start).or_else(|| {
        let launched = std::env::var_os(LAUNCH_VARIABLE).is_some_and(|value| !value.is_empty());
        let home = std::env::var_os("HOME").filter(|_| launched)?;
        projection::find_projection(Path::new(&home))
    })
}
