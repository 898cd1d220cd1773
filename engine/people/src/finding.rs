//! Findings: what is wrong with one People file, as the project's one problem type,
//! [`Diagnostic`]. The constructors here take the message as `&'static str` on purpose,
//! so no value, key or control byte read from a file can ever reach a report through
//! it; the file is located by path, line, column ([`Diagnostic::at_position`]) and the
//! JSON pointer of the schema rule that failed ([`Diagnostic::pointer`]).

use acompose_engine::Diagnostic;

use super::tree::SyntaxError;

/// An error in `file` (a workspace-relative path, made printable).
pub fn error(code: &'static str, file: &str, message: &'static str) -> Diagnostic {
    Diagnostic::error(code, message).in_file(super::printable(file))
}

/// A warning in `file`.
pub fn warning(code: &'static str, file: &str, message: &'static str) -> Diagnostic {
    Diagnostic::warning(code, message).in_file(super::printable(file))
}

/// The finding for a file that could not be parsed.
pub fn syntax(file: &str, error: SyntaxError) -> Diagnostic {
    self::error(error.code, file, error.message).at_position(error.position)
}

/// The finding the driver records for a symlink it refused to follow.
pub fn symlink_refused(path: &str) -> Diagnostic {
    error("symlink-refused", path, "symlinks are refused in a people workspace; nothing behind it was read")
        .hint("replace the link with the real file or folder")
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Diagnostic]) -> bool {
    findings.iter().any(Diagnostic::is_error)
}
