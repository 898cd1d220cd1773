//! Fuzzes `SKILL.md` reading: frontmatter, title and counts, through the salsa query and
//! the plain parser, and the summary the driver takes instead of keeping the bytes, which
//! must say what the queries over the bytes say. Does not fuzz which rules apply to a
//! skill.
#![no_main]

use acompose_engine::summarized::Summarized;
use acompose_engine::{Database, SourceFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let db = Database::default();
    let relative = ".agents/skills/x/SKILL.md";
    let file = SourceFile::new(&db, "cat".to_owned(), relative.to_owned(), data.into());
    let document = acompose_engine::file_queries::skill_document(&db, file);
    let check = acompose_engine::file_queries::skill_check(&db, file);
    let summary = acompose_engine::file_queries::file_summary(&db, file);
    let summarized = Summarized::of("cat/x/SKILL.md".into(), &file.display_path(&db), relative, data);
    assert_eq!(summarized.document.as_ref(), Some(document));
    assert_eq!(summarized.check.as_ref(), Some(check));
    assert_eq!(&summarized.summary, summary);
    let _ = acompose_engine::skill::parse_skill(&String::from_utf8_lossy(data), "SKILL.md");
});
