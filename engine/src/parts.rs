//! A bundle's large own files kept as parts in the content store.
//!
//! `trace.json` and `trace.index` hold every decision of a role's resolution, and
//! `manifest.json` every file of the bundle: megabytes on a large estate, and nearly the
//! same bytes after an edit to one skill. Written into
//! a bundle whole, every edit wrote them whole again. Kept as parts, each file is cut
//! where its content says (content-defined chunking, so an edit moves the cuts near it
//! and nowhere else), each part is a read-only store entry named by its digest, and the
//! bundle holds a short list in place of the file (`trace.json.parts`): an edit writes
//! the list, the few parts it changed and nothing else.
//!
//! The list is not the file: the manifest lists `trace.json` with the size and digest of
//! the parts put together, and the bundle's id is the digest of the manifest's parts put
//! together, so the id, `verify`, `describe`, `--why`, export and push see the same files
//! as before. A bundle without a store (`--standalone`, an
//! imported or pulled one) holds the file whole, and every reader takes either.
//!
//! ```text
//! acompose.parts 1
//! store ../../store                   the store, relative to the bundle's folder
//! part 41213 4f0c…(40 hex digits)     one per part, in order: its size and key
//! ```

use std::ops::Range;

/// What a list's name adds to the name of the file it stands for.
pub const SUFFIX: &str = ".parts";

/// What a part's store entry name starts with; the key (40 hex digits) follows.
pub const PART_PREFIX: &str = "part-";

/// The first line of a list.
const HEADER: &str = "acompose.parts 1";

/// The files a bundle may keep as parts: the trace, its index and the manifest, which an
/// edit to a skill changes in a few places only.
pub const PARTED: [&str; 3] = [crate::trace::FILE, crate::trace_index::PATH, MANIFEST];

/// The manifest's path in a bundle.
pub const MANIFEST: &str = "manifest.json";

/// From what size a file is kept as parts: below it a list and its parts would cost
/// more than the file.
pub const PARTED_FROM: usize = 64 * 1024;

/// The sizes the cuts aim for (content-defined: a part is between the smallest and the
/// largest, and on average about the middle one).
const SMALLEST: usize = 16 * 1024;
const AVERAGE: usize = 32 * 1024;
const LARGEST: usize = 128 * 1024;

/// How many hex digits of a part's blake3 name it (160 bits, like a tree's key).
const KEY_DIGITS: usize = 40;

/// At most how many bytes of a list are read: a list of a 64 MiB trace cut at the
/// smallest size has 4 096 lines of about 60 bytes.
pub const LIST_LIMIT: usize = 1 << 20;

/// One part of a file: its size and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub length: u64,
    pub key: String,
}

impl Part {
    /// The part of `bytes` (all of them).
    pub fn of(bytes: &[u8]) -> Part {
        let key = blake3::hash(bytes).to_hex();
        Part { length: bytes.len() as u64, key: key[..KEY_DIGITS].to_owned() }
    }

    /// The part's name in the store.
    pub fn entry_name(&self) -> String {
        format!("{PART_PREFIX}{}", self.key)
    }

    /// Whether `bytes` are this part's.
    pub fn holds(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.length && Part::of(bytes).key == self.key
    }
}

/// A bundle's list of the parts of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartList {
    /// The store, relative to the bundle's folder (`/`-separated).
    pub store: String,
    pub parts: Vec<Part>,
}

impl PartList {
    /// The size of the file the parts make.
    pub fn length(&self) -> u64 {
        self.parts.iter().map(|part| part.length).sum()
    }

    /// The list's text; `None` when the store's relative path cannot be written in it
    /// (a line break, or no path at all), in which case the file is kept whole.
    pub fn text(&self) -> Option<String> {
        if self.store.is_empty() || self.store.contains(['\n', '\r']) || self.store.starts_with('/') {
            return None;
        }
        let mut text = format!("{HEADER}\nstore {}\n", self.store);
        for part in &self.parts {
            text.push_str(&format!("part {} {}\n", part.length, part.key));
        }
        Some(text)
    }

    /// Reads a list's text. `limit` is the largest size the file it stands for may have.
    pub fn parse(text: &[u8], limit: u64) -> Result<PartList, String> {
        if text.len() > LIST_LIMIT {
            return Err(format!("is over {LIST_LIMIT} bytes"));
        }
        let text = std::str::from_utf8(text).map_err(|_| "is not UTF-8".to_owned())?;
        let mut lines = text.split_terminator('\n');
        if lines.next() != Some(HEADER) {
            return Err(format!("does not start with `{HEADER}`"));
        }
        let store = match lines.next().and_then(|line| line.strip_prefix("store ")) {
            Some(store) if !store.is_empty() && !store.starts_with('/') && !store.contains('\r') => store.to_owned(),
            _ => return Err("names no store folder relative to the bundle on its second line".to_owned()),
        };
        let mut parts = Vec::new();
        let mut total = 0u64;
        for (number, line) in lines.enumerate() {
            let part = parse_part(line).ok_or_else(|| format!("line {} is not `part <size> <key>`", number + 3))?;
            total = total.saturating_add(part.length);
            if total > limit {
                return Err(format!("makes a file of over {limit} bytes"));
            }
            parts.push(part);
        }
        if !text.ends_with('\n') {
            return Err("does not end with a line break".to_owned());
        }
        Ok(PartList { store, parts })
    }
}

fn parse_part(line: &str) -> Option<Part> {
    let mut fields = line.strip_prefix("part ")?.split(' ');
    let length = fields.next()?;
    let key = fields.next()?;
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    if fields.next().is_some() || !digits(length) || length.len() > 12 || !is_key(key) {
        return None;
    }
    Some(Part { length: length.parse().ok()?, key: key.to_owned() })
}

fn is_key(text: &str) -> bool {
    text.len() == KEY_DIGITS && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether a store entry's name is a part's.
pub fn is_part_name(name: &str) -> bool {
    name.strip_prefix(PART_PREFIX).is_some_and(is_key)
}

/// The file a list's path stands for (`trace.json` for `trace.json.parts`), when it is
/// one a bundle may keep as parts.
pub fn listed_file(path: &str) -> Option<&'static str> {
    let file = path.strip_suffix(SUFFIX)?;
    PARTED.into_iter().find(|parted| *parted == file)
}

/// Whether a file of a bundle is kept as parts when a store is at hand.
pub fn is_parted(path: &str, length: usize) -> bool {
    length >= PARTED_FROM && PARTED.contains(&path)
}

/// Cuts `bytes` where their content says, into parts of about [`AVERAGE`] bytes.
pub fn cut(bytes: &[u8]) -> Vec<(Range<usize>, Part)> {
    if bytes.len() <= SMALLEST {
        return vec![(0..bytes.len(), Part::of(bytes))];
    }
    fastcdc::v2020::FastCDC::new(bytes, SMALLEST, AVERAGE, LARGEST)
        .map(|chunk| {
            let range = chunk.offset..chunk.offset + chunk.length;
            let part = Part::of(&bytes[range.clone()]);
            (range, part)
        })
        .collect()
}

/// Cuts a file handed in piece by piece exactly where [`cut`] cuts it whole, holding at
/// most about twice [`LARGEST`] bytes: a cut depends only on the [`LARGEST`] bytes after
/// the previous one, and on how many bytes are left once fewer than that remain. Lets the
/// trace be cut while it is serialized, so it is never held whole to be cut.
#[derive(Debug, Default)]
pub struct Cutter {
    pending: Vec<u8>,
    parts: Vec<Part>,
}

impl Cutter {
    /// Takes the next piece of the file.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= 2 * LARGEST {
            self.cut_settled();
        }
    }

    /// Cuts off every part whose end no later byte can move: while more than [`LARGEST`]
    /// bytes are pending, the next cut lies within them.
    fn cut_settled(&mut self) {
        let chunker = fastcdc::v2020::FastCDC::new(&self.pending, SMALLEST, AVERAGE, LARGEST);
        let mut start = 0;
        while self.pending.len() - start > LARGEST {
            let (_, end) = chunker.cut(start, self.pending.len() - start);
            self.parts.push(Part::of(&self.pending[start..end]));
            start = end;
        }
        self.pending.drain(..start);
    }

    /// The parts of the whole file, in order.
    pub fn finish(mut self) -> Vec<Part> {
        if self.parts.is_empty() && self.pending.len() <= SMALLEST {
            return vec![Part::of(&self.pending)];
        }
        let rest = fastcdc::v2020::FastCDC::new(&self.pending, SMALLEST, AVERAGE, LARGEST);
        self.parts.extend(rest.map(|chunk| Part::of(&self.pending[chunk.offset..chunk.offset + chunk.length])));
        self.parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(seed: u64, length: usize) -> Vec<u8> {
        // Varied enough for content-defined cuts: decimal numbers of a simple sequence.
        let mut out = Vec::with_capacity(length);
        let mut value = seed;
        while out.len() < length {
            value = value.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            out.extend_from_slice(format!("{{\"decision\":{}}},", value >> 40).as_bytes());
        }
        out.truncate(length);
        out
    }

    #[test]
    fn parts_put_together_are_the_file_and_an_edit_changes_only_the_parts_near_it() {
        let before = text_of(7, 2_000_000);
        let parts = cut(&before);
        assert!(parts.len() > 20, "{} parts", parts.len());
        let joined: Vec<u8> = parts.iter().flat_map(|(range, _)| before[range.clone()].to_vec()).collect();
        assert_eq!(joined, before);
        assert!(parts.iter().all(|(range, part)| part.holds(&before[range.clone()])));
        // One number in the middle grows by a digit.
        let mut after = before.clone();
        after.splice(1_000_000..1_000_000, b"9".iter().copied());
        let keys = |cut: &[(Range<usize>, Part)]| -> std::collections::HashSet<String> {
            cut.iter().map(|(_, part)| part.key.clone()).collect()
        };
        let (old, new) = (keys(&parts), keys(&cut(&after)));
        let changed = new.difference(&old).count();
        assert!((1..=3).contains(&changed), "{changed} new parts");
    }

    #[test]
    fn a_file_cut_piece_by_piece_is_cut_where_it_is_cut_whole() {
        let parts_of = |cut: Vec<(Range<usize>, Part)>| cut.into_iter().map(|(_, part)| part).collect::<Vec<_>>();
        for length in [0, 5, SMALLEST, SMALLEST + 1, LARGEST, 2 * LARGEST + 7, 1_000_003] {
            let bytes = text_of(length as u64, length);
            for piece in [1, 999, 65_536, 3 * LARGEST] {
                let mut cutter = Cutter::default();
                for chunk in bytes.chunks(piece) {
                    cutter.push(chunk);
                }
                assert_eq!(cutter.finish(), parts_of(cut(&bytes)), "{length} bytes in pieces of {piece}");
            }
        }
    }

    #[test]
    fn a_list_reads_back_as_written_and_a_damaged_one_is_refused() {
        let list = PartList { store: "../../store".to_owned(), parts: vec![Part::of(b"one"), Part::of(b"two")] };
        let text = list.text().expect("writable");
        assert_eq!(PartList::parse(text.as_bytes(), 100), Ok(list.clone()));
        assert_eq!(list.length(), 6);
        assert!(PartList::parse(text.as_bytes(), 5).is_err(), "over the limit");
        for damaged in [
            text.replace("acompose.parts 1", "acompose.parts 2"),
            text.replace("store ../../store", "store /abs"),
            text.replace("part 3 ", "part x "),
            text.trim_end().to_owned(),
            format!("{text}part 1 zz\n"),
        ] {
            assert!(PartList::parse(damaged.as_bytes(), 100).is_err(), "{damaged:?}");
        }
        let unwritable = PartList { store: "a\nb".to_owned(), parts: Vec::new() };
        assert_eq!(unwritable.text(), None);
    }

    #[test]
    fn only_the_trace_its_index_and_the_manifest_are_parted_and_only_when_large() {
        assert!(is_parted("trace.json", PARTED_FROM));
        assert!(!is_parted("trace.json", PARTED_FROM - 1));
        assert!(is_parted("manifest.json", PARTED_FROM * 4));
        assert!(!is_parted("content/instructions.md", PARTED_FROM * 4));
        assert_eq!(listed_file("trace.index.parts"), Some("trace.index"));
        assert_eq!(listed_file("manifest.json.parts"), Some("manifest.json"));
        assert_eq!(listed_file("content/instructions.md.parts"), None);
        assert!(is_part_name(&Part::of(b"x").entry_name()));
        assert!(!is_part_name("part-xyz"));
    }
}
