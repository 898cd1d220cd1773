//! What every reader of a user's file shares: the person source a configuration selects
//! (the embedded roster or a folder), a whole-file read bounded by a size limit asked
//! before any byte is read, and text made printable for diagnostics.

use std::path::{Path, PathBuf};

use acompose_engine::Diagnostic;

/// The spelling that selects the embedded default.
pub const EMBEDDED: &str = "roster:core";

/// Where a person source comes from: the embedded default or a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Embedded,
    Directory(PathBuf),
}

impl Location {
    pub fn parse(text: &str) -> Self {
        if text == EMBEDDED { Location::Embedded } else { Location::Directory(PathBuf::from(text)) }
    }
}

/// What to load: a person package and its libraries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub person: Location,
    pub libraries: Vec<Location>,
    pub core_rules: bool,
}

impl Selection {
    pub fn embedded() -> Self {
        Selection { person: Location::Embedded, libraries: Vec::new(), core_rules: true }
    }
}

/// Replaces control characters (other than newline, tab and carriage return) with `?`,
/// one per byte so diagnostic offsets still point at the same places.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|character| {
            let keep = !character.is_control() || matches!(character, '\n' | '\t' | '\r');
            if keep { vec![character] } else { vec!['?'; character.len_utf8()] }
        })
        .collect()
}

/// Reads a whole file unless its size, asked before any byte is read, is over `limit`:
/// then the limit's diagnostic (labelled with the path) and nothing read. The read itself
/// stops one byte past the limit, so a file that grows while read costs no more.
pub fn read_limited(
    path: &Path,
    label: &str,
    limit: acompose_engine::limits::Limit,
) -> std::io::Result<Result<Vec<u8>, Diagnostic>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    if let Some(too_large) = limit.check(usize::try_from(length).unwrap_or(usize::MAX), label) {
        return Ok(Err(too_large));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(length).unwrap_or(0).saturating_add(1));
    file.take(limit.bytes as u64 + 1).read_to_end(&mut bytes)?;
    Ok(limit.check(bytes.len(), label).map_or(Ok(bytes), Err))
}
