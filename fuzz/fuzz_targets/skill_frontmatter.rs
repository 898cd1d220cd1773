//! Fuzzes `SKILL.md` reading: frontmatter, title and counts, through the salsa query and
//! the plain parser. Does not fuzz which rules apply to a skill.
#![no_main]

use acompose_engine::{Database, SourceFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let db = Database::default();
    let file = SourceFile::new(&db, "cat".to_owned(), "skills/x/SKILL.md".to_owned(), data.into());
    let _ = acompose_engine::skill::skill_document(&db, file);
    let _ = acompose_engine::skill::parse_skill(&String::from_utf8_lossy(data), "SKILL.md");
});
