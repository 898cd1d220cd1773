//! `Converger`: the live database and loader behind bare `acompose` and
//! `acompose watch`. Converges the roster artifact and, when trusted roots are
//! configured, one bundle per role, the bundle index and the repository plan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use acompose_engine::bundle::{Bundle, composition_bundle};
use acompose_engine::compose::{
    Composition, CompositionSource, RepositoryInput, RoleAndTier, SourceKind, role_and_tier_diagnostics,
};
use acompose_engine::convergence::roster_files;
use acompose_engine::convergence::{
    ContextEntry, RolePlan, index_json, parse_index, repository_plan_json, repository_plan_key,
};
use acompose_engine::diagnostic::sanitize;
use acompose_engine::host_config::HostConfig;
use acompose_engine::person::PersonModel;
use acompose_engine::request::Delivery;
use acompose_engine::{Database, Diagnostic, OutputFile, PersonSource};
use rayon::prelude::*;
use salsa::Setter;

use crate::compose::bundle::{Materialized, Placement, Verification, materialize_into, materialize_with};
use crate::compose::estate::{
    estate_diagnostics, facts, name_projects_root_in, revision_sources, roots_under, trusted_repositories,
    unavailable_location,
};
use crate::compose::load::Loader;
use crate::error::{Findings, HostError};
use crate::home::Home;
use crate::home::transaction::{self, Hooks, Outcome};
use crate::home::{refuse_symlinked_parents, selection_for};
use crate::progress::Progress;

pub use crate::home::{ARTIFACT_DIR, BUNDLES_DIR, INDEX_FILE, PLAN_FILE, WRITTEN_FILE};

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
    /// The registered projections whose role got a new bundle: re-projected, or left
    /// alone and why.
    pub followed: Vec<crate::delivery::projections::Followed>,
    /// How many warnings the convergence met (shown through `Progress`). A convergence
    /// that warned leaves no fast-path fingerprints, so its warnings are shown on every
    /// run until they are fixed.
    pub warnings: usize,
    /// Each role whose bundle this convergence changed, with its new bundle id, by role.
    pub changed: Vec<(String, String)>,
    /// The roles that got no bundle because a repository they select is unavailable (the
    /// other roles converged): by role, with the missing `owner/repo` paths. Their
    /// errors went to `Progress`; the index names none of them.
    pub failed: Vec<FailedRole>,
}

/// A role a convergence could not give a bundle, and the repositories it selects that
/// are unavailable.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailedRole {
    pub role: String,
    pub missing: Vec<String>,
}

/// The live state: database, loader and one composition input per role.
#[derive(Default)]
pub struct Converger {
    pub db: Database,
    pub loader: Loader,
    compositions: BTreeMap<String, Composition>,
    config_key: Option<String>,
    /// Bundle ids this converger wrote or checked; watch mode does not check them again.
    verified: BTreeSet<String>,
    /// Leave stale bundles for `prune` instead of removing them at once (watch mode).
    pub defer_pruning: bool,
    prune_pending: Vec<(PathBuf, Vec<String>)>,
    /// The home's store, with the slices this converger already wrote or checked.
    store: Option<crate::compose::store::Store>,
    /// Warnings the last reading of the person source met.
    person_warnings: usize,
    /// The home's MCP inventory as last read (`<home>/mcp.kdl`), when there is one.
    mcp_inventory: Option<acompose_engine::SourceFile>,
    /// The host's `audit_policy`, set on every composition.
    audit_policy: acompose_engine::audit::AuditPolicy,
    /// The host configuration as diagnostics name it: the file that names the operating
    /// context, so a composition's problems with it are filed there.
    config_label: String,
    /// The last repository plan's key and bytes (`repository_plan_key`): an edit that
    /// changes no admission does not serialize the plan again.
    plan: Option<([u8; 32], acompose_engine::Bytes)>,
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

impl Converger {
    /// A converger over a given database (tests pass one that logs executed queries).
    pub fn with_database(db: Database) -> Self {
        Converger { db, ..Converger::default() }
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

    /// Frees the values the last convergence replaced. salsa keeps a replaced memo (a
    /// role's previous bundle, with its trace's decisions) until the next revision starts,
    /// which would otherwise be the next edit's first input: starting an empty revision
    /// at a quiet moment moves that freeing out of the next edit's time. Nothing is
    /// recomputed for it: the next read verifies the memos as any input change would.
    pub fn release_replaced(&mut self) {
        use salsa::Database as _;
        self.db.synthetic_write(salsa::Durability::LOW);
    }

    /// Whether a deferred convergence left stale bundles to prune.
    pub fn has_pending_prune(&self) -> bool {
        !self.prune_pending.is_empty()
    }

    /// Removes the stale bundles a deferred convergence left; returns how many. The
    /// caller holds the home lock.
    pub fn prune(&mut self) -> usize {
        let pending = std::mem::take(&mut self.prune_pending);
        // A bundle a later index names again (an edit undone), or keeps as a role's earlier
        // bundle, is kept.
        let bytes = pending.last().and_then(|(folder, _)| std::fs::read(folder.join(INDEX_FILE)).ok());
        let bytes = bytes.unwrap_or_default();
        let named: Vec<String> = parse_index(&bytes)
            .map(|index| index.into_values().collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain(acompose_engine::convergence::parse_history(&bytes).into_values().flatten())
            .collect();
        let folders: BTreeSet<PathBuf> = pending.iter().map(|(folder, _)| folder.clone()).collect();
        let pruned = pending
            .into_iter()
            .map(|(folder, stale)| {
                // Nor is one a registered projection shows now.
                let showing = folder
                    .parent()
                    .map(|home| crate::delivery::projections::showing(&Home::at(home)))
                    .unwrap_or_default();
                let stale: Vec<String> =
                    stale.into_iter().filter(|id| !named.contains(id) && !showing.contains(id)).collect();
                crate::convergence::gc::prune_bundles(&folder, &stale, &mut transaction::NoFaults)
            })
            .sum();
        for folder in &folders {
            crate::convergence::gc::forget_pruned(folder);
        }
        pruned
    }

    /// Converges home once. Reads sources with `fresh` (every file again) or reuses the
    /// inputs already loaded (watch mode, after `refresh`). Nothing is written until every
    /// role resolved without errors.
    pub fn converge(
        &mut self,
        home: &Home,
        projects: &Path,
        config: &HostConfig,
        progress: &dyn Progress,
        hooks: &mut dyn Hooks,
        fresh: bool,
    ) -> Result<Report, HostError> {
        let _ = self.db.take_query_counts();
        progress.phase_clock_reset();
        self.audit_policy = config.audit_policy;
        self.config_label = config_label(home);
        // Estate bundles link their skills from the store: the skill files are kept as
        // summaries and read again when a store entry is written.
        self.loader.summarize_skills(true);
        // The bytes of the skill files a selection may take are kept until their store
        // trees are written, so no source is read twice.
        self.loader.hold_selected_skills(true);
        let config_key = format!("{config:?}|{}", projects.display());
        let reload = fresh || self.config_key.as_deref() != Some(config_key.as_str());
        self.config_key = Some(config_key);
        let (source, _) = self.read_person_source(home, config, reload, progress)?;
        let (overlays, model) = self.read_overlays(home, config, source)?;
        self.read_mcp_inventory(home)?;
        let estate = self.read_estate(projects, config, reload, progress);
        let held = self.loader.take_held();
        let roles = self.resolve_roles(source, &model, &estate, config.skill_policy, &overlays);
        progress.phase("resolve and build bundles");
        let slugs: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
        let estate_wide = estate_diagnostics(&self.db, &estate.sources, &model, config.skill_policy, &slugs);
        let texts = Texts { db: &self.db, loader: &self.loader, config_label: &self.config_label, home };
        let paths = estate.repository_paths();
        let ResolvedRoles { bundles, warnings, failed } =
            resolved_bundles(&texts, &roles, estate_wide, (projects, &paths), progress)?;
        let mut report = Report {
            failed,
            warnings: warnings + self.person_warnings,
            source: model.source.clone(),
            roles: model.roles.len(),
            personalities: model.personalities.len(),
            artifact: home.artifact(),
            ..Report::default()
        };
        let bundles_dir = home.bundles();
        let current: Vec<String> = bundles.iter().map(|resolved| resolved.bundle.id.clone()).collect();
        // Held until the outputs are written: a `compose --out` into the same folder waits,
        // so nothing live there is taken for debris (nor is this run's staging by it).
        let _bundles_lock = lock_and_clean(home, &bundles_dir, fresh)?;
        // A prune a kill interrupted is finished before anything new is written.
        let kept = crate::convergence::gc::kept_bundles(home, &current);
        crate::convergence::gc::finish_interrupted_prune(&bundles_dir, &kept);
        // Recorded bundles neither indexed, shown nor current are a failed or killed run's;
        // it may also have left store entries of a bundle it never finished, which no
        // bundle links: after such a run the prune ends with a collection of the store.
        let after_failed_run =
            crate::convergence::gc::recorded_bundles(&bundles_dir).iter().any(|id| !kept.contains(id));
        let (written, created) = record_new_bundles(&bundles_dir, &current, hooks)?;
        let history = role_history(home, &bundles, &slugs, config.bundle_history());
        let outputs =
            Outputs { model: &model, estate: &estate, bundles: &bundles, current: &current, written, history };
        let targets = Targets { home, store: &mut self.store, verified: &self.verified, held, plan: &mut self.plan };
        let (newly_verified, stale) = match write(targets, outputs, progress, hooks, &mut report) {
            Ok(written) => written,
            Err(error) => {
                // The run failed after it may have staged bundles: what it created goes,
                // with the store entries nothing else references, so space comes back.
                discard_created(home, &bundles_dir, &created);
                return Err(error);
            }
        };
        self.verified.extend(newly_verified);
        self.prune_or_defer(&bundles_dir, stale, &mut report, hooks);
        if after_failed_run && !self.defer_pruning && !crate::convergence::gc::has_interrupted_prune(&bundles_dir) {
            let _ = crate::convergence::gc::collect_unreferenced(home, false);
        }
        let (executed, reused) = self.db.take_query_counts();
        report.queries_executed = executed;
        report.queries_reused = reused;
        Ok(report)
    }

    /// Read: loads the person source (again when `reload`) and validates it. Errors stop
    /// the convergence; warnings go to `progress`.
    /// The roster the host configuration selects, read and validated.
    pub fn person_model(
        &mut self,
        home: &Home,
        config: &HostConfig,
        progress: &dyn Progress,
    ) -> Result<PersonModel, HostError> {
        self.read_person_source(home, config, true, progress).map(|(_, model)| model)
    }

    fn read_person_source(
        &mut self,
        home: &Home,
        config: &HostConfig,
        reload: bool,
        progress: &dyn Progress,
    ) -> Result<(PersonSource, PersonModel), HostError> {
        let selection = selection_for(config, home)?;
        let source = if reload || self.loader.observed().is_empty() {
            self.loader.load(&mut self.db, &selection)
        } else {
            self.loader.load_cached(&mut self.db, &selection)
        };
        progress.phase("load person source");
        let parsed = acompose_engine::person::person_model(&self.db, source);
        let findings = Findings::collect(parsed.diagnostics.clone(), |path| self.loader.text_of(&self.db, path));
        if parsed.has_errors() {
            return Err(HostError::Diagnostics { subject: "the person source is invalid".to_owned(), findings });
        }
        self.person_warnings = findings.diagnostics.len();
        if !findings.is_empty() {
            progress.diagnostics(&findings);
        }
        let model = parsed.value.clone();
        progress.phase("validate person source");
        Ok((source, model))
    }

    /// Reads `<home>/mcp.kdl` for every role's composition; its mistakes are each
    /// composition's (so they fail it), a file that cannot be read is refused here.
    fn read_mcp_inventory(&mut self, home: &Home) -> Result<(), HostError> {
        let path = home.mcp_inventory();
        let read = self.loader.home_file(
            &mut self.db,
            &path,
            acompose_engine::mcp::ORIGIN,
            acompose_engine::mcp::FILE,
            acompose_engine::limits::MCP_INVENTORY,
        );
        self.mcp_inventory = match read {
            Ok(file) => file,
            Err(Ok(too_large)) => {
                let findings = Findings::collect(vec![too_large], |_| None);
                return Err(HostError::Diagnostics { subject: "the MCP inventory is refused".to_owned(), findings });
            }
            Err(Err(message)) => return Err(HostError::environment(&path, message)),
        };
        Ok(())
    }

    /// Read: the operating-context repositories and the repositories their trusted roots
    /// declare, with their revisions (fingerprinted so a commit is noticed).
    fn read_estate(&mut self, projects: &Path, config: &HostConfig, reload: bool, progress: &dyn Progress) -> Estate {
        let repositories: Vec<String> = config.operating_context.iter().map(|(path, _)| path.clone()).collect();
        let spans = config.operating_context.iter().map(|(_, span)| span);
        let ids = context_ids(&repositories);
        progress.begin("reading repositories", repositories.len());
        let context_roots = roots_under(&self.loader, projects, &repositories);
        let context_catalogues = self.loader.catalogues(&mut self.db, &context_roots, reload);
        progress.advance(context_roots.len());
        let context_facts = facts(&mut self.loader, &context_roots, reload);
        let mut estate = Estate::default();
        for ((((repository, id), catalogue), (revision, path_key)), span) in
            repositories.iter().zip(&ids).zip(context_catalogues).zip(context_facts).zip(spans)
        {
            if let Some(revision) = &revision {
                estate.revisions.insert(repository.clone(), revision.clone());
            }
            estate.context_entries.push(ContextEntry {
                repository: repository.clone(),
                revision,
                available: catalogue.available(&self.db),
            });
            estate.sources.push(CompositionSource {
                id: id.clone(),
                kind: SourceKind::Root,
                required: true,
                location: repository.clone(),
                path_key,
                catalogue,
                span: Some(*span),
            });
        }
        let trusted = trusted_repositories(&mut self.db, &mut self.loader, &estate.sources, projects, reload);
        progress.extend(trusted.inputs.len());
        progress.advance(trusted.inputs.len());
        estate.revisions.extend(trusted.revisions);
        estate.repositories = trusted.inputs;
        progress.finish();
        let roots: Vec<&Path> = context_roots.iter().chain(&trusted.roots).map(|(root, _)| root.as_path()).collect();
        self.loader.note_sources(&roots, reload, revision_sources);
        progress.phase("read catalogues");
        estate
    }

    /// Resolve: one composition per role, whose bundles are computed in parallel on
    /// clones of the database (the results stay memoized in the live one).
    fn resolve_roles(
        &mut self,
        source: PersonSource,
        model: &PersonModel,
        estate: &Estate,
        skill_policy: acompose_engine::skill_rules::SkillPolicy,
        overlays: &[acompose_engine::SourceFile],
    ) -> Vec<(String, String, Composition)> {
        let mut roles: Vec<(String, String, Composition)> = Vec::new();
        if estate.sources.is_empty() {
            return roles;
        }
        for role in &model.roles {
            let tier = if role.model_tiers.iter().any(|tier| tier == "frontier") {
                "frontier".to_owned()
            } else {
                role.model_tiers.first().cloned().unwrap_or_else(|| "frontier".to_owned())
            };
            let composition =
                self.composition(source, &role.slug, &tier, &estate.sources, &estate.repositories, skill_policy);
            self.set_overlays(composition, overlays);
            roles.push((role.slug.clone(), tier, composition));
        }
        self.compositions.retain(|slug, _| model.role(slug).is_some());
        roles.par_iter().for_each_with(self.db.clone(), |db, (_, _, composition)| {
            let _ = composition_bundle(db, *composition);
        });
        roles
    }

    /// Record: stale bundles are removed now, or left for [`Converger::prune`] in watch mode.
    fn prune_or_defer(&mut self, bundles_dir: &Path, stale: Vec<String>, report: &mut Report, hooks: &mut dyn Hooks) {
        if self.defer_pruning {
            // Watch mode: the index is written, so readers no longer need the stale
            // bundles; they are removed when the inputs settle (`prune`), not while
            // edits keep coming.
            self.prune_pending.push((bundles_dir.to_path_buf(), stale));
        } else {
            report.bundles_pruned = crate::convergence::gc::prune_bundles(bundles_dir, &stale, hooks);
            crate::convergence::gc::forget_pruned(bundles_dir);
        }
    }

    /// Composes one role's bundle (native skills, at `tier`) from the host configuration
    /// and materializes it into `bundles` (a folder bare convergence never prunes): what
    /// an assigned launch delivers. An unknown role is refused with the valid slugs.
    pub fn compose_role(
        &mut self,
        home: &Home,
        projects: &Path,
        config: &HostConfig,
        request: &RoleRequest<'_>,
        progress: &dyn Progress,
    ) -> Result<(PathBuf, PersonModel), HostError> {
        let RoleRequest { role, tier, bundles } = *request;
        self.audit_policy = config.audit_policy;
        self.config_label = config_label(home);
        self.loader.summarize_skills(true);
        self.loader.hold_selected_skills(false);
        let (source, model) = self.read_person_source(home, config, true, progress)?;
        // What is wrong with the request is said before anything about the estate.
        let written = RoleAndTier { slug: role, role_span: None, tier, tier_span: None, file: "" };
        let mistakes: Vec<Diagnostic> = role_and_tier_diagnostics(&model, &written)
            .into_iter()
            .map(|mut diagnostic| {
                diagnostic.file = None;
                diagnostic
            })
            .collect();
        if !mistakes.is_empty() {
            let subject = format!("cannot launch `{}` at tier `{}`", sanitize(role), sanitize(tier));
            return Err(HostError::Diagnostics { subject, findings: Findings::collect(mistakes, |_| None) });
        }
        self.read_mcp_inventory(home)?;
        let (overlays, model) = self.read_overlays(home, config, source)?;
        let estate = self.read_estate(projects, config, true, progress);
        let composition =
            self.composition(source, role, tier, &estate.sources, &estate.repositories, config.skill_policy);
        self.set_overlays(composition, &overlays);
        let roles = vec![(role.to_owned(), tier.to_owned(), composition)];
        let estate_wide = estate_diagnostics(&self.db, &estate.sources, &model, config.skill_policy, &[role]);
        let texts = Texts { db: &self.db, loader: &self.loader, config_label: &self.config_label, home };
        let paths = estate.repository_paths();
        let resolved = resolved_bundles(&texts, &roles, estate_wide, (projects, &paths), progress)?;
        let Some(bundle) = resolved.bundles.first().map(|resolved| resolved.bundle) else {
            return Err(HostError::invalid(home, format!("role `{role}` resolved to no bundle")));
        };
        materialize_with(bundles, bundle, Verification::Full)?;
        Ok((bundles.join(&bundle.id), model))
    }

    /// Read: home's private overlays, and the roster with their seat names and digests
    /// (what `person.json` shows). A missing or invalid overlay stops the convergence.
    fn read_overlays(
        &mut self,
        home: &Home,
        config: &HostConfig,
        source: PersonSource,
    ) -> Result<(Vec<acompose_engine::SourceFile>, PersonModel), HostError> {
        let subject = "a private overlay is invalid".to_owned();
        let overlays = crate::compose::overlays::read_overlays(&mut self.loader, &mut self.db, home, config).map_err(
            |diagnostics| HostError::Diagnostics {
                subject: subject.clone(),
                findings: Findings::collect(diagnostics, |_| None),
            },
        )?;
        let parsed = acompose_engine::overlay::overlaid_model(&self.db, source, &overlays);
        if parsed.has_errors() {
            let findings = Findings::collect(parsed.diagnostics, |path| self.loader.text_of(&self.db, path));
            return Err(HostError::Diagnostics { subject, findings });
        }
        Ok((overlays, parsed.value))
    }

    /// Sets a composition's overlays when they changed.
    fn set_overlays(&mut self, composition: Composition, overlays: &[acompose_engine::SourceFile]) {
        if composition.overlays(&self.db) != overlays {
            composition.set_overlays(&mut self.db).to(overlays.to_vec());
        }
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
                if composition.mcp_inventory(db) != self.mcp_inventory {
                    composition.set_mcp_inventory(db).to(self.mcp_inventory);
                }
                if composition.audit_policy(db) != self.audit_policy {
                    composition.set_audit_policy(db).to(self.audit_policy);
                }
                if composition.request_path(db) != &self.config_label {
                    composition.set_request_path(db).to(self.config_label.clone());
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
                    self.config_label.clone(),
                    None,
                    None,
                    skill_policy,
                );
                composition.set_mcp_inventory(db).to(self.mcp_inventory);
                composition.set_audit_policy(db).to(self.audit_policy);
                self.compositions.insert(role.to_owned(), composition);
                composition
            }
        }
    }
}

/// One role's bundle to compose outside bare convergence: the role, its model tier and
/// the folder its bundle is materialized in.
#[derive(Debug, Clone, Copy)]
pub struct RoleRequest<'a> {
    pub role: &'a str,
    pub tier: &'a str,
    pub bundles: &'a Path,
}

/// What the estate's repositories contribute to every role's composition.
#[derive(Default)]
struct Estate {
    sources: Vec<CompositionSource>,
    repositories: Vec<RepositoryInput>,
    context_entries: Vec<ContextEntry>,
    /// `owner/repo` → the revision its `.git` names.
    revisions: BTreeMap<String, String>,
}

impl Estate {
    /// Every `owner/repo` path read under the projects root: the operating context's and
    /// the trusted roots' repositories.
    fn repository_paths(&self) -> Vec<String> {
        self.sources
            .iter()
            .map(|source| source.location.clone())
            .chain(self.repositories.iter().map(|repository| repository.path.clone()))
            .collect()
    }
}

/// One role's bundle and the trace of its resolution, borrowed from the database.
struct Resolved<'db> {
    role: &'db str,
    tier: &'db str,
    bundle: &'db Bundle,
}

/// What resolution gave: the roles' bundles, how many warnings it met, and the roles that
/// failed alone.
struct ResolvedRoles<'db> {
    bundles: Vec<Resolved<'db>>,
    warnings: usize,
    failed: Vec<FailedRole>,
}

/// Where the text of a file a diagnostic names comes from: the loader's inputs, and the
/// host configuration (read again here, only when a diagnostic names it).
struct Texts<'a> {
    db: &'a Database,
    loader: &'a Loader,
    config_label: &'a str,
    home: &'a Home,
}

impl Texts<'_> {
    fn findings(&self, diagnostics: Vec<Diagnostic>) -> Findings {
        Findings::collect(diagnostics, |path| {
            self.loader.text_of(self.db, path).or_else(|| {
                let config = (path == self.config_label).then(|| self.home.config_file())?;
                crate::home::read_config_file(&config).ok().flatten().map(|file| file.text)
            })
        })
    }
}

/// The label diagnostics give the host configuration of `home`.
fn config_label(home: &Home) -> String {
    home.config_file().display().to_string()
}

/// Whether a role's resolution failed only because repositories it selects are
/// unavailable: then it fails alone, and the other roles converge (seed 001: a selected
/// provider's unavailable catalogue fails that role's launch).
fn fails_alone(diagnostics: &[Diagnostic]) -> bool {
    let mut errors = diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).peekable();
    errors.peek().is_some() && errors.all(|diagnostic| unavailable_location(diagnostic).is_some())
}

/// Sorts diagnostics root cause first and drops repeats: every file's own problems in
/// file order, then those that can follow from another file's (an overlay naming a
/// repository the estate could not read), so the first one printed is the one to fix.
fn root_cause_first(diagnostics: &mut Vec<Diagnostic>) {
    let consequence = |diagnostic: &Diagnostic| usize::from(diagnostic.code.starts_with("overlay-"));
    diagnostics.sort_by(|a, b| {
        (consequence(a), &a.file, a.span, &a.message).cmp(&(consequence(b), &b.file, b.span, &b.message))
    });
    diagnostics.dedup();
}

/// Resolve: every role's bundle. A role whose only errors are repositories it selects
/// being unavailable fails alone (its diagnostics are shown, its name and the missing
/// paths returned); any other error, or every role failing, is an error with every
/// diagnostic.
fn resolved_bundles<'db>(
    texts: &Texts<'db>,
    roles: &'db [(String, String, Composition)],
    mut diagnostics: Vec<Diagnostic>,
    (projects, repositories): (&Path, &[String]),
    progress: &dyn Progress,
) -> Result<ResolvedRoles<'db>, HostError> {
    let db = texts.db;
    let mut bundles = Vec::new();
    let mut failed = Vec::new();
    let mut alone = true;
    for (role, tier, composition) in roles {
        let result = composition_bundle(db, *composition);
        diagnostics.extend(result.diagnostics.iter().cloned());
        match &result.value {
            Some(bundle) => bundles.push(Resolved { role, tier, bundle }),
            None if fails_alone(&result.diagnostics) => {
                let mut missing: Vec<String> =
                    result.diagnostics.iter().filter_map(unavailable_location).map(str::to_owned).collect();
                missing.sort();
                missing.dedup();
                failed.push(FailedRole { role: role.clone(), missing });
            }
            None => alone = false,
        }
    }
    let estate_errors =
        diagnostics.iter().any(|diagnostic| diagnostic.is_error() && unavailable_location(diagnostic).is_none());
    root_cause_first(&mut diagnostics);
    let mut findings = texts.findings(diagnostics);
    name_projects_root_in(&mut findings, projects, repositories);
    if !alone || estate_errors || bundles.is_empty() && !failed.is_empty() {
        return Err(HostError::Diagnostics { subject: "the estate cannot be converged".to_owned(), findings });
    }
    if !findings.is_empty() {
        progress.diagnostics(&findings);
    }
    failed.sort_by(|a, b| a.role.cmp(&b.role));
    Ok(ResolvedRoles { bundles, warnings: findings.diagnostics.len(), failed })
}

/// The roles whose bundle differs from the one the home's index names now (read before
/// the new index is committed), with the new id, by role.
fn changed_roles(home: &Home, bundles: &[Resolved<'_>]) -> Vec<(String, String)> {
    let previous = crate::home::read_index(home);
    let mut changed: Vec<(String, String)> = bundles
        .iter()
        .filter(|resolved| previous.get(resolved.role) != Some(&resolved.bundle.id))
        .map(|resolved| (resolved.role.to_owned(), resolved.bundle.id.clone()))
        .collect();
    changed.sort();
    changed
}

/// Each role's earlier bundles once this convergence's index is in: the previous index's
/// bundle of a role whose bundle changed (or that failed) first, then those kept before,
/// at most `keep` per role of the roster. None when the estate has no bundle.
fn role_history(home: &Home, bundles: &[Resolved<'_>], roles: &[&str], keep: usize) -> BTreeMap<String, Vec<String>> {
    if bundles.is_empty() {
        return BTreeMap::new();
    }
    let current: BTreeMap<&str, &str> =
        bundles.iter().map(|resolved| (resolved.role, resolved.bundle.id.as_str())).collect();
    let previous = crate::home::read_index(home);
    let earlier = crate::home::read_history(home);
    acompose_engine::convergence::next_history(&previous, &earlier, &current, roles, keep)
}

/// Materialize, first step: records the bundles this run will create before any folder
/// appears (a bundle already on disk is either named by the previous index, recorded
/// already, or not the estate's: `compose --out`). Returns the whole record and the ids
/// this run is to create (none of them on disk yet).
fn record_new_bundles(
    bundles_dir: &Path,
    current: &[String],
    hooks: &mut dyn Hooks,
) -> Result<(BTreeSet<String>, Vec<String>), HostError> {
    let mut written = crate::convergence::gc::recorded_bundles(bundles_dir);
    let new: Vec<String> = current
        .iter()
        .filter(|id| !written.contains(*id) && std::fs::symlink_metadata(bundles_dir.join(id)).is_err())
        .cloned()
        .collect();
    written.extend(new.iter().cloned());
    if !new.is_empty() {
        let record = bundles_dir.join(WRITTEN_FILE);
        hooks.before(transaction::Step::WriteTemporary(&record)).map_err(|error| {
            HostError::environment(
                bundles_dir,
                format!(
                    "cannot record the bundles in `{}`: {}; nothing was changed",
                    bundles_dir.display(),
                    crate::compose::load::error_kind(&error)
                ),
            )
        })?;
        append_written(bundles_dir, &new)
            .or_else(|_| write_written(bundles_dir, &written))
            .map_err(|message| HostError::environment(bundles_dir, message))?;
    }
    Ok((written, new))
}

/// The inputs of [`Converger::write`]: what was resolved, and the bundle record.
struct Outputs<'a, 'db> {
    model: &'a PersonModel,
    estate: &'a Estate,
    bundles: &'a [Resolved<'db>],
    current: &'a [String],
    written: BTreeSet<String>,
    /// Each role's earlier bundles, kept from pruning and written into the index.
    history: BTreeMap<String, Vec<String>>,
}

/// After a failed run: removes the bundles it `created` (none was on disk before it, so
/// none is named by an index or shown by a projection) and every store entry no bundle
/// of the home references, which takes those of half-written bundles too; then forgets
/// them in the record. Best effort: whatever stays is pruned by the next run. The caller
/// holds the home and bundles locks.
fn discard_created(home: &Home, bundles_dir: &Path, created: &[String]) {
    if created.is_empty() {
        return;
    }
    // A commit that failed and could not be rolled back leaves an index that may name
    // them until the next run rolls it back: those stay.
    let kept = crate::convergence::gc::kept_bundles(home, &[]);
    for id in created.iter().filter(|id| !kept.contains(*id)) {
        let _ = std::fs::remove_dir_all(bundles_dir.join(id));
    }
    let _ = crate::convergence::gc::collect_unreferenced(home, false);
    crate::convergence::gc::forget_pruned(bundles_dir);
}

/// Where [`write`] writes, and what this converger already knows is there.
struct Targets<'a> {
    home: &'a Home,
    store: &'a mut Option<crate::compose::store::Store>,
    verified: &'a BTreeSet<String>,
    /// The source bytes the read kept for the store trees (see `Loader::take_held`).
    held: crate::compose::load::HeldSources,
    /// The last repository plan (see [`Converger`]'s `plan`).
    plan: &'a mut Option<([u8; 32], acompose_engine::Bytes)>,
}

/// Materialize and record: writes every bundle, swaps in the artifact, index and plan
/// and lets projections follow. Returns the bundles now known to be in place and the
/// stale ones to prune (less those a projection still shows).
fn write(
    targets: Targets<'_>,
    outputs: Outputs<'_, '_>,
    progress: &dyn Progress,
    hooks: &mut dyn Hooks,
    report: &mut Report,
) -> Result<(Vec<String>, Vec<String>), HostError> {
    let home = targets.home;
    let bundles_dir = home.bundles();
    let store = match targets.store.take() {
        Some(store) if store == crate::compose::store::Store::of_home(home) => store,
        _ => crate::compose::store::Store::of_home(home),
    }
    .holding(targets.held);
    // The index and plan are serialized and staged (written and flushed, nothing swapped
    // in) while the bundles are written: on a large estate the plan is hundreds of
    // kilobytes of JSON, and a watch edit writes one bundle mostly waiting on the disk.
    // They are swapped in once every bundle they name is in place; a failed
    // materialization drops the staged outputs, leaving the old ones.
    let artifact = report.artifact.clone();
    let (materialized, prepared) = rayon::join(
        || materialize_bundles(&bundles_dir, &store, outputs.bundles, targets.verified),
        || {
            let files = index_and_plan(outputs.model, outputs.bundles, outputs.estate, &outputs.history, targets.plan);
            prepare_outputs(home, &artifact, outputs.model, files, &mut *hooks)
        },
    );
    // The held bytes go as soon as the bundles are written.
    *targets.store = Some(store.released());
    let newly_verified = materialized.map(|(ids, new, reused, written)| {
        report.bundles_new += new;
        report.bundles_reused += reused;
        report.files_written += written;
        ids
    })?;
    progress.phase("materialize bundles");
    let kept: Vec<String> =
        outputs.current.iter().cloned().chain(outputs.history.values().flatten().cloned()).collect();
    let stale = stale_bundles(&bundles_dir, &outputs.written, &kept);
    report.changed = changed_roles(home, outputs.bundles);
    commit_outputs(prepared?, hooks, report)?;
    progress.phase("write artifact, index and plan; prune");
    report.files_written += report.estate_files_written;
    // Projections follow their role before the old bundles go, so no harness reads a
    // dangling link; a bundle one still shows (its re-projection failed) is kept.
    let following = crate::delivery::projections::follow(home);
    report.followed = following.followed;
    let stale = stale.into_iter().filter(|id| !following.showing.contains(id)).collect();
    Ok((newly_verified, stale))
}

/// Takes the lock of the bundles folder and removes the debris of interrupted runs from
/// it and from home (its cache and artifact folders included), and with `store` the
/// staging folders interrupted writers left in the store. The caller holds the home
/// lock, so no other convergence is live; the bundles lock keeps out a `compose --out`
/// into the same folder. Listing the store means reading every entry's name, so a live
/// converger does it only when it reads its sources afresh: staging debris has hidden
/// names, is never reached from a bundle, and waits for that run or for `gc`.
fn lock_and_clean(home: &Home, bundles_dir: &Path, store: bool) -> Result<Option<transaction::Lock>, HostError> {
    if !bundles_dir.is_dir() {
        return Ok(None);
    }
    let lock = transaction::lock(bundles_dir, crate::home::LOCK_TIMEOUT)?;
    for folder in [home.to_path_buf(), bundles_dir.to_path_buf(), home.cache(), home.artifact()] {
        crate::home::debris::remove(&folder);
    }
    if store {
        crate::compose::store::Store::of_home(home).remove_staging();
    }
    Ok(Some(lock))
}

/// Materialize: every bundle, in parallel (bundles this converger already checked are
/// reused at a glance). Returns the ids now known to be in place, and how many bundles
/// were new and reused and how many files were written.
fn materialize_bundles(
    bundles_dir: &Path,
    store: &crate::compose::store::Store,
    bundles: &[Resolved<'_>],
    verified: &BTreeSet<String>,
) -> Result<(Vec<String>, usize, usize, usize), HostError> {
    let outcomes: Vec<Result<crate::compose::bundle::Materialization, HostError>> = bundles
        .par_iter()
        .map(|resolved| {
            if verified.contains(&resolved.bundle.id) && bundles_dir.join(&resolved.bundle.id).is_dir() {
                return Ok(crate::compose::bundle::Materialization { outcome: Materialized::Reused, written: 0 });
            }
            materialize_into(
                bundles_dir,
                resolved.bundle,
                Placement::Linked(store),
                Verification::Light,
                &mut || Ok(()),
            )
        })
        .collect();
    let (mut new, mut reused, mut written) = (0, 0, 0);
    let mut newly_verified = Vec::new();
    for (resolved, outcome) in bundles.iter().zip(outcomes) {
        let materialization = outcome?;
        match materialization.outcome {
            Materialized::New => {
                new += 1;
                written += materialization.written;
            }
            Materialized::Reused => reused += 1,
        }
        newly_verified.push(resolved.bundle.id.clone());
    }
    Ok((newly_verified, new, reused, written))
}

/// The bundles this convergence may prune: those the previous index named or kept as a
/// role's earlier bundle (a `compose --out` into the same folder is not ours to remove)
/// and those an earlier convergence materialized but never got to name, less the `kept`
/// ones (the current bundles and the new index's earlier ones). Read before the new
/// index is written.
fn stale_bundles(bundles_dir: &Path, written: &BTreeSet<String>, kept: &[String]) -> Vec<String> {
    let previously_named: Vec<String> = std::fs::read(bundles_dir.join(INDEX_FILE))
        .ok()
        .and_then(|bytes| parse_index(&bytes))
        .map(|index| index.into_values().collect())
        .unwrap_or_default();
    let previously_kept = std::fs::read(bundles_dir.join(INDEX_FILE))
        .map(|bytes| acompose_engine::convergence::parse_history(&bytes))
        .unwrap_or_default();
    previously_named
        .into_iter()
        .chain(previously_kept.into_values().flatten())
        .chain(written.iter().cloned())
        .filter(|id| !kept.contains(id))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect()
}

/// Record, first half: stages the roster artifact (`person.json` among it),
/// `bundles/index.json` and `repository-plan.json` as one transaction in `home`, so they
/// always name the same generation: a failure or a crash leaves all three old, success
/// (after [`commit_outputs`]) all three new. The index and plan are removed when the
/// estate has no bundles any more.
fn prepare_outputs<'h>(
    home: &'h Home,
    artifact: &Path,
    model: &PersonModel,
    (index_files, plan_files): (Vec<OutputFile>, Vec<OutputFile>),
    hooks: &mut dyn Hooks,
) -> Result<transaction::Prepared<'h>, HostError> {
    let artifact_files = roster_files(model);
    refuse_symlinked_parents(home, artifact)?;
    let mut parts = vec![transaction::Part { folder: ARTIFACT_DIR, files: &artifact_files }];
    let with_index = home.bundles().exists() || !index_files.is_empty();
    if with_index {
        parts.push(transaction::Part { folder: BUNDLES_DIR, files: &index_files });
    }
    let with_plan = home.plan_file().exists() || !plan_files.is_empty() || home.ownership_record().exists();
    if with_plan {
        parts.push(transaction::Part { folder: "", files: &plan_files });
    }
    Ok(transaction::prepare(home, &parts, hooks)?)
}

/// Swaps in the outputs [`prepare_outputs`] staged and counts what was written: the
/// roster artifact's outcome first, then the index's and the plan's.
fn commit_outputs(
    prepared: transaction::Prepared<'_>,
    hooks: &mut dyn Hooks,
    report: &mut Report,
) -> Result<(), HostError> {
    let mut outcomes = prepared.commit(hooks)?.into_iter();
    report.roster = outcomes.next().unwrap_or_default();
    report.files_written += report.roster.written.len();
    for outcome in outcomes {
        report.estate_files_written += outcome.written.len() + outcome.removed.len();
    }
    Ok(())
}

/// The bytes of `bundles/index.json` and `repository-plan.json` (none when the estate has
/// no bundles).
fn index_and_plan(
    model: &PersonModel,
    bundles: &[Resolved<'_>],
    estate: &Estate,
    history: &BTreeMap<String, Vec<String>>,
    last_plan: &mut Option<([u8; 32], acompose_engine::Bytes)>,
) -> (Vec<OutputFile>, Vec<OutputFile>) {
    if bundles.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let index_entries: Vec<(&str, &str)> =
            bundles.iter().map(|resolved| (resolved.role, resolved.bundle.id.as_str())).collect();
        let plans: Vec<RolePlan<'_>> = bundles
            .iter()
            .map(|resolved| RolePlan {
                role: resolved.role,
                model_tier: resolved.tier,
                providers: resolved.bundle.providers(),
            })
            .collect();
        let key = repository_plan_key(&model.source, &estate.context_entries, &plans, &estate.revisions);
        let plan = match last_plan.as_ref() {
            Some((last, bytes)) if *last == key => bytes.clone(),
            _ => {
                let bytes: acompose_engine::Bytes =
                    repository_plan_json(&model.source, &estate.context_entries, &plans, &estate.revisions).into();
                *last_plan = Some((key, bytes.clone()));
                bytes
            }
        };
        (
            vec![OutputFile { path: INDEX_FILE.to_owned(), bytes: index_json(&index_entries, history).into() }],
            vec![OutputFile { path: PLAN_FILE.to_owned(), bytes: plan }],
        )
    }
}

/// Replaces `bundles/.acompose-written` atomically.
fn write_written(bundles_dir: &Path, ids: &BTreeSet<String>) -> Result<(), String> {
    let problem = |error: std::io::Error| {
        format!(
            "cannot record the bundles in `{}`: {}",
            bundles_dir.display(),
            crate::compose::load::error_kind(&error)
        )
    };
    if std::fs::symlink_metadata(bundles_dir).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(format!("`{}` is a symbolic link", bundles_dir.display()));
    }
    std::fs::create_dir_all(bundles_dir).map_err(problem)?;
    let text: String = ids.iter().map(|id| format!("{id}\n")).collect();
    crate::home::atomic::replace(bundles_dir, WRITTEN_FILE, text.as_bytes()).map_err(|error| match error.cause {
        Some(cause) => problem(cause),
        None => error.message,
    })
}

/// Adds ids to an existing `bundles/.acompose-written` (one flush, where replacing it
/// takes two). Each id goes on a line of its own after a line break, so a line an
/// interrupted append left torn stays apart and is ignored. Fails, changing nothing the
/// record means, when the record is missing or not a regular file.
fn append_written(bundles_dir: &Path, ids: &[String]) -> Result<(), String> {
    use std::io::Write as _;
    let path = bundles_dir.join(WRITTEN_FILE);
    let cannot = |error: std::io::Error| {
        format!("cannot record the bundles in `{}`: {}", path.display(), crate::compose::load::error_kind(&error))
    };
    if !std::fs::symlink_metadata(bundles_dir).is_ok_and(|metadata| metadata.is_dir())
        || !std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_file())
    {
        return Err(format!("`{}` is not a record to add to", path.display()));
    }
    let text: String = ids.iter().map(|id| format!("\n{id}\n")).collect();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).map_err(cannot)?;
    file.write_all(text.as_bytes()).and_then(|()| file.sync_data()).map_err(cannot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_append_to_the_bundle_record_survives_a_torn_line() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let bundles = temporary.path();
        assert!(append_written(bundles, &["0123456789abcdef".to_owned()]).is_err(), "no record to add to");
        write_written(bundles, &BTreeSet::from(["0123456789abcdef".to_owned()])).expect("record");
        // An append that was interrupted left half an id and no line break.
        let mut text = std::fs::read_to_string(bundles.join(WRITTEN_FILE)).expect("read");
        text.push_str("fedcba98");
        std::fs::write(bundles.join(WRITTEN_FILE), text).expect("tear");
        append_written(bundles, &["fedcba9876543210".to_owned()]).expect("append");
        assert_eq!(
            crate::convergence::gc::recorded_bundles(bundles),
            BTreeSet::from(["0123456789abcdef".to_owned(), "fedcba9876543210".to_owned()])
        );
    }
}
