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
//!    providers keep their place in that order.

use std::collections::{BTreeMap, BTreeSet};

use crate::catalogue::catalogue_names;
use crate::catalogue::{
    Catalogue, CatalogueListing, CatalogueSkill, FileSummary, SkillBudget, SkillKind, catalogue_listing, tree_digest,
};
use crate::db::{PersonSource, SourceFile};
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::person::{PersonModel, validate::person_model};
use crate::provider::{RoleView, role_view};
use crate::request::Delivery;
use crate::selector::{Matcher, Pattern};
use crate::skill_rules::{FindingLevel, SkillPolicy};
use crate::trace::{
    Decision, FindingRecord, Outcome, ProviderReport, SelectorReport, TraceEntry, TraceRecord, approximate_tokens,
};

/// The id of the person package among the providers.
pub const PERSON_SOURCE_ID: &str = "person";

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
    pub sources: Vec<ManifestSource>,
    pub trace: TraceRecord,
}

/// How a provider was admitted.
#[derive(Debug, Clone)]
enum Admission {
    Whole { cause: &'static str, reason: String },
    Selector { patterns: Vec<Pattern>, roles_file: SourceFile, reason: String },
    Excluded { cause: &'static str, reason: String, list_skills: bool },
}

#[derive(Debug, Clone)]
struct Candidate {
    id: String,
    category: &'static str,
    scope: String,
    location: String,
    path_key: String,
    catalogue: Option<Catalogue>,
    required: bool,
    is_request_source: bool,
    admission: Admission,
    /// For a trusted root request source: the role's view of it, for composed selectors.
    view: Option<RoleView>,
    /// The repository's `skill` selectors, also when it is excluded.
    selectors: Vec<Pattern>,
}

fn bytes_summary(bytes: &[u8]) -> FileSummary {
    FileSummary::of_bytes(bytes)
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
    decisions: Vec<TraceEntry>,
    providers: Vec<ProviderReport>,
    diagnostics: Vec<Diagnostic>,
    /// Selected skill name → (source, tree digest).
    taken: BTreeMap<String, (String, String)>,
    /// Names of inactive roles' skills and methods and of personalities outside the meld:
    /// a catalogue skill with one of these names never enters (cause, reason).
    reserved: BTreeMap<String, (&'static str, String)>,
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

fn skill_kind_name(kind: SkillKind) -> &'static str {
    match kind {
        SkillKind::Ordinary => "ordinary-skill",
        SkillKind::Composed => "composed-skill",
    }
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
        decisions: Vec::new(),
        providers: Vec::new(),
        diagnostics: model_parsed.diagnostics.clone(),
        taken: BTreeMap::new(),
        reserved: BTreeMap::new(),
    };

    let Some(role) = model.role(&slug) else {
        let known: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
        resolver.error(
            "unknown-role",
            request_path,
            composition.role_span(db),
            format!("role `{}` is not in `{}`", sanitize(&slug), model.source),
            format!("valid roles: {}", known.join(", ")),
        );
        return Parsed::new(None, resolver.diagnostics);
    };
    if !crate::person::MODEL_TIERS.contains(&tier.as_str()) {
        resolver.error(
            "unknown-model-tier",
            request_path.clone(),
            composition.tier_span(db),
            format!("`{}` is not a model tier", sanitize(&tier)),
            "model tiers are `frontier`, `commodity` and `oss`",
        );
    } else if !role.model_tiers.contains(&tier) {
        resolver.error(
            "unsupported-tier",
            request_path.clone(),
            composition.tier_span(db),
            format!("role `{slug}` does not support the `{tier}` model tier"),
            format!("use one of {}", role.model_tiers.join(", ")),
        );
    }

    // 1. Roles.
    resolver.decide(
        format!("role:{slug}"),
        "role",
        PERSON_SOURCE_ID,
        Outcome::Delivered,
        "role-assigned",
        "the request assigns this role; it is fixed for the session".to_owned(),
        Vec::new(),
    );
    for other in model.roles.iter().filter(|other| other.slug != slug) {
        resolver.decide(
            format!("role:{}", other.slug),
            "role",
            PERSON_SOURCE_ID,
            Outcome::Excluded,
            "role-inactive",
            format!("only the assigned role `{slug}` is active"),
            Vec::new(),
        );
    }

    // 2. The person package.
    let mut person_skills = Vec::new();
    let mut person_bytes = 0u64;
    let mut person_budget = SkillBudget::default();
    let mut deliver_person_skill = |resolver: &mut Resolver<'_>,
                                    id: &str,
                                    bytes: &crate::Bytes,
                                    kind: &str,
                                    cause: &str,
                                    reason: String| {
        let summary = bytes_summary(bytes);
        let digest = tree_digest(&[("SKILL.md".to_owned(), &summary)]);
        let _ = resolver.claim(id, PERSON_SOURCE_ID, &digest, || format!("{PERSON_SOURCE_ID}/{id}"));
        resolver.decide(format!("skill:{id}"), kind, PERSON_SOURCE_ID, Outcome::Delivered, cause, reason, Vec::new());
        let text = String::from_utf8_lossy(bytes);
        let document = crate::skill::parse_skill(&text, id);
        let name = document.value.name.as_deref().unwrap_or(id);
        let description = document.value.description.as_deref().unwrap_or("");
        let budget = SkillBudget::split(name, description, bytes.len() as u64, 0, 0);
        resolver.listed(budget.metadata_bytes);
        person_budget.add(budget);
        person_bytes += bytes.len() as u64;
        person_skills.push(PersonSkill { id: id.to_owned(), bytes: bytes.clone() });
    };
    deliver_person_skill(
        &mut resolver,
        &role.skill.id,
        &role.skill.bytes,
        "role-skill",
        "role-assigned",
        format!("the role skill of `{slug}`"),
    );
    for method in &role.methods {
        deliver_person_skill(
            &mut resolver,
            &method.id,
            &method.bytes,
            "method",
            "role-method",
            format!("a method of role `{slug}`, loaded when a task calls for it"),
        );
    }
    for (position, personality_slug) in role.personalities.iter().enumerate() {
        let Some(personality) = model.personality(personality_slug) else { continue };
        resolver.decide(
            format!("personality:{personality_slug}"),
            "personality",
            PERSON_SOURCE_ID,
            Outcome::Delivered,
            "meld-member",
            format!("position {} of the meld of `{slug}`, colour {}", position + 1, personality.colour.hex),
            Vec::new(),
        );
        deliver_person_skill(
            &mut resolver,
            &personality.skill.id,
            &personality.skill.bytes,
            "personality-skill",
            "meld-member",
            format!("the skill of personality `{personality_slug}`"),
        );
    }
    for personality in model.personalities.iter().filter(|personality| !role.personalities.contains(&personality.slug))
    {
        let reason = format!("not in the meld of `{slug}`");
        resolver.decide(
            format!("personality:{}", personality.slug),
            "personality",
            PERSON_SOURCE_ID,
            Outcome::Excluded,
            "personality-inactive",
            reason.clone(),
            Vec::new(),
        );
        resolver.decide(
            format!("skill:{}", personality.skill.id),
            "personality-skill",
            PERSON_SOURCE_ID,
            Outcome::Excluded,
            "personality-inactive",
            reason.clone(),
            Vec::new(),
        );
        resolver.reserved.insert(personality.skill.id.clone(), ("personality-inactive", reason));
    }
    for other in model.roles.iter().filter(|other| other.slug != slug) {
        let reason = format!("belongs to inactive role `{}`", other.slug);
        resolver.reserved.insert(other.skill.id.clone(), ("role-inactive", reason.clone()));
        for method in &other.methods {
            resolver.reserved.insert(method.id.clone(), ("role-inactive", reason.clone()));
        }
        resolver.decide(
            format!("skill:{}", other.skill.id),
            "role-skill",
            PERSON_SOURCE_ID,
            Outcome::Excluded,
            "role-inactive",
            reason.clone(),
            Vec::new(),
        );
        for method in &other.methods {
            resolver.decide(
                format!("skill:{}", method.id),
                "method",
                PERSON_SOURCE_ID,
                Outcome::Excluded,
                "role-inactive",
                reason.clone(),
                Vec::new(),
            );
        }
    }
    let person_count = person_skills.len();
    resolver.providers.push(with_budget(
        ProviderReport {
            source: PERSON_SOURCE_ID.to_owned(),
            category: "person-package".to_owned(),
            scope: "role".to_owned(),
            outcome: Outcome::Selected,
            cause: "person-package".to_owned(),
            reason: format!("the selected person source `{}` always comes first", model.source),
            location: model.source.clone(),
            skills: person_count,
            context_bytes: person_bytes,
            approximate_tokens: approximate_tokens(person_bytes),
            metadata_bytes: 0,
            instruction_bytes: 0,
            resource_bytes: 0,
            binary_bytes: 0,
            selector: None,
        },
        person_budget,
    ));
    let mut sources = vec![ManifestSource {
        id: PERSON_SOURCE_ID.to_owned(),
        category: "person-package".to_owned(),
        scope: "role".to_owned(),
        location: model.source.clone(),
    }];

    // 3. Providers in precedence order.
    let candidates = gather_candidates(db, composition, &slug, &mut resolver);
    let mut seen_paths: BTreeMap<String, String> = BTreeMap::new();
    let mut selected = Vec::new();
    let mut instructions = Vec::new();
    for candidate in candidates {
        let excluded_by_duplicate = match (&candidate.admission, seen_paths.get(&candidate.path_key)) {
            (Admission::Excluded { .. }, _) => None,
            (_, Some(first)) => Some(first.clone()),
            (_, None) => {
                seen_paths.insert(candidate.path_key.clone(), candidate.id.clone());
                None
            }
        };
        let admission = match excluded_by_duplicate {
            Some(first) => Admission::Excluded {
                cause: "duplicate-path",
                reason: format!("the same folder as `{first}`, which comes first"),
                list_skills: false,
            },
            None => candidate.admission.clone(),
        };
        if let Admission::Excluded { cause, reason, list_skills } = &admission {
            exclude_provider(&mut resolver, &candidate, cause, reason, *list_skills);
            continue;
        }
        let catalogue = match candidate.catalogue {
            Some(catalogue) if catalogue.available(db) => catalogue,
            _ => {
                if candidate.is_request_source && !candidate.required {
                    resolver.diagnostics.push(
                        Diagnostic::warning(
                            "optional-source-missing",
                            format!("optional source `{}` is unavailable and is excluded", candidate.id),
                        )
                        .in_file(request_path.clone())
                        .hint(format!("create `{}` or remove the source from the request", candidate.location)),
                    );
                    exclude_provider(
                        &mut resolver,
                        &candidate,
                        "optional-missing",
                        &format!("`{}` does not exist; the source is optional", candidate.location),
                        false,
                    );
                } else {
                    let what = if candidate.is_request_source { "required source" } else { "selected provider" };
                    resolver.error(
                        "source-unavailable",
                        request_path.clone(),
                        None,
                        format!("{what} `{}` is unavailable: `{}` does not exist", candidate.id, candidate.location),
                        "create or check out the repository, or remove it from the request or roles.kdl",
                    );
                }
                continue;
            }
        };
        let listing = catalogue_listing(db, catalogue);
        resolver.diagnostics.extend(listing.diagnostics.iter().cloned());
        let listing = &listing.value;
        let (provider_budget, count, selector) = select_from(
            &mut resolver,
            &candidate,
            &admission,
            listing,
            &slug,
            composition.skill_policy(db),
            &mut selected,
        );
        let context_bytes =
            provider_budget.metadata_bytes + provider_budget.instruction_bytes + provider_budget.resource_bytes;
        let (cause, reason) = match &admission {
            Admission::Whole { cause, reason } => (*cause, reason.clone()),
            Admission::Selector { reason, .. } => ("selector-admitted", reason.clone()),
            Admission::Excluded { .. } => unreachable_excluded(),
        };
        // Instructions of declared sources are delivered with the bundle.
        for instruction in &listing.instructions {
            resolver.decide(
                format!("instruction:{}", instruction.id),
                "instruction",
                &candidate.id,
                Outcome::Delivered,
                "declared-instruction",
                format!("declared by source `{}`", candidate.id),
                Vec::new(),
            );
            instructions.push((candidate.id.clone(), instruction.id.clone(), instruction.file));
        }
        for folder in &listing.not_skills {
            resolver.decide(
                format!("skill:{folder}"),
                "folder",
                &candidate.id,
                Outcome::Excluded,
                "not-a-skill",
                format!("`.agents/skills/{folder}` holds no `SKILL.md`"),
                Vec::new(),
            );
        }
        resolver.providers.push(with_budget(
            ProviderReport {
                source: candidate.id.clone(),
                category: candidate.category.to_owned(),
                scope: candidate.scope.clone(),
                outcome: Outcome::Selected,
                cause: cause.to_owned(),
                reason,
                location: candidate.location.clone(),
                skills: count,
                context_bytes,
                approximate_tokens: approximate_tokens(context_bytes),
                metadata_bytes: 0,
                instruction_bytes: 0,
                resource_bytes: 0,
                binary_bytes: 0,
                selector,
            },
            provider_budget,
        ));
        sources.push(ManifestSource {
            id: candidate.id.clone(),
            category: candidate.category.to_owned(),
            scope: candidate.scope.clone(),
            location: candidate.location.clone(),
        });
    }

    if resolver.diagnostics.iter().any(Diagnostic::is_error) {
        return Parsed::new(None, resolver.diagnostics);
    }
    let trace = TraceRecord { role: slug.clone(), entries: resolver.decisions, providers: resolver.providers };
    let resolution = Resolution {
        model: model.clone(),
        role: slug,
        model_tier: tier,
        delivery: composition.delivery(db),
        person_skills,
        selected,
        instructions,
        sources,
        trace,
    };
    Parsed::new(Some(resolution), resolver.diagnostics)
}

fn unreachable_excluded() -> (&'static str, String) {
    // Excluded providers `continue` before selection; this arm exists for the type only.
    ("excluded", String::new())
}

fn exclude_provider(resolver: &mut Resolver<'_>, candidate: &Candidate, cause: &str, reason: &str, list_skills: bool) {
    resolver.decide(
        format!("source:{}", candidate.id),
        "source",
        &candidate.id,
        Outcome::Excluded,
        cause,
        reason.to_owned(),
        Vec::new(),
    );
    let mut catalogue_size = 0;
    if list_skills && let Some(catalogue) = candidate.catalogue.filter(|catalogue| catalogue.available(resolver.db)) {
        let names = catalogue_names(resolver.db, catalogue);
        catalogue_size = names.ordinary.len();
        resolver.decisions.push(TraceEntry::ExcludedSkills {
            source: candidate.id.clone(),
            cause: cause.to_owned(),
            names: names.ordinary.clone(),
        });
    }
    let selector = (!candidate.selectors.is_empty()).then(|| SelectorReport {
        patterns: candidate.selectors.iter().map(|pattern| pattern.text.clone()).collect(),
        admitted: 0,
        catalogue: catalogue_size,
    });
    resolver.providers.push(ProviderReport {
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

/// Selects a provider's skills; returns (budget, count, selector report).
fn select_from(
    resolver: &mut Resolver<'_>,
    candidate: &Candidate,
    admission: &Admission,
    listing: &CatalogueListing,
    slug: &str,
    policy: SkillPolicy,
    selected: &mut Vec<SelectedSkill>,
) -> (SkillBudget, usize, Option<SelectorReport>) {
    let db = resolver.db;
    let source_reason = match admission {
        Admission::Whole { reason, .. } | Admission::Selector { reason, .. } => reason.clone(),
        Admission::Excluded { reason, .. } => reason.clone(),
    };
    let cause = match admission {
        Admission::Whole { cause, .. } => *cause,
        _ => "selector-admitted",
    };
    resolver.decide(
        format!("source:{}", candidate.id),
        "source",
        &candidate.id,
        Outcome::Selected,
        cause,
        source_reason,
        Vec::new(),
    );

    let mut budget = SkillBudget::default();
    let mut count = 0usize;
    let mut take =
        |resolver: &mut Resolver<'_>, skill: &CatalogueSkill, cause: &str, reason: String, selectors: Vec<String>| {
            let file = || {
                skill
                    .members
                    .iter()
                    .find(|member| member.path == skill.kind.entry_file())
                    .map_or_else(|| candidate.location.clone(), |member| member.file.display_path(db))
            };
            // A catalogue copy of an inactive role's or personality's skill never enters.
            if let Some((cause, reason)) = resolver.reserved.get(&skill.name).cloned() {
                resolver.decide(
                    skill.subject(),
                    skill_kind_name(skill.kind),
                    &candidate.id,
                    Outcome::Excluded,
                    cause,
                    format!("the name is reserved: it {reason}"),
                    selectors,
                );
                return;
            }
            // The Agent Skills findings, under the composition's policy.
            let mut records = Vec::new();
            // A later byte-identical copy is shadowed; its findings were told for the first.
            let shadowed = resolver.taken.get(&skill.name).is_some_and(|(_, digest)| digest == &skill.digest);
            if let Some(check) = skill.check.as_ref().filter(|_| !shadowed) {
                let entry = if check.findings.is_empty() { String::new() } else { file() };
                let severity = if policy == SkillPolicy::Strict {
                    crate::diagnostic::Severity::Error
                } else {
                    crate::diagnostic::Severity::Warning
                };
                for finding in &check.findings {
                    resolver.diagnostics.push(finding.diagnostic(&entry, severity));
                    if finding.level != FindingLevel::Extension {
                        records.push(FindingRecord {
                            code: finding.code.to_owned(),
                            level: finding.level.name().to_owned(),
                            message: finding.message.clone(),
                            consequence: finding.consequence.to_owned(),
                        });
                    }
                }
                if policy == SkillPolicy::Skip && check.has_violations() {
                    let codes: Vec<&str> = check
                        .findings
                        .iter()
                        .filter(|finding| finding.level == FindingLevel::Violation)
                        .map(|finding| finding.code)
                        .collect();
                    resolver.decide(
                        skill.subject(),
                        skill_kind_name(skill.kind),
                        &candidate.id,
                        Outcome::Excluded,
                        "invalid-skill",
                        format!("breaks the Agent Skills rules ({}); skill policy `skip`", codes.join(", ")),
                        selectors,
                    );
                    if let Some(last) = resolver.last_decision() {
                        last.findings = records;
                    }
                    return;
                }
            }
            match resolver.claim(&skill.name, &candidate.id, &skill.digest, file) {
                Ok(()) => {
                    resolver.decide(
                        skill.subject(),
                        skill_kind_name(skill.kind),
                        &candidate.id,
                        Outcome::Selected,
                        cause,
                        reason,
                        selectors,
                    );
                    resolver.listed(skill.budget.metadata_bytes);
                    if let Some(last) = resolver.last_decision() {
                        last.findings = records;
                    }
                    budget.add(skill.budget);
                    count += 1;
                    selected.push(SelectedSkill {
                        source: candidate.id.clone(),
                        name: skill.name.clone(),
                        kind: skill.kind,
                        members: skill
                            .members
                            .iter()
                            .map(|member| {
                                let path = if skill.kind == SkillKind::Composed && member.path == "COMPOSED.md" {
                                    "SKILL.md".to_owned()
                                } else {
                                    member.path.clone()
                                };
                                (path, member.file)
                            })
                            .collect(),
                        bytes: skill.bytes,
                    });
                }
                Err(Some(winner)) => {
                    resolver.decisions.push(TraceEntry::Decision(Decision {
                        subject: skill.subject(),
                        kind: skill_kind_name(skill.kind).to_owned(),
                        source: candidate.id.clone(),
                        outcome: Outcome::Shadowed,
                        cause: "identical-copy".to_owned(),
                        reason: format!("a byte-identical copy from `{winner}` comes first"),
                        selectors,
                        winner: Some(winner),
                        metadata_bytes: None,
                        findings: Vec::new(),
                    }));
                }
                Err(None) => {}
            }
        };

    // Ordinary skills.
    let mut selector_report = None;
    match admission {
        Admission::Selector { patterns, roles_file, .. } => {
            let names: Vec<&str> = listing.ordinary.iter().map(|skill| skill.name.as_str()).collect();
            for pattern in patterns {
                let single = Matcher::new(std::slice::from_ref(pattern));
                if !names.iter().any(|name| !single.matches(name).is_empty()) {
                    resolver.error(
                        "selector-matches-nothing",
                        roles_file.display_path(db),
                        Some(pattern.span),
                        format!(
                            "selector `{}` of repository `{}` matches no skill in its catalogue",
                            pattern.text, candidate.id
                        ),
                        format!(
                            "its catalogue holds: {}",
                            if names.is_empty() { "nothing".to_owned() } else { names.join(", ") }
                        ),
                    );
                }
            }
            let mut admitted = 0;
            let matcher = Matcher::new(patterns);
            for skill in &listing.ordinary {
                let matched = matcher.matches(&skill.name);
                let texts: Vec<String> = matched.iter().map(|index| patterns[*index].text.clone()).collect();
                if matched.len() > 1 {
                    resolver.error(
                        "selector-overlap",
                        roles_file.display_path(db),
                        Some(patterns[matched[1]].span),
                        format!(
                            "skill `{}` of repository `{}` is matched by several selectors: {}",
                            skill.name,
                            candidate.id,
                            texts.join(", ")
                        ),
                        "make the selectors of one repository disjoint",
                    );
                }
                if matched.is_empty() {
                    // Consecutive skills no selector matched share one entry.
                    match resolver.decisions.last_mut() {
                        Some(TraceEntry::UnselectedSkills { source, names, .. }) if *source == candidate.id => {
                            names.push(skill.name.clone());
                        }
                        _ => {
                            let patterns_text: Vec<&str> =
                                patterns.iter().map(|pattern| pattern.text.as_str()).collect();
                            resolver.decisions.push(TraceEntry::UnselectedSkills {
                                source: candidate.id.clone(),
                                reason: format!(
                                    "matched by no selector of `{}` ({})",
                                    candidate.id,
                                    patterns_text.join(", ")
                                ),
                                names: vec![skill.name.clone()],
                            });
                        }
                    }
                } else {
                    admitted += 1;
                    take(resolver, skill, "selector-admitted", format!("matched by selector `{}`", texts[0]), texts);
                }
            }
            selector_report = Some(SelectorReport {
                patterns: patterns.iter().map(|pattern| pattern.text.clone()).collect(),
                admitted,
                catalogue: listing.ordinary.len(),
            });
        }
        Admission::Whole { cause, .. } => {
            for skill in &listing.ordinary {
                take(
                    resolver,
                    skill,
                    cause,
                    format!("the whole catalogue of `{}` is admitted", candidate.id),
                    Vec::new(),
                );
            }
        }
        Admission::Excluded { .. } => {}
    }

    // Composed skills: only a request root, by its own roles.kdl selectors for the role.
    if !listing.composed.is_empty() {
        let role_patterns: Vec<Pattern> = candidate.view.as_ref().map(|view| view.composed.clone()).unwrap_or_default();
        let matcher = Matcher::new(&role_patterns);
        for skill in &listing.composed {
            let matched = matcher.matches(&skill.name);
            let texts: Vec<String> = matched.iter().map(|index| role_patterns[*index].text.clone()).collect();
            if !matched.is_empty() && candidate.is_request_source {
                let (cause, reason) = if matched.len() > 1 {
                    resolver.diagnostics.push(
                        Diagnostic::warning(
                            "composed-selector-overlap",
                            format!(
                                "composed skill `{}` is matched by {} selectors of role `{slug}`: {}",
                                skill.name,
                                matched.len(),
                                texts.join(", ")
                            ),
                        )
                        .in_file(
                            candidate
                                .view
                                .as_ref()
                                .and_then(|view| view.roles_file)
                                .map_or_else(|| candidate.location.clone(), |file| file.display_path(db)),
                        )
                        .at(Some(role_patterns[matched[1]].span))
                        .hint("it is selected once; narrow the selectors to silence this warning"),
                    );
                    (
                        "overlap",
                        format!("matched by {} composed-skill selectors of `{slug}`; selected once", matched.len()),
                    )
                } else {
                    ("composed-selector", format!("matched by composed-skill selector `{}` of `{slug}`", texts[0]))
                };
                take(resolver, skill, cause, reason, texts);
                continue;
            }
            let other_roles: Vec<String> = candidate
                .view
                .as_ref()
                .and_then(|view| view.composed_elsewhere.get(&skill.name).cloned())
                .unwrap_or_default();
            if other_roles.is_empty() {
                resolver.decide(
                    skill.subject(),
                    "composed-skill",
                    &candidate.id,
                    Outcome::Excluded,
                    "selector-excluded",
                    format!("matched by no composed-skill selector of `{slug}`"),
                    Vec::new(),
                );
            } else {
                resolver.decide(
                    skill.subject(),
                    "composed-skill",
                    &candidate.id,
                    Outcome::Excluded,
                    "role-excluded",
                    format!("selected only for role(s) {}", other_roles.join(", ")),
                    Vec::new(),
                );
            }
        }
    }
    (budget, count, selector_report)
}

/// Lists every provider after the person package, in precedence order: request sources,
/// then each trusted root's global repositories, then the repositories the role uses,
/// then every other declared repository (excluded).
fn gather_candidates(
    db: &dyn salsa::Database,
    composition: Composition,
    slug: &str,
    resolver: &mut Resolver<'_>,
) -> Vec<Candidate> {
    let repositories = composition.repositories(db);
    // Looked up by path once per repository: a map keeps a root of many repositories linear.
    // Collected in reverse so that, as with a scan, the first input of a path wins.
    let inputs_by_path: BTreeMap<&str, &RepositoryInput> =
        repositories.iter().rev().map(|repository| (repository.path.as_str(), repository)).collect();
    let repository_input = |path: &str| inputs_by_path.get(path).copied();
    let mut request_sources = Vec::new();
    let mut trusted_roots: Vec<(String, SourceFile, RoleView)> = Vec::new();
    for source in composition.sources(db) {
        let mut view = None;
        if source.kind == SourceKind::Root && source.catalogue.available(db) {
            let parsed = role_view(db, source.catalogue, slug.to_owned());
            resolver.diagnostics.extend(parsed.diagnostics.iter().cloned());
            if let Some(roles_file) = parsed.value.roles_file {
                trusted_roots.push((source.id.clone(), roles_file, parsed.value.clone()));
                view = Some(parsed.value.clone());
            }
        }
        request_sources.push(Candidate {
            id: source.id.clone(),
            category: "ordinary-catalogue",
            scope: "explicit".to_owned(),
            location: source.location.clone(),
            path_key: source.path_key.clone(),
            catalogue: Some(source.catalogue),
            required: source.required,
            is_request_source: true,
            admission: Admission::Whole {
                cause: "operating-context",
                reason: "named as explicit operating context (by the request or the host configuration)".to_owned(),
            },
            view,
            selectors: Vec::new(),
        });
    }
    let mut candidates = request_sources;
    let repository_candidate = |id: &str, path: &str, category: &'static str, scope: String, admission: Admission| {
        let input = repository_input(path);
        Candidate {
            id: id.to_owned(),
            category,
            scope,
            location: path.to_owned(),
            path_key: input.map_or_else(|| format!("projects/{path}"), |input| input.path_key.clone()),
            catalogue: input.map(|input| input.catalogue),
            required: true,
            is_request_source: false,
            selectors: match &admission {
                Admission::Selector { patterns, .. } => patterns.clone(),
                _ => Vec::new(),
            },
            admission,
            view: None,
        }
    };
    let mut listed: BTreeSet<(String, String)> = BTreeSet::new();
    for (root_id, roles_file, root) in &trusted_roots {
        for id in &root.globals {
            let Some(repository) = root.repository(id) else { continue };
            listed.insert((root_id.clone(), id.clone()));
            // A global repository with `skill` selectors gives every role its bounded slice.
            let (category, admission) = if repository.is_skill_provider() {
                (
                    "skill-provider",
                    Admission::Selector {
                        patterns: repository.selectors.clone(),
                        roles_file: *roles_file,
                        reason: format!(
                            "declared `global` in the trusted root `{root_id}`, bounded by its `skill` selectors; every role receives the slice"
                        ),
                    },
                )
            } else {
                (
                    "ordinary-catalogue",
                    Admission::Whole {
                        cause: "global",
                        reason: format!("declared `global` in the trusted root `{root_id}`; every role receives it"),
                    },
                )
            };
            candidates.push(repository_candidate(id, &repository.path, category, "global".to_owned(), admission));
        }
    }
    for (root_id, roles_file, root) in &trusted_roots {
        for id in &root.used {
            let Some(repository) = root.repository(id) else { continue };
            if listed.contains(&(root_id.clone(), id.clone())) {
                continue;
            }
            listed.insert((root_id.clone(), id.clone()));
            let admission = if repository.is_skill_provider() {
                Admission::Selector {
                    patterns: repository.selectors.clone(),
                    roles_file: *roles_file,
                    reason: format!(
                        "`use-repository {id}` in role `{slug}` of trusted root `{root_id}`, bounded by its `skill` selectors"
                    ),
                }
            } else {
                Admission::Whole {
                    cause: "direct",
                    reason: format!(
                        "`use-repository {id}` in role `{slug}` of trusted root `{root_id}`; the whole catalogue"
                    ),
                }
            };
            let category = if repository.is_skill_provider() { "skill-provider" } else { "ordinary-catalogue" };
            candidates.push(repository_candidate(id, &repository.path, category, format!("role:{slug}"), admission));
        }
    }
    for (root_id, _, root) in &trusted_roots {
        for repository in &root.repositories {
            if listed.contains(&(root_id.clone(), repository.id.clone())) {
                continue;
            }
            let users = root.users.get(&repository.id).cloned().unwrap_or_default();
            let (cause, reason, scope) = if users.is_empty() {
                (
                    "not-admitted",
                    format!("declared in trusted root `{root_id}` but used by no role and not global"),
                    "none".to_owned(),
                )
            } else {
                (
                    "role-excluded",
                    format!("admitted only for role(s) {}", users.join(", ")),
                    format!("role:{}", users[0]),
                )
            };
            let category = if repository.is_skill_provider() { "skill-provider" } else { "ordinary-catalogue" };
            let mut candidate = repository_candidate(
                &repository.id,
                &repository.path,
                category,
                scope,
                Admission::Excluded { cause, reason, list_skills: true },
            );
            // Keep the selector visible in the excluded provider's report.
            candidate.selectors = repository.selectors.clone();
            candidates.push(candidate);
        }
    }
    // Source ids are unique across the request and every trusted root.
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    for candidate in &candidates {
        *ids.entry(candidate.id.clone()).or_default() += 1;
    }
    for (id, count) in ids {
        if count > 1 || id == PERSON_SOURCE_ID {
            resolver.error(
                "duplicate-source-id",
                composition.request_path(db).clone(),
                None,
                format!("source id `{id}` names more than one provider"),
                "source ids of the request and repository ids of trusted roots share one namespace; rename one",
            );
        }
    }
    candidates
}
