//! People: durable, reviewed collaborators declared in a workspace (`people/<id>.json`),
//! their role bindings (`people/bindings.yaml`), the reviewed one-way import of
//! `munder-difflin/hire@1` files and the resolution of swarm roles to People.
//!
//! Owns the `agent-toolkit/person@1` and `agent-toolkit/people-bindings@1` contracts and
//! every rule of their validation. It is pure: the driver hands it file bytes (and the
//! symlinks it refused to follow), and it returns values, findings and output bytes. It
//! never reads the disk, starts a process or infers runtime activity from a declaration.
//! Findings never carry a value, key or control byte from a file: their messages are
//! static text, located by file, line, column and the schema rule's JSON pointer.
//!
//! The hardened JSON and YAML readers it parses with are the composition engine's
//! (`acompose_engine::strict`); it adds no salsa query and no reader of its own.
//!
//! The workspace is small (hundreds of files of at most 64 KiB) and every command reads
//! it once, so these are plain functions rather than salsa queries.

#![deny(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

pub mod contract;
pub mod document;
pub mod finding;
pub mod hire;
pub mod model;
pub mod recipe;
pub mod report;
pub mod resolve;
pub mod roster_role;
pub mod runner;
pub mod schema;
pub mod session;
pub mod session_report;
pub mod start;
pub mod swarm;
pub mod toolkit_lock;
pub mod usage;
pub mod workspace;

pub use acompose_engine::Diagnostic;
pub use acompose_engine::OutputFile;
pub use acompose_engine::strict::{MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, Position, Tree, json, tree, yaml};
pub use model::{Avatar, Bindings, Budget, ImportSource, Isolation, Person, RoleBinding};
pub use workspace::{Roster, SourceFile, Validation, WorkspaceFiles};

/// The spec string of one Person file.
pub(crate) const PERSON_SPEC: &str = "agent-toolkit/person@1";
/// The spec string of `people/bindings.yaml`.
pub const BINDINGS_SPEC: &str = "agent-toolkit/people-bindings@1";
/// The spec string of an importable hire file.
pub(crate) const HIRE_SPEC: &str = "munder-difflin/hire@1";
/// The spec string of a swarm recipe as `acompose people resolve` reads it.
pub const RECIPE_SPEC: &str = "acompose/people-recipe@1";

/// The longest id, role or other slug.
pub(crate) const MAX_SLUG_LENGTH: usize = 64;
/// The longest reference (definition id, provider, model, skill, …).
pub(crate) const MAX_REFERENCE_LENGTH: usize = 128;
/// The most entries in a reference list.
pub(crate) const MAX_REFERENCES: usize = 32;
/// The largest `budget.max_tokens` person@1 accepts.
pub(crate) const MAX_TOKENS_CEILING: u64 = 1_000_000_000;

/// Whether `text` is a slug as ids and roles spell it: `^[a-z0-9][a-z0-9_-]*$`, at most
/// 64 characters.
pub fn is_slug(text: &str) -> bool {
    let mut bytes = text.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    text.len() <= MAX_SLUG_LENGTH
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && bytes.all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-')
}

/// Whether `text` is a reference: `^[a-zA-Z0-9][a-zA-Z0-9._:/-]*$`, at most 128
/// characters.
pub(crate) fn is_reference(text: &str) -> bool {
    let mut bytes = text.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    text.len() <= MAX_REFERENCE_LENGTH
        && first.is_ascii_alphanumeric()
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b':' | b'/' | b'-'))
}

/// Turns free text into a slug: ASCII letters and digits lowercased, every other run of
/// characters one `-`, trimmed, at most 64 characters. Empty when nothing is left.
pub(crate) fn slugify(text: &str) -> String {
    let mut slug = String::new();
    let mut pending_separator = false;
    for character in text.chars() {
        if character.is_ascii_alphanumeric() {
            if pending_separator && !slug.is_empty() {
                slug.push('-');
            }
            pending_separator = false;
            slug.push(character.to_ascii_lowercase());
        } else {
            pending_separator = true;
        }
        if slug.len() >= MAX_SLUG_LENGTH {
            break;
        }
    }
    slug.truncate(MAX_SLUG_LENGTH);
    while slug.ends_with('-') {
        slug.pop();
    }
    slug
}

/// Makes a name from outside (a file name, a command-line value) safe to print: ASCII
/// graphic characters and spaces are kept, anything else becomes `?`.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|character| if character.is_ascii_graphic() || character == ' ' { character } else { '?' })
        .collect()
}

/// Makes a value from a file safe to print in a review: control characters (escape
/// sequences included), line separators and bidirectional controls become U+FFFD,
/// everything else is kept (the engine's one escaping, `diagnostic::sanitize`).
pub(crate) fn displayable(text: &str) -> String {
    acompose_engine::diagnostic::sanitize(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_id_pattern() {
        assert!(is_slug("alice"));
        assert!(is_slug("0-a_b"));
        assert!(!is_slug(""));
        assert!(!is_slug("Alice"));
        assert!(!is_slug("-alice"));
        assert!(!is_slug("alice\n"));
        assert!(!is_slug("al.ice"));
        assert!(!is_slug(&"a".repeat(65)));
        assert!(is_slug(&"a".repeat(64)));
    }

    #[test]
    fn references_follow_the_reference_pattern() {
        assert!(is_reference("anthropic"));
        assert!(is_reference("https://example.invalid/agents/reviewer"));
        assert!(is_reference("claude-sonnet-4.5"));
        assert!(!is_reference(".hidden"));
        assert!(!is_reference("with space"));
        assert!(!is_reference(&"a".repeat(129)));
    }

    #[test]
    fn slugify_keeps_letters_and_digits_and_joins_the_rest() {
        assert_eq!(slugify("Regional Manager (Scranton)"), "regional-manager-scranton");
        assert_eq!(slugify("  --QA & Test--  "), "qa-test");
        assert_eq!(slugify("日本"), "");
        assert_eq!(slugify(&"ab ".repeat(40)).len(), 64);
        assert!(is_slug(&slugify(&"ab ".repeat(40))));
    }

    #[test]
    fn printable_hides_control_and_non_ascii_characters() {
        assert_eq!(printable("a\u{1b}[31mb"), "a?[31mb");
        assert_eq!(printable("café.json"), "caf?.json");
    }
}
