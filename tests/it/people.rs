//! `acompose people`: the real binary in temporary workspaces. The adversarial cases
//! each plant a value in a file and check the exit code and that no byte sequence of the
//! planted value, and no control byte, reaches the output.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

// ---------------------------------------------------------------------------------------
// Helpers

struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Both streams, for assertions that do not care which one carried a line.
    fn output(&self) -> String {
        format!("{}{}", self.stdout(), self.stderr())
    }

    /// Asserts the exit code and that the output carries none of the planted values and
    /// no control byte other than a newline.
    fn assert_clean(&self, code: i32, planted: &[&str]) {
        let output = [self.stdout.as_slice(), self.stderr.as_slice()].concat();
        assert_eq!(self.code, code, "exit code; output:\n{}", self.output());
        for value in planted {
            let needle = value.as_bytes();
            assert!(
                !output.windows(needle.len()).any(|window| window == needle),
                "planted value {value:?} leaked into the output:\n{}",
                self.output()
            );
        }
        assert!(
            output.iter().all(|byte| *byte >= 0x20 || *byte == b'\n'),
            "a control byte reached the output:\n{:?}",
            self.output()
        );
    }
}

/// A temporary folder holding a workspace at `ws/` and a fake home.
struct Sandbox {
    root: TempDir,
}

impl Sandbox {
    /// A sandbox with an initialised workspace.
    fn new() -> Self {
        let sandbox = Self::empty();
        let run = sandbox.people(&["init"]);
        assert_eq!(run.code, 0, "{}", run.output());
        sandbox
    }

    fn empty() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        fs::create_dir_all(root.path().join("ws")).expect("workspace");
        fs::create_dir_all(root.path().join("home")).expect("home");
        Self { root }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn workspace(&self) -> PathBuf {
        self.root().join("ws")
    }

    fn write(&self, relative: &str, bytes: impl AsRef<[u8]>) {
        let path = self.workspace().join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, bytes).expect("write");
    }

    fn read(&self, relative: &str) -> String {
        fs::read_to_string(self.workspace().join(relative)).expect("read")
    }

    fn exists(&self, relative: &str) -> bool {
        self.workspace().join(relative).symlink_metadata().is_ok()
    }

    /// Runs `acompose people ARGS` inside the workspace (so `--workspace` defaults to it).
    fn people(&self, arguments: &[&str]) -> Run {
        self.run_in(&self.workspace(), arguments)
    }

    /// Runs `acompose people ARGS` in the sandbox root, naming the workspace explicitly.
    fn people_at(&self, workspace: &Path, arguments: &[&str]) -> Run {
        let mut all = arguments.to_vec();
        let workspace = workspace.to_str().expect("utf-8 path");
        all.extend(["--workspace", workspace]);
        self.run_in(self.root(), &all)
    }

    fn run_in(&self, directory: &Path, arguments: &[&str]) -> Run {
        self.run_with(directory, arguments, &[])
    }

    fn run_with(&self, directory: &Path, arguments: &[&str], environment: &[(&str, &str)]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_acompose"))
            .arg("people")
            .args(arguments)
            .current_dir(directory)
            .env_remove("ACOMPOSE_HOME")
            .env_remove("COLORTERM")
            .env("NO_COLOR", "1")
            .env("HOME", self.root().join("home"))
            .envs(environment.iter().copied())
            .output()
            .expect("run acompose");
        Run { code: output.status.code().unwrap_or(-1), stdout: output.stdout, stderr: output.stderr }
    }

    /// Copies a fixture folder into the workspace.
    fn copy_fixture(&self, fixture: &str) {
        copy_tree(&fixtures().join(fixture), &self.workspace());
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/people")
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("list fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// A valid person@1 document; `extra` is spliced in as more members.
fn person(id: &str, extra: &str) -> String {
    format!(
        "{{\n  \"spec\": \"agent-toolkit/person@1\",\n  \"id\": \"{id}\",\n  \"name\": \"Person {id}\",\n  \"role\": \"reviewer\",\n  \"goal\": \"Review every change.\",\n  \"archived\": false{extra}\n}}\n"
    )
}

/// Validates and asserts the run is clean of `planted`, with `code` in the output.
fn validate_rejects(sandbox: &Sandbox, finding_code: &str, planted: &[&str]) -> Run {
    let run = sandbox.people(&["validate"]);
    run.assert_clean(1, planted);
    assert!(run.stderr().contains(&format!("error[{finding_code}]")), "expected {finding_code}:\n{}", run.output());
    let json = sandbox.people(&["validate", "--json"]);
    json.assert_clean(1, planted);
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json report");
    assert_eq!(document["valid"], false);
    run
}

// ---------------------------------------------------------------------------------------
// Adversarial validation

#[test]
fn an_unknown_field_is_reported_without_its_key_or_value() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ",\n  \"plantedKeyName\": \"PLANTED-unknown-value\""));
    let run = validate_rejects(&sandbox, "unknown-field", &["plantedKeyName", "PLANTED-unknown-value"]);
    assert!(run.stderr().contains("people/ada.json:8:3"), "{}", run.stderr());
    assert!(run.stderr().contains("rule: /additionalProperties"), "{}", run.stderr());
}

#[test]
fn an_id_that_differs_from_the_file_name_is_reported() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("planted-other-id", ""));
    let run = validate_rejects(&sandbox, "id-file-mismatch", &["planted-other-id"]);
    assert!(run.stderr().contains("rule: /properties/id"), "{}", run.stderr());
}

#[test]
fn an_uppercase_id_fails_the_id_pattern() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("PLANTEDUPPER", ""));
    let run = validate_rejects(&sandbox, "pattern-mismatch", &["PLANTEDUPPER"]);
    assert!(run.stderr().contains("rule: /properties/id/pattern"), "{}", run.stderr());
}

#[test]
fn an_uppercase_file_name_is_reported_by_name_only() {
    let sandbox = Sandbox::new();
    sandbox.write("people/Ada.json", person("ada", ",\n  \"goal2\": \"PLANTED-never-read\""));
    let run = validate_rejects(&sandbox, "invalid-file-name", &["PLANTED-never-read"]);
    assert!(run.stderr().contains("people/Ada.json"), "{}", run.stderr());
}

#[test]
fn an_oversize_goal_is_reported_with_the_length_rule() {
    let sandbox = Sandbox::new();
    let goal = "PLANTEDGOAL-".repeat(200);
    sandbox.write("people/ada.json", person("ada", "").replace("Review every change.", &goal));
    let run = validate_rejects(&sandbox, "too-long", &["PLANTEDGOAL"]);
    assert!(run.stderr().contains("rule: /properties/goal/maxLength"), "{}", run.stderr());
}

#[test]
fn malformed_json_is_reported_with_its_position() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", "{\n  \"id\": \"PLANTED-malformed\",\n  \"name\" \"x\"\n}\n");
    let run = validate_rejects(&sandbox, "json-syntax", &["PLANTED-malformed"]);
    assert!(run.stderr().contains("people/ada.json:3:10"), "{}", run.stderr());
}

#[test]
fn a_duplicate_key_is_rejected_not_silently_resolved() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "people/ada.json",
        person("ada", ",\n  \"definition_id\": \"PLANTED-first\",\n  \"definition_id\": \"PLANTED-second\""),
    );
    let run = validate_rejects(&sandbox, "duplicate-key", &["PLANTED-first", "PLANTED-second", "definition_id"]);
    assert!(run.stderr().contains("people/ada.json:9:3"), "{}", run.stderr());
}

#[test]
fn nan_infinity_and_overflowing_numbers_in_a_budget_are_rejected() {
    for planted in ["NaN", "Infinity", "-Infinity", "1e9999"] {
        let sandbox = Sandbox::new();
        sandbox.write("people/ada.json", person("ada", &format!(",\n  \"budget\": {{\"max_cost_usd\": {planted}}}")));
        validate_rejects(&sandbox, "non-finite-number", &[planted]);
    }
}

#[test]
fn a_65_kib_file_is_rejected_before_parsing() {
    let sandbox = Sandbox::new();
    let mut text = person("ada", "").replace("Review every change.", "PLANTED-large");
    text.push_str(&" ".repeat(65 * 1024 - text.len()));
    assert_eq!(text.len(), 65 * 1024);
    sandbox.write("people/ada.json", text);
    validate_rejects(&sandbox, "file-too-large", &["PLANTED-large"]);
}

#[test]
fn nesting_100_levels_deep_is_rejected() {
    let sandbox = Sandbox::new();
    let nested = format!("{}\"PLANTED-deep\"{}", "[".repeat(100), "]".repeat(100));
    sandbox.write("people/ada.json", person("ada", &format!(",\n  \"skills\": {nested}")));
    validate_rejects(&sandbox, "too-deep", &["PLANTED-deep"]);
}

#[test]
fn a_tampered_schema_is_reported_as_drift_before_anything_is_evaluated() {
    let sandbox = Sandbox::new();
    let schema = sandbox.read("schemas/person.schema.json");
    let tampered =
        schema.replacen("\"type\": \"object\",", "\"type\": \"object\", \"description\": \"PLANTED-tamper\",", 1);
    assert_ne!(schema, tampered);
    sandbox.write("schemas/person.schema.json", tampered);
    // A broken Person file would be reported if anything were evaluated.
    sandbox.write("people/ada.json", "{\"PLANTED-person\": ");
    let run = validate_rejects(&sandbox, "contract-drift", &["PLANTED-tamper", "PLANTED-person"]);
    assert!(run.stderr().contains("schemas/person.schema.json"), "{}", run.stderr());
    assert!(!run.stderr().contains("people/ada.json"), "a file was evaluated after drift:\n{}", run.stderr());
    assert!(run.stderr().contains("nothing was evaluated"), "{}", run.stderr());
    let json: serde_json::Value =
        serde_json::from_slice(&sandbox.people(&["validate", "--json"]).stdout).expect("json");
    assert_eq!(json["contract_verified"], false);
    // `init` restores the shipped mirror; only the broken Person remains.
    assert_eq!(sandbox.people(&["init"]).code, 0);
    validate_rejects(&sandbox, "json-syntax", &["PLANTED-person"]);
}

#[test]
fn a_schema_and_lock_changed_together_are_still_refused() {
    let sandbox = Sandbox::new();
    let schema = sandbox.read("schemas/people-bindings.schema.json");
    let tampered = schema.replace("\"maxProperties\": 64,", "\"maxProperties\": 64000, \"title\": \"PLANTED-lock\",");
    let lock = sandbox.read("schemas/people-contracts.lock.json");
    let old_hash = sha256(schema.as_bytes());
    let new_hash = sha256(tampered.as_bytes());
    assert!(lock.contains(&old_hash), "the lock records the mirror's SHA-256");
    sandbox.write("schemas/people-bindings.schema.json", &tampered);
    sandbox.write("schemas/people-contracts.lock.json", lock.replace(&old_hash, &new_hash));
    validate_rejects(&sandbox, "contract-mismatch", &["PLANTED-lock"]);
}

/// SHA-256 through the system tool would need a process per hash; the engine exposes it.
fn sha256(bytes: &[u8]) -> String {
    acompose_people::contract::sha256_hex(bytes)
}

#[test]
fn a_workspace_without_mirrors_asks_for_init() {
    let sandbox = Sandbox::empty();
    sandbox.write("people/ada.json", person("ada", ""));
    let run = sandbox.people(&["validate"]);
    run.assert_clean(1, &[]);
    assert!(run.stderr().contains("error[contract-lock-missing]"), "{}", run.stderr());
    assert!(run.stderr().contains("acompose people init"), "{}", run.stderr());
}

#[test]
fn a_remote_looking_definition_id_is_valid_and_never_fetched() {
    let sandbox = Sandbox::new();
    let remote = "https://planted.invalid/agents/reviewer.json";
    sandbox.write("people/ada.json", person("ada", &format!(",\n  \"definition_id\": \"{remote}\"")));
    // Any attempt to reach the network would go to a closed local port.
    let proxy = "http://127.0.0.1:9";
    let run = sandbox.run_with(
        &sandbox.workspace(),
        &["validate"],
        &[("HTTPS_PROXY", proxy), ("HTTP_PROXY", proxy), ("ALL_PROXY", proxy)],
    );
    run.assert_clean(0, &["planted.invalid"]);
    assert!(run.stdout().contains("1 configured person"), "{}", run.stdout());
}

#[cfg(unix)]
#[test]
fn a_symlinked_people_folder_is_refused_and_not_read() {
    let sandbox = Sandbox::new();
    let elsewhere = sandbox.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    fs::write(elsewhere.join("ada.json"), person("ada", ",\n  \"x\": \"PLANTED-behind-link\"")).expect("write");
    fs::remove_dir_all(sandbox.workspace().join("people")).expect("remove");
    std::os::unix::fs::symlink(&elsewhere, sandbox.workspace().join("people")).expect("symlink");
    let run = validate_rejects(&sandbox, "symlink-refused", &["PLANTED-behind-link"]);
    assert!(run.stderr().contains("--> people\n"), "{}", run.stderr());
    // Editing commands refuse the same storage and write nothing behind the link.
    let add = sandbox.people(&["add", "bob", "--name", "Bob", "--role", "qa", "--goal", "Test."]);
    add.assert_clean(1, &["PLANTED-behind-link"]);
    assert!(!elsewhere.join("bob.json").exists());
    sandbox.people(&["list"]).assert_clean(1, &["PLANTED-behind-link"]);
}

#[cfg(unix)]
#[test]
fn a_symlinked_person_file_is_refused_and_not_read() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root().join("outside.json");
    fs::write(&outside, person("ada", ",\n  \"x\": \"PLANTED-linked-file\"")).expect("write");
    std::os::unix::fs::symlink(&outside, sandbox.workspace().join("people/ada.json")).expect("symlink");
    let run = validate_rejects(&sandbox, "symlink-refused", &["PLANTED-linked-file"]);
    assert!(run.stderr().contains("people/ada.json"), "{}", run.stderr());
    for arguments in [&["show", "ada"][..], &["archive", "ada"], &["edit", "ada", "--goal", "New goal."]] {
        sandbox.people(arguments).assert_clean(1, &["PLANTED-linked-file"]);
    }
    assert_eq!(fs::read_to_string(&outside).expect("read"), person("ada", ",\n  \"x\": \"PLANTED-linked-file\""));
}

#[cfg(unix)]
#[test]
fn a_symlinked_workspace_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    let link = sandbox.root().join("link");
    std::os::unix::fs::symlink(sandbox.workspace(), &link).expect("symlink");
    for arguments in [&["validate"][..], &["list"], &["show", "ada"], &["init"]] {
        let run = sandbox.people_at(&link, arguments);
        run.assert_clean(1, &[]);
        assert!(run.stderr().contains("error[symlink-refused]"), "{arguments:?}: {}", run.stderr());
    }
}

#[test]
fn a_secret_with_ansi_escapes_in_a_field_never_reaches_the_terminal() {
    let sandbox = Sandbox::new();
    let secret = "sk-PLANTED-0123456789abcdef";
    let field = format!("{secret}\\u001b[31m\\u001b]0;PLANTED-title\\u0007");
    // As an unknown field the file is invalid; the report names it without its value.
    sandbox.write("people/ada.json", person("ada", &format!(",\n  \"api_key\": \"{field}\"")));
    validate_rejects(&sandbox, "unknown-field", &[secret, "PLANTED-title", "api_key"]);
    // In an allowed field the file is valid; validate still prints no value.
    sandbox.write("people/ada.json", person("ada", "").replace("Review every change.", &field));
    let run = sandbox.people(&["validate"]);
    run.assert_clean(0, &[secret, "PLANTED-title"]);
    // `show` displays the goal it was asked for, with every control character replaced.
    let show = sandbox.people(&["show", "ada"]);
    show.assert_clean(0, &[]);
    assert!(show.stdout().contains("\u{fffd}[31m"), "{}", show.stdout());
    let list = sandbox.people(&["list"]);
    list.assert_clean(0, &[secret]);
}

/// A right-to-left override (U+202E) and the other bidirectional controls reorder what a
/// terminal shows after them; a name holding one is shown escaped, like a control byte.
#[test]
fn a_right_to_left_override_in_a_name_never_reaches_the_terminal() {
    let sandbox = Sandbox::new();
    let field = "Ada \\u202eexe.txt \\u2066isolate\\u2069 \\u2028next";
    sandbox.write(
        "people/ada.json",
        person("ada", "").replace("Person ada", field).replace("Review every change.", field),
    );
    for arguments in [&["list"][..], &["show", "ada"]] {
        let run = sandbox.people(arguments);
        run.assert_clean(0, &["\u{202e}", "\u{2066}", "\u{2069}", "\u{2028}"]);
        assert!(run.stdout().contains("Ada \u{fffd}exe.txt"), "{arguments:?}: {}", run.stdout());
    }
    // JSON keeps the exact value.
    let json = sandbox.people(&["list", "--json"]);
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(document["people"][0]["name"], "Ada \u{202e}exe.txt \u{2066}isolate\u{2069} \u{2028}next");
}

#[test]
fn a_hostile_role_key_in_bindings_is_reported_without_the_key() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    sandbox.write(
        "people/bindings.yaml",
        "spec: agent-toolkit/people-bindings@1\nroles:\n  \"\\e[2J\\e]0;PLANTED-role-key\\a\":\n    person_id: ada\n",
    );
    let run = validate_rejects(&sandbox, "invalid-key", &["PLANTED-role-key"]);
    assert!(run.stderr().contains("rule: /properties/roles/propertyNames/pattern"), "{}", run.stderr());
}

#[test]
fn a_binding_to_a_missing_person_is_reported() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    sandbox.write(
        "people/bindings.yaml",
        "spec: agent-toolkit/people-bindings@1\nroles:\n  reviewer:\n    person_id: ada\n    preferred_people: [planted-ghost]\n",
    );
    let run = validate_rejects(&sandbox, "binding-to-missing-person", &["planted-ghost"]);
    assert!(run.stderr().contains("people/bindings.yaml:5:24"), "{}", run.stderr());
}

#[test]
fn a_yaml_alias_bomb_is_refused_at_its_first_anchor() {
    let sandbox = Sandbox::new();
    let mut bomb = String::from(
        "spec: agent-toolkit/people-bindings@1\nroles:\n  a: &a [\"PLANTEDLOL\",\"PLANTEDLOL\",\"PLANTEDLOL\",\"PLANTEDLOL\",\"PLANTEDLOL\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    for pair in names.windows(2) {
        let (previous, name) = (pair[0], pair[1]);
        let aliases = vec![format!("*{previous}"); 10].join(",");
        bomb.push_str(&format!("  {name}: &{name} [{aliases}]\n"));
    }
    sandbox.write("people/bindings.yaml", bomb);
    let run = validate_rejects(&sandbox, "yaml-anchor", &["PLANTEDLOL"]);
    assert!(run.stderr().contains("people/bindings.yaml:3:"), "{}", run.stderr());
}

#[test]
fn yaml_duplicate_keys_and_non_finite_numbers_are_refused() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    sandbox.write(
        "people/bindings.yaml",
        "spec: agent-toolkit/people-bindings@1\nroles:\n  qa: {person_id: ada}\n  qa: {person_id: PLANTED-dup}\n",
    );
    validate_rejects(&sandbox, "duplicate-key", &["PLANTED-dup"]);
    sandbox.write("people/bindings.yaml", "spec: agent-toolkit/people-bindings@1\nroles:\n  qa: {person_id: .nan}\n");
    validate_rejects(&sandbox, "non-finite-number", &[".nan"]);
}

#[test]
fn templates_are_validated_but_not_counted() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    sandbox.write("templates/people/starter.json", person("starter", ""));
    let run = sandbox.people(&["validate"]);
    run.assert_clean(0, &[]);
    assert_eq!(
        run.stdout(),
        "people workspace is valid: 1 configured person (1 active, 0 archived), 1 template\nconfiguration only: no runtime activity is inferred from these declarations\n"
    );
    sandbox.write("templates/people/starter.json", person("starter", ",\n  \"x\": \"PLANTED-template\""));
    let run = validate_rejects(&sandbox, "unknown-field", &["PLANTED-template"]);
    assert!(run.stderr().contains("templates/people/starter.json"), "{}", run.stderr());
}

#[test]
fn one_broken_file_does_not_hide_the_others() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", "{");
    sandbox.write("people/bob.json", person("bob", ",\n  \"isolation\": \"host\""));
    sandbox.write("people/cat.json", person("cat", ""));
    let json = sandbox.people(&["validate", "--json"]);
    json.assert_clean(1, &["host"]);
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let codes: Vec<&str> = document["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|finding| finding["code"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(codes, ["json-syntax", "value-not-allowed"]);
    assert_eq!(document["configured_people"], 1);
}

// ---------------------------------------------------------------------------------------
// init and editing

#[test]
fn init_writes_the_scaffold_and_a_lock_of_the_mirrors() {
    let sandbox = Sandbox::new();
    assert!(sandbox.read("people/README.md").contains("no runtime activity is inferred"));
    let lock: serde_json::Value =
        serde_json::from_str(&sandbox.read("schemas/people-contracts.lock.json")).expect("lock");
    for (index, path) in ["schemas/person.schema.json", "schemas/people-bindings.schema.json"].iter().enumerate() {
        assert_eq!(lock["contracts"][index]["path"], *path);
        assert_eq!(lock["contracts"][index]["sha256"], sha256(sandbox.read(path).as_bytes()));
    }
    // A second init keeps an edited README and rewrites the mirrors.
    sandbox.write("people/README.md", "my notes\n");
    let run = sandbox.people(&["init"]);
    run.assert_clean(0, &[]);
    assert_eq!(sandbox.read("people/README.md"), "my notes\n");
    assert!(run.stdout().contains("kept the existing `people/README.md`"), "{}", run.stdout());
}

#[cfg(unix)]
#[test]
fn init_refuses_a_symlinked_destination_before_writing_anything() {
    let sandbox = Sandbox::empty();
    let elsewhere = sandbox.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, sandbox.workspace().join("schemas")).expect("symlink");
    let run = sandbox.people(&["init"]);
    run.assert_clean(1, &[]);
    assert!(run.stderr().contains("error[symlink-refused]"), "{}", run.stderr());
    assert!(!sandbox.exists("people"), "init wrote before refusing");
    assert_eq!(fs::read_dir(&elsewhere).expect("list").count(), 0);
}

#[test]
fn add_writes_a_canonical_file_that_validates() {
    let sandbox = Sandbox::new();
    let run = sandbox.people(&[
        "add",
        "ada",
        "--name",
        "Ada Lovelace",
        "--role",
        "reviewer",
        "--goal",
        "Review every change.",
        "--max-seconds",
        "600",
        "--max-cost-usd",
        "2.5",
        "--max-tokens",
        "100000",
        "--isolation",
        "worktree",
        "--avatar-accent",
        "#aabbcc",
        "--avatar-character",
        "ada",
        "--mcp-server",
        "github",
        "--skill",
        "code-review",
        "--skill",
        "testing",
        "--capability",
        "review",
        "--preferred-model",
        "claude-sonnet-4-5",
        "--preferred-provider",
        "claude",
        "--definition-id",
        "agents/reviewer",
    ]);
    run.assert_clean(0, &[]);
    insta::assert_snapshot!(sandbox.read("people/ada.json"));
    sandbox.people(&["validate"]).assert_clean(0, &[]);
    let leftovers: Vec<_> = fs::read_dir(sandbox.workspace().join("people"))
        .expect("list")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

#[test]
fn add_refuses_an_existing_person_and_invalid_values() {
    let sandbox = Sandbox::new();
    let add =
        |id: &str, goal: &str| sandbox.people(&["add", id, "--name", "Ada", "--role", "reviewer", "--goal", goal]);
    add("ada", "First.").assert_clean(0, &[]);
    let again = add("ada", "Second.");
    again.assert_clean(1, &[]);
    assert!(sandbox.read("people/ada.json").contains("First."));
    let long = "PLANTED".repeat(400);
    let too_long = add("bob", &long);
    too_long.assert_clean(1, &["PLANTED"]);
    // The flag that set the value is named, with the form it expects: the file does not exist.
    assert!(too_long.stderr().contains("`--goal` is invalid: text is longer"), "{}", too_long.stderr());
    assert!(too_long.stderr().contains("1 to 2048 characters"), "{}", too_long.stderr());
    assert!(!sandbox.exists("people/bob.json"));
    let traversal = add("../escape", "Goal.");
    traversal.assert_clean(1, &[]);
    assert!(!sandbox.root().join("escape.json").exists());
    let role = sandbox.people(&["add", "cat", "--name", "Cat", "--role", "Not A Slug", "--goal", "Goal."]);
    role.assert_clean(1, &["Not A Slug"]);
    assert!(!sandbox.exists("people/cat.json"));
}

#[test]
fn non_finite_amounts_and_half_avatars_are_usage_errors() {
    let sandbox = Sandbox::new();
    for amount in ["NaN", "inf", "-inf"] {
        let run =
            sandbox.people(&["add", "ada", "--name", "A", "--role", "r", "--goal", "g", "--max-cost-usd", amount]);
        assert_eq!(run.code, 2, "{amount}: {}", run.output());
    }
    let half =
        sandbox.people(&["add", "ada", "--name", "A", "--role", "r", "--goal", "g", "--avatar-accent", "#000000"]);
    assert_eq!(half.code, 1, "{}", half.output());
    assert!(!sandbox.exists("people/ada.json"));
    let missing = sandbox.people(&["add", "ada", "--name", "A"]);
    assert_eq!(missing.code, 2, "{}", missing.output());
}

#[test]
fn edit_changes_only_what_it_is_told() {
    let sandbox = Sandbox::new();
    sandbox
        .people(&[
            "add",
            "ada",
            "--name",
            "Ada",
            "--role",
            "reviewer",
            "--goal",
            "Review.",
            "--skill",
            "a",
            "--max-tokens",
            "10",
            "--max-seconds",
            "60",
        ])
        .assert_clean(0, &[]);
    sandbox
        .people(&[
            "edit",
            "ada",
            "--goal",
            "Review carefully.",
            "--skill",
            "b",
            "--skill",
            "c",
            "--clear",
            "max-tokens",
        ])
        .assert_clean(0, &[]);
    let edited: serde_json::Value = serde_json::from_str(&sandbox.read("people/ada.json")).expect("json");
    assert_eq!(edited["goal"], "Review carefully.");
    assert_eq!(edited["skills"], serde_json::json!(["b", "c"]));
    assert_eq!(edited["budget"], serde_json::json!({"max_seconds": 60}));
    assert_eq!(edited["name"], "Ada");
    let unchanged = sandbox.people(&["edit", "ada"]);
    unchanged.assert_clean(0, &[]);
    assert!(unchanged.stdout().contains("unchanged"), "{}", unchanged.stdout());
    let invalid = sandbox.people(&["edit", "ada", "--preferred-model", "has spaces PLANTED"]);
    invalid.assert_clean(1, &["PLANTED"]);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&sandbox.read("people/ada.json")).expect("json"), edited);
    sandbox.people(&["edit", "nobody", "--goal", "x"]).assert_clean(1, &[]);
}

#[test]
fn edit_refuses_a_file_that_is_already_invalid() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ",\n  \"x\": \"PLANTED-invalid\""));
    let run = sandbox.people(&["edit", "ada", "--goal", "New."]);
    run.assert_clean(1, &["PLANTED-invalid"]);
    assert!(sandbox.read("people/ada.json").contains("PLANTED-invalid"));
}

#[test]
fn archive_and_restore_flip_archived() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    sandbox.people(&["archive", "ada"]).assert_clean(0, &[]);
    assert!(sandbox.read("people/ada.json").contains("\"archived\": true"));
    let again = sandbox.people(&["archive", "ada"]);
    again.assert_clean(0, &[]);
    assert!(again.stdout().contains("already archived"), "{}", again.stdout());
    let list = sandbox.people(&["list"]);
    assert!(list.stdout().contains("ada  reviewer  archived"), "{}", list.stdout());
    sandbox.people(&["restore", "ada"]).assert_clean(0, &[]);
    assert_eq!(sandbox.read("people/ada.json"), person("ada", ""));
    sandbox.people(&["restore", "nobody"]).assert_clean(1, &[]);
}

#[test]
fn list_and_show_describe_the_roster() {
    let sandbox = Sandbox::new();
    sandbox.copy_fixture("resolve");
    let list = sandbox.people(&["list"]);
    list.assert_clean(0, &[]);
    insta::assert_snapshot!("list", list.stdout());
    let show = sandbox.people(&["show", "dee"]);
    show.assert_clean(0, &[]);
    insta::assert_snapshot!("show", show.stdout());
    let json = sandbox.people(&["show", "dee", "--json"]);
    assert_eq!(json.stdout(), sandbox.read("people/dee.json"));
    let invalid_id = sandbox.people(&["show", "\u{1b}[2J"]);
    invalid_id.assert_clean(1, &[]);
}

// ---------------------------------------------------------------------------------------
// Import

fn hire(name: &str) -> String {
    fixtures().join("hire").join(name).to_str().expect("utf-8 path").to_owned()
}

#[test]
fn import_preview_lists_mapped_and_ignored_fields_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let before = fs::read_dir(sandbox.workspace().join("people")).expect("list").count();
    let run = sandbox.people(&["import", &hire("dwight.json")]);
    run.assert_clean(
        0,
        &["PLANTED-COMMAND-FLAG", "PLANTED-MCP-COMMAND", "PLANTED-MCP-TOKEN", "PLANTED-UNKNOWN-VALUE", "--dangerously"],
    );
    insta::assert_snapshot!(run.stdout());
    for ignored in ["commandFlags", "author", "homepage", "ringtone"] {
        assert!(run.stdout().contains(ignored), "{ignored} not listed");
    }
    assert_eq!(fs::read_dir(sandbox.workspace().join("people")).expect("list").count(), before);
    let json = sandbox.people(&["import", &hire("dwight.json"), "--json"]);
    json.assert_clean(
        0,
        &["PLANTED-COMMAND-FLAG", "PLANTED-MCP-COMMAND", "PLANTED-MCP-TOKEN", "PLANTED-UNKNOWN-VALUE"],
    );
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(document["ready_to_save"], false);
    assert_eq!(document["written"], serde_json::Value::Null);
}

#[test]
fn import_save_needs_a_goal_then_writes_a_person_that_validates() {
    let sandbox = Sandbox::new();
    let blocked = sandbox.people(&["import", &hire("dwight.json"), "--save"]);
    blocked.assert_clean(1, &["PLANTED-COMMAND-FLAG"]);
    assert!(blocked.output().contains("[blocks --save]"), "{}", blocked.output());
    assert!(!sandbox.exists("people/dwight-schrute.json"));
    let saved = sandbox.people(&[
        "import",
        &hire("dwight.json"),
        "--save",
        "--id",
        "dwight",
        "--goal",
        "Sell paper and keep the office safe.",
    ]);
    saved.assert_clean(0, &["PLANTED"]);
    let written = sandbox.read("people/dwight.json");
    insta::assert_snapshot!(written);
    for absent in ["PLANTED", "npx", "dangerously", "homepage", "author", "commandFlags"] {
        assert!(!written.contains(absent), "{absent} was stored");
    }
    sandbox.people(&["validate"]).assert_clean(0, &[]);
    let again = sandbox.people(&["import", &hire("dwight.json"), "--save", "--id", "dwight", "--goal", "Again."]);
    again.assert_clean(1, &[]);
}

#[test]
fn import_of_a_complete_hire_file_saves_without_overrides() {
    let sandbox = Sandbox::new();
    let run = sandbox.people(&["import", &hire("pam.json"), "--save", "--role", "reception"]);
    run.assert_clean(0, &[]);
    let person: serde_json::Value = serde_json::from_str(&sandbox.read("people/pam-beesly.json")).expect("json");
    assert_eq!(person["role"], "reception");
    assert_eq!(person["mcp_servers"], serde_json::json!(["calendar", "mail"]));
    assert_eq!(person.get("isolation"), None);
    assert_eq!(
        person["import_source"],
        serde_json::json!({
            "spec": "munder-difflin/hire@1",
            "id": "pam",
            "review_required": true,
            "auto_spawn": false,
            "auto_install": false,
            "live_sync": false,
            "original_character": "pam",
            "original_accent": "lavender"
        })
    );
    sandbox.people(&["validate"]).assert_clean(0, &[]);
}

#[test]
fn a_token_cap_above_the_ceiling_is_flagged() {
    let sandbox = Sandbox::new();
    let preview = sandbox.people(&["import", &hire("kevin.json")]);
    preview.assert_clean(0, &[]);
    assert!(preview.stdout().contains("tokenCap: is above the person@1 ceiling"), "{}", preview.stdout());
    sandbox.people(&["import", &hire("kevin.json"), "--save"]).assert_clean(1, &[]);
    sandbox.people(&["import", &hire("kevin.json"), "--save", "--max-tokens", "1000000"]).assert_clean(0, &[]);
    assert!(sandbox.read("people/kevin-malone.json").contains("\"max_tokens\": 1000000"));
}

#[test]
fn import_refuses_files_that_are_not_hire_files() {
    let sandbox = Sandbox::new();
    let person_file = sandbox.root().join("person.json");
    fs::write(&person_file, person("ada", "")).expect("write");
    let run = sandbox.people(&["import", person_file.to_str().expect("path")]);
    run.assert_clean(1, &[]);
    assert!(run.stderr().contains("error[not-a-hire-file]"), "{}", run.stderr());
    let broken = sandbox.root().join("broken.json");
    fs::write(&broken, "{\"name\": \"PLANTED-a\", \"name\": \"PLANTED-b\"}").expect("write");
    sandbox.people(&["import", broken.to_str().expect("path")]).assert_clean(1, &["PLANTED-a", "PLANTED-b"]);
    sandbox.people(&["import", "does-not-exist.json"]).assert_clean(3, &[]);
}

// ---------------------------------------------------------------------------------------
// Resolution

fn resolve_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.copy_fixture("resolve");
    sandbox
}

fn resolve(sandbox: &Sandbox, recipe: &str, extra: &[&str]) -> Run {
    let recipe = sandbox.workspace().join(recipe);
    let mut arguments = vec!["resolve", "--recipe", recipe.to_str().expect("path")];
    arguments.extend_from_slice(extra);
    sandbox.people(&arguments)
}

#[test]
fn resolution_applies_every_rule_in_order() {
    let sandbox = resolve_sandbox();
    sandbox.people(&["validate"]).assert_clean(0, &[]);
    let run = resolve(&sandbox, "recipe.json", &["--assign", "editor=gus"]);
    run.assert_clean(0, &[]);
    insta::assert_snapshot!(run.stdout());
    let json = resolve(&sandbox, "recipe.json", &["--assign", "editor=gus", "--json"]);
    json.assert_clean(0, &[]);
    insta::assert_snapshot!("resolution_json", json.stdout());
}

#[test]
fn a_yaml_recipe_resolves_like_its_json_twin() {
    let sandbox = resolve_sandbox();
    let from_json = resolve(&sandbox, "recipe.json", &["--assign", "editor=gus"]);
    let from_yaml = resolve(&sandbox, "recipe.yaml", &["--assign", "editor=gus"]);
    assert_eq!(from_yaml.code, 0, "{}", from_yaml.output());
    assert_eq!(from_json.stdout().replace("recipe.json", "recipe.yaml"), from_yaml.stdout());
}

#[test]
fn explicit_assignments_take_people_before_other_rules_do() {
    let sandbox = resolve_sandbox();
    // `cal` would be tester's preference #2; assigned to ops, tester stays without one.
    let run = resolve(&sandbox, "recipe.json", &["--assign", "ops=cal"]);
    run.assert_clean(0, &[]);
    insta::assert_snapshot!(run.stdout());
}

#[test]
fn a_binding_to_a_missing_person_is_skipped_with_a_warning() {
    let sandbox = resolve_sandbox();
    sandbox.write(
        "people/bindings.yaml",
        "spec: agent-toolkit/people-bindings@1\nroles:\n  ops:\n    person_id: ghost\n    preferred_people: [gus]\n",
    );
    let run = resolve(&sandbox, "recipe.json", &[]);
    run.assert_clean(0, &[]);
    assert!(run.stderr().contains("warning[binding-to-missing-person]"), "{}", run.stderr());
    assert!(run.stdout().contains("skipped ghost (bindings pin): missing"), "{}", run.stdout());
    assert!(run.stdout().contains("ops       gus     preference #1"), "{}", run.stdout());
}

#[test]
fn resolution_rejects_an_unknown_role() {
    let sandbox = resolve_sandbox();
    let run = resolve(&sandbox, "recipe.json", &["--assign", "nosuch=ann"]);
    run.assert_clean(1, &[]);
    insta::assert_snapshot!(run.stderr());
}

#[test]
fn resolution_rejects_a_missing_person() {
    let sandbox = resolve_sandbox();
    let run = resolve(&sandbox, "recipe.json", &["--assign", "lead=nobody"]);
    run.assert_clean(1, &[]);
    insta::assert_snapshot!(run.stderr());
}

#[test]
fn resolution_rejects_an_archived_person() {
    let sandbox = resolve_sandbox();
    let run = resolve(&sandbox, "recipe.json", &["--assign", "tester=arch"]);
    run.assert_clean(1, &[]);
    insta::assert_snapshot!(run.stderr());
}

#[test]
fn resolution_rejects_the_same_person_twice() {
    let sandbox = resolve_sandbox();
    let run = resolve(&sandbox, "recipe.json", &["--assign", "lead=ann", "--assign", "writer=ann"]);
    run.assert_clean(1, &[]);
    insta::assert_snapshot!(run.stderr());
    let json = resolve(&sandbox, "recipe.json", &["--assign", "lead=ann", "--assign", "writer=ann", "--json"]);
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(document["rejections"][0]["code"], "person-assigned-twice");
    assert_eq!(document["roles"], serde_json::json!([]));
}

#[test]
fn resolution_rejects_hostile_assignment_values_without_echoing_them() {
    let sandbox = resolve_sandbox();
    let run = resolve(&sandbox, "recipe.json", &["--assign", "lead=\u{1b}[2Jx"]);
    run.assert_clean(1, &[]);
    assert!(run.stderr().contains("error[missing-person]"), "{}", run.stderr());
}

#[test]
fn resolution_refuses_bad_recipes_and_broken_workspaces() {
    let sandbox = resolve_sandbox();
    sandbox.write(
        "dup.json",
        "{\"spec\": \"acompose/people-recipe@1\", \"roles\": [{\"role\": \"qa\"}, {\"role\": \"qa\"}]}",
    );
    let duplicate = resolve(&sandbox, "dup.json", &[]);
    duplicate.assert_clean(1, &[]);
    assert!(duplicate.stderr().contains("error[duplicate-role]"), "{}", duplicate.stderr());
    sandbox.write("recipe.toml", "roles = []");
    resolve(&sandbox, "recipe.toml", &[]).assert_clean(1, &[]);
    let usage = resolve(&sandbox, "recipe.json", &["--assign", "no-equals-sign"]);
    assert_eq!(usage.code, 2, "{}", usage.output());
    sandbox.write("people/zed.json", person("zed", ",\n  \"x\": \"PLANTED-broken\""));
    let broken = resolve(&sandbox, "recipe.json", &[]);
    broken.assert_clean(1, &["PLANTED-broken"]);
    assert!(broken.stderr().contains("error[unknown-field]"), "{}", broken.stderr());
}

#[test]
fn list_json_is_one_document_even_with_broken_files() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    sandbox.write("people/bob.json", person("bob", ",\n  \"x\": \"PLANTED-list\""));
    let run = sandbox.people(&["list", "--json"]);
    run.assert_clean(1, &["PLANTED-list"]);
    let document: serde_json::Value = serde_json::from_slice(&run.stdout).expect("one JSON document");
    assert_eq!(document["configured_people"], 1);
    assert_eq!(document["findings"][0]["code"], "unknown-field");
}

#[cfg(unix)]
#[test]
fn a_symlinked_bindings_file_is_refused_once() {
    let sandbox = Sandbox::new();
    sandbox.write("people/ada.json", person("ada", ""));
    let outside = sandbox.root().join("bindings.yaml");
    fs::write(&outside, "spec: agent-toolkit/people-bindings@1\nroles:\n  PLANTED-binding: {}\n").expect("write");
    std::os::unix::fs::symlink(&outside, sandbox.workspace().join("people/bindings.yaml")).expect("symlink");
    let run = validate_rejects(&sandbox, "symlink-refused", &["PLANTED-binding"]);
    assert_eq!(run.stderr().matches("error[symlink-refused]").count(), 1, "{}", run.stderr());
}

// ---------------------------------------------------------------------------------------
// Workspaces the Agent Toolkit made

/// The files an Agent Toolkit workspace's lock lists, with the lock itself.
const TOOLKIT_FILES: [&str; 4] = [
    "schemas/person.schema.json",
    "schemas/people-bindings.schema.json",
    "scripts/validate-people.py",
    "schemas/people-contracts.lock.json",
];

fn toolkit_sandbox() -> Sandbox {
    let sandbox = Sandbox::empty();
    sandbox.copy_fixture("toolkit-workspace");
    sandbox
}

fn toolkit_bytes(sandbox: &Sandbox) -> Vec<String> {
    TOOLKIT_FILES.iter().map(|relative| sandbox.read(relative)).collect()
}

#[test]
fn a_toolkit_workspace_validates_unchanged() {
    let sandbox = toolkit_sandbox();
    let before = toolkit_bytes(&sandbox);
    let run = sandbox.people(&["validate"]);
    assert_eq!(run.code, 0, "{}", run.output());
    assert!(run.stdout().contains("1 configured person"), "{}", run.stdout());
    assert_eq!(toolkit_bytes(&sandbox), before, "validation writes nothing");
}

#[test]
fn a_drifted_file_in_a_toolkit_lock_is_drift_and_nothing_is_evaluated() {
    for relative in ["schemas/person.schema.json", "scripts/validate-people.py"] {
        let sandbox = toolkit_sandbox();
        let mut text = sandbox.read(relative);
        text.push_str("\n// changed\n");
        sandbox.write(relative, text);
        // A broken person would be reported if anything were evaluated.
        sandbox.write("people/bad.json", "{ not json");
        let run = validate_rejects(&sandbox, "contract-drift", &[]);
        assert!(run.stderr().contains(relative), "{relative}: {}", run.stderr());
        assert!(run.stderr().contains("nothing was evaluated"), "{}", run.stderr());
        assert!(!run.stderr().contains("people/bad.json"), "{}", run.stderr());
    }
}

#[test]
fn a_file_missing_from_a_toolkit_workspace_is_reported() {
    let sandbox = toolkit_sandbox();
    fs::remove_file(sandbox.workspace().join("scripts/validate-people.py")).expect("remove");
    let run = validate_rejects(&sandbox, "contract-mirror-missing", &[]);
    assert!(run.stderr().contains("scripts/validate-people.py"), "{}", run.stderr());
}

#[test]
fn people_init_leaves_a_toolkit_workspace_as_the_toolkit_wrote_it() {
    let sandbox = toolkit_sandbox();
    let before = toolkit_bytes(&sandbox);
    let init = sandbox.people(&["init"]);
    assert_eq!(init.code, 0, "{}", init.output());
    assert!(init.stdout().contains("kept the Agent Toolkit's schema mirrors and lock"), "{}", init.stdout());
    assert_eq!(toolkit_bytes(&sandbox), before, "the lock and every file it lists are untouched");
    assert!(sandbox.exists("people/README.md"));
    let run = sandbox.people(&["validate"]);
    assert_eq!(run.code, 0, "{}", run.output());
}

#[test]
fn people_saved_into_a_toolkit_workspace_satisfy_its_own_schema_mirror() {
    let sandbox = toolkit_sandbox();
    let add = sandbox.people(&["add", "bob", "--name", "Bob", "--role", "qa", "--goal", "Test the release."]);
    assert_eq!(add.code, 0, "{}", add.output());
    let edit = sandbox.people(&["edit", "ada", "--goal", "Review every change."]);
    assert_eq!(edit.code, 0, "{}", edit.output());
    // The workspace's own mirror (the Toolkit's schema), not the one this binary ships.
    let schema: serde_json::Value =
        serde_json::from_str(&sandbox.read("schemas/person.schema.json")).expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    for id in ["ada", "bob"] {
        let person: serde_json::Value =
            serde_json::from_str(&sandbox.read(&format!("people/{id}.json"))).expect("person json");
        let errors: Vec<String> = validator.iter_errors(&person).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{id}: {errors:#?}");
    }
    let run = sandbox.people(&["validate"]);
    assert_eq!(run.code, 0, "{}", run.output());
    assert!(run.stdout().contains("2 configured people"), "{}", run.stdout());
}
