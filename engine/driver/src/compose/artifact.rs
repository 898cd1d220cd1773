//! The roster artifact outside home (`roster --out DIR`) and the validated person model
//! it, `roster show` and `catalog` are made from. Writes only through a transaction,
//! under the directory's lock.

use std::path::Path;

use acompose_engine::Database;
use acompose_engine::person::PersonModel;

use crate::compose::load::{Loader, Selection, error_kind};
use crate::error::{Findings, HostError};
use crate::home::LOCK_TIMEOUT;
use crate::home::transaction::{self, NoFaults, Outcome};

/// A valid person model and its warnings.
pub struct ValidModel {
    pub model: PersonModel,
    pub warnings: Findings,
}

/// Loads `selection` and validates it: the model, or every diagnostic when it has errors.
pub fn load_model(db: &mut Database, loader: &mut Loader, selection: &Selection) -> Result<ValidModel, HostError> {
    let validation = validate(db, loader, selection);
    if validation.has_errors {
        return Err(HostError::Diagnostics {
            subject: "the person source is invalid".to_owned(),
            findings: validation.findings,
        });
    }
    Ok(ValidModel { model: validation.model, warnings: validation.findings })
}

/// The outcome of validating a person source: its model (complete as far as the files
/// allow), every diagnostic with the texts of the files it names, and whether any of them
/// is an error.
#[derive(Debug, Clone)]
pub struct Validation {
    pub model: PersonModel,
    pub findings: Findings,
    pub has_errors: bool,
}

/// Loads `selection` and applies every roster rule, keeping warnings and errors alike.
pub fn validate(db: &mut Database, loader: &mut Loader, selection: &Selection) -> Validation {
    let source = loader.load(db, selection);
    let parsed = acompose_engine::person::person_model(db, source);
    let findings = Findings::collect(parsed.diagnostics.clone(), |path| loader.text_of(db, path));
    Validation { model: parsed.value.clone(), has_errors: parsed.has_errors(), findings }
}

/// Writes the roster artifact of `model` into `out` in one transaction, creating `out`
/// when needed and refusing a symbolic link or a file in its place.
pub fn write_roster(model: &PersonModel, out: &Path) -> Result<Outcome, HostError> {
    let files = acompose_engine::convergence::roster_files(model);
    match std::fs::symlink_metadata(out) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(HostError::invalid(
                out,
                format!("`{}` is a symbolic link; pass the real directory", out.display()),
            ));
        }
        Ok(metadata) if !metadata.is_dir() => {
            return Err(HostError::invalid(out, format!("`{}` is not a directory", out.display())));
        }
        _ => {}
    }
    std::fs::create_dir_all(out).map_err(|error| {
        HostError::environment(out, format!("cannot create `{}`: {}", out.display(), error_kind(&error)))
    })?;
    let _lock = transaction::lock(out, LOCK_TIMEOUT)?;
    Ok(transaction::apply(out, &files, &mut NoFaults)?)
}
