//! Bare `acompose`: host convergence. Resolves home, reads the host configuration,
//! loads and validates the person source, then writes the roster artifact in one
//! transaction under the home lock. A missing or invalid source aborts before anything
//! is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acompose_engine::converge::{CONFIG_FILE, HostConfig, parse_host_config};
use rayon::prelude::*;

use crate::cache;
use crate::estate::{ARTIFACT_DIR, Report, Session};
use crate::load::{EMBEDDED, Location, Observed, Selection, Stat};
use crate::terminal::{Terminal, count_summary, render_diagnostics};
use crate::transaction::{self, NoFaults};
use crate::{exit, print_stderr, print_stdout};

/// How long a convergence waits for another one to finish.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// Resolves home: `--home`, else `$ACOMPOSE_HOME`, else `~/.agent-compose`.
pub fn resolve_home(flag: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = flag {
        return Ok(path.to_path_buf());
    }
    if let Some(value) = std::env::var_os("ACOMPOSE_HOME").filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(value));
    }
    match std::env::home_dir() {
        Some(home) if !home.as_os_str().is_empty() => Ok(home.join(".agent-compose")),
        _ => Err("cannot find a home directory; pass `--home DIR` or set `ACOMPOSE_HOME`".to_owned()),
    }
}

/// Refuses a home that is a symbolic link or not a directory.
fn check_home(home: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(home) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            Err(format!("home `{}` is a symbolic link; pass the real directory", home.display()))
        }
        Ok(metadata) if !metadata.is_dir() => Err(format!("home `{}` is not a directory", home.display())),
        _ => Ok(()),
    }
}

/// Reads and parses `<home>/agent-compose.yaml` when present.
pub fn read_config(home: &Path, terminal: &Terminal) -> Result<HostConfig, u8> {
    let path = home.join(CONFIG_FILE);
    let metadata = match std::fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(HostConfig::default()),
        Err(error) => {
            print_stderr(&format!("error: cannot read `{}`: {}\n", path.display(), crate::load::error_kind(&error)));
            return Err(exit::ENVIRONMENT);
        }
    };
    if metadata.file_type().is_symlink() || !metadata.is_file() {
        print_stderr(&format!("error: `{}` is not a regular file; symbolic links are refused\n", path.display()));
        return Err(exit::INVALID);
    }
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) => {
            print_stderr(&format!("error: cannot read `{}`: {}\n", path.display(), crate::load::error_kind(&error)));
            return Err(exit::ENVIRONMENT);
        }
    };
    let display = path.display().to_string();
    let Ok(text) = String::from_utf8(bytes) else {
        print_stderr(&format!("error: `{display}` is not valid UTF-8\n"));
        return Err(exit::INVALID);
    };
    let parsed = parse_host_config(&text, &display);
    if !parsed.diagnostics.is_empty() {
        let printable = crate::load::printable(&text);
        let text_of = |file: &str| (file == display).then(|| printable.clone());
        print_stderr(&render_diagnostics(&parsed.diagnostics, terminal.stderr, &text_of));
    }
    if parsed.has_errors() {
        print_stderr(&format!("error: `{display}` is invalid ({})\n", count_summary(&parsed.diagnostics)));
        return Err(exit::INVALID);
    }
    Ok(parsed.value)
}

/// The person source a configuration selects; relative paths resolve against home.
pub fn selection_for(config: &HostConfig, home: &Path) -> Selection {
    let resolve = |text: &str| {
        if text == EMBEDDED {
            Location::Embedded
        } else {
            let path = Path::new(text);
            Location::Directory(if path.is_absolute() { path.to_path_buf() } else { home.join(path) })
        }
    };
    let person = config.person_source.as_ref().map_or(Location::Embedded, |(text, _)| resolve(text));
    Selection {
        core_rules: person == Location::Embedded,
        person,
        libraries: config.personality_libraries.iter().map(|(text, _)| resolve(text)).collect(),
    }
}

/// Refuses symbolic links between home and the artifact directory.
pub fn refuse_symlinked_parents(home: &Path, artifact: &Path) -> Result<(), String> {
    let mut current = home.to_path_buf();
    let relative = artifact.strip_prefix(home).unwrap_or(artifact);
    for component in relative.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(format!("`{}` is a symbolic link; refusing to write through it", current.display()));
            }
            Ok(metadata) if !metadata.is_dir() => {
                return Err(format!(
                    "`{}` is not a directory; move it away so the artifact can be written",
                    current.display()
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Flags of bare `acompose`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConvergeArgs {
    /// Print files stat'ed, read, hashed and written, and queries executed and reused.
    #[arg(long)]
    pub stats: bool,
    /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
    /// `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// Print the report as JSON (`acompose.converge.v1`).
    #[arg(long)]
    pub json: bool,
}

/// What one bare run found, for the report.
enum Found<'a> {
    Unchanged(&'a cache::Summary),
    Converged(&'a Report),
}

/// Prints the report of a bare run: the summary (or JSON) and `--stats`.
fn print_report(
    home: &Path,
    found: &Found<'_>,
    stats: &Stats,
    args: &ConvergeArgs,
    terminal: &Terminal,
    elapsed: Duration,
) {
    if args.json {
        #[derive(serde::Serialize)]
        struct Files<'a> {
            written: Vec<&'a str>,
            unchanged: usize,
            removed: Vec<&'a str>,
        }
        #[derive(serde::Serialize)]
        struct Bundles {
            new: usize,
            reused: usize,
            pruned: usize,
        }
        #[derive(serde::Serialize)]
        struct StatsJson {
            stated: usize,
            read: usize,
            hashed: usize,
            written: usize,
            queries_executed: usize,
            queries_reused: usize,
        }
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            source: &'a str,
            roles: usize,
            personalities: usize,
            inputs_unchanged: bool,
            files: Files<'a>,
            bundles: Bundles,
            #[serde(skip_serializing_if = "Option::is_none")]
            stats: Option<StatsJson>,
        }
        let (source, roles, personalities, files, bundles) = match found {
            Found::Unchanged(summary) => (
                summary.source.as_str(),
                summary.roles,
                summary.personalities,
                Files { written: Vec::new(), unchanged: summary.artifact_files, removed: Vec::new() },
                Bundles { new: 0, reused: summary.bundles, pruned: 0 },
            ),
            Found::Converged(report) => (
                report.source.as_str(),
                report.roles,
                report.personalities,
                Files {
                    written: report.roster.written.iter().map(String::as_str).collect(),
                    unchanged: report.roster.unchanged,
                    removed: report.roster.removed.iter().map(String::as_str).collect(),
                },
                Bundles { new: report.bundles_new, reused: report.bundles_reused, pruned: report.bundles_pruned },
            ),
        };
        let document = Document {
            format: "acompose.converge.v1",
            source,
            roles,
            personalities,
            inputs_unchanged: matches!(found, Found::Unchanged(_)),
            files,
            bundles,
            stats: args.stats.then_some(StatsJson {
                stated: stats.stated,
                read: stats.read,
                hashed: stats.hashed,
                written: stats.written,
                queries_executed: stats.queries_executed,
                queries_reused: stats.queries_reused,
            }),
        };
        print_stdout(&String::from_utf8_lossy(&acompose_engine::snapshot::to_json_bytes(&document)));
        return;
    }
    if !terminal.quiet {
        match found {
            Found::Unchanged(summary) => print_stdout(&unchanged_summary(home, summary, elapsed)),
            Found::Converged(report) => print_stdout(&summary(report, elapsed)),
        }
    }
    if args.stats {
        print_stdout(&stats.line());
    }
}

/// Counts for `--stats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    pub stated: usize,
    pub read: usize,
    pub hashed: usize,
    pub written: usize,
    pub queries_executed: usize,
    pub queries_reused: usize,
}

impl Stats {
    pub fn line(&self) -> String {
        format!(
            "stats     stat'ed {}, read {}, hashed {}, written {}; queries executed {}, reused {}\n",
            self.stated, self.read, self.hashed, self.written, self.queries_executed, self.queries_reused
        )
    }
}

/// The one-screen summary of a convergence.
pub fn summary(report: &Report, elapsed: Duration) -> String {
    let outcome = &report.roster;
    let mut text = format!(
        "source    {} ({} roles, {} personalities)\nartifact  {}\nfiles     {} written, {} unchanged, {} removed\n",
        report.source,
        report.roles,
        report.personalities,
        report.artifact.display(),
        outcome.written.len(),
        outcome.unchanged,
        outcome.removed.len()
    );
    if report.bundles_new + report.bundles_reused + report.bundles_pruned > 0 {
        text.push_str(&format!(
            "bundles   {} new, {} reused, {} pruned\n",
            report.bundles_new, report.bundles_reused, report.bundles_pruned
        ));
    }
    if outcome.recovered {
        text.push_str("recovered an interrupted convergence before this one\n");
    }
    text.push_str(&format!("time      {} ms\n", elapsed.as_millis()));
    text
}

fn unchanged_summary(home: &Path, summary: &cache::Summary, elapsed: Duration) -> String {
    let mut text = format!(
        "source    {} ({} roles, {} personalities)\nartifact  {}\nfiles     0 written, {} unchanged, 0 removed\n",
        summary.source,
        summary.roles,
        summary.personalities,
        home.join(ARTIFACT_DIR).display(),
        summary.artifact_files
    );
    if summary.bundles > 0 {
        text.push_str(&format!("bundles   0 new, {} reused, 0 pruned\n", summary.bundles));
    }
    text.push_str(&format!("inputs    unchanged since the last convergence\ntime      {} ms\n", elapsed.as_millis()));
    text
}

/// The fingerprints of a finished convergence: every input the session read and every
/// output it owns.
pub fn fingerprints(session: &Session, home: &Path, projects: &Path, report: &Report) -> cache::Cache {
    let mut outputs = Vec::new();
    cache::output_stats(&home.join(ARTIFACT_DIR), &mut outputs);
    for file in [crate::estate::PLAN_FILE, crate::transaction::OWNERSHIP_FILE] {
        if let Ok(metadata) = std::fs::symlink_metadata(home.join(file)) {
            outputs.push((home.join(file), Stat::of(&metadata)));
        }
    }
    let bundles = home.join(crate::estate::BUNDLES_DIR);
    for file in [crate::estate::INDEX_FILE, crate::transaction::OWNERSHIP_FILE] {
        if let Ok(metadata) = std::fs::symlink_metadata(bundles.join(file)) {
            outputs.push((bundles.join(file), Stat::of(&metadata)));
        }
    }
    if let Some(index) = std::fs::read(bundles.join(crate::estate::INDEX_FILE))
        .ok()
        .and_then(|bytes| acompose_engine::estate::parse_index(&bytes))
    {
        // Every file of every indexed bundle: a bundle missing a file must not pass as
        // reused.
        let ids: Vec<&String> = index.values().collect();
        let per_bundle: Vec<Vec<(PathBuf, Stat)>> = ids
            .par_iter()
            .map(|id| {
                let mut stats = Vec::new();
                cache::output_stats(&bundles.join(id), &mut stats);
                stats
            })
            .collect();
        outputs.extend(per_bundle.into_iter().flatten());
    }
    cache::Cache {
        identity: cache::identity(projects),
        summary: cache::Summary {
            source: report.source.clone(),
            roles: report.roles,
            personalities: report.personalities,
            artifact_files: report.roster.written.len() + report.roster.unchanged,
            bundles: report.bundles_new + report.bundles_reused,
        },
        inputs: {
            let mut inputs: Vec<(PathBuf, Observed)> = session
                .loader
                .observed()
                .iter()
                // Racily fresh entries were smudged when they were observed.
                .map(|(path, observed)| (path.clone(), *observed))
                .collect();
            inputs.sort_unstable_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
            inputs
        },
        outputs,
    }
}

/// Runs bare `acompose`.
pub fn run(home: Option<&Path>, args: &ConvergeArgs, terminal: &Terminal) -> u8 {
    let started = Instant::now();
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::ENVIRONMENT;
        }
    };
    if let Err(message) = check_home(&home) {
        print_stderr(&format!("error: {message}\n"));
        return exit::INVALID;
    }
    let projects = crate::compose::projects_root(args.projects_root.as_deref());
    let identity = cache::identity(&projects);

    // The fast path: nothing changed since the last convergence.
    let text = cache::read(&home).unwrap_or_else(|reason| {
        print_stderr(&format!("warning: discarding the fingerprint cache: {reason}\n"));
        None
    });
    if let Some(text) = &text {
        let mut counters = cache::CheckCounters::default();
        if let Some(summary) = cache::unchanged_at_a_glance(text, &identity, &mut counters) {
            let stats = Stats { stated: counters.stated, ..Stats::default() };
            print_report(&home, &Found::Unchanged(&summary), &stats, args, terminal, started.elapsed());
            return exit::SUCCESS;
        }
    }
    let previous = text.and_then(|text| {
        cache::parse_for(&text, &identity)
            .map_err(|reason| print_stderr(&format!("warning: discarding the fingerprint cache: {reason}\n")))
            .ok()
    });
    if let Some(mut previous) = previous {
        let mut counters = cache::CheckCounters::default();
        if let cache::Check::Unchanged { touched } = cache::check(&previous, &mut counters) {
            if !touched.is_empty() {
                for (index, observed) in touched {
                    previous.inputs[index].1 = cache::smudge_if_racy(observed);
                }
                cache::store(&home, &previous);
            }
            let stats =
                Stats { stated: counters.stated, read: counters.read, hashed: counters.hashed, ..Stats::default() };
            print_report(&home, &Found::Unchanged(&previous.summary), &stats, args, terminal, started.elapsed());
            return exit::SUCCESS;
        }
    }

    let config = match read_config(&home, terminal) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let mut session = Session::default();
    session.loader.note(&home.join(CONFIG_FILE), crate::load::observe(&home.join(CONFIG_FILE)));
    if let Err(error) = std::fs::create_dir_all(&home) {
        print_stderr(&format!("error: cannot create home `{}`: {}\n", home.display(), crate::load::error_kind(&error)));
        return exit::ENVIRONMENT;
    }
    let _lock = match transaction::lock(&home, LOCK_TIMEOUT) {
        Ok(lock) => lock,
        Err(error) => {
            print_stderr(&format!("error: {error}\n"));
            return error.exit_code();
        }
    };
    match session.converge(&home, &projects, &config, terminal, &mut NoFaults, true) {
        Ok(report) => {
            cache::store(&home, &fingerprints(&session, &home, &projects, &report));
            let counters = session.loader.counters;
            let stats = Stats {
                stated: session.loader.observed().len(),
                read: counters.files_read,
                hashed: counters.files_read,
                written: report.files_written,
                queries_executed: report.queries_executed,
                queries_reused: report.queries_reused,
            };
            print_report(&home, &Found::Converged(&report), &stats, args, terminal, started.elapsed());
            if terminal.verbose > 0 {
                for path in &report.roster.written {
                    print_stderr(&format!("wrote {path}\n"));
                }
                for path in &report.roster.removed {
                    print_stderr(&format!("removed {path}\n"));
                }
            }
            // The process ends here: let the operating system reclaim the database
            // instead of freeing every memo one by one.
            std::mem::forget(session);
            exit::SUCCESS
        }
        Err(code) => code,
    }
}
