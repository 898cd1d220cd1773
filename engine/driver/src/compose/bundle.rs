//! Bundles on disk: materializing one (staging folder, verification, rename — the one
//! path by which an immutable output appears), either linking its skills into a content
//! store or as a standalone copy, verifying a bundle directory (through its store links),
//! and reading a bundle's manifest and trace back. Builds no bundle (the engine does) and
//! writes no store entry itself (`store` does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::SourcedFile;
use acompose_engine::bundle::{
    Bundle, FileFacts, MANIFEST_FORMAT, Manifest, TraceFile, Verified, WholeFiles, verify_facts,
};
use acompose_engine::store::{SKILLS_PREFIX, StoreLayout, TreeBody, layout};
use acompose_engine::trace::{self, Trace};
use rayon::prelude::*;

use crate::compose::load::error_kind;
use crate::compose::parted::{self, OwnFile, OwnRead};
use crate::compose::store::{Store, Written, relative_path, slice_of_link_resolving};
use crate::error::HostError;
use acompose_engine::bundle::{BundleJsonError, read_bundle_json};
use acompose_engine::diagnostic::{listed, sanitize};
use acompose_engine::limits;

/// Whether a bundle was written now or found already in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Materialized {
    New,
    Reused,
}

impl Materialized {
    pub fn name(self) -> &'static str {
        match self {
            Materialized::New => "new",
            Materialized::Reused => "reused",
        }
    }
}

/// How an existing or staged bundle is checked before it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Re-read and re-hash every file (what `verify` does).
    Full,
    /// Compare the manifest's bytes with the expected ones and every file's size; the id
    /// is content-addressed, so this catches missing, truncated or foreign bundles
    /// without reading every byte (estate convergence and watch mode).
    Light,
}

/// Where a bundle's skills are expected: the store and the layout in it.
type Linked<'a> = Option<(&'a Store, &'a StoreLayout<'a>)>;

/// The store trees one materialization wrote itself (by key), after verifying their bytes
/// against their names.
type FreshTrees<'a> = std::collections::HashSet<&'a str>;

/// Checks `directory` against the bundle we expect to find there: with `linked`, its
/// skill folders must be links to the expected slices of that store; with `deep` (a
/// bundle found in place), the trees they reach are checked at a glance as well.
fn check_against(
    directory: &Path,
    bundle: &Bundle,
    linked: Linked<'_>,
    verification: Verification,
    deep: bool,
    fresh: &FreshTrees<'_>,
) -> Result<(), String> {
    match verification {
        Verification::Full => check_contents(directory, bundle, linked, fresh),
        Verification::Light => {
            let manifest = bundle.files.iter().find(|file| file.path == "manifest.json").map(|file| &file.bytes[..]);
            match parted::manifest_bytes(directory) {
                Ok(bytes) if Some(&bytes[..]) == manifest => {}
                _ => return Err("manifest.json differs from the expected one".to_owned()),
            }
            let expected: Vec<(&str, u64)> = match linked {
                Some((store, layout)) => {
                    check_links(directory, store, layout, deep)?;
                    layout.own.iter().map(|file| (file.path.as_str(), file.bytes.len() as u64)).collect()
                }
                None => bundle
                    .files
                    .iter()
                    .map(|file| (file.path.as_str(), file.bytes.len() as u64))
                    .chain(bundle.sourced.iter().map(|file| (file.path.as_str(), file.source.summary.raw_length)))
                    .collect(),
            };
            let trace = (TraceFile::PATH, bundle.trace.length);
            let mismatch =
                expected.into_par_iter().chain([trace]).filter(|(path, _)| *path != "manifest.json").find_any(
                    |(path, length)| {
                        // What was written is checked whatever its size: the readers' limits are
                        // theirs to apply.
                        let unbounded = limits::Limit { bytes: usize::MAX, ..parted::own_limit(path) };
                        !OwnFile::locate(directory, path, unbounded)
                            .is_ok_and(|file| file.is_some_and(|file| file.looks_intact(*length)))
                    },
                );
            match mismatch {
                Some((path, _)) => Err(format!("{path}: missing or of another size")),
                None => Ok(()),
            }
        }
    }
}

/// The full check of a directory against the bundle expected there: every file it holds
/// (its skills through the store links) has the size and digest the bundle's own files
/// have, and no other file is there. Everything else `verify` checks follows: the
/// manifest is the expected one byte for byte, and the id is its digest. Each file is
/// hashed as it is read; none is kept.
///
/// The trees in `fresh` were verified against their names before this process staged
/// them and wrote them itself: they are not read again, and the bundle's files inside
/// them are taken as they were verified.
fn check_contents(directory: &Path, bundle: &Bundle, linked: Linked<'_>, fresh: &FreshTrees<'_>) -> Result<(), String> {
    if let Some((store, layout)) = linked {
        check_links(directory, store, layout, false)?;
    }
    let (found, problems, skipped) =
        read_all(directory, &|_, bytes: Vec<u8>| FileFacts::of(&bytes), &facts_of_own, fresh)
            .map_err(|problems| listed(&problems, "; "))?;
    if !problems.is_empty() {
        return Err(listed(&problems, "; "));
    }
    // Every skipped prefix ends with `/`: a path is left out when one of its own prefixes
    // up to a `/` is among them. Files left out get no expected facts at all.
    let skipped: std::collections::HashSet<&str> = skipped.iter().map(String::as_str).collect();
    let checked = |path: &str| !path.match_indices('/').any(|(at, _)| skipped.contains(&path[..=at]));
    let mut expected: BTreeMap<&str, FileFacts> = bundle
        .files
        .iter()
        .filter(|file| checked(&file.path))
        .map(|file| (file.path.as_str(), FileFacts::of(&file.bytes)))
        .chain(bundle.sourced.iter().filter(|file| checked(&file.path)).map(|file| {
            let facts = FileFacts {
                bytes: file.source.summary.raw_length,
                digest: format!("blake3:{}", blake3::Hash::from_bytes(file.source.raw_digest).to_hex()),
            };
            (file.path.as_str(), facts)
        }))
        .chain([(TraceFile::PATH, FileFacts { bytes: bundle.trace.length, digest: bundle.trace.digest.clone() })])
        .collect();
    for (path, facts) in &found {
        match expected.remove(path.as_str()) {
            None => return Err(format!("{path}: is not part of the bundle")),
            Some(wanted) if wanted != *facts => return Err(format!("{path}: differs from the bundle")),
            Some(_) => {}
        }
    }
    match expected.keys().next() {
        Some(path) => Err(format!("{path}: missing")),
        None => Ok(()),
    }
}

/// Every provider folder of a bundle links to its slice in `store`; with `deep`, every
/// tree of the layout holds its files at their sizes.
fn check_links(directory: &Path, store: &Store, layout: &StoreLayout<'_>, deep: bool) -> Result<(), String> {
    // Each link must hold exactly the relative target it was written with (from the
    // resolved skills folder to the resolved store), so one resolution of each serves
    // every link, and the slice it names must be in the store.
    let root = store.canonical()?;
    let skills_folder = directory
        .canonicalize()
        .map_err(|error| format!("cannot resolve `{}`: {}", directory.display(), error_kind(&error)))?
        .join(SKILLS_PREFIX.trim_end_matches('/'));
    let real_folder = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_dir());
    let skills = directory.join(SKILLS_PREFIX.trim_end_matches('/'));
    let folders_real = real_folder(skills.parent().unwrap_or(directory)) && real_folder(&skills);
    if !folders_real && !layout.slices.is_empty() {
        return Err(format!("{SKILLS_PREFIX}: not a folder of the bundle"));
    }
    for slice in &layout.slices {
        let link = directory.join(format!("{SKILLS_PREFIX}{}", slice.source));
        let name = slice.entry_name();
        let expected = relative_path(&skills_folder, &root.join(&name));
        if !std::fs::read_link(&link).is_ok_and(|target| target == expected) || !store.contains(&name) {
            return Err(format!("{SKILLS_PREFIX}{}: not a link to its store entry", slice.source));
        }
    }
    if deep && let Some(tree) = layout.trees.par_iter().find_any(|tree| !store.tree_looks_intact(tree)) {
        return Err(format!("store entry `{}` is damaged", store.root().join(&tree.key).display()));
    }
    Ok(())
}

/// Where a bundle's skills go.
#[derive(Debug, Clone, Copy)]
pub enum Placement<'store> {
    /// Real copies inside the bundle folder (`compose --standalone`, export).
    Standalone,
    /// Skill trees in the store; the bundle links one slice per provider.
    Linked(&'store Store),
}

/// What a materialization did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Materialization {
    pub outcome: Materialized,
    /// Files, links and store entries written.
    pub written: usize,
}

/// Writes a standalone bundle into `out/<id>`: staging folder, verification, rename. An
/// existing bundle is verified and reused; a damaged one is an error.
///
/// Under the lock of `out`: the staging folders and temporaries interrupted runs left
/// there are removed first (no other run is live in `out` while the lock is held).
pub fn materialize(out: &Path, bundle: &Bundle) -> Result<Materialized, HostError> {
    let target = out.join(&bundle.id);
    std::fs::create_dir_all(out).map_err(|error| {
        HostError::environment(&target, format!("cannot create `{}`: {}", out.display(), error_kind(&error)))
    })?;
    let _lock = crate::home::transaction::lock(out, crate::home::LOCK_TIMEOUT)?;
    crate::home::debris::remove(out);
    materialize_with(out, bundle, Verification::Full)
}

/// [`materialize`] with a chosen verification of what is found or staged.
pub fn materialize_with(out: &Path, bundle: &Bundle, verification: Verification) -> Result<Materialized, HostError> {
    materialize_into(out, bundle, Placement::Standalone, verification, &mut || Ok(()))
        .map(|materialization| materialization.outcome)
}

/// Writes a bundle into `out/<id>` with its skills placed as asked. Store entries are
/// written (each staged, verified, renamed) before the bundle is staged; `before_rename`
/// runs between the verified staging folder and its rename (tests fail there on purpose).
pub fn materialize_into(
    out: &Path,
    bundle: &Bundle,
    placement: Placement<'_>,
    verification: Verification,
    before_rename: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Materialization, HostError> {
    stage_verify_rename(out, bundle, placement, verification, before_rename)
        .map_err(|message| HostError::environment(out.join(&bundle.id), message))
}

/// Up to how many store entries [`write_store_entries`] looks for one by one instead of
/// listing the store.
const FEW_ENTRIES: usize = 64;

/// Writes the store entries of a layout; returns how many were new, and the trees it
/// wrote. Slices this store value already wrote or checked whole are not looked into
/// again; the trees of the others are written or checked at a glance.
fn write_store_entries<'a>(store: &Store, layout: &'a StoreLayout<'_>) -> Result<(usize, FreshTrees<'a>), String> {
    store.create()?;
    let unknown: Vec<_> = layout.slices.iter().filter(|slice| !store.knows_slice(&slice.entry_name())).collect();
    let needed: std::collections::BTreeSet<&str> =
        unknown.iter().flat_map(|slice| slice.skills.iter().map(|(_, key)| key.as_str())).collect();
    if unknown.is_empty() {
        return Ok((0, FreshTrees::new()));
    }
    store.begin_staging();
    // A few entries (a watch edit's one slice and its trees) are each looked for by
    // name; more are found by listing the store once, which on a large store reads
    // thousands of names.
    let names = unknown.len() + needed.len();
    let listed = (names > FEW_ENTRIES).then(|| store.names());
    let there = |name: &str| match &listed {
        Some(listed) => listed.contains(name),
        None => std::fs::symlink_metadata(store.root().join(name)).is_ok(),
    };
    let trees: Vec<(&str, Written)> = layout
        .trees
        .par_iter()
        .filter(|tree| needed.contains(tree.key.as_str()))
        .map(|tree| store.put_tree_listed(tree, there(&tree.key)).map(|written| (tree.key.as_str(), written)))
        .collect::<Result<_, _>>()
        .inspect_err(|_| store.end_staging())?;
    let fresh: FreshTrees<'a> =
        trees.iter().filter(|(_, written)| *written == Written::New).map(|(key, _)| *key).collect();
    // The slices after every tree they link is in place, in parallel among themselves
    // (each is staged in a folder of its own).
    let new_slices = unknown
        .par_iter()
        .map(|slice| {
            let written = store.put_slice_listed(slice, there(&slice.entry_name()))?;
            store.know_slice(&slice.entry_name());
            Ok::<_, String>(usize::from(written == Written::New))
        })
        .try_reduce(|| 0, |a, b| Ok(a + b));
    store.end_staging();
    Ok((fresh.len() + new_slices?, fresh))
}

/// The bundle's links to its slices: (link path inside the bundle, relative target).
fn bundle_links(
    out: &Path,
    id: &str,
    store: &Store,
    layout: &StoreLayout<'_>,
) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    // The staging folder and the bundle share a parent, so one relative target serves
    // both.
    let skills_folder = out
        .canonicalize()
        .map_err(|error| format!("cannot resolve `{}`: {}", out.display(), error_kind(&error)))?
        .join(id)
        .join(SKILLS_PREFIX.trim_end_matches('/'));
    let store_root = store.canonical()?;
    Ok(layout
        .slices
        .iter()
        .map(|slice| {
            (
                PathBuf::from(format!("{SKILLS_PREFIX}{}", slice.source)),
                relative_path(&skills_folder, &store_root.join(slice.entry_name())),
            )
        })
        .collect())
}

/// Where a bundle staged beside a store keeps its large own files: the store, and the
/// store's path relative to the bundle's folder (which the staging folder shares).
type Parting<'a> = Option<(&'a Store, String)>;

/// The store's path as a bundle of `out` reaches it, when a list can name it (`/`-separated
/// text); `None` keeps every file whole.
fn parting<'a>(out: &Path, id: &str, store: &'a Store) -> Result<Parting<'a>, String> {
    let folder = out
        .canonicalize()
        .map_err(|error| format!("cannot resolve `{}`: {}", out.display(), error_kind(&error)))?
        .join(id);
    store.create()?;
    let relative = relative_path(&folder, &store.canonical()?);
    let parts: Option<Vec<&str>> = relative.components().map(|component| component.as_os_str().to_str()).collect();
    Ok(parts.map(|parts| (store, parts.join("/"))))
}

/// From what size an own file of a bundle beside a store is a link to a store entry
/// rather than a copy: below it, the entry and the link cost more than the bytes.
const LINKED_FROM: usize = 4 * 1024;

/// Writes one own file into the staging folder. Beside a store: a large trace or index
/// as parts; any other large file but the manifest as a hard link to the store entry that
/// holds its bytes (written only when the store lacks it: an edit leaves the instructions
/// as they were, so their bytes are not written again), or whole where a link cannot be
/// made. Returns how many files and entries it wrote.
fn write_own(staging: &Path, relative: &str, bytes: &[u8], parting: &Parting<'_>) -> Result<usize, String> {
    if let Some((store, store_relative)) = parting {
        if acompose_engine::parts::is_parted(relative, bytes.len())
            && let Some(written) = parted::write_parted(store, store_relative, staging, relative, bytes)?
        {
            return Ok(written);
        }
        if bytes.len() >= LINKED_FROM
            && relative != "manifest.json"
            && let Some(written) = parted::link_whole(store, staging, relative, bytes)?
        {
            return Ok(written);
        }
    }
    let path = staging.join(relative);
    std::fs::write(&path, bytes)
        .map_err(|error| format!("cannot write `{}`: {}", path.display(), error_kind(&error)))?;
    Ok(1)
}

/// Writes the bundle's `trace.json` into the staging folder, serialized as it is written
/// (the trace is kept as its record until now). A large one beside a store is kept as
/// parts: streamed into the parts it was cut into when it was composed (only those the
/// store lacks are gathered and written), or, read back from a bundle's files, cut in
/// memory.
fn write_trace(staging: &Path, bundle: &Bundle, parting: &Parting<'_>) -> Result<usize, String> {
    use std::io::Write as _;
    let path = staging.join(TraceFile::PATH);
    let failed = |error: std::io::Error| format!("cannot write `{}`: {}", path.display(), error_kind(&error));
    let large = usize::try_from(bundle.trace.length).unwrap_or(usize::MAX);
    if let Some((store, store_relative)) = parting
        && acompose_engine::parts::is_parted(TraceFile::PATH, large)
        && !bundle.trace.parts.is_empty()
        && let Some(written) = parted::write_streamed(
            store,
            store_relative,
            staging,
            TraceFile::PATH,
            &bundle.trace.parts,
            &bundle.trace.resumes.iter().map(|resume| resume.offset).collect::<Vec<_>>(),
            // The trace hands its bytes over in pieces of tens of kilobytes.
            |resume, out| match resume.and_then(|index| bundle.trace.resumes.get(index)) {
                Some(&from) => bundle.trace.write_from(out, from),
                None => bundle.trace.write_to(out),
            },
        )?
    {
        return Ok(written);
    }
    if parting.is_some() && acompose_engine::parts::is_parted(TraceFile::PATH, large) {
        let mut bytes = Vec::with_capacity(large);
        bundle.trace.write_to(&mut bytes).map_err(failed)?;
        return write_own(staging, TraceFile::PATH, &bytes, parting);
    }
    let file = std::fs::File::create(&path).map_err(failed)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
    bundle.trace.write_to(&mut out).and_then(|()| out.flush()).map_err(failed)?;
    Ok(1)
}

/// Writes a staging folder: its folders, its files in parallel (the large ones as parts
/// when `parting` names a store), then its links. Returns how many files, entries and
/// links it wrote.
fn write_staging(
    staging: &Path,
    files: &[&acompose_engine::OutputFile],
    sourced: &[SourcedFile],
    links: &[(PathBuf, PathBuf)],
    parting: &Parting<'_>,
) -> Result<usize, String> {
    let mut folders: Vec<PathBuf> = files
        .iter()
        .map(|file| staging.join(&file.path))
        .chain(sourced.iter().map(|file| staging.join(&file.path)))
        .chain(links.iter().map(|(link, _)| staging.join(link)))
        .filter_map(|path| path.parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    for folder in &folders {
        std::fs::create_dir_all(folder)
            .map_err(|error| format!("cannot create `{}`: {}", folder.display(), error_kind(&error)))?;
    }
    let written = files
        .par_iter()
        .map(|file| write_own(staging, &file.path, &file.bytes, parting))
        .try_reduce(|| 0, |a, b| Ok(a + b))?;
    sourced.par_iter().try_for_each(|file| {
        let path = staging.join(&file.path);
        let bytes = crate::compose::store::body_bytes(TreeBody::Source(&file.source))?;
        std::fs::write(&path, &bytes)
            .map_err(|error| format!("cannot write `{}`: {}", path.display(), error_kind(&error)))
    })?;
    for (link, link_target) in links {
        let path = staging.join(link);
        std::os::unix::fs::symlink(link_target, &path)
            .map_err(|error| format!("cannot link `{}`: {}", path.display(), error_kind(&error)))?;
    }
    Ok(written + sourced.len() + links.len())
}

fn stage_verify_rename(
    out: &Path,
    bundle: &Bundle,
    placement: Placement<'_>,
    verification: Verification,
    before_rename: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Materialization, String> {
    let target = out.join(&bundle.id);
    let store = match placement {
        Placement::Linked(store) => Some(store),
        Placement::Standalone => None,
    };
    if std::fs::symlink_metadata(&target).is_ok() {
        if store.is_none() && !parted::linked_entries(&target).is_empty() {
            return Err(format!(
                "bundle `{}` exists with its skills linked into a store; remove it to compose a standalone copy",
                target.display()
            ));
        }
        let layout = store.map(|_| layout(&bundle.files, &bundle.sourced));
        return check_against(&target, bundle, store.zip(layout.as_ref()), verification, true, &FreshTrees::new())
            .map(|()| Materialization { outcome: Materialized::Reused, written: 0 })
            .map_err(|problem| {
                format!(
                    "bundle `{}` exists but is damaged ({problem}); remove it to compose it again",
                    target.display()
                )
            });
    }
    std::fs::create_dir_all(out)
        .map_err(|error| format!("cannot create `{}`: {}", out.display(), error_kind(&error)))?;
    let staging = out.join(format!(".staging-{}-{}", bundle.id, crate::compose::store::process_id()));
    let _ = std::fs::remove_dir_all(&staging);
    // `trace.json` is the largest file and is serialized as it is written: it is written
    // beside the store entries, and those beside the bundle's links and other files (a
    // link may be made before its entry: nothing is checked until both are done).
    let layout = store.map(|_| layout(&bundle.files, &bundle.sourced));
    // The store folder exists before anything is staged: links and lists name it.
    let parting = match store {
        Some(store) => parting(out, &bundle.id, store)?,
        None => None,
    };
    let (traced, stored) = match std::fs::create_dir(&staging) {
        Ok(()) => rayon::join(
            || write_trace(&staging, bundle, &parting),
            || match store.zip(layout.as_ref()) {
                Some((store, layout)) => {
                    let (entries, staged) = rayon::join(
                        || write_store_entries(store, layout),
                        || {
                            let links = bundle_links(out, &bundle.id, store, layout)?;
                            write_staging(&staging, &layout.own, &[], &links, &parting)
                        },
                    );
                    let (entries, fresh) = entries?;
                    Ok((entries + staged?, fresh))
                }
                None => {
                    let files: Vec<&acompose_engine::OutputFile> = bundle.files.iter().collect();
                    Ok((write_staging(&staging, &files, &bundle.sourced, &[], &None)?, FreshTrees::new()))
                }
            },
        ),
        Err(error) => (Ok(0), Err(format!("cannot create `{}`: {}", staging.display(), error_kind(&error)))),
    };
    let staged = traced.and_then(|traced| stored.map(|(written, fresh)| (written + traced, fresh))).and_then(
        |(written, fresh)| {
            check_against(&staging, bundle, store.zip(layout.as_ref()), verification, false, &fresh)
                .map_err(|problem| format!("the staged bundle failed verification: {problem}"))?;
            before_rename()?;
            Ok(written)
        },
    );
    let written = match staged {
        Ok(staged) => staged,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error);
        }
    };
    match std::fs::rename(&staging, &target) {
        Ok(()) => Ok(Materialization { outcome: Materialized::New, written }),
        Err(_) if target.is_dir() => {
            // Another composition of the same inputs won the race: same id, same bytes.
            let _ = std::fs::remove_dir_all(&staging);
            check_against(&target, bundle, store.zip(layout.as_ref()), verification, true, &FreshTrees::new())
                .map(|()| Materialization { outcome: Materialized::Reused, written: 0 })
        }
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(format!("cannot move the bundle into `{}`: {}", target.display(), error_kind(&error)))
        }
    }
}

/// The provider of a bundle path `content/skills/<source>`: the one place a bundle may
/// hold a link (into its store).
fn provider_folder(relative: &str) -> Option<&str> {
    relative.strip_prefix(SKILLS_PREFIX).filter(|source| !source.is_empty() && !source.contains('/'))
}

/// Reads every file of a bundle directory, following its provider links into the store
/// (each store entry checked against its name); other symlinks and special files are
/// problems.
pub fn read_bundle(directory: &Path) -> Result<BTreeMap<String, Vec<u8>>, Vec<String>> {
    let (files, problems, _) = read_all(directory, &|_, bytes| bytes, &read_own, &FreshTrees::new())?;
    if problems.is_empty() { Ok(files) } else { Err(problems) }
}

/// A bundle's files by path, each as its reader keeps it.
type BundleFiles<T> = BTreeMap<String, T>;

/// What [`read_all`] read: the files, the problems met, and the bundle paths of the
/// trees it left unread.
type BundleRead<T> = (BundleFiles<T>, Vec<String>, Vec<String>);

/// The size limit of a bundle's own file, checked before it is read.
fn own_limit(relative: &str) -> Option<limits::Limit> {
    match relative {
        "manifest.json" => Some(limits::BUNDLE_MANIFEST),
        "trace.json" => Some(limits::BUNDLE_TRACE),
        acompose_engine::trace_index::PATH => Some(limits::BUNDLE_TRACE_INDEX),
        _ => None,
    }
}

/// Reads a bundle's own file (whole, or through its parts) within its size limit.
fn read_own(file: &OwnFile, relative: &str) -> OwnRead<Vec<u8>> {
    match own_limit(relative) {
        Some(limit) => file.read(relative, limit),
        None => std::fs::read(file.path()).map(Ok).map_err(|error| cannot_read(file.path(), &error)),
    }
}

/// The size and digest of a bundle's own file, hashed as it is read (the staged
/// `trace.json` is the largest file a composition writes: it is never held whole), within
/// its size limit as [`read_own`] checks it.
fn facts_of_own(file: &OwnFile, relative: &str) -> OwnRead<FileFacts> {
    file.facts(relative, own_limit(relative))
}

fn cannot_read(path: &Path, error: &std::io::Error) -> String {
    format!("cannot read `{}`: {}", path.display(), error_kind(error))
}

/// What [`read_all`] does with a bundle's own file: the file (whole or parted) and its
/// path in the bundle to what is kept of it, or the size limit it is over.
type KeepOwn<'a, T> = dyn Fn(&OwnFile, &str) -> OwnRead<T> + 'a;

/// [`read_bundle`] that keeps what it could read beside the problems, so that
/// verification can name the files a damaged store entry changed; `keep` turns each
/// store file's path and bytes into what is kept of it as soon as it is read, `own` reads
/// each of the bundle's own files into what is kept of it. `Err` when the folder is no
/// bundle at all.
///
/// The store trees named in `fresh` are not read (see [`check_contents`]); the third
/// value lists the bundle paths (`content/skills/<source>/<skill>/`) left unread so.
fn read_all<T>(
    directory: &Path,
    keep: &dyn Fn(&str, Vec<u8>) -> T,
    own: &KeepOwn<'_, T>,
    fresh: &FreshTrees<'_>,
) -> Result<BundleRead<T>, Vec<String>> {
    match std::fs::symlink_metadata(directory) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(vec![format!("`{}` is a symbolic link", directory.display())]);
        }
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Err(vec![format!("`{}` is not a directory", directory.display())]),
        Err(error) => {
            return Err(vec![format!("cannot open `{}`: {}", directory.display(), error_kind(&error))]);
        }
    }
    // A folder without a manifest is not a bundle; do not read the rest of it.
    if !parted::has_manifest(directory) {
        return Err(vec![format!("`{}` is not a bundle: it has no `manifest.json`", directory.display())]);
    }
    let mut files = BTreeMap::new();
    let mut problems = Vec::new();
    let mut unread = Vec::new();
    let mut resolved = std::collections::HashMap::new();
    for entry in walkdir::WalkDir::new(directory).follow_links(false).sort_by_file_name() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                problems.push("an entry cannot be read".to_owned());
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(directory)
            .unwrap_or(entry.path())
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if entry.path_is_symlink() {
            match provider_folder(&relative).map(|_| slice_of_link_resolving(entry.path(), &mut resolved)) {
                Some(Ok(Some((store, name)))) => {
                    let (slice_files, store_problems, skipped) = store.read_slice_except(&name, fresh);
                    unread.extend(skipped.into_iter().map(|skill| match skill.is_empty() {
                        true => format!("{relative}/"),
                        false => format!("{relative}/{skill}/"),
                    }));
                    files.extend(slice_files.into_iter().map(|(path, bytes)| {
                        let path = format!("{relative}/{path}");
                        let kept = keep(&path, bytes);
                        (path, kept)
                    }));
                    problems.extend(store_problems.into_iter().map(|problem| format!("{relative}: {problem}")));
                }
                Some(Err(problem)) => problems.push(format!("{relative}: {problem}")),
                Some(Ok(None)) | None => problems.push(format!("{relative}: is a symbolic link")),
            }
        } else if entry.file_type().is_file() {
            // A list of parts stands for the file it names (whose parts are in the store).
            let (file, relative) = match acompose_engine::parts::listed_file(&relative) {
                Some(listed) => match OwnFile::of_list(directory, entry.path(), parted::own_limit(listed)) {
                    Ok(file) => (file, listed.to_owned()),
                    Err(problem) => {
                        problems.push(format!("{relative}: {problem}"));
                        continue;
                    }
                },
                None => (OwnFile::Whole(entry.path().to_path_buf()), relative),
            };
            // The manifest and the trace have size limits: checked before they are read.
            match own(&file, &relative) {
                Ok(Ok(kept)) => {
                    if files.insert(relative.clone(), kept).is_some() {
                        problems.push(format!("{relative}: is there both whole and as parts"));
                    }
                }
                Ok(Err(too_large)) => problems.push(format!("{relative}: {}", too_large.message)),
                Err(problem) => problems.push(format!("{relative}: {problem}")),
            }
        } else if !entry.file_type().is_dir() {
            problems.push(format!("{relative}: is not a regular file"));
        }
    }
    // Each problem is one line that names a file of the folder: escaped once, here.
    Ok((files, problems.iter().map(|problem| sanitize(problem)).collect(), unread))
}

fn directory_name(directory: &Path) -> String {
    directory
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Verifies a bundle directory whose name must be its id.
pub fn verify_directory(directory: &Path) -> Result<Verified, Vec<String>> {
    verify_directory_named(directory, &directory_name(directory))
}

/// Verifies a bundle directory against an expected id (a staging folder has another name).
/// Problems reading the folder or its store entries come first, then the engine's.
///
/// Every file is hashed as it is read and only its size and digest are kept (the
/// manifest and the trace, which are parsed, whole), so verifying a large bundle does not
/// hold all of it in memory.
pub fn verify_directory_named(directory: &Path, id: &str) -> Result<Verified, Vec<String>> {
    let keep = |path: &str, bytes: Vec<u8>| {
        let facts = FileFacts::of(&bytes);
        let whole = WholeFiles::wanted(path).then_some(bytes);
        (facts, whole)
    };
    let own =
        |file: &OwnFile, relative: &str| read_own(file, relative).map(|read| read.map(|bytes| keep(relative, bytes)));
    let (mut read, mut problems, _) = read_all(directory, &keep, &own, &FreshTrees::new())?;
    let mut take = |path: &str| read.get_mut(path).and_then(|(_, whole)| whole.take());
    let (manifest, trace, index) =
        (take("manifest.json"), take(TraceFile::PATH), take(acompose_engine::trace_index::PATH));
    let facts: BTreeMap<String, FileFacts> = read.into_iter().map(|(path, (facts, _))| (path, facts)).collect();
    let whole = WholeFiles { manifest: manifest.as_deref(), trace: trace.as_deref(), trace_index: index.as_deref() };
    match verify_facts(id, whole, &facts) {
        Ok(verified) if problems.is_empty() => Ok(verified),
        Ok(_) => Err(problems),
        Err(found) => {
            problems
                .extend(found.into_iter().map(|problem| sanitize(&format!("{}: {}", problem.file, problem.message))));
            Err(problems)
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(bundle: &Path, name: &str) -> Result<T, String> {
    let path = bundle.join(name);
    let limit = if name == "trace.json" { limits::BUNDLE_TRACE } else { limits::BUNDLE_MANIFEST };
    let file = match OwnFile::locate(bundle, name, limit)? {
        Some(file) => file,
        None => return Err(format!("bundle `{}` has no readable `{name}`: not found", bundle.display())),
    };
    let label = path.display().to_string();
    let bytes = file
        .read(&label, limit)?
        .map_err(|too_large| format!("`{label}`: {} [{}]", too_large.message, too_large.code))?;
    read_bundle_json(name, &bytes, &label).map_err(|error| match error {
        BundleJsonError::TooLarge(too_large) => format!("`{label}`: {} [{}]", too_large.message, too_large.code),
        BundleJsonError::Invalid(error) => {
            format!("`{}` is not a valid {name} (line {}, column {})", path.display(), error.line(), error.column())
        }
    })
}

/// Reads a bundle's manifest and trace; the id is the directory's name.
/// A bundle's `manifest.json` alone (what `bundle list` shows of each bundle).
pub fn read_manifest(bundle: &Path) -> Result<Manifest, String> {
    let manifest: Manifest = read_json(bundle, "manifest.json")?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(format!("`{}` holds an unknown manifest format", bundle.join("manifest.json").display()));
    }
    Ok(manifest)
}

pub fn read_provenance(bundle: &Path) -> Result<(String, Manifest, Trace), HostError> {
    provenance(bundle).map_err(|message| HostError::invalid(bundle, message))
}

fn provenance(bundle: &Path) -> Result<(String, Manifest, Trace), String> {
    if !bundle.is_dir() {
        return Err(format!("`{}` is not a bundle directory", bundle.display()));
    }
    let manifest: Manifest = read_json(bundle, "manifest.json")?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(format!("`{}` holds an unknown manifest format", bundle.join("manifest.json").display()));
    }
    let trace: Trace = read_json(bundle, "trace.json")?;
    if trace.format != trace::FORMAT {
        return Err(format!("`{}` holds an unknown trace format", bundle.join("trace.json").display()));
    }
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    Ok((id, manifest, trace))
}
