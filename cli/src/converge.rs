//! Bare `acompose`: host convergence. Resolves home and the projects root from the
//! command line and environment, asks the host to converge (fast path through the
//! fingerprint cache, else a full convergence under the home lock) and prints the report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acompose_driver::NoProgress;
use acompose_driver::convergence::Report;
use acompose_driver::convergence::{BareRun, Stats, converge_home};
use acompose_driver::delivery::mounts::{MountReport, deliver};
use acompose_driver::delivery::projection::Repair;
use acompose_driver::delivery::projections::{Followed, Repaired, repair};
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::home::cache;
use acompose_driver::home::{Home, read_config};

use crate::progress::TerminalProgress;
use crate::terminal::{Terminal, report_error, stats_line, summary, warn};
use crate::{exit, print_stderr, print_stdout};

/// Flags of bare `acompose`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConvergeArgs {
    /// Print files stat'ed, read, hashed and written, and queries executed and reused.
    #[arg(long)]
    pub stats: bool,
    /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
    /// `projects_root` in `agent-compose.yaml`, else `~/projects`).
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
    home: &Home,
    found: &Found<'_>,
    stats: &Stats,
    args: &ConvergeArgs,
    terminal: &Terminal,
    elapsed: Duration,
) {
    if args.json {
        print_stdout(&report_json(found, stats, args));
        return;
    }
    if !terminal.quiet {
        match found {
            Found::Unchanged(summary) => print_stdout(&unchanged_summary(home, summary, elapsed)),
            Found::Converged(report) => print_stdout(&summary(report, elapsed)),
        }
    }
    if args.stats {
        print_stdout(&stats_line(stats));
    }
}

/// The `acompose.converge.v1` document of a bare run (`--json`).
fn report_json(found: &Found<'_>, stats: &Stats, args: &ConvergeArgs) -> String {
    #[derive(serde::Serialize)]
    struct Files<'a> {
        written: Vec<&'a str>,
        unchanged: usize,
        removed: Vec<&'a str>,
    }
    #[derive(serde::Serialize)]
    struct Changed<'a> {
        role: &'a str,
        id: &'a str,
    }
    #[derive(serde::Serialize)]
    struct Bundles<'a> {
        new: usize,
        reused: usize,
        pruned: usize,
        changed: Vec<Changed<'a>>,
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
    struct Failed<'a> {
        role: &'a str,
        missing: &'a [String],
    }
    #[derive(serde::Serialize)]
    struct Document<'a> {
        format: &'static str,
        source: &'a str,
        roles: usize,
        personalities: usize,
        inputs_unchanged: bool,
        files: Files<'a>,
        bundles: Bundles<'a>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        failed: Vec<Failed<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        stats: Option<StatsJson>,
    }
    let (source, roles, personalities, files, bundles) = match found {
        Found::Unchanged(summary) => (
            summary.source.as_str(),
            summary.roles,
            summary.personalities,
            Files { written: Vec::new(), unchanged: summary.artifact_files, removed: Vec::new() },
            Bundles { new: 0, reused: summary.bundles, pruned: 0, changed: Vec::new() },
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
            Bundles {
                new: report.bundles_new,
                reused: report.bundles_reused,
                pruned: report.bundles_pruned,
                changed: report.changed.iter().map(|(role, id)| Changed { role, id }).collect(),
            },
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
        failed: match found {
            Found::Converged(report) => {
                report.failed.iter().map(|failed| Failed { role: &failed.role, missing: &failed.missing }).collect()
            }
            Found::Unchanged(_) => Vec::new(),
        },
        stats: args.stats.then_some(StatsJson {
            stated: stats.stated,
            read: stats.read,
            hashed: stats.hashed,
            written: stats.written,
            queries_executed: stats.queries_executed,
            queries_reused: stats.queries_reused,
        }),
    };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

fn unchanged_summary(home: &Home, summary: &cache::Summary, elapsed: Duration) -> String {
    let mut text = format!(
        "source    {} ({} roles, {} personalities)\nartifact  {}\nfiles     0 written, {} unchanged, 0 removed\n",
        summary.source,
        summary.roles,
        summary.personalities,
        home.artifact().display(),
        summary.artifact_files
    );
    if summary.bundles > 0 {
        text.push_str(&format!("bundles   0 new, {} reused, 0 pruned\n", summary.bundles));
    }
    text.push_str(&format!("inputs    unchanged since the last convergence\ntime      {} ms\n", elapsed.as_millis()));
    text
}

/// Runs bare `acompose`.
pub(crate) fn run(home: Option<&Path>, args: &ConvergeArgs, terminal: &Terminal) -> u8 {
    let started = Instant::now();
    let (home, projects) = match crate::home_and_projects(home, args.projects_root.as_deref()) {
        Ok(places) => places,
        Err(error) => return report_error(&error, terminal),
    };
    // What stopped `project` and `unproject` runs left is finished first, so that a
    // projection convergence follows is whole.
    let repaired = repair(&home);
    let progress = TerminalProgress::new(terminal);
    let run = match converge_home(&home, &projects, &progress) {
        Ok(run) => run,
        Err(error) => {
            let output = crate::terminal::ended_by_error_as(Default::default(), &error, terminal, args.json);
            return output.print();
        }
    };
    let delivered = match read_config(&home, &NoProgress).and_then(|config| deliver(&home, &config)) {
        Ok(delivered) => delivered,
        Err(error) => return report_error(&error, terminal),
    };
    // Roles that failed alone (a repository they select is missing) fail the run once the
    // others are written.
    let mut code = exit::SUCCESS;
    match run {
        BareRun::Unchanged { summary, stats } => {
            print_report(&home, &Found::Unchanged(&summary), &stats, args, terminal, started.elapsed());
        }
        BareRun::Converged { report, stats, converger } => {
            print_report(&home, &Found::Converged(&report), &stats, args, terminal, started.elapsed());
            if !report.failed.is_empty() {
                code = exit::INVALID;
                if terminal.quiet && !args.json {
                    print_stderr(&crate::terminal::failed_lines(&report.failed));
                }
            }
            print_followed(&report.followed, terminal, args.json);
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
            std::mem::forget(converger);
        }
    }
    print_repaired(&repaired, terminal, args.json);
    if !args.json {
        print_delivery(&delivered, terminal);
    }
    code
}

/// A line for each registered projection whose stopped run was finished (or whose text
/// a checkout took out was put back), and a warning for each that could not be.
fn print_repaired(repaired: &[Repaired], terminal: &Terminal, json: bool) {
    for projection in repaired {
        let target = sanitize(&projection.target.display().to_string());
        let role = sanitize(&projection.role);
        let said = match &projection.outcome {
            Ok(Repair::RolledBack) => format!("rolled back a stopped projection of {role} in `{target}`"),
            Ok(Repair::Unprojected) => format!("finished the stopped `unproject` of {role} in `{target}`"),
            Ok(Repair::Reprojected(report)) => {
                let mut line = format!("projected {} ({role}) into `{target}` again", report.details.bundle);
                if let Some(git) = report.git.as_ref().filter(|git| !git.settled()) {
                    line.push_str(&format!("; git's files still are not: {}", sanitize(&git.failed.join("; "))));
                }
                line
            }
            Ok(Repair::Settled(git)) if git.settled() => {
                format!("brought git's files in line with the projection of {role} in `{target}`")
            }
            Ok(Repair::Settled(git)) => {
                warn(
                    terminal,
                    &format!(
                        "git's files are not in line with the projection of {role} in `{target}`: {}",
                        sanitize(&git.failed.join("; "))
                    ),
                );
                continue;
            }
            Err(why) => {
                warn(
                    terminal,
                    &format!("the projection of {role} in `{target}` was left unfinished: {}", sanitize(why)),
                );
                continue;
            }
        };
        if !terminal.quiet && !json {
            print_stdout(&format!("{said}\n"));
        }
    }
}

/// A line for each registered projection convergence moved to its role's new bundle, and
/// a warning for each it had to leave alone.
fn print_followed(followed: &[Followed], terminal: &Terminal, json: bool) {
    for projection in followed {
        let target = sanitize(&projection.target.display().to_string());
        match &projection.outcome {
            Ok(bundle) if !terminal.quiet && !json => {
                print_stdout(&format!("projected {bundle} ({}) into `{target}`\n", sanitize(&projection.role)));
            }
            Ok(_) => {}
            Err(why) => warn(
                terminal,
                &format!(
                    "the projection of `{}` in `{target}` still shows its old bundle: {}",
                    sanitize(&projection.role),
                    sanitize(why)
                ),
            ),
        }
    }
}

/// The delivery line of the summary (or the hint that turns delivery on) and a warning
/// for every path the user's own entry holds.
fn print_delivery(delivered: &MountReport, terminal: &Terminal) {
    for kept in &delivered.kept {
        warn(terminal, &crate::terminal::kept_warning(kept));
    }
    if terminal.quiet {
        return;
    }
    if delivered.configured || !delivered.removed.is_empty() {
        print_stdout(&format!(
            "delivery  {} linked, {} unchanged, {} removed, {} kept as yours\n",
            delivered.created.len(),
            delivered.unchanged,
            delivered.removed.len(),
            delivered.kept.len()
        ));
    }
    if !delivered.configured {
        print_stdout(
            "hint      no harness reads this roster yet: `acompose setup claude` (or codex, opencode, gemini) links it in\n",
        );
    }
}
