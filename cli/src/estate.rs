//! A convergence session: the live database and loader behind bare `acompose` and
//! `acompose watch`. Converges the roster artifact and, when trusted roots are
//! configured, one bundle per role, the bundle index and the repository plan.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::bundle::{Bundle, composition_bundle};
use acompose_engine::compose::{Composition, CompositionSource, RepositoryInput, SourceKind};
use acompose_engine::converge::{HostConfig, roster_files};
use acompose_engine::estate::{ContextEntry, RolePlan, index_json, parse_index, repository_plan_json};
use acompose_engine::provider::trusted_root;
use acompose_engine::request::Delivery;
use acompose_engine::{Database, Diagnostic};
use salsa::Setter;

use crate::compose::{Materialized, materialize};
use crate::load::{Loader, label_of};
use crate::terminal::{Terminal, count_summary, render_diagnostics};
use crate::transaction::{self, Hooks, Outcome};
use crate::{exit, print_stderr};

/// Where things live inside home.
pub const ARTIFACT_DIR: &str = "sources/personality";
pub const BUNDLES_DIR: &str = "bundles";
pub const PLAN_FILE: &str = "repository-plan.json";
pub const INDEX_FILE: &str = "index.json";

/// What one convergence did.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub source: String,
    pub roles: usize,
    pub personalities: usize,
    pub artifact: PathBuf,
    pub roster: Outcome,
    pub bundles_new: usize,
    pub bundles_reused: usize,
    pub bundles_pruned: usize,
    pub estate_files_written: usize,
    /// Files written in total (roster, index, plan, new bundles).
    pub files_written: usize,
    pub queries_executed: usize,
    pub queries_reused: usize,
}

/// The live state: database, loader and one composition input per role.
#[derive(Default)]
pub struct Session {
    pub db: Database,
    pub loader: Loader,
    compositions: BTreeMap<String, Composition>,
    config_key: Option<String>,
}

/// A source id for an operating-context repository: its name as a slug, or
/// `owner-name` when two repositories share a name.
fn context_ids(repositories: &[String]) -> Vec<String> {
    let slug = |text: &str| {
        let lowered: String = text
            .to_lowercase()
            .chars()
            .map(|character| if character.is_ascii_alphanumeric() { character } else { '-' })
            .collect();
        let trimmed = lowered.trim_matches('-').to_owned();
        if trimmed.is_empty() { "repository".to_owned() } else { trimmed }
    };
    let names: Vec<String> = repositories.iter().map(|path| slug(path.rsplit('/').next().unwrap_or(path))).collect();
    repositories
        .iter()
        .zip(&names)
        .map(|(path, name)| {
            if names.iter().filter(|other| *other == name).count() > 1 || name == "person" {
                slug(&path.replace('/', "-"))
            } else {
                name.clone()
            }
        })
        .collect()
}

/// The revision `.git/HEAD` names, without running git: a detached hash, or the hash of
/// the branch it points to (loose ref or packed-refs), or the branch name.
pub fn git_revision(repository: &Path) -> Option<String> {
    let git = repository.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned())
            .filter(|hash| hash.len() >= 7 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()));
    };
    if reference.contains("..") {
        return None;
    }
    if let Ok(hash) = std::fs::read_to_string(git.join(reference)) {
        return Some(hash.trim().to_owned());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).unwrap_or_default();
    packed
        .lines()
        .filter_map(|line| line.split_once(' '))
        .find(|(_, name)| *name == reference)
        .map(|(hash, _)| hash.to_owned())
        .or_else(|| Some(reference.trim_start_matches("refs/heads/").to_owned()))
}

impl Session {
    /// A session over a given database (tests pass one that logs executed queries).
    pub fn with_database(db: Database) -> Self {
        Session { db, ..Session::default() }
    }

    /// Converges home once. Reads sources with `fresh` (every file again) or reuses the
    /// inputs already loaded (watch mode, after `refresh`).
    pub fn converge(
        &mut self,
        home: &Path,
        projects: &Path,
        config: &HostConfig,
        terminal: &Terminal,
        hooks: &mut dyn Hooks,
        fresh: bool,
    ) -> Result<Report, u8> {
        let _ = self.db.take_query_counts();
        let selection = crate::converge::selection_for(config, home);
        let config_key = format!("{config:?}|{}", projects.display());
        let reload = fresh || self.config_key.as_deref() != Some(config_key.as_str());
        self.config_key = Some(config_key);
        let source = if reload || self.loader.observed().is_empty() {
            self.loader.load(&mut self.db, &selection)
        } else {
            self.loader.load_cached(&mut self.db, &selection)
        };
        let model_parsed = acompose_engine::person::person_model(&self.db, source);
        if !model_parsed.diagnostics.is_empty() {
            let text_of = |path: &str| self.loader.text_of(&self.db, path);
            if model_parsed.has_errors() || !terminal.quiet {
                print_stderr(&render_diagnostics(&model_parsed.diagnostics, terminal.stderr, &text_of));
            }
        }
        if model_parsed.has_errors() {
            print_stderr(&format!(
                "error: the person source is invalid ({})\n",
                count_summary(&model_parsed.diagnostics)
            ));
            return Err(exit::INVALID);
        }
        let model = model_parsed.value.clone();

        // The estate: operating context, trusted roots, per-role compositions.
        let repositories: Vec<String> = config.operating_context.iter().map(|(path, _)| path.clone()).collect();
        let ids = context_ids(&repositories);
        let progress = crate::progress::bar(terminal, repositories.len(), "reading repositories");
        let mut sources = Vec::new();
        let mut context_entries = Vec::new();
        let mut revisions = BTreeMap::new();
        for (repository, id) in repositories.iter().zip(&ids) {
            let path = projects.join(repository);
            let label = label_of(&path);
            let catalogue = if reload {
                self.loader.catalogue(&mut self.db, &path, &label)
            } else {
                self.loader.cached_catalogue(&mut self.db, &path, &label)
            };
            let revision = git_revision(&path);
            if let Some(revision) = &revision {
                revisions.insert(repository.clone(), revision.clone());
            }
            context_entries.push(ContextEntry {
                repository: repository.clone(),
                revision,
                available: catalogue.available(&self.db),
            });
            sources.push(CompositionSource {
                id: id.clone(),
                kind: SourceKind::Root,
                required: true,
                location: repository.clone(),
                path_key: path.canonicalize().unwrap_or(path).to_string_lossy().into_owned(),
                catalogue,
            });
            progress.inc(1);
        }
        let mut repository_inputs: Vec<RepositoryInput> = Vec::new();
        for source in &sources {
            let Some(roles_file) = acompose_engine::catalogue::catalogue_names(&self.db, source.catalogue).roles else {
                continue;
            };
            let root = trusted_root(&self.db, roles_file).value.clone();
            progress.inc_length(root.repositories.len() as u64);
            for repository in &root.repositories {
                if repository_inputs.iter().any(|existing| existing.path == repository.path) {
                    continue;
                }
                let path = projects.join(&repository.path);
                let label = label_of(&path);
                let catalogue = if reload {
                    self.loader.catalogue(&mut self.db, &path, &label)
                } else {
                    self.loader.cached_catalogue(&mut self.db, &path, &label)
                };
                if let Some(revision) = git_revision(&path) {
                    revisions.insert(repository.path.clone(), revision);
                }
                repository_inputs.push(RepositoryInput {
                    path: repository.path.clone(),
                    path_key: path.canonicalize().unwrap_or(path).to_string_lossy().into_owned(),
                    catalogue,
                });
                progress.inc(1);
            }
        }
        progress.finish_and_clear();

        let mut bundles: Vec<(String, String, Bundle)> = Vec::new();
        let mut diagnostics: Vec<Diagnostic> = Vec::new();
        if !sources.is_empty() {
            for role in &model.roles {
                let tier = if role.model_tiers.iter().any(|tier| tier == "frontier") {
                    "frontier".to_owned()
                } else {
                    role.model_tiers.first().cloned().unwrap_or_else(|| "frontier".to_owned())
                };
                let composition = self.composition(source, &role.slug, &tier, &sources, &repository_inputs);
                let result = composition_bundle(&self.db, composition);
                diagnostics.extend(result.diagnostics.iter().cloned());
                if let Some(bundle) = &result.value {
                    bundles.push((role.slug.clone(), tier, bundle.clone()));
                }
            }
            self.compositions.retain(|slug, _| model.role(slug).is_some());
        }
        diagnostics.sort_by(|a, b| (&a.file, a.span, &a.message).cmp(&(&b.file, b.span, &b.message)));
        diagnostics.dedup();
        if !diagnostics.is_empty() && (diagnostics.iter().any(Diagnostic::is_error) || !terminal.quiet) {
            let text_of = |path: &str| self.loader.text_of(&self.db, path);
            print_stderr(&render_diagnostics(&diagnostics, terminal.stderr, &text_of));
        }
        if diagnostics.iter().any(Diagnostic::is_error) {
            print_stderr(&format!("error: the estate cannot be converged ({})\n", count_summary(&diagnostics)));
            return Err(exit::INVALID);
        }

        // Write: bundles (immutable, new folders only), then the roster artifact, then
        // the index and plan, then prune bundles the index no longer names.
        let fail = |error: transaction::TransactionError| {
            print_stderr(&format!("error: {error}\n"));
            error.exit_code()
        };
        let mut report = Report {
            source: model.source.clone(),
            roles: model.roles.len(),
            personalities: model.personalities.len(),
            artifact: home.join(ARTIFACT_DIR),
            ..Report::default()
        };
        let bundles_dir = home.join(BUNDLES_DIR);
        for (_, _, bundle) in &bundles {
            match materialize(&bundles_dir, bundle) {
                Ok(Materialized::New) => {
                    report.bundles_new += 1;
                    report.files_written += bundle.files.len();
                }
                Ok(Materialized::Reused) => report.bundles_reused += 1,
                Err(message) => {
                    print_stderr(&format!("error: {message}\n"));
                    return Err(exit::ENVIRONMENT);
                }
            }
        }
        let files = roster_files(&model);
        crate::converge::refuse_symlinked_parents(home, &report.artifact).map_err(|message| {
            print_stderr(&format!("error: {message}\n"));
            exit::INVALID
        })?;
        report.roster = transaction::apply(&report.artifact, &files, hooks).map_err(fail)?;
        report.files_written += report.roster.written.len();

        let index_entries: Vec<(&str, &str)> =
            bundles.iter().map(|(role, _, bundle)| (role.as_str(), bundle.id.as_str())).collect();
        let (index_files, plan_files) = if bundles.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            let traces: Vec<(String, String, String, acompose_engine::trace::Trace)> = bundles
                .iter()
                .filter_map(|(role, tier, bundle)| {
                    let trace = bundle.files.iter().find(|file| file.path == "trace.json")?;
                    Some((role.clone(), tier.clone(), bundle.id.clone(), serde_json::from_slice(&trace.bytes).ok()?))
                })
                .collect();
            let plans: Vec<RolePlan<'_>> = traces
                .iter()
                .map(|(role, tier, id, trace)| RolePlan { role, bundle: id, model_tier: tier, trace })
                .collect();
            (
                vec![acompose_engine::OutputFile { path: INDEX_FILE.to_owned(), bytes: index_json(&index_entries) }],
                vec![acompose_engine::OutputFile {
                    path: PLAN_FILE.to_owned(),
                    bytes: repository_plan_json(&model.source, &context_entries, &plans, &revisions),
                }],
            )
        };
        if bundles_dir.exists() || !index_files.is_empty() {
            let outcome = transaction::apply(&bundles_dir, &index_files, hooks).map_err(fail)?;
            report.estate_files_written += outcome.written.len() + outcome.removed.len();
        }
        if home.join(PLAN_FILE).exists() || !plan_files.is_empty() || home.join(transaction::OWNERSHIP_FILE).exists() {
            let outcome = transaction::apply(home, &plan_files, hooks).map_err(fail)?;
            report.estate_files_written += outcome.written.len() + outcome.removed.len();
        }
        report.files_written += report.estate_files_written;
        report.bundles_pruned = prune_bundles(&bundles_dir);
        let (executed, reused) = self.db.take_query_counts();
        report.queries_executed = executed;
        report.queries_reused = reused;
        Ok(report)
    }

    fn composition(
        &mut self,
        person: acompose_engine::PersonSource,
        role: &str,
        tier: &str,
        sources: &[CompositionSource],
        repositories: &[RepositoryInput],
    ) -> Composition {
        let db = &mut self.db;
        match self.compositions.get(role) {
            Some(&composition) => {
                if composition.person(db) != person {
                    composition.set_person(db).to(person);
                }
                if composition.model_tier(db) != tier {
                    composition.set_model_tier(db).to(tier.to_owned());
                }
                if composition.sources(db) != sources {
                    composition.set_sources(db).to(sources.to_vec());
                }
                if composition.repositories(db) != repositories {
                    composition.set_repositories(db).to(repositories.to_vec());
                }
                composition
            }
            None => {
                let composition = Composition::new(
                    db,
                    person,
                    role.to_owned(),
                    Delivery::NativeSkills,
                    tier.to_owned(),
                    sources.to_vec(),
                    repositories.to_vec(),
                    crate::estate::PLAN_FILE.to_owned(),
                    None,
                    None,
                );
                self.compositions.insert(role.to_owned(), composition);
                composition
            }
        }
    }
}

/// Removes bundle folders (16 hex digits) the index does not name. Staging folders are
/// left alone: a `compose --out` into the same folder may be writing one. Returns how
/// many were removed.
fn prune_bundles(bundles_dir: &Path) -> usize {
    let named =
        std::fs::read(bundles_dir.join(INDEX_FILE)).ok().and_then(|bytes| parse_index(&bytes)).unwrap_or_default();
    let keep: Vec<&String> = named.values().collect();
    let Ok(entries) = std::fs::read_dir(bundles_dir) else { return 0 };
    let mut pruned = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_bundle = name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_hexdigit());
        let is_directory = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_directory && is_bundle && !keep.contains(&&name) && std::fs::remove_dir_all(entry.path()).is_ok() {
            pruned += 1;
        }
    }
    pruned
}
