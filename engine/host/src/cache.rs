//! The persisted fingerprint cache (`<home>/cache/fingerprints`): what every input and
//! output looked like after the last convergence. A repeated run stats them and, when
//! nothing changed, finishes without reading a file body or writing anything. A file
//! whose metadata changed but whose bytes hash the same counts as unchanged. A cache
//! that is corrupt, foreign or from another build is discarded with a warning.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::observe::{Observed, Stat};

pub const CACHE_DIR: &str = "cache";
pub const CACHE_FILE: &str = "fingerprints";
const MAGIC: &str = "acompose-fingerprints 1";

/// What the cache remembers of the last convergence's result, to print the summary again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    pub source: String,
    pub roles: usize,
    pub personalities: usize,
    pub artifact_files: usize,
    pub bundles: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cache {
    /// The build and settings the cache was made with (binary, embedded roster, projects root).
    pub identity: String,
    pub summary: Summary,
    /// Inputs sorted by path; a list, not a map, because a no-op run only walks it.
    pub inputs: Vec<(PathBuf, Observed)>,
    pub outputs: Vec<(PathBuf, Stat)>,
}

/// The identity of this build and its settings: a cache made by anything else is foreign.
/// The running executable's size and time stand for the build (a rebuild with the same
/// version may render differently).
pub fn identity(projects: &Path) -> String {
    let executable = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|metadata| Stat::of(&metadata))
        .map_or_else(|_| "unknown".to_owned(), |stat| format!("{}-{}", stat.size, stat.modified_nanos));
    let mut hasher = blake3::Hasher::new();
    for (path, bytes) in acompose_roster::files() {
        hasher.update(path.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    format!(
        "{} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        executable,
        &hasher.finalize().to_hex()[..16],
        projects.display().to_string().replace(['\n', '\t'], " ")
    )
}

fn hex(bytes: &[u8; 32]) -> impl std::fmt::Display {
    blake3::Hash::from_bytes(*bytes).to_hex()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    blake3::Hash::from_hex(text).ok().map(|hash| *hash.as_bytes())
}

impl Cache {
    /// Serializes the cache; `None` when a path cannot be written in its line format.
    pub fn to_text(&self) -> Option<String> {
        let mut text = Vec::new();
        self.write_text(&mut text).ok()?;
        String::from_utf8(text).ok()
    }

    /// Writes the cache's text to `out` line by line (a large estate's cache is
    /// megabytes; it is never held whole). Fails with `InvalidData`, having written part
    /// of it, when a path holds a newline or a tab: such a cache is not written at all.
    pub fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let unclean = || std::io::Error::from(std::io::ErrorKind::InvalidData);
        writeln!(out, "{MAGIC}")?;
        writeln!(out, "identity\t{}", self.identity)?;
        let summary = &self.summary;
        writeln!(
            out,
            "summary\t{}\t{}\t{}\t{}\t{}",
            summary.source, summary.roles, summary.personalities, summary.artifact_files, summary.bundles
        )?;
        fn clean(path: &Path) -> Option<&str> {
            path.to_str().filter(|text| !text.contains(['\n', '\t']))
        }
        // A missing path whose parent folder is recorded is covered by that folder: making
        // the path changes the folder's time. Such lines (`m`) are not stat'ed by the
        // no-op check.
        let folders: std::collections::HashSet<&Path> = self
            .inputs
            .iter()
            .filter(|(_, observed)| matches!(observed, Observed::Directory(_)))
            .map(|(path, _)| path.as_path())
            .collect();
        for (path, observed) in &self.inputs {
            let covered = path.parent().is_some_and(|parent| folders.contains(parent));
            let path = clean(path).ok_or_else(unclean)?;
            match observed {
                Observed::Directory(stat) => {
                    writeln!(out, "D\t{}\t{}\t{path}", stat.modified_nanos, stat.inode)?;
                }
                Observed::File(stat, digest) => {
                    writeln!(
                        out,
                        "F\t{}\t{}\t{}\t{}\t{path}",
                        stat.size,
                        stat.modified_nanos,
                        stat.inode,
                        hex(digest)
                    )?;
                }
                Observed::Missing => {
                    writeln!(out, "{}\t{path}", if covered { "m" } else { "M" })?;
                }
                Observed::Unreachable => {
                    writeln!(out, "U\t{path}")?;
                }
            }
        }
        for (path, stat) in &self.outputs {
            let path = clean(path).ok_or_else(unclean)?;
            writeln!(out, "O\t{}\t{}\t{}\t{path}", stat.size, stat.modified_nanos, stat.inode)?;
        }
        out.write_all(b"end\n")
    }

    /// Parses a cache; `Err` with a short reason when it is not one this build wrote.
    pub fn parse(text: &str) -> Result<Cache, &'static str> {
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err("it is not a fingerprint cache of this format");
        }
        let mut cache = Cache::default();
        let mut ended = false;
        for line in lines {
            if ended {
                return Err("it has data after its end");
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let number = |index: usize| fields.get(index).and_then(|field| field.parse::<u64>().ok());
            let nanos = |index: usize| fields.get(index).and_then(|field| field.parse::<i128>().ok());
            match fields.as_slice() {
                ["identity", identity] => cache.identity = (*identity).to_owned(),
                ["summary", source, ..] if fields.len() == 6 => {
                    cache.summary = Summary {
                        source: (*source).to_owned(),
                        roles: number(2).ok_or("its summary is damaged")? as usize,
                        personalities: number(3).ok_or("its summary is damaged")? as usize,
                        artifact_files: number(4).ok_or("its summary is damaged")? as usize,
                        bundles: number(5).ok_or("its summary is damaged")? as usize,
                    }
                }
                ["D", _, _, path] => {
                    let stat = Stat {
                        size: 0,
                        modified_nanos: nanos(1).ok_or("a line is damaged")?,
                        inode: number(2).ok_or("a line is damaged")?,
                    };
                    cache.inputs.push((PathBuf::from(path), Observed::Directory(stat)));
                }
                ["F", _, _, _, digest, path] => {
                    let stat = Stat {
                        size: number(1).ok_or("a line is damaged")?,
                        modified_nanos: nanos(2).ok_or("a line is damaged")?,
                        inode: number(3).ok_or("a line is damaged")?,
                    };
                    let digest = unhex(digest).ok_or("a digest is damaged")?;
                    cache.inputs.push((PathBuf::from(path), Observed::File(stat, digest)));
                }
                ["M" | "m", path] => {
                    cache.inputs.push((PathBuf::from(path), Observed::Missing));
                }
                ["U", path] => {
                    cache.inputs.push((PathBuf::from(path), Observed::Unreachable));
                }
                ["O", _, _, _, path] => {
                    let stat = Stat {
                        size: number(1).ok_or("a line is damaged")?,
                        modified_nanos: nanos(2).ok_or("a line is damaged")?,
                        inode: number(3).ok_or("a line is damaged")?,
                    };
                    cache.outputs.push((PathBuf::from(path), stat));
                }
                ["end"] => ended = true,
                _ => return Err("a line is damaged"),
            }
        }
        if !ended {
            return Err("it is truncated");
        }
        Ok(cache)
    }
}

/// The result of comparing the cache with the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Nothing changed; `touched` inputs (by index) changed metadata only (same hash).
    Unchanged { touched: Vec<(usize, Observed)> },
    /// Something changed; converge.
    Changed,
}

/// Counts for `--stats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckCounters {
    pub stated: usize,
    pub read: usize,
    pub hashed: usize,
}

/// Stats every recorded input and output (in parallel); hashes only files whose metadata
/// moved.
pub fn check(cache: &Cache, counters: &mut CheckCounters) -> Check {
    counters.stated = cache.inputs.len() + cache.outputs.len();
    let outputs_ok = cache.outputs.par_iter().all(|(path, recorded)| {
        std::fs::symlink_metadata(path).is_ok_and(|metadata| is_output(&metadata) && Stat::of(&metadata) == *recorded)
    });
    if !outputs_ok {
        return Check::Changed;
    }
    enum Verdict {
        Same,
        Suspect(usize, [u8; 32]),
        Changed,
    }
    let verdicts: Vec<Verdict> = cache
        .inputs
        .par_iter()
        .enumerate()
        .map(|(index, (path, recorded))| match (recorded, std::fs::symlink_metadata(path)) {
            (Observed::Missing | Observed::Unreachable, Err(_)) => Verdict::Same,
            (Observed::Missing | Observed::Unreachable, Ok(_)) => Verdict::Changed,
            (Observed::Directory(stat), Ok(metadata)) if metadata.is_dir() && !metadata.file_type().is_symlink() => {
                let now = Stat::of(&metadata);
                if now.modified_nanos == stat.modified_nanos && now.inode == stat.inode {
                    Verdict::Same
                } else {
                    Verdict::Changed
                }
            }
            (Observed::File(stat, digest), Ok(metadata)) if metadata.is_file() => {
                if Stat::of(&metadata) == *stat {
                    Verdict::Same
                } else {
                    Verdict::Suspect(index, *digest)
                }
            }
            _ => Verdict::Changed,
        })
        .collect();
    let mut touched = Vec::new();
    for verdict in verdicts {
        match verdict {
            Verdict::Same => {}
            Verdict::Changed => return Check::Changed,
            Verdict::Suspect(index, digest) => {
                counters.read += 1;
                counters.hashed += 1;
                let path = &cache.inputs[index].0;
                let Ok(metadata) = std::fs::symlink_metadata(path) else { return Check::Changed };
                let Ok(bytes) = std::fs::read(path) else { return Check::Changed };
                let now = *blake3::hash(&bytes).as_bytes();
                if now != digest {
                    return Check::Changed;
                }
                touched.push((index, Observed::File(Stat::of(&metadata), now)));
            }
        }
    }
    Check::Unchanged { touched }
}

/// Reads `<home>/cache/fingerprints`: `Ok(None)` when there is none, `Err` with the
/// reason for a warning when it cannot be used.
pub fn read(home: &Path) -> Result<Option<String>, String> {
    read_named(home, CACHE_FILE)
}

/// [`read`] of another cache file in `<home>/cache` (a composition's).
pub fn read_named(home: &Path, name: &str) -> Result<Option<String>, String> {
    let path = home.join(CACHE_DIR).join(name);
    match std::fs::symlink_metadata(&path) {
        Err(_) => return Ok(None),
        Ok(metadata) if !metadata.is_file() => return Err("it is not a regular file".to_owned()),
        Ok(_) => {}
    }
    std::fs::read_to_string(&path).map(Some).map_err(|_| "it cannot be read as text".to_owned())
}

/// Parses a cache read by [`read`]; `Err` with the reason for a warning.
pub fn parse_for(text: &str, identity: &str) -> Result<Cache, String> {
    match Cache::parse(text) {
        Ok(cache) if cache.identity == identity => Ok(cache),
        Ok(_) => Err("another build or projects root wrote it".to_owned()),
        Err(reason) => Err(reason.to_owned()),
    }
}

/// The no-op fast path: checks every entry straight from the text, in parallel and
/// without building the cache, and answers the summary when every input and output has
/// exactly its recorded metadata. `None` means "look closer" (something moved, or the
/// text is not a cache this build wrote).
pub fn unchanged_at_a_glance(text: &str, identity: &str, counters: &mut CheckCounters) -> Option<Summary> {
    let mut lines = text.split('\n');
    if lines.next() != Some(MAGIC) || lines.next() != Some(&format!("identity\t{identity}")) {
        return None;
    }
    let summary_line = lines.next().filter(|line| line.starts_with("summary\t"))?;
    let summary = Cache::parse(&format!("{MAGIC}\nidentity\t{identity}\n{summary_line}\nend\n")).ok()?.summary;
    // The entries, up to the `end` line; cut into pieces at line ends so that splitting
    // the lines happens in parallel too.
    let header = MAGIC.len() + "identity\t".len() + identity.len() + summary_line.len() + 3;
    let body = text.get(header..)?.strip_suffix("end\n")?;
    if !(body.is_empty() || body.ends_with('\n')) {
        return None;
    }
    let pieces = pieces_at_line_ends(body, 64);
    let same = |line: &str| -> bool {
        // At most six fields; a fixed array keeps this hot loop free of allocation.
        let mut buffer = [""; 6];
        let mut count = 0;
        for field in line.splitn(6, '\t') {
            buffer[count] = field;
            count += 1;
        }
        let fields = &buffer[..count];
        let stat = |path: &str| std::fs::symlink_metadata(path).ok();
        // The recorded numbers are compared as text: formatting what the disk says is
        // several times cheaper than parsing what the cache says.
        let equal = |metadata: &std::fs::Metadata, size: Option<&str>, nanos: &str, inode: &str| {
            let now = Stat::of(metadata);
            let mut buffer = itoa::Buffer::new();
            size.is_none_or(|size| buffer.format(now.size) == size)
                && buffer.format(now.modified_nanos) == nanos
                && buffer.format(now.inode) == inode
        };
        match fields {
            ["D", nanos, inode, path] => {
                stat(path).is_some_and(|metadata| metadata.is_dir() && equal(&metadata, None, nanos, inode))
            }
            ["F", size, nanos, inode, _, path] => {
                stat(path).is_some_and(|metadata| metadata.is_file() && equal(&metadata, Some(size), nanos, inode))
            }
            ["O", size, nanos, inode, path] => {
                stat(path).is_some_and(|metadata| is_output(&metadata) && equal(&metadata, Some(size), nanos, inode))
            }
            ["M" | "U", path] => stat(path).is_none(),
            // Covered by its recorded parent folder.
            ["m", _] => true,
            _ => false,
        }
    };
    let checked: Option<Vec<usize>> = pieces
        .par_iter()
        .map(|piece| {
            let mut lines = 0;
            for line in piece.strip_suffix('\n').unwrap_or(piece).split('\n') {
                if !same(line) {
                    return None;
                }
                lines += usize::from(!line.starts_with("m\t"));
            }
            Some(lines)
        })
        .collect();
    counters.stated = checked?.iter().sum();
    Some(summary)
}

/// Cuts `text` (whole lines) into about `count` pieces, each ending at a line end.
fn pieces_at_line_ends(text: &str, count: usize) -> Vec<&str> {
    let size = text.len().div_ceil(count.max(1)).max(1);
    let mut pieces = Vec::with_capacity(count);
    let mut rest = text;
    while !rest.is_empty() {
        // A newline byte is always a character boundary.
        let cut = match rest.as_bytes().get(size..).and_then(|tail| tail.iter().position(|&byte| byte == b'\n')) {
            Some(offset) => size + offset + 1,
            None => rest.len(),
        };
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Writes the cache atomically (`atomic::replace`). A failure is returned as the warning
/// to show (the cache only saves time; the temporary never stays behind).
pub fn store(home: &Path, cache: &Cache, hooks: &mut dyn crate::transaction::Hooks) -> Result<(), String> {
    write_named(home, CACHE_FILE, &mut |out| cache.write_text(out), hooks)
}

/// Writes a cache as `<home>/cache/<name>`; any failure writes nothing (a composition's
/// cache only saves time).
pub fn store_cache_named(home: &Path, name: &str, cache: &Cache) {
    let _ = write_named(home, name, &mut |out| cache.write_text(out), &mut crate::transaction::NoFaults);
}

/// Writes `bytes` as `<home>/cache/<name>` atomically; `None` or any failure writes
/// nothing (a composition's cache only saves time, and its compose still succeeded).
pub fn store_named(home: &Path, name: &str, bytes: Option<&[u8]>) {
    if let Some(bytes) = bytes {
        let _ = write_named(home, name, &mut |out| out.write_all(bytes), &mut crate::transaction::NoFaults);
    }
}

/// Writes `bytes` as `<home>/cache/<name>` atomically, refusing a linked cache folder.
/// A cache path with a newline or a tab (`InvalidData` from the writer) is not an error:
/// no cache is written and the next run converges in full.
fn write_named(
    home: &Path,
    name: &str,
    write: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
    hooks: &mut dyn crate::transaction::Hooks,
) -> Result<(), String> {
    let directory = home.join(CACHE_DIR);
    let problem = |error: &std::io::Error| {
        format!(
            "cannot save the fingerprint cache in `{}`: {}; the next run converges in full",
            directory.display(),
            crate::load::error_kind(error)
        )
    };
    if std::fs::symlink_metadata(&directory).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        return Err(format!(
            "cannot save the fingerprint cache: `{}` is a symbolic link; the next run converges in full",
            directory.display()
        ));
    }
    std::fs::create_dir_all(&directory).map_err(|error| problem(&error))?;
    let target = directory.join(name);
    hooks.before(crate::transaction::Step::WriteTemporary(&target)).map_err(|error| problem(&error))?;
    // The temporary is removed when the write fails (it is dropped unpersisted).
    match crate::atomic::replace_with(&directory, name, write) {
        Ok(()) => Ok(()),
        Err(error) if error.cause.as_ref().is_some_and(|cause| cause.kind() == std::io::ErrorKind::InvalidData) => {
            Ok(())
        }
        Err(error) => Err(match &error.cause {
            Some(cause) => problem(cause),
            None => format!("{}; the next run converges in full", error.message),
        }),
    }
}

/// Stats every file under `root` (recursively) as output fingerprints.
/// An output is a file, or a store entry recorded by its folder ([`entry_stat`]).
fn is_output(metadata: &std::fs::Metadata) -> bool {
    metadata.is_file() || metadata.is_dir()
}

/// Records a store entry by its folders (the entry's own and any below it). Entries are
/// immutable and read-only: one that loses, gains or renames a file changes the time of
/// the folder that held it, and a file edited in place inside one (which takes changing
/// its permissions first) is for `verify` to find. Stat'ing every file of every tree
/// would make the no-op check a third longer.
pub fn entry_stat(entry: &Path, into: &mut Vec<(PathBuf, Stat)>) {
    for folder in walkdir::WalkDir::new(entry).follow_links(false).into_iter().flatten() {
        if folder.file_type().is_dir()
            && let Ok(metadata) = folder.metadata()
        {
            into.push((folder.path().to_path_buf(), Stat::of(&metadata)));
        }
    }
}

pub fn output_stats(root: &Path, into: &mut Vec<(PathBuf, Stat)>) {
    for entry in walkdir::WalkDir::new(root).follow_links(false).into_iter().flatten() {
        if entry.file_type().is_file()
            && let Ok(metadata) = entry.metadata()
        {
            into.push((entry.path().to_path_buf(), Stat::of(&metadata)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let mut cache = Cache { identity: "x 1 /p".to_owned(), ..Cache::default() };
        cache.summary =
            Summary { source: "roster:core".to_owned(), roles: 7, personalities: 10, artifact_files: 25, bundles: 0 };
        cache.inputs.push((PathBuf::from("/a"), Observed::Directory(Stat { size: 0, modified_nanos: 1, inode: 2 })));
        let file = Observed::File(Stat { size: 3, modified_nanos: -5, inode: 9 }, [7; 32]);
        cache.inputs.push((PathBuf::from("/a/b"), file));
        cache.inputs.push((PathBuf::from("/gone"), Observed::Missing));
        cache.outputs.push((PathBuf::from("/o"), Stat { size: 1, modified_nanos: 2, inode: 3 }));
        let text = cache.to_text().expect("text");
        assert_eq!(Cache::parse(&text), Ok(cache));
        assert!(Cache::parse(&text.replace("end\n", "")).is_err());
        assert!(Cache::parse("garbage").is_err());
        assert!(Cache::parse(&text.replace("\tF\t", "\tX\t").replace("F\t3", "F\tthree")).is_err());
    }

    #[test]
    fn pieces_end_at_line_ends_and_rejoin() {
        let text: String = (0..500).map(|index| format!("F\t{index}\t/päth/ünïcode/{index}\n")).collect();
        for count in [1, 7, 64, 10_000] {
            let pieces = pieces_at_line_ends(&text, count);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|piece| piece.ends_with('\n')), "{count}");
        }
        assert!(pieces_at_line_ends("", 64).is_empty());
    }

    #[test]
    fn a_missing_path_is_covered_by_its_recorded_folder() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let folder = temporary.path().join("folder");
        std::fs::create_dir(&folder).expect("mkdir");
        let observe = |path: &Path| crate::observe::observe(path);
        let mut cache = Cache { identity: "test".to_owned(), ..Cache::default() };
        cache.inputs.push((folder.clone(), observe(&folder)));
        cache.inputs.push((folder.join("later"), Observed::Missing));
        cache.inputs.push((temporary.path().join("elsewhere/deep"), Observed::Missing));
        let text = cache.to_text().expect("text");
        assert!(text.contains(&format!("m\t{}", folder.join("later").display())), "{text}");
        assert!(text.contains(&format!("M\t{}", temporary.path().join("elsewhere/deep").display())), "{text}");
        let mut counters = CheckCounters::default();
        assert!(unchanged_at_a_glance(&text, "test", &mut counters).is_some());
        assert_eq!(counters.stated, 2, "the covered path is not stat'ed");
        // Making the covered path changes its folder (past the timestamp tick).
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(folder.join("later"), "now").expect("write");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        assert!(matches!(check(&Cache::parse(&text).expect("parse"), &mut CheckCounters::default()), Check::Changed));
        // A missing path without a recorded folder is stat'ed itself.
        std::fs::remove_file(folder.join("later")).expect("remove");
        let mut cache = Cache::parse(&text).expect("parse");
        cache.inputs[0].1 = observe(&folder);
        let text = cache.to_text().expect("text");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_some());
        std::fs::create_dir_all(temporary.path().join("elsewhere/deep")).expect("mkdir");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        // A path that could not be looked at (a folder on the way not searchable) is never
        // covered: making it reachable changes no folder's time.
        let mut cache = Cache { identity: "test".to_owned(), ..Cache::default() };
        cache.inputs.push((folder.clone(), observe(&folder)));
        cache.inputs.push((folder.join("hidden"), Observed::Unreachable));
        let text = cache.to_text().expect("text");
        assert!(text.contains(&format!("U\t{}", folder.join("hidden").display())), "{text}");
        assert_eq!(Cache::parse(&text).expect("parse").inputs[1].1, Observed::Unreachable);
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_some());
        std::fs::write(folder.join("hidden"), "now reachable").expect("write");
        let mut cache = Cache::parse(&text).expect("parse");
        cache.inputs[0].1 = observe(&folder);
        let text = cache.to_text().expect("text");
        assert!(unchanged_at_a_glance(&text, "test", &mut CheckCounters::default()).is_none());
        assert!(matches!(check(&cache, &mut CheckCounters::default()), Check::Changed));
    }
}
