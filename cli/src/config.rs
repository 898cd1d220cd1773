//! `acompose config show [--json]` (every resolved setting and where it came from) and
//! `acompose config validate [FILE] [--json]` (every problem of a configuration file).
//! The resolution and the reading are the host's (`acompose_driver::home::settings`,
//! `acompose_driver::home`); this module prints them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use acompose_driver::Findings;
use acompose_driver::compose::load::{Location, label_of};
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::host_config::{CONFIG_FILE, Destination, LoadPoint};
use acompose_driver::home::read_config_file;
use acompose_driver::home::settings::{self, Environment, Flags, Origin, Setting, Settings};

use crate::terminal::{Terminal, count_summary, diagnostics_json, render_diagnostics, report_error};
use crate::{SourceArgs, exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print every resolved setting and where it came from (flag, environment, file and
    /// line, or default).
    Show(ShowArgs),
    /// Check a configuration file (default: `<home>/agent-compose.yaml`) and print every
    /// problem.
    Validate(ValidateArgs),
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Show the settings as a command given these flags would resolve them.
    #[command(flatten)]
    pub source: SourceArgs,
    /// The folder `owner/repo` paths resolve under, as a command given it would see it.
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// Print JSON (`acompose.config.v1`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The configuration file to check (default: `<home>/agent-compose.yaml`).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print the diagnostics as JSON (`acompose.diagnostics.v1`).
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: ConfigArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    match args.command {
        ConfigCommand::Show(show) => run_show(&show, home, terminal),
        ConfigCommand::Validate(validate) => run_validate(&validate, home, terminal),
    }
}

/// One row of `config show`: the key, its value as text and as JSON, and its origin.
struct Row {
    key: &'static str,
    text: String,
    json: serde_json::Value,
    origin: Origin,
}

fn location_text(location: &Location) -> String {
    match location {
        Location::Embedded => acompose_driver::compose::load::EMBEDDED.to_owned(),
        Location::Directory(path) => label_of(path),
    }
}

fn row<T>(key: &'static str, setting: &Setting<T>, text: String, json: serde_json::Value) -> Row {
    Row { key, text, json, origin: setting.origin.clone() }
}

fn load_points_row(key: &'static str, points: Option<&Vec<LoadPoint>>, origin: Origin) -> Row {
    let Some(points) = points.filter(|points| !points.is_empty()) else {
        return Row { key, text: "none".to_owned(), json: serde_json::json!({}), origin: Origin::Default };
    };
    let mut map = serde_json::Map::new();
    let mut text = Vec::new();
    for point in points {
        let value = match &point.destination {
            Destination::Default => "true".to_owned(),
            Destination::Path(path) => path.clone(),
            Destination::Off => "off".to_owned(),
        };
        text.push(format!("{}: {value}", point.harness));
        map.insert(point.harness.clone(), serde_json::Value::String(value));
    }
    Row { key, text: text.join(", "), json: serde_json::Value::Object(map), origin }
}

fn rows(settings: &Settings) -> Vec<Row> {
    let from_file = |offset: Option<usize>| match (&settings.config_file, offset) {
        (Some(file), Some(offset)) => Origin::File { path: file.path.clone(), line: file.line_of(offset) },
        _ => Origin::Default,
    };
    let mut rows = Vec::new();
    if let Some(home) = &settings.home {
        let path = home.value.display().to_string();
        rows.push(row("home", home, path.clone(), serde_json::Value::String(path)));
    }
    let person = location_text(&settings.person_source.value);
    rows.push(row("person_source", &settings.person_source, person.clone(), person.into()));
    let libraries: Vec<String> = settings.personality_libraries.value.iter().map(location_text).collect();
    let text = if libraries.is_empty() { "none".to_owned() } else { libraries.join(", ") };
    rows.push(row("personality_libraries", &settings.personality_libraries, text, libraries.into()));
    let policy = match settings.person_policy.value {
        acompose_driver::engine::host_config::PersonPolicy::Default => "default",
        acompose_driver::engine::host_config::PersonPolicy::ExternalOnly => "external-only",
    };
    rows.push(row("person_policy", &settings.person_policy, policy.to_owned(), policy.into()));
    let root = settings.projects_root.value.display().to_string();
    rows.push(row("projects_root", &settings.projects_root, root.clone(), root.into()));
    let skill_policy = settings.skill_policy.value.name();
    rows.push(row("skill_policy", &settings.skill_policy, skill_policy.to_owned(), skill_policy.into()));
    let history = settings.config.bundle_history();
    let history_origin = from_file(settings.config.bundle_history_span.map(|span| span.offset));
    rows.push(Row { key: "bundle_history", text: history.to_string(), json: history.into(), origin: history_origin });
    let context: Vec<String> = settings.config.operating_context.iter().map(|(path, _)| path.clone()).collect();
    let context_origin = from_file(settings.config.operating_context.first().map(|(_, span)| span.offset));
    let text = if context.is_empty() { "none".to_owned() } else { context.join(", ") };
    rows.push(Row { key: "operating_context", text, json: context.into(), origin: context_origin });
    for (key, points) in
        [("load_points", &settings.config.load_points), ("skill_load_points", &settings.config.skill_load_points)]
    {
        let origin = from_file(points.as_ref().and_then(|points| points.first()).map(|point| point.span.offset));
        rows.push(load_points_row(key, points.as_ref(), origin));
    }
    rows
}

fn run_show(args: &ShowArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let mut flags = args.source.flags(home);
    flags.projects_root.clone_from(&args.projects_root);
    let settings = match settings::resolve(&flags) {
        Ok(settings) => settings,
        Err(error) => return report_error(&error, terminal),
    };
    let rows = rows(&settings);
    let configuration = settings.config_path();
    let found = settings.config_file.is_some();
    if args.json {
        let mut map = serde_json::Map::new();
        for row in &rows {
            let mut origin = serde_json::Map::new();
            origin.insert("kind".to_owned(), row.origin.kind().into());
            if row.origin != Origin::Default {
                origin.insert("from".to_owned(), row.origin.describe().into());
            }
            map.insert(row.key.to_owned(), serde_json::json!({ "value": row.json, "origin": origin }));
        }
        let document = serde_json::json!({
            "format": "acompose.config.v1",
            "configuration": {
                "path": configuration.as_ref().map(|path| path.display().to_string()),
                "found": found,
            },
            "settings": map,
        });
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)));
    } else {
        let mut text = String::new();
        let file = match &configuration {
            Some(path) if found => format!("{} (read)", path.display()),
            Some(path) => format!("{} (absent: every key is its default)", path.display()),
            None => "none (no home)".to_owned(),
        };
        for row in &rows {
            let _ = writeln!(text, "{:<22} {}  ({})", row.key, sanitize(&row.text), sanitize(&row.origin.describe()));
            if row.key == "home" {
                let _ = writeln!(text, "{:<22} {}", "configuration", sanitize(&file));
            }
        }
        if settings.home.is_none() {
            let _ = writeln!(text, "{:<22} {}", "configuration", sanitize(&file));
        }
        print_stdout(&text);
    }
    if settings.refusal().is_some() {
        crate::terminal::warn(
            terminal,
            &format!(
                "`person_policy: external-only` ({}) and no external person source: every command that loads a roster refuses to run; set `person_source` or pass `--person-source DIR`",
                sanitize(&settings.person_policy.origin.describe())
            ),
        );
    }
    exit::SUCCESS
}

fn run_validate(args: &ValidateArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let path = match &args.file {
        Some(file) => file.clone(),
        None => {
            let flags = Flags { home: home.map(Path::to_path_buf), ..Flags::default() };
            match settings::home_setting(&flags, &Environment::current()) {
                Some(home) => home.value.join(CONFIG_FILE),
                None => {
                    print_stderr("error: cannot find a home directory; pass `--home DIR` or a FILE\n");
                    return exit::ENVIRONMENT;
                }
            }
        }
    };
    let file = match read_config_file(&path) {
        Ok(Some(file)) => file,
        Ok(None) if args.file.is_some() => {
            print_stderr(&format!("error: `{}` does not exist\n", sanitize(&path.display().to_string())));
            return exit::INVALID;
        }
        Ok(None) => {
            if !terminal.quiet {
                print_stdout(&format!(
                    "no configuration at `{}`: every setting is its default\n",
                    sanitize(&path.display().to_string())
                ));
            }
            return exit::SUCCESS;
        }
        Err(error) => return report_error(&error, terminal),
    };
    let mut diagnostics = file.parsed.diagnostics.clone();
    let config = &file.parsed.value;
    if config.person_policy == acompose_driver::engine::host_config::PersonPolicy::ExternalOnly
        && config.person_source.as_ref().is_none_or(|(source, _)| source == acompose_driver::compose::load::EMBEDDED)
    {
        diagnostics
            .push(acompose_driver::engine::host_config::external_only_refusal(&file.label, config.person_policy_span));
    }
    let findings: Findings = file.findings_of(diagnostics);
    let has_errors = findings.has_errors();
    if args.json {
        print_stdout(&String::from_utf8_lossy(&diagnostics_json(&findings.diagnostics, &|path| {
            findings.text_of(path)
        })));
    } else if !findings.is_empty() && (has_errors || !terminal.quiet) {
        let shown = crate::terminal::visible(&findings.diagnostics, *terminal);
        print_stderr(&render_diagnostics(&shown, terminal.stderr, &|path| findings.text_of(path)));
    }
    let label = sanitize(&file.label);
    if has_errors {
        if !args.json {
            print_stderr(&format!("error: `{label}` is invalid ({})\n", count_summary(&findings.diagnostics)));
        }
        return exit::INVALID;
    }
    if !args.json && !terminal.quiet {
        print_stdout(&format!("`{label}` is valid ({})\n", count_summary(&findings.diagnostics)));
    }
    exit::SUCCESS
}
