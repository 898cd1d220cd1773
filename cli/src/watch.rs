//! `acompose watch`: converge, then keep the database alive and reconverge on every
//! change of an input (person package, libraries, catalogues, the host configuration),
//! recomputing only what depends on it. One line per reconvergence. A broken edit prints
//! its diagnostics and keeps the last good outputs. Ctrl-C stops after the current step.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify_debouncer_full::notify::event::ModifyKind;
use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, new_debouncer};

use acompose_engine::converge::CONFIG_FILE;

use crate::converge::{LOCK_TIMEOUT, fingerprints, read_config, resolve_home, summary};
use crate::estate::{BUNDLES_DIR, Session};
use crate::terminal::Terminal;
use crate::transaction::{self, NoFaults};
use crate::{cache, exit, print_stderr, print_stdout};

#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
    /// `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// How long changes settle before a reconvergence, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub debounce: u64,
}

/// Whether a changed path is one of our own outputs (never an input).
fn is_output(home: &Path, path: &Path) -> bool {
    [crate::estate::ARTIFACT_DIR, BUNDLES_DIR, cache::CACHE_DIR]
        .iter()
        .any(|folder| path.starts_with(home.join(folder)))
        || path.parent() == Some(home) && path.file_name().is_some_and(|name| name != CONFIG_FILE)
}

/// Converges under the home lock.
fn converge_locked(
    session: &mut Session,
    home: &Path,
    projects: &Path,
    config: &acompose_engine::converge::HostConfig,
    terminal: &Terminal,
    fresh: bool,
) -> Result<crate::estate::Report, u8> {
    let _lock = transaction::lock(home, LOCK_TIMEOUT).map_err(|error| {
        print_stderr(&format!("error: {error}\n"));
        error.exit_code()
    })?;
    session.converge(home, projects, config, terminal, &mut NoFaults, fresh)
}

pub fn run(home: Option<&Path>, args: &WatchArgs, terminal: &Terminal) -> u8 {
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::ENVIRONMENT;
        }
    };
    // Watch events name absolute paths; so must everything they are compared with.
    let home = std::path::absolute(&home).unwrap_or(home);
    let projects = crate::compose::projects_root(args.projects_root.as_deref());
    let projects = std::path::absolute(&projects).unwrap_or(projects);
    let mut config = match read_config(&home, terminal) {
        Ok(config) => config,
        Err(code) => return code,
    };
    if let Err(error) = std::fs::create_dir_all(&home) {
        print_stderr(&format!("error: cannot create home `{}`: {}\n", home.display(), crate::load::error_kind(&error)));
        return exit::ENVIRONMENT;
    }
    let mut session = Session::default();
    session.defer_pruning = true;
    let started = Instant::now();
    let mut last_report = match converge_locked(&mut session, &home, &projects, &config, terminal, true) {
        Ok(report) => {
            print_stdout(&summary(&report, started.elapsed()));
            report
        }
        Err(code) => return code,
    };
    // The fingerprint cache is written when the inputs settle and on exit, not after
    // every reconvergence: it is only needed by the next bare run.
    cache::store(&home, &fingerprints(&session, &home, &projects, &last_report));
    let mut cache_stale = false;

    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = Arc::clone(&stop);
    if ctrlc::set_handler(move || handler_stop.store(true, Ordering::SeqCst)).is_err() {
        print_stderr("warning: cannot install the Ctrl-C handler; stop with a signal\n");
    }
    let (sender, receiver) = mpsc::channel::<DebounceEventResult>();
    let mut debouncer = match new_debouncer(Duration::from_millis(args.debounce), None, sender) {
        Ok(debouncer) => debouncer,
        Err(error) => {
            print_stderr(&format!("error: cannot watch files: {error}\n"));
            return exit::ENVIRONMENT;
        }
    };
    let mut watches = Watches::default();
    // Roots that appeared between a convergence's read and their watch: read them in the
    // next round.
    let missing_then_present = |session: &Session, started: Vec<PathBuf>| -> Vec<PathBuf> {
        started
            .into_iter()
            .filter(|root| session.loader.observed().get(root) == Some(&crate::load::Observed::Missing))
            .collect()
    };
    let mut carried = missing_then_present(&session, watches.update(&session, &home, &mut debouncer));
    print_stdout(&format!("watching {} folders; Ctrl-C stops\n", watched_count(&session) + 1));

    while !stop.load(Ordering::SeqCst) {
        let batch =
            if carried.is_empty() { receiver.recv_timeout(Duration::from_millis(200)) } else { Ok(Ok(Vec::new())) };
        let events = match batch {
            Ok(Ok(events)) => events,
            Ok(Err(errors)) => {
                for error in errors {
                    print_stderr(&format!("warning: watching: {error}\n"));
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // A missing root that exists by now without an event having said so (it
                // was made while its parent's watch was being set up).
                carried = watches.missing.iter().filter(|root| folder_inode(root).is_some()).cloned().collect();
                if !carried.is_empty() {
                    continue;
                }
                prune_locked(&mut session, &home, Duration::from_millis(50));
                if cache_stale {
                    cache::store(&home, &fingerprints(&session, &home, &projects, &last_report));
                    cache_stale = false;
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        // Reading a file reports access events; only content and name changes matter.
        let mut changed: Vec<PathBuf> = events
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
            .filter(|path| !path.components().any(|part| part.as_os_str() == crate::transaction::JOURNAL_DIR))
            .filter(|path| {
                watches.leads_to_missing(path)
                    || (!is_output(&home, path) && watches.is_relevant(&session, &home, path))
            })
            .collect();
        let mut appeared = std::mem::take(&mut carried);
        changed.extend(appeared.iter().cloned());
        changed.sort();
        changed.dedup();
        if changed.is_empty() {
            continue;
        }
        let started = Instant::now();
        // Roots that appeared (a folder on the way to a missing root changed). Watch
        // first, then read: whatever is written in between is read, whatever comes later
        // is an event. The same holds for a root removed and made again.
        appeared.extend(changed.iter().flat_map(|path| watches.missing_under(path).cloned()));
        let watched_now = watches.update(&session, &home, &mut debouncer);
        appeared.extend(missing_then_present(&session, watched_now));
        appeared.sort();
        appeared.dedup();
        let config_changed = changed.iter().any(|path| path == &home.join(CONFIG_FILE));
        if config_changed {
            match read_config(&home, terminal) {
                Ok(new_config) => config = new_config,
                Err(_) => {
                    print_stderr(
                        "reconvergence skipped: the configuration is invalid; keeping the last good outputs\n",
                    );
                    continue;
                }
            }
        } else {
            for path in &changed {
                session.loader.refresh(&mut session.db, path);
            }
            for root in &appeared {
                session.loader.refresh(&mut session.db, root);
            }
        }
        let first = changed[0].display().to_string();
        let what = if changed.len() == 1 { first } else { format!("{first} and {} more", changed.len() - 1) };
        match converge_locked(&mut session, &home, &projects, &config, terminal, config_changed) {
            Ok(report) => {
                print_stdout(&format!(
                    "reconverged: {what} changed; queries {} executed, {} reused; {} files written; {} ms\n",
                    report.queries_executed,
                    report.queries_reused,
                    report.files_written,
                    started.elapsed().as_millis()
                ));
                last_report = report;
                cache_stale = true;
            }
            Err(_) => {
                print_stderr(&format!("reconvergence failed after {what} changed; keeping the last good outputs\n"))
            }
        }
        // New roots (a repository added to roles.kdl), roots that appeared or vanished.
        carried = missing_then_present(&session, watches.update(&session, &home, &mut debouncer));
    }
    prune_locked(&mut session, &home, Duration::from_secs(5));
    if cache_stale {
        cache::store(&home, &fingerprints(&session, &home, &projects, &last_report));
    }
    print_stdout("stopped watching\n");
    exit::SUCCESS
}

/// Prunes the bundles deferred convergences left, under the home lock (a bare run may be
/// recording and materializing bundles meanwhile). Without the lock it waits for the next
/// quiet moment.
fn prune_locked(session: &mut Session, home: &Path, timeout: Duration) {
    if !session.has_pending_prune() {
        return;
    }
    if let Ok(_lock) = transaction::lock(home, timeout) {
        session.prune();
    }
}

/// What is being watched: every existing root recursively, the home folder, and for a
/// root that does not exist (a repository named before it is cloned) its nearest existing
/// ancestor, so the root's creation is seen.
#[derive(Default)]
struct Watches {
    /// Watched roots with the inode they had: a root removed and made again between two
    /// updates is a new folder that needs a new watch.
    roots: Vec<(PathBuf, u64)>,
    missing: Vec<PathBuf>,
    ancestors: Vec<PathBuf>,
    /// Folders that exist but cannot be watched (no permission, too many watches), with
    /// their inode: warned about once, tried again only when replaced.
    failed: Vec<(PathBuf, u64)>,
}

fn folder_inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).ok().filter(std::fs::Metadata::is_dir).map(|metadata| metadata.ino())
}

impl Watches {
    /// Brings the watches in line with the session's roots; returns the roots it started
    /// watching.
    fn update<W: notify_debouncer_full::notify::Watcher, C: notify_debouncer_full::FileIdCache>(
        &mut self,
        session: &Session,
        home: &Path,
        debouncer: &mut notify_debouncer_full::Debouncer<W, C>,
    ) -> Vec<PathBuf> {
        let mut started = Vec::new();
        // A watched root (or ancestor) that was removed, or removed and made again, drops
        // its watch; the root is watched again below, directly or through an ancestor.
        self.roots.retain(|(root, inode)| {
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
        let mut roots = session.loader.roots();
        roots.push(home.to_path_buf());
        self.missing.clear();
        for root in roots {
            if self.roots.iter().any(|(watched, _)| watched == &root) {
                continue;
            }
            let mode = if root == home { RecursiveMode::NonRecursive } else { RecursiveMode::Recursive };
            if let Some(inode) = folder_inode(&root) {
                if self.failed.contains(&(root.clone(), inode)) {
                    continue;
                }
                match debouncer.watch(&root, mode) {
                    Ok(()) => {
                        started.push(root.clone());
                        self.roots.push((root, inode));
                    }
                    Err(error) => {
                        print_stderr(&format!(
                            "warning: cannot watch `{}`: {error}; its changes are not seen until it is replaced or watch restarts\n",
                            root.display()
                        ));
                        self.failed.push((root, inode));
                    }
                }
                continue;
            }
            let Some(ancestor) = root.ancestors().skip(1).find(|ancestor| ancestor.is_dir()) else { continue };
            // Already seen through the home watch or a recursive root watch.
            let covered = ancestor == home
                || self.roots.iter().any(|(watched, _)| watched.as_path() != home && ancestor.starts_with(watched));
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
            if !needed && !roots.iter().any(|(root, _)| root == ancestor) {
                let _ = debouncer.unwatch(ancestor);
            }
            needed
        });
        started
    }

    /// Whether a changed path can matter: inside a root or the host configuration (not
    /// a sibling in a watched ancestor).
    fn is_relevant(&self, session: &Session, home: &Path, path: &Path) -> bool {
        path == home.join(CONFIG_FILE) || self.roots.iter().any(|(root, _)| root != home && path.starts_with(root)) || {
            // A root not watched directly (it is being re-watched) still counts.
            session.loader.roots().iter().any(|root| path.starts_with(root))
        }
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

fn watched_count(session: &Session) -> usize {
    session.loader.roots().len()
}
