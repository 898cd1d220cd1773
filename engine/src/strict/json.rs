//! The hardened JSON parser every People file goes through. Unlike `serde_json` it
//! rejects duplicate keys (serde_json keeps the last silently), names NaN, Infinity and
//! numbers that overflow to infinity (`1e9999`) as their own error, and stops at 64 KiB,
//! 64 levels of nesting and 4096 values before building anything larger. It does not
//! apply any schema.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};

use super::tree::{LineIndex, SyntaxError, Tree, push_token};
use super::{MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES};

/// Parses one JSON document under the hardened limits.
pub fn parse(bytes: &[u8]) -> Result<Tree, SyntaxError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(SyntaxError::too_large());
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(SyntaxError::not_utf8());
    };
    let lines = LineIndex::new(text);
    let mut parser = Parser {
        text,
        bytes,
        offset: 0,
        nodes: 0,
        pointer: String::new(),
        offsets: BTreeMap::new(),
        key_offsets: BTreeMap::new(),
    };
    let parsed = parser.document();
    match parsed {
        Ok(value) => {
            let locate = |offsets: BTreeMap<String, usize>| {
                offsets
                    .into_iter()
                    .map(|(pointer, offset)| (pointer, lines.position(offset)))
                    .collect::<BTreeMap<_, _>>()
            };
            Ok(Tree::new(value, locate(parser.offsets)).with_keys(locate(parser.key_offsets)))
        }
        Err(failure) => {
            Err(SyntaxError::new(failure.kind.code(), failure.kind.message(), Some(lines.position(failure.offset))))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    Syntax,
    DuplicateKey,
    NonFinite,
    TooDeep,
    TooManyNodes,
}

impl FailureKind {
    fn code(self) -> &'static str {
        match self {
            FailureKind::Syntax => "json-syntax",
            FailureKind::DuplicateKey => "duplicate-key",
            FailureKind::NonFinite => "non-finite-number",
            FailureKind::TooDeep => "too-deep",
            FailureKind::TooManyNodes => "too-many-values",
        }
    }

    fn message(self) -> &'static str {
        match self {
            FailureKind::Syntax => "malformed JSON",
            FailureKind::DuplicateKey => "an object repeats a key",
            FailureKind::NonFinite => "number is not finite or is out of range",
            FailureKind::TooDeep => "objects and arrays nest deeper than 64 levels",
            FailureKind::TooManyNodes => "file holds more than 4096 values",
        }
    }
}

struct Failure {
    kind: FailureKind,
    offset: usize,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    offset: usize,
    nodes: usize,
    /// The JSON pointer of the value being parsed.
    pointer: String,
    offsets: BTreeMap<String, usize>,
    /// The JSON pointer of each object member → where its key starts.
    key_offsets: BTreeMap<String, usize>,
}

impl Parser<'_> {
    fn fail<T>(&self, kind: FailureKind, offset: usize) -> Result<T, Failure> {
        Err(Failure { kind, offset })
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.offset).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.offset += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Failure> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.offset += 1;
            Ok(())
        } else {
            self.fail(FailureKind::Syntax, self.offset)
        }
    }

    fn document(&mut self) -> Result<Value, Failure> {
        let value = self.value(0)?;
        self.skip_whitespace();
        if self.offset != self.bytes.len() {
            return self.fail(FailureKind::Syntax, self.offset);
        }
        Ok(value)
    }

    /// Parses one value; `depth` is the number of containers around it.
    fn value(&mut self, depth: usize) -> Result<Value, Failure> {
        self.skip_whitespace();
        let start = self.offset;
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return self.fail(FailureKind::TooManyNodes, start);
        }
        self.offsets.insert(self.pointer.clone(), start);
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'N') if self.rest().starts_with("NaN") => self.fail(FailureKind::NonFinite, start),
            Some(b'I') if self.rest().starts_with("Infinity") => self.fail(FailureKind::NonFinite, start),
            Some(b'-') if self.rest().starts_with("-Infinity") => self.fail(FailureKind::NonFinite, start),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.fail(FailureKind::Syntax, start),
        }
    }

    fn rest(&self) -> &str {
        self.text.get(self.offset..).unwrap_or("")
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, Failure> {
        if self.rest().starts_with(word) {
            self.offset += word.len();
            Ok(value)
        } else {
            self.fail(FailureKind::Syntax, self.offset)
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Failure> {
        if depth > MAX_DEPTH {
            return self.fail(FailureKind::TooDeep, self.offset);
        }
        self.offset += 1;
        let mut map = Map::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.offset += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_whitespace();
            let key_offset = self.offset;
            if self.peek() != Some(b'"') {
                return self.fail(FailureKind::Syntax, key_offset);
            }
            let key = self.string()?;
            if map.contains_key(&key) {
                return self.fail(FailureKind::DuplicateKey, key_offset);
            }
            self.expect(b':')?;
            let parent_length = self.pointer.len();
            push_token(&mut self.pointer, &key);
            self.key_offsets.insert(self.pointer.clone(), key_offset);
            let value = self.value(depth)?;
            self.pointer.truncate(parent_length);
            map.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.offset += 1,
                Some(b'}') => {
                    self.offset += 1;
                    return Ok(Value::Object(map));
                }
                _ => return self.fail(FailureKind::Syntax, self.offset),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Failure> {
        if depth > MAX_DEPTH {
            return self.fail(FailureKind::TooDeep, self.offset);
        }
        self.offset += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.offset += 1;
            return Ok(Value::Array(items));
        }
        loop {
            let parent_length = self.pointer.len();
            push_token(&mut self.pointer, &items.len().to_string());
            let value = self.value(depth)?;
            self.pointer.truncate(parent_length);
            items.push(value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.offset += 1,
                Some(b']') => {
                    self.offset += 1;
                    return Ok(Value::Array(items));
                }
                _ => return self.fail(FailureKind::Syntax, self.offset),
            }
        }
    }

    /// Parses a string starting at the opening quote.
    fn string(&mut self) -> Result<String, Failure> {
        self.offset += 1;
        let mut text = String::new();
        loop {
            let run_start = self.offset;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.offset += 1;
            }
            // The run stops only at ASCII bytes, so both ends are character boundaries.
            text.push_str(self.text.get(run_start..self.offset).unwrap_or(""));
            match self.peek() {
                Some(b'"') => {
                    self.offset += 1;
                    return Ok(text);
                }
                Some(b'\\') => {
                    let escape_offset = self.offset;
                    self.offset += 1;
                    let escaped = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.offset += 1;
                            let character = self.unicode_escape(escape_offset)?;
                            text.push(character);
                            continue;
                        }
                        _ => return self.fail(FailureKind::Syntax, escape_offset),
                    };
                    self.offset += 1;
                    text.push(escaped);
                }
                // A raw control byte inside a string, or the end of the input.
                _ => return self.fail(FailureKind::Syntax, self.offset),
            }
        }
    }

    /// Reads the four hex digits after `\u` (and a low surrogate after a high one).
    fn unicode_escape(&mut self, escape_offset: usize) -> Result<char, Failure> {
        let first = self.hex4(escape_offset)?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.rest().starts_with("\\u") {
                    return self.fail(FailureKind::Syntax, escape_offset);
                }
                self.offset += 2;
                let second = self.hex4(escape_offset)?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return self.fail(FailureKind::Syntax, escape_offset);
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return self.fail(FailureKind::Syntax, escape_offset),
            other => other,
        };
        match char::from_u32(code) {
            Some(character) => Ok(character),
            None => self.fail(FailureKind::Syntax, escape_offset),
        }
    }

    fn hex4(&mut self, escape_offset: usize) -> Result<u32, Failure> {
        let digits = self.bytes.get(self.offset..self.offset + 4);
        let Some(digits) = digits else {
            return self.fail(FailureKind::Syntax, escape_offset);
        };
        let mut code = 0;
        for digit in digits {
            let Some(value) = char::from(*digit).to_digit(16) else {
                return self.fail(FailureKind::Syntax, escape_offset);
            };
            code = code * 16 + value;
        }
        self.offset += 4;
        Ok(code)
    }

    fn digits(&mut self) -> usize {
        let start = self.offset;
        while let Some(b'0'..=b'9') = self.peek() {
            self.offset += 1;
        }
        self.offset - start
    }

    fn number(&mut self) -> Result<Value, Failure> {
        let start = self.offset;
        if self.peek() == Some(b'-') {
            self.offset += 1;
        }
        match self.peek() {
            Some(b'0') => self.offset += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.fail(FailureKind::Syntax, start),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.offset += 1;
            if self.digits() == 0 {
                return self.fail(FailureKind::Syntax, start);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            integral = false;
            self.offset += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.offset += 1;
            }
            if self.digits() == 0 {
                return self.fail(FailureKind::Syntax, start);
            }
        }
        let literal = self.text.get(start..self.offset).unwrap_or("");
        if integral {
            if let Ok(value) = literal.parse::<u64>() {
                return Ok(Value::Number(Number::from(value)));
            }
            if let Ok(value) = literal.parse::<i64>() {
                return Ok(Value::Number(Number::from(value)));
            }
        }
        let parsed = literal.parse::<f64>().ok().and_then(Number::from_f64);
        match parsed {
            Some(number) => Ok(Value::Number(number)),
            None => self.fail(FailureKind::NonFinite, start),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::strict::tree::Position;

    fn code_of(text: &str) -> &'static str {
        match parse(text.as_bytes()) {
            Ok(_) => "ok",
            Err(error) => error.code,
        }
    }

    #[test]
    fn parses_ordinary_documents_in_key_order() {
        let tree = parse(br#" {"b": [1, -2, 3.5, 1e3, true, null], "a": {"c": "\u00e9\ud83d\ude00\n"}} "#)
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(tree.value, json!({"b": [1, -2, 3.5, 1000.0, true, null], "a": {"c": "é😀\n"}}));
        let keys: Vec<&String> = tree.value.as_object().map(|map| map.keys().collect()).unwrap_or_default();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(tree.position("/a/c"), Some(Position { line: 1, column: 50 }));
        assert_eq!(tree.position("/b/2"), Some(Position { line: 1, column: 16 }));
        assert_eq!(tree.position(""), Some(Position { line: 1, column: 2 }));
        assert_eq!(tree.key_position("/a/c"), Some(Position { line: 1, column: 45 }));
    }

    #[test]
    fn duplicate_keys_are_rejected_where_the_second_key_starts() {
        let error = parse(b"{\n  \"a\": 1,\n  \"a\": 2\n}").err();
        assert_eq!(
            error.map(|error| (error.code, error.position)),
            Some(("duplicate-key", Some(Position { line: 3, column: 3 })))
        );
        assert_eq!(code_of(r#"{"a": {"b": 1, "b": 1}}"#), "duplicate-key");
        assert_eq!(code_of(r#"[{"a": 1}, {"a": 1}]"#), "ok");
    }

    #[test]
    fn non_finite_numbers_are_named() {
        assert_eq!(code_of(r#"{"n": NaN}"#), "non-finite-number");
        assert_eq!(code_of(r#"{"n": Infinity}"#), "non-finite-number");
        assert_eq!(code_of(r#"{"n": -Infinity}"#), "non-finite-number");
        assert_eq!(code_of(r#"{"n": 1e9999}"#), "non-finite-number");
        assert_eq!(code_of(r#"{"n": -1e9999}"#), "non-finite-number");
        assert_eq!(code_of(r#"{"n": 1e-9999}"#), "ok");
        assert_eq!(code_of(r#"{"n": 123456789012345678901234567890}"#), "ok");
    }

    #[test]
    fn malformed_documents_are_syntax_errors() {
        for text in [
            "",
            "{",
            "{\"a\" 1}",
            "{\"a\": 1,}",
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            "{} {}",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\u12\"",
            "\"a\u{1}b\"",
            "\"open",
            "{'a': 1}",
            "\u{feff}{}",
            "nan",
        ] {
            assert_eq!(code_of(text), "json-syntax", "{text:?}");
        }
    }

    #[test]
    fn nesting_is_limited_to_64_levels() {
        let at_limit = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(code_of(&at_limit), "ok");
        let over = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert_eq!(code_of(&over), "too-deep");
        let objects = format!("{}1{}", "{\"a\":".repeat(100), "}".repeat(100));
        assert_eq!(code_of(&objects), "too-deep");
    }

    #[test]
    fn values_are_limited_to_4096() {
        let at_limit = format!("[{}]", vec!["0"; 4095].join(","));
        assert_eq!(code_of(&at_limit), "ok");
        let over = format!("[{}]", vec!["0"; 4096].join(","));
        assert_eq!(code_of(&over), "too-many-values");
    }

    proptest::proptest! {
        #[test]
        fn json_shaped_text_never_panics(text in "[\\[\\]{}\":,0-9eE.+\\-a-zA-Z\\\\ \n]{0,200}") {
            let _ = parse(text.as_bytes());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = parse(&bytes);
        }
    }

    #[test]
    fn size_and_encoding_are_checked_first() {
        let large = format!("\"{}\"", "a".repeat(MAX_FILE_BYTES));
        assert_eq!(code_of(&large), "file-too-large");
        assert_eq!(parse(b"\"\xff\"").err().map(|error| error.code), Some("not-utf8"));
    }
}
