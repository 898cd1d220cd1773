//! KDL text to a small typed node tree with byte spans. Owns parsing and syntax errors;
//! it does not know what any node means (that is `person`).

mod lexeme;

use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Parsed, Span};
use lexeme::BrokenLexeme;

/// A KDL value, reduced to what the roster grammar uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    String(String),
    Integer(i128),
    /// A float kept as its text so the tree stays `Eq`.
    Float(String),
    Bool(bool),
    Null,
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Integer(_) => "integer",
            Value::Float(_) => "float",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Argument {
    pub value: Value,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Property {
    pub name: String,
    pub value: Value,
    pub span: Span,
}

/// One KDL node: its name, positional arguments, properties and children, with spans.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Node {
    pub name: String,
    pub span: Span,
    pub name_span: Span,
    pub arguments: Vec<Argument>,
    pub properties: Vec<Property>,
    pub children: Vec<Node>,
}

impl Node {
    pub fn property(&self, name: &str) -> Option<&Property> {
        self.properties.iter().rev().find(|property| property.name == name)
    }
}

/// A parsed KDL file: its top-level nodes (empty when the text does not parse).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Document {
    pub nodes: Vec<Node>,
}

/// Parses one source file as KDL v2. Never fails: syntax errors become diagnostics.
#[salsa::tracked(returns(ref))]
pub fn kdl_document(db: &dyn salsa::Database, file: SourceFile) -> Parsed<Document> {
    let path = file.display_path(db);
    let text = match std::str::from_utf8(file.bytes(db)) {
        Ok(text) => text,
        Err(error) => {
            let diagnostic = Diagnostic::error("invalid-utf8", "file is not valid UTF-8")
                .in_file(path)
                .at(Some(Span::new(error.valid_up_to(), 1)))
                .hint("save the file as UTF-8");
            return Parsed::new(Document::default(), vec![diagnostic]);
        }
    };
    parse_text(text, &path)
}

/// The deepest `{` nesting a file may have. The KDL parser recurses per level, so a
/// hostile file could otherwise exhaust the stack; no roster file comes close.
pub(crate) const MAX_NESTING: usize = 128;

/// The deepest nesting of slashdashed children blocks (`/-{ … }` inside `/-{ … }`). The
/// KDL parser's work doubles (or worse) with each such level: a 243-byte file of 27 of
/// them ran for minutes (found by the `roles_kdl` fuzz target). Commenting out a block
/// inside a commented-out block inside another is as deep as a real file goes.
pub(crate) const MAX_SLASHDASH_NESTING: usize = 4;

/// Why a file is refused before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TooDeep {
    Braces(usize),
    Slashdash(usize),
}

/// The first offset where `{` nesting exceeds [`MAX_NESTING`], or slashdashed children
/// blocks nest deeper than [`MAX_SLASHDASH_NESTING`]. Braces inside strings and comments
/// count too: this is a conservative bound, not a parse.
fn too_deep(text: &str) -> Option<TooDeep> {
    // One entry per open `{`: whether it opened a slashdashed children block.
    let mut open: Vec<bool> = Vec::new();
    let mut slashdashed = 0usize;
    let mut pending_slashdash = false;
    let bytes = text.as_bytes();
    for (offset, &byte) in bytes.iter().enumerate() {
        match byte {
            b'{' => {
                open.push(pending_slashdash);
                slashdashed += usize::from(pending_slashdash);
                if open.len() > MAX_NESTING {
                    return Some(TooDeep::Braces(offset));
                }
                if slashdashed > MAX_SLASHDASH_NESTING {
                    return Some(TooDeep::Slashdash(offset));
                }
            }
            b'}' => slashdashed -= usize::from(open.pop() == Some(true)),
            _ => {}
        }
        // A `{` counts as slashdashed when a `/-` came earlier in the same node: since the
        // last line break, `;` or `}` (blocks the parser may try more than one way).
        pending_slashdash = match byte {
            b'-' if offset > 0 && bytes[offset - 1] == b'/' => true,
            b'\n' | b'\r' | b';' | b'}' => false,
            _ => pending_slashdash,
        };
    }
    None
}

/// An upper bound on the nodes of a KDL text, from one pass over it before any parse:
/// what a count limit of nodes checks (see `limits::ROLES_KDL_NODES`).
pub fn node_bound(bytes: &[u8]) -> usize {
    lexeme::node_bound(bytes)
}

/// Parses KDL text; `path` is only used to label diagnostics.
pub fn parse_text(text: &str, path: &str) -> Parsed<Document> {
    if let Some(too_deep) = too_deep(text) {
        let (offset, message) = match too_deep {
            TooDeep::Braces(offset) => (offset, format!("`{{` blocks nest more than {MAX_NESTING} levels deep")),
            TooDeep::Slashdash(offset) => {
                (offset, format!("slashdashed `/-{{` blocks nest more than {MAX_SLASHDASH_NESTING} levels deep"))
            }
        };
        let diagnostic = Diagnostic::error("kdl-too-deep", message)
            .in_file(path)
            .at(Some(Span::new(offset, 1)))
            .hint("flatten the document; roster files need only a few levels");
        return Parsed::new(Document::default(), vec![diagnostic]);
    }
    if let Some(broken) = lexeme::broken_lexeme(text) {
        return Parsed::new(Document::default(), vec![broken_lexeme_diagnostic(broken, path)]);
    }
    match kdl::KdlDocument::parse_v2(text) {
        Ok(document) => {
            Parsed::new(Document { nodes: document.nodes().iter().map(convert_node).collect() }, Vec::new())
        }
        Err(error) => {
            let mut diagnostics: Vec<Diagnostic> = error
                .diagnostics
                .iter()
                .map(|inner| {
                    let message = inner.message.clone().unwrap_or_else(|| "invalid KDL".to_owned());
                    let mut diagnostic =
                        Diagnostic::error("kdl-syntax", format!("invalid KDL: {}", first_lowercase(&message)))
                            .in_file(path)
                            .at(Some(clamp_span(text, inner.span.offset(), inner.span.len())));
                    if let Some(help) = &inner.help {
                        diagnostic = diagnostic.hint(help.clone());
                    }
                    diagnostic.hint("the roster grammar is KDL v2: strings are quoted, `#true`/`#false` are booleans")
                })
                .collect();
            if diagnostics.is_empty() {
                diagnostics
                    .push(Diagnostic::error("kdl-syntax", "invalid KDL").in_file(path).at(Some(Span::new(0, 0))));
            }
            // The KDL parser may report one mistake several times at the same place.
            diagnostics.dedup_by(|a, b| a.span == b.span && a.message == b.message);
            Parsed::new(Document::default(), diagnostics)
        }
    }
}

fn broken_lexeme_diagnostic(broken: BrokenLexeme, path: &str) -> Diagnostic {
    let (span, message, hint) = match broken {
        BrokenLexeme::UnclosedString(offset) => (
            Span::new(offset, 1),
            "the string that starts here is never closed",
            "close it with `\"` on the same line; a multi-line string ends with `\"\"\"` on a line of its own",
        ),
        BrokenLexeme::UnclosedComment(offset) => {
            (Span::new(offset, 2), "the block comment that starts here is never closed", "close it with `*/`")
        }
        BrokenLexeme::LineBreakInString { start, end } => (
            Span::new(start, end - start),
            "the string that starts here meets a line break before its closing quote",
            "close it on the same line, or use a multi-line string (`\"\"\"` and a line break)",
        ),
        BrokenLexeme::MultiLineOpener(offset) => (
            Span::new(offset, 3),
            "a multi-line string's opening `\"\"\"` must be followed by a line break",
            "start the text on the next line, or use a single-line string (`\"…\"`)",
        ),
    };
    Diagnostic::error("kdl-syntax", format!("invalid KDL: {message}"))
        .in_file(path)
        .at(Some(span))
        .hint(hint)
        .hint("the roster grammar is KDL v2: strings are quoted, `#true`/`#false` are booleans")
}

fn first_lowercase(message: &str) -> String {
    let mut characters = message.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect::<String>().trim_end_matches('.').to_owned(),
        None => String::new(),
    }
}

fn clamp_span(text: &str, offset: usize, length: usize) -> Span {
    let offset = offset.min(text.len());
    let length = length.min(text.len() - offset);
    Span::new(offset, length)
}

fn span_of(span: miette::SourceSpan) -> Span {
    Span::new(span.offset(), span.len())
}

fn convert_value(value: &kdl::KdlValue) -> Value {
    match value {
        kdl::KdlValue::String(text) => Value::String(text.clone()),
        kdl::KdlValue::Integer(number) => Value::Integer(*number),
        kdl::KdlValue::Float(number) => Value::Float(number.to_string()),
        kdl::KdlValue::Bool(flag) => Value::Bool(*flag),
        kdl::KdlValue::Null => Value::Null,
    }
}

fn convert_node(node: &kdl::KdlNode) -> Node {
    let mut arguments = Vec::new();
    let mut properties = Vec::new();
    for entry in node.entries() {
        let value = convert_value(entry.value());
        let span = span_of(entry.span());
        match entry.name() {
            Some(name) => properties.push(Property { name: name.value().to_owned(), value, span }),
            None => arguments.push(Argument { value, span }),
        }
    }
    let name_span = span_of(node.name().span());
    Node {
        name: node.name().value().to_owned(),
        span: span_of(node.span()),
        name_span,
        arguments,
        properties,
        children: node
            .children()
            .map(|children| children.nodes().iter().map(convert_node).collect())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_slashdashed_blocks_are_refused_before_parsing() {
        let nested = |levels: usize| "a /-{\n".repeat(levels) + &"}\n".repeat(levels);
        assert!(parse_text(&nested(MAX_SLASHDASH_NESTING), "f.kdl").diagnostics.is_empty());
        let parsed = parse_text(&nested(MAX_SLASHDASH_NESTING + 1), "f.kdl");
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].code, "kdl-too-deep");
        // Whatever stands between `/-` and `{` in the node does not hide a level.
        let spaced = "a /-b \\ * c {\n".repeat(MAX_SLASHDASH_NESTING + 1);
        assert_eq!(parse_text(&spaced, "f.kdl").diagnostics[0].code, "kdl-too-deep");
        // Plain blocks nest as deep as before.
        let plain = "a {\n".repeat(MAX_SLASHDASH_NESTING * 4) + &"}".repeat(MAX_SLASHDASH_NESTING * 4);
        assert!(parse_text(&plain, "f.kdl").diagnostics.is_empty());
    }

    /// The shape of a fuzzed `roles.kdl` whose broken strings made the KDL parser report
    /// thousands of errors per line (3,968 for these 69 bytes): refused with one diagnostic before parsing.
    #[test]
    fn broken_strings_are_refused_before_parsing() {
        let text = "\"\"\";/-{\"\"\"#\n/-{\"\"\"#;/-\"\"\"\n{\"\"\"\n;/-{\"\n/-{\"\"\";/-\"\"\"\n{{{{{{{{{{{{{{{{{{{\n";
        let parsed = parse_text(text, "roles.kdl");
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].code, "kdl-syntax");
        assert!(
            parsed.diagnostics[0].message.contains("never closed")
                || parsed.diagnostics[0].message.contains("line break")
        );
        // The same text with its strings closed still goes to the parser.
        assert!(parse_text("a \"\"\"\n  b\n  \"\"\"\n", "roles.kdl").diagnostics.is_empty());
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let text = format!("a {}{}", "{ b ".repeat(MAX_NESTING + 1), "}".repeat(MAX_NESTING + 1));
        let parsed = parse_text(&text, "x.kdl");
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].code, "kdl-too-deep");
        let shallow = format!("a {}{}", "{ b ".repeat(10), "}".repeat(10));
        assert!(parse_text(&shallow, "x.kdl").diagnostics.is_empty());
    }
}
