//! A convergence session: the live database and loader behind bare `acompose` and
//! `acompose watch`. Converges the roster artifact and, when trusted roots are
//! configured, one bundle per role, the bundle index and the repository plan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use acompose_engine::bundle::{Bundle, composition_bundle};
use acompose_engine::compose::{Composition, CompositionSource, RepositoryInput, SourceKind};
use acompose_engine::converge::{HostConfig, roster_files};
use acompose_engine::estate::{ContextEntry, RolePlan, index_json, parse_index, repository_plan_json};
use acompose_engine::provider::trusted_root;
use acompose_engine::request::Delivery;
use acompose_engine::{Database, Diagnostic};
use rayon::prelude::*;
use salsa::Setter;

use crate::compose::{Materialized, Verification, materialize_with};
use crate::load::{Loader, label_of};
use crate::terminal::{Terminal, count_summary, render_diagnostics};
use crate::transaction::{self, Hooks, Outcome};
use crate::{exit, print_stderr};

/// Where things live inside home.
pub const ARTIFACT_DIR: &str = "sources/personality";
pub const BUNDLES_DIR: &str = "bundles";
pub const PLAN_FILE: &str = "repository-plan.json";
pub const INDEX_FILE: &str = "index.json";
/// The bundles host convergence materialized and has not pruned yet, one id per line.
/// Written before a new bundle folder appears, so a convergence that fails after
/// materializing leaves no bundle that a later one would not prune.
pub const WRITTEN_FILE: &str = ".acompose-written";

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
    /// Bundle ids this session wrote or checked; watch mode does not check them again.
    verified: std::collections::BTreeSet<String>,
    /// Leave stale bundles for `prune` instead of removing them at once (watch mode).
    pub defer_pruning: bool,
    prune_pending: Vec<(PathBuf, Vec<String>)>,
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

/// Phase timings for `-vv`: where a convergence spends its time.
struct Phases {
    enabled: bool,
    last: std::time::Instant,
}

impl Phases {
    fn new(enabled: bool) -> Self {
        Phases { enabled, last: std::time::Instant::now() }
    }

    fn mark(&mut self, phase: &str) {
        if self.enabled {
            let now = std::time::Instant::now();
            print_stderr(&format!("phase     {phase}: {} ms\n", (now - self.last).as_millis()));
            self.last = now;
        }
    }
}

/// `owner/repo` paths as folders under the projects root, with their labels.
fn roots_under(projects: &Path, repositories: &[String]) -> Vec<(PathBuf, String)> {
    repositories
        .iter()
        .map(|repository| {
            let path = projects.join(repository);
            let label = label_of(&path);
            (path, label)
        })
        .collect()
}

/// The revision and resolved identity of each root, looked up in parallel.
fn facts(roots: &[(PathBuf, String)]) -> Vec<(Option<String>, String)> {
    roots.par_iter().map(|(path, _)| (git_revision(path), crate::load::path_key(path))).collect()
}

/// The repositories trusted roots declare, as read under the projects root.
pub struct TrustedRepositories {
    pub inputs: Vec<RepositoryInput>,
    /// Their folders and labels, in the same order.
    pub roots: Vec<(PathBuf, String)>,
    /// `owner/repo` → the revision its `.git` names.
    pub revisions: BTreeMap<String, String>,
}

/// Reads (in parallel; only those not read yet unless `fresh`) every repository the
/// trusted roots among `sources` declare. Shared by `compose` and estate convergence.
pub fn trusted_repositories(
    db: &mut Database,
    loader: &mut Loader,
    sources: &[CompositionSource],
    projects: &Path,
    fresh: bool,
) -> TrustedRepositories {
    let mut paths: Vec<String> = Vec::new();
    for source in sources.iter().filter(|source| source.kind == SourceKind::Root) {
        let Some(roles_file) = acompose_engine::catalogue::catalogue_names(db, source.catalogue).roles else {
            continue;
        };
        for repository in &trusted_root(db, roles_file).value.repositories {
            if !paths.contains(&repository.path) {
                paths.push(repository.path.clone());
            }
        }
    }
    let roots = roots_under(projects, &paths);
    let catalogues = loader.catalogues(db, &roots, fresh);
    let mut revisions = BTreeMap::new();
    let mut inputs = Vec::new();
    for ((path, catalogue), (revision, path_key)) in paths.iter().zip(catalogues).zip(facts(&roots)) {
        if let Some(revision) = revision {
            revisions.insert(path.clone(), revision);
        }
        inputs.push(RepositoryInput { path: path.clone(), path_key, catalogue });
    }
    TrustedRepositories { inputs, roots, revisions }
}

/// The files a revision is read from (`.git/HEAD`, the branch's ref, `packed-refs`), to
/// fingerprint: a commit must make the next run converge again.
pub fn revision_sources(repository: &Path) -> Vec<PathBuf> {
    let git = repository.join(".git");
    let mut paths = vec![git.join("HEAD")];
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(reference) = head.trim().strip_prefix("ref: ")
        && !reference.contains("..")
    {
        paths.push(git.join(reference));
        paths.push(git.join("packed-refs"));
    }
    paths
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

    /// Recomputes every role's bundle in the live database without writing anything:
    /// the in-memory half of a reconvergence (used by the benchmarks). Returns how many
    /// bundles are ready.
    pub fn recompute_bundles(&self) -> usize {
        let compositions: Vec<Composition> = self.compositions.values().copied().collect();
        compositions
            .par_iter()
            .map_with(self.db.clone(), |db, composition| {
                usize::from(composition_bundle(db, *composition).value.is_some())
            })
            .sum()
    }

    /// Whether a deferred convergence left stale bundles to prune.
    pub fn has_pending_prune(&self) -> bool {
        !self.prune_pending.is_empty()
    }

    /// Removes the stale bundles a deferred convergence left; returns how many. The
    /// caller holds the home lock.
    pub fn prune(&mut self) -> usize {
        let pending = std::mem::take(&mut self.prune_pending);
        // A bundle a later index names again (an edit undone) is kept.
        let named: Vec<String> = pending
            .last()
            .and_then(|(folder, _)| std::fs::read(folder.join(INDEX_FILE)).ok())
            .and_then(|bytes| parse_index(&bytes))
            .map(|index| index.into_values().collect())
            .unwrap_or_default();
        let folders: BTreeSet<PathBuf> = pending.iter().map(|(folder, _)| folder.clone()).collect();
        let pruned = pending
            .into_iter()
            .map(|(folder, stale)| {
                let stale: Vec<String> = stale.into_iter().filter(|id| !named.contains(id)).collect();
                prune_bundles(&folder, &stale)
            })
            .sum();
        for folder in &folders {
            forget_pruned(folder);
        }
        pruned
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
        let mut phases = Phases::new(terminal.verbose >= 2);
        let selection = crate::converge::selection_for(config, home);
        let config_key = format!("{config:?}|{}", projects.display());
        let reload = fresh || self.config_key.as_deref() != Some(config_key.as_str());
        self.config_key = Some(config_key);
        let source = if reload || self.loader.observed().is_empty() {
            self.loader.load(&mut self.db, &selection)
        } else {
            self.loader.load_cached(&mut self.db, &selection)
        };
        phases.mark("load person source");
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
        phases.mark("validate person source");
        let progress = crate::progress::bar(terminal, repositories.len(), "reading repositories");
        let context_roots = roots_under(projects, &repositories);
        let context_catalogues = self.loader.catalogues(&mut self.db, &context_roots, reload);
        progress.inc(context_roots.len() as u64);
        let context_facts = facts(&context_roots);
        let mut sources = Vec::new();
        let mut context_entries = Vec::new();
        let mut revisions = BTreeMap::new();
        for (((repository, id), catalogue), (revision, path_key)) in
            repositories.iter().zip(&ids).zip(context_catalogues).zip(context_facts)
        {
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
                path_key,
                catalogue,
            });
        }
        let trusted = trusted_repositories(&mut self.db, &mut self.loader, &sources, projects, reload);
        progress.inc_length(trusted.inputs.len() as u64);
        progress.inc(trusted.inputs.len() as u64);
        revisions.extend(trusted.revisions);
        let repository_inputs = trusted.inputs;
        let repository_roots = trusted.roots;
        progress.finish_and_clear();
        for (root, _) in context_roots.iter().chain(&repository_roots) {
            for path in revision_sources(root) {
                self.loader.note(&path, crate::load::observe(&path));
            }
        }
        phases.mark("read catalogues");

        // One composition per role; computed in parallel on clones of the database.
        let mut roles: Vec<(String, String, Composition)> = Vec::new();
        if !sources.is_empty() {
            for role in &model.roles {
                let tier = if role.model_tiers.iter().any(|tier| tier == "frontier") {
                    "frontier".to_owned()
                } else {
                    role.model_tiers.first().cloned().unwrap_or_else(|| "frontier".to_owned())
                };
                let composition =
                    self.composition(source, &role.slug, &tier, &sources, &repository_inputs, config.skill_policy);
                roles.push((role.slug.clone(), tier, composition));
            }
            self.compositions.retain(|slug, _| model.role(slug).is_some());
            roles.par_iter().for_each_with(self.db.clone(), |db, (_, _, composition)| {
                let _ = composition_bundle(db, *composition);
            });
        }
        phases.mark("resolve and build bundles");
        let db = &self.db;
        let mut diagnostics: Vec<Diagnostic> = Vec::new();
        let mut bundles: Vec<(&str, &str, &Bundle, &acompose_engine::trace::Trace)> = Vec::new();
        for (role, tier, composition) in &roles {
            let result = composition_bundle(db, *composition);
            diagnostics.extend(result.diagnostics.iter().cloned());
            let resolution = acompose_engine::compose::resolve(db, *composition).value.as_ref();
            if let (Some(bundle), Some(resolution)) = (&result.value, resolution) {
                bundles.push((role, tier, bundle, &resolution.trace));
            }
        }
        diagnostics.sort_by(|a, b| (&a.file, a.span, &a.message).cmp(&(&b.file, b.span, &b.message)));
        diagnostics.dedup();
        if !diagnostics.is_empty() && (diagnostics.iter().any(Diagnostic::is_error) || !terminal.quiet) {
            let text_of = |path: &str| self.loader.text_of(db, path);
            print_stderr(&render_diagnostics(
                &crate::terminal::visible(&diagnostics, *terminal),
                terminal.stderr,
                &text_of,
            ));
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
        let current: Vec<String> = bundles.iter().map(|(_, _, bundle, _)| bundle.id.clone()).collect();
        // Only folders this run creates: a bundle already on disk is either named by the
        // previous index, recorded already, or not the estate's (`compose --out`).
        let mut written = read_written(&bundles_dir);
        let before = written.len();
        written.extend(current.iter().filter(|id| std::fs::symlink_metadata(bundles_dir.join(id)).is_err()).cloned());
        if written.len() != before {
            write_written(&bundles_dir, &written).map_err(|message| {
                print_stderr(&format!("error: {message}\n"));
                exit::ENVIRONMENT
            })?;
        }
        remove_abandoned_staging(&bundles_dir);
        let verified = &self.verified;
        let outcomes: Vec<Result<Materialized, String>> = bundles
            .par_iter()
            .map(|(_, _, bundle, _)| {
                if verified.contains(&bundle.id) && bundles_dir.join(&bundle.id).is_dir() {
                    return Ok(Materialized::Reused);
                }
                materialize_with(&bundles_dir, bundle, Verification::Light)
            })
            .collect();
        phases.mark("materialize bundles");
        let mut newly_verified = Vec::new();
        for ((_, _, bundle, _), outcome) in bundles.iter().zip(outcomes) {
            match outcome {
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
            newly_verified.push(bundle.id.clone());
        }
        let files = roster_files(&model);
        crate::converge::refuse_symlinked_parents(home, &report.artifact).map_err(|message| {
            print_stderr(&format!("error: {message}\n"));
            exit::INVALID
        })?;
        report.roster = transaction::apply(&report.artifact, &files, hooks).map_err(fail)?;
        report.files_written += report.roster.written.len();

        let index_entries: Vec<(&str, &str)> =
            bundles.iter().map(|(role, _, bundle, _)| (*role, bundle.id.as_str())).collect();
        let (index_files, plan_files) = if bundles.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            let plans: Vec<RolePlan<'_>> = bundles
                .iter()
                .map(|(role, tier, bundle, trace)| RolePlan { role, bundle: &bundle.id, model_tier: tier, trace })
                .collect();
            (
                vec![acompose_engine::OutputFile { path: INDEX_FILE.to_owned(), bytes: index_json(&index_entries) }],
                vec![acompose_engine::OutputFile {
                    path: PLAN_FILE.to_owned(),
                    bytes: repository_plan_json(&model.source, &context_entries, &plans, &revisions),
                }],
            )
        };
        // The bundles the previous index named: the only ones this convergence may prune
        // (a `compose --out` into the same folder is not ours to remove).
        let previously_named: Vec<String> = std::fs::read(bundles_dir.join(INDEX_FILE))
            .ok()
            .and_then(|bytes| parse_index(&bytes))
            .map(|index| index.into_values().collect())
            .unwrap_or_default();
        // And the bundles an earlier convergence materialized but never got to name.
        let stale: Vec<String> = previously_named
            .into_iter()
            .chain(written.iter().cloned())
            .filter(|id| !current.contains(id))
            .collect::<BTreeSet<String>>()
            .into_iter()
            .collect();
        if bundles_dir.exists() || !index_files.is_empty() {
            let outcome = transaction::apply(&bundles_dir, &index_files, hooks).map_err(fail)?;
            report.estate_files_written += outcome.written.len() + outcome.removed.len();
        }
        if home.join(PLAN_FILE).exists() || !plan_files.is_empty() || home.join(transaction::OWNERSHIP_FILE).exists() {
            let outcome = transaction::apply(home, &plan_files, hooks).map_err(fail)?;
            report.estate_files_written += outcome.written.len() + outcome.removed.len();
        }
        self.verified.extend(newly_verified);
        phases.mark("write artifact, index and plan; prune");
        report.files_written += report.estate_files_written;
        if self.defer_pruning {
            // Watch mode: the index is written, so readers no longer need the stale
            // bundles; they are removed when the inputs settle (`prune`), not while
            // edits keep coming.
            self.prune_pending.push((bundles_dir.clone(), stale));
        } else {
            report.bundles_pruned = prune_bundles(&bundles_dir, &stale);
            forget_pruned(&bundles_dir);
        }
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
        skill_policy: acompose_engine::skill_rules::SkillPolicy,
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
                if composition.skill_policy(db) != skill_policy {
                    composition.set_skill_policy(db).to(skill_policy);
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
                    skill_policy,
                );
                self.compositions.insert(role.to_owned(), composition);
                composition
            }
        }
    }
}

/// How old a staging folder must be before it counts as abandoned: materializing a bundle
/// takes well under a second, so an hour leaves any live composition alone.
const ABANDONED_STAGING: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes `.staging-<id>-<pid>` folders a crashed materialization left in the bundles
/// folder, once they are [`ABANDONED_STAGING`] old. Failures are ignored: a leftover only
/// takes space.
fn remove_abandoned_staging(bundles_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(bundles_dir) else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix(".staging-")) else { continue };
        let shaped = rest.split_once('-').is_some_and(|(id, pid)| {
            is_bundle_id(id) && !pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit())
        });
        let abandoned = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_dir)
            .and_then(|metadata| metadata.modified().ok())
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age >= ABANDONED_STAGING);
        if shaped && abandoned {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn is_bundle_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// The ids in `bundles/.acompose-written` (none when it is missing or unreadable).
fn read_written(bundles_dir: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(bundles_dir.join(WRITTEN_FILE))
        .map(|text| text.lines().filter(|id| is_bundle_id(id)).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Replaces `bundles/.acompose-written` (temporary sibling, flushed, renamed).
fn write_written(bundles_dir: &Path, ids: &BTreeSet<String>) -> Result<(), String> {
    use std::io::Write as _;
    let problem = |error: std::io::Error| {
        format!("cannot record the bundles in `{}`: {}", bundles_dir.display(), crate::load::error_kind(&error))
    };
    if std::fs::symlink_metadata(bundles_dir).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(format!("`{}` is a symbolic link", bundles_dir.display()));
    }
    std::fs::create_dir_all(bundles_dir).map_err(problem)?;
    let text: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let temporary = bundles_dir.join(format!("{WRITTEN_FILE}.{}", std::process::id()));
    // A leftover temporary (even a planted link) is removed, never written through.
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, bundles_dir.join(WRITTEN_FILE))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(problem)
}

/// After pruning: the record keeps only the bundles still on disk (the named ones, and
/// any a failed removal left behind, to be tried again).
fn forget_pruned(bundles_dir: &Path) {
    let ids = read_written(bundles_dir);
    let kept: BTreeSet<String> = ids.iter().filter(|id| bundles_dir.join(id).is_dir()).cloned().collect();
    if kept != ids {
        let _ = write_written(bundles_dir, &kept);
    }
}

/// Removes the stale bundles (ids a previous index named, or the record holds, and the
/// new index does not). Returns how many were removed.
fn prune_bundles(bundles_dir: &Path, stale: &[String]) -> usize {
    stale
        .iter()
        .filter(|id| is_bundle_id(id))
        .filter(|id| std::fs::remove_dir_all(bundles_dir.join(id)).is_ok())
        .count()
}
