//! The acompose engine: source bytes in, person models, diagnostics and output bytes out.
//!
//! The engine never prints, exits, reads the environment, the clock or the disk. The
//! driver (the `cli` crate) reads files, sets them as salsa inputs on [`Database`] and
//! writes the [`OutputFile`]s the queries return.

#![deny(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

pub mod audit;
pub mod bundle;
pub mod catalogue;
pub mod color;
pub mod compose;
pub mod convergence;
pub mod db;
pub mod describe;
pub mod diagnostic;

pub mod file_queries;
pub mod git_exclude;
pub mod harness_layout;
pub mod host_config;
pub mod instruction_block;
pub mod limits;
pub mod mcp;
pub mod overlay;
pub mod parts;

pub mod person;
pub mod portable;
pub mod projection;
pub mod provider;
pub mod render;
pub mod request;
pub mod seat_card;
pub mod secret;
pub mod selector;
pub mod snapshot;
pub mod store;
pub mod strict;
pub mod suggest;
pub mod summarized;

pub mod skill;
pub mod skill_rules;
pub mod skill_sight;

pub mod syntax;
pub mod trace;
pub mod trace_index;

pub use db::{Database, Package, PackageKind, PersonSource, SourceFile};
pub use diagnostic::{Diagnostic, Parsed, Severity, Span};

/// A file's bytes, shared: a source file's bytes and the bundle files made of them are
/// one allocation, not a copy per bundle.
pub type Bytes = std::sync::Arc<[u8]>;

/// A file of a bundle that the driver reads from where it read its source (a
/// summarized catalogue file) when it writes the bundle; the bundle keeps only what its
/// manifest and the store's keys need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcedFile {
    /// The path inside the bundle.
    pub path: String,
    pub source: std::sync::Arc<catalogue::Summarized>,
}

/// One file the driver should write, with a path relative to the output root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OutputFile {
    pub path: String,
    pub bytes: Bytes,
}
