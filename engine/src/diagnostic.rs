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

/// Replaces control characters so a value from a user file can be quoted safely.
pub fn sanitize(value: &str) -> String {
    value.chars().map(|character| if character.is_control() { '\u{fffd}' } else { character }).collect()
}

/// [`sanitize`] for text of several lines: keeps `\n`, replaces every other control.
pub fn sanitize_lines(value: &str) -> String {
    value.split('\n').map(sanitize).collect::<Vec<_>>().join("\n")
}

/// A file's text made safe to print as a snippet, with every byte offset unchanged: each
/// control character except `\n` is replaced by a printable one of the same UTF-8 length
/// (tab and carriage return by a space, other C0 controls and DEL by `?`, C1 controls by
/// `¿`), so spans computed on the original text stay valid.
pub fn snippet_safe(text: &str) -> String {
    text.chars()
        .map(|character| match character {
            '\n' => '\n',
            '\t' | '\r' => ' ',
            '\u{0}'..='\u{1f}' | '\u{7f}' => '?',
            '\u{80}'..='\u{9f}' => '\u{bf}',
            other => other,
        })
        .collect()
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
