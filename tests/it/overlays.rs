//! Private overlays end to end: each kind of entry changes exactly what it should in the
//! bundles and the trace, `person.json` records the overlays by digest, every forbidden
//! redefinition fails with the overlay's file and line, and nothing is written then.

use std::path::Path;

use crate::common::{Output, acompose};

fn skill(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\nUse {name}.\n")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

const ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role eval { use-repository benchmarks; }\n}\n";

/// The worked example of docs/overlays.md: a team instruction for two roles, a provider
/// narrowed for one, a slice widened for another, and a seat renamed.
pub const TEAM_OVERLAY: &str = r#"// A private overlay: mine, outside every repository.
instruction "team-review" {
    role "platform" "eval"
    text "Reviews are written in plain English and name the file and line they are about."
}
exclude role="platform" skill="machine-gpu"
admit role="eval" repository="hardware" {
    skill "machine-cpu"
}
seat role="platform" seat="claude" name="Ada" pronouns="she/her"
"#;

/// A home converging over an estate: a trusted root, two repositories.
fn estate(root: &Path) {
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), ROLES);
    write(&projects.join("acme/root/.agents/skills/estate-map/SKILL.md"), &skill("estate-map"));
    for name in ["machine-cpu", "machine-gpu"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name));
    }
    write(&projects.join("example/benchmarks/.agents/skills/bench-report/SKILL.md"), &skill("bench-report"));
    write(&root.join("home/agent-compose.yaml"), "operating_context:\n  - acme/root\n");
}

fn converge(root: &Path) -> Output {
    acompose(root, &["--home", "home", "--projects-root", "projects"])
}

fn index(root: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(root.join("home/bundles/index.json")).expect("index");
    serde_json::from_str(&text).expect("json")
}

/// A role's current bundle id, from the index.
fn bundle_of(root: &Path, role: &str) -> String {
    let index = index(root);
    index["bundles"][role].as_str().unwrap_or_else(|| panic!("no bundle for {role} in {index}")).to_owned()
}

fn why(root: &Path, role: &str, item: &str) -> String {
    let output = acompose(root, &["describe", role, "--home", "home", "--why", item]);
    assert_eq!(output.code, 0, "{item}: {}", output.stderr);
    output.stdout
}

#[test]
fn each_kind_of_overlay_entry_changes_exactly_what_it_should() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    assert_eq!(converge(root).code, 0);
    let before: Vec<String> = ["platform", "eval", "sysadmin"].iter().map(|role| bundle_of(root, role)).collect();
    write(&root.join("home/overlays/team.kdl"), TEAM_OVERLAY);
    let output = converge(root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let after: Vec<String> = ["platform", "eval", "sysadmin"].iter().map(|role| bundle_of(root, role)).collect();
    assert_ne!(before[0], after[0], "platform changed");
    assert_ne!(before[1], after[1], "eval changed");
    assert_eq!(before[2], after[2], "sysadmin is named by no entry");

    let bundles = root.join("home/bundles");
    let platform = bundles.join(&after[0]);
    let instruction = std::fs::read_to_string(platform.join("content/overlays/team-review.md")).expect("instruction");
    insta::assert_snapshot!(instruction, @"Reviews are written in plain English and name the file and line they are about.");
    assert!(!platform.join("content/skills/hardware/machine-gpu").exists(), "machine-gpu excluded");
    assert!(platform.join("content/skills/hardware/machine-cpu/SKILL.md").exists());
    let eval = bundles.join(&after[1]);
    assert!(eval.join("content/skills/hardware/machine-cpu/SKILL.md").exists(), "the admitted slice");
    assert!(!eval.join("content/skills/hardware/machine-gpu").exists(), "only the slice");
    assert!(!bundles.join(&after[2]).join("content/overlays").exists());

    insta::assert_snapshot!("platform_why_overlay", why(root, "platform", "overlay:team.kdl"));
    insta::assert_snapshot!("platform_why_skill", why(root, "platform", "skill:machine-gpu"));
    insta::assert_snapshot!("eval_why_source", why(root, "eval", "source:hardware"));
    insta::assert_snapshot!("eval_why_instruction", why(root, "eval", "instruction:team-review"));

    let person = std::fs::read_to_string(root.join("home/sources/personality/person.json")).expect("person.json");
    let person: serde_json::Value = serde_json::from_str(&person).expect("json");
    let seat =
        person["roles"]["platform"]["seats"].as_array().expect("seats").iter().find(|seat| seat["key"] == "claude");
    insta::assert_json_snapshot!("platform_claude_seat", seat);
    let digest = format!("blake3:{}", blake3::hash(TEAM_OVERLAY.as_bytes()).to_hex());
    assert_eq!(person["overlays"], serde_json::json!([{ "digest": digest }]));
    assert!(!person.to_string().contains("overlays/team.kdl") && !person.to_string().contains("plain English"));

    // Unchanged: nothing moves. Removed: every bundle is as before.
    assert_eq!(converge(root).code, 0);
    assert_eq!(bundle_of(root, "platform"), after[0]);
    std::fs::remove_file(root.join("home/overlays/team.kdl")).expect("remove");
    assert_eq!(converge(root).code, 0);
    assert_eq!(bundle_of(root, "platform"), before[0]);
    assert_eq!(bundle_of(root, "eval"), before[1]);
}

#[test]
fn every_forbidden_redefinition_fails_with_file_and_line_and_writes_nothing() {
    let cases = [
        ("role", "role \"platform\" {\n    purpose \"Something else.\"\n}\n"),
        ("personality", "personality \"calm\" color=\"#000000\"\n"),
        ("definition", "definition \"personality-calm\"\n"),
        ("personality-set", "meld role=\"platform\" \"calm\" \"bold\"\n"),
        ("seat-routing", "seat role=\"platform\" seat=\"claude\" name=\"Ada\" pronouns=\"she/her\" tier=\"oss\"\n"),
        ("identity", "identity role=\"platform\" name=\"Ada\"\n"),
        ("unknown-role", "instruction \"x\" {\n    role \"platfrom\"\n    text \"Hello.\"\n}\n"),
        ("unknown-seat", "seat role=\"platform\" seat=\"emacs\" name=\"Ada\" pronouns=\"she/her\"\n"),
        ("unknown-repository", "admit role=\"eval\" repository=\"nowhere\"\n"),
        ("harness-scope", "instruction \"x\" {\n    harness \"claude\"\n    text \"Hello.\"\n}\n"),
    ];
    let mut report = String::new();
    for (name, text) in cases {
        let temporary = tempfile::tempdir().expect("tempdir");
        let root = temporary.path();
        estate(root);
        assert_eq!(converge(root).code, 0);
        let index_before = std::fs::read(root.join("home/bundles/index.json")).expect("index");
        // A comment line first, so the line the diagnostic names is the second.
        write(&root.join("home/overlays/mine.kdl"), &format!("// mine\n{text}"));
        let output = converge(root);
        assert_ne!(output.code, 0, "{name}: {}", output.stdout);
        assert_eq!(std::fs::read(root.join("home/bundles/index.json")).expect("index"), index_before, "{name}");
        let stderr = output.stderr.replace(&root.display().to_string(), "ROOT");
        report.push_str(&format!("== {name}\n{stderr}\n"));
    }
    insta::assert_snapshot!(report);
}
