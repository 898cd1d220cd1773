//! Incrementality claims, checked against salsa's record of executed queries.

use acompose_engine::person::person_model;
use acompose_engine::{Database, Package, PackageKind, PersonSource, SourceFile};
use salsa::Setter;

fn load_embedded(db: &Database) -> (PersonSource, Vec<SourceFile>) {
    let files: Vec<SourceFile> = acompose_roster::files()
        .iter()
        .map(|(path, bytes)| SourceFile::new(db, "pkg".to_owned(), (*path).to_owned(), bytes.to_vec().into()))
        .collect();
    let package = Package::new(db, "pkg".to_owned(), PackageKind::Person, false, files.clone(), Vec::new());
    (PersonSource::new(db, package, Vec::new(), true), files)
}

fn executed_named(executed: &[String], query: &str) -> usize {
    executed.iter().filter(|entry| entry.starts_with(&format!("{query}("))).count()
}

#[test]
fn editing_one_role_file_reparses_only_that_role() {
    let mut db = Database::with_execution_log();
    let (source, files) = load_embedded(&db);
    let model = person_model(&db, source);
    assert!(!model.has_errors(), "{:?}", model.diagnostics);
    let first = db.take_executed();
    assert_eq!(executed_named(&first, "role_declaration"), 7, "{first:#?}");

    let edited =
        files.iter().copied().find(|file| file.relative_path(&db) == "roles/03-eval.kdl").expect("eval role file");
    let text = String::from_utf8(edited.bytes(&db).to_vec()).expect("utf-8");
    edited.set_bytes(&mut db).to(text.replace("purpose \"", "purpose \"Carefully: ").into_bytes().into());
    let model = person_model(&db, source);
    assert!(!model.has_errors(), "{:?}", model.diagnostics);
    assert!(model.value.role("eval").is_some_and(|role| role.purpose.starts_with("Carefully: ")));

    let second = db.take_executed();
    assert_eq!(executed_named(&second, "role_declaration"), 1, "only the edited role re-parses: {second:#?}");
    assert_eq!(executed_named(&second, "kdl_document"), 1, "{second:#?}");
    assert_eq!(executed_named(&second, "personality_declaration"), 0, "{second:#?}");
    assert_eq!(executed_named(&second, "package_layout"), 0, "layout reads paths only: {second:#?}");
}

#[test]
fn editing_one_skill_body_does_not_reparse_any_kdl() {
    let mut db = Database::with_execution_log();
    let (source, files) = load_embedded(&db);
    assert!(!person_model(&db, source).has_errors());
    db.take_executed();
    let skill = files
        .iter()
        .copied()
        .find(|file| file.relative_path(&db) == "roles/platform/SKILL.md")
        .expect("platform skill");
    let text = String::from_utf8(skill.bytes(&db).to_vec()).expect("utf-8");
    skill.set_bytes(&mut db).to(format!("{text}\nOne more paragraph.\n").into_bytes().into());
    assert!(!person_model(&db, source).has_errors());
    let executed = db.take_executed();
    assert_eq!(executed_named(&executed, "kdl_document"), 0, "{executed:#?}");
    assert_eq!(executed_named(&executed, "parsed_document"), 1, "{executed:#?}");
}

#[test]
fn an_unchanged_revision_recomputes_nothing() {
    let db = Database::with_execution_log();
    let (source, _) = load_embedded(&db);
    let first = person_model(&db, source).clone();
    db.take_executed();
    let second = person_model(&db, source).clone();
    assert_eq!(first, second);
    assert!(db.take_executed().is_empty());
}
