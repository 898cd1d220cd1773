//! The People domain values: a Person as person@1 declares it and the role bindings of
//! people-bindings@1. Plain data with no behaviour beyond small accessors; reading and
//! writing them is `document`, checking them is `workspace`.

use std::collections::BTreeMap;

/// One durable, reviewed collaborator. A declaration: nothing here runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Person {
    pub id: String,
    pub name: String,
    pub role: String,
    pub goal: String,
    pub archived: bool,
    pub definition_id: Option<String>,
    pub preferred_provider: Option<String>,
    pub preferred_model: Option<String>,
    pub capabilities: Vec<String>,
    pub skills: Vec<String>,
    pub mcp_servers: Vec<String>,
    pub avatar: Option<Avatar>,
    pub isolation: Option<Isolation>,
    /// An omitted limit means inherited or unknown, never unlimited.
    pub budget: Budget,
    pub import_source: Option<ImportSource>,
}

impl Person {
    /// A Person with only the required fields set, active.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        role: impl Into<String>,
        goal: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            role: role.into(),
            goal: goal.into(),
            archived: false,
            definition_id: None,
            preferred_provider: None,
            preferred_model: None,
            capabilities: Vec::new(),
            skills: Vec::new(),
            mcp_servers: Vec::new(),
            avatar: None,
            isolation: None,
            budget: Budget::default(),
            import_source: None,
        }
    }

    pub(crate) fn is_active(&self) -> bool {
        !self.archived
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Avatar {
    /// A character id (slug).
    pub character: String,
    /// `#rrggbb`.
    pub accent: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Inherited,
    Worktree,
    Session,
}

impl Isolation {
    pub const ALL: [Isolation; 3] = [Isolation::Inherited, Isolation::Worktree, Isolation::Session];

    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Inherited => "inherited",
            Isolation::Worktree => "worktree",
            Isolation::Session => "session",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|isolation| isolation.as_str() == text)
    }
}

/// Resource limits. Each `None` means inherited or unknown, never unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_seconds: Option<u64>,
}

impl Budget {
    pub fn is_empty(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost_usd.is_none() && self.max_seconds.is_none()
    }
}

/// Inert provenance of a reviewed import. The fixed flags (`review_required: true`,
/// `auto_spawn`, `auto_install`, `live_sync`: false) are not stored here because they can
/// hold no other value; the document writes them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportSource {
    pub id: Option<String>,
    pub original_character: Option<String>,
    pub original_accent: Option<String>,
}

/// `people/bindings.yaml`: per role slug, a pinned Person and ordered fallbacks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bindings {
    pub roles: BTreeMap<String, RoleBinding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoleBinding {
    pub person_id: Option<String>,
    pub preferred_people: Vec<String>,
}
