//! Garbage collection of a home's content store: which entries the bundles of the home
//! reference, and `acompose gc` removing the rest under the home lock. Convergence calls
//! [`collect_unreferenced`] after pruning its own bundles. Removes no bundle: bundles are
//! pruned by convergence (what its index stopped naming) or by the user.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::HostError;
use crate::home::LOCK_TIMEOUT;
use crate::store::{STORE_DIR, Store, linked_slices};
use crate::transaction;

/// What a collection removed (or would remove, with `--dry-run`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    pub removed: Vec<String>,
    pub kept: usize,
    pub dry_run: bool,
}

fn is_bundle_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// Every bundle folder of a home: a folder named like a bundle id with a `manifest.json`,
/// at most three levels down, outside the store. Links are not followed.
pub fn bundles_of_home(home: &Path) -> Vec<PathBuf> {
    let mut bundles = Vec::new();
    let walker = walkdir::WalkDir::new(home).follow_links(false).max_depth(3).into_iter().filter_entry(|entry| {
        entry.depth() == 0
            || (entry.file_type().is_dir()
                && !(entry.depth() == 1 && entry.file_name() == STORE_DIR)
                && !entry.file_name().to_string_lossy().starts_with('.'))
    });
    for entry in walker.flatten() {
        if entry.depth() > 0
            && is_bundle_id(&entry.file_name().to_string_lossy())
            && entry.path().join("manifest.json").is_file()
        {
            bundles.push(entry.into_path());
        }
    }
    bundles.sort();
    bundles
}

/// The store entries (slices and the trees they link) the bundles of `home` reach in the
/// home's store.
pub fn referenced(home: &Path, store: &Store) -> BTreeSet<String> {
    let Ok(root) = store.canonical() else { return BTreeSet::new() };
    let mut slices = BTreeSet::new();
    // Bundles pinned projections show count as the home's, wherever they are.
    for bundle in bundles_of_home(home).into_iter().chain(crate::projections::pinned_bundles(home)) {
        for (linked_store, name) in linked_slices(&bundle) {
            if linked_store.canonical().is_ok_and(|linked| linked == root) {
                slices.insert(name);
            }
        }
    }
    store.reachable(&slices)
}

/// The home store's entries the bundles in `bundles` reach (read before they are pruned).
pub fn reached_by(home: &Path, bundles: &[PathBuf]) -> BTreeSet<String> {
    let store = Store::of_home(home);
    let Ok(root) = store.canonical() else { return BTreeSet::new() };
    let slices: BTreeSet<String> = bundles
        .iter()
        .flat_map(|bundle| linked_slices(bundle))
        .filter(|(linked, _)| linked.canonical().is_ok_and(|linked| linked == root))
        .map(|(_, name)| name)
        .collect();
    store.reachable(&slices)
}

/// Removes the `candidates` (entries pruned bundles reached) that no bundle left in the
/// home references; returns how many went. The caller holds the home lock.
pub fn prune_candidates(home: &Path, candidates: &BTreeSet<String>) -> usize {
    if candidates.is_empty() {
        return 0;
    }
    let store = Store::of_home(home);
    let keep = referenced(home, &store);
    candidates.iter().filter(|name| !keep.contains(*name)).filter(|name| store.remove(name).is_ok()).count()
}

/// Removes the home store's unreferenced entries. The caller holds the home lock.
pub fn collect_unreferenced(home: &Path, dry_run: bool) -> Result<GcReport, HostError> {
    let store = Store::of_home(home);
    if !store.root().is_dir() {
        return Ok(GcReport { dry_run, ..GcReport::default() });
    }
    let keep = referenced(home, &store);
    let removed =
        store.collect_garbage(&keep, dry_run).map_err(|message| HostError::environment(store.root(), message))?;
    Ok(GcReport { kept: keep.len(), removed, dry_run })
}

/// `acompose gc [--dry-run]`: takes the home lock (a running convergence or watch
/// reconvergence finishes first), then removes what no bundle of the home references.
pub fn gc(home: &Path, dry_run: bool) -> Result<GcReport, HostError> {
    crate::home::check_home(home)?;
    if !home.is_dir() {
        return Ok(GcReport { dry_run, ..GcReport::default() });
    }
    let _lock = transaction::lock(home, LOCK_TIMEOUT)?;
    collect_unreferenced(home, dry_run)
}
