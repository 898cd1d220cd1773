//! The acompose host: every read and write of the disk around the pure engine — loading
//! packages and catalogues into salsa inputs, the fingerprint cache, transactions and
//! locks, bundle materialization and verification, estate sessions, the watch loop's
//! reaction to events, People storage and People sessions (records, the PTY runner), and
//! delivery into harnesses (projections, assigned launches, host skill links). It never
//! prints, never exits and never reads the command line: it returns reports and errors as
//! data and tells of progress through [`Progress`].

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod anchor;
pub mod artifact;
pub mod atomic;
pub mod blame;
pub mod bundle;
pub mod cache;
pub mod catalog_check;
pub mod compose_cache;
pub mod convergence;
pub mod debris;
pub mod error;
pub mod export;
pub mod gc;
pub mod home;
pub mod launch;
pub mod load;
pub mod mounts;
pub mod observe;
pub mod people;
pub mod placement;
pub mod progress;
pub mod projection;
pub mod request;
pub mod session;
pub mod store;
pub mod transaction;
pub mod watch;

pub use error::{Blame, Findings, HostError};
pub use progress::{NoProgress, Progress};
