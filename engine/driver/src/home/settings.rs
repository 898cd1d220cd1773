//! One resolution of the settings every command reads: home, the host configuration, the
//! person source and its libraries, the person policy, the projects root and the skill
//! policy, each with where it came from. A flag overrides the environment, the
//! environment overrides the file (`<home>/agent-compose.yaml`), the file overrides the
//! default. Reads the configuration and the environment; writes nothing.

use std::ffi::OsString;
use std::path::PathBuf;

use acompose_engine::host_config::{CONFIG_FILE, HostConfig, PersonPolicy};
use acompose_engine::skill_rules::SkillPolicy;

use crate::error::{Findings, HostError};
use crate::home::Home;
use crate::home::read::{EMBEDDED, Location, Selection};
use crate::home::{ConfigFile, config_path, read_config_checked};

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag, by its spelling (`--person-source`).
    Flag(&'static str),
    /// An environment variable, by its name.
    Environment(&'static str),
    /// A key of the host configuration, with its file and line.
    File { path: PathBuf, line: usize },
    /// Nothing set it.
    Default,
}

impl Origin {
    /// A short name of the kind of origin: `flag`, `environment`, `file`, `default`.
    pub fn kind(&self) -> &'static str {
        match self {
            Origin::Flag(_) => "flag",
            Origin::Environment(_) => "environment",
            Origin::File { .. } => "file",
            Origin::Default => "default",
        }
    }

    /// The origin as a person reads it: `--person-source`, `$PROJECTS_ROOT`,
    /// `/home/me/.agent-compose/agent-compose.yaml:3`, `default`.
    pub fn describe(&self) -> String {
        match self {
            Origin::Flag(flag) => (*flag).to_owned(),
            Origin::Environment(name) => format!("${name}"),
            Origin::File { path, line } => format!("{}:{line}", path.display()),
            Origin::Default => "default".to_owned(),
        }
    }
}

/// One resolved value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Setting<T> {
    fn new(value: T, origin: Origin) -> Self {
        Setting { value, origin }
    }
}

/// What the command line says; `None` or empty leaves a setting to the file or default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub home: Option<PathBuf>,
    pub person_source: Option<String>,
    pub personality_libraries: Vec<String>,
    pub projects_root: Option<PathBuf>,
    /// `--strict` (or another spelling of a skill policy).
    pub skill_policy: Option<SkillPolicy>,
}

/// What the process environment says: `$ACOMPOSE_HOME`, `$PROJECTS_ROOT` and the user's
/// home folder. A value of its own so a test can resolve without the real environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    pub acompose_home: Option<OsString>,
    pub projects_root: Option<OsString>,
    pub user_home: Option<PathBuf>,
}

impl Environment {
    /// The process's environment (empty values count as unset).
    pub fn current() -> Self {
        let variable = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        Environment {
            acompose_home: variable("ACOMPOSE_HOME"),
            projects_root: variable("PROJECTS_ROOT"),
            user_home: std::env::home_dir().filter(|home| !home.as_os_str().is_empty()),
        }
    }
}

/// Every setting a command reads, resolved once.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `None` when no home can be named (no flag, variable or user home).
    pub home: Option<Setting<Home>>,
    /// The host configuration file, read when home has one.
    pub config_file: Option<ConfigFile>,
    /// The configuration as written (the default when there is no file).
    pub config: HostConfig,
    pub person_source: Setting<Location>,
    pub personality_libraries: Setting<Vec<Location>>,
    pub person_policy: Setting<PersonPolicy>,
    pub projects_root: Setting<PathBuf>,
    pub skill_policy: Setting<SkillPolicy>,
}

/// Resolves every setting from the flags, the process environment and the home's
/// configuration. A configuration with errors stops here with every diagnostic.
pub fn resolve(flags: &Flags) -> Result<Settings, HostError> {
    resolve_with(flags, &Environment::current())
}

/// [`resolve`] with a given environment.
pub fn resolve_with(flags: &Flags, environment: &Environment) -> Result<Settings, HostError> {
    let home = home_setting(flags, environment);
    let config_file = match &home {
        Some(home) => read_config_checked(&home.value)?,
        None => None,
    };
    let config = config_file.as_ref().map(|file| file.parsed.value.clone()).unwrap_or_default();
    let home_folder = home.as_ref().map_or_else(|| Home::at(PathBuf::new()), |home| home.value.clone());
    let from_file = |offset: usize| match &config_file {
        Some(file) => Origin::File { path: file.path.clone(), line: file.line_of(offset) },
        None => Origin::Default,
    };
    let in_home = |text: &str| {
        if text == EMBEDDED { Location::Embedded } else { Location::Directory(config_path(text, &home_folder)) }
    };
    let (person_source, personality_libraries) = person_settings(flags, &config, &from_file, &in_home);
    let person_policy = match config.person_policy_span {
        Some(span) => Setting::new(config.person_policy, from_file(span.offset)),
        None => Setting::new(PersonPolicy::Default, Origin::Default),
    };
    let projects_root = projects_setting(flags, environment, &config, &home_folder, &from_file);
    let skill_policy = match (flags.skill_policy, config.skill_policy_span) {
        (Some(policy), _) => Setting::new(policy, Origin::Flag("--strict")),
        (None, Some(span)) => Setting::new(config.skill_policy, from_file(span.offset)),
        (None, None) => Setting::new(SkillPolicy::default(), Origin::Default),
    };
    Ok(Settings {
        home,
        config_file,
        config,
        person_source,
        personality_libraries,
        person_policy,
        projects_root,
        skill_policy,
    })
}

/// Home alone: `--home`, `$ACOMPOSE_HOME`, `~/.agent-compose`; `None` when none can be named.
pub fn home_setting(flags: &Flags, environment: &Environment) -> Option<Setting<Home>> {
    if let Some(home) = &flags.home {
        return Some(Setting::new(Home::at(home), Origin::Flag("--home")));
    }
    if let Some(home) = &environment.acompose_home {
        return Some(Setting::new(Home::at(home), Origin::Environment("ACOMPOSE_HOME")));
    }
    environment.user_home.as_ref().map(|user| Setting::new(Home::at(user.join(".agent-compose")), Origin::Default))
}

/// The person source and its libraries. Libraries follow the person source: a
/// `--person-source` flag takes its libraries from the flags alone, since the file's were
/// chosen for the file's source.
fn person_settings(
    flags: &Flags,
    config: &HostConfig,
    from_file: &dyn Fn(usize) -> Origin,
    in_home: &dyn Fn(&str) -> Location,
) -> (Setting<Location>, Setting<Vec<Location>>) {
    let person = match (&flags.person_source, &config.person_source) {
        (Some(text), _) => Setting::new(Location::parse(text), Origin::Flag("--person-source")),
        (None, Some((text, span))) => Setting::new(in_home(text), from_file(span.offset)),
        (None, None) => Setting::new(Location::Embedded, Origin::Default),
    };
    let libraries = if !flags.personality_libraries.is_empty() {
        let locations = flags.personality_libraries.iter().map(|text| Location::parse(text)).collect();
        Setting::new(locations, Origin::Flag("--personality-library"))
    } else if flags.person_source.is_some() || config.personality_libraries.is_empty() {
        Setting::new(Vec::new(), Origin::Default)
    } else {
        let locations = config.personality_libraries.iter().map(|(text, _)| in_home(text)).collect();
        Setting::new(locations, from_file(config.personality_libraries[0].1.offset))
    };
    (person, libraries)
}

/// The projects root: `--projects-root`, `$PROJECTS_ROOT`, `projects_root`, `~/projects`.
fn projects_setting(
    flags: &Flags,
    environment: &Environment,
    config: &HostConfig,
    home: &Home,
    from_file: &dyn Fn(usize) -> Origin,
) -> Setting<PathBuf> {
    if let Some(root) = &flags.projects_root {
        return Setting::new(root.clone(), Origin::Flag("--projects-root"));
    }
    if let Some(root) = &environment.projects_root {
        return Setting::new(PathBuf::from(root), Origin::Environment("PROJECTS_ROOT"));
    }
    if let Some((text, span)) = &config.projects_root {
        let path = match (text.strip_prefix("~/"), &environment.user_home) {
            (Some(rest), Some(user)) => user.join(rest),
            _ => config_path(text, home),
        };
        return Setting::new(path, from_file(span.offset));
    }
    let root = environment.user_home.as_ref().map_or_else(|| PathBuf::from("projects"), |user| user.join("projects"));
    Setting::new(root, Origin::Default)
}

impl Settings {
    /// Home, or the error of a command that needs one.
    pub fn home(&self) -> Result<&Home, HostError> {
        self.home.as_ref().map(|home| &home.value).ok_or_else(|| {
            HostError::environment("", "cannot find a home directory; pass `--home DIR` or set `ACOMPOSE_HOME`")
        })
    }

    /// The home's private overlays in order, and home's folder of them when they are
    /// listed from it (none without a home).
    pub fn overlay_paths(&self) -> (Vec<PathBuf>, Option<PathBuf>) {
        match &self.home {
            Some(home) => crate::home::overlay_paths(&home.value, &self.config),
            None => (Vec::new(), None),
        }
    }

    /// The configuration file's path (it need not exist).
    pub fn config_path(&self) -> Option<PathBuf> {
        self.home.as_ref().map(|home| home.value.join(CONFIG_FILE))
    }

    /// The person source and libraries to load, with the Core rules for the embedded
    /// default (or when `core_rules` asks for them). Under `person_policy: external-only`
    /// the embedded default is refused: the one refusal every roster-loading command
    /// gives.
    pub fn selection(&self, core_rules: bool) -> Result<Selection, HostError> {
        self.refusal().map_or_else(
            || {
                let person = self.person_source.value.clone();
                Ok(Selection {
                    core_rules: core_rules || person == Location::Embedded,
                    person,
                    libraries: self.personality_libraries.value.clone(),
                })
            },
            |findings| Err(HostError::Diagnostics { subject: crate::home::EXTERNAL_ONLY_SUBJECT.to_owned(), findings }),
        )
    }

    /// The external-only refusal, when the policy refuses the selected source.
    pub fn refusal(&self) -> Option<Findings> {
        if self.person_policy.value != PersonPolicy::ExternalOnly || self.person_source.value != Location::Embedded {
            return None;
        }
        let label = self.config_file.as_ref().map(|file| file.label.clone()).unwrap_or_default();
        let diagnostic = acompose_engine::host_config::external_only_refusal(&label, self.config.person_policy_span);
        Some(match &self.config_file {
            Some(file) => file.findings_of(vec![diagnostic]),
            None => Findings::collect(vec![diagnostic], |_| None),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn environment(home: &Path) -> Environment {
        Environment { acompose_home: Some(home.as_os_str().to_owned()), projects_root: None, user_home: None }
    }

    #[test]
    fn a_flag_overrides_the_environment_which_overrides_the_file() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = temporary.path();
        std::fs::write(home.join(CONFIG_FILE), "person_source: pkg\nprojects_root: /from/file\nskill_policy: skip\n")
            .expect("config");
        let settings = resolve_with(&Flags::default(), &environment(home)).expect("settings");
        assert_eq!(settings.person_source.value, Location::Directory(home.join("pkg")));
        assert_eq!(settings.person_source.origin, Origin::File { path: home.join(CONFIG_FILE), line: 1 });
        assert_eq!(settings.projects_root.value, PathBuf::from("/from/file"));
        assert_eq!(settings.skill_policy.value, SkillPolicy::Skip);
        let mut with_variable = environment(home);
        with_variable.projects_root = Some("/from/variable".into());
        let settings = resolve_with(&Flags::default(), &with_variable).expect("settings");
        assert_eq!(settings.projects_root.origin, Origin::Environment("PROJECTS_ROOT"));
        let flags = Flags {
            projects_root: Some("/from/flag".into()),
            person_source: Some("other".to_owned()),
            ..Flags::default()
        };
        let settings = resolve_with(&flags, &with_variable).expect("settings");
        assert_eq!(settings.projects_root.value, PathBuf::from("/from/flag"));
        assert_eq!(settings.person_source.value, Location::Directory("other".into()));
        assert_eq!(settings.person_source.origin, Origin::Flag("--person-source"));
    }

    #[test]
    fn external_only_refuses_the_embedded_default_unless_a_flag_names_a_source() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = temporary.path();
        std::fs::write(home.join(CONFIG_FILE), "person_policy: external-only\n").expect("config");
        let settings = resolve_with(&Flags::default(), &environment(home)).expect("settings");
        let Err(HostError::Diagnostics { findings, .. }) = settings.selection(false) else { panic!("refused") };
        assert_eq!(findings.diagnostics[0].code, "config-external-only");
        let flags = Flags { person_source: Some("pkg".to_owned()), ..Flags::default() };
        let settings = resolve_with(&flags, &environment(home)).expect("settings");
        assert!(settings.selection(false).is_ok());
    }

    #[test]
    fn without_a_home_the_defaults_apply() {
        let settings = resolve_with(&Flags::default(), &Environment::default()).expect("settings");
        assert!(settings.home.is_none());
        assert_eq!(settings.person_source.value, Location::Embedded);
        assert_eq!(settings.projects_root.value, PathBuf::from("projects"));
        assert!(settings.home().is_err());
    }
}
