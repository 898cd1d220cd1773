//! The content store's layout: which skill trees and per-provider slices a bundle's skill
//! content becomes, their keys, and the names of store entries. Pure: it says what the
//! store must hold and how a bundle links into it; the host writes entries, follows
//! links and removes what nothing references.
//!
//! A skill tree is keyed by its CRLF-folded blake3 tree digest (the formula of
//! `catalogue::tree_digest`, over the paths the tree has inside a bundle). Two trees whose
//! bytes differ only in line endings fold to the same digest, so a tree holding a CRLF
//! also carries a suffix of its raw digest: one key never names two different byte
//! sequences. A slice is one provider's skill folder of one bundle: a folder of links,
//! one per skill, keyed by a digest over its (name, tree key) pairs.

use std::collections::BTreeMap;

use crate::OutputFile;
use crate::skill::hash_folded;

/// Where a bundle's skill content begins; everything below is linked into the store.
pub const SKILLS_PREFIX: &str = "content/skills/";
/// The name prefix of a slice entry in the store.
pub const SLICE_PREFIX: &str = "slice-";

/// One skill tree as the store holds it: its key and its files (path inside the tree,
/// bytes), sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreTree<'bundle> {
    pub key: String,
    pub files: Vec<(&'bundle str, &'bundle [u8])>,
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
    let mut sorted: Vec<&(&str, &[u8])> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut folded = blake3::Hasher::new();
    let mut raw = blake3::Hasher::new();
    let mut has_crlf = false;
    for (path, bytes) in sorted {
        let mut file_hasher = blake3::Hasher::new();
        hash_folded(&mut file_hasher, bytes);
        let crlf = bytes.windows(2).filter(|pair| pair == b"\r\n").count() as u64;
        has_crlf |= crlf > 0;
        folded.update(path.as_bytes());
        folded.update(&[0]);
        folded.update(&(bytes.len() as u64 - crlf).to_le_bytes());
        folded.update(file_hasher.finalize().as_bytes());
        raw.update(path.as_bytes());
        raw.update(&[0]);
        raw.update(&(bytes.len() as u64).to_le_bytes());
        raw.update(blake3::hash(bytes).as_bytes());
    }
    let folded = folded.finalize().to_hex().to_string();
    if has_crlf { format!("{folded}-{}", &raw.finalize().to_hex()[..16]) } else { folded }
}

/// The key of a slice from its (skill name, tree key) pairs, in any order.
pub fn slice_key(skills: &[(String, String)]) -> String {
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

/// Whether a name is shaped like a tree key: 64 lowercase hex digits, optionally `-` and
/// 16 more (a tree with CRLF line endings).
pub fn is_tree_key(name: &str) -> bool {
    match name.split_once('-') {
        None => is_hex(name, 64),
        Some((folded, raw)) => is_hex(folded, 64) && is_hex(raw, 16),
    }
}

/// Whether a name is shaped like a slice entry: `slice-` and 64 lowercase hex digits.
pub fn is_slice_name(name: &str) -> bool {
    name.strip_prefix(SLICE_PREFIX).is_some_and(|key| is_hex(key, 64))
}

/// A tree's files: (path inside the tree, bytes).
type TreeFiles<'bundle> = Vec<(&'bundle str, &'bundle [u8])>;

/// Splits a bundle's files into skill trees, per-provider slices and its own files.
pub fn layout(files: &[OutputFile]) -> StoreLayout<'_> {
    // source → skill → files of the tree.
    let mut grouped: BTreeMap<&str, BTreeMap<&str, TreeFiles<'_>>> = BTreeMap::new();
    let mut own = Vec::new();
    for file in files {
        let split = file.path.strip_prefix(SKILLS_PREFIX).and_then(|rest| {
            let (source, rest) = rest.split_once('/')?;
            let (skill, path) = rest.split_once('/')?;
            Some((source, skill, path))
        });
        match split {
            Some((source, skill, path)) => {
                grouped.entry(source).or_default().entry(skill).or_default().push((path, &file.bytes[..]))
            }
            None => own.push(file),
        }
    }
    let mut trees: BTreeMap<String, StoreTree<'_>> = BTreeMap::new();
    let mut slices = Vec::new();
    for (source, skills) in grouped {
        let mut members = Vec::new();
        for (skill, mut tree_files) in skills {
            tree_files.sort_by(|a, b| a.0.cmp(b.0));
            let key = tree_key(&tree_files);
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
        let layout = layout(&files);
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
        assert_eq!(tree_key(&[("SKILL.md", b"abc")]), expected);
    }

    #[test]
    fn entry_names_are_recognised() {
        assert!(is_slice_name(&format!("slice-{}", "a".repeat(64))));
        assert!(!is_slice_name("slice-xyz"));
        assert!(!is_tree_key("../etc"));
    }
}
