//! `acompose bundle export BUNDLE --out FILE.tar`, `acompose bundle import FILE.tar`,
//! `acompose bundle materialize --role R --harness H` and `acompose bundle list`: the host writes or reads the self-contained archive, or lists
//! the home's bundles; this module prints the result.

use std::path::{Path, PathBuf};

use acompose_driver::compose::export::{export_signed, import};
use acompose_driver::compose::placement::{Target, destination};
use acompose_driver::home::resolve_home;

use crate::terminal::{Terminal, report_error};
use crate::{exit, print_stdout};

#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    #[command(subcommand)]
    pub command: BundleCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// List the home's bundles: role, id, age, size and the projections showing each.
    List {
        /// Print JSON (`acompose.bundle-list.v1`).
        #[arg(long)]
        json: bool,
    },
    /// Write a bundle, with real copies of its skills, as one tar archive.
    Export {
        /// The bundle: its directory (`<out>/<id>`), a role of the home (its current
        /// bundle) or a bundle id prefix of at least four hex digits.
        bundle: PathBuf,
        /// The archive to write.
        #[arg(long, value_name = "FILE.tar")]
        out: PathBuf,
        /// Print a JSON report instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Put an exported bundle back: verified, its skills linked into a store.
    Import {
        /// The archive `bundle export` wrote.
        file: PathBuf,
        /// Where the bundle folder goes (default: `<home>/bundles`).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The store its skills link into (default: the home's store when the output is
        /// inside the home, else `<out>/.store`).
        #[arg(long, value_name = "DIR")]
        store: Option<PathBuf>,
        /// Print a JSON report instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compose one role's bundle for one harness from the home's configuration (at the
    /// tier of the role's seat for that harness) and write it, in one step.
    Materialize {
        /// The role.
        #[arg(long, value_name = "SLUG")]
        role: String,
        /// The harness (a layout name: `claude`, `codex`, …).
        #[arg(long, value_name = "HARNESS")]
        harness: String,
        /// Where the bundle folder goes (default: `<home>/bundles`).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
        /// `projects_root` in `agent-compose.yaml`, else `~/projects`).
        #[arg(long, value_name = "DIR")]
        projects_root: Option<PathBuf>,
        /// Print a JSON report instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Upload a bundle to an OCI registry: only the blobs the repository lacks.
    Push(crate::bundle_registry::PushArgs),
    /// Sign a bundle with an SSH key (an SSHSIG over its id and manifest digest, kept in
    /// the home as `signatures/<id>.sig`).
    Sign(crate::bundle_registry::SignArgs),
    /// Download a bundle from an OCI registry into the home: only what the home lacks,
    /// every blob and the bundle verified before anything is kept.
    Pull(crate::bundle_registry::PullArgs),
}

#[derive(serde::Serialize)]
struct Report<'a> {
    format: &'static str,
    bundle: &'a str,
    status: &'static str,
    path: String,
}

fn print_report(json: bool, report: &Report<'_>) {
    if json {
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(report)));
    } else {
        print_stdout(&format!("bundle {} ({})\npath   {}\n", report.bundle, report.status, report.path));
    }
}

pub(crate) fn run(args: BundleArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    match args.command {
        BundleCommand::Push(push) => crate::bundle_registry::run_push(push, home, terminal),
        BundleCommand::Sign(sign) => crate::bundle_registry::run_sign(&sign, home, terminal),
        BundleCommand::Pull(pull) => crate::bundle_registry::run_pull(pull, home, terminal),
        BundleCommand::List { json } => crate::bundle_list::run(home, json, terminal),
        BundleCommand::Materialize { role, harness, out, projects_root, json } => {
            let request = MaterializeRequest { role: &role, harness: &harness, out: out.as_deref(), json };
            materialize(home, projects_root.as_deref(), &request, terminal)
        }
        BundleCommand::Export { bundle, out, json } => {
            // The home's signature of the bundle, when it keeps one, travels in the archive.
            let exported = crate::named_bundle(home, &bundle).and_then(|bundle| {
                let id = bundle
                    .canonicalize()
                    .ok()
                    .and_then(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()));
                let signature = match (resolve_home(home).ok(), id) {
                    (Some(home), Some(id)) => acompose_driver::compose::signature::kept(&home, &id)?,
                    _ => None,
                };
                export_signed(&bundle, &out, signature.as_deref())
            });
            match exported {
                Ok(exported) => {
                    let report = Report {
                        format: "acompose.bundle-export.v1",
                        bundle: &exported.id,
                        status: "exported",
                        path: out.display().to_string(),
                    };
                    if json || !terminal.quiet {
                        print_report(json, &report);
                    }
                    exit::SUCCESS
                }
                Err(error) => report_error(&error, terminal),
            }
        }
        BundleCommand::Import { file, out, store, json } => {
            let home = resolve_home(home);
            let out = match (out, &home) {
                (Some(out), _) => out,
                (None, Ok(home)) => home.bundles(),
                (None, Err(error)) => return report_error(error, terminal),
            };
            let imported = destination(home.as_ref().ok(), &out, &Target::Store(store))
                .and_then(|to| import(&file, &to))
                .and_then(|imported| {
                    // A signature the archive carried is kept when the bundle lands in the home.
                    if let (Ok(home), Some(signature)) = (&home, &imported.signature)
                        && out.starts_with(home)
                    {
                        acompose_driver::compose::signature::keep(home, &imported.id, signature)?;
                    }
                    Ok(imported)
                });
            match imported {
                Ok(imported) => {
                    let report = Report {
                        format: "acompose.bundle-import.v1",
                        bundle: &imported.id,
                        status: imported.materialization.outcome.name(),
                        path: out.join(&imported.id).display().to_string(),
                    };
                    if json || !terminal.quiet {
                        print_report(json, &report);
                    }
                    exit::SUCCESS
                }
                Err(error) => report_error(&error, terminal),
            }
        }
    }
}

/// What `bundle materialize` was asked for.
struct MaterializeRequest<'a> {
    role: &'a str,
    harness: &'a str,
    out: Option<&'a Path>,
    json: bool,
}

#[derive(serde::Serialize)]
struct MaterializeReport<'a> {
    format: &'static str,
    bundle: &'a str,
    role: &'a str,
    harness: &'a str,
    tier: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    seat: Option<&'a str>,
    path: String,
}

/// `bundle materialize`: composes and writes one role's bundle for one harness.
fn materialize(
    home: Option<&Path>,
    projects_root: Option<&Path>,
    request: &MaterializeRequest<'_>,
    terminal: &Terminal,
) -> u8 {
    let (home, projects) = match crate::home_and_projects(home, projects_root) {
        Ok(places) => places,
        Err(error) => return report_error(&error, terminal),
    };
    let out = request.out.map_or_else(|| home.bundles(), Path::to_path_buf);
    let progress = crate::progress::TerminalProgress::new(terminal);
    let made = match acompose_driver::convergence::materialize::materialize(
        &home,
        &projects,
        request.role,
        request.harness,
        &out,
        &progress,
    ) {
        Ok(made) => made,
        Err(error) => return report_error(&error, terminal),
    };
    let report = MaterializeReport {
        format: "acompose.bundle-materialize.v1",
        bundle: &made.id,
        role: &made.role,
        harness: &made.harness,
        tier: &made.tier,
        seat: made.seat.as_deref(),
        path: made.path.display().to_string(),
    };
    if request.json {
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&report)));
    } else {
        print_stdout(&format!(
            "bundle {} (role {}, harness {}, tier {})\npath   {}\n",
            report.bundle, report.role, report.harness, report.tier, report.path
        ));
    }
    exit::SUCCESS
}
