//! `Sources`: one command's handle on what it reads outside a home convergence — the
//! salsa database and the loader that fills it — for `roster`, `catalog` and `compose`.
//! A face creates one per command and asks it for a validation, a model or a prepared
//! composition; the database inside never leaves the driver.

use std::path::{Path, PathBuf};

use acompose_engine::Database;
use acompose_engine::skill_rules::SkillPolicy;

use crate::compose::artifact::{self, ValidModel, Validation};
use crate::compose::load::{Loader, Observations, Selection};
use crate::compose::request::{self, Prepared};
use crate::error::HostError;

/// The database and loader of one command.
#[derive(Default)]
pub struct Sources {
    database: Database,
    loader: Loader,
}

impl Sources {
    /// Sources that read the relative paths they are given under `working_directory` and
    /// label them as given, as the same command run in that folder would: how a test runs
    /// a command in-process without changing the working directory its threads share.
    pub fn in_directory(working_directory: impl Into<PathBuf>) -> Self {
        Sources { database: Database::default(), loader: Loader::in_directory(working_directory) }
    }

    /// Validates a person source: its model and every diagnostic, errors included.
    pub fn validate(&mut self, selection: &Selection) -> Validation {
        artifact::validate(&mut self.database, &mut self.loader, selection)
    }

    /// Loads a person source that must be valid: the model and its warnings, or every
    /// diagnostic that stopped it.
    pub fn load_model(&mut self, selection: &Selection) -> Result<ValidModel, HostError> {
        artifact::load_model(&mut self.database, &mut self.loader, selection)
    }

    /// [`Sources::load_model`] with the private overlays at `overlays` applied (seat names,
    /// and their digests recorded): the roster as a home with those overlays sees it.
    /// `overlays` is what [`crate::home::settings::Settings::overlay_paths`] gives.
    pub fn load_overlaid_model(
        &mut self,
        selection: &Selection,
        overlays: &(Vec<PathBuf>, Option<PathBuf>),
    ) -> Result<ValidModel, HostError> {
        let valid = self.load_model(selection)?;
        let (paths, folder) = overlays;
        let db = &mut self.database;
        let loader = &mut self.loader;
        let subject = "a private overlay is invalid".to_owned();
        let files = loader.overlays(db, paths, folder.as_deref()).map_err(|diagnostics| HostError::Diagnostics {
            subject: subject.clone(),
            findings: crate::Findings::collect(diagnostics, |_| None),
        })?;
        let source = loader.load_cached(db, selection);
        let parsed = acompose_engine::overlay::overlaid_model(db, source, &files);
        if parsed.has_errors() {
            let findings = crate::Findings::collect(parsed.diagnostics, |path| loader.text_of(db, path));
            return Err(HostError::Diagnostics { subject, findings });
        }
        Ok(ValidModel { model: parsed.value, warnings: valid.warnings })
    }

    /// Reads and resolves a `compose` request (see [`request::prepare`]), and returns it
    /// with the loader that read it, whose record of observed paths and counters the
    /// warm-path cache and `--stats` need.
    pub fn prepare(
        &mut self,
        request_path: &Path,
        projects: &Path,
        skill_policy: Option<SkillPolicy>,
        defaults: &request::RequestDefaults,
    ) -> Result<(Prepared<'_>, &Loader), HostError> {
        let Self { database, loader } = self;
        let prepared = request::prepare(database, loader, request_path, projects, skill_policy, defaults)?;
        Ok((prepared, loader))
    }

    /// Ends the command's use of the database: drops it, with every input and memo, and
    /// returns what the loader observed (the fingerprint cache's inputs) and its counters.
    /// What is written after a composition (the cache) then does not hold the estate's
    /// summaries, listings and bundle in memory beside it.
    pub fn into_observations(self) -> Observations {
        let Self { database, loader } = self;
        drop(database);
        loader.into_observations()
    }
}
