//! A projection's record (`<target>/.agent-compose/projection.json`) read back: the paths
//! it owns and what it says. A leaf: the catalogue reader asks it which links a
//! projection owns without depending on how projections are written.

use std::collections::BTreeSet;
use std::path::Path;

use acompose_engine::projection::{self, Details};

/// The largest projection record read.
pub(crate) const RECORD_LIMIT: u64 = 1 << 20;

/// A projection record as written by the projection's transaction.
#[derive(serde::Deserialize)]
pub(crate) struct Record {
    format: String,
    pub files: Vec<String>,
    pub details: Details,
}

/// Reads the record in `target`, if there is a readable one.
pub(crate) fn read_record(target: &Path) -> Option<Record> {
    let path = target.join(projection::RECORD);
    let metadata = std::fs::symlink_metadata(&path).ok()?;
    if !metadata.is_file() || metadata.len() > RECORD_LIMIT {
        return None;
    }
    let record: Record = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    (record.format == projection::FORMAT).then_some(record)
}

/// The paths the projection recorded in `target` owns (none without a readable record):
/// what the catalogue reader leaves out of a repository that is also a projection target.
pub fn owned_paths(target: &Path) -> BTreeSet<String> {
    read_record(target).map(|record| record.files.into_iter().collect()).unwrap_or_default()
}

/// Whether `path` is a path the projection recorded in one of its ancestors owns.
pub fn owned_by_a_projection(path: &Path) -> bool {
    path.ancestors().skip(1).any(|folder| {
        path.strip_prefix(folder).ok().and_then(|relative| relative.to_str()).is_some_and(|relative| {
            let relative = relative.replace(std::path::MAIN_SEPARATOR, "/");
            read_record(folder).is_some_and(|record| record.files.contains(&relative))
        })
    })
}
