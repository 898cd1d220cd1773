//! Selection of one admitted provider's skills: its ordinary skills under its admission
//! (the whole catalogue or its `skill` selectors), its composed skills under the role's
//! composed-skill selectors, and for each taken skill the reserved names, the skill
//! policy, shadowing of identical copies and fail-closed conflicts.

use crate::catalogue::{CatalogueListing, CatalogueSkill, SkillBudget, SkillKind};
use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Severity};
use crate::selector::{Matcher, Pattern};
use crate::skill_rules::{self, FindingLevel, SkillPolicy};
use crate::trace::{Decision, FindingRecord, Outcome, SelectorReport, TraceEntry};

use super::{Admission, Candidate, Resolver, SelectedSkill};

/// What one provider's selection yields for its report.
pub(super) struct ProviderSelection {
    pub(super) budget: SkillBudget,
    pub(super) count: usize,
    pub(super) selector: Option<SelectorReport>,
}

/// One admitted provider while its skills are taken, and what it has yielded so far.
struct ProviderTake<'a> {
    candidate: &'a Candidate<'a>,
    policy: SkillPolicy,
    budget: SkillBudget,
    count: usize,
    selected: &'a mut Vec<SelectedSkill>,
}

/// Why a skill is taken: the cause, reason and matching selectors of its decision.
struct Grounds {
    cause: &'static str,
    reason: String,
    selectors: Vec<String>,
}

/// The Agent Skills findings of a skill under the composition's policy.
enum SkillFindings {
    /// The skill may enter; the records go into its decision.
    Admissible(Vec<FindingRecord>),
    /// Policy `skip` keeps the skill out for its violations.
    Skipped { records: Vec<FindingRecord>, reason: String },
}

/// The trace kind of a catalogue skill.
fn skill_kind_name(kind: SkillKind) -> &'static str {
    match kind {
        SkillKind::Ordinary => "ordinary-skill",
        SkillKind::Composed => "composed-skill",
    }
}

/// The file a diagnostic about a catalogue skill names: its entry file, else the provider.
fn skill_entry_file(db: &dyn salsa::Database, candidate: &Candidate, skill: &CatalogueSkill) -> String {
    skill
        .members
        .iter()
        .find(|member| member.path == skill.kind.entry_file())
        .map_or_else(|| candidate.location.clone(), |member| member.file.display_path(db))
}

/// A selected catalogue skill with its bundle members; `COMPOSED.md` becomes `SKILL.md`.
fn selected_skill(source: &str, skill: &CatalogueSkill) -> SelectedSkill {
    SelectedSkill {
        source: source.to_owned(),
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
    }
}

impl Resolver<'_> {
    /// Selects a provider's skills: its `source:` decision, its ordinary skills under its
    /// admission, then its composed skills.
    pub(super) fn select_from(
        &mut self,
        candidate: &Candidate,
        admission: &Admission,
        listing: &CatalogueListing,
        selected: &mut Vec<SelectedSkill>,
    ) -> ProviderSelection {
        let policy = self.composition.skill_policy(self.db);
        self.decide_selected_source(candidate, admission);
        let mut take = ProviderTake { candidate, policy, budget: SkillBudget::default(), count: 0, selected };
        let selector = match admission {
            Admission::Selector { patterns, roles_file, .. } => {
                Some(self.select_by_selectors(&mut take, patterns, *roles_file, listing))
            }
            Admission::Whole { cause, .. } => {
                self.take_whole_catalogue(&mut take, cause, listing);
                None
            }
            Admission::Excluded { .. } => None,
        };
        self.select_composed(&mut take, listing);
        ProviderSelection { budget: take.budget, count: take.count, selector }
    }

    /// Records an admitted provider's `source:` decision.
    fn decide_selected_source(&mut self, candidate: &Candidate, admission: &Admission) {
        let source_reason = match admission {
            Admission::Whole { reason, .. } | Admission::Selector { reason, .. } => reason.clone(),
            Admission::Excluded { reason, .. } => reason.clone(),
        };
        let cause = match admission {
            Admission::Whole { cause, .. } => *cause,
            _ => "selector-admitted",
        };
        self.decide(
            format!("source:{}", candidate.id),
            "source",
            &candidate.id,
            Outcome::Selected,
            cause,
            source_reason,
            Vec::new(),
        );
    }

    /// Takes every ordinary skill of a wholly admitted provider.
    fn take_whole_catalogue(&mut self, take: &mut ProviderTake<'_>, cause: &'static str, listing: &CatalogueListing) {
        for skill in &listing.ordinary {
            let reason = format!("the whole catalogue of `{}` is admitted", take.candidate.id);
            self.take_skill(take, skill, Grounds { cause, reason, selectors: Vec::new() });
        }
    }

    /// Takes the ordinary skills a skill provider's selectors match; returns the selector report.
    fn select_by_selectors(
        &mut self,
        take: &mut ProviderTake<'_>,
        patterns: &[Pattern],
        roles_file: SourceFile,
        listing: &CatalogueListing,
    ) -> SelectorReport {
        self.check_selectors_match(take.candidate, patterns, roles_file, listing);
        let (mut admitted, mut overlay_excluded) = (0, 0);
        let matcher = Matcher::new(patterns);
        for skill in &listing.ordinary {
            let matched = matcher.matches(&skill.name);
            let texts: Vec<String> = matched.iter().map(|index| patterns[*index].text.clone()).collect();
            if matched.len() > 1 {
                self.error(
                    "selector-overlap",
                    roles_file.display_path(self.db),
                    Some(patterns[matched[1]].span),
                    format!(
                        "skill `{}` of repository `{}` is matched by several selectors: {}",
                        skill.name,
                        take.candidate.id,
                        texts.join(", ")
                    ),
                    "make the selectors of one repository disjoint",
                );
            }
            if matched.is_empty() {
                self.record_unselected(take.candidate, patterns, skill);
            } else {
                if !self.reserved.contains_key(&skill.name) && self.overlay_exclusion(&skill.name).is_some() {
                    overlay_excluded += 1;
                } else {
                    admitted += 1;
                }
                let reason = format!("matched by selector `{}`", texts[0]);
                self.take_skill(take, skill, Grounds { cause: "selector-admitted", reason, selectors: texts });
            }
        }
        SelectorReport {
            patterns: patterns.iter().map(|pattern| pattern.text.clone()).collect(),
            admitted,
            catalogue: listing.ordinary.len(),
            overlay_excluded,
        }
    }

    /// Reports each selector of a skill provider that matches no skill of its catalogue.
    fn check_selectors_match(
        &mut self,
        candidate: &Candidate,
        patterns: &[Pattern],
        roles_file: SourceFile,
        listing: &CatalogueListing,
    ) {
        let names: Vec<&str> = listing.ordinary.iter().map(|skill| skill.name.as_str()).collect();
        for pattern in patterns {
            let single = Matcher::new(std::slice::from_ref(pattern));
            if !names.iter().any(|name| !single.matches(name).is_empty()) {
                self.error(
                    "selector-matches-nothing",
                    roles_file.display_path(self.db),
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
    }

    /// Records an ordinary skill no selector matched.
    fn record_unselected(&mut self, candidate: &Candidate, patterns: &[Pattern], skill: &CatalogueSkill) {
        // Consecutive skills no selector matched share one entry.
        match self.decisions.last_mut() {
            Some(TraceEntry::UnselectedSkills { source, names, .. }) if *source == candidate.id => {
                names.push(skill.name.clone());
            }
            _ => {
                let patterns_text: Vec<&str> = patterns.iter().map(|pattern| pattern.text.as_str()).collect();
                self.decisions.push(TraceEntry::UnselectedSkills {
                    source: candidate.id.clone(),
                    reason: format!("matched by no selector of `{}` ({})", candidate.id, patterns_text.join(", ")),
                    names: vec![skill.name.clone()],
                });
            }
        }
    }

    /// Takes a request root's composed skills the role's selectors match; excludes the others.
    fn select_composed(&mut self, take: &mut ProviderTake<'_>, listing: &CatalogueListing) {
        if listing.composed.is_empty() {
            return;
        }
        let candidate = take.candidate;
        let role_patterns: Vec<Pattern> = candidate.view.as_ref().map(|view| view.composed.clone()).unwrap_or_default();
        let matcher = Matcher::new(&role_patterns);
        for skill in &listing.composed {
            let matched = matcher.matches(&skill.name);
            let texts: Vec<String> = matched.iter().map(|index| role_patterns[*index].text.clone()).collect();
            if !matched.is_empty() && candidate.is_request_source {
                let (cause, reason) = if matched.len() > 1 {
                    self.warn_composed_overlap(candidate, skill, &role_patterns[matched[1]], &texts);
                    (
                        "overlap",
                        format!(
                            "matched by {} composed-skill selectors of `{}`; selected once",
                            matched.len(),
                            self.slug
                        ),
                    )
                } else {
                    (
                        "composed-selector",
                        format!("matched by composed-skill selector `{}` of `{}`", texts[0], self.slug),
                    )
                };
                self.take_skill(take, skill, Grounds { cause, reason, selectors: texts });
                continue;
            }
            self.exclude_composed(candidate, skill);
        }
    }

    /// Warns that several composed-skill selectors of the role match one composed skill.
    fn warn_composed_overlap(
        &mut self,
        candidate: &Candidate,
        skill: &CatalogueSkill,
        second: &Pattern,
        texts: &[String],
    ) {
        let file = candidate
            .view
            .as_ref()
            .and_then(|view| view.roles_file)
            .map_or_else(|| candidate.location.clone(), |file| file.display_path(self.db));
        self.diagnostics.push(
            Diagnostic::warning(
                "composed-selector-overlap",
                format!(
                    "composed skill `{}` is matched by {} selectors of role `{}`: {}",
                    skill.name,
                    texts.len(),
                    self.slug,
                    texts.join(", ")
                ),
            )
            .in_file(file)
            .at(Some(second.span))
            .hint("it is selected once; narrow the selectors to silence this warning"),
        );
    }

    /// Excludes a composed skill the role does not select, naming the roles that do.
    fn exclude_composed(&mut self, candidate: &Candidate, skill: &CatalogueSkill) {
        let other_roles: Vec<String> = candidate
            .view
            .as_ref()
            .and_then(|view| view.composed_elsewhere.get(&skill.name).cloned())
            .unwrap_or_default();
        let (cause, reason) = if other_roles.is_empty() {
            ("selector-excluded", format!("matched by no composed-skill selector of `{}`", self.slug))
        } else {
            ("role-excluded", format!("selected only for role(s) {}", other_roles.join(", ")))
        };
        self.decide(skill.subject(), "composed-skill", &candidate.id, Outcome::Excluded, cause, reason, Vec::new());
    }

    /// Takes one admitted skill: excluded when reserved or invalid, shadowed, conflicting, or selected.
    fn take_skill(&mut self, take: &mut ProviderTake<'_>, skill: &CatalogueSkill, grounds: Grounds) {
        let candidate = take.candidate;
        // A catalogue copy of an inactive role's or personality's skill never enters.
        if let Some((cause, reason)) = self.reserved.get(&skill.name).cloned() {
            self.decide(
                skill.subject(),
                skill_kind_name(skill.kind),
                &candidate.id,
                Outcome::Excluded,
                cause,
                format!("the name is reserved: it {reason}"),
                grounds.selectors,
            );
            return;
        }
        if let Some(reason) = self.overlay_exclusion(&skill.name) {
            self.decide(
                skill.subject(),
                skill_kind_name(skill.kind),
                &candidate.id,
                Outcome::Excluded,
                "overlay-excluded",
                reason,
                grounds.selectors,
            );
            return;
        }
        let audited = self.audit_skill(skill);
        if let Some(reason) = audited.refusal {
            self.decide(
                skill.subject(),
                skill_kind_name(skill.kind),
                &candidate.id,
                Outcome::Excluded,
                super::audit::REFUSED,
                reason,
                grounds.selectors,
            );
            if let Some(last) = self.last_decision() {
                last.findings = audited.records;
            }
            return;
        }
        let records = match self.check_findings(take, skill) {
            SkillFindings::Admissible(mut records) => {
                records.extend(audited.records);
                records
            }
            SkillFindings::Skipped { records, reason } => {
                self.decide(
                    skill.subject(),
                    skill_kind_name(skill.kind),
                    &candidate.id,
                    Outcome::Excluded,
                    "invalid-skill",
                    reason,
                    grounds.selectors,
                );
                if let Some(last) = self.last_decision() {
                    last.findings = records;
                }
                return;
            }
        };
        let db = self.db;
        match self.claim(&skill.name, &candidate.id, &skill.digest, || skill_entry_file(db, candidate, skill)) {
            Ok(()) => self.select_skill(take, skill, grounds, records),
            Err(Some(winner)) => self.shadow_skill(candidate, skill, grounds.selectors, winner),
            Err(None) => {}
        }
    }

    /// Reports a skill's Agent Skills findings under the composition's policy and records them.
    fn check_findings(&mut self, take: &ProviderTake<'_>, skill: &CatalogueSkill) -> SkillFindings {
        let mut records = Vec::new();
        // A later byte-identical copy is shadowed; its findings were told for the first.
        let shadowed = self.taken.get(&skill.name).is_some_and(|(_, digest)| digest == &skill.digest);
        let Some(check) = skill.check.as_ref().filter(|_| !shadowed) else {
            return SkillFindings::Admissible(records);
        };
        let entry =
            if check.findings.is_empty() { String::new() } else { skill_entry_file(self.db, take.candidate, skill) };
        let severity = if take.policy == SkillPolicy::Strict { Severity::Error } else { Severity::Warning };
        for finding in &check.findings {
            self.diagnostics.push(skill_rules::in_file(finding, &entry, severity));
            let level = FindingLevel::of(finding);
            if level != FindingLevel::Extension {
                records.push(FindingRecord {
                    code: finding.code.to_owned(),
                    level: level.name().to_owned(),
                    message: finding.message.clone(),
                    consequence: skill_rules::consequence(finding).to_owned(),
                });
            }
        }
        if take.policy == SkillPolicy::Skip && check.has_violations() {
            let codes: Vec<&str> = check
                .findings
                .iter()
                .filter(|finding| FindingLevel::of(finding) == FindingLevel::Violation)
                .map(|finding| finding.code)
                .collect();
            let reason = format!("breaks the Agent Skills rules ({}); skill policy `skip`", codes.join(", "));
            return SkillFindings::Skipped { records, reason };
        }
        SkillFindings::Admissible(records)
    }

    /// Selects a skill whose name its provider claimed: its decision, budget and bundle members.
    fn select_skill(
        &mut self,
        take: &mut ProviderTake<'_>,
        skill: &CatalogueSkill,
        grounds: Grounds,
        records: Vec<FindingRecord>,
    ) {
        self.decide(
            skill.subject(),
            skill_kind_name(skill.kind),
            &take.candidate.id,
            Outcome::Selected,
            grounds.cause,
            grounds.reason,
            grounds.selectors,
        );
        self.listed(skill.budget.metadata_bytes);
        if let Some(last) = self.last_decision() {
            last.findings = records;
        }
        take.budget.add(skill.budget);
        take.count += 1;
        take.selected.push(selected_skill(&take.candidate.id, skill));
    }

    /// Records a later byte-identical copy of a selected skill as shadowed by the first.
    fn shadow_skill(&mut self, candidate: &Candidate, skill: &CatalogueSkill, selectors: Vec<String>, winner: String) {
        self.decisions.push(TraceEntry::Decision(Decision {
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
}
