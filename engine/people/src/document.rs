//! The file formats of People as serde types, in one place: how a Person and the
//! bindings are read from a schema-checked tree, and the canonical bytes a Person is
//! written as (fixed key order, 2-space indent, trailing newline). Decoding assumes the
//! schema already passed; it never validates.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{Avatar, Bindings, Budget, ImportSource, Isolation, Person, RoleBinding};
use super::{HIRE_SPEC, PERSON_SPEC};

/// person@1 on disk. Field order is the key order written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonFile {
    spec: String,
    id: String,
    name: String,
    role: String,
    goal: String,
    archived: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    preferred_provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    preferred_model: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    capabilities: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skills: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    mcp_servers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    avatar: Option<AvatarFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    isolation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget: Option<BudgetFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    import_source: Option<ImportSourceFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AvatarFile {
    character: String,
    accent: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "whole_number")]
    max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "whole_number")]
    max_seconds: Option<u64>,
}

/// Reads a non-negative whole number. JSON Schema counts `1e3` and `60.0` as integers,
/// which serde would refuse as a `u64`; the schema has already bounded the value, so the
/// float is exact.
fn whole_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let number = serde_json::Number::deserialize(deserializer)?;
    if let Some(value) = number.as_u64() {
        return Ok(Some(value));
    }
    match number.as_f64() {
        // The guard makes the cast exact: a whole number within the range of u64.
        Some(value) if value.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&value) => Ok(Some(value as u64)),
        _ => Err(serde::de::Error::custom("expected a non-negative whole number")),
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportSourceFile {
    spec: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    review_required: bool,
    auto_spawn: bool,
    auto_install: bool,
    live_sync: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    original_character: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    original_accent: Option<String>,
}

/// people-bindings@1 as read.
#[derive(Deserialize)]
struct BindingsFile {
    #[serde(rename = "spec")]
    _spec: String,
    roles: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct RoleBindingFile {
    #[serde(default)]
    person_id: Option<String>,
    #[serde(default)]
    preferred_people: Vec<String>,
}

/// Reads a Person from a value the person@1 schema accepted.
pub(crate) fn decode_person(value: &Value) -> Option<Person> {
    let file = PersonFile::deserialize(value).ok()?;
    let budget = file.budget.map_or_else(Budget::default, |budget| Budget {
        max_tokens: budget.max_tokens,
        max_cost_usd: budget.max_cost_usd,
        max_seconds: budget.max_seconds,
    });
    Some(Person {
        id: file.id,
        name: file.name,
        role: file.role,
        goal: file.goal,
        archived: file.archived,
        definition_id: file.definition_id,
        preferred_provider: file.preferred_provider,
        preferred_model: file.preferred_model,
        capabilities: file.capabilities,
        skills: file.skills,
        mcp_servers: file.mcp_servers,
        avatar: file.avatar.map(|avatar| Avatar { character: avatar.character, accent: avatar.accent }),
        isolation: match file.isolation {
            Some(text) => Some(Isolation::parse(&text)?),
            None => None,
        },
        budget,
        import_source: file.import_source.map(|source| ImportSource {
            id: source.id,
            original_character: source.original_character,
            original_accent: source.original_accent,
        }),
    })
}

/// Reads the bindings from a value the people-bindings@1 schema accepted.
pub(crate) fn decode_bindings(value: &Value) -> Option<Bindings> {
    let file = BindingsFile::deserialize(value).ok()?;
    let mut bindings = Bindings::default();
    for (role, entry) in file.roles {
        let entry = RoleBindingFile::deserialize(&entry).ok()?;
        bindings
            .roles
            .insert(role, RoleBinding { person_id: entry.person_id, preferred_people: entry.preferred_people });
    }
    Some(bindings)
}

/// The canonical bytes of a Person file. Empty lists and an empty budget are omitted.
pub fn person_bytes(person: &Person) -> Vec<u8> {
    let budget = (!person.budget.is_empty()).then_some(BudgetFile {
        max_tokens: person.budget.max_tokens,
        max_cost_usd: person.budget.max_cost_usd,
        max_seconds: person.budget.max_seconds,
    });
    let file = PersonFile {
        spec: PERSON_SPEC.to_owned(),
        id: person.id.clone(),
        name: person.name.clone(),
        role: person.role.clone(),
        goal: person.goal.clone(),
        archived: person.archived,
        definition_id: person.definition_id.clone(),
        preferred_provider: person.preferred_provider.clone(),
        preferred_model: person.preferred_model.clone(),
        capabilities: person.capabilities.clone(),
        skills: person.skills.clone(),
        mcp_servers: person.mcp_servers.clone(),
        avatar: person
            .avatar
            .as_ref()
            .map(|avatar| AvatarFile { character: avatar.character.clone(), accent: avatar.accent.clone() }),
        isolation: person.isolation.map(|isolation| isolation.as_str().to_owned()),
        budget,
        import_source: person.import_source.as_ref().map(|source| ImportSourceFile {
            spec: HIRE_SPEC.to_owned(),
            id: source.id.clone(),
            review_required: true,
            auto_spawn: false,
            auto_install: false,
            live_sync: false,
            original_character: source.original_character.clone(),
            original_accent: source.original_accent.clone(),
        }),
    };
    json_bytes(&file)
}

/// The canonical bytes of `people/bindings.yaml`: block YAML in role order, every string
/// double-quoted (a JSON string is a YAML double-quoted scalar), empty fields omitted.
pub fn bindings_bytes(bindings: &Bindings) -> Vec<u8> {
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_else(|_| String::from("\"\""));
    let mut text = format!("spec: {}\n", quoted(super::BINDINGS_SPEC));
    if bindings.roles.is_empty() {
        text.push_str("roles: {}\n");
        return text.into_bytes();
    }
    text.push_str("roles:\n");
    for (role, binding) in &bindings.roles {
        text.push_str(&format!("  {}:", quoted(role)));
        if binding.person_id.is_none() && binding.preferred_people.is_empty() {
            text.push_str(" {}\n");
            continue;
        }
        text.push('\n');
        if let Some(person_id) = &binding.person_id {
            text.push_str(&format!("    person_id: {}\n", quoted(person_id)));
        }
        if !binding.preferred_people.is_empty() {
            text.push_str("    preferred_people:\n");
            for person_id in &binding.preferred_people {
                text.push_str(&format!("      - {}\n", quoted(person_id)));
            }
        }
    }
    text.into_bytes()
}

/// Serializes with a 2-space indent and a trailing newline. A non-finite float would
/// become `null` and then fail the schema check that follows every write.
pub fn json_bytes(value: &impl Serialize) -> Vec<u8> {
    acompose_engine::snapshot::to_json_bytes(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn writes_keys_in_the_fixed_order_with_a_trailing_newline() {
        let mut person = Person::new("pam", "Pam", "reception", "Keep the desk running.");
        person.budget.max_seconds = Some(60);
        person.import_source = Some(ImportSource::default());
        person.skills = vec!["greeting".to_owned()];
        let text = String::from_utf8(person_bytes(&person)).unwrap_or_default();
        assert_eq!(
            text,
            r#"{
  "spec": "agent-toolkit/person@1",
  "id": "pam",
  "name": "Pam",
  "role": "reception",
  "goal": "Keep the desk running.",
  "archived": false,
  "skills": [
    "greeting"
  ],
  "budget": {
    "max_seconds": 60
  },
  "import_source": {
    "spec": "munder-difflin/hire@1",
    "review_required": true,
    "auto_spawn": false,
    "auto_install": false,
    "live_sync": false
  }
}
"#
        );
    }

    #[test]
    fn decoding_what_was_written_gives_the_same_person() {
        let mut person = Person::new("pam", "Pam", "reception", "Goal.");
        person.avatar = Some(Avatar { character: "pam".to_owned(), accent: "#aabbcc".to_owned() });
        person.isolation = Some(Isolation::Worktree);
        person.budget.max_cost_usd = Some(2.5);
        let value: Value = serde_json::from_slice(&person_bytes(&person)).unwrap_or_default();
        assert_eq!(decode_person(&value), Some(person));
    }

    #[test]
    fn whole_numbers_written_as_floats_are_integers() {
        let value = json!({"spec": "agent-toolkit/person@1", "id": "a", "name": "A", "role": "r", "goal": "g", "archived": false, "budget": {"max_tokens": 1000.0, "max_seconds": 60}});
        assert_eq!(decode_person(&value).map(|person| person.budget.max_tokens), Some(Some(1000)));
    }

    #[test]
    fn bindings_bytes_read_back_as_the_same_bindings() {
        let mut bindings = Bindings::default();
        bindings.roles.insert(
            "qa".to_owned(),
            RoleBinding { person_id: Some("ada".to_owned()), preferred_people: vec!["bo".to_owned(), "cy".to_owned()] },
        );
        bindings.roles.insert("lead".to_owned(), RoleBinding::default());
        let bytes = bindings_bytes(&bindings);
        let tree = crate::yaml::parse(&bytes).map(|tree| tree.value).unwrap_or_default();
        assert_eq!(decode_bindings(&tree), Some(bindings));
        let empty = crate::yaml::parse(&bindings_bytes(&Bindings::default())).map(|tree| tree.value);
        assert_eq!(empty.ok().as_ref().and_then(decode_bindings), Some(Bindings::default()));
    }

    #[test]
    fn bindings_keep_pins_and_preferences() {
        let value = json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"qa": {"preferred_people": ["b", "a"]}, "lead": {"person_id": "c"}}});
        let bindings = decode_bindings(&value).unwrap_or_default();
        assert_eq!(
            bindings.roles.get("qa").map(|binding| binding.preferred_people.clone()),
            Some(vec!["b".to_owned(), "a".to_owned()])
        );
        assert_eq!(bindings.roles.get("lead").and_then(|binding| binding.person_id.clone()), Some("c".to_owned()));
    }
}
