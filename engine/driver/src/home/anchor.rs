//! Looking up many paths that share a few folders: each folder is opened once and every
//! path below it is stat'ed from there, so the kernel resolves two or three names per
//! path instead of the whole path. The no-op check of the fingerprint cache stats tens
//! of thousands of paths this way.
//!
//! `Anchor::open(folder).lstat(rest)` answers exactly what `lstat("<folder>/<rest>")`
//! answers: the folder's own path is followed (as it would be on the way to `rest`), the
//! last name of `rest` is not. A folder that cannot be opened is not an answer: every path
//! below it is then stat'ed whole, as it was written.

use std::os::fd::OwnedFd;

use crate::home::observe::Stat;

/// What a path is, as far as the fingerprint cache compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Folder,
    File,
    /// A symbolic link, a device, a socket…
    Other,
}

impl Kind {
    /// The kind of what `metadata` (of an `lstat`) describes.
    pub fn of(metadata: &std::fs::Metadata) -> Kind {
        if metadata.is_dir() {
            Kind::Folder
        } else if metadata.is_file() {
            Kind::File
        } else {
            Kind::Other
        }
    }
}

/// The folder paths are looked up from.
pub enum Anchor<'t> {
    /// The working folder (paths as they were recorded).
    Working,
    Open(OwnedFd, &'t str),
    /// A folder that could not be opened; its paths are stat'ed whole.
    Unopened(&'t str),
}

impl<'t> Anchor<'t> {
    /// Opens `folder` to look paths up from; the empty folder is the working one.
    pub fn open(folder: &'t str) -> Anchor<'t> {
        if folder.is_empty() {
            return Anchor::Working;
        }
        // `O_PATH` needs no read permission on the folder, like a lookup through it.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
        match rustix::fs::open(folder, flags, rustix::fs::Mode::empty()) {
            Ok(fd) => Anchor::Open(fd, folder),
            Err(_) => Anchor::Unopened(folder),
        }
    }

    /// `lstat` of `rest` below the anchor: `None` when it cannot be stat'ed.
    pub fn lstat(&self, rest: &str) -> Option<(Kind, Stat)> {
        let flags = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
        match self {
            Anchor::Working => rustix::fs::statat(rustix::fs::CWD, rest, flags).ok().map(|stat| of_raw(&stat)),
            // An absolute `rest` would not be looked up from the folder.
            Anchor::Open(fd, _) if !rest.starts_with('/') => {
                rustix::fs::statat(fd, rest, flags).ok().map(|stat| of_raw(&stat))
            }
            Anchor::Open(_, folder) | Anchor::Unopened(folder) => {
                let metadata = std::fs::symlink_metadata(format!("{folder}/{rest}")).ok()?;
                Some((Kind::of(&metadata), Stat::of(&metadata)))
            }
        }
    }
}

/// The kind and numbers of a raw `stat`, the same numbers [`Stat::of`] takes from
/// `std::fs::Metadata`. The field types differ from one target to the next, hence the
/// casts.
#[allow(clippy::unnecessary_cast)]
fn of_raw(stat: &rustix::fs::Stat) -> (Kind, Stat) {
    let kind = match rustix::fs::FileType::from_raw_mode(stat.st_mode as rustix::fs::RawMode) {
        rustix::fs::FileType::Directory => Kind::Folder,
        rustix::fs::FileType::RegularFile => Kind::File,
        _ => Kind::Other,
    };
    let numbers = Stat {
        size: stat.st_size as u64,
        modified_nanos: i128::from(stat.st_mtime as i64) * 1_000_000_000 + i128::from(stat.st_mtime_nsec as i64),
        inode: stat.st_ino as u64,
    };
    (kind, numbers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way of looking a path up gives what `std::fs::symlink_metadata` gives.
    #[test]
    fn an_anchored_lookup_answers_what_a_whole_path_lookup_answers() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path().join("root");
        std::fs::create_dir_all(root.join("folder/inner")).expect("mkdir");
        std::fs::write(root.join("folder/file"), "bytes").expect("write");
        std::os::unix::fs::symlink("folder", root.join("link")).expect("symlink");
        let root_text = root.to_str().expect("utf-8");
        let expected = |rest: &str| {
            std::fs::symlink_metadata(format!("{root_text}/{rest}")).ok().map(|metadata| {
                let file_type = metadata.file_type();
                let kind = match (file_type.is_dir(), file_type.is_file()) {
                    (true, _) => Kind::Folder,
                    (_, true) => Kind::File,
                    _ => Kind::Other,
                };
                (kind, Stat::of(&metadata))
            })
        };
        let rests = [
            "folder",
            "folder/file",
            "folder/inner",
            "link",
            "link/file",
            "link/.",
            "missing",
            "folder/file/x",
            "/folder",
        ];
        for anchor in [Anchor::open(root_text), Anchor::Unopened(root_text)] {
            for rest in rests {
                assert_eq!(anchor.lstat(rest), expected(rest), "{rest}");
            }
        }
        // The anchor's own last name is followed, as on the way to a path below it.
        let link = root.join("link").to_str().expect("utf-8").to_owned();
        let through_link = Anchor::open(&link);
        assert!(matches!(through_link, Anchor::Open(..)));
        assert_eq!(through_link.lstat("file"), expected("folder/file"));
        // A folder that is not there is not an answer: the whole path is stat'ed.
        let missing = root.join("missing").to_str().expect("utf-8").to_owned();
        assert!(matches!(Anchor::open(&missing), Anchor::Unopened(_)));
        assert_eq!(Anchor::open("").lstat(root.join("folder/file").to_str().expect("utf-8")), expected("folder/file"));
    }
}
