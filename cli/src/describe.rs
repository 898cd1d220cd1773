//! `acompose describe BUNDLE` and `acompose diff A B`: provenance from `manifest.json` and
//! `trace.json` only; the sources are never re-read.

use std::path::{Path, PathBuf};

use acompose_engine::bundle::{MANIFEST_FORMAT, Manifest};
use acompose_engine::describe::{self, WhyError};
use acompose_engine::trace::{self, Trace};

use crate::terminal::Terminal;
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct DescribeArgs {
    /// The bundle directory (`<out>/<id>`).
    pub bundle: PathBuf,
    /// List every decision instead of collapsing runs of the same exclusion.
    #[arg(long)]
    pub all: bool,
    /// Explain one item: `source:<id>`, `skill:<name>`, `role:<slug>`,
    /// `personality:<slug>` or `instruction:<id>`.
    #[arg(long, value_name = "KIND:NAME")]
    pub why: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The earlier bundle.
    pub before: PathBuf,
    /// The later bundle.
    pub after: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn read_json<T: serde::de::DeserializeOwned>(bundle: &Path, name: &str) -> Result<T, String> {
    let path = bundle.join(name);
    match std::fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(format!("`{}` is a symbolic link", path.display()));
        }
        Ok(metadata) if !metadata.is_file() => return Err(format!("`{}` is not a file", path.display())),
        Ok(_) => {}
        Err(error) => {
            return Err(format!(
                "bundle `{}` has no readable `{name}`: {}",
                bundle.display(),
                crate::load::error_kind(&error)
            ));
        }
    }
    let bytes = std::fs::read(&path)
        .map_err(|error| format!("cannot read `{}`: {}", path.display(), crate::load::error_kind(&error)))?;
    acompose_engine::bundle::read_bundle_json(name, &bytes, &path.display().to_string()).map_err(|error| match error {
        acompose_engine::bundle::BundleJsonError::TooLarge(too_large) => {
            format!("`{}`: {} [{}]", path.display(), too_large.message, too_large.code)
        }
        acompose_engine::bundle::BundleJsonError::Invalid(error) => {
            format!("`{}` is not a valid {name} (line {}, column {})", path.display(), error.line(), error.column())
        }
    })
}

/// Reads a bundle's manifest and trace; the id is the directory's name.
pub fn load(bundle: &Path) -> Result<(String, Manifest, Trace), String> {
    if !bundle.is_dir() {
        return Err(format!("`{}` is not a bundle directory", bundle.display()));
    }
    let manifest: Manifest = read_json(bundle, "manifest.json")?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(format!("`{}` holds an unknown manifest format", bundle.join("manifest.json").display()));
    }
    let trace: Trace = read_json(bundle, "trace.json")?;
    if trace.format != trace::FORMAT {
        return Err(format!("`{}` holds an unknown trace format", bundle.join("trace.json").display()));
    }
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    Ok((id, manifest, trace))
}

pub fn run(args: DescribeArgs, terminal: &Terminal) -> u8 {
    let (id, manifest, trace) = match load(&args.bundle) {
        Ok(loaded) => loaded,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::INVALID;
        }
    };
    match &args.why {
        Some(item) => match describe::why(&trace, item) {
            Ok(why) => {
                if args.json {
                    print_stdout(&String::from_utf8_lossy(&acompose_engine::snapshot::to_json_bytes(&why)));
                } else {
                    print_stdout(&describe::why_text(&why, terminal.stdout));
                }
                exit::SUCCESS
            }
            Err(WhyError::BadItem) => {
                print_stderr(
                    "error: `--why` takes KIND:NAME with KIND one of source, skill, role, personality, instruction\n",
                );
                exit::USAGE
            }
            Err(WhyError::Unknown { item, suggestions }) => {
                let hint = if suggestions.is_empty() {
                    "nothing of that kind is in this bundle's trace".to_owned()
                } else {
                    format!("closest: {}", suggestions.join(", "))
                };
                print_stderr(&format!("error: `{item}` is not in this bundle's trace; {hint}\n"));
                exit::INVALID
            }
        },
        None => {
            if args.json {
                print_stdout(&String::from_utf8_lossy(&describe::describe_json(&id, &manifest, &trace)));
            } else {
                print_stdout(&describe::describe_text(&id, &manifest, &trace, args.all, terminal.stdout));
            }
            exit::SUCCESS
        }
    }
}

pub fn run_diff(args: DiffArgs, terminal: &Terminal) -> u8 {
    let before = match load(&args.before) {
        Ok(loaded) => loaded,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::INVALID;
        }
    };
    let after = match load(&args.after) {
        Ok(loaded) => loaded,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::INVALID;
        }
    };
    let difference = describe::diff((&before.1, &before.2), (&after.1, &after.2));
    if args.json {
        print_stdout(&String::from_utf8_lossy(&acompose_engine::snapshot::to_json_bytes(&difference)));
    } else {
        print_stdout(&describe::diff_text(&difference, terminal.stdout));
    }
    exit::SUCCESS
}
