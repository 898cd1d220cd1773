//! The embedded `roster:core` person package, as data: seven roles and ten personalities
//! in the external package layout. This crate has no logic beyond returning the files.

include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// The label the default roster goes by everywhere.
pub const LABEL: &str = "roster:core";

/// Every file of the embedded package as `(relative path, bytes)`, sorted by path.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    FILES
}
