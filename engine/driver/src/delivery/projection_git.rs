//! A projection's changes to git's own files, made to match its record: its own paths in
//! `info/exclude`, the user's files it writes into given the clean filter in
//! `info/attributes` and the repository's config, the index's cached file sizes of those
//! files refreshed (git compares sizes before contents), and marks an earlier version
//! set in the index taken off. Everything is derived from the record, and each step can
//! be run again: the record says `pending` before the first step and stops saying it
//! after the last, so a run stopped in between is finished by the next (`project`,
//! `unproject`, or bare `acompose` for a registered projection). Never touches a line or
//! mark of the user's, or another projection's block.

use std::path::Path;

use acompose_engine::git_exclude::{self as blocks, FILTER};
use acompose_engine::projection::{Details, Mode};

use crate::delivery::git_exclude::{Excluded, InfoFile, Repository, lock_info, read_info, update_block};
use crate::delivery::git_filter;

/// The folder of a target that holds the projection's record and journal.
pub const RECORD_FOLDER: &str = ".agent-compose";

/// What a projection wants git's files to say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    /// The target's own paths to list in the exclude file; `None` for no block.
    pub excluded: Option<Vec<String>>,
    /// The user's files (relative to the target) git reads through the filter.
    pub filtered: Vec<String>,
}

impl Wanted {
    /// What the projection a record describes wants: a linked one lists its own paths
    /// (`files`, and the record folder) and filters the user's files it writes into; a
    /// copied one wants nothing (a team may commit copies), nor does one being taken out.
    pub fn of(details: &Details, files: &[String]) -> Wanted {
        if details.mode != Mode::Link.name() || details.unprojecting {
            return Wanted::default();
        }
        let excluded = std::iter::once(RECORD_FOLDER.to_owned()).chain(files.iter().cloned()).collect();
        Wanted { excluded: Some(excluded), filtered: shared_paths(details) }
    }
}

/// The user's files a record says the projection writes into.
pub fn shared_paths(details: &Details) -> Vec<String> {
    let mut paths: Vec<String> = details
        .blocks
        .iter()
        .map(|block| block.path.clone())
        .chain(details.mcp.iter().map(|servers| servers.path.clone()))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The files an earlier version marked `skip-worktree` that a record still names.
pub fn legacy_marks(details: &Details) -> Vec<String> {
    let mut marked: Vec<String> = details
        .git
        .marked
        .iter()
        .cloned()
        .chain(details.blocks.iter().filter(|block| block.hidden_from_git).map(|block| block.path.clone()))
        .collect();
    marked.sort();
    marked.dedup();
    marked
}

/// What settling git's files did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOutcome {
    pub excluded: Excluded,
    /// The user's files git now reads through the filter.
    pub filtered: Vec<String>,
    /// Files left unfiltered because the user's own attributes give them another filter.
    pub own_filter: Vec<String>,
    /// Files whose `skip-worktree` mark (an earlier version's) was taken off.
    pub unmarked: Vec<String>,
    /// Steps that failed, each saying why; the record keeps saying the work is pending.
    pub failed: Vec<String>,
}

impl GitOutcome {
    fn outside() -> GitOutcome {
        GitOutcome {
            excluded: Excluded::NotInRepository,
            filtered: Vec::new(),
            own_filter: Vec::new(),
            unmarked: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Whether git's files now say what the record says.
    pub fn settled(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Whether git's files may differ from what `wanted` says, read without changing
/// anything: a block or the filter's command not as wanted, a mark still to take off, or
/// a file of the user's the projection rewrote (`touched`), whose size git has cached.
pub fn unsettled(target: &Path, wanted: &Wanted, marked: &[String], touched: &[String]) -> bool {
    let Some(repository) = Repository::of(target) else { return false };
    let Some(name) = repository.block_name(target) else { return true };
    let Some(relative) = repository.relative(target) else { return true };
    if !marked.is_empty() || !touched.is_empty() {
        return true;
    }
    let (Ok(exclude), Ok(attributes)) =
        (read_info(&repository.info(InfoFile::Exclude)), read_info(&repository.info(InfoFile::Attributes)))
    else {
        return true;
    };
    let exclude_lines = wanted.excluded.as_deref().map(|paths| blocks::exclude_lines(&relative, paths));
    let attribute_lines = blocks::attribute_lines(&relative, &wanted.filtered);
    let (Some(exclude_lines), Some(attribute_lines)) =
        (exclude_lines.map_or(Some(None), |lines| lines.map(Some)), attribute_lines)
    else {
        return true;
    };
    let wanted_attributes = (!attribute_lines.is_empty()).then(|| blocks::block(&name, &attribute_lines));
    let attributes_after = blocks::with_block(&attributes, &name, wanted_attributes.as_deref());
    let exclude_block = exclude_lines.map(|lines| blocks::block(&name, &lines));
    let configured = git_filter::configured(&repository).command;
    let filter_wanted = !blocks::block_names(&attributes_after).is_empty();
    attributes_after != attributes
        || blocks::with_block(&exclude, &name, exclude_block.as_deref()) != exclude
        || (filter_wanted && configured.as_deref() != Some(git_filter::command().as_str()))
        || (!filter_wanted && configured.is_some())
}

/// Makes git's files say what `wanted` says for the projection into `target`, takes the
/// `marked` files' marks off, and refreshes what the index caches of the `touched` files
/// (relative to the target). Each step is attempted; what failed is reported.
pub fn settle(target: &Path, wanted: &Wanted, marked: &[String], touched: &[String]) -> GitOutcome {
    let Some(repository) = Repository::of(target) else { return GitOutcome::outside() };
    let mut outcome = GitOutcome::outside();
    let (Some(name), Some(relative)) = (repository.block_name(target), repository.relative(target)) else {
        let reason = format!("`{}` cannot be named in the repository's files", target.display());
        outcome.excluded = Excluded::Failed(reason.clone());
        outcome.failed.push(reason);
        return outcome;
    };
    let _lock = match lock_info(&repository) {
        Ok(lock) => lock,
        Err(reason) => {
            outcome.excluded = Excluded::Failed(reason.clone());
            outcome.failed.push(reason);
            return outcome;
        }
    };
    // Under the lock no other run writes here: a temporary left is a stopped run's.
    crate::home::debris::remove(&repository.info_folder());
    settle_filter(&repository, &name, &relative, &wanted.filtered, &mut outcome);
    outcome.excluded = settle_exclude(&repository, &name, &relative, wanted.excluded.as_deref());
    if let Excluded::Failed(reason) = &outcome.excluded {
        outcome.failed.push(reason.clone());
    }
    let in_tree = |paths: &[String]| -> Vec<String> {
        paths.iter().map(|path| if relative.is_empty() { path.clone() } else { format!("{relative}/{path}") }).collect()
    };
    let marked_here = in_tree(marked);
    let mut refreshed = in_tree(touched);
    refreshed.extend(marked_here.iter().cloned());
    if let Err(reason) = settle_index(&repository, &marked_here, &refreshed, &mut outcome.unmarked) {
        outcome.failed.push(reason);
    }
    let prefix = if relative.is_empty() { String::new() } else { format!("{relative}/") };
    outcome.unmarked =
        outcome.unmarked.iter().map(|path| path.strip_prefix(&prefix).unwrap_or(path).to_owned()).collect();
    outcome
}

/// The attributes block and the filter's config: the config first when the block
/// names files (a block without its filter configured is no filter at all), and the
/// config taken out once no projection's block is left.
fn settle_filter(repository: &Repository, name: &str, relative: &str, filtered: &[String], outcome: &mut GitOutcome) {
    let attributes = match read_info(&repository.info(InfoFile::Attributes)) {
        Ok(text) => text,
        Err(reason) => {
            outcome.failed.push(reason);
            return;
        }
    };
    let (kept, own) = without_own_filters(repository, relative, filtered, &attributes);
    outcome.own_filter = own;
    let Some(lines) = blocks::attribute_lines(relative, &kept) else {
        outcome.failed.push("a file's path holds a line break".to_owned());
        return;
    };
    if !lines.is_empty() {
        let command = git_filter::command();
        if git_filter::configured(repository).command.as_deref() != Some(command.as_str())
            && let Err(reason) = git_filter::install(repository, &command)
        {
            outcome.failed.push(reason);
            return;
        }
    }
    let lines = (!lines.is_empty()).then_some(lines);
    match update_block(repository, InfoFile::Attributes, name, lines.as_deref()) {
        Ok(_) => outcome.filtered = if lines.is_some() { kept } else { Vec::new() },
        Err(reason) => {
            outcome.failed.push(reason);
            return;
        }
    }
    let remaining = read_info(&repository.info(InfoFile::Attributes)).map(|text| blocks::block_names(&text));
    if remaining.is_ok_and(|names| names.is_empty())
        && let Err(reason) = git_filter::remove(repository)
    {
        outcome.failed.push(reason);
    }
}

/// `filtered` split into the files the filter may take (those a block already lists, and
/// those no attributes give a filter) and those the user's attributes give a filter of
/// their own (LFS, git-crypt), which acompose never overrides.
fn without_own_filters(
    repository: &Repository,
    relative: &str,
    filtered: &[String],
    attributes: &str,
) -> (Vec<String>, Vec<String>) {
    let listed: Vec<&str> = attributes.lines().collect();
    let unlisted: Vec<&String> = filtered
        .iter()
        .filter(|path| {
            blocks::attribute_lines(relative, std::slice::from_ref(*path))
                .and_then(|lines| lines.into_iter().next())
                .is_none_or(|line| !listed.contains(&line.as_str()))
        })
        .collect();
    if unlisted.is_empty() {
        return (filtered.to_vec(), Vec::new());
    }
    let in_tree: Vec<String> = unlisted
        .iter()
        .map(|path| if relative.is_empty() { (*path).clone() } else { format!("{relative}/{path}") })
        .collect();
    let mut arguments = vec!["check-attr", "-z", "filter", "--"];
    arguments.extend(in_tree.iter().map(String::as_str));
    let Ok(output) = repository.git(&arguments) else { return (filtered.to_vec(), Vec::new()) };
    let fields: Vec<&[u8]> = output.split(|byte| *byte == 0).collect();
    let taken: Vec<String> = fields
        .chunks(3)
        .filter(|triple| {
            triple.len() == 3 && !matches!(triple[2], b"unspecified" | b"unset") && triple[2] != FILTER.as_bytes()
        })
        .map(|triple| String::from_utf8_lossy(triple[0]).into_owned())
        .collect();
    let prefix = if relative.is_empty() { String::new() } else { format!("{relative}/") };
    filtered.iter().cloned().partition(|path| !taken.contains(&format!("{prefix}{path}")))
}

fn settle_exclude(repository: &Repository, name: &str, relative: &str, paths: Option<&[String]>) -> Excluded {
    let lines = match paths.map(|paths| blocks::exclude_lines(relative, paths)) {
        Some(None) => return Excluded::Failed("a projected path holds a line break".to_owned()),
        Some(Some(lines)) => Some(lines),
        None => None,
    };
    match update_block(repository, InfoFile::Exclude, name, lines.as_deref()) {
        Ok(None) => Excluded::Unchanged,
        Ok(Some(path)) if lines.is_some() => Excluded::Listed(path),
        Ok(Some(path)) => Excluded::Cleared(path),
        Err(reason) => Excluded::Failed(reason),
    }
}

/// Takes the marks off the `marked` files (paths in the work tree) that still carry one,
/// then makes the index forget the cached size of each `refreshed` file that is an
/// ordinary entry, so git compares its contents (through the filter) again. The entry's
/// blob stays: nothing is staged.
fn settle_index(
    repository: &Repository,
    marked: &[String],
    refreshed: &[String],
    unmarked: &mut Vec<String>,
) -> Result<(), String> {
    if refreshed.is_empty() {
        return Ok(());
    }
    let entries = index_entries(repository, refreshed)?;
    let to_unmark: Vec<&str> = entries
        .iter()
        .filter(|entry| entry.tag == 'S' && marked.contains(&entry.path))
        .map(|entry| entry.path.as_str())
        .collect();
    if !to_unmark.is_empty() {
        let mut arguments = vec!["update-index", "--no-skip-worktree", "--"];
        arguments.extend(to_unmark.iter().copied());
        repository.git(&arguments)?;
        unmarked.extend(to_unmark.iter().map(|path| (*path).to_owned()));
    }
    let infos: Vec<String> = entries
        .iter()
        .filter(|entry| entry.stage == "0" && (entry.tag == 'H' || to_unmark.contains(&entry.path.as_str())))
        .map(|entry| format!("{},{},{}", entry.mode, entry.object, entry.path))
        .collect();
    if infos.is_empty() {
        return Ok(());
    }
    let mut arguments = vec!["update-index"];
    for info in &infos {
        arguments.push("--cacheinfo");
        arguments.push(info);
    }
    repository.git(&arguments).map(drop)
}

/// One entry of the index as `git ls-files -s -v` lists it.
struct IndexEntry {
    tag: char,
    mode: String,
    object: String,
    stage: String,
    path: String,
}

fn index_entries(repository: &Repository, paths: &[String]) -> Result<Vec<IndexEntry>, String> {
    let mut arguments = vec!["--literal-pathspecs", "ls-files", "-s", "-v", "-z", "--"];
    arguments.extend(paths.iter().map(String::as_str));
    let output = repository.git(&arguments)?;
    Ok(output
        .split(|byte| *byte == 0)
        .filter_map(|record| {
            let text = std::str::from_utf8(record).ok()?;
            let (fields, path) = text.split_once('\t')?;
            let mut fields = fields.split(' ');
            let tag = fields.next()?.chars().next()?;
            let (mode, object, stage) = (fields.next()?, fields.next()?, fields.next()?);
            Some(IndexEntry {
                tag,
                mode: mode.to_owned(),
                object: object.to_owned(),
                stage: stage.to_owned(),
                path: path.to_owned(),
            })
        })
        .filter(|entry| paths.contains(&entry.path))
        .collect())
}

/// Whether git cannot run the filter of a linked projection that gives files the filter
/// (none configured, or its program gone: an acompose that moved or was removed), so the
/// next run must point it at a binary that runs. A filter naming another acompose that
/// is there (a second install) is left as it is until a projection is made again.
pub fn filter_outdated(target: &Path, details: &Details) -> bool {
    filter_problem(target, details).is_some()
}

/// Why git cannot run the configured filter for a linked projection into `target` that
/// gives files the filter: none configured, or its program is gone. `None` when it can
/// (or none is needed).
pub fn filter_problem(target: &Path, details: &Details) -> Option<String> {
    if details.mode != Mode::Link.name() || shared_paths(details).is_empty() {
        return None;
    }
    let repository = Repository::of(target)?;
    match git_filter::configured(&repository).command {
        None => Some(format!("the repository's config has no `filter.{FILTER}.clean`")),
        Some(command) => match git_filter::program_of(&command) {
            Some(program) if !program.is_file() => {
                Some(format!("its filter runs `{}`, which is gone", program.display()))
            }
            _ => None,
        },
    }
}

/// The user's files the record says hold the projection's text, which are there but no
/// longer hold it (a checkout or pull replaced them): the next projection puts it back.
pub fn text_missing(target: &Path, details: &Details) -> Vec<String> {
    let read = |path: &str| {
        let full = target.join(path);
        std::fs::symlink_metadata(&full)
            .is_ok_and(|metadata| metadata.is_file() && metadata.len() <= git_filter::FILTER_LIMIT as u64)
            .then(|| std::fs::read(&full).ok())
            .flatten()
    };
    let mut missing = Vec::new();
    for block in &details.blocks {
        if read(&block.path).is_some_and(|text| matches!(acompose_engine::instruction_block::find(&text), Ok(None))) {
            missing.push(block.path.clone());
        }
    }
    for servers in details.mcp.iter().filter(|servers| !servers.inserted.is_empty()) {
        let Some(text) = read(&servers.path) else { continue };
        let places = acompose_engine::harness_layout::layout(&servers.layout).and_then(|layout| layout.mcp);
        let configured = places
            .and_then(|places| acompose_engine::mcp::harness_config::configured(&servers.path, &text, places.key).ok());
        let gone = configured.is_some_and(|names| !servers.servers.iter().any(|name| names.contains(name)));
        if gone {
            missing.push(servers.path.clone());
        }
    }
    missing
}

/// The instructions files in `folder` (of the repository holding it) marked
/// `skip-worktree`: where a projection's record is gone, these may be an earlier
/// version's marks, which nothing names any more (or the user's own).
pub fn marked_instructions(folder: &Path) -> Vec<String> {
    let Some(repository) = Repository::of(folder) else { return Vec::new() };
    let Some(relative) = repository.relative(folder) else { return Vec::new() };
    let mut names: Vec<&str> = acompose_engine::harness_layout::layouts()
        .iter()
        .map(|layout| layout.places(acompose_engine::harness_layout::Scope::Repository).instructions)
        .filter(|path| !path.is_empty())
        .collect();
    names.sort_unstable();
    names.dedup();
    let paths: Vec<String> = names
        .iter()
        .map(|name| if relative.is_empty() { (*name).to_owned() } else { format!("{relative}/{name}") })
        .collect();
    index_entries(&repository, &paths)
        .map(|entries| entries.into_iter().filter(|entry| entry.tag == 'S').map(|entry| entry.path).collect())
        .unwrap_or_default()
}

/// The blocks in the `info/` files of the repository holding `target` (of its worktree)
/// whose projection has no record any more: lines a projection left, each as the file
/// and the folder it names.
pub fn leftovers(target: &Path) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let Some(repository) = Repository::of(target) else { return Vec::new() };
    let mut left = Vec::new();
    for file in [InfoFile::Exclude, InfoFile::Attributes] {
        let path = repository.info(file);
        let Ok(text) = read_info(&path) else { continue };
        for name in blocks::block_names(&text) {
            let (relative, worktree) = blocks::parse_block_name(&name);
            if worktree != repository.worktree {
                continue;
            }
            let folder = repository.top.join(&relative);
            let recorded = crate::home::projection_record::read_record(&folder).is_some()
                || std::fs::symlink_metadata(folder.join(acompose_engine::projection::JOURNAL)).is_ok();
            if !recorded {
                left.push((path.clone(), folder));
            }
        }
    }
    left
}
