//! The acompose driver: every read and write of the disk around the pure engine — loading
//! packages and catalogues into salsa inputs, the fingerprint cache, transactions and
//! locks, bundle materialization and verification, estate convergence, the watch loop's
//! reaction to events, People storage and People sessions (records, the PTY runner), and
//! delivery into harnesses (projections, assigned launches, host skill links). It never
//! prints, never exits and never reads the command line: it returns reports and errors as
//! data and tells of progress through [`Progress`].
//!
//! It is the faces' only door: the cli and the server depend on this crate alone. What
//! they render of the engine's and People's values comes through [`engine`] and
//! [`people`], which re-export exactly those values and pure renderings; the salsa
//! database stays inside (see [`Sources`] and [`convergence::Converger`]).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod blame;
pub mod compose;
pub mod convergence;
pub mod delivery;
pub mod doctor;
pub mod error;
pub mod home;
pub mod people;
pub mod progress;

pub use compose::Sources;
pub use error::{Blame, Findings, HostError};
pub use progress::{NoProgress, Progress};

/// The composition engine's values and pure renderings a face shows: diagnostics and
/// their escaping, identity cards and roster transcripts, harness layouts, `describe`,
/// and the JSON serializer every output shares. Nothing else of the engine is reachable
/// from a face.
pub mod engine {
    pub use acompose_engine::bundle::Bundle;
    pub use acompose_engine::person::PersonModel;
    pub use acompose_engine::skill_rules::SkillPolicy;
    pub use acompose_engine::{Diagnostic, Severity, describe, harness_layout, suggest};

    /// Diagnostics as values, and the escaping of anything from a user's file.
    pub mod diagnostic {
        pub use acompose_engine::diagnostic::{
            LineIndex, bound_per_file, needs_escape, sanitize, sanitize_lines, snippet_safe, terminal_safe,
        };
    }

    /// Identity cards, roster transcripts and colour.
    pub mod render {
        pub use acompose_engine::render::{Palette, identity_card, roster_transcript, tint};
    }

    /// The identity row of `statusline` and `whoami`, and how a projection delivers.
    pub mod projection {
        pub use acompose_engine::projection::{Details, Health, Mode, identity_row, whoami_text};
    }

    /// The host configuration's file name, keys and values, its refusal under
    /// `external-only`, and a change to its keys (`acompose setup`).
    pub mod host_config {
        pub use acompose_engine::host_config::{
            CONFIG_FILE, Destination, KNOWN_KEYS, KeyChange, LoadPoint, PersonPolicy, external_only_refusal,
        };
    }

    /// The MCP inventory: its servers and their transports.
    pub mod mcp {
        pub use acompose_engine::mcp::{FILE, Inventory, InventoryServer, McpServer, Transport};
    }

    /// One seat's identity card with an expression (`acompose overlay`), and the fixed
    /// expression vocabulary (`acompose catalog expressions`).
    pub mod seat_card {
        pub use acompose_engine::person::EXPRESSIONS;
        pub use acompose_engine::seat_card::{CardError, FORMAT, MIN_WIDTH, SeatCard, card_text, seat_card};
    }

    /// JSON output documents.
    pub mod snapshot {
        pub use acompose_engine::snapshot::{person_json, to_json_bytes};
    }
}
