//! `budget.max_tokens` enforced from the runner's own usage record while it runs: where
//! the record is (the runner's config folder as its environment names it, the session's
//! conversation id or working folder), reading it, and a watcher that says when the
//! limit is reached. The engine adds the figures up (`people::usage`); the session runner
//! ends the session.
//!
//! The record is found through the runner's environment, as the runner itself finds it:
//! `CLAUDE_CONFIG_DIR` or `$HOME/.claude` for Claude Code, `CODEX_HOME` or
//! `$HOME/.codex` for Codex, with the launch's values (a role's runtime home) over the
//! inherited ones. Links are followed: a runtime home's `.claude` mirrors the user's by
//! links, so a transcript may land in the user's own folder.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use acompose_people::session::SessionRecord;
use acompose_people::usage::{self, UsageRecord};

use super::sessions::Reviewed;

/// How often the record is read.
const POLL: Duration = Duration::from_millis(250);
/// The most folder entries one reading visits.
const MAX_ENTRIES: usize = 10_000;
/// The largest record read, in bytes; a longer one is read up to here.
const MAX_RECORD_BYTES: u64 = 64 * 1024 * 1024;

/// Where one session's usage record is and the limit it is held to. A hosted session's
/// starter finds it and hands it to the supervisor (`hosted`), hence the serde.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct UsageWatch {
    #[serde(with = "record_kind")]
    record: UsageRecord,
    /// The runner's config folder (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`).
    config: PathBuf,
    conversation: Option<String>,
    cwd: String,
    started: SystemTime,
    /// `max_tokens`, when enforced.
    limit: Option<u64>,
}

impl UsageWatch {
    /// The watch of a session whose review enforces a token limit; `None` otherwise.
    pub fn for_session(reviewed: &Reviewed, record: &SessionRecord) -> Option<Self> {
        let limit = reviewed.review.max_tokens;
        limit?;
        let kind = reviewed.review.usage_record?;
        let variable = |name: &str| -> Option<OsString> {
            reviewed
                .environment
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
                .or_else(|| std::env::var_os(name))
                .filter(|value| !value.is_empty())
        };
        let home = variable("HOME").map(PathBuf::from);
        let config = match kind {
            UsageRecord::ClaudeTranscript => {
                variable("CLAUDE_CONFIG_DIR").map(PathBuf::from).or_else(|| Some(home?.join(".claude")))?
            }
            UsageRecord::CodexRollout => {
                variable("CODEX_HOME").map(PathBuf::from).or_else(|| Some(home?.join(".codex")))?
            }
        };
        Some(Self {
            record: kind,
            config,
            conversation: record.links.conversation.clone(),
            cwd: record.cwd.clone(),
            // A second earlier: file times and the clock may round differently.
            started: SystemTime::now() - Duration::from_secs(1),
            limit,
        })
    }

    /// The tokens the record holds now (0 while there is none).
    pub fn tokens(&self) -> u64 {
        match self.record {
            UsageRecord::ClaudeTranscript => {
                self.claude_transcript().map_or(0, |path| usage::claude_transcript_tokens(&read_text(&path)))
            }
            UsageRecord::CodexRollout => self
                .codex_rollouts()
                .iter()
                .map(|path| usage::codex_rollout_tokens(&read_text(path)))
                .max()
                .unwrap_or(0),
        }
    }

    /// `<config>/projects/<any folder>/<conversation>.jsonl`.
    fn claude_transcript(&self) -> Option<PathBuf> {
        let name = format!("{}.jsonl", self.conversation.as_deref()?);
        let projects = self.config.join("projects");
        fs::read_dir(&projects)
            .ok()?
            .flatten()
            .take(MAX_ENTRIES)
            .map(|entry| entry.path().join(&name))
            .find(|path| path.is_file())
    }

    /// The rollouts under `<config>/sessions/YYYY/MM/DD/` written since the start whose
    /// first line names the session's working folder.
    fn codex_rollouts(&self) -> Vec<PathBuf> {
        let mut folders = vec![(self.config.join("sessions"), 0)];
        let mut found = Vec::new();
        let mut visited = 0;
        while let Some((folder, depth)) = folders.pop() {
            for entry in fs::read_dir(&folder).into_iter().flatten().flatten() {
                visited += 1;
                if visited > MAX_ENTRIES {
                    return found;
                }
                let path = entry.path();
                if depth < 3 {
                    if path.is_dir() {
                        folders.push((path, depth + 1));
                    }
                    continue;
                }
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let recent =
                    fs::metadata(&path).and_then(|metadata| metadata.modified()).is_ok_and(|at| at >= self.started);
                if name.starts_with("rollout-") && name.ends_with(".jsonl") && recent && self.is_ours(&path) {
                    found.push(path);
                }
            }
        }
        found
    }

    fn is_ours(&self, rollout: &Path) -> bool {
        let text = read_text(rollout);
        let first = text.lines().next().unwrap_or_default();
        usage::codex_rollout_cwd(first).is_some_and(|cwd| cwd == self.cwd)
    }

    /// Whether the tokens reach `max_tokens`.
    pub fn exceeded(&self) -> bool {
        self.limit.is_some_and(|limit| self.tokens() >= limit)
    }

    /// Reads the record until the session ends (`ended`) or a limit is reached, then
    /// calls `exceeded` once.
    pub(crate) fn watch(self, ended: Arc<AtomicBool>, exceeded: impl FnOnce() + Send + 'static) {
        std::thread::spawn(move || {
            while !ended.load(Ordering::Relaxed) {
                if self.exceeded() {
                    exceeded();
                    return;
                }
                std::thread::sleep(POLL);
            }
        });
    }
}

/// [`UsageRecord`] by name.
mod record_kind {
    use acompose_people::usage::UsageRecord;

    pub(super) fn serialize<S: serde::Serializer>(record: &UsageRecord, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match record {
            UsageRecord::ClaudeTranscript => "claude-transcript",
            UsageRecord::CodexRollout => "codex-rollout",
        })
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<UsageRecord, D::Error> {
        let name: String = serde::Deserialize::deserialize(deserializer)?;
        match name.as_str() {
            "claude-transcript" => Ok(UsageRecord::ClaudeTranscript),
            "codex-rollout" => Ok(UsageRecord::CodexRollout),
            _ => Err(serde::de::Error::custom("an unknown usage record")),
        }
    }
}

/// A record's text, at most [`MAX_RECORD_BYTES`]; empty when it cannot be read.
fn read_text(path: &Path) -> String {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    if let Ok(file) = fs::File::open(path) {
        let _ = file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
