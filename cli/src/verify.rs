//! `acompose verify BUNDLE`: read a bundle directory (refusing symlinks and anything but
//! folders and regular files) and re-check it with the engine.

use std::collections::BTreeMap;
use std::path::Path;

use acompose_engine::bundle::{Verified, verify};

use crate::terminal::Terminal;
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The bundle directory (`<out>/<id>`).
    pub bundle: std::path::PathBuf,
    /// Print the result as JSON (`acompose.verify.v1`).
    #[arg(long)]
    pub json: bool,
}

/// Reads every file of a bundle directory; symlinks and special files are problems.
pub fn read_bundle(directory: &Path) -> Result<BTreeMap<String, Vec<u8>>, Vec<String>> {
    match std::fs::symlink_metadata(directory) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(vec![format!("`{}` is a symbolic link", directory.display())]);
        }
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Err(vec![format!("`{}` is not a directory", directory.display())]),
        Err(error) => {
            return Err(vec![format!("cannot open `{}`: {}", directory.display(), crate::load::error_kind(&error))]);
        }
    }
    // A folder without a manifest is not a bundle; do not read the rest of it.
    if !std::fs::symlink_metadata(directory.join("manifest.json")).is_ok_and(|metadata| metadata.is_file()) {
        return Err(vec![format!("`{}` is not a bundle: it has no `manifest.json`", directory.display())]);
    }
    let mut files = BTreeMap::new();
    let mut problems = Vec::new();
    for entry in walkdir::WalkDir::new(directory).follow_links(false).sort_by_file_name() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                problems.push("an entry cannot be read".to_owned());
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(directory)
            .unwrap_or(entry.path())
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if entry.path_is_symlink() {
            problems.push(format!("{relative}: is a symbolic link"));
        } else if entry.file_type().is_file() {
            match std::fs::read(entry.path()) {
                Ok(bytes) => {
                    files.insert(relative, bytes);
                }
                Err(error) => problems.push(format!("{relative}: {}", crate::load::error_kind(&error))),
            }
        } else if !entry.file_type().is_dir() {
            problems.push(format!("{relative}: is not a regular file"));
        }
    }
    if problems.is_empty() { Ok(files) } else { Err(problems) }
}

fn directory_name(directory: &Path) -> String {
    directory
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Verifies a bundle directory whose name must be its id.
pub fn verify_directory(directory: &Path) -> Result<Verified, Vec<String>> {
    verify_directory_named(directory, &directory_name(directory))
}

/// Verifies a bundle directory against an expected id (a staging folder has another name).
pub fn verify_directory_named(directory: &Path, id: &str) -> Result<Verified, Vec<String>> {
    let files = read_bundle(directory)?;
    verify(id, &files).map_err(|problems| {
        problems.into_iter().map(|problem| format!("{}: {}", problem.file, problem.message)).collect()
    })
}

pub fn run(args: VerifyArgs, terminal: &Terminal) -> u8 {
    if args.json {
        #[derive(serde::Serialize)]
        struct Document<'a> {
            format: &'static str,
            verified: bool,
            skills: usize,
            files: usize,
            problems: &'a [String],
        }
        let result = verify_directory(&args.bundle);
        let (verified, skills, files, problems) = match &result {
            Ok(verified) => (true, verified.skills, verified.files, &[][..]),
            Err(problems) => (false, 0, 0, problems.as_slice()),
        };
        let document = Document { format: "acompose.verify.v1", verified, skills, files, problems };
        print_stdout(&String::from_utf8_lossy(&acompose_engine::snapshot::to_json_bytes(&document)));
        return if verified { exit::SUCCESS } else { exit::INVALID };
    }
    match verify_directory(&args.bundle) {
        Ok(verified) => {
            if !terminal.quiet {
                print_stdout(&format!("bundle verified: {} skills // {} files\n", verified.skills, verified.files));
            }
            exit::SUCCESS
        }
        Err(problems) => {
            const SHOWN: usize = 20;
            for problem in problems.iter().take(SHOWN) {
                print_stderr(&format!("error: {problem}\n"));
            }
            if problems.len() > SHOWN {
                print_stderr(&format!("error: … and {} more problems\n", problems.len() - SHOWN));
            }
            print_stderr(&format!("error: bundle `{}` failed verification\n", args.bundle.display()));
            exit::INVALID
        }
    }
}
