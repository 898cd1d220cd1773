//! A swarm run as data: the plan of a recipe's roles once resolved (each role's Person
//! or ephemeral slot, runner and model, and where each choice came from), the run id,
//! the ephemeral stand-in of a role no Person fills, and the run record
//! `.agent-toolkit/runs/<id>.json` (run id, recipe, project, and per role its Person
//! and session). The driver starts the sessions; nothing here runs.

use serde::{Deserialize, Serialize};

use super::model::Person;
use super::resolve::Resolved;
use super::session::{Timestamp, is_session_id};
use super::{is_reference, is_slug};

/// Where run records live, relative to the workspace.
pub const RUNS_DIRECTORY: &str = ".agent-toolkit/runs";
/// The spec string of a run record.
pub const RUN_SPEC: &str = "acompose/people-run@1";
/// The largest run record read, in bytes.
pub const MAX_RUN_BYTES: usize = 64 * 1024;

/// Where a role's runner or model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// `--runner ROLE=R` / `--model ROLE=M`: set for this role by the run.
    Role,
    /// The Person's `preferred_provider` / `preferred_model`.
    Preference,
    /// `--runner R` / `--model M`: the run's default.
    Run,
    /// Nothing chose a model: the runner's own default.
    RunnerDefault,
}

impl Choice {
    pub fn label(self) -> &'static str {
        match self {
            Choice::Role => "set for this role",
            Choice::Preference => "the Person's preference",
            Choice::Run => "the run's default",
            Choice::RunnerDefault => "the runner's default",
        }
    }
}

/// The run's runner and model choices, as the command line gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Choices {
    pub runner: Option<String>,
    pub model: Option<String>,
    /// `(role, runner)` pairs.
    pub role_runners: Vec<(String, String)>,
    /// `(role, model)` pairs.
    pub role_models: Vec<(String, String)>,
}

/// One role of a planned run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRole {
    pub resolved: Resolved,
    pub runner: String,
    pub runner_from: Choice,
    pub model: Option<String>,
    pub model_from: Choice,
}

/// Why a run cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// A role has no runner: no `--runner`, and its Person prefers none the table has.
    NoRunner { role: String },
    /// `--runner ROLE=R` or `--model ROLE=M` names a role the recipe does not have.
    UnknownRole { role: String },
}

impl PlanError {
    pub fn message(&self) -> String {
        match self {
            PlanError::NoRunner { role } => format!(
                "role `{role}` has no runner: its Person prefers none of the runner table; pass --runner RUNNER (or --runner {role}=RUNNER)"
            ),
            PlanError::UnknownRole { role } => format!("`{}` is not a role of the recipe", super::printable(role)),
        }
    }
}

/// Chooses each resolved role's runner and model: the run's per-role choice, else the
/// Person's preference (a runner only when the table has it), else the run's default.
pub fn plan(resolved: &[Resolved], people: &[Person], choices: &Choices) -> Result<Vec<PlannedRole>, PlanError> {
    for (role, _) in choices.role_runners.iter().chain(&choices.role_models) {
        if !resolved.iter().any(|slot| &slot.role == role) {
            return Err(PlanError::UnknownRole { role: role.clone() });
        }
    }
    resolved
        .iter()
        .map(|slot| {
            let person = slot.person_id.as_ref().and_then(|id| people.iter().find(|person| &person.id == id));
            let for_role = |pairs: &[(String, String)]| {
                pairs.iter().find(|(role, _)| role == &slot.role).map(|(_, value)| value.clone())
            };
            let preferred_runner = person
                .and_then(|person| person.preferred_provider.clone())
                .filter(|name| super::runner::runner(name).is_some());
            let (runner, runner_from) = match (for_role(&choices.role_runners), preferred_runner, &choices.runner) {
                (Some(runner), _, _) => (runner, Choice::Role),
                (None, Some(runner), _) => (runner, Choice::Preference),
                (None, None, Some(runner)) => (runner.clone(), Choice::Run),
                (None, None, None) => return Err(PlanError::NoRunner { role: slot.role.clone() }),
            };
            let preferred_model = person.and_then(|person| person.preferred_model.clone());
            let (model, model_from) = match (for_role(&choices.role_models), preferred_model, &choices.model) {
                (Some(model), _, _) => (Some(model), Choice::Role),
                (None, Some(model), _) => (Some(model), Choice::Preference),
                (None, None, Some(model)) => (Some(model.clone()), Choice::Run),
                (None, None, None) => (None, Choice::RunnerDefault),
            };
            Ok(PlannedRole { resolved: slot.clone(), runner, runner_from, model, model_from })
        })
        .collect()
}

/// The stand-in of a role no Person fills: never saved, its id the role's slug.
pub fn ephemeral_person(role: &str) -> Person {
    Person::new(
        role,
        format!("{role} (ephemeral)"),
        role,
        "Do this role's part of the run; no Person is bound to it, so nothing is kept beyond this session.",
    )
}

/// The id of a new run: `run-YYYYMMDD-HHMMSS-<8 hex digits>`.
pub fn run_id(started_at: &Timestamp, nonce: u32) -> String {
    let text = started_at.as_str();
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let (date, time) = digits.split_at(8.min(digits.len()));
    format!("run-{date}-{time}-{nonce:08x}")
}

/// One role of a recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRole {
    pub role: String,
    /// `None`: the role was ephemeral.
    pub person_id: Option<String>,
    /// The rule that chose the Person (`resolve::Rule::code`).
    pub rule: String,
    pub runner: String,
    pub model: Option<String>,
    pub session_id: String,
}

/// `.agent-toolkit/runs/<id>.json`: what a swarm start started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    pub spec: String,
    pub id: String,
    /// The recipe's file name as given.
    pub recipe: String,
    pub project_id: String,
    pub started_at: String,
    pub roles: Vec<RunRole>,
}

/// The canonical bytes of a run record.
pub fn run_bytes(record: &RunRecord) -> Vec<u8> {
    super::document::json_bytes(record)
}

/// Reads and checks a run record named `name`; `None` for anything that is not one.
pub fn check_run(name: &str, bytes: &[u8]) -> Option<RunRecord> {
    if bytes.len() > MAX_RUN_BYTES {
        return None;
    }
    let tree = super::json::parse(bytes).ok()?;
    let record = RunRecord::deserialize(&tree.value).ok()?;
    let valid = record.spec == RUN_SPEC
        && name.strip_suffix(".json") == Some(record.id.as_str())
        && is_session_id(&record.id)
        && is_slug(&record.project_id)
        && Timestamp::parse(&record.started_at).is_some()
        && record.recipe.chars().all(|character| !acompose_engine::diagnostic::needs_escape(character))
        && record.roles.iter().all(|role| {
            is_slug(&role.role)
                && role.person_id.as_deref().is_none_or(is_slug)
                && is_slug(&role.runner)
                && role.model.as_deref().is_none_or(is_reference)
                && is_session_id(&role.session_id)
        });
    valid.then_some(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::Rule;

    fn slot(role: &str, person: Option<&str>) -> Resolved {
        Resolved {
            role: role.to_owned(),
            persona: None,
            person_id: person.map(str::to_owned),
            rule: if person.is_some() { Rule::Explicit } else { Rule::Ephemeral },
            skipped: Vec::new(),
        }
    }

    #[test]
    fn preferences_are_used_unless_the_run_sets_the_role() {
        let mut ann = Person::new("ann", "Ann", "platform", "g");
        ann.preferred_provider = Some("codex".to_owned());
        ann.preferred_model = Some("gpt-5".to_owned());
        let mut bo = Person::new("bo", "Bo", "tpm", "g");
        bo.preferred_provider = Some("anthropic".to_owned());
        let resolved = [slot("platform", Some("ann")), slot("tpm", Some("bo")), slot("qa", None)];
        let choices = Choices { runner: Some("claude".to_owned()), ..Choices::default() };
        let planned = plan(&resolved, &[ann.clone(), bo.clone()], &choices).unwrap_or_default();
        let summary: Vec<(&str, Choice, Option<&str>, Choice)> = planned
            .iter()
            .map(|role| (role.runner.as_str(), role.runner_from, role.model.as_deref(), role.model_from))
            .collect();
        assert_eq!(
            summary,
            [
                ("codex", Choice::Preference, Some("gpt-5"), Choice::Preference),
                ("claude", Choice::Run, None, Choice::RunnerDefault),
                ("claude", Choice::Run, None, Choice::RunnerDefault),
            ]
        );
        let set = Choices { role_runners: vec![("platform".to_owned(), "gemini".to_owned())], ..choices.clone() };
        let planned = plan(&resolved, &[ann.clone(), bo.clone()], &set).unwrap_or_default();
        assert_eq!(
            planned.first().map(|role| (role.runner.as_str(), role.runner_from)),
            Some(("gemini", Choice::Role))
        );
        assert_eq!(
            plan(&resolved, &[ann, bo], &Choices::default()),
            Err(PlanError::NoRunner { role: "tpm".to_owned() })
        );
    }

    #[test]
    fn run_records_round_trip_and_ids_are_session_like() {
        let id = run_id(&Timestamp::from_unix_seconds(0), 0xabc);
        assert_eq!(id, "run-19700101-000000-00000abc");
        let record = RunRecord {
            spec: RUN_SPEC.to_owned(),
            id: id.clone(),
            recipe: "swarm.yaml".to_owned(),
            project_id: "desk".to_owned(),
            started_at: "1970-01-01T00:00:00Z".to_owned(),
            roles: vec![RunRole {
                role: "qa".to_owned(),
                person_id: None,
                rule: "ephemeral".to_owned(),
                runner: "claude".to_owned(),
                model: None,
                session_id: "19700101-000000-qa-00000001".to_owned(),
            }],
        };
        let bytes = run_bytes(&record);
        assert_eq!(check_run(&format!("{id}.json"), &bytes), Some(record));
        assert_eq!(check_run("other.json", &bytes), None);
        assert!(is_slug(&ephemeral_person("qa").id));
    }
}
