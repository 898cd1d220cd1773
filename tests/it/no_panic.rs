//! No input panics: random bytes through the KDL, frontmatter and whole-package paths.

use acompose_engine::person::person_model;
use acompose_engine::{Database, Package, PackageKind, PersonSource, SourceFile};
use proptest::prelude::*;

fn validate_package(files: Vec<(String, Vec<u8>)>) {
    let db = Database::default();
    let inputs =
        files.into_iter().map(|(path, bytes)| SourceFile::new(&db, "pkg".to_owned(), path, bytes.into())).collect();
    let package = Package::new(&db, "pkg".to_owned(), PackageKind::Person, false, inputs, Vec::new());
    let source = PersonSource::new(&db, package, Vec::new(), true);
    let _ = person_model(&db, source);
}

const PATHS: &[&str] = &[
    "person.kdl",
    "roles/01-a.kdl",
    "roles/a/SKILL.md",
    "roles/a/skills/m/SKILL.md",
    "personalities/01-p.kdl",
    "inspirations/01-i.kdl",
    "definitions/INVARIANT.md",
    "definitions/skills/personality-p/SKILL.md",
];

fn kdl_like() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("role ".to_owned()),
        Just("personality ".to_owned()),
        Just("\"a\" ".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("\n".to_owned()),
        Just("skill=".to_owned()),
        Just("color=\"#8f8c47\" ".to_owned()),
        Just("#true ".to_owned()),
        Just("1e9999 ".to_owned()),
        Just(";".to_owned()),
        Just("/-".to_owned()),
        Just("\"\"\"\n".to_owned()),
        "[ -~]{0,8}",
    ];
    proptest::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), index in 0..PATHS.len()) {
        let _ = acompose_engine::syntax::parse_text(&String::from_utf8_lossy(&bytes), "x.kdl");
        let _ = acompose_engine::skill::parse_skill(&String::from_utf8_lossy(&bytes), "x.md");
        let _ = acompose_engine::skill_rules::check_skill(&bytes, "x");
        validate_package(vec![(PATHS[index].to_owned(), bytes)]);
    }

    #[test]
    fn kdl_shaped_text_never_panics(texts in proptest::collection::vec(kdl_like(), PATHS.len())) {
        let files = PATHS.iter().zip(texts).map(|(path, text)| ((*path).to_owned(), text.into_bytes())).collect();
        validate_package(files);
    }

    #[test]
    fn frontmatter_shaped_text_never_panics(lines in proptest::collection::vec(prop_oneof![
        Just("---".to_owned()), Just("name: x".to_owned()), Just("metadata:".to_owned()), Just("  k: [1, {a: b}]".to_owned()),
        Just("description: >".to_owned()), Just("- item".to_owned()), Just("a: &x 1".to_owned()), Just("b: *x".to_owned()), Just("# T".to_owned()), Just(String::new()), "[ -~\\r]{0,20}"
    ], 0..30)) {
        let text = lines.join("\n");
        let parsed = acompose_engine::skill::parse_skill(&text, "x.md");
        prop_assert!(parsed.value.words <= text.split_whitespace().count());
        // Every finding's span lies inside the file, so a snippet can always be shown.
        for finding in acompose_engine::skill_rules::check_skill(text.as_bytes(), "x").findings {
            prop_assert!(finding.span.is_some_and(|span| span.offset <= text.len()), "{:?}", finding);
        }
    }
}
