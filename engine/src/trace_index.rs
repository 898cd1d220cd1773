//! The trace index (`trace.index`), a file of every bundle this version writes: where
//! each decision and provider report of `trace.json` lies, and the blake3 of
//! each 64 KiB block of it, so `describe --why` reads only the bytes it needs and checks
//! each one. Owns the file's text, its making (while the trace is serialized, or from a
//! trace's bytes) and its reading. Reads no file: the driver hands in bytes; `trace.json`
//! keeps its own format for every other reader.
//!
//! The text, one record a line, every line ending in `\n`:
//!
//! ```text
//! acompose.trace-index 1
//! trace <bytes> blake3:<hex>          (trace.json's size and digest)
//! block-size 65536
//! b blake3:<hex>                      (one per block of trace.json, in order)
//! d <offset> <length> "<subject>"     (one per decision, in trace order)
//! p <offset> <length> "<source>"      (one per provider report, in trace order)
//! ```
//!
//! Offsets and lengths are in bytes of `trace.json` and cover one JSON object from its `{`
//! to its `}`; subjects and sources are JSON strings as `serde_json` writes them.

use std::ops::Range;

use serde::Deserialize;

use crate::trace::{Decision, Places as _, ProviderReport};

/// The index's path in a bundle, beside `trace.json`.
pub const PATH: &str = "trace.index";
/// The first line's name and the one version this build writes and reads.
pub const FORMAT: &str = "acompose.trace-index";
pub const FORMAT_VERSION: u32 = 1;
/// The bytes of `trace.json` each block digest covers (the last block may be shorter).
pub const BLOCK_BYTES: u64 = 64 * 1024;

/// The decision and provider lines of an index, written as the trace is serialized.
#[derive(Debug, Default)]
pub(crate) struct IndexLines {
    decisions: Vec<u8>,
    providers: Vec<u8>,
}

impl crate::trace::Places for IndexLines {
    fn decision(&mut self, start: u64, length: u64, subject: &str) {
        line_start(&mut self.decisions, b'd', start, length);
        // Writing a string into memory cannot fail.
        let _ = serde_json::to_writer(&mut self.decisions, subject);
        self.decisions.push(b'\n');
    }

    fn skill(&mut self, start: u64, length: u64, name: &str) {
        line_start(&mut self.decisions, b'd', start, length);
        self.decisions.extend_from_slice(b"\"skill:");
        let _ = crate::trace::write_escaped(&mut self.decisions, name);
        self.decisions.extend_from_slice(b"\"\n");
    }

    fn provider(&mut self, start: u64, length: u64, source: &str) {
        line_start(&mut self.providers, b'p', start, length);
        let _ = serde_json::to_writer(&mut self.providers, source);
        self.providers.push(b'\n');
    }
}

fn line_start(text: &mut Vec<u8>, tag: u8, start: u64, length: u64) {
    text.push(tag);
    text.push(b' ');
    push_number(text, start);
    text.push(b' ');
    push_number(text, length);
    text.push(b' ');
}

fn push_number(text: &mut Vec<u8>, number: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    text.extend_from_slice(&digits[at..]);
}

/// Hashes `trace.json` as it is written: the whole file and each block.
pub(crate) struct TraceHasher {
    whole: blake3::Hasher,
    block: blake3::Hasher,
    in_block: u64,
    length: u64,
    blocks: Vec<blake3::Hash>,
}

/// What [`TraceHasher`] measured.
pub(crate) struct Measured {
    pub length: u64,
    pub digest: blake3::Hash,
    pub blocks: Vec<blake3::Hash>,
}

impl TraceHasher {
    pub(crate) fn new() -> Self {
        TraceHasher {
            whole: blake3::Hasher::new(),
            block: blake3::Hasher::new(),
            in_block: 0,
            length: 0,
            blocks: Vec::new(),
        }
    }

    pub(crate) fn finish(mut self) -> Measured {
        if self.in_block > 0 {
            self.blocks.push(self.block.finalize());
        }
        Measured { length: self.length, digest: self.whole.finalize(), blocks: self.blocks }
    }
}

impl std::io::Write for TraceHasher {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.whole.update(bytes);
        self.length += bytes.len() as u64;
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = usize::try_from(BLOCK_BYTES - self.in_block).unwrap_or(usize::MAX);
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.block.update(now);
            self.in_block += now.len() as u64;
            if self.in_block == BLOCK_BYTES {
                self.blocks.push(self.block.finalize());
                self.block.reset();
                self.in_block = 0;
            }
            rest = later;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The index's text from what was measured of `trace.json` and the lines written with it.
pub(crate) fn index_text(measured: &Measured, lines: &IndexLines) -> Vec<u8> {
    let mut text = Vec::with_capacity(128 + 72 * measured.blocks.len() + lines.decisions.len() + lines.providers.len());
    text.extend_from_slice(format!("{FORMAT} {FORMAT_VERSION}\ntrace ").as_bytes());
    push_number(&mut text, measured.length);
    text.extend_from_slice(format!(" blake3:{}\nblock-size {BLOCK_BYTES}\n", measured.digest.to_hex()).as_bytes());
    for block in &measured.blocks {
        text.extend_from_slice(format!("b blake3:{}\n", block.to_hex()).as_bytes());
    }
    text.extend_from_slice(&lines.decisions);
    text.extend_from_slice(&lines.providers);
    text
}

/// The index of a `trace.json` from its bytes, in any JSON layout (what `verify` compares
/// a bundle's index with); `None` when the bytes are not a trace's JSON.
pub fn index_of_trace(bytes: &[u8]) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Elements<'a> {
        #[serde(borrow)]
        decisions: Vec<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        providers: Vec<&'a serde_json::value::RawValue>,
    }
    #[derive(Deserialize)]
    struct Subject {
        subject: String,
    }
    #[derive(Deserialize)]
    struct Source {
        source: String,
    }
    let elements: Elements<'_> = serde_json::from_slice(bytes).ok()?;
    let base = bytes.as_ptr() as usize;
    let span = |raw: &serde_json::value::RawValue| {
        let text = raw.get();
        ((text.as_ptr() as usize - base) as u64, text.len() as u64)
    };
    let mut lines = IndexLines::default();
    for raw in elements.decisions {
        let (start, length) = span(raw);
        lines.decision(start, length, &serde_json::from_str::<Subject>(raw.get()).ok()?.subject);
    }
    for raw in elements.providers {
        let (start, length) = span(raw);
        lines.provider(start, length, &serde_json::from_str::<Source>(raw.get()).ok()?.source);
    }
    let mut hasher = TraceHasher::new();
    // Hashing into memory cannot fail.
    let _ = std::io::Write::write_all(&mut hasher, bytes);
    Some(index_text(&hasher.finish(), &lines))
}

/// The size and digest (`blake3:<hex>`) the manifest lists for the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub bytes: u64,
    pub digest: String,
}

/// How many bytes at the end of `manifest.json` hold its listing of the index: content
/// entries are sorted by path and are the manifest's last field, so the index's entry is
/// the one before `trace.json`'s, a few hundred bytes from the end.
pub const MANIFEST_TAIL: u64 = 4096;
/// How many bytes at the start of `manifest.json` name its format.
pub const MANIFEST_HEAD: u64 = FORMAT_LINES.len() as u64;

const FORMAT_LINES: &[u8] = b"{\n  \"format\": \"agent-compose.bundle\",\n  \"format_version\": 1,\n";

/// The size and digest `manifest.json` lists for the index, from the manifest's first
/// [`MANIFEST_HEAD`] and last [`MANIFEST_TAIL`] bytes, when it is written as acompose
/// writes manifests: `None` for any other manifest, and for a bundle written before the
/// index, which are read whole. The manifest is trusted as `describe` has always
/// trusted it; `verify` checks it against the bundle's id.
pub fn listed_index(head: &[u8], tail: &[u8]) -> Option<Listed> {
    if !head.starts_with(FORMAT_LINES) {
        return None;
    }
    let entry = format!("\n    {{\n      \"path\": \"{PATH}\",\n      \"bytes\": ");
    let at = memchr::memmem::rfind(tail, entry.as_bytes())?;
    let rest = &tail[at + entry.len()..];
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    let bytes = number_of(&rest[..digits])?;
    let digest = rest[digits..].strip_prefix(b",\n      \"digest\": \"")?;
    let digest = digest.get(..71).filter(|digest| is_digest(digest))?;
    Some(Listed { bytes, digest: String::from_utf8_lossy(digest).into_owned() })
}

/// Which file of the bundle a problem found through the index is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexedFile {
    Index,
    Trace,
}

impl IndexedFile {
    pub fn path(self) -> &'static str {
        match self {
            IndexedFile::Index => PATH,
            IndexedFile::Trace => crate::trace::FILE,
        }
    }
}

/// Why an answer could not be read through the index: the file at fault and what is
/// wrong, as a fragment to follow the file's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexProblem {
    pub file: IndexedFile,
    pub message: String,
}

fn index_problem(message: String) -> IndexProblem {
    IndexProblem { file: IndexedFile::Index, message }
}

fn trace_problem(message: String) -> IndexProblem {
    IndexProblem { file: IndexedFile::Trace, message }
}

/// Where one element lies in `trace.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub length: u64,
}

/// A read index, borrowing its text: the header and block lines are read; the `d` and
/// `p` lines are looked through when asked, and each line used is checked then.
#[derive(Debug)]
pub struct TraceIndex<'a> {
    trace_length: u64,
    blocks: Vec<&'a [u8]>,
    /// The `d` and `p` lines, each ending in a line break.
    entries: &'a [u8],
    /// The line number of the first of them.
    first_entry_line: usize,
}

/// What reading an index's text gave.
#[derive(Debug)]
pub enum ReadIndex<'a> {
    Read(TraceIndex<'a>),
    /// An index of another version: it says nothing this build can use.
    OtherVersion,
}

impl<'a> TraceIndex<'a> {
    /// Reads an index's header and block digests; its other lines are read when they
    /// are looked up.
    pub fn parse(text: &'a [u8]) -> Result<ReadIndex<'a>, IndexProblem> {
        let mut rest = text;
        let mut number = 0;
        let mut next = |what: &str| {
            number += 1;
            let end =
                memchr::memchr(b'\n', rest).ok_or_else(|| index_problem(format!("ends before its {what} line")))?;
            let line = &rest[..end];
            rest = &rest[end + 1..];
            Ok::<_, IndexProblem>((number, line))
        };
        let (_, first) = next("format")?;
        match first.strip_prefix(FORMAT.as_bytes()).and_then(|version| version.strip_prefix(b" ")) {
            Some(version) if version == FORMAT_VERSION.to_string().as_bytes() => {}
            Some(version) if !version.is_empty() && version.iter().all(u8::is_ascii_digit) => {
                return Ok(ReadIndex::OtherVersion);
            }
            _ => return Err(index_problem("is not a trace index: its first line names another format".to_owned())),
        }
        let (line, trace) = next("trace")?;
        let trace_length = trace
            .strip_prefix(b"trace ")
            .and_then(|fields| fields.split(|byte| *byte == b' ').next())
            .and_then(number_of)
            .ok_or_else(|| malformed(line))?;
        let (line, block_size) = next("block-size")?;
        if block_size != format!("block-size {BLOCK_BYTES}").as_bytes() {
            return Err(malformed(line));
        }
        let mut blocks = Vec::new();
        for _ in 0..trace_length.div_ceil(BLOCK_BYTES) {
            let (line, block) = next("block")?;
            blocks.push(block.strip_prefix(b"b ").filter(|digest| is_digest(digest)).ok_or_else(|| malformed(line))?);
        }
        let first_entry_line = number + 1;
        if !rest.is_empty() && !rest.ends_with(b"\n") {
            let lines = first_entry_line + memchr::memchr_iter(b'\n', rest).count();
            return Err(malformed(lines));
        }
        Ok(ReadIndex::Read(TraceIndex { trace_length, blocks, entries: rest, first_entry_line }))
    }

    /// `trace.json`'s size as the index records it.
    pub fn trace_length(&self) -> u64 {
        self.trace_length
    }

    /// The spans of the lines tagged `tag` about `name` (a subject or a source), in
    /// order. A line about it ends in ` "<name>"` and a line break (a raw line break is
    /// never inside a JSON string, and a quote inside one is always escaped), so every
    /// such line is found by that text; each is checked as it is found.
    fn spans_of(&self, tag: u8, name: &str) -> Result<Vec<Span>, IndexProblem> {
        let mut pattern = b" ".to_vec();
        pattern.extend_from_slice(&quote(name));
        pattern.push(b'\n');
        let mut spans = Vec::new();
        for found in memchr::memmem::find_iter(self.entries, &pattern) {
            let start = memchr::memrchr(b'\n', &self.entries[..found]).map_or(0, |end| end + 1);
            let line = &self.entries[start..found + pattern.len() - 1];
            let (line_tag, span) = self.entry(line).ok_or_else(|| self.malformed_at(start))?;
            if line_tag == tag {
                spans.push(span);
            }
        }
        Ok(spans)
    }

    /// One `d` or `p` line: its tag and span. `None` when the line is malformed or its
    /// span goes past the end of the trace.
    fn entry(&self, line: &[u8]) -> Option<(u8, Span)> {
        let mut fields = line.splitn(4, |byte| *byte == b' ');
        let tag = match fields.next()? {
            [tag @ (b'd' | b'p')] => *tag,
            _ => return None,
        };
        let start = number_of(fields.next()?)?;
        let length = number_of(fields.next()?)?;
        let quoted = fields.next()?;
        let inside = start.checked_add(length).is_some_and(|end| end <= self.trace_length);
        let is_string = quoted.len() >= 2 && quoted.starts_with(b"\"") && quoted.ends_with(b"\"");
        (inside && is_string).then_some((tag, Span { start, length }))
    }

    /// The problem of a malformed line starting at `offset` of the entries.
    fn malformed_at(&self, offset: usize) -> IndexProblem {
        malformed(self.first_entry_line + memchr::memchr_iter(b'\n', &self.entries[..offset]).count())
    }

    /// Every decision's subject, in trace order (what suggestions are drawn from); every
    /// line is checked.
    fn subjects(&self) -> Result<Vec<String>, IndexProblem> {
        let mut subjects = Vec::new();
        let mut offset = 0;
        for line in self.entries.split_inclusive(|byte| *byte == b'\n') {
            let text = &line[..line.len() - 1];
            let (tag, _) = self.entry(text).ok_or_else(|| self.malformed_at(offset))?;
            if tag == b'd' {
                let quoted = text.splitn(4, |byte| *byte == b' ').nth(3).unwrap_or_default();
                subjects.push(serde_json::from_slice::<String>(quoted).map_err(|_| self.malformed_at(offset))?);
            }
            offset += line.len();
        }
        Ok(subjects)
    }

    /// The whole blocks of `trace.json` that hold `span`: what to read to check it.
    pub fn blocks_holding(&self, span: Span) -> Range<u64> {
        let first = span.start / BLOCK_BYTES;
        let last = (span.start + span.length).div_ceil(BLOCK_BYTES).max(first + 1);
        first * BLOCK_BYTES..(last * BLOCK_BYTES).min(self.trace_length)
    }

    /// The bytes of `span` out of the blocks read for it (`read`, starting at
    /// `blocks.start`), each block checked against its digest.
    fn checked<'b>(&self, span: Span, blocks: Range<u64>, read: &'b [u8]) -> Result<&'b [u8], IndexProblem> {
        if read.len() as u64 != blocks.end - blocks.start {
            return Err(trace_problem(format!("ends before byte {} its index points at", blocks.end)));
        }
        let first = usize::try_from(blocks.start / BLOCK_BYTES).unwrap_or(usize::MAX);
        for (number, chunk) in read.chunks(BLOCK_BYTES as usize).enumerate() {
            let block = first + number;
            let recorded = self.blocks.get(block).copied().unwrap_or_default();
            if format!("blake3:{}", blake3::hash(chunk).to_hex()).as_bytes() != recorded {
                return Err(trace_problem(format!(
                    "differs from its index in bytes {}–{}",
                    block as u64 * BLOCK_BYTES,
                    block as u64 * BLOCK_BYTES + chunk.len() as u64
                )));
            }
        }
        let from = usize::try_from(span.start - blocks.start).unwrap_or(usize::MAX);
        let to = from.saturating_add(usize::try_from(span.length).unwrap_or(usize::MAX));
        read.get(from..to).ok_or_else(|| trace_problem("is shorter than its index says".to_owned()))
    }
}

fn malformed(line: usize) -> IndexProblem {
    index_problem(format!("is not a trace index: line {line} is malformed"))
}

fn number_of(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn is_digest(text: &[u8]) -> bool {
    text.strip_prefix(b"blake3:")
        .is_some_and(|hex| hex.len() == 64 && hex.iter().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')))
}

fn quote(text: &str) -> Vec<u8> {
    // Serializing a string into memory cannot fail.
    serde_json::to_vec(text).unwrap_or_default()
}

/// What `--why` needs of a trace, read through its index: the decisions about the item
/// (in trace order), the first provider report of each of their sources, or, for an item
/// the trace does not hold, every subject.
#[derive(Debug)]
pub enum Looked {
    Found { decisions: Vec<Decision>, providers: Vec<ProviderReport> },
    NotFound { subjects: Vec<String> },
}

/// Looks `item` up through the index; `read` returns the bytes of `trace.json` in a range
/// (the driver reads the file), and every byte used is checked against its block's digest.
pub fn look_up(
    index: &TraceIndex<'_>,
    item: &str,
    read: &mut dyn FnMut(Range<u64>) -> Result<Vec<u8>, String>,
) -> Result<Looked, IndexProblem> {
    let spans = index.spans_of(b'd', item)?;
    if spans.is_empty() {
        return index.subjects().map(|subjects| Looked::NotFound { subjects });
    }
    let mut decisions: Vec<Decision> = Vec::with_capacity(spans.len());
    for span in spans {
        let decision: Decision = element(index, span, read)?;
        if decision.subject != item {
            return Err(index_problem("points at a decision about another subject".to_owned()));
        }
        decisions.push(decision);
    }
    let mut providers: Vec<ProviderReport> = Vec::new();
    for decision in &decisions {
        if providers.iter().any(|provider| provider.source == decision.source) {
            continue;
        }
        if let Some(span) = index.spans_of(b'p', &decision.source)?.first().copied() {
            let provider: ProviderReport = element(index, span, read)?;
            if provider.source != decision.source {
                return Err(index_problem("points at the report of another provider".to_owned()));
            }
            providers.push(provider);
        }
    }
    Ok(Looked::Found { decisions, providers })
}

/// One element of the trace, read, checked and parsed.
fn element<T: serde::de::DeserializeOwned>(
    index: &TraceIndex<'_>,
    span: Span,
    read: &mut dyn FnMut(Range<u64>) -> Result<Vec<u8>, String>,
) -> Result<T, IndexProblem> {
    let blocks = index.blocks_holding(span);
    let bytes = read(blocks.clone()).map_err(trace_problem)?;
    let text = index.checked(span, blocks, &bytes)?;
    serde_json::from_slice(text).map_err(|_| {
        index_problem(format!(
            "points at bytes {}–{} of the trace, which hold no such element",
            span.start,
            span.start + span.length
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_hashed_across_write_boundaries() {
        let bytes: Vec<u8> = (0..(2 * BLOCK_BYTES + 17)).map(|index| (index % 251) as u8).collect();
        let mut whole = TraceHasher::new();
        std::io::Write::write_all(&mut whole, &bytes).unwrap();
        let mut pieces = TraceHasher::new();
        for piece in bytes.chunks(1000) {
            std::io::Write::write_all(&mut pieces, piece).unwrap();
        }
        let (whole, pieces) = (whole.finish(), pieces.finish());
        assert_eq!(whole.blocks.len(), 3);
        assert_eq!((whole.length, whole.digest, &whole.blocks), (pieces.length, pieces.digest, &pieces.blocks));
        assert_eq!(whole.blocks[2], blake3::hash(&bytes[2 * BLOCK_BYTES as usize..]));
        assert_eq!(whole.digest, blake3::hash(&bytes));
        assert!(TraceHasher::new().finish().blocks.is_empty());
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for number in [0, 7, 10, 65_536, u64::MAX] {
            let mut text = Vec::new();
            push_number(&mut text, number);
            assert_eq!(text, number.to_string().as_bytes());
        }
    }

    #[test]
    fn malformed_indexes_are_refused_with_their_line() {
        let good = "acompose.trace-index 1\ntrace 10 blake3:0000000000000000000000000000000000000000000000000000000000000000\nblock-size 65536\nb blake3:0000000000000000000000000000000000000000000000000000000000000000\nd 1 8 \"skill:a\"\n";
        let mut nothing = |_: Range<u64>| Err("not read".to_owned());
        let looked_up =
            |text: &str, nothing: &mut dyn FnMut(Range<u64>) -> Result<Vec<u8>, String>| match TraceIndex::parse(
                text.as_bytes(),
            )? {
                ReadIndex::Read(index) => look_up(&index, "skill:a", nothing).map(|_| ()),
                ReadIndex::OtherVersion => Ok(()),
            };
        // The good index reaches the trace, which this reader refuses to give.
        let refused = looked_up(good, &mut nothing).unwrap_err();
        assert_eq!(refused.file, IndexedFile::Trace, "{refused:?}");
        assert!(matches!(TraceIndex::parse(b"acompose.trace-index 2\n"), Ok(ReadIndex::OtherVersion)));
        for (bad, line) in [
            (good.replacen("d 1 8", "d 3 8", 1), "line 5"),
            (good.replacen("d 1 8", "x 1 8", 1), "line 5"),
            (good.replacen("d 1 8", "d 1 8 9", 1), "line 5"),
            (good.replacen("block-size 65536", "block-size 1", 1), "line 3"),
            (good.replacen("b blake3:0", "b blake3:g", 1), "line 4"),
            (good.replacen("trace 10", "trace x", 1), "line 2"),
            (format!("{good}d 1 1 \"x\""), "line 6"),
        ] {
            let problem = looked_up(&bad, &mut nothing).unwrap_err();
            assert!(problem.message.contains(line), "{bad}: {problem:?}");
            assert_eq!(problem.file, IndexedFile::Index);
        }
        assert!(TraceIndex::parse(b"not an index\n").is_err());
        assert!(TraceIndex::parse(b"acompose.trace-index 1\n").is_err(), "ends before its trace line");
    }

    fn index_like() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let digest = "b blake3:0000000000000000000000000000000000000000000000000000000000000000\n";
        let line = prop_oneof![
            (0u64..300, 0u64..300, "[a-z:\"\\\\ ]{0,6}")
                .prop_map(|(start, length, name)| format!("d {start} {length} \"{name}\"\n")),
            (0u64..300, 0u64..300, "[a-z:]{0,4}")
                .prop_map(|(start, length, name)| format!("p {start} {length} \"{name}\"\n")),
            Just(digest.to_owned()),
            "[ -~\n]{0,12}",
        ];
        (0u64..200_000, proptest::collection::vec(line, 0..12)).prop_map(move |(length, lines)| {
            let mut text = format!(
                "{FORMAT} {FORMAT_VERSION}\ntrace {length} blake3:{}\nblock-size {BLOCK_BYTES}\n",
                "0".repeat(64)
            );
            for _ in 0..length.div_ceil(BLOCK_BYTES) {
                text.push_str(digest);
            }
            text.push_str(&lines.concat());
            text.into_bytes()
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn no_index_text_panics(
            text in proptest::prop_oneof![index_like(), proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)],
            trace in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            item in "(skill|source):[a-z\"\\\\]{0,3}",
        ) {
            let _ = listed_index(&text, &text);
            let _ = index_of_trace(&trace);
            if let Ok(ReadIndex::Read(index)) = TraceIndex::parse(&text) {
                let mut read = |range: Range<u64>| {
                    trace.get(range.start as usize..range.end as usize).map(<[u8]>::to_vec).ok_or_else(|| "short".to_owned())
                };
                let _ = look_up(&index, &item, &mut read);
            }
        }
    }
}
