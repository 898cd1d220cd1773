//! The warm path of `compose`: the same persisted fingerprints as bare convergence, one
//! cache per composition (`<home>/cache/compose-<key>`, its printed report beside it in
//! `compose-<key>.report`). A repeat whose inputs, bundle files, store trees and report
//! all stat as recorded answers the report without reading a file body. Keeps no cache
//! when the home folder does not exist (a `compose --out` run without a home).

use std::path::Path;

use acompose_engine::store::is_slice_name;

use crate::compose::load::Observations;
use crate::home::Home;
use crate::home::cache::{self, Cache, CheckCounters, StoreRecord};
use crate::home::observe::Stat;

/// What a warm composition answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warm {
    pub id: String,
    /// The report as the composition that recorded it printed it.
    pub report: String,
    /// Paths stat'ed to decide.
    pub stated: usize,
}

/// The cache key of one composition: the working folder (`working_directory`, empty for
/// the process's own) and every setting that changes what is composed, where it goes or
/// what is printed.
pub fn key(working_directory: &Path, settings: &[&str]) -> String {
    let mut hasher = blake3::Hasher::new();
    let here = std::path::absolute(working_directory.join(".")).unwrap_or_default();
    hasher.update(here.as_os_str().as_encoded_bytes());
    for setting in settings {
        hasher.update(&[0]);
        hasher.update(setting.as_bytes());
    }
    hasher.finalize().to_hex()[..32].to_owned()
}

fn names(key: &str) -> (String, String) {
    (format!("compose-{key}"), format!("compose-{key}.report"))
}

/// The recorded report, when every fingerprint of the composition is unchanged.
pub fn lookup(home: &Home, projects: &Path, key: &str) -> Option<Warm> {
    if !home.is_dir() {
        return None;
    }
    let (cache_name, report_name) = names(key);
    let glance = cache::read_glance_named(home, &cache_name).ok()??;
    let identity = cache::identity(projects);
    let mut counters = CheckCounters::default();
    let summary = match cache::unchanged_at_a_glance(&glance, &identity, &mut counters) {
        Some(summary) => summary,
        // Something moved: unchanged still, if only metadata did (the same hashes) or
        // the store gained entries with every tree of this bundle as recorded.
        None => {
            let text = cache::read_named(home, &cache_name).ok()??;
            let mut previous = cache::parse_for(&text, &identity).ok()?;
            counters = CheckCounters::default();
            let cache::Check::Unchanged { touched, stores } = cache::check(&previous, &mut counters) else {
                return None;
            };
            if previous.take_moved(touched, stores) {
                cache::store_cache_named(home, &cache_name, &previous);
            }
            previous.summary
        }
    };
    // The report is one of the recorded outputs: it stat'ed as written.
    let report = std::fs::read_to_string(home.cache().join(report_name)).ok()?;
    Some(Warm { id: summary.source, report, stated: counters.stated })
}

/// The stores a bundle folder links into, each with the folders of the trees it reaches
/// (each once).
fn store_records(bundle: &Path) -> Vec<StoreRecord> {
    let mut records: Vec<StoreRecord> = Vec::new();
    let mut trees = std::collections::BTreeSet::new();
    for (store, slice) in crate::compose::parted::linked_entries(bundle) {
        let index = match records.iter().position(|record| record.folder == store.root()) {
            Some(index) => index,
            None => match std::fs::symlink_metadata(store.root()) {
                Ok(metadata) if metadata.is_dir() => {
                    records.push(StoreRecord {
                        folder: store.root().to_path_buf(),
                        stat: crate::home::observe::smudge_folder_if_racy(Stat::of(&metadata)),
                        trees: Vec::new(),
                    });
                    records.len() - 1
                }
                _ => continue,
            },
        };
        for name in store.reachable_known(&std::iter::once(slice).collect()) {
            if !is_slice_name(&name) && trees.insert(store.root().join(&name)) {
                cache::entry_stat(&store.root().join(&name), &mut records[index].trees);
            }
        }
    }
    records
}

/// A finished composition as the cache records it.
pub struct Composed<'a> {
    /// The bundle's id.
    pub id: &'a str,
    /// The bundle's folder.
    pub bundle: &'a Path,
    /// The report a repeat prints.
    pub report: &'a str,
}

/// Records a finished composition: every input the loader looked at, the bundle's own
/// files, the store trees it links, and the report.
pub fn record(home: &Home, projects: &Path, key: &str, observations: Observations, composed: &Composed<'_>) {
    let Composed { id, bundle, report } = *composed;
    if !home.is_dir() {
        return;
    }
    let (cache_name, report_name) = names(key);
    cache::store_named(home, &report_name, Some(report.as_bytes()));
    let mut outputs = Vec::new();
    cache::output_stats(bundle, &mut outputs);
    let stores = store_records(bundle);
    let report_path = home.cache().join(&report_name);
    match std::fs::symlink_metadata(&report_path) {
        Ok(metadata) if metadata.is_file() => outputs.push((report_path, Stat::of(&metadata))),
        _ => return,
    }
    // The paths are moved, not copied: the observations are not needed after this.
    let mut inputs: Vec<_> = observations.observed.into_iter().collect();
    inputs.sort_unstable_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
    let fingerprints = Cache {
        identity: cache::identity(projects),
        summary: cache::Summary { source: id.to_owned(), ..cache::Summary::default() },
        inputs: std::sync::Arc::new(inputs),
        outputs,
        stores,
    };
    cache::store_cache_named(home, &cache_name, &fingerprints);
}
