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
    // The selector report counts what the role receives, and says what the overlay took.
    insta::assert_snapshot!("platform_why_source", why(root, "platform", "source:hardware"));
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
        ("unknown-harness", "instruction \"x\" {\n    harness \"claude\" \"gemeni\"\n    text \"Hello.\"\n}\n"),
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

fn validator(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(name);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("schema json");
    jsonschema::validator_for(&schema).expect("valid schema")
}

fn assert_valid(validator: &jsonschema::Validator, document: &serde_json::Value) {
    let errors: Vec<String> = validator.iter_errors(document).map(|error| error.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{document:#}");
}

#[test]
fn overlay_shows_a_seat_card_with_the_overlays_name_and_its_json_validates() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    write(&root.join("home/overlays/team.kdl"), TEAM_OVERLAY);
    let card = |extra: &[&str]| {
        let mut arguments = vec!["overlay", "--home", "home", "--role", "platform", "--seat", "claude"];
        arguments.extend(extra);
        acompose(root, &arguments)
    };
    let wide = card(&["--expression", "thinking", "--width", "120"]);
    assert_eq!(wide.code, 0, "{}", wide.stderr);
    let narrow = card(&["--width", "24"]);
    insta::assert_snapshot!(format!("{}--\n{}", wide.stdout, narrow.stdout), @r"
    🪢 🧱  Ada [she/her]  //  platform / thinking  //  tenacious + grounded  //  #dd971a
    --
    🪢 🧱 Ada [she/her]
    platform / available
    tenacious + grounded
    #dd971a
    ");
    let json = card(&["--json", "--expression", "blocked"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_valid(&validator("overlay.schema.json"), &document);
    assert_eq!(document["annotation"], "Ada [she/her] (Developer Platform Engineer)");
    assert_eq!(document["expression"], "blocked");

    let mut refusals = String::new();
    for (role, seat, extra) in [
        ("platform", "claude", &["--expression", "sleeping"][..]),
        ("platform", "claude", &["--width", "19"]),
        ("platform", "emacs", &[]),
        ("nobody", "claude", &[]),
    ] {
        let mut arguments = vec!["overlay", "--home", "home", "--role", role, "--seat", seat];
        arguments.extend(extra);
        let output = acompose(root, &arguments);
        assert_eq!(output.code, 1, "{arguments:?}: {}", output.stderr);
        refusals.push_str(&output.stderr);
    }
    insta::assert_snapshot!(refusals, @r"
    error: `sleeping` is not an expression; expressions: available, listening, thinking, acting, waiting-for-human, blocked, completed, failed, offline
    error: `--width` must be at least 20
    error: role `platform` has no seat `emacs`; seats: claude, codex, gemini
    error: role `nobody` is not in the roster; roles: platform, sysadmin, eval, frontend, gamedev, tpm, devrel
    ");
}

#[test]
fn catalog_expressions_lists_the_vocabulary_and_its_json_validates() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let text = acompose(temporary.path(), &["catalog", "expressions"]);
    assert_eq!(text.code, 0);
    insta::assert_snapshot!(text.stdout, @r"
    available
    listening
    thinking
    acting
    waiting-for-human
    blocked
    completed
    failed
    offline
    ");
    let json = acompose(temporary.path(), &["catalog", "expressions", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_valid(&validator("expressions.schema.json"), &document);
    let person = acompose(temporary.path(), &["roster", "--out", "out"]);
    assert_eq!(person.code, 0, "{}", person.stderr);
    let snapshot: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(temporary.path().join("out/person.json")).expect("person.json"))
            .expect("json");
    assert_eq!(snapshot["expressions"], document["expressions"], "one vocabulary");
}

#[test]
fn person_json_with_overlays_validates_against_the_published_schema() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    write(&root.join("home/overlays/team.kdl"), TEAM_OVERLAY);
    assert_eq!(converge(root).code, 0);
    let text = std::fs::read_to_string(root.join("home/sources/personality/person.json")).expect("person.json");
    assert_valid(&validator("person.schema.json"), &serde_json::from_str(&text).expect("json"));
}

/// Instructions scoped to harnesses: one for Claude Code, one for Codex and Gemini CLI
/// where `hardware` is admitted (platform admits it), one for eval where it is not.
pub const HARNESS_OVERLAY: &str = r#"// Instructions for one harness or two.
instruction "claude-hooks" {
    role "platform"
    harness "claude"
    text "Run the repository's hooks before each commit."
}
instruction "sandbox-notes" {
    role "platform"
    harness "gemini" "codex"
    repository "hardware"
    text "Commands run in a sandbox; ask before widening it."
}
instruction "eval-hooks" {
    role "eval"
    harness "claude"
    repository "hardware"
    text "Never seen: eval does not admit hardware."
}
"#;

/// Projects `role` for one harness into a fresh target and returns the target.
fn project(root: &Path, role: &str, harness: &str, target: &str) -> (std::path::PathBuf, Output) {
    let target = root.join(target);
    std::fs::create_dir_all(&target).expect("target");
    let arguments =
        ["--home", "home", "project", role, "--layout", harness, "--target", target.to_str().expect("utf-8")];
    let output = acompose(root, &arguments);
    (target, output)
}

#[test]
fn a_harness_scoped_instruction_reaches_only_the_harnesses_it_names() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    assert_eq!(converge(root).code, 0);
    let sysadmin = bundle_of(root, "sysadmin");
    write(&root.join("home/overlays/harness.kdl"), HARNESS_OVERLAY);
    let output = converge(root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(bundle_of(root, "sysadmin"), sysadmin, "named by no entry");

    let mut seen = Vec::new();
    for (harness, file) in [("claude", "CLAUDE.md"), ("codex", "AGENTS.md"), ("gemini", "GEMINI.md")] {
        let (target, output) = project(root, "platform", harness, harness);
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        let text = std::fs::read_to_string(target.join(file)).expect("instructions");
        let hooks = text.contains("Run the repository's hooks");
        let sandbox = text.contains("Commands run in a sandbox");
        assert!(!text.contains("Never seen"), "{harness}: {text}");
        seen.push(format!("{harness}: hooks {hooks}, sandbox {sandbox}"));
        if harness == "claude" {
            let part = &text[text.find("## Instructions from private overlays for").expect("the part")..];
            insta::assert_snapshot!(part, @r"
            ## Instructions from private overlays for Claude Code

            ### `claude-hooks`

            Run the repository's hooks before each commit.
            ");
        }
    }
    assert_eq!(
        seen,
        ["claude: hooks true, sandbox false", "codex: hooks false, sandbox true", "gemini: hooks false, sandbox true"]
    );

    // The bundle is one for every harness: its parts are listed in the manifest, and
    // verification checks them.
    let bundle = root.join("home/bundles").join(bundle_of(root, "platform"));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("manifest.json")).expect("manifest")).expect("json");
    insta::assert_json_snapshot!(manifest["harness_instructions"], @r#"
    {
      "claude": "content/harness/claude/instructions.md",
      "codex": "content/harness/codex/instructions.md",
      "gemini": "content/harness/gemini/instructions.md"
    }
    "#);
    let common = std::fs::read_to_string(bundle.join("content/instructions.md")).expect("instructions.md");
    assert!(!common.contains("claude-hooks") && !common.contains("sandbox-notes"), "{common}");
    let verified = acompose(root, &["--home", "home", "verify", "platform"]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let described = acompose(root, &["describe", "platform", "--home", "home"]);
    assert!(described.stdout.contains("for claude    content/harness/claude/instructions.md"), "{}", described.stdout);
    let json = acompose(root, &["describe", "platform", "--home", "home", "--json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("describe json");
    assert_valid(&validator("describe.schema.json"), &document);
    assert_eq!(document["profile"]["harness_instructions"], manifest["harness_instructions"]);

    insta::assert_snapshot!("harness_why_overlay", why(root, "platform", "overlay:harness.kdl"));
    insta::assert_snapshot!("harness_why_instruction", why(root, "platform", "instruction:sandbox-notes"));
    insta::assert_snapshot!("harness_eval_why_instruction", why(root, "eval", "instruction:eval-hooks"));

    // Codex and OpenCode read one `AGENTS.md`: a part for Codex alone cannot be shown to
    // Codex alone there, so projecting both into one target is refused.
    let (_, codex) = project(root, "platform", "codex", "shared");
    assert_eq!(codex.code, 0, "{}", codex.stderr);
    let (shared, opencode) = project(root, "platform", "opencode", "shared");
    assert_ne!(opencode.code, 0);
    assert!(opencode.stderr.contains("Codex and OpenCode both read `AGENTS.md`"), "{}", opencode.stderr);
    let text = std::fs::read_to_string(shared.join("AGENTS.md")).expect("AGENTS.md");
    assert!(text.contains("Commands run in a sandbox"), "the Codex projection stays: {text}");
}

/// The text of [`TEAM_OVERLAY`]'s instruction, which names no harness.
const TEAM_LINE: &str = "Reviews are written in plain English and name the file and line they are about.";

/// A fake harness for `launch`: it starts and ends, so the launch's runtime home is read
/// as the harness would read it.
fn fake_harness(bin: &Path, name: &str) {
    let path = bin.join(name);
    write(&path, "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).expect("chmod");
}

#[test]
fn an_overlay_instruction_is_in_every_harnesss_instructions_at_both_scopes_and_under_launch() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    write(&root.join("home/overlays/team.kdl"), TEAM_OVERLAY);
    write(&root.join("home/overlays/zz-harness.kdl"), HARNESS_OVERLAY);
    let output = converge(root);
    assert_eq!(output.code, 0, "{}", output.stderr);
    // The bundle's instructions hold the text itself, not a path to it.
    let bundle = root.join("home/bundles").join(bundle_of(root, "platform"));
    let document = std::fs::read_to_string(bundle.join("content/instructions.md")).expect("instructions.md");
    let part = &document[document.find("## Instructions from private overlays").expect("the overlays' part")..];
    insta::assert_snapshot!(part, @r"
    ## Instructions from private overlays

    ### `team-review`

    Reviews are written in plain English and name the file and line they are about.
    ");

    // (harness, its instructions file at repository scope, at home scope)
    let harnesses = [
        ("claude", "CLAUDE.md", ".claude/CLAUDE.md"),
        ("codex", "AGENTS.md", ".codex/AGENTS.md"),
        ("gemini", "GEMINI.md", ".gemini/GEMINI.md"),
    ];
    let mut seen = Vec::new();
    let read =
        |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let seen_in = |text: &str| {
        format!(
            "team {}, hooks {}, sandbox {}",
            text.contains(TEAM_LINE),
            text.contains("Run the repository's hooks"),
            text.contains("Commands run in a sandbox")
        )
    };
    for (harness, repository, home) in harnesses {
        let (target, output) = project(root, "platform", harness, &format!("repo-{harness}"));
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        seen.push(format!("{harness} repo: {}", seen_in(&read(&target.join(repository)))));
        let target = root.join(format!("home-{harness}"));
        std::fs::create_dir_all(&target).expect("home target");
        let target_text = target.to_str().expect("utf-8");
        let arguments =
            ["--home", "home", "project", "platform", "--layout", harness, "--scope", "home", "--target", target_text];
        let output = acompose(root, &arguments);
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        seen.push(format!("{harness} home: {}", seen_in(&read(&target.join(home)))));
    }

    // A launch projects at home scope into its runtime home: the harness reads the same.
    let bin = root.join("bin");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let acompose_home = root.join("home");
    let user = root.join("user");
    std::fs::create_dir_all(&user).expect("user home");
    for (harness, _, home) in harnesses {
        fake_harness(&bin, harness);
        let output = crate::common::acompose_with(
            root,
            &["launch", "platform", harness, "--yes", "--projects-root", "projects"],
            &[
                ("PATH", path.as_str()),
                ("HOME", user.to_str().expect("utf-8")),
                ("ACOMPOSE_HOME", acompose_home.to_str().expect("utf-8")),
            ],
        );
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        let runtime = acompose_home.join(format!("runtime/{harness}-platform"));
        seen.push(format!("{harness} launch: {}", seen_in(&read(&runtime.join(home)))));
    }
    insta::assert_snapshot!(seen.join("\n"), @r"
    claude repo: team true, hooks true, sandbox false
    claude home: team true, hooks true, sandbox false
    codex repo: team true, hooks false, sandbox true
    codex home: team true, hooks false, sandbox true
    gemini repo: team true, hooks false, sandbox true
    gemini home: team true, hooks false, sandbox true
    claude launch: team true, hooks true, sandbox false
    codex launch: team true, hooks false, sandbox true
    gemini launch: team true, hooks false, sandbox true
    ");
}

#[test]
fn with_an_overlay_present_the_root_cause_is_the_only_error_printed() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    assert_eq!(converge(root).code, 0);
    write(&root.join("home/overlays/team.kdl"), TEAM_OVERLAY);
    assert_eq!(converge(root).code, 0);
    let before = std::fs::read(root.join("home/bundles/index.json")).expect("index");
    // An unclosed brace in roles.kdl: the KDL error first, not the overlay naming a
    // repository the broken file no longer declares.
    write(&root.join("projects/acme/root/.agents/roles.kdl"), &ROLES.replacen('}', "", 1));
    let broken = converge(root);
    assert_eq!(broken.code, 1, "{}", broken.stderr);
    let first_error = broken.stderr.lines().find(|line| line.contains("roles.kdl") || line.contains("team.kdl"));
    assert!(first_error.is_some_and(|line| line.contains("roles.kdl")), "{}", broken.stderr);
    assert!(!broken.stderr.contains("overlay-unknown-repository"), "{}", broken.stderr);
    assert_eq!(std::fs::read(root.join("home/bundles/index.json")).expect("index"), before);
    // A projects root that is not there: the repository that cannot be read, filed
    // under the configuration that names it; no overlay error follows from it.
    write(&root.join("projects/acme/root/.agents/roles.kdl"), ROLES);
    let missing = acompose(root, &["--home", "home", "--projects-root", "nowhere"]);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    assert!(missing.stderr.contains("agent-compose.yaml:2:5"), "{}", missing.stderr);
    assert!(missing.stderr.contains("required source `root` is unavailable"), "{}", missing.stderr);
    assert!(!missing.stderr.contains("overlay-unknown-repository"), "{}", missing.stderr);
}
