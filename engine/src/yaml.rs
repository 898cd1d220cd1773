//! A strict reader for the small YAML files acompose accepts (the host configuration):
//! scalars, sequences and mappings with spans. Anchors, aliases, tags, duplicate keys
//! and non-finite numbers are refused, so no document can expand or hide a value.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::diagnostic::{Diagnostic, Parsed, Span};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Yaml {
    /// A scalar with its text and whether it was quoted.
    Scalar {
        text: String,
        quoted: bool,
        span: Span,
    },
    Sequence {
        items: Vec<Yaml>,
        span: Span,
    },
    Mapping {
        entries: Vec<(String, Span, Yaml)>,
        span: Span,
    },
    /// An empty document.
    Empty,
}

impl Yaml {
    pub fn span(&self) -> Span {
        match self {
            Yaml::Scalar { span, .. } | Yaml::Sequence { span, .. } | Yaml::Mapping { span, .. } => *span,
            Yaml::Empty => Span::new(0, 0),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Yaml::Scalar { .. } => "a scalar",
            Yaml::Sequence { .. } => "a list",
            Yaml::Mapping { .. } => "a mapping",
            Yaml::Empty => "nothing",
        }
    }
}

enum Frame {
    Sequence(Vec<Yaml>, Span),
    Mapping(Vec<(String, Span, Yaml)>, Option<(String, Span)>, Span),
}

struct Builder<'a> {
    text: &'a str,
    path: &'a str,
    stack: Vec<Frame>,
    root: Option<Yaml>,
    diagnostics: Vec<Diagnostic>,
    documents: usize,
}

/// Byte offset of a marker, computed from its line and column (the column counts
/// characters).
fn offset_of(text: &str, marker: &Marker) -> usize {
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if index + 1 == marker.line() {
            let column: usize = line.chars().take(marker.col()).map(char::len_utf8).sum();
            return offset + column;
        }
        offset += line.len();
    }
    text.len()
}

impl Builder<'_> {
    fn report(&mut self, code: &'static str, marker: &Marker, message: &str, hint: &str) {
        let offset = offset_of(self.text, marker);
        self.diagnostics
            .push(Diagnostic::error(code, message).in_file(self.path).at(Some(Span::new(offset, 0))).hint(hint));
    }

    fn push_value(&mut self, value: Yaml) {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Sequence(items, _)) => items.push(value),
            Some(Frame::Mapping(entries, pending, _)) => match pending.take() {
                Some((key, span)) => entries.push((key, span, value)),
                None => match value {
                    Yaml::Scalar { text, span, .. } => {
                        if entries.iter().any(|(existing, _, _)| *existing == text) {
                            self.diagnostics.push(
                                Diagnostic::error("yaml-duplicate-key", "a key appears twice in one mapping")
                                    .in_file(self.path)
                                    .at(Some(span))
                                    .hint("keep one of the two entries"),
                            );
                        }
                        *pending = Some((text, span));
                    }
                    other => {
                        self.diagnostics.push(
                            Diagnostic::error("yaml-complex-key", "mapping keys must be plain scalars")
                                .in_file(self.path)
                                .at(Some(other.span()))
                                .hint("write `key: value`"),
                        );
                        *pending = Some((String::new(), other.span()));
                    }
                },
            },
        }
    }
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, event: Event, marker: Marker) {
        let offset = offset_of(self.text, &marker);
        match event {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.report(
                        "yaml-multiple-documents",
                        &marker,
                        "the file holds more than one YAML document",
                        "keep one document",
                    );
                }
            }
            Event::Alias(_) => {
                self.report("yaml-alias", &marker, "YAML aliases are not accepted", "write the value out in full");
            }
            Event::Scalar(text, style, anchor, tag) => {
                if anchor != 0 {
                    self.report("yaml-anchor", &marker, "YAML anchors are not accepted", "remove the `&anchor`");
                }
                if tag.is_some() {
                    self.report("yaml-tag", &marker, "YAML tags are not accepted", "remove the `!tag`");
                }
                let quoted = style != TScalarStyle::Plain;
                if !quoted {
                    let lowered = text.to_ascii_lowercase();
                    if matches!(lowered.trim_start_matches(['+', '-']), ".nan" | ".inf") {
                        self.report(
                            "yaml-non-finite",
                            &marker,
                            "`.nan` and `.inf` are not accepted",
                            "write a finite number",
                        );
                    }
                }
                let length = text.len();
                self.push_value(Yaml::Scalar { text, quoted, span: Span::new(offset, length.max(1)) });
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if anchor != 0 {
                    self.report("yaml-anchor", &marker, "YAML anchors are not accepted", "remove the `&anchor`");
                }
                if tag.is_some() {
                    self.report("yaml-tag", &marker, "YAML tags are not accepted", "remove the `!tag`");
                }
                let span = Span::new(offset, 0);
                if matches!(event, Event::SequenceStart(..)) {
                    self.stack.push(Frame::Sequence(Vec::new(), span));
                } else {
                    self.stack.push(Frame::Mapping(Vec::new(), None, span));
                }
            }
            Event::SequenceEnd => {
                if let Some(Frame::Sequence(items, span)) = self.stack.pop() {
                    self.push_value(Yaml::Sequence { items, span });
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Mapping(entries, _, span)) = self.stack.pop() {
                    self.push_value(Yaml::Mapping { entries, span });
                }
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
    }
}

/// Parses YAML text strictly. Never fails: problems become diagnostics.
pub fn parse(text: &str, path: &str) -> Parsed<Yaml> {
    let mut builder = Builder { text, path, stack: Vec::new(), root: None, diagnostics: Vec::new(), documents: 0 };
    let mut parser = Parser::new_from_str(text);
    if let Err(error) = parser.load(&mut builder, true) {
        let offset = offset_of(text, error.marker());
        builder.diagnostics.push(
            Diagnostic::error("yaml-syntax", format!("invalid YAML: {}", error.info()))
                .in_file(path)
                .at(Some(Span::new(offset, 0)))
                .hint("check the indentation and the `key: value` form"),
        );
        return Parsed::new(Yaml::Empty, builder.diagnostics);
    }
    Parsed::new(builder.root.unwrap_or(Yaml::Empty), builder.diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<&'static str> {
        parse(text, "x.yaml").diagnostics.iter().map(|diagnostic| diagnostic.code).collect()
    }

    #[test]
    fn reads_a_mapping_with_a_list() {
        let parsed = parse("a: b\nlist:\n  - one\n  - \"two\"\n", "x.yaml");
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let Yaml::Mapping { entries, .. } = parsed.value else { panic!("mapping expected") };
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].0, "list");
    }

    #[test]
    fn refuses_duplicates_aliases_anchors_and_non_finite_numbers() {
        assert_eq!(codes("a: 1\na: 2\n"), ["yaml-duplicate-key"]);
        assert!(codes("a: &x [1]\nb: *x\n").contains(&"yaml-alias"));
        assert!(codes("a: &x [1]\n").contains(&"yaml-anchor"));
        assert_eq!(codes("a: .nan\n"), ["yaml-non-finite"]);
        assert_eq!(codes("a: -.inf\n"), ["yaml-non-finite"]);
        assert!(codes("a: '.nan'\n").is_empty());
        assert_eq!(codes("a: [\n"), ["yaml-syntax"]);
    }

    #[test]
    fn points_at_the_duplicate_line() {
        let text = "first: 1\nsecond: 2\nfirst: 3\n";
        let parsed = parse(text, "x.yaml");
        let span = parsed.diagnostics[0].span.expect("span");
        assert_eq!(crate::diagnostic::line_column(text, span.offset), (3, 1));
    }
}
