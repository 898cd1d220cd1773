//! The swarm recipe as `acompose people resolve` reads it: an ordered list of role slots,
//! each with an optional persona (an agent definition id). JSON or YAML through the
//! hardened parsers and the shipped recipe schema. It does not resolve anything.

use crate::finding;
use serde::Deserialize;

use super::schema::{self, Contract};
use super::{json, yaml};
use crate::Diagnostic;

/// The syntax a recipe is written in, chosen by its file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

impl Syntax {
    /// `.json` → JSON; `.yaml` and `.yml` → YAML; anything else is not a recipe.
    pub fn from_file_name(name: &str) -> Option<Self> {
        let lowercase = name.to_ascii_lowercase();
        if lowercase.ends_with(".json") {
            Some(Syntax::Json)
        } else if lowercase.ends_with(".yaml") || lowercase.ends_with(".yml") {
            Some(Syntax::Yaml)
        } else {
            None
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    pub roles: Vec<Slot>,
}

/// One role of a recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub role: String,
    pub persona: Option<String>,
}

#[derive(Deserialize)]
struct RecipeFile {
    roles: Vec<SlotFile>,
}

#[derive(Deserialize)]
struct SlotFile {
    role: String,
    #[serde(default)]
    persona: Option<String>,
}

/// Reads and checks a recipe; role slugs must be unique.
pub fn parse(file: &str, syntax: Syntax, bytes: &[u8]) -> Result<Recipe, Vec<Diagnostic>> {
    let parsed = match syntax {
        Syntax::Json => json::parse(bytes),
        Syntax::Yaml => yaml::parse(bytes),
    };
    let tree = parsed.map_err(|error| vec![finding::syntax(file, error)])?;
    let findings = schema::check(Contract::Recipe, &tree, file);
    if !findings.is_empty() {
        return Err(findings);
    }
    let Ok(recipe) = RecipeFile::deserialize(&tree.value) else {
        return Err(vec![finding::error("undecodable", file, "the file passed the schema but could not be read")]);
    };
    let mut findings = Vec::new();
    for (index, slot) in recipe.roles.iter().enumerate() {
        if recipe.roles.iter().take(index).any(|earlier| earlier.role == slot.role) {
            findings.push(
                finding::error("duplicate-role", file, "a recipe names the same role twice")
                    .at_position(tree.position(&format!("/roles/{index}/role")))
                    .pointer("/properties/roles/items/properties/role"),
            );
        }
    }
    if !findings.is_empty() {
        return Err(findings);
    }
    Ok(Recipe { roles: recipe.roles.into_iter().map(|slot| Slot { role: slot.role, persona: slot.persona }).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_yaml_recipes_alike() {
        let from_json = parse(
            "recipe.json",
            Syntax::Json,
            br#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "lead"}, {"role": "qa", "persona": "agents/tester"}]}"#,
        );
        let from_yaml = parse(
            "recipe.yaml",
            Syntax::Yaml,
            b"spec: acompose/people-recipe@1\nroles:\n  - role: lead\n  - role: qa\n    persona: agents/tester\n",
        );
        assert_eq!(from_json, from_yaml);
        assert_eq!(from_json.map(|recipe| recipe.roles.len()), Ok(2));
    }

    #[test]
    fn repeated_roles_are_refused() {
        let result = parse(
            "r.json",
            Syntax::Json,
            br#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "qa"}, {"role": "qa"}]}"#,
        );
        assert_eq!(
            result.err().map(|findings| findings.iter().map(|finding| finding.code).collect::<Vec<_>>()),
            Some(vec!["duplicate-role"])
        );
    }

    #[test]
    fn extensions_choose_the_syntax() {
        assert_eq!(Syntax::from_file_name("swarm.YML"), Some(Syntax::Yaml));
        assert_eq!(Syntax::from_file_name("swarm.json"), Some(Syntax::Json));
        assert_eq!(Syntax::from_file_name("swarm.toml"), None);
    }
}
