//! The trace: every decision behind a bundle and every provider's report. Owns the
//! `trace.json` shape (format `agent-compose.trace`) and its documented order; reading it
//! back is how `describe` works without the sources.

use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "agent-compose.trace";
/// The trace's file in a bundle.
pub const FILE: &str = "trace.json";
pub(crate) const FORMAT_VERSION: u32 = 1;

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
    pub(crate) fn subject_kind(&self) -> &str {
        self.subject.split_once(':').map_or("", |(kind, _)| kind)
    }
}

/// A provider's selector and what it admitted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectorReport {
    pub patterns: Vec<String>,
    /// Catalogue skills the patterns admitted and no private overlay excluded.
    pub admitted: usize,
    /// Skills in the provider's catalogue.
    pub catalogue: usize,
    /// Catalogue skills the patterns matched that a private overlay then excluded (not
    /// among `admitted`). Absent when none, so a trace without such keeps its bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overlay_excluded: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
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
/// catalogue's names are in memory anyway). [`TraceRecord::write_json`] writes exactly
/// the JSON of the [`Trace`] that [`TraceRecord::expand`] returns.
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
    /// One `excluded` decision per name: `skill:<name>`, kind `ordinary-skill`, from
    /// `source`, cause `selector-excluded`, with this `reason` (a run of skills no
    /// selector of their provider matched).
    UnselectedSkills {
        source: String,
        reason: String,
        names: Vec<String>,
    },
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

/// The fields of a skill no selector of its provider matched.
fn unselected_skill(source: &str, reason: &str, name: &str) -> Decision {
    Decision { cause: "selector-excluded".to_owned(), reason: reason.to_owned(), ..excluded_skill(source, "", name) }
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
                TraceEntry::UnselectedSkills { source, reason, names } => Box::new(
                    names.iter().map(move |name| std::borrow::Cow::Owned(unselected_skill(source, reason, name))),
                ),
            }
        })
    }

    /// How many decisions of each outcome the trace holds, without expanding it.
    pub fn outcomes(&self) -> impl Iterator<Item = (Outcome, usize)> + '_ {
        self.entries.iter().map(|entry| match entry {
            TraceEntry::Decision(decision) => (decision.outcome, 1),
            TraceEntry::ExcludedSkills { names, .. } => (Outcome::Excluded, names.len()),
            TraceEntry::UnselectedSkills { names, .. } => (Outcome::Excluded, names.len()),
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

impl TraceRecord {
    /// Writes the trace's JSON, exactly as `serde_json` pretty-prints [`TraceRecord::expand`]
    /// (two-space indents, no final newline), without expanding it. The skills of an
    /// excluded provider, and a run of skills no selector matched, differ only by name, so
    /// each group's text is serialized once and only the names are written per skill: on a
    /// large estate they are most of the trace. The text is gathered in a buffer and
    /// handed to `out` in pieces of about [`WRITE_PIECE`] bytes.
    pub(crate) fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.write_json_into(&mut TraceWriter::new(out, None, Resume::START))
    }

    /// [`TraceRecord::write_json`], telling `places` where each decision and provider
    /// report starts and how long it is, and where writing can start again, as it is
    /// written.
    pub(crate) fn write_json_placed(
        &self,
        out: &mut dyn std::io::Write,
        places: &mut dyn Places,
    ) -> std::io::Result<()> {
        self.write_json_into(&mut TraceWriter::new(out, Some(places), Resume::START))
    }

    /// The bytes of [`TraceRecord::write_json`] from `from` (a [`Resume`] told while it
    /// was written) to the end, without serializing what comes before.
    pub(crate) fn write_json_from(&self, out: &mut dyn std::io::Write, from: Resume) -> std::io::Result<()> {
        self.write_json_into(&mut TraceWriter::new(out, None, from))
    }

    fn write_json_into(&self, writer: &mut TraceWriter<'_>) -> std::io::Result<()> {
        let from = writer.from;
        let first_provider = match from.at {
            At::Decision(start) => {
                if from.offset == 0 {
                    writer.text.extend_from_slice(b"{\n  \"format\": ");
                    write_nested(&mut writer.text, FORMAT, 1)?;
                    writer.text.extend_from_slice(
                        format!(",\n  \"format_version\": {FORMAT_VERSION},\n  \"role\": ").as_bytes(),
                    );
                    write_nested(&mut writer.text, &self.role, 1)?;
                    writer.text.extend_from_slice(b",\n  \"decisions\": [");
                }
                self.write_decisions(writer, start, from.first)?;
                writer.text.extend_from_slice(b",\n  \"providers\": [");
                0
            }
            At::Provider(start) => start,
        };
        // Element by element, as `serde_json` pretty-prints the list one level deep, so
        // that each report's place is known.
        for (index, provider) in self.providers.iter().enumerate().skip(first_provider) {
            writer.may_resume(At::Provider(index), index == 0);
            writer.text.extend_from_slice(if index == 0 { b"\n    " } else { b",\n    " });
            let start = writer.position();
            write_nested(&mut writer.text, provider, 2)?;
            writer.mark(Element::Provider(&provider.source), start);
            writer.hand_over()?;
        }
        writer.text.extend_from_slice(if self.providers.is_empty() { b"]" } else { b"\n  ]" });
        writer.text.extend_from_slice(b"\n}");
        writer.out.write_all(&writer.text)
    }

    /// The decisions from entry `start` on, and the list's end. `first`: nothing was
    /// written into the list before.
    fn write_decisions(&self, writer: &mut TraceWriter<'_>, start: usize, mut first: bool) -> std::io::Result<()> {
        for (index, entry) in self.entries.iter().enumerate().skip(start) {
            writer.may_resume(At::Decision(index), first);
            match entry {
                TraceEntry::Decision(decision) => {
                    writer.text.extend_from_slice(if first { b"\n    " } else { b",\n    " });
                    let start = writer.position();
                    write_nested(&mut writer.text, decision, 2)?;
                    writer.mark(Element::Decision(&decision.subject), start);
                    first = false;
                }
                TraceEntry::ExcludedSkills { source, cause, names } if !names.is_empty() => {
                    write_skills(writer, &excluded_skill(source, cause, ""), names, &mut first)?;
                }
                TraceEntry::UnselectedSkills { source, reason, names } if !names.is_empty() => {
                    write_skills(writer, &unselected_skill(source, reason, ""), names, &mut first)?;
                }
                TraceEntry::ExcludedSkills { .. } | TraceEntry::UnselectedSkills { .. } => {}
            }
            writer.hand_over()?;
        }
        writer.may_resume(At::Decision(self.entries.len()), first);
        writer.text.extend_from_slice(if first { b"]" } else { b"\n  ]" });
        Ok(())
    }
}

/// A place in a trace's JSON where writing can start again: the offset in the file of an
/// element's first byte (its separator), which element that is, and whether it is the
/// first of the decisions list. Told every [`RESUME_SPACING`] bytes or so while the trace
/// is written, so that a writer that needs only some of the file (the parts a store
/// lacks) serializes from the nearest one before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    pub offset: u64,
    at: At,
    first: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// The entry of this index of the decisions (or, past the last, the list's end).
    Decision(usize),
    /// The provider report of this index.
    Provider(usize),
}

impl Resume {
    /// The start of the file.
    pub const START: Resume = Resume { offset: 0, at: At::Decision(0), first: true };
}

/// About how far apart the [`Resume`] places of a trace are.
pub(crate) const RESUME_SPACING: u64 = 32 * 1024;

/// About how many bytes [`TraceRecord::write_json`] gathers before each write.
pub(crate) const WRITE_PIECE: usize = 1 << 16;

/// Told where each element of a trace is written: its offset in `trace.json` and its
/// length in bytes, from its `{` to its `}` (the trace index keeps them).
pub(crate) trait Places {
    fn decision(&mut self, start: u64, length: u64, subject: &str);
    /// A decision whose subject is `skill:<name>`.
    fn skill(&mut self, start: u64, length: u64, name: &str);
    fn provider(&mut self, start: u64, length: u64, source: &str);
    /// Writing can start again here ([`TraceRecord::write_json_from`]).
    fn resume(&mut self, _resume: Resume) {}
}

/// One element of the trace whose place is told.
enum Element<'a> {
    Decision(&'a str),
    /// A decision whose subject is `skill:<name>`.
    Skill(&'a str),
    Provider(&'a str),
}

/// The text of a trace being written: gathered in a buffer, handed to `out` piece by
/// piece, with the count of bytes already handed over, so that every element's offset in
/// the file is known when it is written.
struct TraceWriter<'a> {
    out: &'a mut dyn std::io::Write,
    text: Vec<u8>,
    handed: u64,
    places: Option<&'a mut dyn Places>,
    /// Where writing started.
    from: Resume,
    /// From which offset the next [`Resume`] is told.
    next_resume: u64,
}

impl<'a> TraceWriter<'a> {
    fn new(out: &'a mut dyn std::io::Write, places: Option<&'a mut dyn Places>, from: Resume) -> Self {
        TraceWriter {
            out,
            text: Vec::with_capacity(WRITE_PIECE + (WRITE_PIECE >> 2)),
            handed: from.offset,
            places,
            from,
            next_resume: from.offset + RESUME_SPACING,
        }
    }

    /// Tells the places that writing can start again at the element about to be written,
    /// when the last place told is far enough behind.
    fn may_resume(&mut self, at: At, first: bool) {
        let offset = self.position();
        if offset < self.next_resume {
            return;
        }
        self.next_resume = offset + RESUME_SPACING;
        if let Some(places) = self.places.as_deref_mut() {
            places.resume(Resume { offset, at, first });
        }
    }

    /// The offset in the file of the next byte written.
    fn position(&self) -> u64 {
        self.handed + self.text.len() as u64
    }

    /// Records an element written from `start` up to here.
    fn mark(&mut self, element: Element<'_>, start: u64) {
        let length = self.position() - start;
        if let Some(places) = self.places.as_deref_mut() {
            match element {
                Element::Decision(subject) => places.decision(start, length, subject),
                Element::Skill(name) => places.skill(start, length, name),
                Element::Provider(source) => places.provider(start, length, source),
            }
        }
    }

    /// Hands the text to `out` once it holds a piece.
    fn hand_over(&mut self) -> std::io::Result<()> {
        if self.text.len() >= WRITE_PIECE {
            self.out.write_all(&self.text)?;
            self.handed += self.text.len() as u64;
            self.text.clear();
        }
        Ok(())
    }
}

/// `serde_json`'s pretty formatting as it appears `depth` levels deep: the same line
/// breaks and two-space indents, every line after the first indented by two more spaces
/// per level.
struct Nested {
    indent: usize,
    has_value: bool,
}

impl Nested {
    /// A comma when `comma`, a line break and the indent.
    fn line<W: ?Sized + std::io::Write>(&self, writer: &mut W, comma: bool) -> std::io::Result<()> {
        const BREAK: &[u8] = b",\n                                ";
        match BREAK.get(usize::from(!comma)..2 + 2 * self.indent) {
            Some(text) => writer.write_all(text),
            None => {
                writer.write_all(&BREAK[usize::from(!comma)..2])?;
                writer.write_all(&vec![b' '; 2 * self.indent])
            }
        }
    }

    /// Opens an array or an object one level deeper.
    fn open<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.indent += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    /// Closes an array or an object, on a line of its own when it held a value.
    fn close<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.indent -= 1;
        if self.has_value {
            self.line(writer, false)?;
        }
        writer.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Nested {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        self.line(writer, !first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _writer: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        self.line(writer, !first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _writer: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Appends the pretty JSON of `value` as it appears `depth` levels deep.
fn write_nested<T: Serialize + ?Sized>(text: &mut Vec<u8>, value: &T, depth: usize) -> std::io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(text, Nested { indent: depth, has_value: false });
    value.serialize(&mut serializer).map_err(std::io::Error::other)
}

/// Appends one decision per name, elements two levels deep, handing the text over piece
/// by piece: `template` (a skill's decision with an empty name) is serialized once and
/// split inside its subject (the first field), so that prefix, escaped name and suffix
/// are each skill's decision.
fn write_skills(
    writer: &mut TraceWriter<'_>,
    template: &Decision,
    names: &[String],
    first: &mut bool,
) -> std::io::Result<()> {
    let mut prefix = Vec::new();
    write_nested(&mut prefix, template, 2)?;
    let marker = b"\"subject\": \"skill:";
    let split = prefix.windows(marker.len()).position(|window| window == marker).map_or(0, |at| at + marker.len());
    let suffix = prefix.split_off(split);
    for name in names {
        writer.text.extend_from_slice(if *first { b"\n    " } else { b",\n    " });
        let start = writer.position();
        writer.text.extend_from_slice(&prefix);
        write_escaped(&mut writer.text, name)?;
        writer.text.extend_from_slice(&suffix);
        writer.mark(Element::Skill(name), start);
        *first = false;
        writer.hand_over()?;
    }
    Ok(())
}

/// Writes `text` escaped as inside a JSON string, the way `serde_json` escapes it.
pub(crate) fn write_escaped(out: &mut Vec<u8>, text: &str) -> std::io::Result<()> {
    if text.bytes().any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\') {
        let quoted = serde_json::to_vec(text).map_err(std::io::Error::other)?;
        out.extend_from_slice(&quoted[1..quoted.len() - 1]);
    } else {
        out.extend_from_slice(text.as_bytes());
    }
    Ok(())
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

    fn written(record: &TraceRecord) -> Vec<u8> {
        let mut out = Vec::new();
        record.write_json(&mut out).unwrap();
        out
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
        assert_eq!(written(&record), serde_json::to_vec_pretty(&expanded).unwrap());
        let counted: usize =
            record.outcomes().filter(|(outcome, _)| *outcome == Outcome::Excluded).map(|(_, n)| n).sum();
        assert_eq!(counted, 3);
    }

    #[test]
    fn nested_formatting_is_pretty_formatting_indented_at_any_depth() {
        let value = serde_json::json!({"a": [1, {"b": [], "c": {}}, [[]]], "d": {"e": "f"}, "g": []});
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        for depth in [0, 1, 2, 7, 20] {
            let mut text = Vec::new();
            write_nested(&mut text, &value, depth).unwrap();
            let expected = pretty.replace('\n', &format!("\n{}", "  ".repeat(depth)));
            assert_eq!(String::from_utf8(text).unwrap(), expected, "depth {depth}");
        }
    }

    #[test]
    fn every_shape_of_record_writes_its_expanded_trace() {
        let mut with_everything = decision("skill:a\\b", Outcome::Shadowed);
        with_everything.winner = Some("repo-\u{7f}".to_owned());
        with_everything.findings = vec![FindingRecord {
            code: "name".to_owned(),
            level: "doubt".to_owned(),
            message: "line\nbreak".to_owned(),
            consequence: "none".to_owned(),
        }];
        let provider = ProviderReport {
            source: "repo-a".to_owned(),
            category: "ordinary-catalogue".to_owned(),
            scope: "role".to_owned(),
            outcome: Outcome::Selected,
            cause: "assigned".to_owned(),
            reason: "named".to_owned(),
            location: "owner/repo".to_owned(),
            skills: 2,
            context_bytes: 10,
            approximate_tokens: 3,
            metadata_bytes: 1,
            instruction_bytes: 8,
            resource_bytes: 1,
            binary_bytes: 0,
            selector: Some(SelectorReport {
                patterns: vec!["a*".to_owned()],
                admitted: 1,
                catalogue: 2,
                overlay_excluded: 0,
            }),
        };
        let excluded = |names: &[&str]| TraceEntry::ExcludedSkills {
            source: "repo-\"q\"".to_owned(),
            cause: "not\tassigned".to_owned(),
            names: names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>().into(),
        };
        let records = [
            TraceRecord { role: String::new(), entries: Vec::new(), providers: Vec::new() },
            TraceRecord { role: "r\u{1}".to_owned(), entries: vec![excluded(&[])], providers: vec![provider.clone()] },
            TraceRecord { role: "r".to_owned(), entries: vec![excluded(&["only"])], providers: Vec::new() },
            TraceRecord {
                role: "r".to_owned(),
                entries: vec![
                    excluded(&["x", "y\u{0}"]),
                    TraceEntry::Decision(with_everything),
                    TraceEntry::UnselectedSkills {
                        source: "repo-b".to_owned(),
                        reason: "matched by no selector of `repo-b` (a*, \"b\")".to_owned(),
                        names: vec!["c".to_owned(), "d\\".to_owned()],
                    },
                    TraceEntry::UnselectedSkills {
                        source: "repo-c".to_owned(),
                        reason: "r".to_owned(),
                        names: Vec::new(),
                    },
                    excluded(&["z"]),
                ],
                providers: vec![provider.clone(), provider],
            },
        ];
        for record in &records {
            assert_eq!(
                String::from_utf8(written(record)).unwrap(),
                String::from_utf8(serde_json::to_vec_pretty(&record.expand()).unwrap()).unwrap()
            );
        }
    }

    /// Keeps only the places writing can start again.
    #[derive(Default)]
    struct Resumes(Vec<Resume>);

    impl Places for Resumes {
        fn decision(&mut self, _: u64, _: u64, _: &str) {}
        fn skill(&mut self, _: u64, _: u64, _: &str) {}
        fn provider(&mut self, _: u64, _: u64, _: &str) {}
        fn resume(&mut self, resume: Resume) {
            self.0.push(resume);
        }
    }

    #[test]
    fn writing_from_each_place_told_gives_the_rest_of_the_file() {
        let provider = |index: usize| ProviderReport {
            source: format!("repo-{index}"),
            category: "ordinary-catalogue".to_owned(),
            scope: "role".to_owned(),
            outcome: Outcome::Excluded,
            cause: "not-assigned".to_owned(),
            reason: "x".repeat(index % 700),
            location: format!("owner/repo-{index}"),
            skills: index,
            context_bytes: 0,
            approximate_tokens: 0,
            metadata_bytes: 0,
            instruction_bytes: 0,
            resource_bytes: 0,
            binary_bytes: 0,
            selector: None,
        };
        // Groups of every size (a group larger than the spacing among them), single
        // decisions, empty groups, and enough providers that places fall among them.
        let mut entries = Vec::new();
        for index in 0..200 {
            entries.push(TraceEntry::Decision(decision(&format!("source:repo-{index}"), Outcome::Excluded)));
            let count = if index == 100 { 400 } else { (index * 7) % 60 };
            let names: Vec<String> = (0..count).map(|name| format!("skill-{index}-{name}")).collect();
            entries.push(TraceEntry::ExcludedSkills {
                source: format!("repo-{index}"),
                cause: "not-assigned".to_owned(),
                names: names.into(),
            });
        }
        for ends_in_decisions in [false, true] {
            let providers = if ends_in_decisions { Vec::new() } else { (0..400).map(provider).collect() };
            let record = TraceRecord { role: "r".to_owned(), entries: entries.clone(), providers };
            let whole = written(&record);
            let mut resumes = Resumes::default();
            let mut placed = Vec::new();
            record.write_json_placed(&mut placed, &mut resumes).unwrap();
            assert_eq!(placed, whole);
            assert!(resumes.0.len() as u64 >= whole.len() as u64 / RESUME_SPACING / 2, "{}", resumes.0.len());
            assert!(resumes.0.iter().any(|resume| matches!(resume.at, At::Provider(_))) != ends_in_decisions);
            for resume in &resumes.0 {
                let mut rest = Vec::new();
                record.write_json_from(&mut rest, *resume).unwrap();
                let offset = usize::try_from(resume.offset).unwrap();
                assert!(rest == whole[offset..], "from {resume:?}");
            }
        }
    }
}
