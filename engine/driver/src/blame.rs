//! Whose fault a failure is, so the caller can choose an exit code or a status without
//! matching on every error type. Holds no error itself.

/// Whose fault a failure is: the cli turns this into an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The user's input is invalid or refused.
    Input,
    /// The environment failed: I/O, a lock held too long.
    Environment,
}
