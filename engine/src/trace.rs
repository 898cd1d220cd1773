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

/// The trace as a bundle keeps it until `trace.json` is written: its decisions in order,
/// with the skills of an excluded provider held as that provider's shared list of names
/// instead of one decision each (on a large estate they are most of the trace, and the
/// catalogue's names are in memory anyway). Serializes to exactly the JSON of the
/// [`Trace`] that [`TraceRecord::expand`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    pub role: String,
    pub entries: Vec<TraceEntry>,
    pub providers: Vec<ProviderReport>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEntry {
    Decision(Decision),
    /// One `excluded` decision per name: `skill:<name>`, kind `ordinary-skill`, from
    /// `source`, with the provider's exclusion `cause`.
    ExcludedSkills {
        source: String,
        cause: String,
        names: std::sync::Arc<[String]>,
    },
}

impl TraceEntry {
    fn count(&self) -> usize {
        match self {
            TraceEntry::Decision(_) => 1,
            TraceEntry::ExcludedSkills { names, .. } => names.len(),
        }
    }
}

/// The fields of a skill excluded with its provider.
fn excluded_skill(source: &str, cause: &str, name: &str) -> Decision {
    Decision {
        subject: format!("skill:{name}"),
        kind: "ordinary-skill".to_owned(),
        source: source.to_owned(),
        outcome: Outcome::Excluded,
        cause: cause.to_owned(),
        reason: excluded_skill_reason(cause),
        selectors: Vec::new(),
        winner: None,
        metadata_bytes: None,
        findings: Vec::new(),
    }
}

fn excluded_skill_reason(cause: &str) -> String {
    format!("its provider is excluded ({cause})")
}

impl TraceRecord {
    /// Every decision, in order.
    pub fn decisions(&self) -> impl Iterator<Item = std::borrow::Cow<'_, Decision>> {
        self.entries.iter().flat_map(|entry| -> Box<dyn Iterator<Item = std::borrow::Cow<'_, Decision>>> {
            match entry {
                TraceEntry::Decision(decision) => Box::new(std::iter::once(std::borrow::Cow::Borrowed(decision))),
                TraceEntry::ExcludedSkills { source, cause, names } => {
                    Box::new(names.iter().map(move |name| std::borrow::Cow::Owned(excluded_skill(source, cause, name))))
                }
            }
        })
    }

    /// How many decisions of each outcome the trace holds, without expanding it.
    pub fn outcomes(&self) -> impl Iterator<Item = (Outcome, usize)> + '_ {
        self.entries.iter().map(|entry| match entry {
            TraceEntry::Decision(decision) => (decision.outcome, 1),
            TraceEntry::ExcludedSkills { names, .. } => (Outcome::Excluded, names.len()),
        })
    }

    /// The trace with every decision spelled out, as `trace.json` holds it.
    pub fn expand(&self) -> Trace {
        Trace {
            format: FORMAT.to_owned(),
            format_version: FORMAT_VERSION,
            role: self.role.clone(),
            decisions: self.decisions().map(std::borrow::Cow::into_owned).collect(),
            providers: self.providers.clone(),
        }
    }
}

impl Serialize for TraceRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut trace = serializer.serialize_struct("Trace", 5)?;
        trace.serialize_field("format", FORMAT)?;
        trace.serialize_field("format_version", &FORMAT_VERSION)?;
        trace.serialize_field("role", &self.role)?;
        trace.serialize_field("decisions", &Decisions(&self.entries))?;
        trace.serialize_field("providers", &self.providers)?;
        trace.end()
    }
}

/// The decisions of a record, written one by one.
struct Decisions<'a>(&'a [TraceEntry]);

impl Serialize for Decisions<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut decisions = serializer.serialize_seq(Some(self.0.iter().map(TraceEntry::count).sum()))?;
        for entry in self.0 {
            match entry {
                TraceEntry::Decision(decision) => decisions.serialize_element(decision)?,
                TraceEntry::ExcludedSkills { source, cause, names } => {
                    for name in names.iter() {
                        decisions.serialize_element(&ExcludedSkill { source, cause, name })?;
                    }
                }
            }
        }
        decisions.end()
    }
}

/// A skill excluded with its provider, serialized as its [`Decision`] would be, without
/// building it.
struct ExcludedSkill<'a> {
    source: &'a str,
    cause: &'a str,
    name: &'a str,
}

impl Serialize for ExcludedSkill<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Shown<T>(T);
        impl<T: std::fmt::Display> Serialize for Shown<T> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(&self.0)
            }
        }
        let mut decision = serializer.serialize_struct("Decision", 6)?;
        decision.serialize_field("subject", &Shown(format_args!("skill:{}", self.name)))?;
        decision.serialize_field("kind", "ordinary-skill")?;
        decision.serialize_field("source", self.source)?;
        decision.serialize_field("outcome", &Outcome::Excluded)?;
        decision.serialize_field("cause", self.cause)?;
        decision.serialize_field("reason", &Shown(format_args!("its provider is excluded ({})", self.cause)))?;
        decision.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(subject: &str, outcome: Outcome) -> Decision {
        Decision {
            subject: subject.to_owned(),
            kind: "source".to_owned(),
            source: "repo-a".to_owned(),
            outcome,
            cause: "not-assigned".to_owned(),
            reason: "a \"quoted\" reason".to_owned(),
            selectors: vec!["skill-*".to_owned()],
            winner: None,
            metadata_bytes: Some(12),
            findings: Vec::new(),
        }
    }

    #[test]
    fn a_record_serializes_as_its_expanded_trace() {
        let record = TraceRecord {
            role: "platform".to_owned(),
            entries: vec![
                TraceEntry::Decision(decision("source:repo-a", Outcome::Excluded)),
                TraceEntry::ExcludedSkills {
                    source: "repo-a".to_owned(),
                    cause: "not-assigned".to_owned(),
                    names: vec!["one".to_owned(), "t\"wo\u{1b}".to_owned()].into(),
                },
                TraceEntry::ExcludedSkills {
                    source: "repo-b".to_owned(),
                    cause: "x".to_owned(),
                    names: Vec::new().into(),
                },
                TraceEntry::Decision(decision("skill:three", Outcome::Selected)),
            ],
            providers: Vec::new(),
        };
        let expanded = record.expand();
        assert_eq!(expanded.decisions.len(), 4);
        assert_eq!(expanded.decisions[2].subject, "skill:t\"wo\u{1b}");
        assert_eq!(expanded.decisions[2].reason, excluded_skill_reason("not-assigned"));
        assert_eq!(serde_json::to_vec_pretty(&record).unwrap(), serde_json::to_vec_pretty(&expanded).unwrap());
        assert_eq!(serde_json::to_vec(&record).unwrap(), serde_json::to_vec(&expanded).unwrap());
        let counted: usize =
            record.outcomes().filter(|(outcome, _)| *outcome == Outcome::Excluded).map(|(_, n)| n).sum();
        assert_eq!(counted, 3);
    }
}
