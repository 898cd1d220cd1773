//! The salsa database and the inputs the driver sets. Owns no file access: the driver
//! reads bytes and sets them here.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::diagnostic::Diagnostic;

/// One source file: its path inside its package (always `/`-separated) and its bytes.
///
/// A catalogue's skill files may instead come summarized: the driver took their
/// [`Summarized`](crate::summarized::Summarized) as it read them, `bytes` is empty, and the
/// summary is all the engine keeps (a large estate's skills are most of what a run
/// reads). Bundles refer to such a file instead of holding its bytes.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub origin: String,
    #[returns(ref)]
    pub relative_path: String,
    #[returns(ref)]
    pub bytes: crate::Bytes,
    #[returns(ref)]
    #[default]
    pub summary: Option<Arc<crate::summarized::Summarized>>,
}

impl SourceFile {
    /// The path shown in diagnostics: the package label joined with the relative path.
    pub fn display_path(self, db: &dyn salsa::Database) -> String {
        let origin = self.origin(db);
        let relative = self.relative_path(db);
        if origin.is_empty() { relative.clone() } else { format!("{origin}/{relative}") }
    }
}

/// Whether a package is a person package (roles and personalities) or a personality
/// library (personalities only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PackageKind {
    Person,
    Library,
}

/// One loaded package directory: its label (as the user named it, or `roster:core`),
/// its files sorted by relative path, and problems the driver met while reading it
/// (symlinks, unreadable entries).
#[salsa::input(debug)]
pub struct Package {
    #[returns(ref)]
    pub label: String,
    #[returns(copy)]
    pub kind: PackageKind,
    #[returns(copy)]
    pub embedded: bool,
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    #[returns(ref)]
    pub load_diagnostics: Vec<Diagnostic>,
}

/// The selected person source: one person package, its personality libraries in the
/// order given, and whether the Core rules apply.
#[salsa::input(debug)]
pub struct PersonSource {
    #[returns(copy)]
    pub package: Package,
    #[returns(ref)]
    pub libraries: Vec<Package>,
    #[returns(copy)]
    pub core_rules: bool,
}

/// Counts of queries executed and reused, for `--stats`.
#[derive(Debug, Default)]
pub(crate) struct QueryCounters {
    executed: AtomicUsize,
    reused: AtomicUsize,
}

impl QueryCounters {
    /// (executed, reused) since the last call.
    pub fn take(&self) -> (usize, usize) {
        (self.executed.swap(0, Ordering::Relaxed), self.reused.swap(0, Ordering::Relaxed))
    }
}

/// The database. Clones share storage; an optional event log records which queries ran,
/// for tests that assert incrementality, and counters feed `--stats`.
#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    executed: Option<Arc<Mutex<Vec<String>>>>,
    counters: Arc<QueryCounters>,
}

impl Default for Database {
    fn default() -> Self {
        Self::build(None)
    }
}

#[salsa::db]
impl salsa::Database for Database {}

impl Database {
    fn build(log: Option<Arc<Mutex<Vec<String>>>>) -> Self {
        let counters: Arc<QueryCounters> = Arc::default();
        let sink = log.clone();
        let counting = Arc::clone(&counters);
        let storage = salsa::Storage::new(Some(Box::new(move |event: salsa::Event| match event.kind {
            salsa::EventKind::WillExecute { database_key } => {
                counting.executed.fetch_add(1, Ordering::Relaxed);
                if let Some(sink) = &sink
                    && let Ok(mut entries) = sink.lock()
                {
                    entries.push(format!("{database_key:?}"));
                }
            }
            salsa::EventKind::DidValidateMemoizedValue { .. } => {
                counting.reused.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        })));
        Self { storage, executed: log, counters }
    }

    /// A database that records the name of every query it executes.
    pub fn with_execution_log() -> Self {
        Self::build(Some(Arc::default()))
    }

    /// Queries executed and reused since the last call.
    pub fn take_query_counts(&self) -> (usize, usize) {
        self.counters.take()
    }

    /// The queries executed since the last call, in execution order.
    pub fn take_executed(&self) -> Vec<String> {
        match &self.executed {
            Some(log) => log.lock().map(|mut entries| std::mem::take(&mut *entries)).unwrap_or_default(),
            None => Vec::new(),
        }
    }
}
