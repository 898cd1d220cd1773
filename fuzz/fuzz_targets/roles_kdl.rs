//! Fuzzes a trusted root's `.agents/roles.kdl`: the grammar and the per-role views of it.
#![no_main]

use acompose_engine::{Database, SourceFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let db = Database::default();
    let file = SourceFile::new(&db, "root".to_owned(), ".agents/roles.kdl".to_owned(), data.into());
    let _ = acompose_engine::provider::trusted_root(&db, file);
});
