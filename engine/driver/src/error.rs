//! The host's errors, typed and carrying the path they concern, and `Findings`:
//! diagnostics with the text of every file they point into, so a caller can render
//! snippets without asking the host again. Renders nothing itself.

use std::collections::BTreeMap;
use std::path::PathBuf;

use acompose_engine::Diagnostic;

pub use crate::blame::Blame;
use crate::home::transaction::TransactionError;

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
