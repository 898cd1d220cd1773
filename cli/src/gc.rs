//! `acompose gc [--dry-run]`: the host removes the home store's entries no bundle of the
//! home references, under the home lock; this module prints what went.

use std::path::Path;

use acompose_driver::gc::gc;
use acompose_driver::home::resolve_home;

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

pub fn run(args: &GcArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let report = match resolve_home(home).and_then(|home| gc(&home, args.dry_run)) {
        Ok(report) => report,
        Err(error) => return report_error(&error, terminal),
    };
    if args.json {
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            dry_run: bool,
            removed: &'a [String],
            kept: usize,
        }
        let document =
            Document { format: "acompose.gc.v1", dry_run: report.dry_run, removed: &report.removed, kept: report.kept };
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
    if !terminal.quiet {
        let verb = if report.dry_run { "would remove" } else { "removed" };
        text.push_str(&format!("store     {} entries {verb}, {} kept\n", report.removed.len(), report.kept));
    }
    print_stdout(&text);
    exit::SUCCESS
}
