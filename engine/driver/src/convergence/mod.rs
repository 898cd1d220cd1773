//! Convergence: everything that composes the home's bundles and then acts on them. Bare
//! `acompose` without the command line (the fast path through the fingerprint cache, then
//! a full convergence under the home lock, and the fingerprints it leaves for the next
//! run), `watch`, `launch` (which converges first), `bundle materialize`, and the bundles'
//! lifetime: the index's history, naming a bundle (`ROLE@{N}`, id prefixes), the prune
//! of stale bundles and `gc`. Renders nothing; the caller prints the returned `BareRun`.
//!
//! May call the home, composition and delivery (`crate::home`, `crate::compose`,
//! `crate::delivery`); People and doctor call it.

pub mod bundle_name;
pub mod gc;
pub mod launch;
pub mod materialize;
pub mod watch;

mod converger;

pub use converger::{Converger, FailedRole, Report, RoleRequest};

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::HostError;
use crate::home::Home;
use crate::home::observe::{Stat, observe};
use crate::home::transaction::{self, Hooks, NoFaults, OWNERSHIP_FILE};
use crate::home::{INDEX_FILE, LOCK_TIMEOUT, WRITTEN_FILE, check_home, create_home, read_config};
use crate::home::{cache, cache_log};
use crate::progress::Progress;

/// Counts for `--stats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    pub stated: usize,
    pub read: usize,
    pub hashed: usize,
    pub written: usize,
    pub queries_executed: usize,
    pub queries_reused: usize,
}

/// What one bare run found.
#[expect(clippy::large_enum_variant, reason = "one value per run, moved once; a box would only add an allocation")]
pub enum BareRun {
    /// Nothing changed since the last convergence; nothing was written but the cache.
    Unchanged { summary: cache::Summary, stats: Stats },
    /// A convergence ran. The converger is handed back so a caller about to exit can let
    /// the operating system reclaim it instead of freeing every memo.
    Converged { report: Report, stats: Stats, converger: Box<Converger> },
}

/// Runs bare `acompose` in `home`: the fast path when nothing changed, else a full
/// convergence under the home lock; either way the fingerprint cache is brought up to
/// date. Warnings (a discarded cache, diagnostics) go to `progress`.
pub fn converge_home(home: &Home, projects: &Path, progress: &dyn Progress) -> Result<BareRun, HostError> {
    converge_home_with(home, projects, progress, &mut NoFaults)
}

/// [`converge_home`] with every write of the convergence (the transaction and its
/// journal, the bundle record, the fingerprint cache) going through `hooks` first, so a
/// test can fail any one of them.
pub fn converge_home_with(
    home: &Home,
    projects: &Path,
    progress: &dyn Progress,
    hooks: &mut dyn Hooks,
) -> Result<BareRun, HostError> {
    check_home(home)?;
    // What a launched harness wrote to its launch copy reaches the user's own file on
    // every run, not only at the next launch.
    for failure in crate::delivery::runtime_home::carry_back_all(home) {
        progress.warn(&failure.to_string());
    }
    let mut recorded = match fast_path(home, projects, progress) {
        FastPath::Unchanged(unchanged) => return Ok(unchanged),
        FastPath::Changed(recorded) => recorded,
    };
    let config = read_config(home, progress)?;
    let mut converger = Box::new(Converger::default());
    converger.loader.note(&home.config_file(), observe(&home.config_file()));
    create_home(home)?;
    let _lock = transaction::lock(home, LOCK_TIMEOUT)?;
    let report = converger.converge(home, projects, &config, progress, hooks, true)?;
    if let Err(message) = keep_fingerprints(&mut converger, home, projects, &report, &mut recorded, hooks) {
        progress.warn(&message);
    }
    let counters = converger.loader.counters;
    let stats = Stats {
        stated: converger.loader.observed().len(),
        read: counters.files_read,
        hashed: counters.files_read,
        written: report.files_written,
        queries_executed: report.queries_executed,
        queries_reused: report.queries_reused,
    };
    Ok(BareRun::Converged { report, stats, converger })
}

/// Saves the fingerprints of a finished convergence for the next run's fast path, or,
/// when it warned, removes them: a warning is shown on every run until it is fixed, and
/// the fast path prints none. `recorded` is what the cache files held as this process
/// last read or wrote them, when it did (what changed since is appended to the cache's
/// log; without it they are read here), and becomes what they hold now.
pub fn keep_fingerprints(
    converger: &mut Converger,
    home: &Home,
    projects: &Path,
    report: &Report,
    recorded: &mut Option<cache_log::Recorded>,
    hooks: &mut dyn Hooks,
) -> Result<(), String> {
    if report.warnings > 0 {
        recorded.take();
        cache::forget(home);
        return Ok(());
    }
    let previous = recorded.take().or_else(|| {
        cache_log::read(home, &cache::identity(projects)).ok().flatten().map(cache_log::Read::into_recorded)
    });
    *recorded = Some(cache_log::save(home, &fingerprints(converger, home, projects, report), previous, hooks)?);
    Ok(())
}

/// What the fast path found: nothing changed, or a change to converge, with the cache as
/// the files hold it when it could be read.
enum FastPath {
    Unchanged(BareRun),
    Changed(Option<cache_log::Recorded>),
}

/// The fast path: the cache says nothing changed, at a glance (stats only) or after
/// hashing the files whose metadata moved.
fn fast_path(home: &Home, projects: &Path, progress: &dyn Progress) -> FastPath {
    // A prune a kill (or a fault) interrupted is finished by a full run.
    if crate::convergence::gc::has_interrupted_prune(&home.bundles()) {
        return FastPath::Changed(None);
    }
    let identity = cache::identity(projects);
    let discarding = |reason: String| progress.warn(&format!("discarding the fingerprint cache: {reason}"));
    let glance = cache::read_glance_named(home, cache::CACHE_FILE).unwrap_or_else(|reason| {
        discarding(reason);
        None
    });
    let Some(glance) = glance else { return FastPath::Changed(None) };
    let log = cache_log::read_log(home).map(|(text, base)| cache_log::parse_log(&text, &base)).unwrap_or_default();
    let mut counters = cache::CheckCounters::default();
    if let Some(summary) = cache::unchanged_at_a_glance_with(&glance, &log, &identity, &mut counters) {
        let stats = Stats { stated: counters.stated, ..Stats::default() };
        return FastPath::Unchanged(BareRun::Unchanged { summary, stats });
    }
    drop((glance, log));
    let read = cache_log::read(home, &identity).unwrap_or_else(|reason| {
        discarding(reason);
        None
    });
    let Some(read) = read else { return FastPath::Changed(None) };
    let mut counters = cache::CheckCounters::default();
    let cache::Check::Unchanged { touched, stores } = cache::check(&read.cache, &mut counters) else {
        return FastPath::Changed(Some(read.into_recorded()));
    };
    let summary = read.cache.summary.clone();
    if !touched.is_empty() || !stores.is_empty() {
        let mut moved = read.cache.clone();
        moved.take_moved(touched, stores);
        if let Err(message) = cache_log::save(home, &moved, Some(read.into_recorded()), &mut NoFaults) {
            progress.warn(&message);
        }
    }
    let stats = Stats { stated: counters.stated, read: counters.read, hashed: counters.hashed, ..Stats::default() };
    FastPath::Unchanged(BareRun::Unchanged { summary, stats })
}

/// The home's store as the fingerprints record it: its folder, and the folders of every
/// store tree and part the indexed bundles reach, each once (see `cache::StoreRecord`). `None`
/// when there is no store.
/// With `keep` (a converger that lives on and saves again: watch mode) the trees'
/// numbers are kept for the next save.
fn store_record(home: &Home, bundles: &Path, ids: &[&String], keep: bool) -> Option<cache::StoreRecord> {
    let store = crate::compose::store::Store::of_home(home);
    let metadata = std::fs::symlink_metadata(store.root()).ok().filter(std::fs::Metadata::is_dir)?;
    let named: std::collections::BTreeSet<String> = ids
        .iter()
        .flat_map(|id| crate::compose::parted::linked_entries(&bundles.join(id)))
        .map(|(_, name)| name)
        .collect();
    // The trees the slices reach, and the parts the lists name: entries a bundle reads.
    let trees: Vec<String> =
        store.reachable_known(&named).into_iter().filter(|name| !acompose_engine::store::is_slice_name(name)).collect();
    // A tree recorded before is recorded with the same numbers (see `known_tree_stat`);
    // a tree whose folder holds only files is recorded by one `stat`, kept for next time.
    let per_tree: Vec<(Vec<(PathBuf, Stat)>, bool)> = trees
        .par_iter()
        .map(|key| {
            let folder = store.root().join(key);
            if let Some(stat) = crate::compose::store::known_tree_stat(&folder) {
                return (vec![(folder, stat)], false);
            }
            let mut stats = Vec::new();
            cache::entry_stat(&folder, &mut stats);
            (stats, true)
        })
        .collect();
    if keep {
        crate::compose::store::remember_tree_stats(
            per_tree.iter().filter(|(stats, fresh)| *fresh && stats.len() == 1).map(|(stats, _)| stats[0].clone()),
        );
    }
    Some(cache::StoreRecord {
        folder: store.root().to_path_buf(),
        stat: crate::home::observe::smudge_folder_if_racy(Stat::of(&metadata)),
        trees: per_tree.into_iter().flat_map(|(stats, _)| stats).collect(),
    })
}

/// The fingerprints of a finished convergence: every input the converger read and every
/// output it owns.
pub fn fingerprints(converger: &mut Converger, home: &Home, projects: &Path, report: &Report) -> cache::Cache {
    let mut outputs = Vec::new();
    let mut stores = Vec::new();
    cache::output_stats(&home.artifact(), &mut outputs);
    for file in [home.plan_file(), home.ownership_record()] {
        if let Ok(metadata) = std::fs::symlink_metadata(&file) {
            outputs.push((file, Stat::of(&metadata)));
        }
    }
    let bundles = home.bundles();
    // The bundle record too: a run that failed or was killed after recording the bundles
    // it was about to write changed it, so the next run is a full one and prunes them.
    for file in [INDEX_FILE, OWNERSHIP_FILE, WRITTEN_FILE] {
        if let Ok(metadata) = std::fs::symlink_metadata(bundles.join(file)) {
            outputs.push((bundles.join(file), Stat::of(&metadata)));
        }
    }
    if let Some(index) =
        std::fs::read(bundles.join(INDEX_FILE)).ok().and_then(|bytes| acompose_engine::convergence::parse_index(&bytes))
    {
        // Every file of every indexed bundle: a bundle missing a file must not pass as
        // reused.
        let ids: Vec<&String> = index.values().collect();
        let per_bundle: Vec<Vec<(PathBuf, Stat)>> = ids
            .par_iter()
            .map(|id| {
                let mut stats = Vec::new();
                cache::output_stats(&bundles.join(id), &mut stats);
                stats
            })
            .collect();
        outputs.extend(per_bundle.into_iter().flatten());
        stores.extend(store_record(home, &bundles, &ids, converger.defer_pruning));
    }
    cache::Cache {
        identity: cache::identity(projects),
        summary: cache::Summary {
            source: report.source.clone(),
            roles: report.roles,
            personalities: report.personalities,
            artifact_files: report.roster.written.len() + report.roster.unchanged,
            bundles: report.bundles_new + report.bundles_reused,
        },
        // Racily fresh entries were smudged when they were observed.
        inputs: converger.loader.sorted_observed(),
        outputs,
        stores,
    }
}
