//! Garbage collection of a home's content store: which entries the bundles of the home
//! reference, and `acompose gc` removing the rest under the home lock; and the pruning of
//! convergence's stale bundles with the store entries only they reached, journalled, so
//! that a prune a kill interrupted is finished by the next run. The only bundles removed
//! here are convergence's own: those its bundle record names and its index does not (a
//! previous generation, or what a failed or killed run left). Bundles of `compose --out`
//! and a user's are never removed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acompose_engine::store::is_tree_key;

use crate::compose::parted::linked_entries;
use crate::compose::store::{STORE_DIR, Store};
use crate::error::HostError;
use crate::home::Home;
use crate::home::transaction::{self, Hooks, NoFaults, Step};
use crate::home::{INDEX_FILE, LOCK_TIMEOUT, WRITTEN_FILE};

/// The journal of a prune under way, in the bundles folder: the stale bundles it removes
/// and the store entries they reached, written before anything is removed and deleted
/// when the prune is done. A journal found later belongs to an interrupted prune.
pub const PRUNE_JOURNAL: &str = ".acompose-prune";

/// What a collection removed (or would remove, with `--dry-run`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    pub removed: Vec<String>,
    pub kept: usize,
    pub dry_run: bool,
    /// Stale bundles of convergence removed first (not with `--dry-run`).
    pub bundles_pruned: usize,
}

fn is_bundle_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// Every bundle folder of a home: a folder named like a bundle id with a `manifest.json`,
/// at most three levels down, outside the store. Links are not followed.
pub fn bundles_of_home(home: &Home) -> Vec<PathBuf> {
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
            && crate::compose::parted::has_manifest(entry.path())
        {
            bundles.push(entry.into_path());
        }
    }
    bundles.sort();
    bundles
}

/// The bundles that count as the home's: its bundle folders, and the bundles pinned
/// projections show, wherever they are.
fn home_bundles(home: &Home) -> impl Iterator<Item = PathBuf> {
    bundles_of_home(home).into_iter().chain(crate::delivery::projections::pinned_bundles(home))
}

/// The entries of the store at `root` (canonical) that `bundles` link directly: slices
/// and the parts of parted files.
fn linked_by(bundles: impl IntoIterator<Item = PathBuf>, root: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    // Whether a store folder, as the links name it, is the one at `root`: resolved once.
    let mut ours = std::collections::HashMap::new();
    for bundle in bundles {
        for (linked_store, name) in linked_entries(&bundle) {
            let is_ours = *ours
                .entry(linked_store.root().to_path_buf())
                .or_insert_with(|| linked_store.canonical().is_ok_and(|linked| linked == root));
            if is_ours {
                names.insert(name);
            }
        }
    }
    names
}

/// The store entries (slices and the trees they link, and the parts of parted files) the
/// bundles of `home` reach in the home's store.
pub fn referenced(home: &Home, store: &Store) -> BTreeSet<String> {
    let Ok(root) = store.canonical() else { return BTreeSet::new() };
    store.reachable(&linked_by(home_bundles(home), &root))
}

/// The home store's entries that removing the bundles in `stale` may leave unreferenced
/// (read before they are pruned): the entries they link that no other bundle of the home
/// links, and the trees of those slices. What they reach through a slice another bundle
/// still links stays reached by it, so it is not a candidate; a tree of a dropped slice
/// that another slice links is kept by [`prune_candidates`].
pub fn reached_only_by(home: &Home, stale: &[PathBuf]) -> BTreeSet<String> {
    let store = Store::of_home(home);
    let Ok(root) = store.canonical() else { return BTreeSet::new() };
    let stale_folders: BTreeSet<PathBuf> = stale.iter().filter_map(|bundle| bundle.canonicalize().ok()).collect();
    let others = home_bundles(home)
        .filter(|bundle| bundle.canonicalize().map_or(true, |folder| !stale_folders.contains(&folder)));
    let kept = linked_by(others, &root);
    let dropped: BTreeSet<String> =
        linked_by(stale.iter().cloned(), &root).into_iter().filter(|name| !kept.contains(name)).collect();
    store.reachable_known(&dropped)
}

/// Removes the `candidates` (entries pruned bundles reached) that no bundle left in the
/// home references; returns how many went. The caller holds the home lock. Only the
/// candidates are looked for: among the entries the bundles link, and among the trees of
/// the slices they link.
pub fn prune_candidates(home: &Home, candidates: &BTreeSet<String>) -> usize {
    if candidates.is_empty() {
        return 0;
    }
    let store = Store::of_home(home);
    let Ok(root) = store.canonical() else { return 0 };
    let linked = linked_by(home_bundles(home), &root);
    let trees: BTreeSet<String> =
        candidates.iter().filter(|name| !linked.contains(*name) && is_tree_key(name)).cloned().collect();
    let kept_trees = store.trees_linked(&linked, &trees);
    candidates
        .iter()
        .filter(|name| !linked.contains(*name) && !kept_trees.contains(*name))
        .filter(|name| store.remove(name).is_ok())
        .count()
}

/// Removes the home store's unreferenced entries. The caller holds the home lock.
pub fn collect_unreferenced(home: &Home, dry_run: bool) -> Result<GcReport, HostError> {
    let store = Store::of_home(home);
    if !store.root().is_dir() {
        return Ok(GcReport { dry_run, ..GcReport::default() });
    }
    let keep = referenced(home, &store);
    let removed =
        store.collect_garbage(&keep, dry_run).map_err(|message| HostError::environment(store.root(), message))?;
    Ok(GcReport { kept: keep.len(), removed, dry_run, bundles_pruned: 0 })
}

/// `acompose gc [--dry-run]`: takes the home lock (a running convergence or watch
/// reconvergence finishes first), finishes a prune a kill interrupted and removes the
/// stale bundles of convergence (what a failed or killed run left: recorded, never
/// indexed), then removes what no bundle of the home references.
pub fn gc(home: &Home, dry_run: bool) -> Result<GcReport, HostError> {
    crate::home::check_home(home)?;
    if !home.is_dir() {
        return Ok(GcReport { dry_run, ..GcReport::default() });
    }
    let _lock = transaction::lock(home, LOCK_TIMEOUT)?;
    let bundles_dir = home.bundles();
    let mut bundles_pruned = 0;
    if !dry_run && bundles_dir.is_dir() {
        let _bundles_lock = transaction::lock(&bundles_dir, LOCK_TIMEOUT)?;
        let keep = kept_bundles(home, &[]);
        bundles_pruned = finish_interrupted_prune(&bundles_dir, &keep);
        let stale: Vec<String> = recorded_bundles(&bundles_dir).into_iter().filter(|id| !keep.contains(id)).collect();
        bundles_pruned += prune_bundles(&bundles_dir, &stale, &mut NoFaults);
        forget_pruned(&bundles_dir);
    }
    let mut report = collect_unreferenced(home, dry_run)?;
    report.bundles_pruned = bundles_pruned;
    Ok(report)
}

/// The bundles convergence must keep: those the index names, the roles' earlier bundles
/// it keeps (`ROLE@{1}` …), those a registered projection shows, and `current` (the
/// bundles of the run under way).
pub fn kept_bundles(home: &Home, current: &[String]) -> BTreeSet<String> {
    let bundles_dir = home.bundles();
    let bytes = std::fs::read(bundles_dir.join(INDEX_FILE)).unwrap_or_default();
    let indexed = acompose_engine::convergence::parse_index(&bytes)
        .map(|index| index.into_values().collect::<Vec<_>>())
        .unwrap_or_default();
    let earlier = acompose_engine::convergence::parse_history(&bytes).into_values().flatten();
    indexed
        .into_iter()
        .chain(earlier)
        .chain(crate::delivery::projections::showing(home))
        .chain(current.iter().cloned())
        .collect()
}

/// The ids in the bundle record (`bundles/.acompose-written`): every bundle convergence
/// created and has not pruned yet. None when it is missing or unreadable.
pub fn recorded_bundles(bundles_dir: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(bundles_dir.join(WRITTEN_FILE))
        .map(|text| text.lines().filter(|id| is_bundle_id(id)).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// After pruning: the record keeps only the bundles still on disk (the named ones, and
/// any a failed removal left behind, to be tried again).
pub fn forget_pruned(bundles_dir: &Path) {
    let ids = recorded_bundles(bundles_dir);
    let kept: BTreeSet<String> = ids.iter().filter(|id| bundles_dir.join(id).is_dir()).cloned().collect();
    if kept != ids {
        let text: String = kept.iter().map(|id| format!("{id}\n")).collect();
        let _ = crate::home::atomic::replace(bundles_dir, WRITTEN_FILE, text.as_bytes());
    }
}

/// The journal's text: one `bundle ID` line per stale bundle, then one `entry NAME` line
/// per store entry they reach.
fn journal_text(bundles: &[String], entries: &BTreeSet<String>) -> String {
    let bundles = bundles.iter().map(|id| format!("bundle {id}\n"));
    bundles.chain(entries.iter().map(|name| format!("entry {name}\n"))).collect()
}

/// Removes the stale bundles (ids a previous index named, or the record holds, and the
/// new index does not) and the home store's entries only they reached. Returns how many
/// bundles were removed. The caller holds the home and bundles locks.
///
/// The entries are found through the bundles' links, so they are listed in a journal
/// ([`PRUNE_JOURNAL`]) before the first bundle goes: a kill between the bundles and their
/// entries leaves the journal, and the next run finishes from it
/// ([`finish_interrupted_prune`]) instead of leaving entries nothing references. `hooks`
/// sees each removal ([`Step::Prune`]); a failure there stops the prune as a kill would.
pub fn prune_bundles(bundles_dir: &Path, stale: &[String], hooks: &mut dyn Hooks) -> usize {
    let ids: Vec<String> = stale.iter().filter(|id| is_bundle_id(id)).cloned().collect();
    let folders: Vec<PathBuf> =
        ids.iter().map(|id| bundles_dir.join(id)).filter(|folder| folder.symlink_metadata().is_ok()).collect();
    if folders.is_empty() {
        return 0;
    }
    let home = Home::at(bundles_dir.parent().unwrap_or(bundles_dir));
    let candidates = reached_only_by(&home, &folders);
    // A journal that cannot be written (a full disk) does not stop the prune, which frees
    // space; only a kill in the middle of it would then leave entries for `gc`.
    let journalled =
        crate::home::atomic::replace(bundles_dir, PRUNE_JOURNAL, journal_text(&ids, &candidates).as_bytes()).is_ok();
    let mut pruned = 0;
    for folder in &folders {
        if hooks.before(Step::Prune(folder)).is_err() {
            return pruned;
        }
        pruned += usize::from(std::fs::remove_dir_all(folder).is_ok());
    }
    prune_candidates(&home, &candidates);
    if journalled {
        let _ = std::fs::remove_file(bundles_dir.join(PRUNE_JOURNAL));
    }
    pruned
}

/// Whether a prune was interrupted and its journal waits in `bundles_dir`.
pub fn has_interrupted_prune(bundles_dir: &Path) -> bool {
    bundles_dir.join(PRUNE_JOURNAL).symlink_metadata().is_ok()
}

/// Finishes the prune an interrupted run journalled: removes the bundles it listed that
/// are not in `keep`, then the store entries it listed that no bundle left references,
/// then the journal. Returns how many bundles went. The caller holds the home and bundles
/// locks.
pub fn finish_interrupted_prune(bundles_dir: &Path, keep: &BTreeSet<String>) -> usize {
    let path = bundles_dir.join(PRUNE_JOURNAL);
    let Ok(text) = std::fs::read_to_string(&path) else {
        // Unreadable (or not there): nothing to finish; a journal that is not one goes.
        let _ = std::fs::remove_file(&path);
        return 0;
    };
    let home = Home::at(bundles_dir.parent().unwrap_or(bundles_dir));
    let mut pruned = 0;
    let mut entries = BTreeSet::new();
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("bundle", id)) if is_bundle_id(id) && !keep.contains(id) => {
                pruned += usize::from(std::fs::remove_dir_all(bundles_dir.join(id)).is_ok());
            }
            Some(("entry", name)) => {
                entries.insert(name.to_owned());
            }
            _ => {}
        }
    }
    prune_candidates(&home, &entries);
    let _ = std::fs::remove_file(&path);
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store folder in `home` with trees and slices made by hand (a slice's links are
    /// what `put_slice` makes, so a slice it did not write is read from its links).
    struct Fixture {
        home: Home,
        store: Store,
    }

    impl Fixture {
        fn new(folder: &Path) -> Fixture {
            let home = Home::at(folder);
            let store = Store::of_home(&home);
            store.create().expect("store");
            Fixture { home, store }
        }

        fn tree(&self, seed: u8) -> String {
            let key = format!("{seed:02x}").repeat(acompose_engine::store::KEY_DIGITS / 2);
            std::fs::create_dir(self.store.root().join(&key)).expect("tree");
            key
        }

        /// A slice of `skills` (name, tree key), written by `put_slice` or by hand.
        fn slice(&self, skills: &[(&str, &str)], by_hand: bool) -> String {
            let skills: Vec<(String, String)> =
                skills.iter().map(|(name, key)| ((*name).to_owned(), (*key).to_owned())).collect();
            let slice = acompose_engine::store::StoreSlice {
                source: "p".to_owned(),
                key: acompose_engine::store::slice_key(&skills),
                skills: skills.clone(),
            };
            let name = slice.entry_name();
            if by_hand {
                let folder = self.store.root().join(&name);
                std::fs::create_dir(&folder).expect("slice");
                for (skill, key) in &skills {
                    std::os::unix::fs::symlink(Path::new("..").join(key), folder.join(skill)).expect("link");
                }
            } else {
                self.store.put_slice(&slice).expect("put");
            }
            name
        }

        /// A bundle folder of the home linking `slices` as its providers.
        fn bundle(&self, id: &str, slices: &[&str]) -> PathBuf {
            let folder = self.home.bundles().join(id);
            let skills = folder.join("content/skills");
            std::fs::create_dir_all(&skills).expect("bundle");
            std::fs::write(folder.join("manifest.json"), "{}").expect("manifest");
            for (index, slice) in slices.iter().enumerate() {
                let target = Path::new("../../../../store").join(slice);
                std::os::unix::fs::symlink(target, skills.join(format!("p{index}"))).expect("link");
            }
            folder
        }

        fn entries(&self) -> BTreeSet<String> {
            std::fs::read_dir(self.store.root())
                .expect("store")
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| crate::compose::store::is_entry_name(name))
                .collect()
        }
    }

    #[test]
    fn a_prune_removes_what_only_the_stale_bundle_reached_and_keeps_what_others_reach() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let fixture = Fixture::new(temporary.path());
        let (t1, t2, t3, t4) = (fixture.tree(1), fixture.tree(2), fixture.tree(3), fixture.tree(4));
        // `a` only the stale bundle links, written by this process; `b` both link, and `c`
        // the kept bundle alone, both made by hand, so their links are read from disk.
        let a = fixture.slice(&[("one", &t1), ("two", &t2)], false);
        let b = fixture.slice(&[("three", &t3)], true);
        let c = fixture.slice(&[("also-two", &t2), ("four", &t4)], true);
        let stale = fixture.bundle("0123456789abcdef", &[&a, &b]);
        fixture.bundle("fedcba9876543210", &[&b, &c]);
        let candidates = reached_only_by(&fixture.home, std::slice::from_ref(&stale));
        let expected: BTreeSet<String> = [a.clone(), t1.clone(), t2.clone()].into();
        assert_eq!(candidates, expected, "what `b` reaches stays reached; `a` and its trees may go");
        std::fs::remove_dir_all(&stale).expect("remove the stale bundle");
        assert_eq!(prune_candidates(&fixture.home, &candidates), 2, "`a` and `t1`; `t2` is linked by `c`");
        let left: BTreeSet<String> = [b, c, t2, t3, t4].into();
        assert_eq!(fixture.entries(), left);
    }

    /// Dates a file or folder an hour back, past the window of racily fresh times.
    fn backdate(path: &Path) {
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(path).and_then(|file| file.set_modified(hour_ago)).expect("backdate");
    }

    #[test]
    fn a_bundles_links_read_once_are_read_again_when_a_link_is_replaced() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let fixture = Fixture::new(temporary.path());
        let (t1, t2) = (fixture.tree(1), fixture.tree(2));
        let (a, b) = (fixture.slice(&[("one", &t1)], true), fixture.slice(&[("two", &t2)], true));
        let bundle = fixture.bundle("0123456789abcdef", &[&a]);
        let skills = bundle.join("content/skills");
        let names =
            |bundle: &Path| -> Vec<String> { linked_entries(bundle).into_iter().map(|(_, name)| name).collect() };
        // Racily fresh, then settled: both read from the folder.
        assert_eq!(names(&bundle), std::slice::from_ref(&a));
        backdate(&skills);
        assert_eq!(names(&bundle), std::slice::from_ref(&a));
        // Repointed: the folder's time moves, and the new link is what counts.
        std::fs::remove_file(skills.join("p0")).expect("unlink");
        std::os::unix::fs::symlink(Path::new("../../../../store").join(&b), skills.join("p0")).expect("link");
        backdate(&skills);
        assert_eq!(names(&bundle), std::slice::from_ref(&b));
        // A list of parts written later is seen too.
        std::fs::write(bundle.join("trace.json.parts"), "not a list\n").expect("list");
        assert_eq!(names(&bundle), [b]);
    }

    #[test]
    fn a_journal_lists_bundles_before_entries() {
        let entries: BTreeSet<String> = ["slice-a".to_owned(), "tree-b".to_owned()].into();
        let text = journal_text(&["0123456789abcdef".to_owned()], &entries);
        assert_eq!(text, "bundle 0123456789abcdef\nentry slice-a\nentry tree-b\n");
    }

    #[test]
    fn an_interrupted_prune_is_finished_and_spares_what_is_kept() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let bundles = temporary.path().join(crate::home::BUNDLES_DIR);
        for id in ["0123456789abcdef", "fedcba9876543210"] {
            std::fs::create_dir_all(bundles.join(id)).expect("bundle");
        }
        let text = "bundle 0123456789abcdef\nbundle fedcba9876543210\nbundle ../escape\nentry ../../x\n";
        std::fs::write(bundles.join(PRUNE_JOURNAL), text).expect("journal");
        assert!(has_interrupted_prune(&bundles));
        let keep: BTreeSet<String> = ["fedcba9876543210".to_owned()].into();
        assert_eq!(finish_interrupted_prune(&bundles, &keep), 1);
        assert!(!bundles.join("0123456789abcdef").exists());
        assert!(bundles.join("fedcba9876543210").is_dir());
        assert!(!has_interrupted_prune(&bundles));
    }
}
