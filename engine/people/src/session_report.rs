//! The reports of People sessions, as text and as JSON bytes: the start review, the
//! listing of records and what reconciliation changed. Values that came from files or
//! the command line are shown only after control characters are replaced. Nothing here
//! decides what is valid or what runs.

use serde::Serialize;

use super::displayable;
use super::session::{Interruption, SessionRecord};
use super::start::StartReview;

/// The start review as text, printed before anything runs.
pub fn review_text(review: &StartReview) -> String {
    let mut text = String::from("start review: nothing has run yet\n");
    let mut line = |label: &str, value: String| text.push_str(&format!("  {label:<14} {value}\n"));
    line("person:", format!("{} — {} ({})", review.person_id, displayable(&review.person_name), review.role));
    line("project:", format!("{} → {}", review.project_id, displayable(&review.cwd)));
    if let Some(warning) = review.folder_warning {
        line("warning:", warning.message().to_owned());
    }
    match &review.sight {
        Some(sight) => {
            line(
                "as role:",
                format!("{} — {} ({})", sight.role, displayable(&sight.display_name), review_pronouns(sight)),
            );
            line("colour:", displayable(&sight.favourite));
            line("personalities:", displayable(&sight.personalities.join(", ")));
            line("bundle:", format!("{} (tier {})", sight.bundle_id, displayable(&sight.tier)));
            line(
                "sees:",
                format!(
                    "only the role's bundle: {} skills: {}",
                    sight.skills.len(),
                    displayable(&sight.skills.join(", "))
                ),
            );
            line("home:", displayable(&sight.runtime_home));
            mcp_lines(sight, &mut line);
        }
        None => {
            let why = match &review.unbound_hint {
                Some(hint) => format!("`{}` is no role of the roster ({hint})", review.role),
                None => "no roster role".to_owned(),
            };
            line("as role:", format!("none: {why}; the runner sees the host's context"));
        }
    }
    if let Some(conversation) = &review.links.conversation {
        let verb = if review.links.resumed_from.is_some() { "resumes" } else { "fixed at" };
        line("conversation:", format!("{verb} {conversation}"));
    }
    if let Some(run) = &review.links.run {
        line("swarm run:", run.clone());
    }
    line("runner:", format!("{} (`{}`)", review.runner.name, review.runner.binary));
    line("model:", review.model.clone().unwrap_or_else(|| "the runner's default".to_owned()));
    line("command:", displayable_command(review));
    line(
        "time limit:",
        match review.max_seconds {
            Some(seconds) => format!("{seconds} s, enforced: the runner's process group is ended"),
            None => "none declared".to_owned(),
        },
    );
    if let (Some(tokens), Some(record)) = (review.max_tokens, review.usage_record) {
        line(
            "token limit:",
            format!("{tokens} tokens, enforced {}: the runner's process group is ended", record.description()),
        );
    }
    for isolation_line in isolation_lines(review) {
        line("isolation:", isolation_line);
    }
    for limit in &review.unsupported {
        line("not enforced:", format!("`{}`: {}", limit.field(), limit.explanation()));
    }
    if !review.unsupported.is_empty() {
        text.push_str("  these limits are not enforced; starting needs --acknowledge-unsupported\n");
    }
    text.push_str("initial prompt:\n");
    for prompt_line in review.prompt.lines() {
        text.push_str(&format!("  | {prompt_line}\n"));
    }
    if !review.prompt_in_argv {
        text.push_str("this runner takes no initial prompt: it opens without one; copy the prompt above into it\n");
    }
    text
}

/// What the review says about isolation: where the runner works and, in a sandbox,
/// what it can write. Empty for `inherited`.
fn isolation_lines(review: &StartReview) -> Vec<String> {
    use super::model::Isolation;
    use super::start::UnsupportedLimit;
    let worktree = format!(
        "{}: its own git worktree `.agent-toolkit/worktrees/<session id>` on branch `people/{}/<session id>`, made from the project's HEAD before the start and kept after it (`acompose people clean` removes it)",
        review.isolation.as_str(),
        review.person_id
    );
    match review.isolation {
        Isolation::Inherited => Vec::new(),
        Isolation::Worktree => vec![worktree],
        Isolation::Session if review.unsupported.contains(&UnsupportedLimit::Isolation(Isolation::Session)) => {
            vec![worktree, "no sandbox: bubblewrap is missing".to_owned()]
        }
        Isolation::Session => vec![
            worktree,
            "sandbox (bubblewrap): writes only its worktree, that worktree's git index, its runtime home and its own temporary folder (`TMPDIR`); everything else, the project included, is read-only".to_owned(),
        ],
    }
}

/// The role's MCP servers, and which of the Person's `mcp_servers` the role admits.
fn mcp_lines(sight: &super::start::RoleSight, line: &mut impl FnMut(&str, String)) {
    let listed = |names: &[String]| displayable(&names.join(", "));
    let servers = if sight.mcp_servers.is_empty() { "none".to_owned() } else { listed(&sight.mcp_servers) };
    line("mcp servers:", servers);
    if !sight.person_mcp_offered.is_empty() {
        line("person's mcp:", format!("{} (the role admits them: delivered)", listed(&sight.person_mcp_offered)));
    }
    if !sight.person_mcp_not_admitted.is_empty() {
        line(
            "not admitted:",
            format!("{} (the Person's, not the role's: not delivered)", listed(&sight.person_mcp_not_admitted)),
        );
    }
}

fn review_pronouns(sight: &super::start::RoleSight) -> String {
    format!("{}, {}", displayable(&sight.identity), displayable(&sight.pronouns))
}

/// The command line, with each line break of the prompt shown as the two characters
/// `\n` so the review stays one line per label; the argv itself is unchanged.
fn displayable_command(review: &StartReview) -> String {
    review.command_line().replace('\n', "\\n").replace('\t', "\\t")
}

/// The start review as JSON.
pub fn review_json(review: &StartReview) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        person_id: &'a str,
        person: &'a str,
        role: &'a str,
        project_id: &'a str,
        cwd: &'a str,
        runner: &'static str,
        binary: &'static str,
        model: Option<&'a str>,
        argv: &'a [String],
        prompt: &'a str,
        prompt_in_argv: bool,
        max_seconds: Option<u64>,
        max_tokens: Option<u64>,
        max_cost_usd: Option<f64>,
        isolation: &'static str,
        unsupported: Vec<&'static str>,
        folder_warning: Option<&'static str>,
        as_role: Option<Sight<'a>>,
        unbound_hint: Option<&'a str>,
        conversation: Option<&'a str>,
        resumed_from: Option<&'a str>,
        run: Option<&'a str>,
    }
    #[derive(Serialize)]
    struct Sight<'a> {
        role: &'a str,
        display_name: &'a str,
        identity: &'a str,
        pronouns: &'a str,
        favourite: &'a str,
        personalities: &'a [String],
        bundle: &'a str,
        tier: &'a str,
        skills: &'a [String],
        runtime_home: &'a str,
        mcp_servers: &'a [String],
        person_mcp_offered: &'a [String],
        person_mcp_not_admitted: &'a [String],
    }
    super::document::json_bytes(&Document {
        format: "acompose.people-start-review.v1",
        person_id: &review.person_id,
        person: &review.person_name,
        role: &review.role,
        project_id: &review.project_id,
        cwd: &review.cwd,
        runner: review.runner.name,
        binary: review.runner.binary,
        model: review.model.as_deref(),
        argv: &review.argv,
        prompt: &review.prompt,
        prompt_in_argv: review.prompt_in_argv,
        max_seconds: review.max_seconds,
        max_tokens: review.max_tokens,
        max_cost_usd: review.max_cost_usd,
        isolation: review.isolation.as_str(),
        unsupported: review.unsupported.iter().map(|limit| limit.field()).collect(),
        folder_warning: review.folder_warning.map(super::start::FolderWarning::name),
        as_role: review.sight.as_ref().map(|sight| Sight {
            role: &sight.role,
            display_name: &sight.display_name,
            identity: &sight.identity,
            pronouns: &sight.pronouns,
            favourite: &sight.favourite,
            personalities: &sight.personalities,
            bundle: &sight.bundle_id,
            tier: &sight.tier,
            skills: &sight.skills,
            runtime_home: &sight.runtime_home,
            mcp_servers: &sight.mcp_servers,
            person_mcp_offered: &sight.person_mcp_offered,
            person_mcp_not_admitted: &sight.person_mcp_not_admitted,
        }),
        unbound_hint: review.unbound_hint.as_deref(),
        conversation: review.links.conversation.as_deref(),
        resumed_from: review.links.resumed_from.as_deref(),
        run: review.links.run.as_deref(),
    })
}

/// One line per record reconciliation ended.
pub fn interruptions_text(interruptions: &[Interruption]) -> String {
    interruptions
        .iter()
        .map(|interruption| {
            format!(
                "session {} was {} and is now interrupted: {}\n",
                interruption.record.id,
                interruption.previous.as_str(),
                interruption.reason.message()
            )
        })
        .collect()
}

/// The records as a table, in the order given (newest first from the listing).
pub fn sessions_text(records: &[SessionRecord]) -> String {
    let id_width = records.iter().map(|record| record.id.len()).max().unwrap_or(0).max("ID".len());
    let person_width = records.iter().map(|record| record.person_id.len()).max().unwrap_or(0).max("PERSON".len());
    let project_width = records.iter().map(|record| record.project_id.len()).max().unwrap_or(0).max("PROJECT".len());
    // At least as wide as the common statuses and runners, wider for a longer one
    // (`budget_exceeded`), so the columns stay aligned.
    let status_width = records.iter().map(|record| record.status.as_str().len()).max().unwrap_or(0).max(11);
    let runner_width = records.iter().map(|record| record.provider.len()).max().unwrap_or(0).max(8);
    let mut text = format!(
        "{:<id_width$}  {:<status_width$}  {:<person_width$}  {:<project_width$}  {:<runner_width$}  {:<20}  EXIT\n",
        "ID", "STATUS", "PERSON", "PROJECT", "RUNNER", "STARTED"
    );
    for record in records {
        let exit = record.exit_code.map_or_else(|| "-".to_owned(), |code| code.to_string());
        text.push_str(&format!(
            "{:<id_width$}  {:<status_width$}  {:<person_width$}  {:<project_width$}  {:<runner_width$}  {:<20}  {exit}\n",
            record.id,
            record.status.as_str(),
            record.person_id,
            record.project_id,
            record.provider,
            record.started_at.as_str(),
        ));
        if let (Some(worktree), Some(branch)) = (&record.links.worktree, &record.links.branch) {
            let isolation = record.links.isolation.map_or("worktree", super::model::Isolation::as_str);
            text.push_str(&format!("  {isolation} isolation: {} on branch {branch}\n", displayable(worktree)));
        }
    }
    let count = records.len();
    let resumable = records.iter().filter(|record| record.links.conversation.is_some()).count();
    text.push_str(&format!(
        "{count} {}; {resumable} with a conversation `acompose people resume` can reopen\n",
        if count == 1 { "session" } else { "sessions" }
    ));
    text
}

/// Whether `people resume` can reopen `record`: it has ended and kept its runner's
/// conversation id.
pub fn is_resumable(record: &SessionRecord) -> bool {
    record.status.is_terminal() && record.links.conversation.is_some()
}

/// The records as JSON, with the ids reconciliation interrupted on this run.
pub fn sessions_json(records: &[SessionRecord], interruptions: &[Interruption], refused_files: usize) -> Vec<u8> {
    #[derive(Serialize)]
    struct Document<'a> {
        format: &'static str,
        resumable: bool,
        sessions: Vec<Entry<'a>>,
        interrupted_now: Vec<&'a str>,
        refused_files: usize,
    }
    #[derive(Serialize)]
    struct Entry<'a> {
        id: &'a str,
        person_id: &'a str,
        person: &'a str,
        role: &'a str,
        project_id: &'a str,
        cwd: &'a str,
        provider: &'a str,
        model: Option<&'a str>,
        status: &'static str,
        started_at: &'a str,
        ended_at: Option<&'a str>,
        exit_code: Option<i32>,
        bundle: Option<&'a str>,
        conversation: Option<&'a str>,
        resumed_from: Option<&'a str>,
        run: Option<&'a str>,
        ephemeral: bool,
        isolation: Option<&'static str>,
        worktree: Option<&'a str>,
        branch: Option<&'a str>,
        host: Option<&'a str>,
        /// Whether `people resume` can reopen it: it ended and kept a conversation id.
        resumable: bool,
    }
    super::document::json_bytes(&Document {
        format: "acompose.people-sessions.v1",
        resumable: records.iter().any(is_resumable),
        sessions: records
            .iter()
            .map(|record| Entry {
                id: &record.id,
                person_id: &record.person_id,
                person: &record.person,
                role: &record.role,
                project_id: &record.project_id,
                cwd: &record.cwd,
                provider: &record.provider,
                model: record.model.as_deref(),
                status: record.status.as_str(),
                started_at: record.started_at.as_str(),
                ended_at: record.ended_at.as_ref().map(|ended_at| ended_at.as_str()),
                exit_code: record.exit_code,
                bundle: record.links.bundle.as_deref(),
                conversation: record.links.conversation.as_deref(),
                resumed_from: record.links.resumed_from.as_deref(),
                run: record.links.run.as_deref(),
                ephemeral: record.links.ephemeral,
                isolation: record.links.isolation.map(super::model::Isolation::as_str),
                worktree: record.links.worktree.as_deref(),
                branch: record.links.branch.as_deref(),
                host: record.links.host.as_deref(),
                resumable: is_resumable(record),
            })
            .collect(),
        interrupted_now: interruptions.iter().map(|interruption| interruption.record.id.as_str()).collect(),
        refused_files,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::model::{Isolation, Person};
    use super::super::session::{Launch, Observation, Timestamp, reconcile};
    use super::super::start::{StartRequest, review_start};
    use super::super::workspace::Roster;
    use super::*;

    fn review(person: Person, runner: &str) -> Option<StartReview> {
        let roster = Roster { people: vec![person], ..Roster::default() };
        let request = StartRequest {
            person_id: "pam",
            project_id: "desk",
            project_folder: "/work/desk\u{1b}]0;x",
            runner,
            model: None,
            task: Some("Order paper."),
            conversation: None,
        };
        review_start(&roster, &request).ok()
    }

    #[test]
    fn the_review_shows_command_prompt_and_limits() {
        let mut pam = Person::new("pam", "Pam\u{1b}[31m", "reception", "Keep the desk running.");
        pam.budget.max_seconds = Some(60);
        pam.isolation = Some(Isolation::Session);
        let text = review(pam, "copilot").map(|review| review_text(&review)).unwrap_or_default();
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains(
            "  command:       copilot -i 'You are working in the role `reception` on the project `desk`.\\n\\n"
        ));
        assert!(text.contains("  time limit:    60 s, enforced"));
        assert!(text.contains("  isolation:     session: its own git worktree"), "{text}");
        assert!(text.contains("  isolation:     sandbox (bubblewrap): writes only its worktree"), "{text}");
        assert!(!text.contains("--acknowledge-unsupported"));
        assert!(text.contains("  | Your task for this session: Order paper.\n"));
        assert!(!text.contains("copy the prompt"));
    }

    #[test]
    fn the_review_of_a_copy_only_runner_offers_the_prompt() {
        let pam = Person::new("pam", "Pam", "reception", "Goal.");
        let review = review(pam, "cursor");
        let text = review.as_ref().map(review_text).unwrap_or_default();
        assert!(text.contains("  command:       cursor-agent\n"));
        assert!(text.contains("copy the prompt above"));
        assert!(!text.contains("not enforced"));
        let json: serde_json::Value =
            serde_json::from_slice(&review.as_ref().map(review_json).unwrap_or_default()).unwrap_or_default();
        assert_eq!(json["argv"], serde_json::json!(["cursor-agent"]));
        assert_eq!(json["prompt_in_argv"], serde_json::json!(false));
    }

    #[test]
    fn listings_say_sessions_cannot_be_resumed_and_name_what_was_interrupted() {
        let mut record = SessionRecord::launching(Launch {
            id: "s-1".to_owned(),
            person_id: "pam".to_owned(),
            person: "Pam".to_owned(),
            role: "reception".to_owned(),
            project_id: "desk".to_owned(),
            cwd: "/work/desk".to_owned(),
            provider: "claude".to_owned(),
            model: None,
            started_at: Timestamp::from_unix_seconds(0),
            links: Default::default(),
        });
        assert_eq!(record.mark_running(5, 50), Ok(()));
        let observations = BTreeMap::from([("s-1".to_owned(), Observation::Gone)]);
        let interruptions = reconcile(std::slice::from_ref(&record), &observations, &Timestamp::from_unix_seconds(60));
        let records: Vec<SessionRecord> =
            interruptions.iter().map(|interruption| interruption.record.clone()).collect();
        assert_eq!(
            interruptions_text(&interruptions),
            "session s-1 was running and is now interrupted: its process no longer exists\n"
        );
        let text = sessions_text(&records);
        assert!(text.contains("s-1  interrupted  pam     desk     claude    1970-01-01T00:00:00Z  -\n"), "{text}");
        // A longer status widens its column: every line's runner starts where the header's does.
        let mut over = records[0].clone();
        over.status = crate::session::Status::BudgetExceeded;
        let wide = sessions_text(&[records[0].clone(), over]);
        let column = |line: &str, word: &str| line.find(word).unwrap_or(usize::MAX);
        let lines: Vec<&str> = wide.lines().take(3).collect();
        assert_eq!(column(lines[1], "claude"), column(lines[0], "RUNNER"), "{wide}");
        assert_eq!(column(lines[2], "claude"), column(lines[0], "RUNNER"), "{wide}");
        assert!(text.ends_with("1 session; 0 with a conversation `acompose people resume` can reopen\n"));
        let json: serde_json::Value =
            serde_json::from_slice(&sessions_json(&records, &interruptions, 2)).unwrap_or_default();
        assert_eq!(json["resumable"], serde_json::json!(false));
        assert_eq!(json["interrupted_now"], serde_json::json!(["s-1"]));
        assert_eq!(json["sessions"][0]["ended_at"], serde_json::json!("1970-01-01T00:01:00Z"));
        assert_eq!(json["refused_files"], serde_json::json!(2));
    }
}
