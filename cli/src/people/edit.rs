//! `people add` and `people edit`: one flag per person@1 field. The Person is built,
//! written to canonical bytes, checked exactly as `validate` would check the file, and
//! only then written atomically.

use acompose_driver::people::{Avatar, Isolation, Person};

use acompose_driver::people::{Stop, Workspace, checked_id, create_person, existing_person, save_person};

use super::WorkspaceArgs;
use crate::print_stdout;
use crate::terminal::Terminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IsolationArg {
    Inherited,
    Worktree,
    Session,
}

impl IsolationArg {
    fn isolation(self) -> Isolation {
        match self {
            IsolationArg::Inherited => Isolation::Inherited,
            IsolationArg::Worktree => Isolation::Worktree,
            IsolationArg::Session => Isolation::Session,
        }
    }
}

/// The optional fields of a Person, shared by `add` and `edit`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OptionalFields {
    /// The agent definition this Person builds on.
    #[arg(long, value_name = "REF")]
    pub definition_id: Option<String>,
    /// The provider this Person prefers (informational).
    #[arg(long, value_name = "REF")]
    pub preferred_provider: Option<String>,
    /// The model this Person prefers (informational).
    #[arg(long, value_name = "REF")]
    pub preferred_model: Option<String>,
    /// A capability; repeat for several. Replaces the list when given.
    #[arg(long = "capability", value_name = "REF")]
    pub capabilities: Vec<String>,
    /// A skill; repeat for several. Replaces the list when given.
    #[arg(long = "skill", value_name = "REF")]
    pub skills: Vec<String>,
    /// An MCP server name; repeat for several. Replaces the list when given.
    #[arg(long = "mcp-server", value_name = "REF")]
    pub mcp_servers: Vec<String>,
    /// The avatar's character id.
    #[arg(long, value_name = "ID")]
    pub avatar_character: Option<String>,
    /// The avatar's accent colour, `#rrggbb`.
    #[arg(long, value_name = "#RRGGBB")]
    pub avatar_accent: Option<String>,
    /// How sessions of this Person are isolated.
    #[arg(long, value_enum)]
    pub isolation: Option<IsolationArg>,
    /// Token limit, 0 to 1000000000. Omitted means inherited, never unlimited.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Cost limit in US dollars, 0 to 1000000. Omitted means inherited.
    #[arg(long, value_name = "USD", value_parser = finite_amount)]
    pub max_cost_usd: Option<f64>,
    /// Time limit in seconds, 0 to 31536000. Omitted means inherited.
    #[arg(long, value_name = "SECONDS")]
    pub max_seconds: Option<u64>,
}

/// Only finite amounts: `NaN` and `inf` are refused as usage errors.
fn finite_amount(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err("expected a finite number such as `2.50`".to_owned()),
    }
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The new Person's id: a lowercase slug, also the file name `people/<id>.json`.
    pub id: String,
    /// The display name, 1 to 128 characters.
    #[arg(long)]
    pub name: String,
    /// The role slug this Person fills.
    #[arg(long, value_name = "SLUG")]
    pub role: String,
    /// What this Person is for, 1 to 2048 characters.
    #[arg(long)]
    pub goal: String,
    /// Declare the Person archived from the start.
    #[arg(long)]
    pub archived: bool,
    /// Keep a role that is one typo away from a roster role as a plain collaborator's
    /// label (such a Person starts with the host's context, not the roster role's).
    #[arg(long)]
    pub plain_collaborator: bool,
    #[command(flatten)]
    pub fields: OptionalFields,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

/// An optional field `edit --clear` removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Clearable {
    DefinitionId,
    PreferredProvider,
    PreferredModel,
    Capabilities,
    Skills,
    McpServers,
    Avatar,
    Isolation,
    Budget,
    MaxTokens,
    MaxCostUsd,
    MaxSeconds,
    ImportSource,
}

#[derive(Debug, clap::Args)]
pub struct EditArgs {
    /// The Person's id (the id itself cannot change: it is the file name).
    pub id: String,
    /// A new display name.
    #[arg(long)]
    pub name: Option<String>,
    /// A new role slug.
    #[arg(long, value_name = "SLUG")]
    pub role: Option<String>,
    /// A new goal.
    #[arg(long)]
    pub goal: Option<String>,
    /// Keep a new role that is one typo away from a roster role as a plain collaborator's
    /// label (see `people add --plain-collaborator`).
    #[arg(long)]
    pub plain_collaborator: bool,
    #[command(flatten)]
    pub fields: OptionalFields,
    /// Remove an optional field; repeatable. Applied before the other flags.
    #[arg(long, value_enum, value_name = "FIELD")]
    pub clear: Vec<Clearable>,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

/// Applies the optional-field flags to a Person.
fn apply(person: &mut Person, fields: &OptionalFields) -> Result<(), Stop> {
    let replace = |slot: &mut Option<String>, value: &Option<String>| {
        if let Some(value) = value {
            *slot = Some(value.clone());
        }
    };
    replace(&mut person.definition_id, &fields.definition_id);
    replace(&mut person.preferred_provider, &fields.preferred_provider);
    replace(&mut person.preferred_model, &fields.preferred_model);
    for (list, values) in [
        (&mut person.capabilities, &fields.capabilities),
        (&mut person.skills, &fields.skills),
        (&mut person.mcp_servers, &fields.mcp_servers),
    ] {
        if !values.is_empty() {
            list.clone_from(values);
        }
    }
    match (&mut person.avatar, &fields.avatar_character, &fields.avatar_accent) {
        (_, None, None) => {}
        (Some(avatar), character, accent) => {
            if let Some(character) = character {
                avatar.character.clone_from(character);
            }
            if let Some(accent) = accent {
                avatar.accent.clone_from(accent);
            }
        }
        (None, Some(character), Some(accent)) => {
            person.avatar = Some(Avatar { character: character.clone(), accent: accent.clone() });
        }
        (None, _, _) => {
            return Err(Stop::Invalid("a new avatar needs both --avatar-character and --avatar-accent".to_owned()));
        }
    }
    if let Some(isolation) = fields.isolation {
        person.isolation = Some(isolation.isolation());
    }
    if fields.max_tokens.is_some() {
        person.budget.max_tokens = fields.max_tokens;
    }
    if fields.max_cost_usd.is_some() {
        person.budget.max_cost_usd = fields.max_cost_usd;
    }
    if fields.max_seconds.is_some() {
        person.budget.max_seconds = fields.max_seconds;
    }
    Ok(())
}

fn clear(person: &mut Person, field: Clearable) {
    match field {
        Clearable::DefinitionId => person.definition_id = None,
        Clearable::PreferredProvider => person.preferred_provider = None,
        Clearable::PreferredModel => person.preferred_model = None,
        Clearable::Capabilities => person.capabilities.clear(),
        Clearable::Skills => person.skills.clear(),
        Clearable::McpServers => person.mcp_servers.clear(),
        Clearable::Avatar => person.avatar = None,
        Clearable::Isolation => person.isolation = None,
        Clearable::Budget => person.budget = Default::default(),
        Clearable::MaxTokens => person.budget.max_tokens = None,
        Clearable::MaxCostUsd => person.budget.max_cost_usd = None,
        Clearable::MaxSeconds => person.budget.max_seconds = None,
        Clearable::ImportSource => person.import_source = None,
    }
}

/// The flag that sets a field of the Person file (its path in the schema, `.`-joined),
/// and the form it expects.
fn flag_of(field: &str) -> Option<(&'static str, &'static str)> {
    Some(match field {
        "name" => ("--name", "1 to 128 characters"),
        "role" => ("--role", "a lowercase slug"),
        "goal" => ("--goal", "1 to 2048 characters"),
        "definition_id" => ("--definition-id", "a reference"),
        "preferred_provider" => ("--preferred-provider", "a reference"),
        "preferred_model" => ("--preferred-model", "a reference"),
        "capabilities" => ("--capability", "a reference, each given once"),
        "skills" => ("--skill", "a reference, each given once"),
        "mcp_servers" => ("--mcp-server", "a name, each given once"),
        "avatar.character" => ("--avatar-character", "a lowercase slug"),
        "avatar.accent" => ("--avatar-accent", "`#rrggbb`, six hexadecimal digits"),
        "budget.max_tokens" => ("--max-tokens", "a whole number from 0 to 1000000000"),
        "budget.max_cost_usd" => ("--max-cost-usd", "a number from 0 to 1000000"),
        "budget.max_seconds" => ("--max-seconds", "a whole number from 0 to 31536000"),
        _ => return None,
    })
}

/// The field a schema rule pointer is about: `/properties/budget/properties/max_tokens/maximum`
/// is `budget.max_tokens`.
fn field_of(rule: &str) -> String {
    let segments: Vec<&str> = rule.split('/').collect();
    segments.windows(2).filter(|pair| pair[0] == "properties").map(|pair| pair[1]).collect::<Vec<_>>().join(".")
}

/// Findings about the Person file a command is about to write are mistakes of the flags
/// that set its fields: each is reported as its flag and the form it expects (the file does
/// not exist yet, so pointing into it would point nowhere). Findings no flag explains are
/// left as they are.
fn as_flag_errors(stop: Stop, id: &str) -> Stop {
    let Stop::Findings(findings) = stop else { return stop };
    let file = format!("people/{id}.json");
    let mut messages = Vec::new();
    for finding in &findings {
        let flag = (finding.file.as_deref() == Some(file.as_str()))
            .then(|| finding.pointer.as_deref().map(field_of))
            .flatten()
            .and_then(|field| flag_of(&field));
        match flag {
            Some((flag, expected)) => {
                messages.push(format!("`{flag}` is invalid: {}; expected {expected}", finding.message));
            }
            None => return Stop::Findings(findings),
        }
    }
    Stop::Invalid(messages.join("\nerror: "))
}

/// Checks `role` against the roster before anything is written: a role one typo away
/// from a roster role is refused with that role (unless `plain_collaborator`), since
/// such a Person would start with the host's whole context instead of the role's; any
/// other role the roster lacks is a warning (a plain collaborator's label).
fn check_role(
    role: &str,
    plain_collaborator: bool,
    home: Option<&std::path::Path>,
    terminal: &Terminal,
) -> Result<Option<String>, Stop> {
    use acompose_driver::people::roster_role::Bound;
    let place = super::roster_place(home, terminal);
    let bound = acompose_driver::people::as_role::bound_role(role, place.as_ref());
    match &bound {
        Bound::Unbound { suggestion: Some(suggestion) } if !plain_collaborator => Err(Stop::Invalid(format!(
            "`--role` names no role of the roster; did you mean `{suggestion}`? A Person whose role is not a roster role starts with the host's whole context: pass `--role {suggestion}`, or `--plain-collaborator` to keep the role as a label"
        ))),
        Bound::Unbound { .. } => {
            let hint = bound.hint().map(|hint| format!(" ({hint})")).unwrap_or_default();
            Ok(Some(format!(
                "the role is no role of the roster{hint}: the Person stays a plain collaborator and starts with the host's context"
            )))
        }
        Bound::Role(_) | Bound::NoRoster => Ok(None),
    }
}

pub(crate) fn run_add(args: &AddArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let id = checked_id(&args.id)?;
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let mut person = Person::new(id, args.name.clone(), args.role.clone(), args.goal.clone());
    person.archived = args.archived;
    apply(&mut person, &args.fields)?;
    let warning = check_role(&person.role, args.plain_collaborator, home, terminal)?;
    let path = create_person(&workspace, &person).map_err(|stop| as_flag_errors(stop, id))?;
    if !terminal.quiet {
        print_stdout(&format!("added `{id}` (wrote `{path}`); nothing was started\n"));
    }
    if let Some(warning) = warning {
        crate::terminal::warn(terminal, &warning);
    }
    Ok(())
}

pub(crate) fn run_edit(args: &EditArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> Result<(), Stop> {
    let id = checked_id(&args.id)?;
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let mut person = existing_person(&workspace, id)?;
    let before = person.clone();
    for field in &args.clear {
        clear(&mut person, *field);
    }
    if let Some(name) = &args.name {
        person.name.clone_from(name);
    }
    if let Some(role) = &args.role {
        person.role.clone_from(role);
    }
    if let Some(goal) = &args.goal {
        person.goal.clone_from(goal);
    }
    apply(&mut person, &args.fields)?;
    let warning = match &args.role {
        Some(role) if *role != before.role => check_role(role, args.plain_collaborator, home, terminal)?,
        _ => None,
    };
    if person == before {
        if !terminal.quiet {
            print_stdout(&format!("`{id}` is unchanged; nothing was written\n"));
        }
        return Ok(());
    }
    let path = save_person(&workspace, &person).map_err(|stop| as_flag_errors(stop, id))?;
    if !terminal.quiet {
        print_stdout(&format!("updated `{id}` (wrote `{path}`)\n"));
    }
    if let Some(warning) = warning {
        crate::terminal::warn(terminal, &warning);
    }
    Ok(())
}
