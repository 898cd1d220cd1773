//! The loader's walk of a package, a catalogue part or a folder, at the fewest system
//! calls: every folder is opened once (its metadata taken from the open folder, its
//! entries and their types from one listing), every file is opened once relative to its
//! open folder (its metadata taken from the open file, its bytes read in one call when it
//! is the size it said), and no link is followed. A file the loader already holds is
//! looked at once, relative to its folder, and kept when its metadata is the same.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use acompose_engine::catalogue::Summarized;
use acompose_engine::{Bytes, Diagnostic};
use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags};

use super::{Body, Read, error_kind, hidden_member, relative_path};
use crate::home::observe::{Observed, Stat};

/// Folders at this depth or deeper have their entries opened by their whole path rather
/// than relative to the open folder, so a deep tree holds a bounded number of descriptors.
const HELD_FOLDERS: usize = 32;

/// One entry of a folder's listing.
struct Listed {
    name: CString,
    kind: FileType,
}

/// A folder being walked: the open folder (while its entries are opened relative to it),
/// its path, its depth below the start, and the entries left to visit.
struct Frame {
    dir: Option<Dir>,
    path: PathBuf,
    depth: usize,
    entries: std::vec::IntoIter<Listed>,
}

/// What a walk reports against: the root paths are relative to, the label files are shown
/// under, and what the container is called in diagnostics ("package", "catalogue").
struct Walk<'a> {
    root: &'a Path,
    label: &'a str,
    what: &'a str,
}

/// Where an entry is opened from: relative to its open folder, or by its whole path.
#[derive(Clone, Copy)]
enum At<'a> {
    Folder(BorrowedFd<'a>, &'a CStr),
    Path(&'a Path),
}

impl At<'_> {
    fn open(self, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        let flags = flags | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match self {
            At::Folder(folder, name) => rustix::fs::openat(folder, name, flags, Mode::empty()),
            At::Path(path) => rustix::fs::openat(CWD, path, flags, Mode::empty()),
        }
    }

    fn stat(self) -> rustix::io::Result<rustix::fs::Stat> {
        match self {
            At::Folder(folder, name) => rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW),
            At::Path(path) => rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW),
        }
    }
}

/// Walks `start` (under `root`) without following links, reading every regular file.
/// Names starting with `.` are skipped below `start`, unread (a hidden folder is not
/// entered); inside a catalogue's skill folder each one is left out of its skill with an
/// `unportable-name` warning, as any other name that cannot be delivered. Entries are
/// visited in the order of their names, each folder before what it holds.
/// `known` is `start`'s metadata when the caller already looked at it.
pub(super) fn walk(
    root: &Path,
    start: &Path,
    known: Option<&std::fs::Metadata>,
    label: &str,
    what: &str,
    read: &mut Read,
) {
    use std::os::unix::fs::MetadataExt as _;
    let walk = Walk { root, label, what };
    let mode = match known {
        Some(metadata) => Ok(metadata.mode()),
        None => At::Path(start).stat().map(|stat| stat.st_mode),
    };
    let kind = match mode {
        Ok(mode) => FileType::from_raw_mode(mode),
        Err(_) => {
            walk.unreadable(start, read);
            return;
        }
    };
    let mut stack: Vec<Frame> = walk.visit(At::Path(start), start.to_path_buf(), kind, 0, read).into_iter().collect();
    while let Some(frame) = stack.last_mut() {
        let Some(entry) = frame.entries.next() else {
            stack.pop();
            continue;
        };
        let path = frame.path.join(OsStr::from_bytes(entry.name.to_bytes()));
        let depth = frame.depth + 1;
        let at = match frame.dir.as_ref().and_then(|dir| dir.fd().ok()) {
            Some(folder) => At::Folder(folder, &entry.name),
            None => At::Path(&path),
        };
        let hidden = entry.name.to_bytes().starts_with(b".");
        if hidden {
            if what == "catalogue" && depth >= 2 {
                read.diagnostics.push(hidden_member(label, &relative_path(root, &path)));
            }
            continue;
        }
        let kind = match entry.kind {
            FileType::Unknown => match at.stat() {
                Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                Err(_) => {
                    walk.unreadable(&path, read);
                    continue;
                }
            },
            kind => kind,
        };
        let next = walk.visit(at, path.clone(), kind, depth, read);
        stack.extend(next);
    }
}

impl Walk<'_> {
    fn shown(&self, relative: &str) -> String {
        if relative.is_empty() { self.label.to_owned() } else { format!("{}/{relative}", self.label) }
    }

    fn unreadable(&self, path: &Path, read: &mut Read) {
        read.diagnostics.push(
            Diagnostic::error("unreadable-file", format!("cannot read this entry of the {}", self.what))
                .in_file(self.shown(&relative_path(self.root, path)))
                .hint("check its permissions"),
        );
    }

    fn not_regular(&self, relative: &str, read: &mut Read) {
        read.diagnostics.push(
            Diagnostic::error("unreadable-file", "this entry is not a regular file (a device, pipe or socket)")
                .in_file(format!("{}/{relative}", self.label))
                .hint(format!("a {} holds only folders and regular files", self.what)),
        );
    }

    /// Visits one entry of type `kind`; a folder comes back as the frame to walk next.
    fn visit(&self, at: At<'_>, path: PathBuf, kind: FileType, depth: usize, read: &mut Read) -> Option<Frame> {
        let relative = relative_path(self.root, &path);
        match kind {
            FileType::Symlink if read.owned_by_projection.contains(&relative) => read.projected.push(relative),
            FileType::Symlink => read.diagnostics.push(
                Diagnostic::error("symlink-refused", format!("symbolic links are not allowed in a {}", self.what))
                    .in_file(self.shown(&relative))
                    .hint("replace the link with the file or folder it points to"),
            ),
            FileType::Directory => return self.folder(at, path, depth, read),
            FileType::RegularFile => self.file(at, path, relative, read),
            _ => self.not_regular(&relative, read),
        }
        None
    }

    /// Opens a folder, records its metadata and lists it.
    fn folder(&self, at: At<'_>, path: PathBuf, depth: usize, read: &mut Read) -> Option<Frame> {
        let listed = at.open(OFlags::DIRECTORY).map_err(drop).and_then(|fd| {
            let mut dir = Dir::new(fd).map_err(drop)?;
            let stat = dir.stat().map_err(drop)?;
            let mut entries = Vec::new();
            while let Some(entry) = dir.read() {
                let entry = entry.map_err(drop)?;
                let name = entry.file_name();
                if name != c"." && name != c".." {
                    entries.push(Listed { name: name.to_owned(), kind: entry.file_type() });
                }
            }
            entries.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
            Ok((dir, stat, entries))
        });
        match listed {
            Ok((dir, stat, entries)) => {
                read.observed.push((path.clone(), Observed::Directory(Stat::of_raw(&stat))));
                let dir = (depth + 1 < HELD_FOLDERS).then_some(dir);
                Some(Frame { dir, path, depth, entries: entries.into_iter() })
            }
            Err(()) => {
                self.unreadable(&path, read);
                None
            }
        }
    }

    /// Reads one regular file (or keeps it, when the loader holds it unchanged).
    fn file(&self, at: At<'_>, path: PathBuf, relative: String, read: &mut Read) {
        // A file over its kind's size limit is refused by its size, never read.
        let limit = acompose_engine::limits::for_file(&relative, self.what == "package");
        let display = format!("{}/{relative}", self.label);
        let within =
            |size: u64| limit.and_then(|limit| limit.check(usize::try_from(size).unwrap_or(usize::MAX), &display));
        if let Some(&Observed::File(stat, digest)) = read.known.get(&path)
            && at.stat().is_ok_and(|now| {
                FileType::from_raw_mode(now.st_mode) == FileType::RegularFile
                    && Stat::of_raw(&now) == stat
                    && within(stat.size).is_none()
            })
        {
            read.observed.push((path, Observed::File(stat, digest)));
            read.files.push((relative, Body::Kept));
            return;
        }
        let cannot = |error: rustix::io::Errno| {
            Diagnostic::error("unreadable-file", format!("cannot read this file: {}", error_kind(&error.into())))
                .in_file(display.clone())
                .hint("check its permissions")
        };
        // The metadata of the opened file is taken before its bytes, so a write racing
        // the read makes the cache see a change next time rather than miss one. A file
        // swapped for a pipe after the listing is not waited on.
        let opened = at.open(OFlags::NONBLOCK).and_then(|fd| rustix::fs::fstat(&fd).map(|stat| (fd, stat)));
        let (fd, stat) = match opened {
            Ok(opened) => opened,
            Err(error) => return read.diagnostics.push(cannot(error)),
        };
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return self.not_regular(&relative, read);
        }
        let stat = Stat::of_raw(&stat);
        if let Some(too_large) = within(stat.size) {
            // Fingerprinted by its metadata alone: a change of size or time is seen.
            read.observed.push((path, Observed::File(stat, [0; 32])));
            return read.diagnostics.push(too_large);
        }
        let bytes = match read_whole(fd.as_fd(), stat.size) {
            Ok(bytes) => bytes,
            Err(error) => return read.diagnostics.push(cannot(error)),
        };
        drop(fd);
        let body = if read.summarize && Summarized::applies_to(&relative) {
            let display = if self.label.is_empty() { relative.clone() } else { display };
            let summarized = Summarized::of(path.clone(), &display, &relative, &bytes);
            read.observed.push((path, Observed::File(stat, summarized.raw_digest)));
            if super::holds(&read.hold, &relative) {
                read.held.push((summarized.raw_digest, bytes));
            }
            Body::Summarized(Arc::new(summarized))
        } else {
            read.observed.push((path, Observed::File(stat, *blake3::hash(&bytes).as_bytes())));
            Body::Bytes(bytes)
        };
        read.files.push((relative, body));
    }
}

/// Reads an open file whose metadata said `expected` bytes: one call when it still holds
/// exactly that many (the call asks for one byte more, and a regular file answers short
/// only at its end); a file that grew or shrank meanwhile is read as it is now.
pub(crate) fn read_whole(fd: BorrowedFd<'_>, expected: u64) -> rustix::io::Result<Bytes> {
    let expected = usize::try_from(expected).unwrap_or(usize::MAX - 1);
    let mut buffer = vec![0u8; expected.saturating_add(1)];
    let mut filled = 0;
    loop {
        if filled == buffer.len() {
            buffer.resize(buffer.len().saturating_mul(2), 0);
        }
        match rustix::io::read(fd, &mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => {
                filled += read;
                if filled == expected && filled < buffer.len() {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(Bytes::from(&buffer[..filled]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn a_file_is_read_whole_whatever_size_its_metadata_said() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let path = temporary.path().join("file");
        let text = "x".repeat(5000);
        std::fs::write(&path, &text).expect("write");
        for expected in [0, 1, 4999, 5000, 5001, 20_000] {
            let file = std::fs::File::open(&path).expect("open");
            let bytes = read_whole(file.as_fd(), expected).expect("read");
            assert_eq!(&bytes[..], text.as_bytes(), "{expected}");
        }
    }

    #[test]
    fn a_catalogue_is_walked_in_name_order_refusing_links_and_leaving_hidden_names_out() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        let skills = root.join(".agents/skills");
        write(&skills.join("b-skill/SKILL.md"), "b");
        write(&skills.join("a-skill/SKILL.md"), "a");
        write(&skills.join("a-skill/refs/x.md"), "x");
        write(&skills.join("a-skill/.notes"), "hidden");
        std::os::unix::fs::symlink("SKILL.md", skills.join("a-skill/link")).expect("link");
        let read = super::super::read_catalogue(root, "repo", false).expect("a catalogue");
        let files: Vec<&str> = read.files.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(
            files,
            [".agents/skills/a-skill/SKILL.md", ".agents/skills/a-skill/refs/x.md", ".agents/skills/b-skill/SKILL.md"]
        );
        let codes: Vec<&str> = read.diagnostics.iter().map(|diagnostic| diagnostic.code).collect();
        assert_eq!(codes, ["unportable-name", "symlink-refused"]);
        let observed: HashMap<&Path, Observed> =
            read.observed.iter().map(|(path, observed)| (path.as_path(), *observed)).collect();
        assert!(matches!(observed[skills.join("a-skill/refs").as_path()], Observed::Directory(_)));
        let Observed::File(stat, digest) = observed[skills.join("b-skill/SKILL.md").as_path()] else {
            panic!("a file is observed as read")
        };
        assert_eq!((stat.size, digest), (1, *blake3::hash(b"b").as_bytes()));
    }

    #[test]
    fn a_file_held_unchanged_is_kept_unread_and_a_changed_one_is_read_again() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        let skills = root.join(".agents/skills");
        write(&skills.join("a/SKILL.md"), "a");
        write(&skills.join("b/SKILL.md"), "b");
        let first = super::super::read_catalogue(root, "repo", false).expect("a catalogue");
        let known: HashMap<PathBuf, Observed> = first.observed.into_iter().collect();
        write(&skills.join("b/SKILL.md"), "b, longer");
        let again = super::super::read_catalogue_knowing(root, "repo", false, known, None).expect("a catalogue");
        let bodies: Vec<(&str, bool)> =
            again.files.iter().map(|(path, body)| (path.as_str(), matches!(body, Body::Kept))).collect();
        assert_eq!(bodies, [(".agents/skills/a/SKILL.md", true), (".agents/skills/b/SKILL.md", false)]);
    }
}
