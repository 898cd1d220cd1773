//! Which roster role a Person is bound to. A Person's `role` (and a binding's role) that
//! names a role of the selected roster is that role: a session of theirs starts as it.
//! One that does not is a plain collaborator's label, and validation warns with the
//! closest roster role. The driver reads the roster and passes its role slugs in.

use acompose_engine::suggest;

use super::finding;
use super::workspace::{BINDINGS_PATH, Roster};
use crate::Diagnostic;
use crate::workspace::PEOPLE_DIRECTORY;

/// What a role slug means against the roster's roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// A role of the roster.
    Role(String),
    /// No role of the roster; the closest one, when one is close enough.
    Unbound { suggestion: Option<String> },
    /// No roster was read: nothing can be said.
    NoRoster,
}

impl Bound {
    /// The roster role, if bound.
    pub fn role(&self) -> Option<&str> {
        match self {
            Bound::Role(role) => Some(role),
            _ => None,
        }
    }

    /// `did you mean `x`?` for an unbound role with a close roster role.
    pub fn hint(&self) -> Option<String> {
        match self {
            Bound::Unbound { suggestion: Some(role) } => Some(format!("did you mean `{role}`?")),
            _ => None,
        }
    }
}

/// Binds `role` against the roster's role slugs (`None`: no roster was read).
pub fn bind(role: &str, roster_roles: Option<&[String]>) -> Bound {
    let Some(roles) = roster_roles else {
        return Bound::NoRoster;
    };
    if roles.iter().any(|slug| slug == role) {
        return Bound::Role(role.to_owned());
    }
    let suggestion = suggest::closest(role, roles.iter().map(String::as_str)).map(str::to_owned);
    Bound::Unbound { suggestion }
}

/// A warning for every active Person and every binding whose role is no roster role,
/// with the closest roster role as a hint. The role itself is not quoted (it comes from
/// a file); the suggestion is a slug of the roster.
pub fn unbound_findings(roster: &Roster, roster_roles: &[String]) -> Vec<Diagnostic> {
    let mut findings = Vec::new();
    for person in roster.people.iter().filter(|person| !person.archived) {
        if let Bound::Unbound { suggestion } = bind(&person.role, Some(roster_roles)) {
            let mut warning = finding::warning(
                "unknown-roster-role",
                &format!("{PEOPLE_DIRECTORY}/{}.json", person.id),
                "the role is no role of the roster: the Person stays a plain collaborator and starts with the host's context",
            )
            .field("role");
            if let Some(role) = suggestion {
                warning = warning.hint(format!("did you mean `{role}`?"));
            }
            findings.push(warning);
        }
    }
    for role in roster.bindings.roles.keys() {
        if let Bound::Unbound { suggestion } = bind(role, Some(roster_roles)) {
            let mut warning = finding::warning(
                "unknown-roster-role",
                BINDINGS_PATH,
                "a binding names a role that is no role of the roster: its Person starts with the host's context",
            );
            if let Some(role) = suggestion {
                warning = warning.hint(format!("did you mean `{role}`?"));
            }
            findings.push(warning);
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Person;

    fn roles() -> Vec<String> {
        ["platform", "tpm", "reviewer"].iter().map(|role| (*role).to_owned()).collect()
    }

    #[test]
    fn a_roster_role_binds_and_a_typo_gets_the_closest() {
        assert_eq!(bind("platform", Some(&roles())), Bound::Role("platform".to_owned()));
        assert_eq!(bind("platfrom", Some(&roles())).hint(), Some("did you mean `platform`?".to_owned()));
        assert_eq!(bind("wizard", Some(&roles())), Bound::Unbound { suggestion: None });
        assert_eq!(bind("platform", None), Bound::NoRoster);
    }

    #[test]
    fn unbound_people_get_a_warning_with_the_hint() {
        let roster = Roster {
            people: vec![Person::new("ann", "Ann", "platfrom", "g"), Person::new("bo", "Bo", "tpm", "g")],
            ..Roster::default()
        };
        let findings = unbound_findings(&roster, &roles());
        assert_eq!(findings.len(), 1);
        let finding = &findings[0];
        assert_eq!(finding.code, "unknown-roster-role");
        assert!(!finding.is_error());
        assert_eq!(finding.file.as_deref(), Some("people/ann.json"));
        assert_eq!(finding.hints, vec!["did you mean `platform`?".to_owned()]);
    }
}
