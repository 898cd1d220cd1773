//! Assigned launch: converge the host, compose one role's bundle, project it at home
//! scope into a runtime home under `<home>/runtime/` (so the host's global skill mount
//! and every other role's skills stay out of sight), link the harness's own settings and
//! credential files from the real home (links only: their bytes are never read), and
//! exec the harness found on `PATH` with its configuration folder moved there.
//! Everything before exec is transactional: a failure leaves no half-made runtime home.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use acompose_engine::bundle::Manifest;
use acompose_engine::diagnostic::sanitize;
use acompose_engine::harness_layout::{Layout, Scope};
use acompose_engine::person::PersonModel;
use acompose_engine::projection::Mode;

use crate::convergence::{BareRun, converge_home};
use crate::convergence::{Converger, RoleRequest};
use crate::delivery::projection::{self, Report};
use crate::delivery::runtime_home::{self, InSight};
use crate::error::HostError;
use crate::home::Home;
use crate::home::read_config;
use crate::home::transaction::NoFaults;
use crate::progress::Progress;

pub use crate::delivery::runtime_home::LAUNCH_VARIABLE;
pub use crate::delivery::runtime_home::{RUNTIME_BUNDLES_DIR, RUNTIME_DIR};
/// The role a launched harness plays, for commit attribution.
pub const ROLE_VARIABLE: &str = "AGENT_GIT_ATTRIBUTION_ROLE";
/// The role's repositories in the isolated projects root, in resolution order, separated
/// like `PATH`.
pub const REPOSITORIES_VARIABLE: &str = "AGENT_COMPOSE_REPOSITORIES";
/// The model tier a launch composes for when `--tier` is not given.
pub const TIER_VARIABLE: &str = "AGENT_COMPOSE_MODEL_TIER";
/// The tier when neither `--tier` nor the variable names one.
pub const DEFAULT_TIER: &str = "frontier";
/// One launch to prepare.
#[derive(Debug, Clone, Copy)]
pub struct LaunchRequest<'a> {
    pub home: &'a Home,
    pub projects: &'a Path,
    pub role: &'a str,
    pub layout: &'static Layout,
    /// `--tier`; `None` reads [`TIER_VARIABLE`], else the tier of the role's bundle in
    /// the home's index, else [`DEFAULT_TIER`].
    pub tier: Option<&'a str>,
    /// The folder the harness starts in.
    pub cwd: &'a Path,
    /// `--allow-foreign-context`: launch although another role's projection is in sight.
    pub allow_foreign: bool,
    /// `--bundle`: launch this bundle (one pulled from a registry, exported, or composed
    /// elsewhere) instead of the role's bundle in the home; it must be of `role`.
    pub bundle: Option<&'a Path>,
    /// The `PATH` the harness is looked up on; `None` reads this process's.
    pub path_variable: Option<&'a std::ffi::OsStr>,
}

/// A launch ready to exec.
pub struct Prepared {
    /// The roster, when the launch read it (a launch that reuses the home's bundle does
    /// not; [`person_model`] reads it for the identity card).
    pub model: Option<PersonModel>,
    pub role: String,
    pub tier: String,
    pub bundle: PathBuf,
    pub runtime: PathBuf,
    /// What the projection into the runtime home did; `None` when the runtime home
    /// already showed the bundle.
    pub projection: Option<Report>,
    /// How many skills the bundle gives the harness.
    pub skills: usize,
    /// Other skills and projections the harness would read from the working folder.
    pub sight: InSight,
    /// The isolated projects root's links, in resolution order.
    pub repositories: Vec<PathBuf>,
    /// The harness executable found on `PATH`.
    pub program: PathBuf,
    /// What the harness's environment gains.
    pub environment: Vec<(String, OsString)>,
    /// The MCP servers the harness sees: the role's, by name.
    pub mcp_servers: Vec<String>,
    /// The servers of the user's own harness configuration the runtime home leaves out.
    pub mcp_hidden: Vec<String>,
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
    find_on(name, std::env::var_os("PATH").as_deref())
}

/// The first executable file named `name` in the absolute folders of `path`.
pub fn find_on(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?).filter(|folder| folder.is_absolute()).map(|folder| folder.join(name)).find(
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

/// The user's home and the folders their environment moves.
struct UserEnvironment {
    home: PathBuf,
    config_folder: Option<PathBuf>,
    xdg_config: Option<PathBuf>,
    acompose_home: PathBuf,
}

impl UserEnvironment {
    fn read(layout: &Layout, acompose_home: &Home) -> Option<UserEnvironment> {
        let home = std::env::home_dir().filter(|home| !home.as_os_str().is_empty())?;
        let home = home.canonicalize().unwrap_or(home);
        let acompose_home = acompose_home.canonicalize().unwrap_or_else(|_| acompose_home.to_path_buf());
        let variable = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        Some(UserEnvironment {
            home,
            config_folder: layout.config_variable.and_then(|config| variable(config.name)),
            xdg_config: variable("XDG_CONFIG_HOME"),
            acompose_home,
        })
    }

    fn places(&self) -> runtime_home::UserPlaces<'_> {
        runtime_home::UserPlaces {
            home: &self.home,
            config_folder: self.config_folder.as_deref(),
            xdg_config: self.xdg_config.as_deref(),
            acompose_home: Some(&self.acompose_home),
        }
    }
}

/// The user's entries the runtime home links (see [`runtime_home::carried_links`]),
/// leaving out any path the runtime home itself holds and its record does not own: what
/// the harness made there (before a version that mirrored the home, or in a folder the
/// user does not have) stays the runtime home's own.
fn carried(layout: &Layout, runtime: &Path, user: &UserEnvironment) -> Vec<(String, PathBuf)> {
    let owned: std::collections::BTreeSet<String> = crate::home::projection_record::read_record(runtime)
        .map(|record| record.files.into_iter().collect())
        .unwrap_or_default();
    let mut links = runtime_home::carried_links(layout, &user.places());
    links.retain(|(path, _)| owned.contains(path) || std::fs::symlink_metadata(runtime.join(path)).is_err());
    links
}

pub use crate::delivery::runtime_home::RUNTIME_VARIABLE;

fn environment(
    layout: &Layout,
    role: &str,
    home: &Home,
    runtime: &Path,
    repositories: &[PathBuf],
) -> Vec<(String, OsString)> {
    let mut environment = vec![
        // `~/.agent-compose` may name the runtime home's own bookkeeping folder.
        ("ACOMPOSE_HOME".to_owned(), home.as_os_str().to_owned()),
        (LAUNCH_VARIABLE.to_owned(), OsString::from("1")),
        (ROLE_VARIABLE.to_owned(), OsString::from(role)),
        (RUNTIME_VARIABLE.to_owned(), runtime.as_os_str().to_owned()),
        ("PROJECTS_ROOT".to_owned(), runtime.join(runtime_home::PROJECTS_DIR).into_os_string()),
    ];
    if !layout.keeps_home {
        // The harness reads user skills from the home whatever its variable says: the
        // runtime home stands in for it, showing every entry of the real one by link
        // but the reserved paths.
        environment.push(("HOME".to_owned(), runtime.as_os_str().to_owned()));
        if runtime_home::reserved(layout).iter().any(|path| path.starts_with(".config/")) {
            // A harness that follows XDG would otherwise read the real configuration
            // folder (and the skills in it) wherever the variable points.
            environment.push(("XDG_CONFIG_HOME".to_owned(), runtime.join(".config").into_os_string()));
        }
    }
    if let Ok(ordered) = std::env::join_paths(repositories) {
        environment.push((REPOSITORIES_VARIABLE.to_owned(), ordered));
    }
    if let Some(variable) = layout.config_variable {
        let folder = if variable.relative_to_home.is_empty() {
            runtime.to_path_buf()
        } else {
            runtime.join(variable.relative_to_home)
        };
        environment.retain(|(name, _)| name != variable.name);
        environment.push((variable.name.to_owned(), folder.into_os_string()));
    }
    environment
}

/// Refuses a launch whose working folder shows the harness another role's projection,
/// naming each; `allow` lets it go on.
fn check_sight(request: &LaunchRequest<'_>) -> Result<InSight, HostError> {
    let sight = runtime_home::in_sight(request.cwd, request.layout, request.role);
    if sight.foreign.is_empty() || request.allow_foreign {
        return Ok(sight);
    }
    let named: Vec<String> = sight
        .foreign
        .iter()
        .map(|(folder, role, layouts)| {
            format!("`{}` holds a projection of `{}` ({})", folder.display(), sanitize(role), sanitize(layouts))
        })
        .collect();
    Err(HostError::invalid(
        request.cwd,
        format!(
            "{} launched here would also read another role's context: {}; launch from another folder, `acompose unproject` it, or pass `--allow-foreign-context`",
            request.layout.display_name,
            named.join("; ")
        ),
    ))
}

/// The tier to compose for: `--tier`, else [`TIER_VARIABLE`]; `None` when neither is set.
fn requested_tier(request: &LaunchRequest<'_>) -> Option<String> {
    request.tier.map(str::to_owned).or_else(|| std::env::var(TIER_VARIABLE).ok().filter(|tier| !tier.is_empty()))
}

/// The role's bundle in the home's index when it is at `tier` (any tier when `None`):
/// the bundle and its tier.
fn indexed_bundle(home: &Home, role: &str, tier: Option<&str>) -> Option<(PathBuf, Manifest)> {
    let bundle = crate::delivery::projections::bundle_of_role(home, Path::new(role))?;
    let manifest = read_manifest(&bundle)?;
    (manifest.role.slug == role && tier.is_none_or(|tier| manifest.model_tier == tier)).then_some((bundle, manifest))
}

/// A bundle named on the command line: verified whole (it did not come from this home's
/// convergence) and of `role`.
fn given_bundle(bundle: &Path, role: &str) -> Result<(PathBuf, Manifest), HostError> {
    let bundle = bundle.canonicalize().map_err(|error| {
        HostError::invalid(
            bundle,
            format!("cannot open `{}`: {}", bundle.display(), crate::compose::load::error_kind(&error)),
        )
    })?;
    crate::compose::bundle::verify_directory(&bundle).map_err(|problems| {
        let shown: Vec<String> = problems.iter().take(5).map(|problem| sanitize(problem)).collect();
        HostError::invalid(&bundle, format!("`{}` is not a valid bundle: {}", bundle.display(), shown.join("; ")))
    })?;
    let manifest = read_manifest(&bundle)
        .ok_or_else(|| HostError::invalid(&bundle, format!("cannot read the manifest of `{}`", bundle.display())))?;
    if manifest.role.slug != role {
        return Err(HostError::invalid(
            &bundle,
            format!(
                "`{}` is a bundle of `{}`, not of `{}`",
                bundle.display(),
                sanitize(&manifest.role.slug),
                sanitize(role)
            ),
        ));
    }
    Ok((bundle, manifest))
}

pub(crate) fn read_manifest(bundle: &Path) -> Option<Manifest> {
    let bytes = crate::compose::parted::manifest_bytes(bundle).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Converges the host, finds or composes the role's bundle and projects it into the
/// role's runtime home (unless the runtime home already shows it).
pub fn prepare(request: &LaunchRequest<'_>, progress: &dyn Progress) -> Result<Prepared, HostError> {
    refuse_nested()?;
    let layout = request.layout;
    let found = match request.path_variable {
        Some(path) => find_on(layout.binary, Some(path)),
        None => find_on_path(layout.binary),
    };
    let program = found.ok_or_else(|| {
        HostError::invalid(
            "",
            format!(
                "`{}` ({}) is not on `PATH`; install it or add its folder to `PATH`",
                layout.binary, layout.display_name
            ),
        )
    })?;
    let sight = check_sight(request)?;
    if let BareRun::Converged { converger, .. } = converge_home(request.home, request.projects, progress)? {
        drop(converger);
    }
    let tier = requested_tier(request);
    let given = request.bundle.map(|bundle| given_bundle(bundle, request.role)).transpose()?;
    let (bundle, manifest, model) = match given.or_else(|| indexed_bundle(request.home, request.role, tier.as_deref()))
    {
        Some((bundle, manifest)) => (bundle, manifest, None),
        None => {
            let tier = tier.unwrap_or_else(|| DEFAULT_TIER.to_owned());
            let (bundle, model) = compose(request, &tier, progress)?;
            let manifest = read_manifest(&bundle).ok_or_else(|| {
                HostError::environment(&bundle, format!("cannot read the manifest of `{}`", bundle.display()))
            })?;
            (bundle, manifest, Some(model))
        }
    };
    let runtime = request.home.runtime().join(runtime_home::name(layout, request.role));
    // What the harness wrote to its launch copy goes back to the user's file before the
    // copy is made again from it.
    runtime_home::carry_back(&runtime)?;
    runtime_home::retire_old_projects_root(&runtime)?;
    let user = UserEnvironment::read(layout, request.home);
    let mut links = user.as_ref().map(|user| carried(layout, &runtime, user)).unwrap_or_default();
    let mcp = match &user {
        Some(user) => runtime_home::mcp_file(layout, &manifest.mcp_servers, &user.places(), &mut links)?,
        None => None,
    };
    let projection = project_runtime(layout, &bundle, &runtime, &links, mcp.as_ref())?;
    if let Some(file) = &mcp {
        keep_private(&runtime.join(file.path))?;
    }
    runtime_home::remember_copy(&runtime, mcp.as_ref())?;
    crate::delivery::projections::register_runtime(request.home, &runtime, &bundle, request.role)?;
    let locations: Vec<String> = manifest
        .sources
        .iter()
        .filter(|source| source.category != "person-package")
        .map(|source| source.location.clone())
        .collect();
    let repositories = runtime_home::isolate_projects(&runtime, request.projects, &locations)?;
    let environment = environment(layout, request.role, request.home, &runtime, &repositories);
    let skills = manifest.content.iter().filter(|entry| entry.path.ends_with("/SKILL.md")).count();
    Ok(Prepared {
        model,
        role: request.role.to_owned(),
        tier: manifest.model_tier.clone(),
        bundle,
        runtime,
        projection,
        skills,
        sight,
        repositories,
        program,
        environment,
        mcp_servers: manifest.mcp_servers.iter().map(|server| server.name.clone()).collect(),
        mcp_hidden: mcp.map(|file| file.hidden).unwrap_or_default(),
    })
}

/// Composes the role's bundle at `tier` into the runtime bundles folder.
fn compose(
    request: &LaunchRequest<'_>,
    tier: &str,
    progress: &dyn Progress,
) -> Result<(PathBuf, PersonModel), HostError> {
    let config = read_config(request.home, progress)?;
    let mut converger = Converger::default();
    let bundles = request.home.runtime_bundles();
    converger.compose_role(
        request.home,
        request.projects,
        &config,
        &RoleRequest { role: request.role, tier, bundles: &bundles },
        progress,
    )
}

/// Projects `bundle` into the runtime home, swapping the previous bundle out in one
/// transaction; nothing when the runtime home already shows it, intact, with the same
/// carried files.
fn project_runtime(
    layout: &'static Layout,
    bundle: &Path,
    runtime: &Path,
    links: &[(String, PathBuf)],
    mcp: Option<&runtime_home::McpFile>,
) -> Result<Option<Report>, HostError> {
    std::fs::create_dir_all(runtime).map_err(|error| {
        HostError::environment(
            runtime,
            format!("cannot create `{}`: {}", runtime.display(), crate::compose::load::error_kind(&error)),
        )
    })?;
    let mcp_file = mcp.map(|file| (file.path, file.bytes.as_slice()));
    if shows_already(runtime, bundle, links) && mcp_file.is_none_or(|(path, bytes)| holds(runtime, path, bytes)) {
        return Ok(None);
    }
    let request = projection::Request {
        bundle,
        layout,
        scope: Scope::Home,
        target: runtime,
        mode: Mode::Link,
        extra_links: links,
        mcp_file,
        git: projection::GitExclusion::LeaveAlone,
    };
    projection::project(&request, &mut NoFaults).map(Some).inspect_err(|_| {
        // A runtime home the failed projection left empty is removed; one with a previous
        // projection was restored by the transaction and stays.
        let _ = std::fs::remove_dir(runtime);
    })
}

/// Makes the runtime home's harness configuration (your own file's keys, with the role's
/// servers) readable by its owner alone, as the file it is made from usually is.
#[cfg(unix)]
fn keep_private(path: &Path) -> Result<(), HostError> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|error| {
        HostError::environment(
            path,
            format!("cannot make `{}` private: {}", path.display(), crate::compose::load::error_kind(&error)),
        )
    })
}

#[cfg(not(unix))]
fn keep_private(_path: &Path) -> Result<(), HostError> {
    Ok(())
}

/// Whether the runtime home's file at `path` holds exactly `bytes`.
fn holds(runtime: &Path, path: &str, bytes: &[u8]) -> bool {
    std::fs::read(runtime.join(path)).is_ok_and(|held| held == bytes)
}

/// Whether the runtime home's record shows `bundle` with every owned path in place and
/// the same carried links: read from the record and the links alone, no bundle file.
fn shows_already(runtime: &Path, bundle: &Path, links: &[(String, PathBuf)]) -> bool {
    let Some(record) = crate::home::projection_record::read_record(runtime) else { return false };
    let same_bundle = Path::new(&record.details.bundle_path) == bundle;
    // A carried file the user has since removed leaves a dangling link, which fails the
    // last check; one the user has since made is missing from the record.
    let carried_same = links.iter().all(|(path, target)| {
        record.files.contains(path) && std::fs::read_link(runtime.join(path)).is_ok_and(|link| link == *target)
    });
    same_bundle && carried_same && record.files.iter().all(|path| runtime.join(path).exists())
}

/// The roster of the home's configuration, for a launch's identity card.
pub fn person_model(home: &Home, progress: &dyn Progress) -> Result<PersonModel, HostError> {
    let config = read_config(home, progress)?;
    let mut converger = Converger::default();
    converger.person_model(home, &config, progress)
}

/// Starts the harness as a child of this process, in the current folder, with the
/// launch's environment and the terminal's standard streams: the caller waits for it
/// (it stays in this process's group, so the terminal's Ctrl-C reaches it directly),
/// then calls [`finish`].
pub fn spawn(prepared: &Prepared, arguments: &[OsString]) -> Result<std::process::Child, HostError> {
    let mut command = std::process::Command::new(&prepared.program);
    command.args(arguments);
    for (name, value) in &prepared.environment {
        command.env(name, value);
    }
    command.spawn().map_err(|error| {
        HostError::environment(
            &prepared.program,
            format!("cannot start `{}`: {}", prepared.program.display(), crate::compose::load::error_kind(&error)),
        )
    })
}

/// After the harness has exited: what it wrote to its launch copy goes back to the
/// user's own file now, not only at the next run of acompose. The failure, if any.
pub fn finish(prepared: &Prepared) -> Option<HostError> {
    runtime_home::carry_back(&prepared.runtime).err()
}

/// What `gc` did about runtime homes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeCollected {
    /// Runtime homes of roles the roster no longer has, or of the earlier per-bundle
    /// naming.
    pub homes: Vec<PathBuf>,
    /// Bundles a launch composed for another tier that no runtime home shows any more.
    pub bundles: Vec<PathBuf>,
}

/// Removes (or, with `dry_run`, lists) the runtime homes of roles the home's roster no
/// longer has and those of the earlier per-bundle naming, then the launch bundles no
/// remaining runtime home shows. Takes the home lock. A roster that cannot be read
/// removes no runtime home of the current naming.
pub fn collect_runtime(home: &Home, dry_run: bool, progress: &dyn Progress) -> Result<RuntimeCollected, HostError> {
    if !home.runtime().is_dir() {
        return Ok(RuntimeCollected::default());
    }
    let roles: std::collections::BTreeSet<String> = match person_model(home, progress) {
        Ok(model) => model.roles.iter().map(|role| role.slug.clone()).collect(),
        // Every role name: only the earlier naming is removed.
        Err(_) => return collect_with(home, None, dry_run),
    };
    collect_with(home, Some(&roles), dry_run)
}

fn collect_with(
    home: &Home,
    roles: Option<&std::collections::BTreeSet<String>>,
    dry_run: bool,
) -> Result<RuntimeCollected, HostError> {
    let _lock = crate::home::transaction::lock(home, crate::home::LOCK_TIMEOUT)?;
    let every_role = std::collections::BTreeSet::new();
    let mut homes = runtime_home::unused(home, roles.unwrap_or(&every_role));
    if roles.is_none() {
        homes.retain(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(old_naming));
    }
    let failed = |path: &Path, error: std::io::Error| {
        HostError::environment(
            path,
            format!("cannot remove `{}`: {}", path.display(), crate::compose::load::error_kind(&error)),
        )
    };
    if !dry_run {
        for runtime in &homes {
            std::fs::remove_dir_all(runtime).map_err(|error| failed(runtime, error))?;
            crate::delivery::projections::unregister(home, runtime)?;
        }
    }
    let shown: std::collections::BTreeSet<String> = crate::delivery::projections::showing(home).into_iter().collect();
    let mut bundles: Vec<PathBuf> = std::fs::read_dir(home.runtime_bundles())
        .map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path()).collect())
        .unwrap_or_default();
    bundles.retain(|bundle| {
        bundle.file_name().and_then(|name| name.to_str()).is_some_and(|id| id.len() == 16 && !shown.contains(id))
    });
    bundles.sort();
    if !dry_run {
        for bundle in &bundles {
            std::fs::remove_dir_all(bundle).map_err(|error| failed(bundle, error))?;
        }
    }
    Ok(RuntimeCollected { homes, bundles })
}

/// `<harness>-<role>-<16 hex digits>`: a runtime home of the earlier per-bundle naming.
fn old_naming(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(_, id)| id.len() == 16 && id.bytes().all(|byte| byte.is_ascii_hexdigit()))
}
