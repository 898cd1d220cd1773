//! A diagnostic's snippet, bounded: the lines around its span, a long line shown as a
//! window of [`WIDTH`] characters around the span with an ellipsis for what is cut, a
//! span of many lines cut to its first. miette draws it through [`SourceCode`] with the
//! file's real line numbers, so what it prints is the same as for the whole file when
//! every line is short, and never more than a few windows when one is not. Holds no
//! colour and no escaping of its own: the text it is given is already printable.

use std::ops::Range;

use acompose_driver::engine::diagnostic::LineIndex;
use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// The most characters of one line a snippet shows.
pub const WIDTH: usize = 120;
/// The characters kept before the span's start when a long line is windowed.
const LEAD: usize = 40;
/// The most lines a span may cover before it is cut to its first line.
const MAX_SPAN_LINES: usize = 6;
/// What stands for the cut part of a line.
const ELLIPSIS: &str = "…";

/// The lines around one span, windowed, and the span within them.
pub struct Snippet {
    name: String,
    text: String,
    /// The 0-based line of the file that the snippet's first line is.
    first_line: usize,
    /// The snippet's line (0-based, within the snippet) that holds the span's start, and
    /// the span start's byte column in the file's line, for miette's `line:column`.
    span_line: usize,
    span_column: usize,
    /// The span in the snippet's text.
    pub span: Range<usize>,
}

/// The byte range of `line` to show: the whole line when it has at most [`WIDTH`]
/// characters, else [`WIDTH`] characters from character `from`.
fn window(line: &str, from: usize) -> Range<usize> {
    if line.len() <= WIDTH || line.char_indices().nth(WIDTH).is_none() {
        return 0..line.len();
    }
    let mut boundaries = line.char_indices().map(|(index, _)| index).skip(from);
    let start = boundaries.next().unwrap_or(line.len());
    let end = boundaries.nth(WIDTH - 1).unwrap_or(line.len());
    start..end
}

/// The largest character boundary of `text` at or before `offset`.
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The smallest character boundary of `text` at or after `offset` (its length past it).
fn ceil_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset += 1;
    }
    offset
}

impl Snippet {
    /// The snippet of `span` (byte offsets) in `text`, a file's printable text indexed by
    /// `lines`, shown under `name`.
    pub fn new(name: &str, text: &str, lines: &LineIndex, span: Range<usize>) -> Snippet {
        let start = floor_boundary(text, span.start);
        let mut end = ceil_boundary(text, span.end).max(start);
        let first = lines.line_of(start);
        let mut last = lines.line_of(if end > start { end - 1 } else { start });
        if last - first >= MAX_SPAN_LINES {
            last = first;
            end = lines.line_range(text, first).end.max(start);
        }
        let line_start = lines.line_range(text, first).start;
        // Long lines show the same columns, so the span's lines stay aligned.
        let from = text[line_start..start].chars().count().saturating_sub(LEAD);
        let context_first = first.saturating_sub(1);
        let context_last = (last + 1).min(lines.line_count().saturating_sub(1)).max(last);
        let mut shown = String::new();
        let mut label = 0..0;
        for line in context_first..=context_last {
            let range = lines.line_range(text, line);
            let line_text = &text[range.clone()];
            let cut = window(line_text, from);
            if cut.start > 0 {
                shown.push_str(ELLIPSIS);
            }
            let base = shown.len();
            shown.push_str(&line_text[cut.clone()]);
            let in_window = |offset: usize| base + (offset - range.start).clamp(cut.start, cut.end) - cut.start;
            if line == first {
                label.start = in_window(start.clamp(range.start, range.end));
            }
            if line == last {
                label.end = in_window(end.clamp(range.start, range.end)).max(label.start);
            }
            if cut.end < line_text.len() {
                shown.push_str(ELLIPSIS);
            }
            // Each line keeps its line break, as miette would see it in the whole file.
            if range.end < text.len() {
                shown.push('\n');
            }
        }
        Snippet {
            name: name.to_owned(),
            text: shown,
            first_line: context_first,
            span_line: first - context_first,
            span_column: start - line_start,
            span: label,
        }
    }
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self.text.as_str().read_span(span, context_lines_before, context_lines_after)?;
        // The span's own line read without context gives miette its `line:column`: the
        // column in the file, not in the window.
        let column =
            if context_lines_before == 0 && inner.line() == self.span_line { self.span_column } else { inner.column() };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            inner.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snippet(text: &str, span: Range<usize>) -> Snippet {
        Snippet::new("f", text, &LineIndex::new(text), span)
    }

    #[test]
    fn short_lines_are_shown_whole_with_one_line_of_context() {
        let text = "one\ntwo three\nfour\nfive\n";
        let shown = snippet(text, 8..13);
        assert_eq!(shown.text, "one\ntwo three\nfour\n");
        assert_eq!(&shown.text[shown.span.clone()], "three");
        assert_eq!((shown.first_line, shown.span_line, shown.span_column), (0, 1, 4));
    }

    #[test]
    fn a_long_line_is_a_window_around_the_span() {
        let line = format!("{}TARGET{}", "a".repeat(10_000_000), "b".repeat(10_000_000));
        let text = format!("before\n{line}\nafter");
        let start = 7 + 10_000_000;
        let shown = snippet(&text, start..start + 6);
        assert!(shown.text.len() < 3 * WIDTH * 4, "{}", shown.text.len());
        assert_eq!(&shown.text[shown.span.clone()], "TARGET");
        assert!(shown.text.contains(&format!("…{}TARGET", "a".repeat(LEAD))), "{}", shown.text);
        assert!(shown.text.ends_with("…\nafter"));
        assert_eq!(shown.span_column, 10_000_000);
    }

    #[test]
    fn a_span_over_a_long_line_is_cut_to_the_window() {
        let text = format!("key \"{}\"\n", "x".repeat(15 << 20));
        let shown = snippet(&text, 4..text.len() - 1);
        assert!(shown.span.len() <= WIDTH, "{}", shown.span.len());
        assert!(shown.text.len() < 2 * WIDTH + 1);
    }

    #[test]
    fn a_span_of_many_lines_is_cut_to_its_first() {
        let text: String = (0..1000).map(|index| format!("line {index}\n")).collect();
        let shown = snippet(&text, 7..text.len());
        assert_eq!(shown.text, "line 0\nline 1\nline 2\n");
        assert_eq!(&shown.text[shown.span.clone()], "line 1");
    }

    #[test]
    fn spans_past_the_end_or_inside_a_character_are_clamped() {
        let text = "é\n";
        let shown = snippet(text, 1..99);
        assert_eq!(&shown.text[shown.span.clone()], "é");
        let shown = snippet(text, 0..1);
        assert_eq!(&shown.text[shown.span.clone()], "é");
        let shown = snippet("", 5..9);
        assert_eq!(shown.span, 0..0);
    }
}
