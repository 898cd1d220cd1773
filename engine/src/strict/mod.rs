//! The hardened readers of JSON and YAML data files (People files, swarm recipes, session
//! records, the host configuration) and the value tree both produce. They refuse what a
//! permissive reader would guess at (duplicate keys, anchors and aliases, tags,
//! non-finite numbers) and stop at fixed size, depth and value limits before building
//! anything larger. No schema is applied here: each reader's caller owns its contract.

pub mod json;
pub mod tree;
pub mod yaml;

pub use tree::{Position, Tree};

/// The largest file the hardened parsers accept, in bytes.
pub const MAX_FILE_BYTES: usize = crate::limits::PEOPLE_FILE.bytes;
/// The deepest nesting of objects and arrays the hardened parsers accept.
pub const MAX_DEPTH: usize = 64;
/// The most values (objects, arrays and scalars) one file may hold.
pub const MAX_NODES: usize = 4096;
