//! Resolution of one composition: which providers are admitted for the assigned role,
//! which of their skills are selected, excluded or shadowed, and why. Owns the rules of
//! SPEC 6.3 and the trace's decision order; it never reads files (catalogues are
//! inputs) and never writes the bundle (that is `bundle`).
//!
//! Decision order, documented for `trace.json`:
//! 1. `role:<assigned>`, then every other role of the roster (inactive), roster order;
//! 2. the person package: its role skill, methods, and each meld personality with its
//!    skill; then inactive personalities and inactive roles' skills and methods;
//! 3. every provider in precedence order: its `source:<id>` decision, then its ordinary
//!    skills in catalogue order, its composed skills in catalogue order, its
//!    instructions, then its folders without `SKILL.md` (`not-a-skill`); excluded
//!    providers keep their place in that order;
//! 4. every server of the home's MCP inventory (`mcp:<name>`), in inventory order:
//!    selected when tagged for the role or named by a trusted root's `mcp-server`,
//!    else excluded.
//!
//! Private overlays (`crate::overlay`) add to that order: after the roles, one
//! `overlay:<file>` decision per overlay that concerns the role and a `role:` decision per
//! seat it names; their `exclude` and `admit` entries change a provider's `source:`
//! decision and a skill's decision in place (cause `overlay-…`); their instructions come
//! last, after every MCP server.

mod audit;
mod candidates;
mod mcp_selection;
mod overlay;
mod person;
mod selection;

use std::collections::BTreeMap;

use crate::catalogue::catalogue_names;
use crate::catalogue::{Catalogue, CatalogueListing, SkillBudget, SkillKind, catalogue_listing};
use crate::db::{PersonSource, SourceFile};
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::person::{PersonModel, validate::person_model};
use crate::provider::RoleView;
use crate::request::Delivery;
use crate::selector::Pattern;
use crate::skill_rules::SkillPolicy;
use crate::trace::{Decision, Outcome, ProviderReport, SelectorReport, TraceEntry, TraceRecord, approximate_tokens};
pub use overlay::OverlayInstruction;
use selection::ProviderSelection;

/// The id of the person package among the providers.
pub(crate) const PERSON_SOURCE_ID: &str = "person";

/// A request source: a root read by convention, or a declared list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    Root,
    Declaration,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompositionSource {
    pub id: String,
    pub kind: SourceKind,
    pub required: bool,
    /// The path as the request wrote it.
    pub location: String,
    /// The resolved identity of the folder, for collapsing duplicates (set by the driver).
    pub path_key: String,
    pub catalogue: Catalogue,
    /// Where the request file (the composition's `request_path`) names the source.
    pub span: Option<Span>,
}

/// A repository a trusted root names, read from the projects root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepositoryInput {
    /// `owner/repo`.
    pub path: String,
    pub path_key: String,
    pub catalogue: Catalogue,
}

/// Everything one composition depends on.
#[salsa::input(debug)]
pub struct Composition {
    #[returns(copy)]
    pub person: PersonSource,
    #[returns(ref)]
    pub role: String,
    #[returns(copy)]
    pub delivery: Delivery,
    #[returns(ref)]
    pub model_tier: String,
    #[returns(ref)]
    pub sources: Vec<CompositionSource>,
    #[returns(ref)]
    pub repositories: Vec<RepositoryInput>,
    /// The request file, to place diagnostics about the role and tier.
    #[returns(ref)]
    pub request_path: String,
    #[returns(copy)]
    pub role_span: Option<Span>,
    #[returns(copy)]
    pub tier_span: Option<Span>,
    /// What Agent Skills findings do (request `skill-policy`, `--strict`, the host's
    /// `skill_policy`).
    #[returns(copy)]
    pub skill_policy: SkillPolicy,
    /// The home's MCP inventory (`<home>/mcp.kdl`), when there is one.
    #[returns(copy)]
    #[default]
    pub mcp_inventory: Option<SourceFile>,
    /// The private overlays, in the order given (`crate::overlay`); each is read only
    /// through its share for the role.
    #[returns(ref)]
    #[default]
    pub overlays: Vec<SourceFile>,
    /// What the content audit's findings do (the host's `audit_policy`, `crate::audit`).
    #[returns(copy)]
    #[default]
    pub audit_policy: crate::audit::AuditPolicy,
}

/// One selected catalogue skill and the files that go into the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectedSkill {
    pub source: String,
    pub name: String,
    pub kind: SkillKind,
    /// (path inside the bundle's skill folder, file); a composed skill's `COMPOSED.md`
    /// becomes `SKILL.md`.
    pub members: Vec<(String, SourceFile)>,
    pub bytes: u64,
}

/// A skill the person package delivers (role skill, method or personality skill).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonSkill {
    pub id: String,
    pub bytes: crate::Bytes,
}

/// A selected provider as the manifest lists it, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSource {
    pub id: String,
    pub category: String,
    pub scope: String,
    pub location: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub model: PersonModel,
    pub role: String,
    pub model_tier: String,
    pub delivery: Delivery,
    pub person_skills: Vec<PersonSkill>,
    pub selected: Vec<SelectedSkill>,
    pub instructions: Vec<(String, String, SourceFile)>,
    /// The instructions private overlays add, in overlay order.
    pub overlay_instructions: Vec<OverlayInstruction>,
    pub sources: Vec<ManifestSource>,
    /// The MCP servers the role receives, in inventory order.
    pub mcp_servers: Vec<crate::mcp::McpServer>,
    pub trace: TraceRecord,
}

/// How a provider was admitted.
#[derive(Debug, Clone)]
enum Admission {
    Whole { cause: &'static str, reason: String },
    Selector { patterns: Vec<Pattern>, roles_file: SourceFile, reason: String },
    Excluded { cause: &'static str, reason: String, skills: SkillListing },
}

/// Whether the trace of an excluded provider lists the skills of its catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SkillListing {
    /// One `TraceEntry::ExcludedSkills` entry names every ordinary skill of the catalogue.
    Listed,
    /// Only the `source:` decision is recorded.
    Unlisted,
}

#[derive(Debug, Clone)]
struct Candidate<'db> {
    id: String,
    category: &'static str,
    scope: String,
    location: String,
    path_key: String,
    catalogue: Option<Catalogue>,
    required: bool,
    is_request_source: bool,
    admission: Admission,
    /// For a trusted root request source: the role's view of it, for composed selectors
    /// (the memoized view itself: a view lists every repository its root declares).
    view: Option<&'db RoleView>,
    /// The repository's `skill` selectors, also when it is excluded.
    selectors: Vec<Pattern>,
    /// Where the source is named: a request source in the request file at this span, a
    /// trusted root's repository in its `roles.kdl` (the file) at its declaration.
    declaration: (Option<SourceFile>, Option<Span>),
}

/// Adds the budget split fields to a provider report.
fn with_budget(mut report: ProviderReport, budget: SkillBudget) -> ProviderReport {
    report.metadata_bytes = budget.metadata_bytes;
    report.instruction_bytes = budget.instruction_bytes;
    report.resource_bytes = budget.resource_bytes;
    report.binary_bytes = budget.binary_bytes;
    report
}

struct Resolver<'db> {
    db: &'db dyn salsa::Database,
    composition: Composition,
    /// The slug of the assigned role.
    slug: String,
    /// The request file, to place diagnostics about sources.
    request_path: String,
    decisions: Vec<TraceEntry>,
    providers: Vec<ProviderReport>,
    diagnostics: Vec<Diagnostic>,
    /// Selected skill name → (source, tree digest).
    taken: BTreeMap<String, (String, String)>,
    /// Names of inactive roles' skills and methods and of personalities outside the meld:
    /// a catalogue skill with one of these names never enters (cause, reason).
    reserved: BTreeMap<String, (&'static str, String)>,
    /// Each overlay's share for the role, in the order given.
    overlays: Vec<overlay::AppliedOverlay>,
    /// Whether a trusted root could not be read whole (its repository is unavailable or
    /// its `roles.kdl` has errors): what it would declare is unknown, so an overlay naming
    /// a repository nobody declares is that failure's consequence, not a mistake of its own.
    incomplete_roots: bool,
}

impl Resolver<'_> {
    #[expect(clippy::too_many_arguments, reason = "a decision has this many fields; a builder would only add noise")]
    fn decide(
        &mut self,
        subject: String,
        kind: &str,
        source: &str,
        outcome: Outcome,
        cause: &str,
        reason: String,
        selectors: Vec<String>,
    ) {
        self.decisions.push(TraceEntry::Decision(Decision {
            subject,
            kind: kind.to_owned(),
            source: source.to_owned(),
            outcome,
            cause: cause.to_owned(),
            reason,
            selectors,
            winner: None,
            metadata_bytes: None,
            findings: Vec::new(),
        }));
    }

    /// The decision made last, to complete it.
    fn last_decision(&mut self) -> Option<&mut Decision> {
        match self.decisions.last_mut() {
            Some(TraceEntry::Decision(decision)) => Some(decision),
            _ => None,
        }
    }

    /// Records the listed size of the skill the last decision is about.
    fn listed(&mut self, metadata_bytes: u64) {
        if let Some(last) = self.last_decision() {
            last.metadata_bytes = Some(metadata_bytes);
        }
    }

    fn error(
        &mut self,
        code: &'static str,
        file: String,
        span: Option<Span>,
        message: String,
        hint: impl Into<String>,
    ) {
        self.diagnostics.push(Diagnostic::error(code, message).in_file(file).at(span).hint(hint));
    }

    /// Claims a skill name for `source`; returns the outcome for a later copy.
    /// `file` names where the conflicting copy lives; it is only built for a conflict.
    fn claim(
        &mut self,
        name: &str,
        source: &str,
        digest: &str,
        file: impl FnOnce() -> String,
    ) -> Result<(), Option<String>> {
        match self.taken.get(name) {
            None => {
                self.taken.insert(name.to_owned(), (source.to_owned(), digest.to_owned()));
                Ok(())
            }
            Some((winner, existing)) if existing == digest => Err(Some(winner.clone())),
            Some((winner, _)) => {
                let winner = winner.clone();
                self.error(
                    "skill-conflict",
                    file(),
                    Some(Span::new(0, 0)),
                    format!("skill `{name}` from `{source}` differs from the copy `{winner}` provides"),
                    format!("the same skill name must have byte-identical content; rename one, or drop `{source}` or `{winner}`"),
                );
                Err(None)
            }
        }
    }
}

/// What the providers after the person package yield for the bundle, in precedence order.
struct ProviderYield {
    selected: Vec<SelectedSkill>,
    instructions: Vec<(String, String, SourceFile)>,
    sources: Vec<ManifestSource>,
    /// Folder identity → the id of the first admitted provider of that folder.
    seen_paths: BTreeMap<String, String>,
}

/// Resolves one composition. With errors the value is `None` and nothing may be written.
///
/// Not memoized on its own: `composition_bundle` (the one caller, and
/// tracked) turns the resolution into the bundle and drops it, so the trace's decisions
/// (tens of thousands on a large estate) do not stay in memory beside the bundle's
/// `trace.json`.
pub fn resolve(db: &dyn salsa::Database, composition: Composition) -> Parsed<Option<Resolution>> {
    let model_parsed = person_model(db, composition.person(db));
    if model_parsed.has_errors() {
        return Parsed::new(None, model_parsed.diagnostics.clone());
    }
    let model = &model_parsed.value;
    let request_path = composition.request_path(db).clone();
    let slug = composition.role(db).clone();
    let tier = composition.model_tier(db).clone();
    let mut resolver = Resolver {
        db,
        composition,
        slug: slug.clone(),
        request_path,
        decisions: Vec::new(),
        providers: Vec::new(),
        diagnostics: model_parsed.diagnostics.clone(),
        taken: BTreeMap::new(),
        reserved: BTreeMap::new(),
        overlays: Vec::new(),
        incomplete_roots: false,
    };
    let written = RoleAndTier {
        slug: &slug,
        role_span: composition.role_span(db),
        tier: &tier,
        tier_span: composition.tier_span(db),
        file: &resolver.request_path,
    };
    resolver.diagnostics.extend(role_and_tier_diagnostics(model, &written));
    let Some(role) = model.role(&slug) else {
        return Parsed::new(None, resolver.diagnostics);
    };

    // 1. Roles, then the private overlays that concern the role.
    resolver.decide_roles(model);
    let overlays = resolver.read_overlays();
    for overlay in &overlays {
        resolver.audit_own_file(overlay.file, &crate::audit::AuditKind::ALL);
    }
    let renamed = resolver.rename_seats(model, &overlays);
    resolver.overlays = overlays;
    // 2. The person package.
    let person_skills = resolver.deliver_person_package(model, role);
    // 3. Providers in precedence order.
    let mut providers = ProviderYield {
        selected: Vec::new(),
        instructions: Vec::new(),
        sources: vec![ManifestSource {
            id: PERSON_SOURCE_ID.to_owned(),
            category: "person-package".to_owned(),
            scope: "role".to_owned(),
            location: model.source.clone(),
        }],
        seen_paths: BTreeMap::new(),
    };
    let mut candidates = resolver.gather_candidates();
    let overlays = std::mem::take(&mut resolver.overlays);
    resolver.overlay_admissions(&mut candidates, &overlays);
    resolver.overlays = overlays;
    for candidate in candidates {
        resolver.resolve_provider(&candidate, &mut providers);
    }
    // 4. MCP servers.
    let mcp_servers = resolver.select_mcp_servers();
    // 5. What the overlays add to the instructions.
    let overlays = std::mem::take(&mut resolver.overlays);
    let overlay_instructions = resolver.overlay_instructions(&overlays, &providers.sources);

    if resolver.diagnostics.iter().any(Diagnostic::is_error) {
        return Parsed::new(None, resolver.diagnostics);
    }
    let trace = TraceRecord { role: slug.clone(), entries: resolver.decisions, providers: resolver.providers };
    let resolution = Resolution {
        model: renamed,
        role: slug,
        model_tier: tier,
        delivery: composition.delivery(db),
        person_skills,
        selected: providers.selected,
        instructions: providers.instructions,
        overlay_instructions,
        sources: providers.sources,
        mcp_servers,
        trace,
    };
    Parsed::new(Some(resolution), resolver.diagnostics)
}

/// The role and model tier a request (or a launch) asks for, and where it wrote them.
pub struct RoleAndTier<'a> {
    pub slug: &'a str,
    pub role_span: Option<Span>,
    pub tier: &'a str,
    pub tier_span: Option<Span>,
    /// The file the role and tier are written in, as shown.
    pub file: &'a str,
}

/// The mistakes of a requested role and tier against the roster, each independent of the
/// others: an unknown role (with the closest roster role), a tier that does not exist
/// (reported whether or not the role is known), and a tier the role does not support
/// (only for a known role, since an unknown role supports nothing).
pub fn role_and_tier_diagnostics(model: &PersonModel, written: &RoleAndTier<'_>) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let role = model.role(written.slug);
    if role.is_none() {
        let known: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
        let mut diagnostic = Diagnostic::error(
            "unknown-role",
            format!("role `{}` is not in `{}`", sanitize(written.slug), model.source),
        )
        .in_file(written.file)
        .at(written.role_span);
        if let Some(suggestion) = crate::suggest::did_you_mean(written.slug, known.iter().copied()) {
            diagnostic = diagnostic.hint(suggestion);
        }
        diagnostics.push(diagnostic.hint(format!("valid roles: {}", known.join(", "))));
    }
    if !crate::person::MODEL_TIERS.contains(&written.tier) {
        let mut diagnostic =
            Diagnostic::error("unknown-model-tier", format!("`{}` is not a model tier", sanitize(written.tier)))
                .in_file(written.file)
                .at(written.tier_span);
        if let Some(suggestion) = crate::suggest::did_you_mean(written.tier, crate::person::MODEL_TIERS.iter().copied())
        {
            diagnostic = diagnostic.hint(suggestion);
        }
        diagnostics.push(diagnostic.hint("model tiers are `frontier`, `commodity` and `oss`"));
    } else if let Some(role) = role
        && !role.model_tiers.iter().any(|supported| supported == written.tier)
    {
        diagnostics.push(
            Diagnostic::error(
                "unsupported-tier",
                format!("role `{}` does not support the `{}` model tier", role.slug, written.tier),
            )
            .in_file(written.file)
            .at(written.tier_span)
            .hint(format!("use one of {}", role.model_tiers.join(", "))),
        );
    }
    diagnostics
}

impl Resolver<'_> {
    /// Decides the roles: the assigned one delivered, every other one of the roster inactive.
    fn decide_roles(&mut self, model: &PersonModel) {
        self.decide(
            format!("role:{}", self.slug),
            "role",
            PERSON_SOURCE_ID,
            Outcome::Delivered,
            "role-assigned",
            "the request assigns this role; it is fixed for the session".to_owned(),
            Vec::new(),
        );
        let slug = self.slug.clone();
        for other in model.roles.iter().filter(|other| other.slug != slug) {
            self.decide(
                format!("role:{}", other.slug),
                "role",
                PERSON_SOURCE_ID,
                Outcome::Excluded,
                "role-inactive",
                format!("only the assigned role `{slug}` is active"),
                Vec::new(),
            );
        }
    }

    /// Resolves one provider: excluded, reported missing, or selected with its instructions and report.
    fn resolve_provider(&mut self, candidate: &Candidate, providers: &mut ProviderYield) {
        let admission = admission_after_duplicates(&mut providers.seen_paths, candidate);
        if let Admission::Excluded { cause, reason, skills } = &admission {
            self.exclude_provider(candidate, cause, reason, *skills);
            return;
        }
        let Some(catalogue) = self.available_catalogue(candidate) else { return };
        let listing = catalogue_listing(self.db, catalogue);
        self.diagnostics.extend(listing.diagnostics.iter().cloned());
        let listing = &listing.value;
        let selection = self.select_from(candidate, &admission, listing, &mut providers.selected);
        self.deliver_instructions(candidate, listing, &mut providers.instructions);
        self.exclude_folders(candidate, listing);
        self.report_selected_provider(candidate, &admission, selection);
        providers.sources.push(ManifestSource {
            id: candidate.id.clone(),
            category: candidate.category.to_owned(),
            scope: candidate.scope.clone(),
            location: candidate.location.clone(),
        });
    }

    /// The candidate's catalogue when it exists; otherwise the candidate is excluded or reported.
    fn available_catalogue(&mut self, candidate: &Candidate) -> Option<Catalogue> {
        match candidate.catalogue {
            Some(catalogue) if catalogue.available(self.db) => return Some(catalogue),
            _ => {}
        }
        if candidate.is_request_source && !candidate.required {
            self.diagnostics.push(
                Diagnostic::warning(
                    "optional-source-missing",
                    format!("optional source `{}` is unavailable and is excluded", candidate.id),
                )
                .in_file(self.request_path.clone())
                .hint(format!("create `{}` or remove the source from the request", candidate.location)),
            );
            self.exclude_provider(
                candidate,
                "optional-missing",
                &format!("`{}` does not exist; the source is optional", candidate.location),
                SkillListing::Unlisted,
            );
        } else {
            let what = if candidate.is_request_source { "required source" } else { "selected provider" };
            // Filed under the file that names the repository: the request (or the host
            // configuration) for a source, the trusted root's roles.kdl for its repository.
            let (file, span) = candidate.declaration;
            let file = file.map_or_else(|| self.request_path.clone(), |file| file.display_path(self.db));
            let hint = match candidate.is_request_source {
                true => "create or check out the repository, or remove the source where it is named",
                false => "create or check out the repository, or remove it from roles.kdl",
            };
            self.error(
                "source-unavailable",
                file,
                span,
                format!("{what} `{}` is unavailable: `{}` does not exist", candidate.id, candidate.location),
                hint,
            );
        }
        None
    }

    /// Delivers the instructions of an admitted provider with the bundle.
    fn deliver_instructions(
        &mut self,
        candidate: &Candidate,
        listing: &CatalogueListing,
        instructions: &mut Vec<(String, String, SourceFile)>,
    ) {
        // Instructions of declared sources are delivered with the bundle.
        for instruction in &listing.instructions {
            let audited = self.audit_instruction(instruction.file);
            if let Some(reason) = audited.refusal {
                self.decide(
                    format!("instruction:{}", instruction.id),
                    "instruction",
                    &candidate.id,
                    Outcome::Excluded,
                    audit::REFUSED,
                    reason,
                    Vec::new(),
                );
                if let Some(last) = self.last_decision() {
                    last.findings = audited.records;
                }
                continue;
            }
            self.decide(
                format!("instruction:{}", instruction.id),
                "instruction",
                &candidate.id,
                Outcome::Delivered,
                "declared-instruction",
                format!("declared by source `{}`", candidate.id),
                Vec::new(),
            );
            if let Some(last) = self.last_decision() {
                last.findings = audited.records;
            }
            instructions.push((candidate.id.clone(), instruction.id.clone(), instruction.file));
        }
    }

    /// Records the folders of a provider's `.agents/skills` that hold no `SKILL.md`, and
    /// the entries a projection into the repository owns.
    fn exclude_folders(&mut self, candidate: &Candidate, listing: &CatalogueListing) {
        for entry in &listing.projected {
            self.decide(
                format!("skill:{entry}"),
                "folder",
                &candidate.id,
                Outcome::Excluded,
                "projected-entry",
                format!("`.agents/skills/{entry}` is a link a projection into this repository owns, not a skill of its catalogue"),
                Vec::new(),
            );
        }
        for folder in &listing.not_skills {
            self.decide(
                format!("skill:{folder}"),
                "folder",
                &candidate.id,
                Outcome::Excluded,
                "not-a-skill",
                format!("`.agents/skills/{folder}` holds no `SKILL.md`"),
                Vec::new(),
            );
        }
    }

    /// Records the report of an admitted provider with the budget of what it selected.
    fn report_selected_provider(&mut self, candidate: &Candidate, admission: &Admission, selection: ProviderSelection) {
        let budget = selection.budget;
        let context_bytes = budget.metadata_bytes + budget.instruction_bytes + budget.resource_bytes;
        let (cause, reason) = match admission {
            Admission::Whole { cause, reason } => (*cause, reason.clone()),
            Admission::Selector { reason, .. } => ("selector-admitted", reason.clone()),
            Admission::Excluded { .. } => unreachable_excluded(),
        };
        self.providers.push(with_budget(
            ProviderReport {
                source: candidate.id.clone(),
                category: candidate.category.to_owned(),
                scope: candidate.scope.clone(),
                outcome: Outcome::Selected,
                cause: cause.to_owned(),
                reason,
                location: candidate.location.clone(),
                skills: selection.count,
                context_bytes,
                approximate_tokens: approximate_tokens(context_bytes),
                metadata_bytes: 0,
                instruction_bytes: 0,
                resource_bytes: 0,
                binary_bytes: 0,
                selector: selection.selector,
            },
            budget,
        ));
    }

    /// Records an excluded provider: its `source:` decision, maybe its skills, and its report.
    fn exclude_provider(&mut self, candidate: &Candidate, cause: &str, reason: &str, skills: SkillListing) {
        self.decide(
            format!("source:{}", candidate.id),
            "source",
            &candidate.id,
            Outcome::Excluded,
            cause,
            reason.to_owned(),
            Vec::new(),
        );
        let mut catalogue_size = 0;
        if skills == SkillListing::Listed
            && let Some(catalogue) = candidate.catalogue.filter(|catalogue| catalogue.available(self.db))
        {
            let names = catalogue_names(self.db, catalogue);
            catalogue_size = names.ordinary.len();
            self.decisions.push(TraceEntry::ExcludedSkills {
                source: candidate.id.clone(),
                cause: cause.to_owned(),
                names: names.ordinary.clone(),
            });
        }
        let selector = (!candidate.selectors.is_empty()).then(|| SelectorReport {
            patterns: candidate.selectors.iter().map(|pattern| pattern.text.clone()).collect(),
            admitted: 0,
            catalogue: catalogue_size,
            overlay_excluded: 0,
        });
        self.providers.push(ProviderReport {
            source: candidate.id.clone(),
            category: candidate.category.to_owned(),
            scope: candidate.scope.clone(),
            outcome: Outcome::Excluded,
            cause: cause.to_owned(),
            reason: reason.to_owned(),
            location: candidate.location.clone(),
            skills: 0,
            context_bytes: 0,
            approximate_tokens: 0,
            metadata_bytes: 0,
            instruction_bytes: 0,
            resource_bytes: 0,
            binary_bytes: 0,
            selector,
        });
    }
}

/// The admission of a candidate, excluded as `duplicate-path` when an earlier provider reads its folder.
fn admission_after_duplicates(seen_paths: &mut BTreeMap<String, String>, candidate: &Candidate) -> Admission {
    let excluded_by_duplicate = match (&candidate.admission, seen_paths.get(&candidate.path_key)) {
        (Admission::Excluded { .. }, _) => None,
        (_, Some(first)) => Some(first.clone()),
        (_, None) => {
            seen_paths.insert(candidate.path_key.clone(), candidate.id.clone());
            None
        }
    };
    match excluded_by_duplicate {
        Some(first) => Admission::Excluded {
            cause: "duplicate-path",
            reason: format!("the same folder as `{first}`, which comes first"),
            skills: SkillListing::Unlisted,
        },
        None => candidate.admission.clone(),
    }
}

fn unreachable_excluded() -> (&'static str, String) {
    // Excluded providers return before selection; this arm exists for the type only.
    ("excluded", String::new())
}
