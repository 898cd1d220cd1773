//! Diagnostics: user-input problems as values. Owns their shape, not their rendering
//! (the cli renders them with miette).

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

/// One problem found in user input: a stable kebab-case `code`, the file it is in, where
/// in that file when known, a lowercase message and hints on how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub file: Option<String>,
    pub span: Option<Span>,
    pub message: String,
    pub hints: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self { severity: Severity::Error, code, file: None, span: None, message: message.into(), hints: Vec::new() }
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

/// The 1-based line and column of a byte offset, counting columns in characters.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let column = before.get(line_start..).map_or(0, |rest| rest.chars().count()) + 1;
    (line, column)
}

/// Replaces control characters so a value from a user file can be quoted safely.
pub fn sanitize(value: &str) -> String {
    value.chars().map(|character| if character.is_control() { '\u{fffd}' } else { character }).collect()
}
