//! The roster loader and validator, end to end: every rule has a fixture under
//! `tests/fixtures/roster/<case>/case.txt` that patches a valid package; `check` runs
//! `roster validate` on it in-process (the cli's own rendering, with the labels the binary
//! would print) and the rendered diagnostics are snapshotted. One case also runs through
//! the real binary, which must print exactly the same; the other tests here run the
//! binary.

use crate::common;

use std::path::Path;

use acompose_cli::SourceArgs;
use acompose_cli::roster::{ValidateArgs, validate_output};
use acompose_cli::terminal::Terminal;
use acompose_driver::Sources;
use acompose_driver::compose::load::{Location, Selection};
use common::{Output, acompose, materialize_case};

/// `acompose roster validate --person-source pkg [ARGS]` in the folder holding the
/// package a `case.txt` describes, run in-process.
fn check(case: &Path) -> Output {
    let temporary = tempfile::tempdir().expect("tempdir");
    let arguments = materialize_case(case, &temporary.path().join("pkg"));
    let core_rules = match arguments.as_slice() {
        [] => false,
        [flag] if flag == "--core-rules" => true,
        other => panic!("{}: no in-process spelling for {other:?}", case.display()),
    };
    let validate = ValidateArgs {
        source: SourceArgs { person_source: Some("pkg".to_owned()), personality_libraries: Vec::new() },
        core_rules,
        json: false,
    };
    let selection = Selection { person: Location::Directory("pkg".into()), libraries: Vec::new(), core_rules };
    validate_output(&validate, &selection, &mut Sources::in_directory(temporary.path()), &Terminal::plain()).into()
}

/// The same command as [`check`], run by the real binary.
fn check_through_the_binary(case: &Path) -> Output {
    let temporary = tempfile::tempdir().expect("tempdir");
    let arguments = materialize_case(case, &temporary.path().join("pkg"));
    common::acompose_args(temporary.path(), &["roster", "validate", "--person-source", "pkg"], &arguments)
}

#[test]
fn embedded_roster_is_valid() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["roster", "validate"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("roster:core is valid: 7 roles, 10 personalities"), "{}", output.stdout);
}

#[test]
fn compat_person_profile_with_library_is_valid() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = common::acompose_args(temporary.path(), &["roster", "validate"], &common::compat_source_arguments());
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(output.stdout.contains("person:sample is valid: 3 roles, 3 personalities"), "{}", output.stdout);
}

#[test]
fn base_fixture_is_valid() {
    let temporary = tempfile::tempdir().expect("tempdir");
    common::copy_dir(&common::fixtures().join("roster/base"), &temporary.path().join("pkg"));
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
}

#[test]
fn every_rule_case_fails_with_file_and_line() {
    insta::glob!("../fixtures", "roster/*/case.txt", |path| {
        let output = check(path);
        let case =
            path.parent().and_then(std::path::Path::file_name).and_then(|name| name.to_str()).unwrap_or_default();
        assert_eq!(output.code, 1, "{case}: {}", output.stderr);
        assert!(output.stderr.contains("pkg/"), "{case} names no file: {}", output.stderr);
        let has_line = output.stderr.lines().any(|line| {
            line.starts_with("pkg/") && line.split(':').nth(1).is_some_and(|number| number.parse::<usize>().is_ok())
        });
        // A file that does not exist has no line to point at.
        let about_a_missing_file = ["manifest-missing", "invariant-missing"].contains(&case);
        assert!(has_line || about_a_missing_file, "{case} names no line: {}", output.stderr);
        insta::assert_snapshot!(format!("exit: {}\n{}", output.code, output.stderr));
    });
}

#[test]
fn the_binary_prints_what_the_in_process_check_returns() {
    // One case with diagnostics in several files and one under the Core rules.
    for case in ["several-problems-in-several-files", "core-seats-required"] {
        let case = common::fixtures().join("roster").join(case).join("case.txt");
        assert_eq!(check_through_the_binary(&case), check(&case), "{}", case.display());
    }
}

#[test]
fn several_problems_are_all_reported() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let case = common::fixtures().join("roster/several-problems-in-several-files/case.txt");
    materialize_case(&case, &temporary.path().join("pkg"));
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "pkg", "--json"]);
    assert_eq!(output.code, 1);
    let document: serde_json::Value = serde_json::from_str(&output.stdout).expect("json diagnostics");
    let codes: Vec<&str> = document["diagnostics"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|diagnostic| diagnostic["code"].as_str())
        .collect();
    for expected in ["color-too-gray", "unknown-model-tier", "role-skill-missing"] {
        assert!(codes.contains(&expected), "{expected} missing from {codes:?}");
    }
}

#[test]
fn missing_person_source_is_a_clear_error() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "nowhere"]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains("package-missing"), "{}", output.stderr);
    assert!(output.stderr.contains("nowhere"), "{}", output.stderr);
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["roster", "validate", "--no-such-flag"]);
    assert_eq!(output.code, 2, "{}", output.stderr);
}

#[test]
fn roster_show_json_lists_seven_roles_with_distinct_favourites() {
    use palette::{FromColor, Oklab, Srgb};
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["roster", "show", "--json"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let snapshot: serde_json::Value = serde_json::from_str(&output.stdout).expect("json");
    let roles = snapshot["roles"].as_object().expect("roles");
    let personalities = snapshot["personalities"].as_object().expect("personalities");
    assert_eq!(roles.len(), 7);
    assert_eq!(personalities.len(), 10);
    // Recompute each favourite from the personality colours, independently of the engine.
    let lab_of = |hex: &str| -> [f64; 3] {
        let digits = hex.trim_start_matches('#');
        let channel = |index: usize| u8::from_str_radix(&digits[index..index + 2], 16).expect("hex");
        let srgb: Srgb<f64> = Srgb::new(channel(0), channel(2), channel(4)).into_format();
        let lab = Oklab::from_color(srgb);
        [lab.l, lab.a, lab.b]
    };
    let mut favourites = Vec::new();
    for (slug, role) in roles {
        let meld: Vec<[f64; 3]> = role["personalities"]
            .as_array()
            .expect("meld")
            .iter()
            .map(|name| lab_of(personalities[name.as_str().expect("slug")]["color"].as_str().expect("colour")))
            .collect();
        let count = meld.len() as f64;
        let mut centroid = [0.0; 3];
        for component in &meld {
            for axis in 0..3 {
                centroid[axis] += component[axis] / count;
            }
        }
        let chroma = |lab: &[f64; 3]| lab[1].hypot(lab[2]);
        let minimum = meld.iter().map(chroma).fold(f64::INFINITY, f64::min);
        if chroma(&centroid) < minimum {
            let scale = minimum / chroma(&centroid);
            centroid[1] *= scale;
            centroid[2] *= scale;
        }
        centroid[0] = centroid[0].clamp(0.60, 0.80);
        let written = lab_of(role["favorite_color"].as_str().expect("favourite"));
        // The written hex is rounded to 8 bits per channel.
        let error = ((written[0] - centroid[0]).powi(2)
            + (written[1] - centroid[1]).powi(2)
            + (written[2] - centroid[2]).powi(2))
        .sqrt();
        assert!(error < 0.01, "{slug}: favourite {written:?} differs from recomputed {centroid:?}");
        favourites.push((slug.clone(), centroid));
    }
    for (index, (first, a)) in favourites.iter().enumerate() {
        for (second, b) in favourites.iter().skip(index + 1) {
            let distance = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
            assert!(distance >= 0.08, "{first} and {second} are {distance:.3} apart");
        }
    }
}

#[test]
fn catalog_personalities_query_matches_aliases() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let mut tail = common::compat_source_arguments();
    tail.extend(["--query".to_owned(), "dependable".to_owned(), "--json".to_owned()]);
    let output = common::acompose_args(temporary.path(), &["catalog", "personalities"], &tail);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let listing: serde_json::Value = serde_json::from_str(&output.stdout).expect("json");
    let slugs: Vec<&str> =
        listing["items"].as_array().expect("items").iter().filter_map(|item| item["slug"].as_str()).collect();
    assert_eq!(slugs, ["steady-hand"]);
}

#[test]
fn catalog_roles_and_seats_print_json() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let roles = acompose(temporary.path(), &["catalog", "roles", "--json"]);
    assert_eq!(roles.code, 0, "{}", roles.stderr);
    let listing: serde_json::Value = serde_json::from_str(&roles.stdout).expect("json");
    assert_eq!(listing["items"].as_array().map(Vec::len), Some(7));
    let seats = acompose(temporary.path(), &["catalog", "seats", "--role", "platform", "--json"]);
    assert_eq!(seats.code, 0, "{}", seats.stderr);
    let listing: serde_json::Value = serde_json::from_str(&seats.stdout).expect("json");
    assert!(
        listing["items"]
            .as_array()
            .is_some_and(|items| !items.is_empty() && items.iter().all(|item| item["role"] == "platform"))
    );
    let unknown = acompose(temporary.path(), &["catalog", "seats", "--role", "nobody"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("platform"), "lists the valid roles: {}", unknown.stderr);
}

#[test]
fn role_card_is_plain_when_redirected() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["roster", "show", "--role", "platform"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(!output.stdout.contains('\x1b'), "no escape codes when not a terminal");
    insta::assert_snapshot!(output.stdout);
    let coloured = acompose(temporary.path(), &["--color", "always", "roster", "show", "--role", "platform"]);
    assert!(coloured.stdout.contains("\x1b[38;"), "--color always tints");
}

/// Copies the compatibility person package and its library into `to`.
fn compat_package(to: &std::path::Path) {
    common::copy_dir(&common::compat_dir().join("person-package"), &to.join("person"));
    common::copy_dir(&common::compat_dir().join("personality-library"), &to.join("library"));
}

#[test]
fn a_legacy_role_with_only_a_briefing_is_valid_and_one_with_no_body_is_not() {
    let temporary = tempfile::tempdir().expect("tempdir");
    compat_package(temporary.path());
    let arguments = ["roster", "validate", "--person-source", "person", "--personality-library", "library"];
    let valid = acompose(temporary.path(), &arguments);
    assert_eq!(valid.code, 0, "{}", valid.stderr);
    let legacy = temporary.path().join("person/roles/03-archive-keeper.kdl");
    assert!(!std::fs::read_to_string(&legacy).expect("role").contains("skill "), "the fixture has no skill node");
    assert!(!temporary.path().join("person/roles/archive-keeper").exists(), "and no role skill folder");

    // Without the briefing the role has no body at all.
    let text = std::fs::read_to_string(&legacy).expect("role");
    let start = text.find("    briefing").expect("briefing");
    let end = text[start..].find("\"\"\"\n    seat").map(|offset| start + offset + 4).expect("end of briefing");
    std::fs::write(&legacy, format!("{}{}", &text[..start], &text[end..])).expect("write");
    let missing = acompose(temporary.path(), &arguments);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert!(missing.stderr.contains("role-skill-missing"), "{}", missing.stderr);
    assert!(missing.stderr.contains("person/roles/03-archive-keeper.kdl:1:"), "{}", missing.stderr);
}

#[test]
fn a_short_briefing_is_refused_like_a_short_role_skill() {
    let temporary = tempfile::tempdir().expect("tempdir");
    compat_package(temporary.path());
    let legacy = temporary.path().join("person/roles/03-archive-keeper.kdl");
    let text = std::fs::read_to_string(&legacy).expect("role");
    let start = text.find("\n\n        It never deletes").expect("third paragraph");
    let end = text[start..].find("\n        \"\"\"").map(|offset| start + offset).expect("end");
    std::fs::write(&legacy, format!("{}{}", &text[..start], &text[end..])).expect("write");
    let output = acompose(
        temporary.path(),
        &["roster", "validate", "--person-source", "person", "--personality-library", "library"],
    );
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("role-skill-paragraphs"), "{}", output.stderr);
}

#[test]
fn roster_init_writes_a_package_that_validates() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["roster", "init", "my-team"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let output = acompose(temporary.path(), &["roster", "validate", "--person-source", "my-team"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stdout.contains("person:my-team is valid: 2 roles, 3 personalities (0 errors, 0 warnings)"),
        "{}",
        output.stdout
    );
    let again = acompose(temporary.path(), &["roster", "init", "my-team"]);
    assert_eq!(again.code, 1, "a folder that is not empty is refused");
    assert!(again.stderr.contains("not empty"), "{}", again.stderr);
    // The Core rules are not required of an external package, but every other rule holds:
    // and every definition is bound, so a personality library made from it would load.
    let shown = acompose(temporary.path(), &["catalog", "personalities", "--person-source", "my-team"]);
    assert_eq!(shown.stdout.lines().count(), 3, "{}", shown.stdout);
}
