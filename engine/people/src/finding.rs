//! Findings: what is wrong with one People file, as a value. A finding's message is
//! `&'static str` on purpose, so no value, key or control byte read from a file can ever
//! reach a report through it; the file is located by path, line, column and the JSON
//! pointer of the schema rule that failed.

use acompose_engine::diagnostic::Severity;

use super::tree::{Position, SyntaxError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// A stable kebab-case name of the problem.
    pub code: &'static str,
    /// The workspace-relative path of the file, made printable by [`super::printable`].
    pub file: String,
    /// Where in the file, when known.
    pub position: Option<Position>,
    /// The JSON pointer of the schema rule (or of the schema field an extra rule guards).
    pub rule: Option<String>,
    /// A field name taken from the contract (never from the file), when it helps.
    pub field: Option<String>,
    pub message: &'static str,
    pub hint: Option<&'static str>,
}

impl Finding {
    pub fn error(code: &'static str, file: &str, message: &'static str) -> Self {
        Self {
            severity: Severity::Error,
            code,
            file: super::printable(file),
            position: None,
            rule: None,
            field: None,
            message,
            hint: None,
        }
    }

    pub fn warning(code: &'static str, file: &str, message: &'static str) -> Self {
        Self { severity: Severity::Warning, ..Self::error(code, file, message) }
    }

    /// The finding for a file that could not be parsed.
    pub fn syntax(file: &str, error: SyntaxError) -> Self {
        Self::error(error.code, file, error.message).at(error.position)
    }

    /// The finding the driver records for a symlink it refused to follow.
    pub fn symlink_refused(path: &str) -> Self {
        Self::error("symlink-refused", path, "symlinks are refused in a people workspace; nothing behind it was read")
            .hint("replace the link with the real file or folder")
    }

    pub fn at(mut self, position: Option<Position>) -> Self {
        self.position = position;
        self
    }

    pub fn rule(mut self, pointer: impl Into<String>) -> Self {
        self.rule = Some(pointer.into());
        self
    }

    pub fn field(mut self, name: impl Into<String>) -> Self {
        self.field = Some(name.into());
        self
    }

    pub fn hint(mut self, hint: &'static str) -> Self {
        self.hint = Some(hint);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(Finding::is_error)
}
