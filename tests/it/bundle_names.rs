//! Names for bundles: wherever a command takes a bundle it also takes a role slug (the
//! home's current bundle of that role) or a unique id prefix of at least four hex digits;
//! `bundle list` shows the home's bundles; the convergence summary names each role whose
//! bundle changed.

use crate::common;

use std::path::Path;

use common::{acompose, generated_estate};

/// A converged estate (`home`, `projects`) and its index: role → bundle id.
fn converged(root: &Path) -> serde_json::Map<String, serde_json::Value> {
    let (_home, projects) = generated_estate(root, 1);
    let output = acompose(root, &["--home", "home", "--projects-root", projects.to_str().expect("utf-8")]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("home/bundles/index.json")).expect("index")).expect("json");
    index["bundles"].as_object().expect("bundles").clone()
}

#[test]
fn the_summary_names_each_role_whose_bundle_changed_with_its_new_id() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (_home, projects) = generated_estate(temporary.path(), 1);
    let projects = projects.to_str().expect("utf-8").to_owned();
    let output = acompose(temporary.path(), &["--home", "home", "--projects-root", &projects]);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(temporary.path().join("home/bundles/index.json")).expect("index"))
            .expect("json");
    let platform = index["bundles"]["platform"].as_str().expect("platform");
    assert!(output.stdout.contains(&format!("          platform  {platform}\n")), "{}", output.stdout);
    // One skill of the platform role changes: only that role is named.
    common::write_file(
        &temporary.path().join("projects/example/repo0/.agents/skills/skill0-alpha/SKILL.md"),
        "---\nname: skill0-alpha\ndescription: Changed.\n---\n\nChanged.\n",
    );
    let output = acompose(temporary.path(), &["--home", "home", "--projects-root", &projects, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&output.stdout).expect("json");
    let changed = report["bundles"]["changed"].as_array().expect("changed");
    assert_eq!(changed.len(), 1, "{}", output.stdout);
    assert_eq!(changed[0]["role"], "platform");
    assert_ne!(changed[0]["id"], platform);
}

#[test]
fn a_role_or_an_id_prefix_names_a_bundle_wherever_a_command_takes_one() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let index = converged(temporary.path());
    let platform = index["platform"].as_str().expect("platform").to_owned();
    let sysadmin = index["sysadmin"].as_str().expect("sysadmin").to_owned();
    let home = |arguments: &[&str]| {
        let mut all = vec!["--home", "home"];
        all.extend_from_slice(arguments);
        acompose(temporary.path(), &all)
    };
    let described = home(&["describe", "platform", "--json"]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    assert!(described.stdout.contains(&platform), "{}", described.stdout);
    let verified = home(&["verify", &platform[..6]]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    let same = home(&["diff", "platform", &platform[..4]]);
    assert_eq!(same.code, 0, "{}", same.stderr);
    let why = home(&["describe", &sysadmin[..8], "--why", "role:sysadmin"]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    let exported = home(&["bundle", "export", "platform", "--out", "platform.tar"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert!(temporary.path().join("platform.tar").is_file());
    // A path still works, and a name that fits nothing says what it tried.
    let by_path = home(&["verify", &format!("home/bundles/{platform}")]);
    assert_eq!(by_path.code, 0, "{}", by_path.stderr);
    let unknown = home(&["describe", "platfrom"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.stderr.contains("did you mean `platform`?"), "{}", unknown.stderr);
    let short = home(&["describe", &platform[..3]]);
    assert_eq!(short.code, 1, "three digits are too few: {}", short.stderr);
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let index = converged(temporary.path());
    let platform = index["platform"].as_str().expect("platform").to_owned();
    let twin = format!("{}ffffffffffff", &platform[..4]);
    let twin = if twin == platform { format!("{}000000000000", &platform[..4]) } else { twin };
    std::fs::create_dir_all(temporary.path().join("home/bundles").join(&twin)).expect("twin");
    let output = acompose(temporary.path(), &["--home", "home", "describe", &platform[..4]]);
    assert_eq!(output.code, 1);
    assert!(output.stderr.contains(&format!("{platform} (platform)")), "{}", output.stderr);
    assert!(output.stderr.contains(&twin), "{}", output.stderr);
    assert!(output.stderr.contains("give more digits"), "{}", output.stderr);
}

#[test]
fn bundle_list_shows_role_id_size_and_the_projections_that_use_each() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let index = converged(temporary.path());
    let platform = index["platform"].as_str().expect("platform").to_owned();
    let target = temporary.path().join("checkout");
    std::fs::create_dir_all(&target).expect("target");
    let projected = acompose(
        temporary.path(),
        &["--home", "home", "project", "platform", "--layout", "claude", "--target", target.to_str().expect("utf-8")],
    );
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let listed = acompose(temporary.path(), &["--home", "home", "bundle", "list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let line = listed.stdout.lines().find(|line| line.contains(&platform)).expect("the platform line");
    assert!(line.starts_with("* platform"), "{line}");
    assert!(line.contains("checkout"), "the projection using it: {line}");
    assert_eq!(listed.stdout.lines().filter(|line| line.starts_with('*')).count(), 8, "{}", listed.stdout);
    let json = acompose(temporary.path(), &["--home", "home", "bundle", "list", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(document["format"], "acompose.bundle-list.v1");
    let bundles = document["bundles"].as_array().expect("bundles");
    assert_eq!(bundles.len(), 7);
    let entry = bundles.iter().find(|entry| entry["id"] == platform.as_str()).expect("platform");
    assert_eq!(entry["role"], "platform");
    assert_eq!(entry["current"], true);
    assert!(entry["bytes"].as_u64().expect("bytes") > 0);
    assert_eq!(entry["projections"].as_array().expect("projections").len(), 1);
}

#[test]
fn a_roles_earlier_bundles_are_kept_named_role_at_n_and_survive_gc() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let first = converged(root)["platform"].as_str().expect("platform").to_owned();
    let home = |arguments: &[&str]| {
        let mut all = vec!["--home", "home"];
        all.extend_from_slice(arguments);
        acompose(root, &all)
    };
    let projects = root.join("projects").display().to_string();
    let edit = |round: usize| {
        common::write_file(
            &root.join("projects/example/repo0/.agents/skills/skill0-alpha/SKILL.md"),
            &format!("---\nname: skill0-alpha\ndescription: Round {round}.\n---\n\nRound {round}.\n"),
        );
        let output = home(&["--projects-root", &projects]);
        assert_eq!(output.code, 0, "{}", output.stderr);
    };
    edit(1);
    // The before and after of the last change: the edited skill differs, and diff exits 1.
    let diff = home(&["diff", "platform@{1}", "platform"]);
    assert_eq!(diff.code, 1, "{}{}", diff.stdout, diff.stderr);
    assert!(diff.stdout.contains("skill0-alpha"), "{}", diff.stdout);
    assert_eq!(home(&["diff", "platform@{1}", &first[..8]]).code, 0, "platform@{{1}} is the first bundle");
    assert_eq!(home(&["diff", "platform@{0}", "platform"]).code, 0);
    let described = home(&["describe", "platform@{1}", "--json"]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    assert!(described.stdout.contains(&first), "{}", described.stdout);
    assert_eq!(home(&["verify", "platform@{1}"]).code, 0);
    let target = root.join("checkout");
    std::fs::create_dir_all(&target).expect("target");
    let target_text = target.to_str().expect("utf-8");
    let projected = home(&["project", "platform@{1}", "--layout", "claude", "--target", target_text]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    assert_eq!(home(&["unproject", "--target", target_text]).code, 0);
    // `bundle list` names it; `gc` keeps it and every store entry it links.
    let listed = home(&["bundle", "list"]);
    let line = listed.stdout.lines().find(|line| line.contains(&first)).expect("the earlier bundle is listed");
    assert!(line.starts_with("  platform@{1}"), "{line}");
    assert_eq!(home(&["gc"]).code, 0);
    assert_eq!(home(&["verify", "platform@{1}"]).code, 0, "gc kept it whole");
    // Newest first, and bounded: with `bundle_history: 2` the third edit drops the first.
    let config = std::fs::read_to_string(root.join("home/agent-compose.yaml")).expect("config");
    common::write_file(&root.join("home/agent-compose.yaml"), &format!("{config}bundle_history: 2\n"));
    edit(2);
    assert!(home(&["describe", "platform@{2}", "--json"]).stdout.contains(&first));
    edit(3);
    let gone = home(&["describe", "platform@{3}"]);
    assert_eq!(gone.code, 1);
    assert!(gone.stderr.contains("keeps 2 earlier bundle(s) of `platform`"), "{}", gone.stderr);
    assert!(!root.join("home/bundles").join(&first).exists(), "the bundle that fell off is pruned");
    // An id that is gone says how earlier bundles are named.
    let unknown = home(&["diff", &first[..8], "platform"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("platform@{1}…platform@{2}"), "{}", unknown.stderr);
}
