//! Fuzzes the person-package loader: the input is split into files at `\0` bytes and laid
//! out over the package's paths, then validated with the Core rules. Does not fuzz disk
//! loading (the driver's job), only what the engine does with the bytes.
#![no_main]

use acompose_engine::person::person_model;
use acompose_engine::{Database, Package, PackageKind, PersonSource, SourceFile};
use libfuzzer_sys::fuzz_target;

/// The paths the pieces of an input fill, in order; a piece may be empty. They are the
/// layout of `tests/fixtures/roster/base`, so the seed (`fuzz/seed`) is a valid package.
const PATHS: &[&str] = &[
    "person.kdl",
    "roles/01-builder.kdl",
    "roles/builder/SKILL.md",
    "roles/builder/skills/builder-checklist/SKILL.md",
    "roles/02-reviewer.kdl",
    "roles/reviewer/SKILL.md",
    "personalities/01-steady.kdl",
    "personalities/02-bright.kdl",
    "personalities/03-quiet.kdl",
    "definitions/INVARIANT.md",
    "definitions/skills/personality-steady/SKILL.md",
    "definitions/skills/personality-bright/SKILL.md",
    "definitions/skills/personality-quiet/SKILL.md",
    "inspirations/01-fixture-origin.kdl",
];

fuzz_target!(|data: &[u8]| {
    let db = Database::default();
    let files = data
        .split(|byte| *byte == 0)
        .zip(PATHS)
        .map(|(bytes, path)| SourceFile::new(&db, "pkg".to_owned(), (*path).to_owned(), bytes.into()))
        .collect();
    let package = Package::new(&db, "pkg".to_owned(), PackageKind::Person, false, files, Vec::new());
    for core_rules in [false, true] {
        let source = PersonSource::new(&db, package, Vec::new(), core_rules);
        let _ = person_model(&db, source);
    }
});
