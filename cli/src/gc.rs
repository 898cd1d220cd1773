//! `acompose gc [--dry-run]`: the host removes the runtime homes of roles that are gone
//! (and launch bundles no runtime home shows), prunes the stale bundles of convergence
//! (what a failed or killed run left) and removes the home store's entries no bundle of
//! the home references, under the home lock; this module prints what went.

use std::path::Path;

use acompose_driver::convergence::gc::gc;
use acompose_driver::convergence::launch::collect_runtime;
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::home::resolve_home;

use crate::progress::TerminalProgress;

use crate::terminal::{Terminal, report_error};
use crate::{exit, print_stdout};

#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// List what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: &GcArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let progress = TerminalProgress::new(terminal);
    let collected = resolve_home(home).and_then(|home| {
        let runtime = collect_runtime(&home, args.dry_run, &progress)?;
        gc(&home, args.dry_run).map(|report| (runtime, report))
    });
    let (runtime, report) = match collected {
        Ok(collected) => collected,
        Err(error) => return report_error(&error, terminal),
    };
    if args.json {
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            dry_run: bool,
            removed: &'a [String],
            kept: usize,
            bundles_pruned: usize,
            runtime_homes: Vec<String>,
            launch_bundles: Vec<String>,
        }
        let names = |paths: &[std::path::PathBuf]| paths.iter().map(|path| path.display().to_string()).collect();
        let document = Document {
            format: "acompose.gc.v1",
            dry_run: report.dry_run,
            removed: &report.removed,
            kept: report.kept,
            bundles_pruned: report.bundles_pruned,
            runtime_homes: names(&runtime.homes),
            launch_bundles: names(&runtime.bundles),
        };
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)));
        return exit::SUCCESS;
    }
    let mut text = String::new();
    if terminal.verbose > 0 || report.dry_run {
        let verb = if report.dry_run { "would remove" } else { "removed" };
        for name in &report.removed {
            text.push_str(&format!("{verb} {name}\n"));
        }
    }
    let verb = if report.dry_run { "would remove" } else { "removed" };
    if terminal.verbose > 0 || report.dry_run {
        for path in runtime.homes.iter().chain(&runtime.bundles) {
            text.push_str(&format!("{verb} {}\n", sanitize(&path.display().to_string())));
        }
    }
    if !terminal.quiet {
        if !runtime.homes.is_empty() || !runtime.bundles.is_empty() {
            text.push_str(&format!(
                "runtime   {} runtime homes and {} launch bundles {verb}\n",
                runtime.homes.len(),
                runtime.bundles.len()
            ));
        }
        if report.bundles_pruned > 0 {
            text.push_str(&format!("bundles   {} stale bundles of failed runs pruned\n", report.bundles_pruned));
        }
        text.push_str(&format!("store     {} entries {verb}, {} kept\n", report.removed.len(), report.kept));
    }
    print_stdout(&text);
    exit::SUCCESS
}
