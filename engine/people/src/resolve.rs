//! Swarm role binding: which Person fills each role of a recipe. Owns the resolution
//! order (explicit assignment, bindings pin, preferences in order, role match,
//! definition match, ephemeral) and the rejection of bad assignments. A resolution is a
//! preview: it starts nothing and creates no session.

use std::collections::BTreeSet;

use super::model::{Bindings, Person};
use super::recipe::{Recipe, Slot};
use super::{is_slug, printable};

/// `--assign role=person`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub role: String,
    pub person_id: String,
}

/// Which rule chose a role's Person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Explicit,
    BindingsPin,
    /// The n-th (1-based) entry of the role's `preferred_people`.
    Preference(usize),
    RoleMatch,
    DefinitionMatch,
    Ephemeral,
}

impl Rule {
    /// A stable kebab-case name, as the JSON output spells it.
    pub fn code(self) -> &'static str {
        match self {
            Rule::Explicit => "explicit",
            Rule::BindingsPin => "bindings-pin",
            Rule::Preference(_) => "preference",
            Rule::RoleMatch => "role-match",
            Rule::DefinitionMatch => "definition-match",
            Rule::Ephemeral => "ephemeral",
        }
    }

    /// How the text preview names the rule.
    pub fn label(self) -> String {
        match self {
            Rule::Explicit => "explicit".to_owned(),
            Rule::BindingsPin => "bindings pin".to_owned(),
            Rule::Preference(rank) => format!("preference #{rank}"),
            Rule::RoleMatch => "role match".to_owned(),
            Rule::DefinitionMatch => "definition match".to_owned(),
            Rule::Ephemeral => "ephemeral".to_owned(),
        }
    }
}

/// Why a bindings candidate was passed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    Missing,
    Archived,
    AlreadyUsed,
    Incompatible,
}

impl SkipReason {
    pub fn code(self) -> &'static str {
        match self {
            SkipReason::Missing => "missing",
            SkipReason::Archived => "archived",
            SkipReason::AlreadyUsed => "already-used",
            SkipReason::Incompatible => "incompatible",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            SkipReason::Missing => "missing",
            SkipReason::Archived => "archived",
            SkipReason::AlreadyUsed => "already used",
            SkipReason::Incompatible => "incompatible definition",
        }
    }
}

/// A bindings candidate that was passed over, and which entry named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub person_id: String,
    pub candidate: Rule,
    pub reason: SkipReason,
}

/// The outcome for one recipe role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub role: String,
    pub persona: Option<String>,
    /// `None` when the role stays ephemeral.
    pub person_id: Option<String>,
    pub rule: Rule,
    pub skipped: Vec<Skip>,
}

/// Why an explicit assignment was refused. Values quoted in `message` are slugs (safe
/// to print) or already made printable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub code: &'static str,
    pub message: String,
}

/// Resolves every recipe role in recipe order, or refuses the assignments.
pub fn resolve(
    recipe: &Recipe,
    people: &[Person],
    bindings: &Bindings,
    assignments: &[Assignment],
) -> Result<Vec<Resolved>, Vec<Rejection>> {
    let rejections = check_assignments(recipe, people, assignments);
    if !rejections.is_empty() {
        return Err(rejections);
    }
    // Explicitly assigned People are taken before any other rule runs, so an earlier
    // role cannot take by preference someone the user placed on a later role.
    let mut used: BTreeSet<&str> = assignments.iter().map(|assignment| assignment.person_id.as_str()).collect();
    let mut resolved = Vec::new();
    for slot in &recipe.roles {
        let outcome = resolve_slot(slot, people, bindings, assignments, &mut used);
        resolved.push(outcome);
    }
    Ok(resolved)
}

fn resolve_slot<'a>(
    slot: &Slot,
    people: &'a [Person],
    bindings: &'a Bindings,
    assignments: &[Assignment],
    used: &mut BTreeSet<&'a str>,
) -> Resolved {
    let mut outcome = Resolved {
        role: slot.role.clone(),
        persona: slot.persona.clone(),
        person_id: None,
        rule: Rule::Ephemeral,
        skipped: Vec::new(),
    };
    if let Some(assignment) = assignments.iter().find(|assignment| assignment.role == slot.role) {
        outcome.person_id = Some(assignment.person_id.clone());
        outcome.rule = Rule::Explicit;
        return outcome;
    }
    if let Some(binding) = bindings.roles.get(&slot.role) {
        let pin = binding.person_id.iter().map(|id| (id, Rule::BindingsPin));
        let preferences =
            binding.preferred_people.iter().enumerate().map(|(index, id)| (id, Rule::Preference(index + 1)));
        for (person_id, candidate) in pin.chain(preferences) {
            let reason = match people.iter().find(|person| &person.id == person_id) {
                None => SkipReason::Missing,
                Some(person) if person.archived => SkipReason::Archived,
                Some(person) if used.contains(person.id.as_str()) => SkipReason::AlreadyUsed,
                Some(person) if !compatible(slot, person) => SkipReason::Incompatible,
                Some(person) => {
                    used.insert(person.id.as_str());
                    outcome.person_id = Some(person.id.clone());
                    outcome.rule = candidate;
                    return outcome;
                }
            };
            outcome.skipped.push(Skip { person_id: person_id.clone(), candidate, reason });
        }
    }
    let matched = people.iter().find_map(|person| {
        if person.archived || used.contains(person.id.as_str()) || !compatible(slot, person) {
            return None;
        }
        if person.role == slot.role {
            return Some((person, Rule::RoleMatch));
        }
        let definition_matches = slot.persona.is_some() && person.definition_id == slot.persona;
        definition_matches.then_some((person, Rule::DefinitionMatch))
    });
    if let Some((person, rule)) = matched {
        used.insert(person.id.as_str());
        outcome.person_id = Some(person.id.clone());
        outcome.rule = rule;
    }
    outcome
}

/// A Person built on one agent definition cannot fill a slot that asks for another
/// persona. A Person without a definition, or a slot without a persona, is compatible.
pub(crate) fn compatible(slot: &Slot, person: &Person) -> bool {
    match (&slot.persona, &person.definition_id) {
        (Some(persona), Some(definition)) => persona == definition,
        _ => true,
    }
}

fn check_assignments(recipe: &Recipe, people: &[Person], assignments: &[Assignment]) -> Vec<Rejection> {
    let mut rejections = Vec::new();
    for (index, assignment) in assignments.iter().enumerate() {
        let earlier = assignments.get(..index).unwrap_or_default();
        let role = quoted(&assignment.role);
        let person_id = quoted(&assignment.person_id);
        if !recipe.roles.iter().any(|slot| slot.role == assignment.role) {
            rejections.push(Rejection {
                code: "unknown-role",
                message: format!("--assign names role {role}, which the recipe does not have"),
            });
        }
        if earlier.iter().any(|other| other.role == assignment.role) {
            rejections.push(Rejection {
                code: "role-assigned-twice",
                message: format!("--assign names role {role} more than once"),
            });
        }
        match people.iter().find(|person| person.id == assignment.person_id) {
            None => rejections.push(Rejection {
                code: "missing-person",
                message: format!("--assign names Person {person_id}, who has no valid file in `people/`"),
            }),
            Some(person) if person.archived => rejections.push(Rejection {
                code: "archived-person",
                message: format!("--assign names Person {person_id}, who is archived"),
            }),
            Some(_) => {}
        }
        if earlier.iter().any(|other| other.person_id == assignment.person_id) {
            rejections.push(Rejection {
                code: "person-assigned-twice",
                message: format!("--assign gives Person {person_id} more than one role"),
            });
        }
    }
    rejections
}

/// A command-line value in backticks when it is a slug; otherwise only its printable
/// form, so nothing unexpected reaches the terminal.
fn quoted(value: &str) -> String {
    if is_slug(value) { format!("`{value}`") } else { format!("`{}` (as given)", printable(value)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RoleBinding;

    fn person(id: &str, role: &str) -> Person {
        Person::new(id, id, role, "goal")
    }

    fn recipe(slots: &[(&str, Option<&str>)]) -> Recipe {
        Recipe {
            roles: slots
                .iter()
                .map(|(role, persona)| Slot { role: (*role).to_owned(), persona: persona.map(str::to_owned) })
                .collect(),
        }
    }

    fn assign(role: &str, person_id: &str) -> Assignment {
        Assignment { role: role.to_owned(), person_id: person_id.to_owned() }
    }

    fn outcomes(resolved: &[Resolved]) -> Vec<(String, Option<String>, String)> {
        resolved.iter().map(|role| (role.role.clone(), role.person_id.clone(), role.rule.label())).collect()
    }

    #[test]
    fn every_rule_in_order() {
        let mut designer = person("dee", "designer");
        designer.definition_id = Some("agents/critic".to_owned());
        let mut archived = person("arch", "tester");
        archived.archived = true;
        let people = vec![
            person("ann", "lead"),
            archived,
            person("bea", "tester"),
            person("cal", "tester"),
            designer,
            person("eve", "writer"),
        ];
        let mut bindings = Bindings::default();
        bindings.roles.insert(
            "reviewer".to_owned(),
            RoleBinding { person_id: Some("bea".to_owned()), preferred_people: Vec::new() },
        );
        bindings.roles.insert(
            "tester".to_owned(),
            RoleBinding {
                person_id: Some("ghost".to_owned()),
                preferred_people: vec!["arch".to_owned(), "bea".to_owned(), "cal".to_owned()],
            },
        );
        let recipe = recipe(&[
            ("lead", None),
            ("reviewer", None),
            ("tester", None),
            ("critic", Some("agents/critic")),
            ("writer", None),
            ("ops", None),
        ]);
        let resolved = resolve(&recipe, &people, &bindings, &[assign("writer", "ann")]).unwrap_or_default();
        assert_eq!(
            outcomes(&resolved),
            [
                ("lead".to_owned(), None, "ephemeral".to_owned()),
                ("reviewer".to_owned(), Some("bea".to_owned()), "bindings pin".to_owned()),
                ("tester".to_owned(), Some("cal".to_owned()), "preference #3".to_owned()),
                ("critic".to_owned(), Some("dee".to_owned()), "definition match".to_owned()),
                ("writer".to_owned(), Some("ann".to_owned()), "explicit".to_owned()),
                ("ops".to_owned(), None, "ephemeral".to_owned()),
            ]
        );
        let skipped: Vec<(&str, SkipReason)> = resolved
            .get(2)
            .map(|role| role.skipped.iter().map(|skip| (skip.person_id.as_str(), skip.reason)).collect())
            .unwrap_or_default();
        assert_eq!(
            skipped,
            [("ghost", SkipReason::Missing), ("arch", SkipReason::Archived), ("bea", SkipReason::AlreadyUsed)]
        );
    }

    #[test]
    fn role_match_takes_the_first_unused_active_person_in_file_order() {
        let people = vec![person("a", "qa"), person("b", "qa")];
        let resolved = resolve(&recipe(&[("qa", None)]), &people, &Bindings::default(), &[]).unwrap_or_default();
        assert_eq!(outcomes(&resolved), [("qa".to_owned(), Some("a".to_owned()), "role match".to_owned())]);
    }

    #[test]
    fn an_incompatible_definition_is_skipped() {
        let mut other = person("a", "qa");
        other.definition_id = Some("agents/other".to_owned());
        let mut bindings = Bindings::default();
        bindings
            .roles
            .insert("qa".to_owned(), RoleBinding { person_id: Some("a".to_owned()), preferred_people: Vec::new() });
        let resolved = resolve(&recipe(&[("qa", Some("agents/tester"))]), &[other], &bindings, &[]).unwrap_or_default();
        assert_eq!(outcomes(&resolved), [("qa".to_owned(), None, "ephemeral".to_owned())]);
        assert_eq!(resolved.first().map(|role| role.skipped.len()), Some(1));
    }

    #[test]
    fn bad_assignments_are_all_rejected() {
        let mut gone = person("gone", "qa");
        gone.archived = true;
        let people = vec![person("a", "qa"), gone];
        let recipe = recipe(&[("qa", None), ("lead", None)]);
        let assignments = [
            assign("ops", "a"),
            assign("qa", "nobody"),
            assign("lead", "gone"),
            assign("qa", "a"),
            assign("lead", "a"),
        ];
        let codes: Vec<&str> = resolve(&recipe, &people, &Bindings::default(), &assignments)
            .err()
            .unwrap_or_default()
            .iter()
            .map(|rejection| rejection.code)
            .collect();
        assert_eq!(
            codes,
            [
                "unknown-role",
                "missing-person",
                "archived-person",
                "role-assigned-twice",
                "person-assigned-twice",
                "role-assigned-twice",
                "person-assigned-twice"
            ]
        );
    }

    #[test]
    fn hostile_assignment_values_are_not_printed_raw() {
        let rejections = resolve(&recipe(&[("qa", None)]), &[], &Bindings::default(), &[assign("\u{1b}[2J", "x")])
            .err()
            .unwrap_or_default();
        assert!(rejections.iter().all(|rejection| !rejection.message.contains('\u{1b}')));
    }
}
