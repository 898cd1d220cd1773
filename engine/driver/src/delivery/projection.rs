//! Projection on disk: reads and verifies one bundle, asks the engine for the plan, and
//! writes it into the target through the same transaction as the artifact, owned by
//! `<target>/.agent-compose/projection.json`; and finds the nearest projection record
//! walking up from a folder, checking every path it owns (`projections`; `statusline`
//! and `whoami` glance instead, see `identity`). Never touches a path the record
//! does not own: a foreign file or folder in the way is refused.

use std::path::{Path, PathBuf};

use acompose_engine::bundle::Manifest;
use acompose_engine::diagnostic::sanitize;
use acompose_engine::harness_layout::{Layout, Scope};
use acompose_engine::projection::{
    self, BlockRecord, BundleInput, Details, GitRecord, Health, McpRecord, Mode, Planned,
};

use crate::compose::load::error_kind;
use crate::delivery::git_exclude;
use crate::delivery::instruction_block::{self, Placement};
use crate::delivery::projection_git::{self, GitOutcome, RECORD_FOLDER};
use crate::error::HostError;
use crate::home::LOCK_TIMEOUT;
use crate::home::projection_record::{Record, read_record};
use crate::home::transaction::{self, Bookkeeping, Content, Entry, Hooks, Outcome, TransactionError};

/// The bookkeeping of a projection target: the record and journal live under
/// `.agent-compose/`, and skill folders may be links.
pub const PROJECTION: Bookkeeping =
    Bookkeeping { record: projection::RECORD, journal: projection::JOURNAL, format: projection::FORMAT, links: true };

/// One projection to make.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub bundle: &'a Path,
    pub layout: &'static Layout,
    pub scope: Scope,
    pub target: &'a Path,
    pub mode: Mode,
    /// Further links the target owns beside the projection (path in the target → what it
    /// points to): a runtime home's links to the harness's own files.
    pub extra_links: &'a [(String, PathBuf)],
    /// The harness MCP file a launch gives the runtime home (path in the target, bytes),
    /// owned by the projection, instead of the role's servers merged into a file of the
    /// user's.
    pub mcp_file: Option<(&'a str, &'a [u8])>,
    /// Whether a linked projection keeps git's files in line with it (its paths excluded,
    /// the user's files it writes into read through the clean filter).
    pub git: GitExclusion,
}

/// What a projection does about the git repository its target is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitExclusion {
    /// A linked projection lists its paths in the repository's exclude file (they are
    /// machine-local links) and gives the user's files it writes into the clean filter,
    /// so git sees them without its text; a copied one takes both out again.
    Local,
    /// The repository is left alone (a runtime home is never a repository's).
    LeaveAlone,
}

/// What a projection did.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: PathBuf,
    pub details: Details,
    pub outcome: Outcome,
    /// What happened to git's files, when the request asked.
    pub git: Option<GitOutcome>,
    /// What the harnesses of the projection would cut, shorten or refuse of its skills.
    pub listing: Vec<String>,
}

fn check_target(target: &Path) -> Result<(), HostError> {
    match std::fs::symlink_metadata(target) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(HostError::invalid(
            target,
            format!("target `{}` is a symbolic link; pass the real directory", target.display()),
        )),
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(HostError::invalid(target, format!("target `{}` is not a directory", target.display()))),
        Err(error) => Err(HostError::invalid(
            target,
            format!(
                "target `{}` cannot be opened: {}; create it or pass another `--target`",
                target.display(),
                error_kind(&error)
            ),
        )),
    }
}

/// A bundle read and verified: its absolute path, id, manifest and files.
struct ReadBundle {
    path: PathBuf,
    id: String,
    manifest: Manifest,
    files: std::collections::BTreeMap<String, Vec<u8>>,
}

fn read_verified(bundle: &Path) -> Result<ReadBundle, HostError> {
    let path = bundle.canonicalize().map_err(|error| {
        HostError::invalid(bundle, format!("bundle `{}` cannot be opened: {}", bundle.display(), error_kind(&error)))
    })?;
    let failed = |problems: Vec<String>| {
        let first = problems.first().cloned().unwrap_or_default();
        HostError::invalid(
            bundle,
            format!(
                "bundle `{}` failed verification ({first}); run `acompose verify {}` for every problem",
                bundle.display(),
                bundle.display()
            ),
        )
    };
    let files = crate::compose::bundle::read_bundle(&path).map_err(failed)?;
    let id = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    acompose_engine::bundle::verify(&id, &files).map_err(|problems| {
        failed(problems.into_iter().map(|problem| format!("{}: {}", problem.file, problem.message)).collect())
    })?;
    let manifest: Manifest = files
        .get("manifest.json")
        .and_then(|bytes| serde_json::from_slice(bytes).ok())
        .ok_or_else(|| failed(vec!["manifest.json: not a valid manifest".to_owned()]))?;
    Ok(ReadBundle { path, id, manifest, files })
}

/// Turns a refusal of the transaction into an error that says what to do.
fn with_hint(error: TransactionError) -> HostError {
    match error {
        TransactionError::Refused { path, reason } => {
            let message = format!(
                "refused to write `{}`: {reason}; acompose never overwrites what it did not write: move it away or project into another `--target`",
                path.display()
            );
            HostError::invalid(path, message)
        }
        // The read-back's own message says what differed; an I/O error kind would not.
        TransactionError::Io { path, error, restored }
            if error.get_ref().is_some_and(|inner| inner.is::<ReadBackFailed>()) =>
        {
            let outcome = if restored { "the previous projection was restored" } else { "nothing was changed" };
            HostError::environment(path, format!("{error}; {outcome}"))
        }
        other => HostError::Transaction(other),
    }
}

/// Why a projected file did not read back as the bundle holds it.
#[derive(Debug)]
struct ReadBackFailed(String);

impl std::fmt::Display for ReadBackFailed {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for ReadBackFailed {}

/// What `layout`'s harness would cut, shorten or refuse of the bundle at `bundle`'s skills
/// (`describe --harness`). The bundle is verified first.
pub fn listing_of_bundle(bundle: &Path, layout: &Layout) -> Result<Vec<String>, HostError> {
    let bundle = read_verified(bundle)?;
    Ok(projection::listing_warnings(&bundle.files, layout))
}

/// Projects a bundle into a target. `hooks` sees every filesystem step (fault injection
/// in tests; [`transaction::NoFaults`] otherwise). Any failure leaves the previous
/// projection as it was.
pub fn project(request: &Request<'_>, hooks: &mut dyn Hooks) -> Result<Report, HostError> {
    project_layouts(request, LayoutChoice::WithRecorded, hooks)
}

/// Which layouts a projection writes.
enum LayoutChoice {
    /// The requested one beside those the target's record holds ([`layouts_for`]).
    WithRecorded,
    /// Exactly these (one taken out by `unproject --layout`).
    Exactly(Vec<&'static Layout>),
}

fn project_layouts(request: &Request<'_>, choice: LayoutChoice, hooks: &mut dyn Hooks) -> Result<Report, HostError> {
    check_target(request.target)?;
    let bundle = read_verified(request.bundle)?;
    let _lock = transaction::lock_directory_itself(request.target, LOCK_TIMEOUT)?;
    // A transaction a stopped run left is rolled back first, so the record read is the
    // one the rollback leaves; an `unproject` a stopped run left half done is finished.
    transaction::recover_pending(request.target, &PROJECTION).map_err(with_hint)?;
    let mut previous = read_record(request.target);
    if let Some(record) = previous.take_if(|record| record.details.unprojecting) {
        finish_unproject(request.target, &record)?;
    }
    let layouts = match choice {
        LayoutChoice::WithRecorded => layouts_for(request, &bundle.manifest.role.slug, previous.as_ref())?,
        LayoutChoice::Exactly(layouts) => layouts,
    };
    let (mut plan, shared) = planned(request, &bundle, &layouts, previous.as_ref())?;
    let links: Vec<PathBuf> = plan
        .entries
        .iter()
        .map(|entry| match &entry.content {
            Planned::BundleFolder(relative) => bundle.path.join(relative),
            Planned::Bytes(_) => PathBuf::new(),
        })
        .collect();
    let entries: Vec<Entry<'_>> = plan
        .entries
        .iter()
        .zip(&links)
        .filter(|(entry, _)| !shared.iter().any(|file| file.path == entry.path))
        .map(|(entry, link)| Entry {
            path: &entry.path,
            content: match &entry.content {
                Planned::Bytes(bytes) => Content::Bytes(bytes),
                Planned::BundleFolder(_) => Content::Link(link),
            },
        })
        .chain(shared.iter().map(|file| Entry { path: &file.path, content: Content::Shared(&file.bytes) }))
        .chain(request.extra_links.iter().map(|(path, target)| Entry { path, content: Content::Link(target) }))
        .collect();
    refuse_user_links(request.target, &plan, &links, previous.as_ref())?;
    let owned: Vec<String> = entries
        .iter()
        .filter(|entry| !matches!(entry.content, Content::Shared(_)))
        .map(|entry| entry.path.to_owned())
        .collect();
    let git = (request.git == GitExclusion::Local).then(|| {
        let wanted = projection_git::Wanted::of(&plan.details, &owned);
        let journal = GitJournal::before(request.target, wanted, &shared, &plan.details, previous.as_ref());
        plan.details.git = journal.record.clone();
        journal
    });
    let details = encode(request.target, &plan.details)?;
    let mut reading_back =
        ReadBack { inner: hooks, target: request.target, plan: &plan, shared: &shared, bundle: &bundle };
    let outcome = transaction::apply_entries(request.target, &entries, &PROJECTION, Some(&details), &mut reading_back)
        .map_err(with_hint)?;
    let git = git.map(|journal| journal.settle(request.target, &mut plan.details));
    let listing = layouts.iter().flat_map(|layout| projection::listing_warnings(&bundle.files, layout)).collect();
    Ok(Report { target: request.target.to_path_buf(), details: plan.details, outcome, git, listing })
}

/// The plan of a projection into the request's target with these layouts, and the
/// user's files it writes into (its blocks and merged MCP servers recorded in the plan's
/// details).
fn planned(
    request: &Request<'_>,
    bundle: &ReadBundle,
    layouts: &[&'static Layout],
    previous: Option<&Record>,
) -> Result<(projection::Plan, Vec<SharedFile>), HostError> {
    let bundle_text = bundle.path.to_string_lossy().into_owned();
    let input = BundleInput { id: &bundle.id, path: &bundle_text, manifest: &bundle.manifest, files: &bundle.files };
    let plans = layouts
        .iter()
        .map(|layout| projection::plan(&input, layout, request.scope, request.mode))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|refusal| HostError::invalid(&bundle.path, refusal.message()))?;
    let mut plan = projection::merged(plans, request.scope)
        .map_err(|refusal| HostError::invalid(&bundle.path, refusal.message()))?
        .ok_or_else(|| HostError::invalid(request.target, "a projection needs at least one layout"))?;
    if let Some((path, bytes)) = request.mcp_file {
        let planned: Vec<&str> =
            layouts.iter().filter_map(|layout| crate::delivery::mcp_config::file_of(layout, request.scope)).collect();
        plan.entries.retain(|entry| !planned.contains(&entry.path.as_str()));
        plan.entries.push(projection::PlannedEntry { path: path.to_owned(), content: Planned::Bytes(bytes.to_vec()) });
        plan.entries.sort_by(|left, right| left.path.cmp(&right.path));
    }
    let mut instructions: Vec<&str> = layouts
        .iter()
        .map(|layout| layout.places(request.scope).instructions)
        .filter(|instructions| !instructions.is_empty())
        .collect();
    instructions.sort_unstable();
    instructions.dedup();
    let mut shared = shared_files(request.target, &plan, &instructions, previous)?;
    if request.mcp_file.is_none() {
        let manifest = &bundle.manifest;
        shared.extend(shared_mcp_files(request.target, &plan, layouts, request.scope, manifest, previous)?);
    }
    plan.details.blocks = shared.iter().filter_map(|file| file.record.clone()).collect();
    plan.details.mcp = shared.iter().filter_map(|file| file.mcp.clone()).collect();
    Ok((plan, shared))
}

fn encode(target: &Path, details: &Details) -> Result<serde_json::Value, HostError> {
    serde_json::to_value(details)
        .map_err(|error| HostError::environment(target, format!("cannot encode the projection record: {error}")))
}

/// A projection's changes to git's files, journaled: what they should become, and what
/// the record says of them while the transaction writes it.
struct GitJournal {
    wanted: projection_git::Wanted,
    /// Files an earlier version marked `skip-worktree`, to take the mark off.
    marked: Vec<String>,
    /// The user's files whose bytes change (their cached size in the index with them).
    touched: Vec<String>,
    record: GitRecord,
}

impl GitJournal {
    /// What git's files must become for a projection of `details` owning `owned`; the
    /// record says `pending` when they do not say it yet (the journal entry written
    /// before any of them changes).
    fn before(
        target: &Path,
        wanted: projection_git::Wanted,
        shared: &[SharedFile],
        details: &Details,
        previous: Option<&Record>,
    ) -> GitJournal {
        let marked = previous.map(|record| projection_git::legacy_marks(&record.details)).unwrap_or_default();
        let interrupted = previous.is_some_and(|record| record.details.git.pending);
        let mut touched: Vec<String> = if interrupted {
            // A stopped run may have rewritten any of them: every one is refreshed.
            let earlier = previous.map(|record| projection_git::shared_paths(&record.details)).unwrap_or_default();
            projection_git::shared_paths(details).into_iter().chain(earlier).collect()
        } else {
            shared
                .iter()
                .filter(|file| std::fs::read(target.join(&file.path)).ok().as_deref() != Some(file.bytes.as_slice()))
                .map(|file| file.path.clone())
                .collect()
        };
        touched.sort();
        touched.dedup();
        let pending = interrupted || projection_git::unsettled(target, &wanted, &marked, &touched);
        let record = GitRecord { pending, marked: marked.clone() };
        GitJournal { wanted, marked, touched, record }
    }

    /// Makes git's files say what the record says and, once they do, rewrites the record
    /// without the pending work.
    fn settle(self, target: &Path, details: &mut Details) -> projection_git::GitOutcome {
        let mut outcome = projection_git::settle(target, &self.wanted, &self.marked, &self.touched);
        if self.record.is_empty() || !outcome.settled() {
            return outcome;
        }
        details.git = GitRecord::default();
        // The marks an earlier version recorded are off now.
        for block in &mut details.blocks {
            block.hidden_from_git = false;
        }
        let rewritten = encode(target, details)
            .and_then(|value| transaction::rewrite_details(target, &PROJECTION, &value).map_err(with_hint));
        if let Err(error) = rewritten {
            details.git = self.record;
            outcome.failed.push(error.to_string());
        }
        outcome
    }
}

/// Finishes an `unproject` a stopped run left half done in `target` (its record says it
/// is being taken out): its git lines and its record go.
fn finish_unproject(target: &Path, record: &Record) -> Result<projection_git::GitOutcome, HostError> {
    let details = &record.details;
    let outcome = projection_git::settle(
        target,
        &projection_git::Wanted::default(),
        &projection_git::legacy_marks(details),
        &projection_git::shared_paths(details),
    );
    if !outcome.settled() {
        return Err(HostError::environment(
            target,
            format!(
                "an `unproject` of `{}` was stopped before git's files were put back, and they still cannot be: {}; run `acompose unproject --target {}` once that is fixed",
                target.display(),
                outcome.failed.join("; "),
                target.display()
            ),
        ));
    }
    remove_emptied_folders(target, details);
    remove_record(target)?;
    Ok(outcome)
}

/// Removes the folders a projection's paths leave empty once they are gone (a stopped
/// run's transaction removed the paths, not the folders): each skill's folder, and the
/// folders of its skills, instructions and MCP file, up to the target. Only an empty
/// folder goes.
fn remove_emptied_folders(target: &Path, details: &Details) {
    let scope = if details.scope == Scope::Home.name() { Scope::Home } else { Scope::Repository };
    // Up to the target, past a folder already gone (the stopped run removed some).
    let remove_up = |mut folder: PathBuf| {
        while folder != target && folder.starts_with(target) {
            match std::fs::remove_dir(&folder) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => break,
            }
            folder.pop();
        }
    };
    for layout in details.layout.split(projection::LAYOUT_SEPARATOR).filter_map(acompose_engine::harness_layout::layout)
    {
        let places = layout.places(scope);
        for skill in &details.skills {
            let folder = target.join(places.skills).join(skill);
            if !std::fs::symlink_metadata(&folder).is_ok_and(|metadata| metadata.is_dir()) {
                continue;
            }
            for entry in walkdir::WalkDir::new(&folder).follow_links(false).contents_first(true).into_iter().flatten() {
                if entry.file_type().is_dir() {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
        let files = [
            places.skills,
            places.instructions,
            crate::delivery::mcp_config::file_of(layout, scope).unwrap_or_default(),
        ];
        for file in files.iter().filter(|file| !file.is_empty()) {
            let path = target.join(file);
            remove_up(if *file == places.skills { path } else { path.parent().map(Path::to_path_buf).unwrap_or(path) });
        }
    }
}

/// Whether the record in `target` is one an earlier version's stopped `unproject` left:
/// an ownership record owning nothing and saying nothing of a projection.
fn owns_nothing(target: &Path) -> bool {
    let path = target.join(projection::RECORD);
    let small = std::fs::symlink_metadata(&path).is_ok_and(|metadata| metadata.is_file() && metadata.len() <= 4096);
    let Some(value) = small
        .then(|| std::fs::read(&path).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
    else {
        return false;
    };
    value.get("format").and_then(serde_json::Value::as_str) == Some(projection::FORMAT)
        && value.get("files").and_then(serde_json::Value::as_array).is_some_and(Vec::is_empty)
        && value.get("details").is_none()
}

/// Removes the record and, when nothing of the user's is in it, its folder.
fn remove_record(target: &Path) -> Result<(), HostError> {
    let record_path = target.join(projection::RECORD);
    match std::fs::remove_file(&record_path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(HostError::environment(
                &record_path,
                format!("cannot remove `{}`: {}", record_path.display(), error_kind(&error)),
            ));
        }
    }
    let folder = target.join(RECORD_FOLDER);
    // The lock on the target is held: a temporary left in the folder is a stopped run's.
    crate::home::debris::remove(&folder);
    // The folder holds nothing else of ours; one the user put files in stays.
    let _ = std::fs::remove_dir(folder);
    Ok(())
}

/// Refuses a reprojection over a link the user put at a path the projection owns: the
/// record owns the path, but the link there points neither where this projection links
/// it nor into the bundle the record names, so it is not one the projection made. It is
/// reported by its path, never replaced.
fn refuse_user_links(
    target: &Path,
    plan: &projection::Plan,
    links: &[PathBuf],
    previous: Option<&crate::home::projection_record::Record>,
) -> Result<(), HostError> {
    let Some(previous) = previous else { return Ok(()) };
    let ours = Path::new(&previous.details.bundle_path);
    for (entry, wanted) in plan.entries.iter().zip(links) {
        if !matches!(entry.content, Planned::BundleFolder(_)) || !previous.files.contains(&entry.path) {
            continue;
        }
        let path = target.join(&entry.path);
        let Ok(existing) = std::fs::read_link(&path) else { continue };
        if existing != *wanted && !existing.starts_with(ours) {
            return Err(HostError::invalid(
                &path,
                format!(
                    "`{}` is a link to `{}` that this projection did not make, at a path it owns; \
                     acompose does not replace it: move it away, or unproject and project again",
                    sanitize(&entry.path),
                    sanitize(&existing.display().to_string())
                ),
            ));
        }
    }
    Ok(())
}

/// The caller's hooks, and before the commit line every projected file read back through
/// the target's own paths (as a harness will open it) and compared with the bundle: a
/// difference rolls the projection back, leaving the previous one exactly as it was.
struct ReadBack<'a> {
    inner: &'a mut dyn Hooks,
    target: &'a Path,
    plan: &'a projection::Plan,
    shared: &'a [SharedFile],
    bundle: &'a ReadBundle,
}

impl Hooks for ReadBack<'_> {
    fn before(&mut self, step: transaction::Step<'_>) -> std::io::Result<()> {
        self.inner.before(step)?;
        if matches!(step, transaction::Step::Commit(_)) {
            read_back(self.target, self.plan, self.shared, self.bundle)
                .map_err(|why| std::io::Error::other(ReadBackFailed(why)))?;
        }
        Ok(())
    }
}

/// Compares every file the plan put in `target` with what it should hold.
fn read_back(target: &Path, plan: &projection::Plan, shared: &[SharedFile], bundle: &ReadBundle) -> Result<(), String> {
    let same = |path: &str, expected: &[u8]| match std::fs::read(target.join(path)) {
        Ok(bytes) if bytes == expected => Ok(()),
        Ok(_) => Err(format!("`{path}` read back differently from the bundle")),
        Err(error) => Err(format!("`{path}` cannot be read back: {}", error_kind(&error))),
    };
    for entry in &plan.entries {
        match &entry.content {
            Planned::Bytes(bytes) => match shared.iter().find(|file| file.path == entry.path) {
                Some(file) => same(&entry.path, &file.bytes)?,
                None => same(&entry.path, bytes)?,
            },
            Planned::BundleFolder(folder) => {
                let prefix = format!("{folder}/");
                for (path, bytes) in bundle.files.range(prefix.clone()..) {
                    let Some(inner) = path.strip_prefix(&prefix) else { break };
                    same(&format!("{}/{inner}", entry.path), bytes)?;
                }
            }
        }
    }
    Ok(())
}

/// A file of the user's a projection writes without owning it: its new bytes, and the
/// record of the block they hold (`None` when a block was taken out).
struct SharedFile {
    path: String,
    bytes: Vec<u8>,
    record: Option<BlockRecord>,
    /// The record of the MCP servers merged into it (`None` when they were taken out).
    mcp: Option<McpRecord>,
}

/// The user's files this projection writes: its instructions as a block in the user's
/// own instructions file, and the blocks the previous projection kept in other files
/// taken out again (another layout's instructions file).
fn shared_files(
    target: &Path,
    plan: &projection::Plan,
    instructions: &[&str],
    previous: Option<&Record>,
) -> Result<Vec<SharedFile>, HostError> {
    let mut shared = Vec::new();
    let previous_block =
        |path: &str| previous.and_then(|record| record.details.blocks.iter().find(|block| block.path == path));
    for &path in instructions {
        let owned = previous.is_some_and(|record| record.files.iter().any(|file| file == path));
        let bytes = plan.entries.iter().find_map(|entry| match &entry.content {
            Planned::Bytes(bytes) if entry.path == path => Some(bytes.as_slice()),
            _ => None,
        });
        if let Some(bytes) = bytes
            && let Placement::Block { text, record } =
                instruction_block::place(target, path, bytes, owned, previous_block(path))?
        {
            shared.push(SharedFile { path: path.to_owned(), bytes: text, record: Some(record), mcp: None });
        }
    }
    for block in previous.map_or(&[][..], |record| record.details.blocks.as_slice()) {
        if !instructions.contains(&block.path.as_str())
            && let Some(restored) = instruction_block::without(target, block)?
        {
            shared.push(SharedFile { path: block.path.clone(), bytes: restored, record: None, mcp: None });
        }
    }
    Ok(shared)
}

/// The harness MCP files of the user's this projection writes: the role's servers merged
/// into each layout's file that is already there (not the projection's own), and the
/// servers the previous projection merged into a file this one no longer plans taken out.
fn shared_mcp_files(
    target: &Path,
    plan: &projection::Plan,
    layouts: &[&'static Layout],
    scope: Scope,
    manifest: &Manifest,
    previous: Option<&Record>,
) -> Result<Vec<SharedFile>, HostError> {
    let mut shared = Vec::new();
    let earlier = previous.map_or(&[][..], |record| record.details.mcp.as_slice());
    let mut planned: Vec<&str> = Vec::new();
    for layout in layouts {
        let Some(path) = crate::delivery::mcp_config::file_of(layout, scope) else { continue };
        if !plan.entries.iter().any(|entry| entry.path == path) {
            continue;
        }
        planned.push(path);
        let owned = previous.is_some_and(|record| record.files.iter().any(|file| file == path));
        let record_there = earlier.iter().find(|record| record.path == path);
        if let Some((bytes, record)) =
            crate::delivery::mcp_config::place(target, path, layout, &manifest.mcp_servers, owned, record_there)?
        {
            shared.push(SharedFile { path: path.to_owned(), bytes, record: None, mcp: Some(record) });
        }
    }
    for record in earlier {
        if !planned.contains(&record.path.as_str())
            && let Some(restored) = crate::delivery::mcp_config::without(target, record)?
        {
            shared.push(SharedFile { path: record.path.clone(), bytes: restored, record: None, mcp: None });
        }
    }
    Ok(shared)
}

/// The layouts a projection writes: the requested one beside those the target's record
/// already holds for the same role, scope and mode (several harnesses in one folder); a
/// different scope or mode replaces the projection. A folder holding another role's
/// projection is refused: harnesses read each other's folders, so two roles in one
/// folder would each see the other's skills.
fn layouts_for(
    request: &Request<'_>,
    role: &str,
    previous: Option<&Record>,
) -> Result<Vec<&'static Layout>, HostError> {
    let Some(previous) = previous else {
        return Ok(vec![request.layout]);
    };
    let details = &previous.details;
    if details.role != role {
        return Err(HostError::invalid(
            request.target,
            format!(
                "`{}` already holds a projection of role `{}` ({}); one folder holds one role, because harnesses read each other's folders (Codex, OpenCode, Gemini CLI and Goose all read `.agents/skills`; OpenCode and Goose `.claude/skills` too): run `acompose unproject --target {}` first, or project into another folder",
                request.target.display(),
                sanitize(&details.role),
                sanitize(&details.layout),
                request.target.display()
            ),
        ));
    }
    if details.scope != request.scope.name() || details.mode != request.mode.name() {
        return Ok(vec![request.layout]);
    }
    let mut layouts: Vec<&'static Layout> = details
        .layout
        .split(projection::LAYOUT_SEPARATOR)
        .filter_map(acompose_engine::harness_layout::layout)
        .collect();
    if !layouts.iter().any(|layout| layout.harness == request.layout.harness) {
        layouts.push(request.layout);
    }
    Ok(layouts)
}

/// What `unproject --layout` did: the whole projection went (it was its last layout),
/// or the other layouts were projected again without it.
#[derive(Debug, Clone)]
pub enum TakenOut {
    Whole(Unprojected),
    Layout(Report),
}

/// Takes one layout out of the projection in `target`, leaving its other layouts (and
/// the paths they share with it) as they are; the last layout takes the whole
/// projection out.
pub fn unproject_layout(target: &Path, harness: &str, hooks: &mut dyn Hooks) -> Result<TakenOut, HostError> {
    let Some(record) = read_record(target).filter(|record| !record.details.unprojecting) else {
        return unproject(target, hooks).map(TakenOut::Whole);
    };
    let recorded: Vec<&str> = record.details.layout.split(projection::LAYOUT_SEPARATOR).collect();
    if !recorded.contains(&harness) {
        return Err(HostError::invalid(
            target,
            format!(
                "the projection in `{}` has no `{}` layout (it has {})",
                target.display(),
                sanitize(harness),
                sanitize(&record.details.layout)
            ),
        ));
    }
    let remaining: Vec<&'static Layout> = recorded
        .iter()
        .filter(|name| **name != harness)
        .filter_map(|name| acompose_engine::harness_layout::layout(name))
        .collect();
    let Some(first) = remaining.first().copied() else {
        return unproject(target, hooks).map(TakenOut::Whole);
    };
    let scope = if record.details.scope == Scope::Home.name() { Scope::Home } else { Scope::Repository };
    let mode = if record.details.mode == Mode::Copy.name() { Mode::Copy } else { Mode::Link };
    let bundle = PathBuf::from(&record.details.bundle_path);
    let request = Request {
        bundle: &bundle,
        layout: first,
        scope,
        target,
        mode,
        extra_links: &[],
        mcp_file: None,
        git: GitExclusion::Local,
    };
    project_layouts(&request, LayoutChoice::Exactly(remaining), hooks).map(TakenOut::Layout)
}

/// What `unproject` did.
#[derive(Debug, Clone)]
pub struct Unprojected {
    pub target: PathBuf,
    pub details: Details,
    /// The paths the projection owned, now removed.
    pub removed: Vec<String>,
    /// The user's files whose managed block (or MCP servers) was taken out.
    pub restored: Vec<String>,
    /// What happened to git's files. When a step failed the record stays, saying what is
    /// left, and the next `unproject` (or bare `acompose`) finishes it.
    pub git: GitOutcome,
    /// An `unproject` a stopped run left half done was finished.
    pub resumed: bool,
}

/// Removes the projection recorded in `target`: every path it owns, its blocks in the
/// user's files (leaving them byte for byte as they were before it), its lines in the
/// repository's `info/` files and the filter's config when no other projection uses it,
/// the marks an earlier version set, and last its record. A block edited by hand stops
/// it before anything changes. The record is rewritten first (with the paths and blocks
/// gone, in the same transaction) to say the projection is being taken out, so a run
/// stopped anywhere leaves a record the next run finishes from.
pub fn unproject(target: &Path, hooks: &mut dyn Hooks) -> Result<Unprojected, HostError> {
    check_target(target)?;
    let _lock = transaction::lock_directory_itself(target, LOCK_TIMEOUT)?;
    transaction::recover_pending(target, &PROJECTION).map_err(with_hint)?;
    let Some(record) = read_record(target) else {
        let mut message =
            format!("there is no projection in `{}` (no readable `{}`)", target.display(), projection::RECORD);
        let left = projection_git::settle(target, &projection_git::Wanted::default(), &[], &[]);
        if let git_exclude::Excluded::Cleared(path) = &left.excluded {
            message.push_str(&format!("; the lines an earlier projection left in `{}` were taken out", path.display()));
        }
        if owns_nothing(target) {
            remove_record(target)?;
            message.push_str("; the empty record an earlier version left was removed");
        }
        let _ = std::fs::remove_dir(target.join(RECORD_FOLDER));
        return Err(HostError::invalid(target, message));
    };
    let resumed = record.details.unprojecting;
    let mut details = record.details.clone();
    let (mut removed, mut restored) = (Vec::new(), Vec::new());
    if !resumed {
        for block in &record.details.blocks {
            if let Some(bytes) = instruction_block::without(target, block)? {
                restored.push((block.path.clone(), bytes));
            }
        }
        for servers in &record.details.mcp {
            if let Some(bytes) = crate::delivery::mcp_config::without(target, servers)? {
                restored.push((servers.path.clone(), bytes));
            }
        }
        details.unprojecting = true;
        details.git = GitRecord { pending: true, marked: projection_git::legacy_marks(&record.details) };
        let entries: Vec<Entry<'_>> =
            restored.iter().map(|(path, bytes)| Entry { path, content: Content::Shared(bytes) }).collect();
        let value = encode(target, &details)?;
        removed =
            transaction::apply_entries(target, &entries, &PROJECTION, Some(&value), hooks).map_err(with_hint)?.removed;
    }
    let git = projection_git::settle(
        target,
        &projection_git::Wanted::default(),
        &projection_git::legacy_marks(&details),
        &projection_git::shared_paths(&details),
    );
    if git.settled() {
        remove_emptied_folders(target, &details);
        remove_record(target)?;
    }
    details.unprojecting = false;
    details.git = GitRecord::default();
    Ok(Unprojected {
        target: target.to_path_buf(),
        details,
        removed,
        restored: restored.into_iter().map(|(path, _)| path).collect(),
        git,
        resumed,
    })
}

/// Whether `target` holds a projection record (one being taken out too).
pub fn has_record(target: &Path) -> bool {
    read_record(target).is_some()
}

/// What [`repair`] did to a projection a stopped run, or git, left unfinished.
#[derive(Debug, Clone)]
pub enum Repair {
    /// A stopped projection's transaction was rolled back (no projection was there before
    /// it).
    RolledBack,
    /// A stopped `unproject` was finished: the projection is gone.
    Unprojected,
    /// The projection was made again from its own bundle: its transaction rolled back or
    /// git's files stopped short, or a checkout took its text out of the user's files.
    Reprojected(Box<Report>),
    /// Its bundle is gone, so git's files were brought in line with its record alone.
    Settled(GitOutcome),
}

/// Whether the projection in `target` needs [`repair`], told from its record and its
/// files alone (no git run): a transaction or an `unproject` a stopped run left, git's
/// files not yet as the record says, marks of an earlier version, a filter command git
/// cannot run any more, or the user's files without the text the record says they hold.
pub fn needs_repair(target: &Path) -> bool {
    if transaction::has_pending(target, &PROJECTION) {
        return true;
    }
    let Some(record) = read_record(target) else { return false };
    let details = &record.details;
    details.unprojecting
        || details.git.pending
        || !projection_git::legacy_marks(details).is_empty()
        || projection_git::filter_outdated(target, details)
        || !projection_git::text_missing(target, details).is_empty()
}

/// Finishes what a stopped `project` or `unproject` left in `target` (bare `acompose`
/// does it for every registered projection): a transaction rolled back, an `unproject`
/// finished, and a projection whose git files or text are not as its record says made
/// again from its own bundle (or, the bundle gone, git's files settled from the record).
/// `None` when nothing needed doing.
pub fn repair(target: &Path) -> Result<Option<Repair>, HostError> {
    if !needs_repair(target) {
        return Ok(None);
    }
    let record = {
        let _lock = transaction::lock_directory_itself(target, LOCK_TIMEOUT)?;
        let rolled_back = transaction::recover_pending(target, &PROJECTION).map_err(with_hint)?;
        let Some(record) = read_record(target) else {
            let _ = std::fs::remove_dir(target.join(RECORD_FOLDER));
            return Ok(rolled_back.then_some(Repair::RolledBack));
        };
        if record.details.unprojecting {
            finish_unproject(target, &record)?;
            return Ok(Some(Repair::Unprojected));
        }
        if !Path::new(&record.details.bundle_path).is_dir() {
            let details = &record.details;
            let journal = GitJournal {
                wanted: projection_git::Wanted::of(details, &record.files),
                marked: projection_git::legacy_marks(details),
                touched: projection_git::shared_paths(details),
                record: GitRecord { pending: true, marked: Vec::new() },
            };
            let mut details = details.clone();
            return Ok(Some(Repair::Settled(journal.settle(target, &mut details))));
        }
        record
    };
    let layouts: Vec<&'static Layout> = record
        .details
        .layout
        .split(projection::LAYOUT_SEPARATOR)
        .filter_map(acompose_engine::harness_layout::layout)
        .collect();
    let Some(first) = layouts.first().copied() else { return Ok(None) };
    let bundle = PathBuf::from(&record.details.bundle_path);
    let request = Request {
        bundle: &bundle,
        layout: first,
        scope: if record.details.scope == Scope::Home.name() { Scope::Home } else { Scope::Repository },
        target,
        mode: if record.details.mode == Mode::Copy.name() { Mode::Copy } else { Mode::Link },
        extra_links: &[],
        mcp_file: None,
        git: GitExclusion::Local,
    };
    let report = project_layouts(&request, LayoutChoice::Exactly(layouts), &mut transaction::NoFaults)?;
    Ok(Some(Repair::Reprojected(Box::new(report))))
}

/// A projection record found walking up.
#[derive(Debug, Clone)]
pub struct Found {
    /// The target folder (the one holding `.agent-compose/`).
    pub target: PathBuf,
    pub details: Details,
    pub health: Health,
}

fn health_of(target: &Path, record: &Record) -> Health {
    let bundle = Path::new(&record.details.bundle_path);
    if !bundle.is_dir() {
        return Health::BundleMissing;
    }
    let intact = record.files.iter().all(|file| {
        !file.split('/').any(|segment| segment.is_empty() || segment == "..")
            && std::fs::metadata(target.join(file)).is_ok()
    });
    if !intact {
        return Health::Damaged;
    }
    if superseded(bundle, &record.details) { Health::Stale } else { Health::Ok }
}

/// The largest bundle index `whoami` reads to tell a stale projection (an index names
/// one bundle per role, a few dozen bytes each).
const INDEX_LIMIT: u64 = 16 * 1024 * 1024;

/// Whether the bundle folder a projection points into sits beside a bundle index (the
/// home's `bundles/`) that names another bundle for the projection's role. A bundle
/// composed elsewhere (no index beside it) is never stale.
pub(crate) fn superseded(bundle: &Path, details: &Details) -> bool {
    let Some(index_path) = bundle.parent().map(|folder| folder.join(crate::home::INDEX_FILE)) else {
        return false;
    };
    let readable = std::fs::symlink_metadata(&index_path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.len() <= INDEX_LIMIT);
    let Some(bytes) = readable.then(|| std::fs::read(&index_path).ok()).flatten() else {
        return false;
    };
    acompose_engine::convergence::parse_index(&bytes)
        .and_then(|index| index.get(&details.role).cloned())
        .is_some_and(|current| current != details.bundle)
}

/// The nearest projection at or above `start`: the first folder holding a valid
/// `.agent-compose/projection.json`. A folder with no record, an unreadable one, or the
/// record of a projection being taken out is passed over; nothing found is `None`.
pub fn find_projection(start: &Path) -> Option<Found> {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start.ancestors().find_map(|folder| {
        let record = read_record(folder).filter(|record| !record.details.unprojecting)?;
        let health = health_of(folder, &record);
        Some(Found { target: folder.to_path_buf(), details: record.details, health })
    })
}

/// The target a scope defaults to: the current folder for a repository, the user's home
/// folder for home scope.
pub fn default_target(scope: Scope) -> Result<PathBuf, HostError> {
    match scope {
        Scope::Repository => std::env::current_dir().map_err(|error| {
            HostError::environment("", format!("cannot read the current folder: {}", error_kind(&error)))
        }),
        Scope::Home => match std::env::home_dir() {
            Some(home) if !home.as_os_str().is_empty() => Ok(home),
            _ => Err(HostError::environment("", "cannot find a home directory; pass `--target DIR`")),
        },
    }
}
