//! `acompose compose REQUEST.kdl`: the host reads the request, its person source and
//! catalogues and resolves one bundle, then materializes it (staging → verify → rename);
//! this module prints the result.

use std::path::{Path, PathBuf};

use acompose_driver::Sources;
use acompose_driver::compose::bundle::Materialized;
use acompose_driver::compose::compose_cache;
use acompose_driver::compose::placement::{Target, destination, place};
use acompose_driver::compose::request::{Prepared, RequestDefaults};
use acompose_driver::convergence::Stats;
use acompose_driver::engine::Bundle;
use acompose_driver::engine::render;
use acompose_driver::home::settings::{self, Flags};

use crate::exit;
use crate::output::CommandOutput;
use crate::terminal::{Terminal, ended_by_error, ended_by_error_as, report_error, stats_line, warnings_text};

#[derive(Debug, clap::Args)]
pub struct ComposeArgs {
    /// The request file (`request.kdl`).
    pub request: PathBuf,
    /// Where bundles are written (default: `<home>/bundles`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The folder `owner/repo` paths of trusted roots resolve under (default:
    /// `$PROJECTS_ROOT`, else `projects_root` in `agent-compose.yaml`, else `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// Also print every decision of the trace.
    #[arg(long)]
    pub explain: bool,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print files stat'ed, read, hashed and written, and queries executed and reused.
    #[arg(long)]
    pub stats: bool,
    /// The content store the bundle's skills link into (default: the home's store when
    /// the output is inside the home, else `<out>/.store`).
    #[arg(long, value_name = "DIR", conflicts_with = "standalone")]
    pub store: Option<PathBuf>,
    /// Write real copies of every skill into the bundle instead of linking a store.
    #[arg(long)]
    pub standalone: bool,
    /// Make every Agent Skills finding about a delivered skill an error (skill policy
    /// `strict`): nothing is written.
    #[arg(long)]
    pub strict: bool,
    /// After `--`: a command to run once the bundle is written, with `AGENT_COMPOSE_BUNDLE`,
    /// `AGENT_COMPOSE_BUNDLE_ID`, `AGENT_COMPOSE_ROLE`, `AGENT_COMPOSE_IDENTITY_NAME` and
    /// `AGENT_COMPOSE_IDENTITY_PRONOUNS` set; the report goes to stderr and `compose` exits
    /// with the command's code.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// Where one composition reads and writes: its flags and the environment, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The folder the request and every relative path here are found under; empty for
    /// the process's own working directory.
    pub working_directory: PathBuf,
    /// The acompose home, when one could be named (it need not exist).
    pub home: Option<PathBuf>,
    /// Where bundles are written.
    pub out: PathBuf,
    /// The folder `owner/repo` paths of trusted roots resolve under.
    pub projects: PathBuf,
    /// What a request that names no person source or skill policy composes with: the
    /// home's settings.
    pub defaults: RequestDefaults,
}

pub(crate) fn run(args: ComposeArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let flags =
        Flags { home: home.map(Path::to_path_buf), projects_root: args.projects_root.clone(), ..Flags::default() };
    let settings = match settings::resolve(&flags) {
        Ok(settings) => settings,
        Err(error) => return report_error(&error, terminal),
    };
    let home = settings.home().cloned();
    let out = match (&args.out, &home) {
        (Some(out), _) => out.clone(),
        (None, Ok(home)) => home.bundles(),
        (None, Err(error)) => return report_error(error, terminal),
    };
    let places = Places {
        working_directory: PathBuf::new(),
        home: home.ok().map(|home| home.root().to_path_buf()),
        out,
        projects: settings.projects_root.value.clone(),
        defaults: acompose_driver::compose::request::RequestDefaults::of(&settings),
    };
    let output = compose_output(&args, &places, terminal);
    if args.command.is_empty() {
        return output.print();
    }
    let code = output.print_to_stderr();
    let Some(bundle) = output.bundle().filter(|_| code == exit::SUCCESS) else { return code };
    match acompose_driver::delivery::run_with::run_with_bundle(bundle, &args.command) {
        Ok(code) => code,
        Err(error) => report_error(&error, terminal),
    }
}

/// `compose`: resolves the request, materializes its bundle and returns what the command
/// prints. Paths in `args` and `places` are as given and shown so; they are read and
/// written under `places.working_directory`.
pub fn compose_output(args: &ComposeArgs, places: &Places, terminal: &Terminal) -> CommandOutput {
    let mut output = CommandOutput::default();
    let on_disk = |path: &Path| places.working_directory.join(path);
    let (out, projects) = (on_disk(&places.out), on_disk(&places.projects));
    let home = places.home.as_ref().map(|home| acompose_driver::home::Home::at(on_disk(home)));
    let key = cache_key(args, places, terminal);
    if let Some(warm) = home.as_ref().and_then(|home| compose_cache::lookup(home, &projects, &key)) {
        let mut text = warm.report;
        if args.stats && !args.json {
            text.push_str(&stats_line(&Stats { stated: warm.stated, ..Stats::default() }));
        }
        output.stdout(text);
        output.composed(out.join(&warm.id));
        return output.exit(exit::SUCCESS);
    }
    // Made only now: a warm composition needs no database.
    let mut sources = Sources::in_directory(&places.working_directory);
    let strict = args.strict.then_some(acompose_driver::engine::SkillPolicy::Strict);
    let (prepared, _) = match sources.prepare(&args.request, &places.projects, strict, &places.defaults) {
        Ok(prepared) => prepared,
        Err(error) => return ended_by_error_as(output, &error, terminal, args.json),
    };
    output.stderr(warnings_text(&prepared.warnings, terminal));
    let target = if args.standalone { Target::Standalone } else { Target::Store(args.store.as_deref().map(on_disk)) };
    let materialization = match destination(home.as_ref(), &out, &target).and_then(|to| place(&to, prepared.bundle)) {
        Ok(materialization) => materialization,
        Err(error) => return ended_by_error(output, &error, terminal),
    };
    let materialized = materialization.outcome;
    let id = prepared.bundle.id.clone();
    let (executed, reused) = prepared.queries;
    // A composition that warned is not answered from the cache: its warnings are shown
    // every time.
    let cached = home.as_ref().filter(|_| prepared.warnings.is_empty());
    let repeat = cached.map(|_| render(args, &prepared, &places.out, Materialized::Reused, terminal));
    let mut text = render(args, &prepared, &places.out, materialized, terminal);
    drop(prepared);
    // The database is dropped before the cache is written: what is left is what the
    // loader observed.
    let observations = sources.into_observations();
    let stats = Stats {
        stated: observations.observed.len(),
        read: observations.counters.files_read,
        hashed: observations.counters.files_read,
        written: if materialized == Materialized::New { materialization.written } else { 0 },
        queries_executed: executed,
        queries_reused: reused,
    };
    if let (Some(home), Some(repeat)) = (cached, repeat) {
        let composed = compose_cache::Composed { id: &id, bundle: &out.join(&id), report: &repeat };
        compose_cache::record(home, &projects, &key, observations, &composed);
    }
    if args.stats && !args.json {
        text.push_str(&stats_line(&stats));
    }
    output.stdout(text);
    output.composed(out.join(&id));
    output.exit(exit::SUCCESS)
}

/// Everything that changes what a composition writes or prints.
fn cache_key(args: &ComposeArgs, places: &Places, terminal: &Terminal) -> String {
    let absolute = |path: &Path| {
        std::path::absolute(places.working_directory.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string()
    };
    let store = args.store.as_deref().map(absolute).unwrap_or_default();
    // The home's settings a request may fall back on are part of the key: a changed
    // `person_source` must not be answered with the old bundle.
    let flags = format!(
        "{} {} {} {} {} {:?} {:?}",
        args.explain, args.json, args.standalone, args.strict, terminal.quiet, terminal.stdout, places.defaults
    );
    let (request, out, projects) = (absolute(&args.request), absolute(&places.out), absolute(&places.projects));
    compose_cache::key(&places.working_directory, &[&request, &out, &projects, &store, &flags])
}

/// The report `compose` prints (without the `--stats` line).
fn render(
    args: &ComposeArgs,
    prepared: &Prepared<'_>,
    out: &Path,
    materialized: Materialized,
    terminal: &Terminal,
) -> String {
    let bundle = &prepared.bundle;
    if args.json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            format: &'static str,
            bundle: &'a str,
            status: &'static str,
            path: String,
            selected: usize,
            excluded: usize,
            shadowed: usize,
            delivered: usize,
        }
        let report = Report {
            format: "acompose.compose.v1",
            bundle: &bundle.id,
            status: materialized.name(),
            path: out.join(&bundle.id).display().to_string(),
            selected: bundle.summary.selected,
            excluded: bundle.summary.excluded,
            shadowed: bundle.summary.shadowed,
            delivered: bundle.summary.delivered,
        };
        return String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&report)).into_owned();
    }
    let mut text = format!("bundle {} ({})\n", bundle.id, materialized.name());
    if !terminal.quiet {
        text.push_str(&format!("path   {}\n\n", out.join(&bundle.id).display()));
        let slug = &bundle_role(bundle);
        if let Some(role) = prepared.model.role(slug) {
            text.push_str(&render::identity_card(&prepared.model, role, terminal.stdout));
        }
        text.push('\n');
        text.push_str(&bundle.summary.line());
        text.push('\n');
    }
    if args.explain
        && let Some(trace) = bundle.trace.record()
    {
        text.push('\n');
        for decision in trace.decisions() {
            text.push_str(&format!(
                "{:<9} {:<40} {:<14} {:<22} {}\n",
                decision.outcome.name(),
                decision.subject,
                decision.source,
                decision.cause,
                decision.reason
            ));
        }
    }
    text
}

fn bundle_role(bundle: &Bundle) -> String {
    bundle.trace.record().map(|trace| trace.role.clone()).unwrap_or_default()
}
