//! What a path looked like when it was read (`Stat`, `Observed`), shared by the loader,
//! which records every path it looks at, and the fingerprint cache, which compares them
//! on the next run. Reads no package and writes nothing.

use std::path::Path;

/// The metadata the fingerprint cache compares: size, modification time and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stat {
    pub size: u64,
    pub modified_nanos: i128,
    pub inode: u64,
}

impl Stat {
    pub fn of(metadata: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Stat {
            size: metadata.len(),
            modified_nanos: i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec()),
            inode: metadata.ino(),
        }
    }

    /// The same numbers from a `stat` made on an open descriptor or relative to one.
    pub fn of_raw(stat: &rustix::fs::Stat) -> Self {
        Stat {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified_nanos: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
            inode: stat.st_ino,
        }
    }
}

/// What a path was when it was read, for the fingerprint cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Observed {
    /// A folder that was listed (a new entry changes its mtime).
    Directory(Stat),
    /// A file whose bytes were read, with the blake3 of those bytes.
    File(Stat, [u8; 32]),
    /// A path that did not exist (creating it must be noticed).
    Missing,
    /// A path that could not be looked at for another reason than its absence (a folder
    /// on the way that may not be searched, say). Read as missing, but a change of
    /// permissions leaves no trace in any folder's time, so it is always stat'ed again.
    Unreachable,
}

impl Observed {
    /// What a failed look at a path means.
    pub fn absent(error: &std::io::Error) -> Observed {
        if error.kind() == std::io::ErrorKind::NotFound { Observed::Missing } else { Observed::Unreachable }
    }
}

/// Observes a path as it is now (for files not read through the loader).
pub fn observe(path: &Path) -> Observed {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => Observed::Directory(Stat::of(&metadata)),
        Ok(metadata) if metadata.is_file() => match std::fs::read(path) {
            Ok(bytes) => Observed::File(Stat::of(&metadata), *blake3::hash(&bytes).as_bytes()),
            Err(_) => Observed::Unreachable,
        },
        Ok(_) => Observed::Unreachable,
        Err(error) => Observed::absent(&error),
    }
}

/// A file modified this recently may change again within the same timestamp tick; its
/// recorded time is smudged so the next run compares its hash instead of trusting it.
const RACY_NANOS: i128 = 2_000_000_000;

/// Now, in nanoseconds since the epoch, as a file's time is recorded.
fn now_nanos() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i128::try_from(elapsed.as_nanos()).unwrap_or(i128::MAX))
}

/// Whether a file or folder with these numbers was modified within [`RACY_NANOS`] of now,
/// so a change within the same timestamp tick could still leave its numbers as they are.
pub fn is_racy(stat: &Stat) -> bool {
    stat.modified_nanos > now_nanos() - RACY_NANOS
}

/// Smudges the modification time of a file or folder observed within [`RACY_NANOS`] of
/// now.
pub fn smudge_if_racy(observed: Observed) -> Observed {
    let now = now_nanos();
    match observed {
        Observed::File(stat, digest) if stat.modified_nanos > now - RACY_NANOS => {
            Observed::File(Stat { modified_nanos: 0, ..stat }, digest)
        }
        // A folder listed within the same timestamp tick as a later change to its entries
        // would keep its time; smudged, the next run lists it again.
        Observed::Directory(stat) if stat.modified_nanos > now - RACY_NANOS => {
            Observed::Directory(Stat { modified_nanos: 0, ..stat })
        }
        other => other,
    }
}

/// [`smudge_if_racy`] for a folder's numbers: a store's folder recorded within the same
/// timestamp tick as a later change to its entries would keep its time.
pub fn smudge_folder_if_racy(stat: Stat) -> Stat {
    match smudge_if_racy(Observed::Directory(stat)) {
        Observed::Directory(stat) => stat,
        _ => stat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racily_fresh_files_and_folders_are_smudged() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| i128::try_from(elapsed.as_nanos()).unwrap_or(i128::MAX))
            .expect("clock");
        let fresh = Stat { size: 1, modified_nanos: now, inode: 4 };
        let old = Stat { modified_nanos: now - 10 * RACY_NANOS, ..fresh };
        let smudged = Stat { modified_nanos: 0, ..fresh };
        assert_eq!(smudge_if_racy(Observed::Directory(fresh)), Observed::Directory(smudged));
        assert_eq!(smudge_if_racy(Observed::File(fresh, [1; 32])), Observed::File(smudged, [1; 32]));
        assert_eq!(smudge_if_racy(Observed::Directory(old)), Observed::Directory(old));
        assert_eq!(smudge_if_racy(Observed::File(old, [1; 32])), Observed::File(old, [1; 32]));
        assert_eq!(smudge_if_racy(Observed::Missing), Observed::Missing);
    }
}
