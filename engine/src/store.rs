//! The content store's layout: which skill trees and per-provider slices a bundle's skill
//! content becomes, their keys, and the names of store entries. Pure: it says what the
//! store must hold and how a bundle links into it; the host writes entries, follows
//! links and removes what nothing references.
//!
//! A skill tree is keyed by its CRLF-folded blake3 tree digest (the formula of
//! `catalogue::tree_digest`, over the paths the tree has inside a bundle), cut to its
//! first [`KEY_DIGITS`] hex digits. Two trees whose bytes differ only in line endings fold
//! to the same digest, so a tree holding a CRLF also carries a suffix of its raw digest:
//! one key never names two different byte sequences. A slice is one provider's skill
//! folder of one bundle: a folder of links, one per skill, keyed by a digest over its
//! (name, tree key) pairs, cut the same way.
//!
//! Keys are short so that a slice's link `../<tree key>` (at most 56 bytes) fits inside
//! the link's inode on ext4 (under 60 bytes), with no data block of its own. Stores
//! written before keys were cut hold full-length names (64 digits, and 16 for the raw
//! suffix): every name is still recognised and verified as the prefix of the digest it
//! has the length of ([`names_tree`], [`names_slice`]); new entries get short keys.

use std::collections::BTreeMap;

use crate::catalogue::{FileSummary, Summarized};
use crate::{OutputFile, SourcedFile};

/// Where a bundle's skill content begins; everything below is linked into the store.
pub const SKILLS_PREFIX: &str = "content/skills/";
/// The name prefix of a slice entry in the store.
pub const SLICE_PREFIX: &str = "slice-";
/// The hex digits of a key as this version writes it (160 bits of the digest).
pub const KEY_DIGITS: usize = 40;
/// The hex digits of the raw-digest suffix of a tree key holding a CRLF.
pub const RAW_SUFFIX_DIGITS: usize = 12;
/// The lengths of keys that stores written before keys were cut hold.
const FULL_KEY_DIGITS: usize = 64;
const FULL_RAW_SUFFIX_DIGITS: usize = 16;

/// One skill tree as the store holds it: its key and its files, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreTree<'bundle> {
    pub key: String,
    pub files: Vec<TreeFile<'bundle>>,
}

/// One file of a skill tree: its path inside the tree, its size and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeFile<'bundle> {
    pub path: &'bundle str,
    pub length: u64,
    pub body: TreeBody<'bundle>,
}

/// Where the bytes of a tree file are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeBody<'bundle> {
    Bytes(&'bundle [u8]),
    /// A summarized catalogue file: the driver reads it again from its location.
    Source(&'bundle Summarized),
}

/// What a tree key needs of one file: its raw and CRLF-folded lengths and digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileKey {
    pub raw_length: u64,
    pub raw_digest: [u8; 32],
    pub folded_length: u64,
    pub folded_digest: [u8; 32],
}

impl FileKey {
    pub(crate) fn of_bytes(bytes: &[u8]) -> FileKey {
        let summary = FileSummary::of_bytes(bytes);
        FileKey {
            raw_length: summary.raw_length,
            raw_digest: *blake3::hash(bytes).as_bytes(),
            folded_length: summary.folded_length,
            folded_digest: summary.digest,
        }
    }

    pub(crate) fn of_summarized(summarized: &Summarized) -> FileKey {
        FileKey {
            raw_length: summarized.summary.raw_length,
            raw_digest: summarized.raw_digest,
            folded_length: summarized.summary.folded_length,
            folded_digest: summarized.summary.digest,
        }
    }

    fn of_body(body: TreeBody<'_>) -> FileKey {
        match body {
            TreeBody::Bytes(bytes) => FileKey::of_bytes(bytes),
            TreeBody::Source(summarized) => FileKey::of_summarized(summarized),
        }
    }
}

/// One provider's skills in one bundle: a folder of links, `<skill>` → `../<tree key>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSlice {
    /// The provider id: the bundle links `content/skills/<source>` to this slice.
    pub source: String,
    pub key: String,
    /// (skill name, tree key), sorted by name.
    pub skills: Vec<(String, String)>,
}

impl StoreSlice {
    /// The slice's folder name in the store.
    pub fn entry_name(&self) -> String {
        format!("{SLICE_PREFIX}{}", self.key)
    }
}

/// What one bundle becomes on disk when it links into a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLayout<'bundle> {
    /// Distinct skill trees, sorted by key.
    pub trees: Vec<StoreTree<'bundle>>,
    /// One slice per provider, sorted by source.
    pub slices: Vec<StoreSlice>,
    /// The bundle's own files (manifest, trace, instructions, delivery), written as
    /// ordinary files.
    pub own: Vec<&'bundle OutputFile>,
}

/// The key of a skill tree from its files (path inside the tree, bytes), in any order.
pub fn tree_key(files: &[(&str, &[u8])]) -> String {
    let keys: Vec<(&str, FileKey)> = files.iter().map(|(path, bytes)| (*path, FileKey::of_bytes(bytes))).collect();
    tree_key_of(&keys)
}

/// The key of a skill tree from its files' keys, in any order.
pub(crate) fn tree_key_of(files: &[(&str, FileKey)]) -> String {
    let (folded, raw) = tree_digests(files);
    match raw {
        Some(raw) => format!("{}-{}", &folded[..KEY_DIGITS], &raw[..RAW_SUFFIX_DIGITS]),
        None => folded[..KEY_DIGITS].to_owned(),
    }
}

/// The full CRLF-folded digest of a tree (hex), and its full raw digest when the tree
/// holds a CRLF.
fn tree_digests(files: &[(&str, FileKey)]) -> (String, Option<String>) {
    let mut sorted: Vec<&(&str, FileKey)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut folded = blake3::Hasher::new();
    let mut raw = blake3::Hasher::new();
    let mut has_crlf = false;
    for (path, key) in sorted {
        // Folding removes one byte per CRLF.
        has_crlf |= key.raw_length != key.folded_length;
        folded.update(path.as_bytes());
        folded.update(&[0]);
        folded.update(&key.folded_length.to_le_bytes());
        folded.update(&key.folded_digest);
        raw.update(path.as_bytes());
        raw.update(&[0]);
        raw.update(&key.raw_length.to_le_bytes());
        raw.update(&key.raw_digest);
    }
    let raw = has_crlf.then(|| raw.finalize().to_hex().to_string());
    (folded.finalize().to_hex().to_string(), raw)
}

/// Whether `name` is a key of the tree of these files (path inside the tree, bytes), in
/// any order: the short key, or the full-length name of an older store.
pub fn names_tree(name: &str, files: &[(&str, &[u8])]) -> bool {
    let keys: Vec<(&str, FileKey)> = files.iter().map(|(path, bytes)| (*path, FileKey::of_bytes(bytes))).collect();
    let (folded, raw) = tree_digests(&keys);
    let (name_folded, name_raw) = match name.split_once('-') {
        Some((folded, raw)) => (folded, Some(raw)),
        None => (name, None),
    };
    let prefix_of = |part: &str, digest: &str, lengths: [usize; 2]| {
        lengths.contains(&part.len()) && digest.as_bytes().starts_with(part.as_bytes())
    };
    let suffix = match (name_raw, raw) {
        (None, None) => true,
        (Some(part), Some(raw)) => {
            let length = if name_folded.len() == KEY_DIGITS { RAW_SUFFIX_DIGITS } else { FULL_RAW_SUFFIX_DIGITS };
            part.len() == length && prefix_of(part, &raw, [length, length])
        }
        _ => false,
    };
    suffix && prefix_of(name_folded, &folded, [KEY_DIGITS, FULL_KEY_DIGITS])
}

/// The key of a slice from its (skill name, tree key) pairs, in any order.
pub fn slice_key(skills: &[(String, String)]) -> String {
    slice_digest(skills)[..KEY_DIGITS].to_owned()
}

/// Whether `name` is the entry name of a slice of these (skill name, tree key) pairs:
/// `slice-` and the short key, or the full-length key of an older store.
pub fn names_slice(name: &str, skills: &[(String, String)]) -> bool {
    name.strip_prefix(SLICE_PREFIX)
        .is_some_and(|key| [KEY_DIGITS, FULL_KEY_DIGITS].contains(&key.len()) && slice_digest(skills).starts_with(key))
}

/// The full digest (hex) over a slice's (skill name, tree key) pairs, in any order.
fn slice_digest(skills: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = skills.iter().collect();
    sorted.sort();
    let mut hasher = blake3::Hasher::new();
    for (name, key) in sorted {
        hasher.update(name.as_bytes());
        hasher.update(&[0]);
        hasher.update(key.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

fn is_hex(text: &str, length: usize) -> bool {
    text.len() == length && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether a name is shaped like a tree key: 40 lowercase hex digits, optionally `-` and
/// 12 more (a tree with CRLF line endings); or, as an older store wrote them, 64 digits,
/// optionally `-` and 16 more.
pub fn is_tree_key(name: &str) -> bool {
    let shaped = |digits: usize, suffix: usize| match name.split_once('-') {
        None => is_hex(name, digits),
        Some((folded, raw)) => is_hex(folded, digits) && is_hex(raw, suffix),
    };
    shaped(KEY_DIGITS, RAW_SUFFIX_DIGITS) || shaped(FULL_KEY_DIGITS, FULL_RAW_SUFFIX_DIGITS)
}

/// Whether a name is shaped like a slice entry: `slice-` and 40 lowercase hex digits (or
/// 64, as an older store wrote them).
pub fn is_slice_name(name: &str) -> bool {
    name.strip_prefix(SLICE_PREFIX).is_some_and(|key| is_hex(key, KEY_DIGITS) || is_hex(key, FULL_KEY_DIGITS))
}

/// Splits a bundle's files into skill trees, per-provider slices and its own files:
/// `files` holds bytes, `sourced` the summarized catalogue files the driver reads again.
pub fn layout<'bundle>(files: &'bundle [OutputFile], sourced: &'bundle [SourcedFile]) -> StoreLayout<'bundle> {
    fn split(path: &str) -> Option<(&str, &str, &str)> {
        let rest = path.strip_prefix(SKILLS_PREFIX)?;
        let (source, rest) = rest.split_once('/')?;
        let (skill, path) = rest.split_once('/')?;
        Some((source, skill, path))
    }
    // source → skill → files of the tree.
    let mut grouped: BTreeMap<&str, BTreeMap<&str, Vec<TreeFile<'_>>>> = BTreeMap::new();
    let mut own = Vec::new();
    for file in files {
        match split(&file.path) {
            Some((source, skill, path)) => grouped
                .entry(source)
                .or_default()
                .entry(skill)
                .or_default()
                .push(TreeFile { path, length: file.bytes.len() as u64, body: TreeBody::Bytes(&file.bytes) }),
            None => own.push(file),
        }
    }
    for file in sourced {
        // The engine only sources files of skill folders.
        if let Some((source, skill, path)) = split(&file.path) {
            grouped.entry(source).or_default().entry(skill).or_default().push(TreeFile {
                path,
                length: file.source.summary.raw_length,
                body: TreeBody::Source(&file.source),
            });
        }
    }
    let mut trees: BTreeMap<String, StoreTree<'_>> = BTreeMap::new();
    let mut slices = Vec::new();
    for (source, skills) in grouped {
        let mut members = Vec::new();
        for (skill, mut tree_files) in skills {
            tree_files.sort_by(|a, b| a.path.cmp(b.path));
            let keys: Vec<(&str, FileKey)> =
                tree_files.iter().map(|file| (file.path, FileKey::of_body(file.body))).collect();
            let key = tree_key_of(&keys);
            members.push((skill.to_owned(), key.clone()));
            trees.entry(key.clone()).or_insert(StoreTree { key, files: tree_files });
        }
        let key = slice_key(&members);
        slices.push(StoreSlice { source: source.to_owned(), key, skills: members });
    }
    StoreLayout { trees: trees.into_values().collect(), slices, own }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: &[u8]) -> OutputFile {
        OutputFile { path: path.to_owned(), bytes: bytes.into() }
    }

    #[test]
    fn the_same_skill_under_two_providers_is_one_tree() {
        let files = vec![
            file("content/skills/a/review/SKILL.md", b"same"),
            file("content/skills/b/review/SKILL.md", b"same"),
            file("content/skills/b/other/SKILL.md", b"other"),
            file("manifest.json", b"{}"),
        ];
        let layout = layout(&files, &[]);
        assert_eq!(layout.trees.len(), 2);
        assert_eq!(layout.slices.len(), 2);
        assert_eq!(layout.slices[0].skills[0].1, layout.slices[1].skills[1].1);
        assert_eq!(layout.own.len(), 1);
    }

    #[test]
    fn line_endings_give_different_keys_with_the_same_folded_prefix() {
        let lf = tree_key(&[("SKILL.md", b"a\nb\n")]);
        let crlf = tree_key(&[("SKILL.md", b"a\r\nb\r\n")]);
        assert_ne!(lf, crlf);
        assert!(crlf.starts_with(&lf));
        assert!(is_tree_key(&lf) && is_tree_key(&crlf));
    }

    #[test]
    fn the_tree_key_is_the_catalogue_tree_digest_without_crlf() {
        let summary = crate::catalogue::FileSummary::of_bytes(b"abc");
        let expected = crate::catalogue::tree_digest(&[("SKILL.md".to_owned(), &summary)]);
        assert_eq!(tree_key(&[("SKILL.md", b"abc")]), expected[..KEY_DIGITS]);
    }

    #[test]
    fn a_summarized_file_gives_the_key_of_its_bytes() {
        for bytes in [&b"plain\n"[..], b"with\r\ncrlf\r\n", b""] {
            let summarized = Summarized::of("/x/SKILL.md".into(), "x/SKILL.md", ".agents/skills/x/SKILL.md", bytes);
            assert_eq!(
                tree_key_of(&[("SKILL.md", FileKey::of_summarized(&summarized))]),
                tree_key(&[("SKILL.md", bytes)])
            );
            let sourced = [SourcedFile {
                path: "content/skills/a/x/SKILL.md".to_owned(),
                source: std::sync::Arc::new(summarized),
            }];
            let held = [file("content/skills/a/x/SKILL.md", bytes)];
            assert_eq!(layout(&[], &sourced).slices, layout(&held, &[]).slices);
        }
    }

    #[test]
    fn entry_names_are_recognised() {
        for digits in [KEY_DIGITS, FULL_KEY_DIGITS] {
            assert!(is_slice_name(&format!("slice-{}", "a".repeat(digits))));
            assert!(is_tree_key(&"a".repeat(digits)));
        }
        assert!(!is_slice_name(&format!("slice-{}", "a".repeat(KEY_DIGITS + 1))));
        assert!(!is_tree_key(&"a".repeat(FULL_KEY_DIGITS - 1)));
        assert!(is_tree_key(&format!("{}-{}", "a".repeat(KEY_DIGITS), "b".repeat(RAW_SUFFIX_DIGITS))));
        assert!(is_tree_key(&format!("{}-{}", "a".repeat(FULL_KEY_DIGITS), "b".repeat(FULL_RAW_SUFFIX_DIGITS))));
        assert!(!is_tree_key(&format!("{}-{}", "a".repeat(KEY_DIGITS), "b".repeat(FULL_RAW_SUFFIX_DIGITS))));
        assert!(!is_slice_name("slice-xyz"));
        assert!(!is_tree_key("../etc"));
    }

    #[test]
    fn a_link_to_a_tree_fits_inside_an_ext4_inode() {
        let crlf = tree_key(&[("SKILL.md", b"a\r\n")]);
        assert_eq!(crlf.len(), KEY_DIGITS + 1 + RAW_SUFFIX_DIGITS);
        assert!(format!("../{crlf}").len() < 60);
        let skills = vec![("review".to_owned(), crlf)];
        assert_eq!(slice_key(&skills).len(), KEY_DIGITS);
    }

    #[test]
    fn short_and_full_length_names_both_name_their_tree_and_nothing_else() {
        for bytes in [&b"plain\n"[..], b"with\r\ncrlf\r\n"] {
            let files = [("SKILL.md", bytes), ("notes/a.md", &b"a"[..])];
            let keys: Vec<(&str, FileKey)> =
                files.iter().map(|(path, bytes)| (*path, FileKey::of_bytes(bytes))).collect();
            let (folded, raw) = tree_digests(&keys);
            let full = match &raw {
                Some(raw) => format!("{folded}-{}", &raw[..FULL_RAW_SUFFIX_DIGITS]),
                None => folded.clone(),
            };
            let short = tree_key(&files);
            assert!(is_tree_key(&full) && is_tree_key(&short));
            assert!(names_tree(&short, &files) && names_tree(&full, &files));
            assert!(!names_tree(&short, &[("SKILL.md", b"other")]));
            assert!(!names_tree(&full, &[("SKILL.md", b"other")]));
            // A cut that is neither length names nothing.
            assert!(!names_tree(&folded[..50], &files));
        }
        let skills = vec![("review".to_owned(), tree_key(&[("SKILL.md", b"x")]))];
        let full = format!("{SLICE_PREFIX}{}", slice_digest(&skills));
        let short = format!("{SLICE_PREFIX}{}", slice_key(&skills));
        assert!(names_slice(&full, &skills) && names_slice(&short, &skills));
        let other = vec![("other".to_owned(), skills[0].1.clone())];
        assert!(!names_slice(&full, &other) && !names_slice(&short, &other));
        assert!(!names_slice(&short[..short.len() - 1], &skills));
    }
}
