//! `acompose describe BUNDLE` and `acompose diff A B`: provenance from `manifest.json` and
//! `trace.json` only (`--why` through the trace's index, `trace.index`, when the bundle
//! has one); the sources are never re-read.

use std::path::{Path, PathBuf};

use acompose_driver::compose::bundle::read_provenance;
use acompose_driver::compose::why::{WhyFailure, why};
use acompose_driver::engine::describe::{self, WhyError};

use crate::terminal::{Terminal, report_error};
use crate::{exit, named_bundle, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct DescribeArgs {
    /// The bundle: its directory (`<out>/<id>`), a role of the home (its current bundle)
    /// or a bundle id prefix of at least four hex digits.
    pub bundle: PathBuf,
    /// List every decision instead of collapsing runs of the same exclusion.
    #[arg(long)]
    pub all: bool,
    /// Explain one item: `source:<id>`, `skill:<name>`, `role:<slug>`,
    /// `personality:<slug>`, `instruction:<id>` or `overlay:<file>`.
    #[arg(long, value_name = "KIND:NAME")]
    pub why: Option<String>,
    /// Also check the bundle against one harness's listing limits (names, description
    /// length, listing budget): what it would cut, shorten or refuse.
    #[arg(long, value_name = "HARNESS")]
    pub harness: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The earlier bundle (a directory, a role of the home or an id prefix).
    pub before: PathBuf,
    /// The later bundle (a directory, a role of the home or an id prefix).
    pub after: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: DescribeArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let bundle = match named_bundle(home, &args.bundle) {
        Ok(bundle) => bundle,
        Err(error) => {
            print_stderr(&format!("error: {error}\n"));
            return exit::INVALID;
        }
    };
    let code = describe(&args, &bundle, terminal);
    match &args.harness {
        Some(harness) if code == exit::SUCCESS => listing(&bundle, harness, args.json),
        _ => code,
    }
}

/// `--harness H`: the harness's listing limits against the bundle's skills, after the
/// description (on standard error with `--json`, which keeps its document as it is).
fn listing(bundle: &std::path::Path, harness: &str, json: bool) -> u8 {
    let Some(layout) = acompose_driver::engine::harness_layout::layout(harness) else {
        let names = acompose_driver::engine::harness_layout::harness_names().join(", ");
        print_stderr(&format!(
            "error: `{}` is not a harness; harnesses: {names}\n",
            acompose_driver::engine::diagnostic::sanitize(harness)
        ));
        return exit::USAGE;
    };
    match acompose_driver::delivery::projection::listing_of_bundle(bundle, layout) {
        Ok(warnings) if warnings.is_empty() => {
            let line = format!("{}: every skill fits its listing\n", layout.display_name);
            if json {
                print_stderr(&line)
            } else {
                print_stdout(&line)
            }
            exit::SUCCESS
        }
        Ok(warnings) => {
            for warning in warnings {
                print_stderr(&format!("warning: {warning}\n"));
            }
            exit::SUCCESS
        }
        Err(error) => {
            print_stderr(&format!("error: {error}\n"));
            exit::INVALID
        }
    }
}

fn describe(args: &DescribeArgs, bundle: &Path, terminal: &Terminal) -> u8 {
    if let Some(item) = &args.why {
        return run_why(args, bundle, item, terminal);
    }
    let (id, manifest, trace) = match read_provenance(bundle) {
        Ok(loaded) => loaded,
        Err(error) => return report_error(&error, terminal),
    };
    if args.json {
        print_stdout(&String::from_utf8_lossy(&describe::describe_json(&id, &manifest, &trace)));
    } else {
        print_stdout(&describe::describe_text(&id, &manifest, &trace, args.all, terminal.stdout));
    }
    exit::SUCCESS
}

/// `describe --why`: through the bundle's trace index when it has one.
fn run_why(args: &DescribeArgs, bundle: &Path, item: &str, terminal: &Terminal) -> u8 {
    match why(bundle, item) {
        Ok(why) => {
            if args.json {
                print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&why)));
            } else {
                print_stdout(&describe::why_text(&why, terminal.stdout));
            }
            exit::SUCCESS
        }
        Err(WhyFailure::Bundle(message)) => {
            print_stderr(&format!("error: {message}\n"));
            exit::INVALID
        }
        Err(WhyFailure::Item(WhyError::BadItem)) => {
            let kinds = ["source", "skill", "role", "personality", "instruction", "mcp", "overlay"];
            let kind = item.split_once(':').map_or(item, |(kind, _)| kind);
            let suggestion = acompose_driver::engine::suggest::did_you_mean(kind, kinds)
                .map(|suggestion| format!("; {suggestion}"))
                .unwrap_or_default();
            print_stderr(&format!(
                "error: `--why` takes KIND:NAME with KIND one of {}{suggestion}\n",
                kinds.join(", ")
            ));
            exit::USAGE
        }
        Err(WhyFailure::Item(WhyError::Unknown { item, suggestions })) => {
            let hint = if suggestions.is_empty() {
                "nothing of that kind is in this bundle's trace".to_owned()
            } else {
                format!("closest: {}", suggestions.join(", "))
            };
            print_stderr(&format!("error: `{item}` is not in this bundle's trace; {hint}\n"));
            exit::INVALID
        }
    }
}

pub(crate) fn run_diff(args: DiffArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let load = |name: &Path| named_bundle(home, name).and_then(|bundle| read_provenance(&bundle));
    // As `diff` does: 2 for trouble, so a script can tell it from "they differ".
    let before = match load(&args.before) {
        Ok(loaded) => loaded,
        Err(error) => return report_error(&error, terminal).max(exit::USAGE),
    };
    let after = match load(&args.after) {
        Ok(loaded) => loaded,
        Err(error) => return report_error(&error, terminal).max(exit::USAGE),
    };
    let difference = describe::diff((&before.1, &before.2), (&after.1, &after.2));
    if args.json {
        print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&difference)));
    } else {
        print_stdout(&describe::diff_text(&difference, terminal.stdout));
    }
    if difference.is_empty() { exit::SUCCESS } else { exit::INVALID }
}
