//! The person package's part of a resolution: the assigned role's skill, methods and
//! meld delivered, inactive personalities and roles excluded with their skill names
//! reserved, and the package's provider report.

use crate::catalogue::{FileSummary, SkillBudget, tree_digest};
use crate::person::{PersonModel, Role, SkillFile};
use crate::trace::{Outcome, ProviderReport, approximate_tokens};

use super::{PERSON_SOURCE_ID, PersonSkill, Resolver, with_budget};

/// What the person package delivers: its skills, their bytes and their budget split.
#[derive(Default)]
struct PersonPackage {
    skills: Vec<PersonSkill>,
    bytes: u64,
    budget: SkillBudget,
}

impl Resolver<'_> {
    /// Resolves the person package in the documented decision order and returns its skills.
    pub(super) fn deliver_person_package(&mut self, model: &PersonModel, role: &Role) -> Vec<PersonSkill> {
        let mut package = PersonPackage::default();
        self.deliver_role_skills(&mut package, role);
        self.deliver_meld(&mut package, model, role);
        self.exclude_inactive_personalities(model, role);
        self.reserve_inactive_roles(model);
        self.report_person_package(model, &package);
        package.skills
    }

    /// Delivers the assigned role's skill and its methods.
    fn deliver_role_skills(&mut self, package: &mut PersonPackage, role: &Role) {
        let reason = format!("the role skill of `{}`", self.slug);
        self.deliver_person_skill(package, &role.skill, "role-skill", "role-assigned", reason);
        for method in &role.methods {
            let reason = format!("a method of role `{}`, loaded when a task calls for it", self.slug);
            self.deliver_person_skill(package, method, "method", "role-method", reason);
        }
    }

    /// Delivers each personality of the role's meld, in meld order, with its skill.
    fn deliver_meld(&mut self, package: &mut PersonPackage, model: &PersonModel, role: &Role) {
        for (position, personality_slug) in role.personalities.iter().enumerate() {
            let Some(personality) = model.personality(personality_slug) else { continue };
            self.decide(
                format!("personality:{personality_slug}"),
                "personality",
                PERSON_SOURCE_ID,
                Outcome::Delivered,
                "meld-member",
                format!("position {} of the meld of `{}`, colour {}", position + 1, self.slug, personality.colour.hex),
                Vec::new(),
            );
            self.deliver_person_skill(
                package,
                &personality.skill,
                "personality-skill",
                "meld-member",
                format!("the skill of personality `{personality_slug}`"),
            );
        }
    }

    /// Delivers one skill of the person package: its name claimed, its decision and its size.
    fn deliver_person_skill(
        &mut self,
        package: &mut PersonPackage,
        skill: &SkillFile,
        kind: &str,
        cause: &str,
        reason: String,
    ) {
        let (id, bytes) = (&skill.id, &skill.bytes);
        let summary = FileSummary::of_bytes(bytes);
        let digest = tree_digest(&[("SKILL.md".to_owned(), &summary)]);
        let _ = self.claim(id, PERSON_SOURCE_ID, &digest, || format!("{PERSON_SOURCE_ID}/{id}"));
        let records = self.audit_person_skill(skill);
        self.decide(format!("skill:{id}"), kind, PERSON_SOURCE_ID, Outcome::Delivered, cause, reason, Vec::new());
        if let Some(last) = self.last_decision() {
            last.findings = records;
        }
        let text = String::from_utf8_lossy(bytes);
        let document = crate::skill::parse_skill(&text, id);
        let name = document.value.name.as_deref().unwrap_or(id);
        let description = document.value.description.as_deref().unwrap_or("");
        let budget = SkillBudget::split(name, description, bytes.len() as u64, 0, 0);
        self.listed(budget.metadata_bytes);
        package.budget.add(budget);
        package.bytes += bytes.len() as u64;
        package.skills.push(PersonSkill { id: id.to_owned(), bytes: bytes.clone() });
    }

    /// Excludes every personality outside the meld with its skill, and reserves the skill's name.
    fn exclude_inactive_personalities(&mut self, model: &PersonModel, role: &Role) {
        for personality in
            model.personalities.iter().filter(|personality| !role.personalities.contains(&personality.slug))
        {
            let reason = format!("not in the meld of `{}`", self.slug);
            self.decide(
                format!("personality:{}", personality.slug),
                "personality",
                PERSON_SOURCE_ID,
                Outcome::Excluded,
                "personality-inactive",
                reason.clone(),
                Vec::new(),
            );
            self.decide(
                format!("skill:{}", personality.skill.id),
                "personality-skill",
                PERSON_SOURCE_ID,
                Outcome::Excluded,
                "personality-inactive",
                reason.clone(),
                Vec::new(),
            );
            self.reserved.insert(personality.skill.id.clone(), ("personality-inactive", reason));
        }
    }

    /// Reserves the names of every inactive role's skill and methods, and excludes them.
    fn reserve_inactive_roles(&mut self, model: &PersonModel) {
        let slug = self.slug.clone();
        for other in model.roles.iter().filter(|other| other.slug != slug) {
            let reason = format!("belongs to inactive role `{}`", other.slug);
            self.reserved.insert(other.skill.id.clone(), ("role-inactive", reason.clone()));
            for method in &other.methods {
                self.reserved.insert(method.id.clone(), ("role-inactive", reason.clone()));
            }
            self.decide(
                format!("skill:{}", other.skill.id),
                "role-skill",
                PERSON_SOURCE_ID,
                Outcome::Excluded,
                "role-inactive",
                reason.clone(),
                Vec::new(),
            );
            for method in &other.methods {
                self.decide(
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
    }

    /// Records the person package's provider report, always the first.
    fn report_person_package(&mut self, model: &PersonModel, package: &PersonPackage) {
        self.providers.push(with_budget(
            ProviderReport {
                source: PERSON_SOURCE_ID.to_owned(),
                category: "person-package".to_owned(),
                scope: "role".to_owned(),
                outcome: Outcome::Selected,
                cause: "person-package".to_owned(),
                reason: format!("the selected person source `{}` always comes first", model.source),
                location: model.source.clone(),
                skills: package.skills.len(),
                context_bytes: package.bytes,
                approximate_tokens: approximate_tokens(package.bytes),
                metadata_bytes: 0,
                instruction_bytes: 0,
                resource_bytes: 0,
                binary_bytes: 0,
                selector: None,
            },
            package.budget,
        ));
    }
}
