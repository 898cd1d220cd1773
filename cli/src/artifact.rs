//! `acompose roster --out DIR`: the roster artifact rendered anywhere, with the same
//! transaction as host convergence.

use std::path::Path;

use acompose_engine::Database;

use crate::load::{Loader, Selection};
use crate::terminal::Terminal;
use crate::transaction::{self, NoFaults};
use crate::{exit, print_stderr, print_stdout};

pub fn render_roster_out(
    db: &mut Database,
    loader: &mut Loader,
    selection: &Selection,
    out: &Path,
    terminal: &Terminal,
) -> u8 {
    let model = match crate::roster::load_model(db, loader, selection, terminal) {
        Ok(model) => model,
        Err(code) => return code,
    };
    let files = acompose_engine::converge::roster_files(&model);
    match std::fs::symlink_metadata(out) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            print_stderr(&format!("error: `{}` is a symbolic link; pass the real directory\n", out.display()));
            return exit::INVALID;
        }
        Ok(metadata) if !metadata.is_dir() => {
            print_stderr(&format!("error: `{}` is not a directory\n", out.display()));
            return exit::INVALID;
        }
        _ => {}
    }
    if let Err(error) = std::fs::create_dir_all(out) {
        print_stderr(&format!("error: cannot create `{}`: {}\n", out.display(), crate::load::error_kind(&error)));
        return exit::ENVIRONMENT;
    }
    let _lock = match transaction::lock(out, crate::converge::LOCK_TIMEOUT) {
        Ok(lock) => lock,
        Err(error) => {
            print_stderr(&format!("error: {error}\n"));
            return error.exit_code();
        }
    };
    match transaction::apply(out, &files, &mut NoFaults) {
        Ok(outcome) => {
            if !terminal.quiet {
                print_stdout(&format!(
                    "roster {} -> {}: {} written, {} unchanged, {} removed\n",
                    model.source,
                    out.display(),
                    outcome.written.len(),
                    outcome.unchanged,
                    outcome.removed.len()
                ));
            }
            exit::SUCCESS
        }
        Err(error) => {
            print_stderr(&format!("error: {error}\n"));
            error.exit_code()
        }
    }
}
