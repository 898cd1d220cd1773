//! Diagnostics: user-input problems as values. Owns their shape, not their rendering
//! (the cli renders them with miette).

use std::collections::BTreeMap;

/// The most diagnostics reported for one file; the rest are counted in one summary
/// diagnostic ([`bound_per_file`]). Enough to fix a file in passes, few enough that
/// rendering stays cheap whatever the file holds.
pub const MAX_DIAGNOSTICS_PER_FILE: usize = 100;

/// The code of the summary diagnostic that stands for the omitted ones.
pub const OMITTED_DIAGNOSTICS_CODE: &str = "diagnostics-omitted";

/// How bad a diagnostic is. Errors fail a command; warnings and notes are printed and
/// allowed; detail is printed only when asked for (`-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
    Detail,
}

/// A byte range inside one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub offset: usize,
    pub length: usize,
}

impl Span {
    pub fn new(offset: usize, length: usize) -> Self {
        Self { offset, length }
    }
}

/// A 1-based line and column (columns count characters): where a problem is in a data
/// file (JSON, YAML) whose text is never shown back, unlike a [`Span`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// One problem found in user input, the one problem type of every check (roster,
/// request, catalogue rules, People files and bindings, session records): a stable
/// kebab-case `code`, the file it is in, where in that file when known, a lowercase
/// message and hints on how to fix it.
///
/// Where is a [`Span`] in a text file whose lines a renderer may show (KDL, Markdown),
/// or a [`Position`] in a data file, with the JSON `pointer` of the schema rule that
/// failed and a `field` name taken from the contract (never from the file).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub file: Option<String>,
    pub span: Option<Span>,
    pub position: Option<Position>,
    pub pointer: Option<String>,
    pub field: Option<String>,
    pub message: String,
    pub hints: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            code,
            file: None,
            span: None,
            position: None,
            pointer: None,
            field: None,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, ..Self::error(code, message) }
    }

    pub fn note(code: &'static str, message: impl Into<String>) -> Self {
        Self { severity: Severity::Note, ..Self::error(code, message) }
    }

    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    /// Where in a data file.
    pub fn at_position(mut self, position: Option<Position>) -> Self {
        self.position = position;
        self
    }

    /// The JSON pointer of the schema rule that failed.
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// The contract's name of the field concerned.
    pub fn field(mut self, name: impl Into<String>) -> Self {
        self.field = Some(name.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A value together with the diagnostics found while computing it. Parsing never fails:
/// a broken file yields a partial value and its diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Parsed<T> {
    pub value: T,
    pub diagnostics: Vec<Diagnostic>,
}

impl<T> Parsed<T> {
    pub fn new(value: T, diagnostics: Vec<Diagnostic>) -> Self {
        Self { value, diagnostics }
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The start offset of every line of one text, built once per file so that finding the
/// line and column of many diagnostics costs a binary search each, not a rescan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.bytes().enumerate().filter(|(_, byte)| *byte == b'\n').map(|(index, _)| index + 1))
            .collect();
        Self { starts }
    }

    /// The 0-based line that holds a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|start| *start <= offset).max(1) - 1
    }

    /// How many lines the text has (a text of no line break has one).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The byte range of a 0-based line of `text` without its line break; an empty range
    /// at the end of the text for a line past the last.
    pub fn line_range(&self, text: &str, line: usize) -> std::ops::Range<usize> {
        let start = self.starts.get(line).copied().unwrap_or(text.len()).min(text.len());
        let end = self.starts.get(line + 1).map_or(text.len(), |next| next.saturating_sub(1)).clamp(start, text.len());
        start..end
    }

    /// The 1-based line and column of a byte offset in `text` (the text this index was
    /// built from), counting columns in characters.
    pub fn line_column(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|start| *start <= offset).max(1);
        let line_start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = text.get(line_start..offset).map_or(0, |rest| rest.chars().count()) + 1;
        (line, column)
    }
}

/// The 1-based line and column of a byte offset, counting columns in characters. For one
/// lookup; many lookups in one text go through a [`LineIndex`].
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_column(text, offset)
}

/// Whether a character must never reach a terminal or a log as it is. This is the one
/// test every escaping below applies: a control character (C0, DEL and C1: escape
/// sequences, bells, carriage returns, line breaks), a line or paragraph separator
/// (U+2028, U+2029), or a bidirectional formatting character (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), which reorders the text after it on screen so that a
/// name can read as something it is not, or a Unicode tag character (U+E0000–U+E007F),
/// invisible on screen and read by a model.
pub fn needs_escape(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{2028}'
                | '\u{2029}'
                | '\u{61c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// A value from a user's file, an archive or a file name made safe to quote on one line:
/// every character [`needs_escape`] names becomes U+FFFD, so a name can neither run an
/// escape sequence, forge a line nor reorder its neighbours.
pub fn sanitize(value: &str) -> String {
    value.chars().map(|character| if needs_escape(character) { '\u{fffd}' } else { character }).collect()
}

/// [`sanitize`] for text of several lines: keeps `\n`, replaces everything else it would.
pub fn sanitize_lines(value: &str) -> String {
    value.split('\n').map(sanitize).collect::<Vec<_>>().join("\n")
}

/// A file's text made safe to print as a snippet, with every byte offset unchanged: each
/// character [`needs_escape`] names except `\n` is replaced by a printable one of the same
/// UTF-8 length (tab and carriage return by a space, other C0 controls and DEL by `?`, C1
/// controls and U+061C by `¿`, the three-byte separators and bidirectional controls by
/// U+FFFD), so spans computed on the original text stay valid.
pub fn snippet_safe(text: &str) -> String {
    text.chars()
        .map(|character| match character {
            '\n' => '\n',
            '\t' | '\r' => ' ',
            '\u{0}'..='\u{1f}' | '\u{7f}' => '?',
            '\u{80}'..='\u{9f}' | '\u{61c}' => '\u{bf}',
            other if needs_escape(other) => '\u{fffd}',
            other => other,
        })
        .collect()
}

/// The last guard before bytes reach a terminal: everything a command prints passes
/// through here, whatever built it. Line breaks and tabs are kept, and so are colour
/// sequences (`ESC [ digits and ; m`) when `colour` is on, since the tool itself writes
/// those; every other character [`needs_escape`] names is written as `\uXXXX`. That form
/// is also JSON's own escape, so a JSON document printed through this guard still parses
/// to exactly the same values (a JSON writer never leaves a raw C0 control in a string).
pub fn terminal_safe(text: &str, colour: bool) -> std::borrow::Cow<'_, str> {
    let clean = |character: char| !needs_escape(character) || matches!(character, '\n' | '\t');
    if text.chars().all(clean) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(character) = rest.chars().next() {
        if colour && character == '\u{1b}' {
            let sequence = colour_sequence_length(rest);
            if sequence > 0 {
                safe.push_str(&rest[..sequence]);
                rest = &rest[sequence..];
                continue;
            }
        }
        if clean(character) {
            safe.push(character);
        } else {
            safe.push_str(&format!("\\u{:04x}", u32::from(character)));
        }
        rest = &rest[character.len_utf8()..];
    }
    std::borrow::Cow::Owned(safe)
}

/// The length of the colour sequence (SGR: `ESC [`, digits and `;`, `m`) at the start of
/// `text`, or 0 when it does not start with one.
fn colour_sequence_length(text: &str) -> usize {
    let Some(parameters) = text.strip_prefix("\u{1b}[") else { return 0 };
    let digits = parameters.bytes().take_while(|byte| byte.is_ascii_digit() || *byte == b';').count();
    if digits <= 32 && parameters.as_bytes().get(digits) == Some(&b'm') { 2 + digits + 1 } else { 0 }
}

/// The most items of a list of problems that one message shows; [`listed`] counts the
/// rest.
pub const MAX_LISTED: usize = 20;

/// `items` joined by `separator`, at most [`MAX_LISTED`] of them and then `and N more`,
/// so one message stays short however many problems a hostile input has.
pub fn listed(items: &[String], separator: &str) -> String {
    let mut text = items.iter().take(MAX_LISTED).map(String::as_str).collect::<Vec<_>>().join(separator);
    if items.len() > MAX_LISTED {
        text.push_str(&format!("{separator}and {} more", items.len() - MAX_LISTED));
    }
    text
}

/// At most [`MAX_DIAGNOSTICS_PER_FILE`] diagnostics per file, in their order; when a file
/// has more, one `diagnostics-omitted` diagnostic after its last kept one counts the rest
/// (an error when any omitted one is). Linear in the number of diagnostics; bounding an
/// already bounded list returns it unchanged.
pub fn bound_per_file(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut kept_per_file: BTreeMap<Option<String>, usize> = BTreeMap::new();
    let mut omitted: BTreeMap<Option<String>, (usize, bool)> = BTreeMap::new();
    let mut kept: Vec<Diagnostic> = Vec::new();
    let mut last_kept: BTreeMap<Option<String>, usize> = BTreeMap::new();
    for diagnostic in diagnostics {
        let count = kept_per_file.entry(diagnostic.file.clone()).or_default();
        // A summary from an earlier pass is always kept, so bounding twice changes nothing.
        let summary = diagnostic.code == OMITTED_DIAGNOSTICS_CODE;
        if summary || *count < MAX_DIAGNOSTICS_PER_FILE {
            *count += usize::from(!summary);
            last_kept.insert(diagnostic.file.clone(), kept.len());
            kept.push(diagnostic);
        } else {
            let entry = omitted.entry(diagnostic.file.clone()).or_default();
            entry.0 += 1;
            entry.1 |= diagnostic.is_error();
        }
    }
    if omitted.is_empty() {
        return kept;
    }
    let summary_after: BTreeMap<usize, Option<String>> = last_kept
        .into_iter()
        .filter(|(file, _)| omitted.contains_key(file))
        .map(|(file, index)| (index, file))
        .collect();
    let mut bounded = Vec::with_capacity(kept.len() + summary_after.len());
    for (index, diagnostic) in kept.into_iter().enumerate() {
        bounded.push(diagnostic);
        if let Some(file) = summary_after.get(&index)
            && let Some(&(count, any_error)) = omitted.get(file)
        {
            let message = format!(
                "and {count} more diagnostic{} in this file (only the first {MAX_DIAGNOSTICS_PER_FILE} are shown)",
                if count == 1 { "" } else { "s" }
            );
            let mut summary = if any_error {
                Diagnostic::error(OMITTED_DIAGNOSTICS_CODE, message)
            } else {
                Diagnostic::warning(OMITTED_DIAGNOSTICS_CODE, message)
            };
            summary.file = file.clone();
            bounded.push(summary.hint("fix the problems shown and run again to see the rest"));
        }
    }
    bounded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_index_agrees_with_a_rescan() {
        let text = "ab\nçd\n\nlast";
        let index = LineIndex::new(text);
        for offset in (0..=text.len() + 2).filter(|offset| *offset > text.len() || text.is_char_boundary(*offset)) {
            let clamped = offset.min(text.len());
            let before = text.get(..clamped).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            assert_eq!(index.line_column(text, offset).0, line, "offset {offset}");
        }
        assert_eq!(index.line_column(text, 5), (2, 2));
        assert_eq!((index.line_of(0), index.line_of(3), index.line_of(text.len()), index.line_count()), (0, 1, 3, 4));
        assert_eq!(&text[index.line_range(text, 1)], "çd");
        assert_eq!(&text[index.line_range(text, 2)], "");
        assert_eq!(&text[index.line_range(text, 3)], "last");
        assert_eq!(index.line_range(text, 9), text.len()..text.len());
        assert_eq!(index.line_column(text, text.len()), (4, 5));
    }

    #[test]
    fn snippets_keep_their_length_and_lose_their_controls() {
        let text: String = (0u8..=0x7f).map(char::from).chain(['\u{9b}', 'é']).collect();
        let safe = snippet_safe(&text);
        assert_eq!(safe.len(), text.len());
        assert!(safe.chars().all(|character| character == '\n' || !character.is_control()));
    }

    #[test]
    fn bidirectional_controls_and_separators_are_escaped_like_controls() {
        for hostile in ["\u{202e}", "\u{2066}", "\u{2069}", "\u{200f}", "\u{61c}", "\u{2028}", "\u{2029}", "\u{85}"] {
            let text = format!("a{hostile}b");
            assert_eq!(sanitize(&text), "a\u{fffd}b", "{}", hostile.escape_unicode());
            assert_eq!(snippet_safe(&text).len(), text.len());
            assert!(!snippet_safe(&text).contains(hostile));
            assert!(!terminal_safe(&text, true).contains(hostile));
        }
        assert_eq!(sanitize("plain é ü ✓"), "plain é ü ✓");
    }

    #[test]
    fn the_terminal_guard_keeps_colour_only_when_asked_and_json_stays_json() {
        let coloured = "\u{1b}[38;5;12m●\u{1b}[0m name\n";
        assert_eq!(terminal_safe(coloured, true), coloured);
        assert_eq!(terminal_safe(coloured, false), "\\u001b[38;5;12m●\\u001b[0m name\n");
        let hostile = "x\u{1b}]0;title\u{7}\u{1b}[2J\ry\t";
        assert_eq!(terminal_safe(hostile, true), "x\\u001b]0;title\\u0007\\u001b[2J\\u000dy\t");
        let json = serde_json::to_string(&serde_json::json!({"name": "a\u{202e}b\u{7f}\u{9b}"})).expect("json");
        let guarded = terminal_safe(&json, false);
        assert!(guarded.is_ascii(), "{guarded}");
        let value: serde_json::Value = serde_json::from_str(&guarded).expect("still JSON");
        assert_eq!(value["name"], "a\u{202e}b\u{7f}\u{9b}");
    }

    #[test]
    fn a_long_list_shows_its_first_items_and_counts_the_rest() {
        let items: Vec<String> = (0..MAX_LISTED + 5).map(|index| index.to_string()).collect();
        let text = listed(&items, "; ");
        assert!(text.starts_with("0; 1; 2") && text.ends_with("; 19; and 5 more"), "{text}");
        assert_eq!(listed(&items[..2], ", "), "0, 1");
    }

    #[test]
    fn each_file_keeps_its_first_diagnostics_and_counts_the_rest() {
        let mut diagnostics = Vec::new();
        for index in 0..MAX_DIAGNOSTICS_PER_FILE + 7 {
            diagnostics.push(Diagnostic::error("a", format!("{index}")).in_file("big"));
            if index < 3 {
                diagnostics.push(Diagnostic::warning("b", "small").in_file("small"));
            }
        }
        let bounded = bound_per_file(diagnostics);
        let big: Vec<&Diagnostic> =
            bounded.iter().filter(|diagnostic| diagnostic.file.as_deref() == Some("big")).collect();
        assert_eq!(big.len(), MAX_DIAGNOSTICS_PER_FILE + 1);
        let last = big.last().map(|diagnostic| (diagnostic.code, diagnostic.message.clone(), diagnostic.is_error()));
        assert_eq!(last.as_ref().map(|last| last.0), Some(OMITTED_DIAGNOSTICS_CODE));
        assert!(last.as_ref().is_some_and(|last| last.1.starts_with("and 7 more diagnostics") && last.2));
        assert_eq!(bounded.iter().filter(|diagnostic| diagnostic.code == "b").count(), 3);
        assert_eq!(bound_per_file(bounded.clone()), bounded);
    }
}
