//! A scan of KDL v2's strings and comments that runs before the KDL parser, so that a
//! file whose strings cannot close is refused in one pass instead of through the
//! parser's error recovery.

/// Why a file's strings or comments are refused before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BrokenLexeme {
    /// A string opened at this offset runs to the end of the file.
    UnclosedString(usize),
    /// A block comment opened at this offset runs to the end of the file.
    UnclosedComment(usize),
    /// A single-line string opened at `start` meets a line break at `end` before it closes.
    LineBreakInString { start: usize, end: usize },
    /// The `"""` at this offset is not followed by a line break.
    MultiLineOpener(usize),
}

/// The first string or block comment that cannot be closed, found by a scan of KDL v2's
/// strings and comments (not a parse). The KDL parser's error recovery from such strings
/// grows much faster than the file: a fuzzed 860-byte `roles.kdl` of unclosed `"""`
/// strings made it report ~480,000 errors in seconds. The scan refuses only what the
/// grammar refuses too, and reads each byte once.
pub(super) fn broken_lexeme(text: &str) -> Option<BrokenLexeme> {
    scan(text.as_bytes()).err()
}

fn scan(bytes: &[u8]) -> Result<(), BrokenLexeme> {
    let mut at = 0;
    while at < bytes.len() {
        at = match bytes[at] {
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                // A line comment ends at any KDL line break (NEL, LS and PS too).
                (at..bytes.len()).find(|&offset| line_break_length(bytes, offset) > 0).unwrap_or(bytes.len())
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => block_comment(bytes, at)?,
            b'"' => string(bytes, at, 0)?,
            b'#' => {
                let hashes = bytes[at..].iter().take_while(|&&byte| byte == b'#').count();
                if bytes.get(at + hashes) == Some(&b'"') { string(bytes, at + hashes, hashes)? } else { at + hashes }
            }
            _ => at + 1,
        };
    }
    Ok(())
}

/// An upper bound on the KDL nodes of a text, from one pass over its bytes: every
/// segment (after a line break, `;`, `{` or `}`) whose first byte outside whitespace,
/// line continuations, strings and comments starts something counts as one node. A node
/// always starts such a segment; a segment that continues a node (a wrapped line) is
/// counted too, so this never counts fewer. A string that cannot close ends the count
/// (the parse refuses such a file anyway).
pub(super) fn node_bound(bytes: &[u8]) -> usize {
    let mut count = 0;
    let mut fresh = true;
    let mut at = 0;
    while at < bytes.len() {
        let line_break = line_break_length(bytes, at);
        at = match bytes[at] {
            _ if line_break > 0 => {
                fresh = true;
                at + line_break
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                (at..bytes.len()).find(|&offset| line_break_length(bytes, offset) > 0).unwrap_or(bytes.len())
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => block_comment(bytes, at).unwrap_or(bytes.len()),
            b';' | b'{' | b'}' => {
                fresh = true;
                at + 1
            }
            b' ' | b'\t' | b'\\' => at + 1,
            byte => {
                count += usize::from(fresh);
                fresh = false;
                let hashes = bytes[at..].iter().take_while(|&&byte| byte == b'#').count();
                match (byte, bytes.get(at + hashes)) {
                    (b'"', _) => string(bytes, at, 0).unwrap_or(bytes.len()),
                    (b'#', Some(b'"')) => string(bytes, at + hashes, hashes).unwrap_or(bytes.len()),
                    _ => at + 1,
                }
            }
        };
    }
    count
}

/// The offset after the (nested) block comment that opens at `start`.
fn block_comment(bytes: &[u8], start: usize) -> Result<usize, BrokenLexeme> {
    let mut depth = 0usize;
    let mut at = start;
    while at + 1 < bytes.len() {
        match (bytes[at], bytes[at + 1]) {
            (b'/', b'*') => {
                depth += 1;
                at += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                at += 2;
                if depth == 0 {
                    return Ok(at);
                }
            }
            _ => at += 1,
        }
    }
    Err(BrokenLexeme::UnclosedComment(start))
}

/// The offset after the string whose first `"` is at `quote`, raw when `hashes > 0`.
fn string(bytes: &[u8], quote: usize, hashes: usize) -> Result<usize, BrokenLexeme> {
    let opening = quote - hashes;
    let multi_line = bytes.get(quote + 1..quote + 3) == Some(b"\"\"");
    let body = if multi_line {
        let after = quote + 3;
        if line_break_length(bytes, after) == 0 {
            return Err(BrokenLexeme::MultiLineOpener(opening));
        }
        after
    } else {
        quote + 1
    };
    let closing_quotes = if multi_line { 3 } else { 1 };
    let mut at = body;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if hashes == 0 => {
                // An escape: one character, or whitespace and line breaks (a line
                // continuation inside the string).
                at += 1;
                let mut skipped = false;
                while at < bytes.len() {
                    let length = line_break_length(bytes, at).max(usize::from(matches!(bytes[at], b' ' | b'\t')));
                    if length == 0 {
                        break;
                    }
                    at += length;
                    skipped = true;
                }
                if !skipped {
                    at += 1;
                }
            }
            b'"' if bytes[at..].starts_with(&b"\"\"\""[..closing_quotes])
                && bytes[at + closing_quotes..].iter().take(hashes).filter(|&&byte| byte == b'#').count() == hashes =>
            {
                return Ok(at + closing_quotes + hashes);
            }
            b'\n' | b'\r' if !multi_line => return Err(BrokenLexeme::LineBreakInString { start: opening, end: at }),
            _ => at += 1,
        }
    }
    Err(BrokenLexeme::UnclosedString(opening))
}

/// The length of the KDL line break at `at` (CRLF, CR, LF, NEL, FF, LS, PS), or 0.
fn line_break_length(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at..).unwrap_or_default() {
        [b'\r', b'\n', ..] => 2,
        [b'\n' | b'\r' | 0x0c, ..] => 1,
        [0xc2, 0x85, ..] => 2,
        [0xe2, 0x80, 0xa8 | 0xa9, ..] => 3,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_bound_counts_nodes_and_never_fewer() {
        let cases = [
            ("", 0),
            ("a\nb\n", 2),
            ("a 1 2 key=\"x\ny\"\n", 1),
            ("roles {\n    role a\n    role b { use-repository x; use-repository y }\n}\n", 5),
            ("// note\n/* block\n comment */\na \"\"\"\n line\n line\n \"\"\"\n", 1),
            // A wrapped line counts again: an upper bound.
            ("a \\\n  b=1\n", 2),
            ("#\"raw { ; \"#\n", 1),
        ];
        for (text, nodes) in cases {
            assert_eq!(node_bound(text.as_bytes()), nodes, "{text:?}");
        }
    }

    #[test]
    fn valid_strings_and_comments_pass() {
        for text in [
            "a \"b\" c=\"d \\\" e\"\n",
            "a \"\"\nb \"#\" #true #null\n",
            "a #\"raw \" with quotes\"# ##\"x\"#y\"##\n",
            "a \"\"\"\n  body with \"\" and \" inside\n  \"\"\"\n",
            "a #\"\"\"\n  raw \"\"\" inside\n  \"\"\"#\n",
            "a \"line \\\n   continued\" // \" in a comment\n",
            "a \"line \\\r\n\r\n   continued\"\r\n",
            "/* outer /* \" inner */ still */ a /-b \"c\"\n",
            "a \"\"\"\r\n  crlf\r\n  \"\"\"\r\n",
            // A line comment ended by LINE SEPARATOR, then a multi-line string.
            "// note\u{2028}a \"\"\"\n  body \"\n  \"\"\"\n",
        ] {
            assert_eq!(broken_lexeme(text), None, "{text:?}");
        }
    }

    #[test]
    fn strings_and_comments_that_cannot_close_are_found() {
        assert_eq!(broken_lexeme("a \"b\nc\"\n"), Some(BrokenLexeme::LineBreakInString { start: 2, end: 4 }));
        assert_eq!(broken_lexeme("a \"b"), Some(BrokenLexeme::UnclosedString(2)));
        assert_eq!(broken_lexeme("a \"\"\"\nb\n"), Some(BrokenLexeme::UnclosedString(2)));
        assert_eq!(broken_lexeme("a \"\"\"b\"\"\"\n"), Some(BrokenLexeme::MultiLineOpener(2)));
        assert_eq!(broken_lexeme("a ##\"b\"# c\n"), Some(BrokenLexeme::LineBreakInString { start: 2, end: 10 }));
        assert_eq!(broken_lexeme("a #\"\"\"\nb \"\"\"\n"), Some(BrokenLexeme::UnclosedString(2)));
        assert_eq!(broken_lexeme("a /* b /* c */\n"), Some(BrokenLexeme::UnclosedComment(2)));
        assert_eq!(broken_lexeme("a \"b\\"), Some(BrokenLexeme::UnclosedString(2)));
    }
}
