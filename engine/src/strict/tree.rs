//! The value tree both hardened parsers produce: a `serde_json::Value` plus where each
//! value starts, keyed by its JSON pointer. Owns pointer escaping and line indexing; it
//! does not parse anything itself.

use std::collections::BTreeMap;

use serde_json::Value;

pub use crate::diagnostic::Position;

/// A parsed document and the start position of every value in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub value: Value,
    /// Instance JSON pointer → start of that value. Internal: the pointers contain keys
    /// from the file and are never printed.
    positions: BTreeMap<String, Position>,
    /// Member pointer → start of its key, for findings about a key.
    keys: BTreeMap<String, Position>,
}

impl Tree {
    pub fn new(value: Value, positions: BTreeMap<String, Position>) -> Self {
        Self { value, positions, keys: BTreeMap::new() }
    }

    pub(crate) fn with_keys(mut self, keys: BTreeMap<String, Position>) -> Self {
        self.keys = keys;
        self
    }

    /// Where the value at an instance JSON pointer starts.
    pub fn position(&self, pointer: &str) -> Option<Position> {
        self.positions.get(pointer).copied()
    }

    /// Where the key of the member at an instance JSON pointer starts, else its value.
    pub fn key_position(&self, pointer: &str) -> Option<Position> {
        self.keys.get(pointer).copied().or_else(|| self.position(pointer))
    }
}

/// Why a file could not be parsed: a stable code, a static message and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError {
    pub code: &'static str,
    pub message: &'static str,
    pub position: Option<Position>,
}

impl SyntaxError {
    pub fn new(code: &'static str, message: &'static str, position: Option<Position>) -> Self {
        Self { code, message, position }
    }

    pub fn too_large() -> Self {
        Self::new(crate::limits::PEOPLE_FILE.code, "file is larger than 64 KiB", None)
    }

    pub(crate) fn not_utf8() -> Self {
        Self::new("not-utf8", "file is not valid UTF-8", None)
    }
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/` (RFC 6901).
pub fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for character in token.chars() {
        match character {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            other => pointer.push(other),
        }
    }
}

/// Maps byte offsets of one text to positions without rescanning the text per lookup.
pub struct LineIndex<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(index, _)| index + 1));
        Self { text, line_starts }
    }

    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line_index = self.line_starts.partition_point(|start| *start <= offset).saturating_sub(1);
        let line_start = self.line_starts.get(line_index).copied().unwrap_or(0);
        let column = self.text.get(line_start..offset).map_or(0, |before| before.chars().count()) + 1;
        Position { line: line_index + 1, column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_tokens_are_escaped() {
        let mut pointer = String::new();
        push_token(&mut pointer, "a/b~c");
        push_token(&mut pointer, "0");
        assert_eq!(pointer, "/a~1b~0c/0");
    }

    #[test]
    fn line_index_counts_lines_and_characters() {
        let index = LineIndex::new("ab\nçd\n\nx");
        assert_eq!(index.position(0), Position { line: 1, column: 1 });
        assert_eq!(index.position(3), Position { line: 2, column: 1 });
        assert_eq!(index.position(5), Position { line: 2, column: 2 });
        assert_eq!(index.position(8), Position { line: 4, column: 1 });
        assert_eq!(index.position(999), Position { line: 4, column: 2 });
    }
}
