//! "Did you mean": the closest known name (by `strsim`) for a misspelt subcommand,
//! harness, role slug, `--why` subject, KDL node or property, configuration key or value.

use crate::common;

use common::{acompose, write_file};

#[test]
fn a_misspelt_subcommand_or_harness_gets_the_closest_name() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let command = acompose(temporary.path(), &["rostr", "show"]);
    assert_eq!(command.code, 2);
    assert!(command.stderr.contains("'roster'"), "{}", command.stderr);
    let shorthand = acompose(temporary.path(), &["builder", "claud"]);
    assert_eq!(shorthand.code, 2);
    assert!(shorthand.stderr.contains("`claud` is not a harness; did you mean `claude`?"), "{}", shorthand.stderr);
    assert!(!shorthand.stderr.contains("bundle"), "no unrelated subcommand: {}", shorthand.stderr);
    let launch = acompose(temporary.path(), &["launch", "platform", "codx"]);
    assert_eq!(launch.code, 2);
    assert!(launch.stderr.contains("'codex'"), "{}", launch.stderr);
}

#[test]
fn a_misspelt_role_gets_the_closest_role() {
    let temporary = tempfile::tempdir().expect("tempdir");
    for command in [&["roster", "show", "--role", "platfrom"][..], &["catalog", "seats", "--role", "platfrom"]] {
        let output = acompose(temporary.path(), command);
        assert_eq!(output.code, 1, "{command:?}");
        assert!(output.stderr.contains("did you mean `platform`?"), "{command:?}: {}", output.stderr);
    }
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"sysadmn\"\n    delivery \"compiled\"\n}\n",
    );
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert!(output.stderr.contains("did you mean `sysadmin`?"), "{}", output.stderr);
}

#[test]
fn a_misspelt_why_subject_gets_the_closest_kind_or_name() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("cat/.agents/skills/house-style/SKILL.md"),
        "---\nname: house-style\ndescription: How we write.\n---\n\nShort.\n",
    );
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"cat\" root=\"cat\"\n}\n",
    );
    let composed = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&composed.stdout).expect("json");
    let bundle = format!("out/{}", report["bundle"].as_str().expect("id"));
    let kind = acompose(temporary.path(), &["describe", &bundle, "--why", "skil:house-style"]);
    assert_eq!(kind.code, 2);
    assert!(kind.stderr.contains("did you mean `skill`?"), "{}", kind.stderr);
    let name = acompose(temporary.path(), &["describe", &bundle, "--why", "skill:house-styel"]);
    assert_eq!(name.code, 1);
    assert!(name.stderr.contains("closest: skill:house-style"), "{}", name.stderr);
}

#[test]
fn misspelt_configuration_keys_and_values_get_the_closest_ones() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(
        &temporary.path().join("c.yaml"),
        "projets_root: ~/src\nskill_policy: stirct\nload_points:\n  claud: true\n",
    );
    let output = acompose(temporary.path(), &["config", "validate", "c.yaml"]);
    assert_eq!(output.code, 1);
    for expected in ["did you mean `projects_root`?", "did you mean `strict`?", "did you mean `claude`?"] {
        assert!(output.stderr.contains(expected), "{expected}: {}", output.stderr);
    }
    write_file(
        &temporary.path().join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"compild\"\n    skill-policy \"skp\"\n}\n",
    );
    let request = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert!(request.stderr.contains("did you mean `compiled`?"), "{}", request.stderr);
    assert!(request.stderr.contains("did you mean `skip`?"), "{}", request.stderr);
}
