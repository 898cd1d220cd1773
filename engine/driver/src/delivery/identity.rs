//! The projection `statusline` and `whoami` show: the nearest projection record at or
//! above a folder (inside an assigned launch, also the runtime home's) and its health,
//! told from the record and the bundle's manifest alone. Claude Code runs `statusline` on
//! every update of its prompt line, so nothing here reads more than the record, the
//! home's bundle index beside the bundle, and whether the bundle and its manifest are
//! there; the full check of a projection (every owned path, every link, every digest) is
//! `acompose verify`'s and the projection's own read-back's.

use std::path::Path;

use acompose_engine::projection::{self as plan, Details, Health};

use crate::delivery::projection::{Found, superseded};
use crate::delivery::runtime_home::LAUNCH_VARIABLE;
use crate::home::projection_record::RECORD_LIMIT;

/// The nearest projection at or above `start`; inside an assigned launch (whose working
/// folder is the user's checkout) the runtime home's projection when nothing is found
/// above it.
pub fn nearest(start: &Path) -> Option<Found> {
    at_or_above(start).or_else(|| {
        let launched = std::env::var_os(LAUNCH_VARIABLE).is_some_and(|value| !value.is_empty());
        let runtime = std::env::var_os(crate::delivery::runtime_home::RUNTIME_VARIABLE)
            .filter(|runtime| !runtime.is_empty())
            .or_else(|| std::env::var_os("HOME"))
            .filter(|_| launched)?;
        at_or_above(Path::new(&runtime))
    })
}

/// The first folder at or above `start` holding a readable projection record.
fn at_or_above(start: &Path) -> Option<Found> {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start.ancestors().find_map(|folder| {
        let details = read_details(folder)?;
        let health = health_of(&details);
        Some(Found { target: folder.to_path_buf(), details, health })
    })
}

/// What the record in `target` says, if there is a readable one; the list of paths it
/// owns is passed over unread.
fn read_details(target: &Path) -> Option<Details> {
    #[derive(serde::Deserialize)]
    struct Record {
        format: String,
        details: Details,
    }
    let path = target.join(plan::RECORD);
    let metadata = std::fs::symlink_metadata(&path).ok()?;
    if !metadata.is_file() || metadata.len() > RECORD_LIMIT {
        return None;
    }
    let record: Record = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    // A projection being taken out (a stopped `unproject`) shows no role any more.
    (record.format == plan::FORMAT && !record.details.unprojecting).then_some(record.details)
}

/// The projection's health from its bundle's manifest, looked at, not read: the bundle
/// folder gone is `bundle missing`; a folder without its `manifest.json` is `damaged`;
/// a home index beside the bundle naming a newer bundle for the role is `stale`.
fn health_of(details: &Details) -> Health {
    let bundle = Path::new(&details.bundle_path);
    if !bundle.is_dir() {
        return Health::BundleMissing;
    }
    if !crate::compose::parted::has_manifest(bundle) {
        return Health::Damaged;
    }
    if superseded(bundle, details) { Health::Stale } else { Health::Ok }
}
