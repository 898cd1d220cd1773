//! The hardened YAML reader for `people/bindings.yaml`, YAML recipes and the host
//! configuration (`agent-compose.yaml`). It walks
//! yaml-rust2's event stream instead of loading a document, so it can refuse duplicate
//! keys, anchors and aliases (no alias bomb is ever expanded), tags, `.nan` and `.inf`
//! before building anything, under the same 64 KiB, depth and value limits as JSON.
//! Scalars follow the YAML 1.2 core schema. It does not apply any schema.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::tree::{Position, SyntaxError, Tree, push_token};
use super::{MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES};

/// Parses one YAML document under the hardened limits. An empty stream is `null`.
pub fn parse(bytes: &[u8]) -> Result<Tree, SyntaxError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(SyntaxError::too_large());
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(SyntaxError::not_utf8());
    };
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, marker) = match parser.next_token() {
            Ok(next) => next,
            Err(error) => {
                return Err(SyntaxError::new("yaml-syntax", "malformed YAML", Some(position_of(*error.marker()))));
            }
        };
        let position = position_of(marker);
        let finished = builder
            .event(event, position)
            .map_err(|kind| SyntaxError::new(kind.code(), kind.message(), Some(position)))?;
        if finished {
            break;
        }
    }
    let value = builder.root.take().unwrap_or(Value::Null);
    Ok(Tree::new(value, builder.positions).with_keys(builder.keys))
}

/// yaml-rust2 counts lines from 1 and columns from 0.
fn position_of(marker: Marker) -> Position {
    Position { line: marker.line(), column: marker.col() + 1 }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    DuplicateKey,
    Alias,
    Tag,
    ComplexKey,
    NonFinite,
    MultipleDocuments,
    TooDeep,
    TooManyNodes,
}

impl FailureKind {
    fn code(self) -> &'static str {
        match self {
            FailureKind::DuplicateKey => "duplicate-key",
            FailureKind::Alias => "yaml-anchor",
            FailureKind::Tag => "yaml-tag",
            FailureKind::ComplexKey => "yaml-complex-key",
            FailureKind::NonFinite => "non-finite-number",
            FailureKind::MultipleDocuments => "yaml-multiple-documents",
            FailureKind::TooDeep => "too-deep",
            FailureKind::TooManyNodes => "too-many-values",
        }
    }

    fn message(self) -> &'static str {
        match self {
            FailureKind::DuplicateKey => "a mapping repeats a key",
            FailureKind::Alias => "anchors and aliases are not allowed",
            FailureKind::Tag => "tags are not allowed",
            FailureKind::ComplexKey => "a mapping key must be a plain or quoted scalar",
            FailureKind::NonFinite => "number is not finite or is out of range",
            FailureKind::MultipleDocuments => "file holds more than one YAML document",
            FailureKind::TooDeep => "mappings and sequences nest deeper than 64 levels",
            FailureKind::TooManyNodes => "file holds more than 4096 values",
        }
    }
}

/// A container being built, with the pointer of the container itself.
enum Frame {
    Mapping { map: Map<String, Value>, keys: BTreeSet<String>, pending_key: Option<String>, pointer: String },
    Sequence { items: Vec<Value>, pointer: String },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Value>,
    documents: usize,
    nodes: usize,
    positions: BTreeMap<String, Position>,
    keys: BTreeMap<String, Position>,
}

impl Builder {
    /// Handles one event; returns whether the stream ended.
    fn event(&mut self, event: Event, position: Position) -> Result<bool, FailureKind> {
        match event {
            Event::StreamEnd => return Ok(true),
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(FailureKind::MultipleDocuments);
                }
            }
            Event::Alias(_) => return Err(FailureKind::Alias),
            Event::Scalar(text, style, anchor, tag) => {
                refuse_anchor_and_tag(anchor, tag.is_some())?;
                if let Some(Frame::Mapping { keys, pending_key, .. }) = self.stack.last_mut()
                    && pending_key.is_none()
                {
                    if !keys.insert(text.clone()) {
                        return Err(FailureKind::DuplicateKey);
                    }
                    *pending_key = Some(text);
                    let pointer = self.next_pointer();
                    self.keys.insert(pointer, position);
                    return Ok(false);
                }
                let value = match style {
                    TScalarStyle::Plain => plain_scalar(&text)?,
                    _ => Value::String(text),
                };
                let pointer = self.next_pointer();
                self.count(pointer, position)?;
                self.attach(value);
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) if self.expecting_key() => {
                refuse_anchor_and_tag(anchor, tag.is_some())?;
                return Err(FailureKind::ComplexKey);
            }
            Event::SequenceStart(anchor, tag) => {
                refuse_anchor_and_tag(anchor, tag.is_some())?;
                let pointer = self.open(position)?;
                self.stack.push(Frame::Sequence { items: Vec::new(), pointer });
            }
            Event::MappingStart(anchor, tag) => {
                refuse_anchor_and_tag(anchor, tag.is_some())?;
                let pointer = self.open(position)?;
                self.stack.push(Frame::Mapping { map: Map::new(), keys: BTreeSet::new(), pending_key: None, pointer });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match self.stack.pop() {
                    Some(Frame::Mapping { map, .. }) => Value::Object(map),
                    Some(Frame::Sequence { items, .. }) => Value::Array(items),
                    None => Value::Null,
                };
                self.attach(value);
            }
        }
        Ok(false)
    }

    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Mapping { pending_key: None, .. }))
    }

    /// Counts a container that starts here, checks the depth and returns its pointer.
    fn open(&mut self, position: Position) -> Result<String, FailureKind> {
        if self.stack.len() + 1 > MAX_DEPTH {
            return Err(FailureKind::TooDeep);
        }
        let pointer = self.next_pointer();
        self.count(pointer.clone(), position)?;
        Ok(pointer)
    }

    fn count(&mut self, pointer: String, position: Position) -> Result<(), FailureKind> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(FailureKind::TooManyNodes);
        }
        self.positions.insert(pointer, position);
        Ok(())
    }

    /// The pointer of the value that comes next in the current container.
    fn next_pointer(&self) -> String {
        match self.stack.last() {
            None => String::new(),
            Some(Frame::Mapping { pending_key, pointer, .. }) => {
                let mut pointer = pointer.clone();
                push_token(&mut pointer, pending_key.as_deref().unwrap_or(""));
                pointer
            }
            Some(Frame::Sequence { items, pointer }) => {
                let mut pointer = pointer.clone();
                push_token(&mut pointer, &items.len().to_string());
                pointer
            }
        }
    }

    fn attach(&mut self, value: Value) {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Mapping { map, pending_key, .. }) => {
                let key = pending_key.take().unwrap_or_default();
                map.insert(key, value);
            }
            Some(Frame::Sequence { items, .. }) => items.push(value),
        }
    }
}

fn refuse_anchor_and_tag(anchor: usize, tagged: bool) -> Result<(), FailureKind> {
    // yaml-rust2 numbers anchors from 1; 0 means the node has none.
    if anchor != 0 {
        return Err(FailureKind::Alias);
    }
    if tagged {
        return Err(FailureKind::Tag);
    }
    Ok(())
}

/// Resolves a plain scalar with the YAML 1.2 core schema.
fn plain_scalar(text: &str) -> Result<Value, FailureKind> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Err(FailureKind::NonFinite);
    }
    if let Some(octal) = text.strip_prefix("0o").filter(|digits| is_digits(digits, 8)) {
        return u64::from_str_radix(octal, 8)
            .map(|value| Value::Number(Number::from(value)))
            .map_err(|_| FailureKind::NonFinite);
    }
    if let Some(hex) = text.strip_prefix("0x").filter(|digits| is_digits(digits, 16)) {
        return u64::from_str_radix(hex, 16)
            .map(|value| Value::Number(Number::from(value)))
            .map_err(|_| FailureKind::NonFinite);
    }
    if is_digits(unsigned, 10) {
        if let Ok(value) = text.parse::<i64>() {
            return Ok(Value::Number(Number::from(value)));
        }
        if let Ok(value) = text.parse::<u64>() {
            return Ok(Value::Number(Number::from(value)));
        }
        return finite(text);
    }
    if is_core_float(unsigned) {
        return finite(text);
    }
    Ok(Value::String(text.to_owned()))
}

fn finite(text: &str) -> Result<Value, FailureKind> {
    text.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number).ok_or(FailureKind::NonFinite)
}

fn is_digits(text: &str, radix: u32) -> bool {
    !text.is_empty() && text.chars().all(|character| character.is_digit(radix))
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` without the sign.
fn is_core_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(index) => (text.get(..index).unwrap_or(""), Some(text.get(index + 1..).unwrap_or(""))),
        None => (text, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => is_digits(fraction, 10),
        Some((whole, fraction)) => is_digits(whole, 10) && (fraction.is_empty() || is_digits(fraction, 10)),
        None => is_digits(mantissa, 10),
    };
    let exponent_ok =
        exponent.is_none_or(|exponent| is_digits(exponent.strip_prefix(['+', '-']).unwrap_or(exponent), 10));
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn code_of(text: &str) -> &'static str {
        match parse(text.as_bytes()) {
            Ok(_) => "ok",
            Err(error) => error.code,
        }
    }

    fn value_of(text: &str) -> Value {
        parse(text.as_bytes()).map(|tree| tree.value).unwrap_or_else(|error| panic!("{error:?}"))
    }

    #[test]
    fn reads_bindings_shaped_documents() {
        let tree = parse(b"spec: agent-toolkit/people-bindings@1\nroles:\n  reviewer:\n    person_id: alice\n    preferred_people: [bob, \"carol\"]\n")
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(
            tree.value,
            json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"reviewer": {"person_id": "alice", "preferred_people": ["bob", "carol"]}}})
        );
        assert_eq!(tree.position("/roles/reviewer/person_id"), Some(Position { line: 4, column: 16 }));
        assert_eq!(tree.position("/roles/reviewer/preferred_people/1"), Some(Position { line: 5, column: 29 }));
        assert_eq!(tree.key_position("/roles/reviewer/person_id"), Some(Position { line: 4, column: 5 }));
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        assert_eq!(
            value_of("[~, null, true, False, 12, -3, 0x1f, 0o17, 1.5, .5, 1e3, '12', yes, 1.2.3]"),
            json!([null, null, true, false, 12, -3, 31, 15, 1.5, 0.5, 1000.0, "12", "yes", "1.2.3"])
        );
        assert_eq!(value_of(""), Value::Null);
    }

    #[test]
    fn non_finite_numbers_are_rejected() {
        for text in ["a: .nan", "a: .NaN", "a: .inf", "a: -.Inf", "a: +.INF", "a: 1e9999"] {
            assert_eq!(code_of(text), "non-finite-number", "{text}");
        }
        assert_eq!(value_of("a: '.nan'"), json!({"a": ".nan"}));
    }

    #[test]
    fn duplicate_keys_anchors_aliases_and_tags_are_rejected() {
        assert_eq!(code_of("a: 1\na: 2\n"), "duplicate-key");
        assert_eq!(code_of("a: {b: 1, b: 1}"), "duplicate-key");
        assert_eq!(code_of("a: &x 1\nb: *x\n"), "yaml-anchor");
        assert_eq!(code_of("a: &x [1]\n"), "yaml-anchor");
        assert_eq!(code_of("a: !!str 1\n"), "yaml-tag");
        assert_eq!(code_of("? [a]\n: 1\n"), "yaml-complex-key");
        assert_eq!(code_of("a: 1\n---\nb: 2\n"), "yaml-multiple-documents");
    }

    #[test]
    fn an_alias_bomb_stops_at_its_first_anchor() {
        let mut bomb =
            String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for (index, name) in ["b", "c", "d", "e", "f", "g", "h", "i"].iter().enumerate() {
            let previous = ["a", "b", "c", "d", "e", "f", "g", "h"].get(index).copied().unwrap_or("a");
            bomb.push_str(&format!("{name}: &{name} [*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous}]\n"));
        }
        let error = parse(bomb.as_bytes()).err();
        assert_eq!(
            error.map(|error| (error.code, error.position.map(|position| position.line))),
            Some(("yaml-anchor", Some(1)))
        );
    }

    proptest::proptest! {
        #[test]
        fn yaml_shaped_text_never_panics(text in "[-:\\[\\]{}&*!|>'\"#?,% \n\ta-z0-9.~]{0,200}") {
            let _ = parse(text.as_bytes());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = parse(&bytes);
        }
    }

    #[test]
    fn limits_apply_as_for_json() {
        let deep = format!("{}1{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(code_of(&deep), "too-deep");
        let at_limit = format!("{}1{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(code_of(&at_limit), "ok");
        let many = format!("[{}]", vec!["0"; 4096].join(","));
        assert_eq!(code_of(&many), "too-many-values");
        assert_eq!(code_of("a: [1, 2"), "yaml-syntax");
        assert_eq!(parse(b"a: \xff").err().map(|error| error.code), Some("not-utf8"));
    }
}
