//! The embedded `roster:core` person package, as data: seven roles and ten personalities
//! in the external package layout; and the small external package `acompose roster init`
//! writes (two roles, three personalities). This crate has no logic beyond returning the
//! files.

include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// The label the default roster goes by everywhere.
pub const LABEL: &str = "roster:core";

/// Every file of the embedded package as `(relative path, bytes)`, sorted by path.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    FILES
}

/// The name the scaffold's `person.kdl` gives its package, which `roster init` replaces.
pub const SCAFFOLD_NAME: &str = "my-team";

/// Every file of the package `acompose roster init` writes, as `(relative path, bytes)`,
/// sorted by path.
pub fn scaffold() -> &'static [(&'static str, &'static [u8])] {
    SCAFFOLD
}
