//! Token usage as the runners record it themselves: which runner keeps a record
//! acompose can follow, and the tokens a record's text adds up to. `budget.max_tokens`
//! is enforced from these figures.
//!
//! Pure: the driver finds and reads the files (it knows the runner's config folder, the
//! conversation id and the working folder) and passes their text in. A line that is not
//! JSON, or lacks the fields, counts for nothing: a record being written may end in half
//! a line. Tokens are counted as the runners count a turn's total: every input token
//! (cached or not) plus every output token.

use serde_json::Value;

/// Where a runner writes the usage acompose follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageRecord {
    /// Claude Code's transcript `<config>/projects/<slug>/<conversation>.jsonl`: each
    /// `assistant` line carries its message's `usage`.
    ClaudeTranscript,
    /// Codex's rollout `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`: `token_count`
    /// events carry the thread's running `total_token_usage`.
    CodexRollout,
}

impl UsageRecord {
    /// How the start review names the record.
    pub fn description(self) -> &'static str {
        match self {
            UsageRecord::ClaudeTranscript => {
                "from Claude Code's transcript (`projects/<folder>/<conversation>.jsonl` in its config folder)"
            }
            UsageRecord::CodexRollout => {
                "from Codex's rollout file (`sessions/YYYY/MM/DD/rollout-*.jsonl` under `CODEX_HOME`)"
            }
        }
    }
}

/// The usage record of runner `name`, `None` when it keeps none acompose can follow.
pub fn usage_record(name: &str) -> Option<UsageRecord> {
    match name {
        "claude" => Some(UsageRecord::ClaudeTranscript),
        "codex" => Some(UsageRecord::CodexRollout),
        _ => None,
    }
}

/// The tokens of a Claude Code transcript: per message id (a message is written as one
/// line per content block, each repeating its usage), its last line's input, cache
/// creation, cache read and output tokens.
pub fn claude_transcript_tokens(text: &str) -> u64 {
    let mut messages = std::collections::BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let Ok(value) = serde_json::from_str::<Value>(line) else { continue };
        if value["type"] != "assistant" {
            continue;
        }
        let message = &value["message"];
        let usage = &message["usage"];
        let tokens = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"]
            .iter()
            .map(|field| usage[field].as_u64().unwrap_or(0))
            .fold(0u64, u64::saturating_add);
        let key = message["id"].as_str().map_or_else(|| format!("line {index}"), str::to_owned);
        messages.insert(key, tokens);
    }
    messages.values().fold(0u64, |total, tokens| total.saturating_add(*tokens))
}

/// The tokens of a Codex rollout: the largest `total_token_usage.total_tokens` of its
/// `token_count` events (the total only grows).
pub fn codex_rollout_tokens(text: &str) -> u64 {
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|value| value["type"] == "event_msg" && value["payload"]["type"] == "token_count")
        .filter_map(|value| value["payload"]["info"]["total_token_usage"]["total_tokens"].as_u64())
        .max()
        .unwrap_or(0)
}

/// The working folder a Codex rollout's first line (`session_meta`) names.
pub fn codex_rollout_cwd(first_line: &str) -> Option<String> {
    let value = serde_json::from_str::<Value>(first_line).ok()?;
    (value["type"] == "session_meta").then(|| value["payload"]["cwd"].as_str().map(str::to_owned))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_message_counts_once_however_many_lines_repeat_it() {
        let usage = r#""usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}"#;
        let text = format!(
            "{{\"type\":\"user\",\"message\":{{}}}}\n\
             {{\"type\":\"assistant\",\"message\":{{\"id\":\"m1\",{usage}}}}}\n\
             {{\"type\":\"assistant\",\"message\":{{\"id\":\"m1\",{usage}}}}}\n\
             {{\"type\":\"assistant\",\"message\":{{\"id\":\"m2\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":2}}}}}}\n\
             {{\"type\":\"assistant\",\"mess"
        );
        assert_eq!(claude_transcript_tokens(&text), 122 + 3);
        assert_eq!(claude_transcript_tokens(""), 0);
    }

    #[test]
    fn a_codex_rollout_counts_its_latest_total() {
        let event = |total: u64| {
            format!(
                "{{\"timestamp\":\"t\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"total_tokens\":{total}}}}}}}}}\n"
            )
        };
        let meta = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x","cwd":"/work/desk"}}"#;
        let text = format!(
            "{meta}\n{}{}{{\"type\":\"event_msg\",\"payload\":{{\"type\":\"agent_message\"}}}}\n",
            event(40),
            event(90)
        );
        assert_eq!(codex_rollout_tokens(&text), 90);
        assert_eq!(codex_rollout_cwd(meta).as_deref(), Some("/work/desk"));
        assert_eq!(codex_rollout_cwd(&event(1)), None);
    }

    #[test]
    fn only_claude_and_codex_keep_a_record_acompose_follows() {
        let followed: Vec<&str> = crate::runner::RUNNERS
            .iter()
            .map(|runner| runner.name)
            .filter(|name| usage_record(name).is_some())
            .collect();
        assert_eq!(followed, ["claude", "codex"]);
    }
}
