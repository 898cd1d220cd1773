//! The reviewed, one-way import of `munder-difflin/hire@1` files. Owns the mapping of
//! hire fields to person@1 fields, the list of ignored fields and what review must still
//! supply. It only reads the hire file's bytes: nothing it contains is executed, fetched
//! or kept beyond the mapped fields, and the import never links back to its source.

use crate::finding;
use serde_json::{Map, Value};

use super::model::{ImportSource, Isolation, Person};
use super::{HIRE_SPEC, MAX_REFERENCES, MAX_TOKENS_CEILING, is_reference, json, slugify};
use crate::Diagnostic;

/// What review supplies on the command line; each wins over the hire file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub id: Option<String>,
    pub name: Option<String>,
    pub role: Option<String>,
    pub goal: Option<String>,
    pub max_tokens: Option<u64>,
}

/// A hire field carried into the Person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The hire field (or the command-line flag) the value came from.
    pub source: &'static str,
    /// The person@1 field it becomes.
    pub target: &'static str,
    /// The value as it will be written; a value from the file, to be shown sanitized.
    pub value: String,
    pub note: Option<&'static str>,
}

/// A hire field that is not carried over, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The field name as the file spells it; print it through [`super::printable`].
    pub name: String,
    pub reason: &'static str,
}

/// Something review must look at. Blocking items must be resolved with a flag before
/// `--save` writes anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attention {
    pub field: &'static str,
    pub message: &'static str,
    pub blocking: bool,
}

/// The review of one hire file.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub mapped: Vec<Mapped>,
    pub ignored: Vec<Ignored>,
    pub attention: Vec<Attention>,
    /// The Person `--save` would write; `None` while a blocking item is open.
    pub person: Option<Person>,
}

impl Review {
    pub(crate) fn is_ready(&self) -> bool {
        self.person.is_some()
    }
}

/// Reads a hire file and maps it. Findings only for a file that is not a hire file at
/// all (unparseable, not an object, another spec).
pub fn review(file: &str, bytes: &[u8], overrides: &Overrides) -> Result<Review, Vec<Diagnostic>> {
    let tree = json::parse(bytes).map_err(|error| vec![finding::syntax(file, error)])?;
    let Some(object) = tree.value.as_object() else {
        return Err(vec![
            finding::error("not-a-hire-file", file, "a hire file is a JSON object").at_position(tree.position("")),
        ]);
    };
    if let Some(spec) = object.get("spec")
        && spec.as_str() != Some(HIRE_SPEC)
    {
        return Err(vec![
            finding::error("not-a-hire-file", file, "`spec` is not `munder-difflin/hire@1`")
                .at_position(tree.position("/spec"))
                .hint("only munder-difflin/hire@1 files can be imported"),
        ]);
    }
    Ok(Mapper::default().run(object, overrides))
}

#[derive(Default)]
struct Draft {
    import_id: Option<String>,
    name: Option<String>,
    role: Option<String>,
    goal: Option<String>,
    preferred_provider: Option<String>,
    preferred_model: Option<String>,
    capabilities: Vec<String>,
    skills: Vec<String>,
    mcp_servers: Vec<String>,
    isolation: Option<Isolation>,
    max_tokens: Option<u64>,
    original_character: Option<String>,
    original_accent: Option<String>,
}

#[derive(Default)]
struct Mapper {
    mapped: Vec<Mapped>,
    ignored: Vec<Ignored>,
    attention: Vec<Attention>,
    draft: Draft,
}

impl Mapper {
    fn run(mut self, object: &Map<String, Value>, overrides: &Overrides) -> Review {
        let mut token_cap_too_high = false;
        for (key, value) in object {
            match key.as_str() {
                "spec" => self.map("spec", "import_source.spec", HIRE_SPEC, None),
                "id" => self.draft.import_id = self.reference("id", "import_source.id", value),
                "name" => self.draft.name = self.text("name", "name", value, 128),
                "description" => match value.as_str().map(slugify).filter(|slug| !slug.is_empty()) {
                    Some(role) => {
                        self.map(
                            "description",
                            "role",
                            &role,
                            Some("slugified from the one-line description; review it"),
                        );
                        self.draft.role = Some(role);
                    }
                    None => self.notice("description", "is not text a role can be made from; not mapped"),
                },
                "goal" => self.draft.goal = self.text("goal", "goal", value, 2048),
                "character" => {
                    self.draft.original_character =
                        self.text("character", "import_source.original_character", value, 128)
                }
                "accent" => {
                    self.draft.original_accent = self.text("accent", "import_source.original_accent", value, 128)
                }
                "provider" => self.draft.preferred_provider = self.reference("provider", "preferred_provider", value),
                "model" => self.draft.preferred_model = self.reference("model", "preferred_model", value),
                "capabilities" => self.draft.capabilities = self.references("capabilities", "capabilities", value),
                "skills" => self.draft.skills = self.references("skills", "skills", value),
                "mcpServers" => self.draft.mcp_servers = self.servers(value),
                "isolate" => match value {
                    Value::Bool(true) => {
                        self.map("isolate", "isolation", Isolation::Worktree.as_str(), None);
                        self.draft.isolation = Some(Isolation::Worktree);
                    }
                    Value::Bool(false) => self.map("isolate", "isolation", "(not set: inherited)", None),
                    _ => self.notice("isolate", "is not true or false; not mapped"),
                },
                "tokenCap" => match value.as_u64() {
                    Some(cap) if cap <= MAX_TOKENS_CEILING => {
                        self.map("tokenCap", "budget.max_tokens", &cap.to_string(), None);
                        self.draft.max_tokens = Some(cap);
                    }
                    Some(_) => token_cap_too_high = true,
                    None => self.notice("tokenCap", "is not a non-negative whole number; not mapped"),
                },
                "commandFlags" => self.ignore(key, "commands are never executed or stored"),
                "author" | "homepage" => self.ignore(key, "attribution is not part of person@1"),
                _ => self.ignore(key, "not part of the hire@1 mapping"),
            }
        }
        self.apply_overrides(overrides, token_cap_too_high);
        let person = self.person();
        Review { mapped: self.mapped, ignored: self.ignored, attention: self.attention, person }
    }

    fn apply_overrides(&mut self, overrides: &Overrides, token_cap_too_high: bool) {
        if let Some(name) = &overrides.name {
            self.map("--name", "name", name, Some("supplied in review"));
            self.draft.name = Some(name.clone());
        }
        if let Some(role) = &overrides.role {
            self.map("--role", "role", role, Some("supplied in review"));
            self.draft.role = Some(role.clone());
        }
        if let Some(goal) = &overrides.goal {
            self.map("--goal", "goal", goal, Some("supplied in review"));
            self.draft.goal = Some(goal.clone());
        }
        if let Some(max_tokens) = overrides.max_tokens {
            self.map("--max-tokens", "budget.max_tokens", &max_tokens.to_string(), Some("supplied in review"));
            self.draft.max_tokens = Some(max_tokens);
        } else if token_cap_too_high {
            self.block("tokenCap", "is above the person@1 ceiling of 1000000000; pass --max-tokens");
        }
        match (&overrides.id, &self.draft.name) {
            (Some(id), _) => self.map("--id", "id", id, Some("supplied in review")),
            (None, Some(name)) => {
                let id = slugify(name);
                if id.is_empty() {
                    self.block("id", "cannot be made from the name; pass --id");
                } else {
                    self.map("name", "id", &id, Some("slugified from the name; override with --id"));
                }
            }
            (None, None) => {}
        }
        if self.draft.name.is_none() {
            self.block("name", "is absent or not 1 to 128 characters; pass --name");
        }
        if self.draft.role.is_none() {
            self.block("role", "cannot be made from `description`; pass --role");
        }
        if self.draft.goal.is_none() {
            self.block("goal", "is absent; review must supply one with --goal");
        }
    }

    fn person(&self) -> Option<Person> {
        if self.attention.iter().any(|item| item.blocking) {
            return None;
        }
        let draft = &self.draft;
        let name = draft.name.clone()?;
        let id = self.mapped.iter().rev().find(|mapped| mapped.target == "id").map(|mapped| mapped.value.clone())?;
        let mut person = Person::new(id, name, draft.role.clone()?, draft.goal.clone()?);
        person.preferred_provider = draft.preferred_provider.clone();
        person.preferred_model = draft.preferred_model.clone();
        person.capabilities = draft.capabilities.clone();
        person.skills = draft.skills.clone();
        person.mcp_servers = draft.mcp_servers.clone();
        person.isolation = draft.isolation;
        person.budget.max_tokens = draft.max_tokens;
        person.import_source = Some(ImportSource {
            id: draft.import_id.clone(),
            original_character: draft.original_character.clone(),
            original_accent: draft.original_accent.clone(),
        });
        Some(person)
    }

    fn map(&mut self, source: &'static str, target: &'static str, value: &str, note: Option<&'static str>) {
        self.mapped.push(Mapped { source, target, value: value.to_owned(), note });
    }

    fn ignore(&mut self, name: &str, reason: &'static str) {
        self.ignored.push(Ignored { name: name.to_owned(), reason });
    }

    /// A field the user must settle before the Person can be saved.
    fn block(&mut self, field: &'static str, message: &'static str) {
        self.attention.push(Attention { field, message, blocking: true });
    }

    /// A field worth a look that does not stop the save.
    fn notice(&mut self, field: &'static str, message: &'static str) {
        self.attention.push(Attention { field, message, blocking: false });
    }

    fn text(&mut self, source: &'static str, target: &'static str, value: &Value, maximum: usize) -> Option<String> {
        match value.as_str() {
            Some(text) if (1..=maximum).contains(&text.chars().count()) => {
                self.map(source, target, text, None);
                Some(text.to_owned())
            }
            _ => {
                self.notice(source, "is not text of an accepted length; not mapped");
                None
            }
        }
    }

    fn reference(&mut self, source: &'static str, target: &'static str, value: &Value) -> Option<String> {
        match value.as_str() {
            Some(text) if is_reference(text) => {
                self.map(source, target, text, None);
                Some(text.to_owned())
            }
            _ => {
                self.notice(source, "is not a valid reference; not mapped");
                None
            }
        }
    }

    /// A list of references: invalid entries and repeats are dropped, at most 32 kept.
    fn references(&mut self, source: &'static str, target: &'static str, value: &Value) -> Vec<String> {
        let Some(items) = value.as_array() else {
            self.notice(source, "is not a list; not mapped");
            return Vec::new();
        };
        let names: Vec<Option<&str>> = items.iter().map(Value::as_str).collect();
        self.keep_references(source, target, &names)
    }

    /// `mcpServers` is a list of names or an object of name → server configuration. Only
    /// the names are kept; configurations (commands, arguments, environment) never are.
    fn servers(&mut self, value: &Value) -> Vec<String> {
        match value {
            Value::Array(items) => {
                let names: Vec<Option<&str>> = items.iter().map(Value::as_str).collect();
                self.keep_references("mcpServers", "mcp_servers", &names)
            }
            Value::Object(servers) => {
                let names: Vec<Option<&str>> = servers.keys().map(|name| Some(name.as_str())).collect();
                if servers.values().any(|configuration| !configuration.is_null()) {
                    self.notice(
                        "mcpServers",
                        "server configurations (commands, arguments, environment) are not kept; only names",
                    );
                }
                self.keep_references("mcpServers", "mcp_servers", &names)
            }
            _ => {
                self.notice("mcpServers", "is neither a list nor an object of servers; not mapped");
                Vec::new()
            }
        }
    }

    fn keep_references(&mut self, source: &'static str, target: &'static str, names: &[Option<&str>]) -> Vec<String> {
        let mut kept: Vec<String> = Vec::new();
        let mut dropped = false;
        for name in names {
            match name {
                Some(name) if is_reference(name) => {
                    if !kept.iter().any(|existing| existing == name) {
                        kept.push((*name).to_owned());
                    }
                }
                _ => dropped = true,
            }
        }
        if dropped {
            self.notice(source, "has entries that are not valid references; they were dropped");
        }
        if kept.len() > MAX_REFERENCES {
            kept.truncate(MAX_REFERENCES);
            self.notice(source, "has more than 32 entries; only the first 32 were kept");
        }
        self.map(source, target, &kept.join(", "), None);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIRE: &str = r#"{
  "name": "Dwight Schrute",
  "description": "Assistant (to the) Regional Manager",
  "character": "dwight",
  "accent": "mustard",
  "provider": "anthropic",
  "model": "claude-sonnet-4.5",
  "commandFlags": ["--dangerously-skip-permissions"],
  "capabilities": ["sales", "security"],
  "skills": ["beet-farming", "beet-farming", "not valid!"],
  "mcpServers": {"github": {"command": "npx", "args": ["-y", "server"]}},
  "isolate": true,
  "tokenCap": 200000,
  "author": "someone",
  "homepage": "https://example.invalid",
  "favouriteMug": "world's best"
}"#;

    #[test]
    fn maps_every_known_field_and_lists_the_ignored_ones() {
        let review = review("hire.json", HIRE.as_bytes(), &Overrides::default())
            .unwrap_or_else(|findings| panic!("{findings:?}"));
        let targets: Vec<(&str, &str)> = review.mapped.iter().map(|mapped| (mapped.source, mapped.target)).collect();
        assert_eq!(
            targets,
            [
                ("name", "name"),
                ("description", "role"),
                ("character", "import_source.original_character"),
                ("accent", "import_source.original_accent"),
                ("provider", "preferred_provider"),
                ("model", "preferred_model"),
                ("capabilities", "capabilities"),
                ("skills", "skills"),
                ("mcpServers", "mcp_servers"),
                ("isolate", "isolation"),
                ("tokenCap", "budget.max_tokens"),
                ("name", "id"),
            ]
        );
        let ignored: Vec<&str> = review.ignored.iter().map(|ignored| ignored.name.as_str()).collect();
        assert_eq!(ignored, ["commandFlags", "author", "homepage", "favouriteMug"]);
        assert!(!review.is_ready(), "the goal is missing");
        assert!(review.attention.iter().any(|item| item.field == "goal" && item.blocking));
    }

    #[test]
    fn a_supplied_goal_makes_an_inert_person() {
        let overrides = Overrides { goal: Some("Sell paper.".to_owned()), ..Overrides::default() };
        let review = review("hire.json", HIRE.as_bytes(), &overrides).unwrap_or_else(|findings| panic!("{findings:?}"));
        let person = review.person.unwrap_or_else(|| panic!("not ready"));
        assert_eq!(person.id, "dwight-schrute");
        assert_eq!(person.role, "assistant-to-the-regional-manager");
        assert_eq!(person.skills, ["beet-farming"]);
        assert_eq!(person.mcp_servers, ["github"]);
        assert_eq!(person.isolation, Some(Isolation::Worktree));
        assert_eq!(person.budget.max_tokens, Some(200_000));
        let bytes = String::from_utf8(super::super::document::person_bytes(&person)).unwrap_or_default();
        assert!(!bytes.contains("dangerously"));
        assert!(!bytes.contains("npx"));
        assert!(bytes.contains("\"review_required\": true"));
    }

    #[test]
    fn a_token_cap_above_the_ceiling_blocks_until_overridden() {
        let text = r#"{"name": "Kevin", "description": "accounting", "goal": "Count.", "tokenCap": 5000000000}"#;
        let blocked = review("hire.json", text.as_bytes(), &Overrides::default())
            .unwrap_or_else(|findings| panic!("{findings:?}"));
        assert!(blocked.attention.iter().any(|item| item.field == "tokenCap" && item.blocking));
        let overrides = Overrides { max_tokens: Some(1000), ..Overrides::default() };
        let ready = review("hire.json", text.as_bytes(), &overrides).unwrap_or_else(|findings| panic!("{findings:?}"));
        assert_eq!(ready.person.map(|person| person.budget.max_tokens), Some(Some(1000)));
    }

    #[test]
    fn other_specs_and_non_objects_are_refused() {
        let codes = |text: &str| {
            review("hire.json", text.as_bytes(), &Overrides::default())
                .err()
                .map(|findings| findings.iter().map(|finding| finding.code).collect::<Vec<_>>())
        };
        assert_eq!(codes(r#"{"spec": "agent-toolkit/person@1"}"#), Some(vec!["not-a-hire-file"]));
        assert_eq!(codes("[]"), Some(vec!["not-a-hire-file"]));
        assert_eq!(codes(r#"{"a": 1, "a": 2}"#), Some(vec!["duplicate-key"]));
    }
}
