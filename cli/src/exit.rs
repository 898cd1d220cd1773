//! Exit codes, defined in one place (SPEC 2).

use std::process::ExitCode;

/// Success; warnings allowed.
pub const SUCCESS: u8 = 0;
/// Invalid input or a failed check.
pub const INVALID: u8 = 1;
/// A usage error (clap uses this code too).
pub const USAGE: u8 = 2;
/// An environment failure: I/O, a lock timeout.
pub const ENVIRONMENT: u8 = 3;

pub fn code(value: u8) -> ExitCode {
    ExitCode::from(value)
}
