//! The start of a People session as data: the initial prompt, the review shown before
//! anything runs, and every reason a start is refused, as typed values.
//!
//! The driver resolves the project folder (`projects/<id>` must be a link to a folder)
//! and finds the runner on `PATH`; it passes the results in. The one-time task enters
//! the prompt and the argv and nothing else: [`StartReview::launch`] builds the first
//! record without it.

use super::model::{Isolation, Person};
use super::runner::{ArgvError, Runner, argv_text, invocation_in, runner};
use super::session::{Launch, SessionLinks, Timestamp};
use super::usage::usage_record;
use super::{is_slug, workspace::Roster};

/// The largest one-time task, in bytes. The task travels in argv, which the OS bounds.
pub(crate) const MAX_TASK_BYTES: usize = 8 * 1024;
/// The environment hint naming the Person of a session.
pub(crate) const PERSON_ID_VARIABLE: &str = "AGENT_TOOLKIT_PERSON_ID";
/// The environment hint naming the session.
pub(crate) const SESSION_ID_VARIABLE: &str = "AGENT_TOOLKIT_SESSION_ID";

/// What the user asked to start.
#[derive(Debug, Clone, Copy)]
pub struct StartRequest<'a> {
    pub person_id: &'a str,
    pub project_id: &'a str,
    /// The canonical project folder the driver resolved `projects/<project_id>` to.
    pub project_folder: &'a str,
    pub runner: &'a str,
    pub model: Option<&'a str>,
    pub task: Option<&'a str>,
    /// A conversation id the driver chose, for a runner that takes one at the start.
    pub conversation: Option<&'a str>,
}

/// What a runner started as a roster role sees: the role's card as its bundle's manifest
/// states it, the bundle and its skills, and the runtime home it starts in. Taken from
/// the launch the driver prepared; `None` in a review means the runner sees the host's
/// context.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoleSight {
    pub role: String,
    pub display_name: String,
    pub identity: String,
    pub pronouns: String,
    /// The favourite colour, `#rrggbb`.
    pub favourite: String,
    pub personalities: Vec<String>,
    pub bundle_id: String,
    pub tier: String,
    /// The skills the runner will see, by id, sorted.
    pub skills: Vec<String>,
    /// The runtime home (the runner's `HOME`).
    pub runtime_home: String,
    /// The MCP servers the launch delivers: the role's selection, in inventory order.
    pub mcp_servers: Vec<String>,
    /// The Person's `mcp_servers` references the role admits (delivered with it).
    pub person_mcp_offered: Vec<String>,
    /// The Person's `mcp_servers` references the role does not admit (not delivered).
    pub person_mcp_not_admitted: Vec<String>,
}

impl RoleSight {
    /// Splits a Person's `mcp_servers` references by whether the role's selection holds
    /// them: the launch delivers the role's servers and no others.
    pub fn offer_person_mcp_servers(&mut self, references: &[String]) {
        for reference in references {
            let list = if self.mcp_servers.contains(reference) {
                &mut self.person_mcp_offered
            } else {
                &mut self.person_mcp_not_admitted
            };
            if !list.contains(reference) {
                list.push(reference.clone());
            }
        }
    }
}

/// A declared limit a local PTY cannot enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsupportedLimit {
    MaxTokens,
    MaxCostUsd,
    Isolation(Isolation),
}

impl UnsupportedLimit {
    /// The person@1 field that declares it.
    pub fn field(self) -> &'static str {
        match self {
            UnsupportedLimit::MaxTokens => "budget.max_tokens",
            UnsupportedLimit::MaxCostUsd => "budget.max_cost_usd",
            UnsupportedLimit::Isolation(_) => "isolation",
        }
    }

    pub fn explanation(self) -> &'static str {
        match self {
            UnsupportedLimit::MaxTokens => {
                "a token limit cannot be enforced: this runner keeps no usage record acompose follows"
            }
            UnsupportedLimit::MaxCostUsd => {
                "a cost limit cannot be enforced: no runner's usage record carries its spending while it runs"
            }
            UnsupportedLimit::Isolation(_) => {
                "session isolation needs bubblewrap (`bwrap` on PATH), which was not found: the runner would get its worktree but no sandbox"
            }
        }
    }
}

/// Why a start was refused. Nothing is written for any of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartRejection {
    MissingPerson,
    ArchivedPerson,
    InvalidProjectId,
    UnknownRunner,
    ModelNotTaken {
        runner: &'static str,
    },
    InvalidModel,
    TaskTooLong,
    /// The Person declares limits the PTY cannot enforce and they were not acknowledged.
    UnacknowledgedLimits(Vec<UnsupportedLimit>),
}

impl StartRejection {
    pub fn message(&self) -> &'static str {
        match self {
            StartRejection::MissingPerson => "no Person with this id is configured in the workspace",
            StartRejection::ArchivedPerson => "this Person is archived; restore them before starting a session",
            StartRejection::InvalidProjectId => "a project id must be a lowercase slug",
            StartRejection::UnknownRunner => "this runner is not in the runner table",
            StartRejection::ModelNotTaken { .. } => "this runner takes no model option",
            StartRejection::InvalidModel => {
                "a model must be a reference: letters, digits and `._:/-`, not starting with `-`"
            }
            StartRejection::TaskTooLong => "the task is longer than 8 KiB",
            StartRejection::UnacknowledgedLimits(_) => {
                "this Person declares limits a local terminal cannot enforce; start again with --acknowledge-unsupported"
            }
        }
    }
}

/// Everything shown before a session starts. `argv` is exactly what is spawned.
#[derive(Debug, Clone, PartialEq)]
pub struct StartReview {
    pub person_id: String,
    pub person_name: String,
    pub role: String,
    pub project_id: String,
    pub cwd: String,
    pub runner: &'static Runner,
    pub model: Option<String>,
    pub prompt: String,
    pub argv: Vec<String>,
    /// False for runners that take no prompt: the review offers `prompt` for copying.
    pub prompt_in_argv: bool,
    /// Declared limits that are not enforced; the start needs them acknowledged.
    pub unsupported: Vec<UnsupportedLimit>,
    /// `budget.max_seconds`: the limit that is enforced, by ending the process group.
    pub max_seconds: Option<u64>,
    /// `budget.max_tokens` when it is enforced: the runner keeps a usage record
    /// acompose follows (`usage_record`), and the session ends `budget_exceeded` when it
    /// reaches the limit.
    pub max_tokens: Option<u64>,
    /// `budget.max_cost_usd` when it is enforced; no runner's usage record carries its
    /// spending while it runs (Claude Code 2.1.328 writes its `cost-state` lines only as
    /// it exits, seen against the real CLI), so this is `None` and a cost limit is an
    /// [`UnsupportedLimit`].
    pub max_cost_usd: Option<f64>,
    /// The record the token limit is enforced from.
    pub usage_record: Option<super::usage::UsageRecord>,
    /// The Person's isolation (`inherited` when they declare none). `worktree` and
    /// `session` give the session its own `git worktree`; `session` also a sandbox.
    pub isolation: Isolation,
    /// Set when the project folder is one no project should be: the review says so.
    pub folder_warning: Option<FolderWarning>,
    /// The roster role the runner starts as; `None`: it sees the host's context.
    pub sight: Option<RoleSight>,
    /// When the Person's role is no roster role: the closest roster role, if any.
    pub unbound_hint: Option<String>,
    /// The record's links (conversation, run, resumed session); the bundle is the
    /// sight's.
    pub links: SessionLinks,
}

/// A project folder that gives the runner far more than a project: the whole file
/// system, or the user's home. Allowed (the link is the user's own), but never started
/// without a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderWarning {
    /// `projects/<id>` leads to `/`.
    Root,
    /// `projects/<id>` leads to the user's home folder (the driver knows which that is).
    Home,
}

impl FolderWarning {
    /// Its name in the review's JSON.
    pub fn name(self) -> &'static str {
        match self {
            FolderWarning::Root => "root",
            FolderWarning::Home => "home",
        }
    }

    /// What the review says.
    pub fn message(self) -> &'static str {
        match self {
            FolderWarning::Root => {
                "the project folder is `/`: the runner starts at the root and can reach the whole file system"
            }
            FolderWarning::Home => {
                "the project folder is your home folder: the runner can reach every file and credential in it"
            }
        }
    }
}

/// Builds the review of a start, refusing a missing or archived Person, a bad project
/// id, a runner not in the table, a model the runner does not take and an oversized
/// task. Unacknowledged limits are checked by [`StartReview::confirm`], so a dry run can
/// still show them.
pub fn review_start(roster: &Roster, request: &StartRequest<'_>) -> Result<StartReview, StartRejection> {
    let person = roster.person(request.person_id).ok_or(StartRejection::MissingPerson)?;
    if !person.is_active() {
        return Err(StartRejection::ArchivedPerson);
    }
    if !is_slug(request.project_id) {
        return Err(StartRejection::InvalidProjectId);
    }
    let runner = runner(request.runner).ok_or(StartRejection::UnknownRunner)?;
    let task = request.task.map(str::trim).filter(|task| !task.is_empty());
    if task.is_some_and(|task| task.len() > MAX_TASK_BYTES) {
        return Err(StartRejection::TaskTooLong);
    }
    let prompt = initial_prompt(person, request.project_id, task);
    let invocation =
        invocation_in(runner, request.model, &prompt, request.conversation).map_err(|error| match error {
            ArgvError::ModelNotTaken { runner } => StartRejection::ModelNotTaken { runner },
            ArgvError::InvalidModel => StartRejection::InvalidModel,
        })?;
    Ok(StartReview {
        person_id: person.id.clone(),
        person_name: person.name.clone(),
        role: person.role.clone(),
        project_id: request.project_id.to_owned(),
        cwd: request.project_folder.to_owned(),
        runner,
        model: request.model.map(str::to_owned),
        prompt,
        argv: invocation.argv,
        prompt_in_argv: invocation.prompt_in_argv,
        unsupported: unsupported_limits(person, runner),
        max_seconds: person.budget.max_seconds,
        max_tokens: person.budget.max_tokens.filter(|_| usage_record(runner.name).is_some()),
        max_cost_usd: None,
        usage_record: usage_record(runner.name),
        isolation: person.isolation.unwrap_or(Isolation::Inherited),
        folder_warning: (request.project_folder == "/").then_some(FolderWarning::Root),
        sight: None,
        unbound_hint: None,
        links: SessionLinks {
            conversation: request.conversation.filter(|_| runner.conversation.is_some()).map(str::to_owned),
            ..SessionLinks::default()
        },
    })
}

/// The limits of `person` a local PTY cannot enforce with `runner`, in a fixed order. A
/// token limit is enforced for a runner that keeps a usage record acompose follows;
/// isolation is enforced (a worktree, and for `session` a sandbox), and the driver adds
/// [`UnsupportedLimit::Isolation`] when the sandbox's tool is missing.
pub(crate) fn unsupported_limits(person: &Person, runner: &Runner) -> Vec<UnsupportedLimit> {
    let mut limits = Vec::new();
    if person.budget.max_tokens.is_some() && usage_record(runner.name).is_none() {
        limits.push(UnsupportedLimit::MaxTokens);
    }
    if person.budget.max_cost_usd.is_some() {
        limits.push(UnsupportedLimit::MaxCostUsd);
    }
    limits
}

/// The initial prompt: fixed sentences around the Person's role and goal, the project
/// id and, when given, the one-time task. Control characters other than line breaks and
/// tabs, and bidirectional controls, become U+FFFD (`needs_escape`), so the text shown in the review is the text the runner receives.
/// It always starts with `You`, never with `-`, so a positional prompt is never read as
/// an option.
pub(crate) fn initial_prompt(person: &Person, project_id: &str, task: Option<&str>) -> String {
    let mut prompt = format!(
        "You are working in the role `{}` on the project `{}`.\n\nYour standing goal: {}\n",
        person.role,
        project_id,
        person.goal.trim()
    );
    if let Some(task) = task {
        prompt.push_str(&format!("\nYour task for this session: {task}\n"));
    }
    prompt
        .chars()
        .map(|character| {
            let kept = matches!(character, '\n' | '\t') || !acompose_engine::diagnostic::needs_escape(character);
            if kept { character } else { '\u{fffd}' }
        })
        .collect()
}

impl StartReview {
    /// Whether the start may go ahead: every unsupported limit must be acknowledged.
    pub fn confirm(&self, acknowledge_unsupported: bool) -> Result<(), StartRejection> {
        if self.unsupported.is_empty() || acknowledge_unsupported {
            Ok(())
        } else {
            Err(StartRejection::UnacknowledgedLimits(self.unsupported.clone()))
        }
    }

    /// The first record's inputs. The task is not among them.
    pub fn launch(&self, session_id: &str, started_at: Timestamp) -> Launch {
        Launch {
            id: session_id.to_owned(),
            person_id: self.person_id.clone(),
            person: self.person_name.clone(),
            role: self.role.clone(),
            project_id: self.project_id.clone(),
            cwd: self.cwd.clone(),
            provider: self.runner.name.to_owned(),
            model: self.model.clone(),
            started_at,
            links: SessionLinks {
                bundle: self.sight.as_ref().map(|sight| sight.bundle_id.clone()),
                ..self.links.clone()
            },
        }
    }

    /// The environment hints the runner starts with, in a fixed order.
    pub fn environment(&self, session_id: &str) -> Vec<(&'static str, String)> {
        vec![(PERSON_ID_VARIABLE, self.person_id.clone()), (SESSION_ID_VARIABLE, session_id.to_owned())]
    }

    /// The argv as one copyable shell line.
    pub fn command_line(&self) -> String {
        argv_text(&self.argv)
    }
}

#[cfg(test)]
mod tests {
    use super::super::session::{SessionRecord, record_bytes};
    use super::*;

    fn roster() -> Roster {
        let mut pam = Person::new("pam", "Pam", "reception", "Keep the desk running.");
        pam.budget.max_seconds = Some(120);
        let mut dwight = Person::new("dwight", "Dwight", "sales", "Sell paper.");
        dwight.budget.max_tokens = Some(1000);
        dwight.budget.max_cost_usd = Some(2.0);
        dwight.isolation = Some(Isolation::Worktree);
        let mut jan = Person::new("jan", "Jan", "manager", "Manage.");
        jan.archived = true;
        let mut kelly = Person::new("kelly", "Kelly", "support", "Help.");
        kelly.isolation = Some(Isolation::Inherited);
        Roster { people: vec![pam, dwight, jan, kelly], ..Roster::default() }
    }

    fn request<'a>(person_id: &'a str, runner: &'a str) -> StartRequest<'a> {
        StartRequest {
            person_id,
            project_id: "desk",
            project_folder: "/work/desk",
            runner,
            model: None,
            task: Some("Order more paper."),
            conversation: None,
        }
    }

    #[test]
    fn the_prompt_is_role_goal_and_task_in_fixed_sentences() {
        let review = review_start(&roster(), &request("pam", "claude"));
        let prompt = review.as_ref().map(|review| review.prompt.clone()).unwrap_or_default();
        assert_eq!(
            prompt,
            "You are working in the role `reception` on the project `desk`.\n\nYour standing goal: Keep the desk running.\n\nYour task for this session: Order more paper.\n"
        );
        assert_eq!(review.map(|review| review.argv), Ok(vec!["claude".to_owned(), prompt]));
        let without = initial_prompt(&Person::new("a", "A", "qa", "Test.\u{1b}[2J"), "p", None);
        assert_eq!(
            without,
            "You are working in the role `qa` on the project `p`.\n\nYour standing goal: Test.\u{fffd}[2J\n"
        );
    }

    #[test]
    fn the_task_reaches_argv_but_not_the_record() {
        let review = review_start(&roster(), &request("pam", "gemini")).expect("the request is valid");
        assert!(review.argv.iter().any(|argument| argument.contains("Order more paper.")));
        let launch = review.launch("20261201-090000-pam-00000001", Timestamp::from_unix_seconds(0));
        let bytes = record_bytes(&SessionRecord::launching(launch));
        assert!(!String::from_utf8_lossy(&bytes).contains("Order more paper."));
        assert!(String::from_utf8_lossy(&bytes).contains("\"provider\": \"gemini\""));
        assert_eq!(review.max_seconds, Some(120));
        assert_eq!(
            review.environment("s-1"),
            vec![(PERSON_ID_VARIABLE, "pam".to_owned()), (SESSION_ID_VARIABLE, "s-1".to_owned())]
        );
    }

    #[test]
    fn unsupported_limits_need_acknowledgement() {
        let review = review_start(&roster(), &request("dwight", "gemini")).expect("the request is valid");
        let limits = vec![UnsupportedLimit::MaxTokens, UnsupportedLimit::MaxCostUsd];
        assert_eq!(review.unsupported, limits);
        assert_eq!(review.max_tokens, None);
        // Codex keeps a usage record: its token limit is enforced, its cost limit is not.
        let codex = review_start(&roster(), &request("dwight", "codex")).expect("the request is valid");
        assert_eq!(codex.unsupported, vec![UnsupportedLimit::MaxCostUsd]);
        assert_eq!(codex.max_tokens, Some(1000));
        assert_eq!(codex.max_cost_usd, None);
        // Claude Code records its spending only as it exits: its cost limit is not enforced.
        let claude = review_start(&roster(), &request("dwight", "claude")).expect("the request is valid");
        assert_eq!(claude.unsupported, vec![UnsupportedLimit::MaxCostUsd]);
        assert_eq!(claude.max_cost_usd, None);
        assert_eq!(review.isolation, Isolation::Worktree);
        assert_eq!(review.confirm(false), Err(StartRejection::UnacknowledgedLimits(limits)));
        assert!(codex.confirm(false).is_err());
        assert_eq!(review.confirm(true), Ok(()));
        let kelly = review_start(&roster(), &request("kelly", "codex")).expect("the request is valid");
        assert_eq!(kelly.unsupported, Vec::new());
        assert_eq!(kelly.confirm(false), Ok(()));
    }

    #[test]
    fn every_rejection_is_a_typed_value() {
        let roster = roster();
        let rejected = |request: StartRequest<'_>| review_start(&roster, &request).err();
        assert_eq!(rejected(request("nobody", "claude")), Some(StartRejection::MissingPerson));
        assert_eq!(rejected(request("jan", "claude")), Some(StartRejection::ArchivedPerson));
        assert_eq!(rejected(request("pam", "vim")), Some(StartRejection::UnknownRunner));
        assert_eq!(
            rejected(StartRequest { model: Some("gpt"), ..request("pam", "cursor") }),
            Some(StartRejection::ModelNotTaken { runner: "cursor" })
        );
        assert_eq!(
            rejected(StartRequest { model: Some("-x"), ..request("pam", "claude") }),
            Some(StartRejection::InvalidModel)
        );
        assert_eq!(
            rejected(StartRequest { project_id: "../etc", ..request("pam", "claude") }),
            Some(StartRejection::InvalidProjectId)
        );
        let long = "x".repeat(MAX_TASK_BYTES + 1);
        assert_eq!(
            rejected(StartRequest { task: Some(&long), ..request("pam", "claude") }),
            Some(StartRejection::TaskTooLong)
        );
    }

    #[test]
    fn copy_only_runners_keep_the_prompt_out_of_argv() {
        let review = review_start(&roster(), &request("pam", "cursor")).expect("the request is valid");
        assert_eq!(review.argv, vec!["cursor-agent".to_owned()]);
        assert!(!review.prompt_in_argv);
        assert!(review.prompt.contains("Order more paper."));
    }
}
