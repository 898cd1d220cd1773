//! The JSON Schemas shipped inside the binary (person@1, people-bindings@1 and the
//! resolve recipe), compiled once with no way to fetch a remote `$ref`, and the mapping
//! of schema errors to findings. It does not decide which files to check.

use crate::finding;
use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, Validator};
use serde_json::Value;

use super::tree::{Tree, push_token};
use crate::Diagnostic;

/// `schemas/person.schema.json`, byte for byte as `people init` mirrors it.
pub(crate) const PERSON_SCHEMA: &str = include_str!("schemas/person.schema.json");
/// `schemas/people-bindings.schema.json`, byte for byte as `people init` mirrors it.
pub(crate) const BINDINGS_SCHEMA: &str = include_str!("schemas/people-bindings.schema.json");
/// The recipe format of `acompose people resolve`; not mirrored into workspaces.
pub(crate) const RECIPE_SCHEMA: &str = include_str!("schemas/recipe.schema.json");

/// One of the shipped schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contract {
    Person,
    Bindings,
    Recipe,
}

impl Contract {
    pub fn text(self) -> &'static str {
        match self {
            Contract::Person => PERSON_SCHEMA,
            Contract::Bindings => BINDINGS_SCHEMA,
            Contract::Recipe => RECIPE_SCHEMA,
        }
    }

    fn validator(self) -> Option<&'static Validator> {
        static PERSON: LazyLock<Option<Validator>> = LazyLock::new(|| compile(PERSON_SCHEMA));
        static BINDINGS: LazyLock<Option<Validator>> = LazyLock::new(|| compile(BINDINGS_SCHEMA));
        static RECIPE: LazyLock<Option<Validator>> = LazyLock::new(|| compile(RECIPE_SCHEMA));
        match self {
            Contract::Person => PERSON.as_ref(),
            Contract::Bindings => BINDINGS.as_ref(),
            Contract::Recipe => RECIPE.as_ref(),
        }
    }
}

/// Compiles a shipped schema offline. `None` only if the shipped text were broken, which
/// the tests below rule out; callers turn it into a finding rather than a panic.
fn compile(text: &str) -> Option<Validator> {
    let schema: Value = serde_json::from_str(text).ok()?;
    jsonschema::options().with_draft(Draft::Draft202012).offline().should_validate_formats(false).build(&schema).ok()
}

/// Checks a parsed document against a shipped schema. Findings carry the schema rule's
/// pointer and the position of the offending value, never the value or its key.
pub fn check(contract: Contract, tree: &Tree, file: &str) -> Vec<Diagnostic> {
    let Some(validator) = contract.validator() else {
        return vec![finding::error("contract-unavailable", file, "the built-in schema could not be compiled")];
    };
    let mut findings = Vec::new();
    for error in validator.iter_errors(&tree.value) {
        let keyword = error.kind().keyword();
        let (code, message) = describe(keyword);
        let rule = match error.schema_path().as_str() {
            "" => "/".to_owned(),
            pointer => pointer.to_owned(),
        };
        let instance = error.instance_path().as_str();
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                // One finding per unexpected key, each placed where its value starts.
                for key in unexpected {
                    let mut pointer = instance.to_owned();
                    push_token(&mut pointer, key);
                    let position = tree.key_position(&pointer).or_else(|| tree.position(instance));
                    findings.push(finding::error(code, file, message).at_position(position).pointer(rule.clone()));
                }
            }
            ValidationErrorKind::Required { property } => {
                let mut finding =
                    finding::error(code, file, message).at_position(tree.position(instance)).pointer(rule);
                // The property name comes from the schema, not from the file.
                if let Some(name) = property.as_str() {
                    finding = finding.field(name);
                }
                findings.push(finding);
            }
            ValidationErrorKind::PropertyNames { error: inner } => {
                // The inner error's instance is the offending key: used to find where the
                // key starts, never printed.
                let mut pointer = instance.to_owned();
                if let Some(key) = inner.instance().as_str() {
                    push_token(&mut pointer, key);
                }
                let position = tree.key_position(&pointer).or_else(|| tree.position(instance));
                findings.push(finding::error(code, file, message).at_position(position).pointer(rule));
            }
            _ => findings.push(finding::error(code, file, message).at_position(tree.position(instance)).pointer(rule)),
        }
    }
    findings.sort_by(|left, right| {
        (left.position, &left.pointer, left.code).cmp(&(right.position, &right.pointer, right.code))
    });
    findings.dedup();
    findings
}

/// The stable code and static message of a failed schema keyword.
fn describe(keyword: &str) -> (&'static str, &'static str) {
    match keyword {
        "additionalProperties" | "unevaluatedProperties" | "falseSchema" => {
            ("unknown-field", "field is not allowed by the schema")
        }
        "required" => ("missing-field", "a required field is missing"),
        "type" => ("wrong-type", "value has the wrong type"),
        "const" | "enum" => ("value-not-allowed", "value is not one the schema allows"),
        "pattern" | "format" => ("pattern-mismatch", "value does not match the required pattern"),
        "minLength" => ("too-short", "text is shorter than the schema allows"),
        "maxLength" => ("too-long", "text is longer than the schema allows"),
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            ("out-of-range", "number is outside the range the schema allows")
        }
        "minItems" | "minProperties" => ("too-few-entries", "fewer entries than the schema requires"),
        "maxItems" | "maxProperties" => ("too-many-entries", "more entries than the schema allows"),
        "uniqueItems" => ("duplicate-entry", "a list repeats an entry"),
        "propertyNames" => ("invalid-key", "a key does not match the required pattern"),
        _ => ("schema-violation", "value does not satisfy the schema"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn findings(contract: Contract, value: Value) -> Vec<(&'static str, String)> {
        let tree = Tree::new(value, Default::default());
        check(contract, &tree, "people/x.json")
            .into_iter()
            .map(|finding| (finding.code, finding.pointer.unwrap_or_default()))
            .collect()
    }

    fn person() -> Value {
        json!({"spec": "agent-toolkit/person@1", "id": "x", "name": "X", "role": "reviewer", "goal": "Review.", "archived": false})
    }

    #[test]
    fn every_shipped_schema_compiles_offline() {
        for contract in [Contract::Person, Contract::Bindings, Contract::Recipe] {
            assert!(contract.validator().is_some(), "{contract:?}");
        }
    }

    #[test]
    fn a_minimal_person_is_valid() {
        assert_eq!(findings(Contract::Person, person()), []);
    }

    #[test]
    fn schema_errors_name_the_rule_pointer() {
        let mut value = person();
        value["goal"] = json!("g".repeat(2049));
        value["id"] = json!("Upper");
        value["extra"] = json!(1);
        value["budget"] = json!({"max_tokens": 1_000_000_001u64, "max_cost_usd": -1});
        value["isolation"] = json!("host");
        value["skills"] = json!(["a", "a"]);
        let mut found = findings(Contract::Person, value);
        found.sort();
        assert_eq!(
            found,
            [
                ("duplicate-entry", "/properties/skills/uniqueItems".to_owned()),
                ("out-of-range", "/properties/budget/properties/max_cost_usd/minimum".to_owned()),
                ("out-of-range", "/properties/budget/properties/max_tokens/maximum".to_owned()),
                ("pattern-mismatch", "/properties/id/pattern".to_owned()),
                ("too-long", "/properties/goal/maxLength".to_owned()),
                ("unknown-field", "/additionalProperties".to_owned()),
                ("value-not-allowed", "/properties/isolation/enum".to_owned()),
            ]
        );
    }

    #[test]
    fn missing_fields_are_named_from_the_schema() {
        let tree = Tree::new(json!({"spec": "agent-toolkit/person@1"}), Default::default());
        let mut names: Vec<String> =
            check(Contract::Person, &tree, "people/x.json").into_iter().filter_map(|finding| finding.field).collect();
        names.sort();
        assert_eq!(names, ["archived", "goal", "id", "name", "role"]);
    }

    #[test]
    fn a_trailing_newline_does_not_satisfy_a_pattern() {
        let mut value = person();
        value["role"] = json!("reviewer\n");
        assert_eq!(findings(Contract::Person, value), [("pattern-mismatch", "/properties/role/pattern".to_owned())]);
    }

    #[test]
    fn hostile_role_keys_fail_property_names() {
        let value = json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"\u{1b}[2J": {}}});
        let found = findings(Contract::Bindings, value);
        assert!(found.iter().all(|(code, _)| *code == "invalid-key"), "{found:?}");
        assert!(found.iter().any(|(_, rule)| rule.starts_with("/properties/roles/propertyNames")), "{found:?}");
    }

    #[test]
    fn lengths_count_characters_not_bytes() {
        let mut value = person();
        value["name"] = json!("é".repeat(128));
        assert_eq!(findings(Contract::Person, value), []);
    }
}
