//! `acompose compose REQUEST -- COMMAND [ARGS]`: runs a command with a composed bundle's
//! path and identity in its environment, and gives back its exit status.

use std::ffi::OsString;
use std::path::Path;

use crate::error::HostError;

/// The bundle's folder, absolute.
pub const BUNDLE_VARIABLE: &str = "AGENT_COMPOSE_BUNDLE";
/// The bundle's id.
pub const BUNDLE_ID_VARIABLE: &str = "AGENT_COMPOSE_BUNDLE_ID";
/// The bundle's role slug.
pub const ROLE_VARIABLE: &str = "AGENT_COMPOSE_ROLE";
/// The role's identity: name, then pronouns.
pub const NAME_VARIABLE: &str = "AGENT_COMPOSE_IDENTITY_NAME";
pub const PRONOUNS_VARIABLE: &str = "AGENT_COMPOSE_IDENTITY_PRONOUNS";

/// The variables a command run with `bundle` gets, read from its manifest.
pub fn bundle_environment(bundle: &Path) -> Result<Vec<(&'static str, OsString)>, HostError> {
    let (id, manifest, _) = crate::compose::bundle::read_provenance(bundle)?;
    let absolute = std::path::absolute(bundle).unwrap_or_else(|_| bundle.to_path_buf());
    Ok(vec![
        (BUNDLE_VARIABLE, absolute.into_os_string()),
        (BUNDLE_ID_VARIABLE, OsString::from(id)),
        (ROLE_VARIABLE, OsString::from(manifest.role.slug)),
        (NAME_VARIABLE, OsString::from(manifest.identity.name)),
        (PRONOUNS_VARIABLE, OsString::from(manifest.identity.pronouns)),
    ])
}

/// Runs `command` (program, then arguments) with the bundle's variables added to this
/// process's environment, standard streams inherited; its exit code, or 128 + the signal
/// that ended it.
pub fn run_with_bundle(bundle: &Path, command: &[OsString]) -> Result<u8, HostError> {
    let Some((program, arguments)) = command.split_first() else {
        return Err(HostError::invalid("", "no command after `--`"));
    };
    let environment = bundle_environment(bundle)?;
    let status = std::process::Command::new(program).args(arguments).envs(environment).status().map_err(|error| {
        HostError::invalid(
            Path::new(program),
            format!("cannot run `{}`: {}", Path::new(program).display(), crate::compose::load::error_kind(&error)),
        )
    })?;
    if let Some(code) = status.code() {
        return Ok(u8::try_from(code).unwrap_or(1));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            return Ok(u8::try_from(128 + signal).unwrap_or(1));
        }
    }
    Ok(1)
}
