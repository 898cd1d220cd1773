//! `SKILL.md` files: frontmatter, title, paragraphs, word counts and digests. Owns the
//! reading of one skill document; it does not decide which rules apply to which skill.

use crate::diagnostic::{Diagnostic, Parsed, Span};

/// What a skill document says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SkillDocument {
    /// The frontmatter `name:` value, when present.
    pub name: Option<String>,
    pub name_span: Option<Span>,
    /// The frontmatter `description:` value, when present.
    pub description: Option<String>,
    /// The `# Title` line's text, when the body starts with one.
    pub title: Option<String>,
    /// Where the body after the frontmatter starts, in bytes: the document keeps no copy
    /// of its text (a catalogue holds thousands of them); [`SkillDocument::body`] reads it
    /// from the file's bytes.
    pub body_start: usize,
    /// Paragraphs after the leading title.
    pub paragraphs: usize,
    /// Whitespace-separated words after the leading title.
    pub words: usize,
    /// Whether the whole file is empty or only whitespace.
    pub empty: bool,
}

impl SkillDocument {
    /// The body after the frontmatter, as written, from the bytes this document was
    /// parsed from; empty when the document is empty or not UTF-8.
    pub fn body<'a>(&self, bytes: &'a [u8]) -> &'a str {
        if self.empty {
            return "";
        }
        std::str::from_utf8(bytes).ok().and_then(|text| text.get(self.body_start..)).unwrap_or_default()
    }
}

/// The document of a skill file's bytes; `path` labels diagnostics.
pub(crate) fn document_of(bytes: &[u8], path: &str) -> Parsed<SkillDocument> {
    if let Some(too_large) = crate::limits::SKILL_DOCUMENT.check(bytes.len(), path) {
        return Parsed::new(SkillDocument::default(), vec![too_large]);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_skill(text, path),
        Err(error) => Parsed::new(
            SkillDocument::default(),
            vec![
                Diagnostic::error("invalid-utf8", "file is not valid UTF-8")
                    .in_file(path)
                    .at(Some(Span::new(error.valid_up_to(), 1)))
                    .hint("save the file as UTF-8"),
            ],
        ),
    }
}

/// Parses skill text; `path` labels diagnostics.
pub fn parse_skill(text: &str, path: &str) -> Parsed<SkillDocument> {
    let mut document = SkillDocument { empty: text.trim().is_empty(), ..SkillDocument::default() };
    let mut diagnostics = Vec::new();
    if document.empty {
        return Parsed::new(document, diagnostics);
    }
    let body_start = match frontmatter_bounds(text) {
        Some((start, end, body_start)) => {
            let block = &text[start..end];
            let mut offset = start;
            for line in block.split_inclusive('\n') {
                let content = line.trim_end_matches(['\n', '\r']);
                if let Some((key, value)) = content.split_once(':') {
                    let key = key.trim();
                    let value = unquote(value.trim());
                    let span = Some(Span::new(offset, content.len()));
                    match key {
                        "name" => {
                            document.name = Some(value);
                            document.name_span = span;
                        }
                        "description" => document.description = Some(value),
                        _ => {}
                    }
                } else if !content.trim().is_empty() && !content.starts_with([' ', '\t', '-', '#']) {
                    diagnostics.push(
                        Diagnostic::error("skill-frontmatter-malformed", "frontmatter line is not `key: value`")
                            .in_file(path)
                            .at(Some(Span::new(offset, content.len())))
                            .hint("write frontmatter as `name: <skill-id>` and `description: <one line>`"),
                    );
                }
                offset += line.len();
            }
            body_start
        }
        None => {
            if text.starts_with("---") {
                diagnostics.push(
                    Diagnostic::error("skill-frontmatter-malformed", "frontmatter is not closed by a `---` line")
                        .in_file(path)
                        .at(Some(Span::new(0, 3)))
                        .hint("end the frontmatter block with a line holding only `---`"),
                );
            }
            0
        }
    };
    let body = &text[body_start..];
    document.body_start = body_start;
    let mut rest = body.trim_start();
    if let Some(after_hash) = rest.strip_prefix("# ") {
        let (title, remainder) = after_hash.split_once('\n').unwrap_or((after_hash, ""));
        document.title = Some(title.trim().to_owned());
        rest = remainder;
    }
    document.paragraphs = count_paragraphs(rest);
    document.words = count_words(rest);
    Parsed::new(document, diagnostics)
}

/// Counts blank-line separated blocks of non-blank lines.
pub(crate) fn count_paragraphs(text: &str) -> usize {
    let mut count = 0;
    let mut inside = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            inside = false;
        } else if !inside {
            inside = true;
            count += 1;
        }
    }
    count
}

/// Finds `---\n…\n---` at the start: (block start, block end, body start).
fn frontmatter_bounds(text: &str) -> Option<(usize, usize, usize)> {
    let first_line_end = text.find('\n')?;
    if text[..first_line_end].trim_end_matches('\r') != "---" {
        return None;
    }
    let start = first_line_end + 1;
    let mut offset = start;
    for line in text[start..].split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']) == "---" {
            return Some((start, offset, offset + line.len()));
        }
        offset += line.len();
    }
    None
}

fn unquote(value: &str) -> String {
    let stripped = value
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|inner| inner.strip_suffix('\'')));
    stripped.unwrap_or(value).to_owned()
}

/// The digest of one file's bytes with CRLF folded to LF, as lowercase hex.
pub(crate) fn content_digest(bytes: &[u8]) -> String {
    let mut hasher = blake3::Hasher::new();
    hash_folded(&mut hasher, bytes);
    hasher.finalize().to_hex().to_string()
}

/// Feeds bytes to a hasher with every CRLF folded to LF.
pub(crate) fn hash_folded(hasher: &mut blake3::Hasher, bytes: &[u8]) {
    let mut start = 0;
    for cr in crlf_positions(bytes) {
        hasher.update(&bytes[start..cr]);
        start = cr + 1;
    }
    hasher.update(&bytes[start..]);
}

/// The positions of the `\r` of every CRLF in `bytes`, found by searching for `\r` (most
/// files have none, and the search is word-at-a-time).
pub(crate) fn crlf_positions(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(offset) = bytes.get(from..).and_then(|rest| rest.iter().position(|&byte| byte == b'\r')) {
            let cr = from + offset;
            from = cr + 1;
            if bytes.get(cr + 1) == Some(&b'\n') {
                return Some(cr);
            }
        }
        None
    })
}

/// The number of words of `text`, as `split_whitespace` counts them; ASCII text is
/// counted byte by byte.
pub(crate) fn count_words(text: &str) -> usize {
    if !text.is_ascii() {
        return text.split_whitespace().count();
    }
    let mut words = 0;
    let mut inside = false;
    for &byte in text.as_bytes() {
        // The ASCII characters `char::is_whitespace` accepts.
        let space = matches!(byte, b'\t'..=b'\r' | b' ');
        words += usize::from(!space && !inside);
        inside = !space;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_paragraphs_after_title() {
        let parsed =
            parse_skill("---\nname: role-x\ndescription: d\n---\n\n# Title\n\none two\nthree\n\nfour\n\n\nfive\n", "x");
        assert_eq!(parsed.value.name.as_deref(), Some("role-x"));
        assert_eq!(parsed.value.title.as_deref(), Some("Title"));
        assert_eq!(parsed.value.paragraphs, 3);
        assert_eq!(parsed.value.words, 5);
        assert!(parsed.diagnostics.is_empty());
    }

    #[test]
    fn words_and_folding_agree_with_the_plain_definitions() {
        let texts = [
            "",
            " ",
            "one",
            " one  two\tthree\nfour\r\nfive\x0bsix\x0cseven ",
            "ünïcode words\u{a0}here",
            "a\r\r\nb\rc\n\r",
        ];
        for text in texts {
            assert_eq!(count_words(text), text.split_whitespace().count(), "{text:?}");
            let plain: Vec<usize> =
                text.as_bytes().windows(2).enumerate().filter(|(_, pair)| pair == b"\r\n").map(|(at, _)| at).collect();
            assert_eq!(crlf_positions(text.as_bytes()).collect::<Vec<_>>(), plain, "{text:?}");
            let mut folded = blake3::Hasher::new();
            hash_folded(&mut folded, text.as_bytes());
            assert_eq!(folded.finalize(), blake3::hash(text.replace("\r\n", "\n").as_bytes()), "{text:?}");
        }
    }

    #[test]
    fn crlf_folds_to_the_same_digest() {
        assert_eq!(content_digest(b"a\r\nb\r\n"), content_digest(b"a\nb\n"));
        assert_ne!(content_digest(b"a\rb"), content_digest(b"a\nb"));
    }
}
