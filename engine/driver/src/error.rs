//! The host's errors, typed and carrying the path they concern, and `Findings`:
//! diagnostics with the text of every file they point into, so a caller can render
//! snippets without asking the host again. Renders nothing itself.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use acompose_engine::Diagnostic;

pub use crate::blame::Blame;

/// Diagnostics and the printable text of the files they name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    pub diagnostics: Vec<Diagnostic>,
    /// Display path → printable text.
    pub texts: BTreeMap<String, String>,
}

impl Findings {
    /// Collects `diagnostics` with the texts `text_of` knows for the files they name.
    pub fn collect(diagnostics: Vec<Diagnostic>, text_of: impl Fn(&str) -> Option<String>) -> Self {
        let mut texts = BTreeMap::new();
        for file in diagnostics.iter().filter_map(|diagnostic| diagnostic.file.as_deref()) {
            if !texts.contains_key(file)
                && let Some(text) = text_of(file)
            {
                texts.insert(file.to_owned(), text);
            }
        }
        Findings { diagnostics, texts }
    }

    /// The text of a file by its display path.
    pub fn text_of(&self, display_path: &str) -> Option<String> {
        self.texts.get(display_path).cloned()
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    pub fn is_empty(&self) -> bool {
        self.diagnostics.is_empty()
    }
}

/// Why a host operation stopped. Nothing was written that the operation promised not to
/// write (see each operation).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The input is invalid; `findings` holds every diagnostic (errors and warnings).
    #[error("{subject}")]
    Diagnostics { subject: String, findings: Findings },
    /// The input is refused or malformed in a way no diagnostic describes.
    #[error("{message}")]
    Invalid { path: PathBuf, message: String },
    /// The environment failed.
    #[error("{message}")]
    Environment { path: PathBuf, message: String },
    #[error(transparent)]
    Transaction(#[from] TransactionError),
}

impl HostError {
    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        HostError::Invalid { path: path.into(), message: message.into() }
    }

    pub fn environment(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        HostError::Environment { path: path.into(), message: message.into() }
    }

    pub fn blame(&self) -> Blame {
        match self {
            HostError::Diagnostics { .. } | HostError::Invalid { .. } => Blame::Input,
            HostError::Environment { .. } => Blame::Environment,
            HostError::Transaction(error) => error.blame(),
        }
    }
}

/// A short, stable description of an I/O error (no OS-specific wording).
pub fn error_kind(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "not found".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::NotADirectory => "not a directory".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        other => other.to_string().to_lowercase(),
    }
}

/// The journal folder of a transaction in progress.
pub const JOURNAL_DIR: &str = ".acompose-transaction";

#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    /// The directory or a path in it is not ours to write (symlink, foreign file, a
    /// file where a folder belongs). Nothing was changed.
    #[error("refused to write `{}`: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
    /// An I/O failure. `restored` tells whether something had been changed and was rolled
    /// back (the message says "restored" only then); otherwise nothing was changed.
    #[error(
        "cannot write `{}`: {}; {}",
        path.display(),
        crate::error::error_kind(error),
        if *restored { "the previous contents were restored" } else { "nothing was changed" }
    )]
    Io { path: PathBuf, error: io::Error, restored: bool },
    /// An I/O failure while restoring; the journal folder was kept for the next run.
    #[error(
        "cannot restore `{}`: {}; the journal in `{JOURNAL_DIR}` is kept and the next run finishes the restore",
        path.display(),
        crate::error::error_kind(error)
    )]
    RollbackFailed { path: PathBuf, error: io::Error },
    /// Another writer held the lock for longer than the timeout.
    #[error("another convergence holds `{}`; gave up after {} s", path.display(), waited.as_secs())]
    LockTimeout { path: PathBuf, waited: Duration },
}

impl TransactionError {
    /// Whose fault it is: refusals are the input's, I/O failures the environment's.
    pub fn blame(&self) -> Blame {
        match self {
            TransactionError::Refused { .. } => Blame::Input,
            TransactionError::Io { .. }
            | TransactionError::RollbackFailed { .. }
            | TransactionError::LockTimeout { .. } => Blame::Environment,
        }
    }
}
