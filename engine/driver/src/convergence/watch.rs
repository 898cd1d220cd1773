//! The watch loop's reaction to events, without the loop's ending or its printing: a
//! `Watcher` converges once, keeps every input root watched (notify, debounced), and on
//! each batch of events decides what to re-read and reconverges, returning what happened
//! as a `WatchEvent`. The caller decides when to stop (Ctrl-C) and prints.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use acompose_engine::host_config::{CONFIG_FILE, HostConfig};
use notify_debouncer_full::notify::event::ModifyKind;
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use crate::convergence::converger::{Converger, Report};
use crate::convergence::keep_fingerprints;
use crate::error::HostError;
use crate::home::Home;
use crate::home::cache;
use crate::home::observe::Observed;
use crate::home::transaction::{self, JOURNAL_DIR, NoFaults};
use crate::home::{ARTIFACT_DIR, BUNDLES_DIR, LOCK_TIMEOUT, create_home, read_config};
use crate::progress::Progress;

/// Whether a changed path is one of our own outputs (never an input).
fn is_output(home: &Home, path: &Path) -> bool {
    [ARTIFACT_DIR, BUNDLES_DIR, cache::CACHE_DIR, crate::compose::store::STORE_DIR]
        .iter()
        .any(|folder| path.starts_with(home.join(folder)))
        || path.parent() == Some(home)
            && path.file_name().is_some_and(|name| name != CONFIG_FILE && name != acompose_engine::mcp::FILE)
}

/// Converges under the home lock.
fn converge_locked(
    converger: &mut Converger,
    home: &Home,
    projects: &Path,
    config: &HostConfig,
    progress: &dyn Progress,
    fresh: bool,
) -> Result<Report, HostError> {
    let _lock = transaction::lock(home, LOCK_TIMEOUT)?;
    converger.converge(home, projects, config, progress, &mut NoFaults, fresh)
}

/// What one round of the watch loop did.
#[expect(clippy::large_enum_variant, reason = "one value per run, moved once; a box would only add an allocation")]
pub enum WatchEvent {
    /// Inputs changed and the estate was converged again.
    Reconverged { what: String, report: Report, elapsed: Duration },
    /// Inputs changed but the convergence failed; the last good outputs are kept.
    Failed { what: String, error: HostError },
    /// The host configuration changed and is invalid; nothing was converged.
    ConfigurationInvalid { error: HostError },
    /// Nothing that matters happened (quiet moments prune and save the cache).
    Nothing,
    /// The inputs were quiet after a reconvergence: the bundles it replaced were pruned
    /// (when the home lock was free) and the fingerprint cache was saved, so a bare run
    /// now finds nothing to do. Everything the reconvergence writes is written by now.
    Settled,
    /// The watcher stopped delivering events.
    Disconnected,
}

/// A converged home kept converged: the live converger, its watches and the event channel.
pub struct Watcher {
    converger: Converger,
    home: Home,
    projects: PathBuf,
    config: HostConfig,
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    receiver: mpsc::Receiver<DebounceEventResult>,
    watches: Watches,
    /// Roots that appeared between a convergence's read and their watch: read next round.
    carried: Vec<PathBuf>,
    last_report: Report,
    /// The fingerprint cache is written when the inputs settle and on exit, not after
    /// every reconvergence: it is only needed by the next bare run.
    cache_stale: bool,
    /// The fingerprint cache as this watch last wrote it, kept small: each save after the
    /// first appends what changed to the cache's log.
    recorded: Option<crate::home::cache_log::Recorded>,
}

/// Roots that were missing when read but are watched now.
fn missing_then_present(converger: &Converger, started: Vec<PathBuf>) -> Vec<PathBuf> {
    started.into_iter().filter(|root| converger.loader.observed().get(root) == Some(&Observed::Missing)).collect()
}

impl Watcher {
    /// Converges `home` once and starts watching; returns the first report too. `home`
    /// and `projects` are made absolute: watch events name absolute paths.
    pub fn start(
        home: &Home,
        projects: &Path,
        debounce: Duration,
        progress: &dyn Progress,
    ) -> Result<(Watcher, Report), HostError> {
        let home = Home::at(std::path::absolute(home.root()).unwrap_or_else(|_| home.to_path_buf()));
        let projects = std::path::absolute(projects).unwrap_or_else(|_| projects.to_path_buf());
        let config = read_config(&home, progress)?;
        create_home(&home)?;
        let mut converger = Converger::default();
        converger.defer_pruning = true;
        let report = converge_locked(&mut converger, &home, &projects, &config, progress, true)?;
        let mut recorded = None;
        if let Err(message) = keep_fingerprints(&mut converger, &home, &projects, &report, &mut recorded, &mut NoFaults)
        {
            progress.warn(&message);
        }
        let (sender, receiver) = mpsc::channel::<DebounceEventResult>();
        let debouncer = new_debouncer(debounce, None, sender)
            .map_err(|error| HostError::environment(&home, format!("cannot watch files: {error}")))?;
        let mut watcher = Watcher {
            converger,
            home,
            projects,
            config,
            debouncer,
            receiver,
            watches: Watches::default(),
            carried: Vec::new(),
            last_report: report.clone(),
            cache_stale: false,
            recorded,
        };
        let started = watcher.watches.update(&watcher.converger, &watcher.home, &mut watcher.debouncer, progress, true);
        watcher.carried = missing_then_present(&watcher.converger, started);
        Ok((watcher, report))
    }

    /// How many folders are watched (the roots and home).
    pub fn watched_folders(&self) -> usize {
        self.converger.loader.roots().len() + 1
    }

    /// Waits up to 200 ms for events and reacts to them.
    pub fn next(&mut self, progress: &dyn Progress) -> WatchEvent {
        let batch = if self.carried.is_empty() {
            self.receiver.recv_timeout(Duration::from_millis(200))
        } else {
            Ok(Ok(Vec::new()))
        };
        let events = match batch {
            Ok(Ok(events)) => events,
            Ok(Err(errors)) => {
                for error in errors {
                    progress.warn(&format!("watching: {error}"));
                }
                return WatchEvent::Nothing;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return if self.quiet_moment() { WatchEvent::Settled } else { WatchEvent::Nothing };
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return WatchEvent::Disconnected,
        };
        let mut changed = self.relevant_changes(&events);
        let mut appeared = std::mem::take(&mut self.carried);
        changed.extend(appeared.iter().cloned());
        changed.sort();
        changed.dedup();
        if changed.is_empty() {
            return WatchEvent::Nothing;
        }
        let started = Instant::now();
        // Only events about inputs: the home's own files come and go with every convergence.
        let sweep = !appeared.is_empty()
            || events.iter().any(|event| {
                self.watches.may_replace_folder(event) && event.paths.iter().any(|path| self.is_input(path))
            });
        // Roots that appeared (a folder on the way to a missing root changed). Watch
        // first, then read: whatever is written in between is read, whatever comes later
        // is an event. The same holds for a root removed and made again.
        appeared.extend(changed.iter().flat_map(|path| self.watches.missing_under(path).cloned()));
        let watched_now = self.watches.update(&self.converger, &self.home, &mut self.debouncer, progress, sweep);
        appeared.extend(missing_then_present(&self.converger, watched_now));
        appeared.sort();
        appeared.dedup();
        let config_changed = changed.iter().any(|path| path == &self.home.config_file());
        if config_changed {
            match read_config(&self.home, progress) {
                Ok(new_config) => self.config = new_config,
                Err(error) => return WatchEvent::ConfigurationInvalid { error },
            }
        } else {
            for path in changed.iter().chain(&appeared) {
                self.converger.loader.refresh(&mut self.converger.db, path);
            }
        }
        let first = changed[0].display().to_string();
        let what = if changed.len() == 1 { first } else { format!("{first} and {} more", changed.len() - 1) };
        let outcome =
            converge_locked(&mut self.converger, &self.home, &self.projects, &self.config, progress, config_changed);
        // New roots (a repository added to roles.kdl). A root that vanished meanwhile is
        // an event of the next batch, which looks at the watched folders again.
        let started_watching = self.watches.update(&self.converger, &self.home, &mut self.debouncer, progress, false);
        self.carried = missing_then_present(&self.converger, started_watching);
        match outcome {
            Ok(report) => {
                self.last_report = report.clone();
                self.cache_stale = true;
                WatchEvent::Reconverged { what, report, elapsed: started.elapsed() }
            }
            Err(error) => WatchEvent::Failed { what, error },
        }
    }

    /// The paths of `events` that can change an input (content and name changes only:
    /// reading a file reports access events).
    fn relevant_changes(&self, events: &[notify_debouncer_full::DebouncedEvent]) -> Vec<PathBuf> {
        events
            .iter()
            .filter(|event| {
                matches!(
                    event.kind,
                    EventKind::Create(_)
                        | EventKind::Remove(_)
                        | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
                        | EventKind::Any
                )
            })
            .flat_map(|event| event.paths.iter().cloned())
            .filter(|path| self.is_input(path))
            .collect()
    }

    /// Whether a changed path can be an input: not the journal or another output, and in
    /// a root or on the way to a missing one.
    fn is_input(&self, path: &Path) -> bool {
        !path.components().any(|part| part.as_os_str() == JOURNAL_DIR)
            && (self.watches.leads_to_missing(path)
                || (!is_output(&self.home, path) && self.watches.is_relevant(&self.converger, &self.home, path)))
    }

    /// No events for a while: a missing root that exists by now without an event having
    /// said so (made while its parent's watch was being set up) is carried into the next
    /// round; otherwise stale bundles are pruned and the cache is saved. True when the
    /// cache was saved (the first quiet moment after a reconvergence).
    fn quiet_moment(&mut self) -> bool {
        self.carried = self.watches.missing.iter().filter(|root| folder_inode(root).is_some()).cloned().collect();
        if !self.carried.is_empty() {
            return false;
        }
        prune_locked(&mut self.converger, &self.home, Duration::from_millis(50));
        if !self.cache_stale {
            return false;
        }
        self.save_fingerprints();
        self.converger.release_replaced();
        self.cache_stale = false;
        true
    }

    /// Saves the fingerprint cache for the last convergence. A failure is not reported
    /// here: the first save, at start, warns about it, and each quiet moment tries again.
    fn save_fingerprints(&mut self) {
        let _ = keep_fingerprints(
            &mut self.converger,
            &self.home,
            &self.projects,
            &self.last_report,
            &mut self.recorded,
            &mut NoFaults,
        );
    }

    /// Stops watching: prunes what is pending (waiting up to 5 s for the lock) and saves
    /// the cache.
    pub fn stop(mut self) {
        prune_locked(&mut self.converger, &self.home, Duration::from_secs(5));
        if self.cache_stale {
            self.save_fingerprints();
        }
    }
}

/// Prunes the bundles deferred convergences left, under the home lock (a bare run may be
/// recording and materializing bundles meanwhile). Without the lock it waits for the next
/// quiet moment.
fn prune_locked(converger: &mut Converger, home: &Home, timeout: Duration) {
    if !converger.has_pending_prune() {
        return;
    }
    if let Ok(_lock) = transaction::lock(home, timeout) {
        converger.prune();
    }
}

/// What is being watched: every existing root recursively, the home folder, and for a
/// root that does not exist (a repository named before it is cloned) its nearest existing
/// ancestor, so the root's creation is seen.
#[derive(Default)]
struct Watches {
    /// Watched roots with the inode they had: a root removed and made again between two
    /// updates is a new folder that needs a new watch.
    roots: std::collections::BTreeMap<PathBuf, u64>,
    missing: Vec<PathBuf>,
    ancestors: Vec<PathBuf>,
    /// Folders that exist but cannot be watched (no permission, too many watches), with
    /// their inode: warned about once, tried again only when replaced.
    failed: Vec<(PathBuf, u64)>,
    /// How many roots the loader had when they were last gone through.
    listed: Option<usize>,
}

fn folder_inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).ok().filter(std::fs::Metadata::is_dir).map(|metadata| metadata.ino())
}

impl Watches {
    /// Brings the watches in line with the converger's roots; returns the roots it started
    /// watching. With `sweep` every watched folder is looked at again (one `stat` per
    /// root); without it only roots the loader added since are.
    fn update<W: notify_debouncer_full::notify::Watcher, C: notify_debouncer_full::FileIdCache>(
        &mut self,
        converger: &Converger,
        home: &Home,
        debouncer: &mut notify_debouncer_full::Debouncer<W, C>,
        progress: &dyn Progress,
        sweep: bool,
    ) -> Vec<PathBuf> {
        let mut started = Vec::new();
        if sweep {
            // A watched root (or ancestor) that was removed, or removed and made again,
            // drops its watch; the root is watched again below, directly or through an
            // ancestor.
            self.roots.retain(|root, inode| {
                let same = folder_inode(root) == Some(*inode);
                if !same {
                    let _ = debouncer.unwatch(root);
                }
                same
            });
            self.ancestors.retain(|ancestor| {
                let exists = ancestor.is_dir();
                if !exists {
                    let _ = debouncer.unwatch(ancestor);
                }
                exists
            });
        }
        // An edit in a large estate changes no root: when nothing was dropped above, none
        // waits to be tried again and the loader has no new one, only the missing roots
        // can have changed (appeared).
        let count = converger.loader.root_count();
        let roots = if sweep || !self.failed.is_empty() || self.listed != Some(count) {
            let mut roots = converger.loader.roots();
            roots.push(home.to_path_buf());
            roots
        } else {
            self.missing.clone()
        };
        self.listed = Some(count);
        self.missing.clear();
        for root in roots {
            if self.roots.contains_key(&root) {
                continue;
            }
            let mode = if root == home.root() { RecursiveMode::NonRecursive } else { RecursiveMode::Recursive };
            if let Some(inode) = folder_inode(&root) {
                if self.failed.contains(&(root.clone(), inode)) {
                    continue;
                }
                match debouncer.watch(&root, mode) {
                    Ok(()) => {
                        started.push(root.clone());
                        self.roots.insert(root, inode);
                    }
                    Err(error) => {
                        progress.warn(&format!(
                            "cannot watch `{}`: {error}; its changes are not seen until it is replaced or watch restarts",
                            root.display()
                        ));
                        self.failed.push((root, inode));
                    }
                }
                continue;
            }
            let Some(ancestor) = root.ancestors().skip(1).find(|ancestor| ancestor.is_dir()) else { continue };
            // Already seen through the home watch or a recursive root watch (a root the
            // ancestor is in is one of the ancestor's own ancestors).
            let covered = ancestor == home.root()
                || ancestor.ancestors().any(|above| above != home.root() && self.roots.contains_key(above));
            if !covered
                && !self.ancestors.iter().any(|watched| watched == ancestor)
                && debouncer.watch(ancestor, RecursiveMode::NonRecursive).is_ok()
            {
                self.ancestors.push(ancestor.to_path_buf());
            }
            self.missing.push(root);
        }
        // Ancestors no missing root needs any more (never a folder watched as a root).
        let (missing, roots) = (&self.missing, &self.roots);
        self.ancestors.retain(|ancestor| {
            let needed = missing.iter().any(|root| root.starts_with(ancestor));
            if !needed && !roots.contains_key(ancestor) {
                let _ = debouncer.unwatch(ancestor);
            }
            needed
        });
        started
    }

    /// Whether an event can have removed, moved or replaced a watched folder: anything
    /// but a file made, written, touched or read, and any event on a root or a folder
    /// above one. A file written inside a root leaves every watch as it was.
    fn may_replace_folder(&self, event: &notify_debouncer_full::DebouncedEvent) -> bool {
        let within = matches!(
            event.kind,
            EventKind::Create(_)
                | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Metadata(_))
                | EventKind::Access(_)
        );
        // Roots sort by their components, so those at or below a path follow it directly.
        !within
            || event.paths.iter().any(|path| {
                self.roots
                    .range::<Path, _>((std::ops::Bound::Included(path.as_path()), std::ops::Bound::Unbounded))
                    .next()
                    .is_some_and(|(root, _)| root.starts_with(path))
            })
    }

    /// Whether a changed path can matter: inside a root, the host configuration or the
    /// MCP inventory (not a sibling in a watched ancestor).
    fn is_relevant(&self, converger: &Converger, home: &Home, path: &Path) -> bool {
        path == home.config_file()
            || path == home.mcp_inventory()
            || path.ancestors().any(|above| above != home.root() && self.roots.contains_key(above))
            // A root not watched directly (it is being re-watched) still counts.
            || converger.loader.reads_within(path)
    }

    /// Whether a changed path is a folder on the way to a missing root, or the root.
    fn leads_to_missing(&self, path: &Path) -> bool {
        self.missing_under(path).next().is_some()
    }

    /// The missing roots at or below a changed path.
    fn missing_under<'a>(&'a self, path: &'a Path) -> impl Iterator<Item = &'a PathBuf> + 'a {
        self.missing.iter().filter(move |root| root.starts_with(path))
    }
}

#[cfg(test)]
mod tests {
    use notify_debouncer_full::DebouncedEvent;
    use notify_debouncer_full::notify::Event;
    use notify_debouncer_full::notify::event::{
        AccessKind, CreateKind, DataChange, MetadataKind, RemoveKind, RenameMode,
    };

    use super::*;

    fn event(kind: EventKind, path: &str) -> DebouncedEvent {
        DebouncedEvent::new(Event::new(kind).add_path(PathBuf::from(path)), Instant::now())
    }

    #[test]
    fn only_an_event_that_can_move_or_remove_a_folder_makes_the_watches_look_again() {
        let mut watches = Watches::default();
        for (root, inode) in [("/p/estate/repo-1", 1), ("/p/estate/repo-2", 2), ("/p/estate/repo-2/nested", 3)] {
            watches.roots.insert(PathBuf::from(root), inode);
        }
        let written = EventKind::Modify(ModifyKind::Data(DataChange::Content));
        let within = [
            event(written, "/p/estate/repo-1/.agents/skills/a/SKILL.md"),
            event(EventKind::Create(CreateKind::File), "/p/estate/repo-1/.agents/skills/a/new.md"),
            event(EventKind::Create(CreateKind::Folder), "/p/estate/repo-2/.agents/skills/b"),
            event(EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)), "/p/estate/repo-1/x"),
            event(EventKind::Access(AccessKind::Any), "/p/estate/repo-1/x"),
            // A sibling whose name begins like a root's is not above it.
            event(EventKind::Create(CreateKind::Folder), "/p/estate/repo-10"),
        ];
        for event in &within {
            assert!(!watches.may_replace_folder(event), "{event:?}");
        }
        let replacing = [
            event(EventKind::Remove(RemoveKind::File), "/p/estate/repo-1/.agents/skills/a/SKILL.md"),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::From)), "/p/estate/repo-1/.agents/skills/a"),
            event(EventKind::Any, "/p/estate/repo-1/x"),
            event(EventKind::Create(CreateKind::Folder), "/p/estate/repo-1"),
            event(written, "/p/estate/repo-2/nested"),
            event(EventKind::Create(CreateKind::Folder), "/p/estate"),
            event(EventKind::Create(CreateKind::Folder), "/p"),
        ];
        for event in &replacing {
            assert!(watches.may_replace_folder(event), "{event:?}");
        }
    }
}
