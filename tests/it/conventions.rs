//! The conventions of one coherent tool: `-q` prints only errors, `diff` exits 1 when
//! bundles differ, completions and manual pages come from the command definitions, an
//! empty target is an error, `people init` makes `projects/`, and `--json` diagnostics
//! carry line and column.

use crate::common;

use common::{acompose, write_file};

/// A request that composes with a warning (`identity` is read and ignored).
const WARNING_REQUEST: &str =
    "compose {\n    role \"platform\"\n    delivery \"compiled\"\n    identity name=\"someone\"\n}\n";

#[test]
fn quiet_prints_only_errors() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(&temporary.path().join("request.kdl"), WARNING_REQUEST);
    let loud = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out"]);
    assert_eq!(loud.code, 0, "{}", loud.stderr);
    assert!(loud.stderr.contains("request-node-ignored"), "{}", loud.stderr);
    let quiet = acompose(temporary.path(), &["-q", "compose", "request.kdl", "--out", "out2"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""), "no warning under -q");
    // An error and a warning together: only the error under -q.
    write_file(
        &temporary.path().join("broken.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"zip\"\n    identity name=\"someone\"\n}\n",
    );
    let broken = acompose(temporary.path(), &["-q", "compose", "broken.kdl", "--out", "out"]);
    assert_eq!(broken.code, 1);
    assert!(broken.stderr.contains("unknown-delivery"), "{}", broken.stderr);
    assert!(!broken.stderr.contains("request-node-ignored"), "{}", broken.stderr);
    assert_eq!(broken.stdout, "");
}

#[test]
fn diff_says_in_its_help_that_a_difference_exits_1() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let help = acompose(temporary.path(), &["diff", "--help"]);
    assert!(help.stdout.contains("1 when they differ"), "{}", help.stdout);
}

#[test]
fn completions_and_manual_pages_come_from_the_command_definitions() {
    let temporary = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let output = acompose(temporary.path(), &["completions", shell]);
        assert_eq!(output.code, 0, "{shell}: {}", output.stderr);
        assert!(output.stdout.contains("acompose") && output.stdout.contains("roster"), "{shell}");
    }
    assert_eq!(acompose(temporary.path(), &["completions", "tcsh"]).code, 2);
    let page = acompose(temporary.path(), &["man"]);
    assert!(page.stdout.contains(".TH acompose 1"), "{}", page.stdout);
    let sub = acompose(temporary.path(), &["man", "roster", "validate"]);
    assert!(sub.stdout.contains(".TH acompose-roster-validate 1"), "{}", sub.stdout);
    assert!(sub.stdout.contains("person\\-source"), "{}", sub.stdout);
    let unknown = acompose(temporary.path(), &["man", "rostr"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("did you mean `roster`?"), "{}", unknown.stderr);
}

#[test]
fn an_empty_target_is_an_error() {
    let temporary = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(temporary.path().join("empty")).expect("empty");
    let check = acompose(temporary.path(), &["catalog", "check", "empty"]);
    assert_eq!(check.code, 1, "{}", check.stdout);
    assert!(check.stderr.contains("no skill found in `empty`"), "{}", check.stderr);
    for command in
        [&["people", "list"][..], &["people", "validate"], &["people", "sessions"], &["people", "show", "ada"]]
    {
        let output = acompose(temporary.path(), command);
        assert_eq!(output.code, 1, "{command:?}: {}", output.stdout);
        assert!(output.stderr.contains("is not a People workspace"), "{command:?}: {}", output.stderr);
    }
}

#[test]
fn people_init_makes_projects_and_every_people_command_takes_a_workspace() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let init = acompose(temporary.path(), &["people", "init", "--workspace", "team"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(temporary.path().join("team/projects").is_dir(), "projects/ is made");
    std::os::unix::fs::symlink(temporary.path(), temporary.path().join("team/projects/desk"))
        .expect("the documented link");
    let runners = acompose(temporary.path(), &["people", "runners", "--workspace", "team"]);
    assert_eq!(runners.code, 0, "{}", runners.stderr);
    let list = acompose(temporary.path(), &["people", "list", "--workspace", "team"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
}

#[test]
fn json_diagnostics_carry_line_and_column() {
    let temporary = tempfile::tempdir().expect("tempdir");
    write_file(&temporary.path().join("request.kdl"), "compose {\n    role \"platform\"\n    delivery \"zip\"\n}\n");
    let output = acompose(temporary.path(), &["compose", "request.kdl", "--out", "out", "--json"]);
    assert_eq!(output.code, 1);
    let document: serde_json::Value = serde_json::from_str(&output.stdout).expect("json on stdout");
    assert_eq!(document["format"], "acompose.diagnostics.v1");
    assert_eq!(document["diagnostics"][0]["code"], "unknown-delivery");
    assert_eq!(
        (document["diagnostics"][0]["line"].as_u64(), document["diagnostics"][0]["column"].as_u64()),
        (Some(3), Some(14))
    );
}
