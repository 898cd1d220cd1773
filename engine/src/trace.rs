//! The trace: every decision behind a bundle and every provider's report. Owns the
//! `trace.json` shape (format `agent-compose.trace`) and its documented order; reading it
//! back is how `describe` works without the sources.

use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "agent-compose.trace";
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Selected,
    Excluded,
    Shadowed,
    Delivered,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Selected => "selected",
            Outcome::Excluded => "excluded",
            Outcome::Shadowed => "shadowed",
            Outcome::Delivered => "delivered",
        }
    }
}

/// One decision: a subject (`kind:name`) considered, and what happened to it and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub subject: String,
    pub kind: String,
    pub source: String,
    pub outcome: Outcome,
    pub cause: String,
    pub reason: String,
    /// The selectors that matched the subject (composed skills keep every one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<String>,
    /// For a shadowed skill: the source whose copy won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<String>,
    /// For a delivered or selected skill: the bytes of its name and description, as
    /// harnesses list them up front.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_bytes: Option<u64>,
    /// The Agent Skills findings about the skill, so `--why` can explain them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<FindingRecord>,
}

/// One Agent Skills finding as the trace keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingRecord {
    pub code: String,
    /// `violation`, `doubt` or `extension`.
    pub level: String,
    pub message: String,
    pub consequence: String,
}

impl Decision {
    /// The name part of the subject (`machine-gpu` for `skill:machine-gpu`).
    pub fn name(&self) -> &str {
        self.subject.split_once(':').map_or(self.subject.as_str(), |(_, name)| name)
    }

    /// The kind part of the subject (`skill` for `skill:machine-gpu`).
    pub fn subject_kind(&self) -> &str {
        self.subject.split_once(':').map_or("", |(kind, _)| kind)
    }
}

/// A provider's selector and what it admitted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectorReport {
    pub patterns: Vec<String>,
    /// Catalogue skills the patterns admitted.
    pub admitted: usize,
    /// Skills in the provider's catalogue.
    pub catalogue: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderReport {
    pub source: String,
    /// `person-package`, `ordinary-catalogue` or `skill-provider`.
    pub category: String,
    /// `role`, `explicit`, `global`, `role:<slug>` or `none`.
    pub scope: String,
    pub outcome: Outcome,
    pub cause: String,
    pub reason: String,
    /// Where it comes from, logically (`roster:core`, `owner/repo`, a request path).
    pub location: String,
    pub skills: usize,
    pub context_bytes: u64,
    pub approximate_tokens: u64,
    /// `context_bytes` split the way harnesses load skills (SPEC 6.6): names and
    /// descriptions (always listed), entry-file bodies (on use) and other files (on
    /// demand); the three sum to `context_bytes`.
    #[serde(default)]
    pub metadata_bytes: u64,
    #[serde(default)]
    pub instruction_bytes: u64,
    #[serde(default)]
    pub resource_bytes: u64,
    /// The part of `resource_bytes` in binary files, which never count as tokens.
    #[serde(default)]
    pub binary_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<SelectorReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    pub format: String,
    pub format_version: u32,
    pub role: String,
    pub decisions: Vec<Decision>,
    pub providers: Vec<ProviderReport>,
}

/// `ceil(bytes / 4)`.
pub fn approximate_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}
