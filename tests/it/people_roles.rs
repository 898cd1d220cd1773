//! People who work as their role, with fake runners that print what they can open: a
//! Person bound to a roster role starts through that role's assigned launch (only its
//! bundle in sight), an unknown role gets the did-you-mean warning and starts as before,
//! the start review offers the Person's MCP servers the role admits and names those it
//! does not, a three-role swarm starts, is recorded and stopped, and a runner that takes
//! `--session-id` is resumed on the recorded conversation while one without is refused.

#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acompose_people::Person;
use acompose_people::document::person_bytes;
use tempfile::TempDir;

/// A workspace `ws/` with a project `desk`, an acompose home, fake runners in `bin/`
/// writing what they see to `out/<runner>-<n>.txt`.
struct Desk {
    root: TempDir,
}

impl Desk {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary folder");
        for folder in ["ws/people", "ws/projects", "project", "bin", "out", "no-home"] {
            fs::create_dir_all(root.path().join(folder)).expect("create a folder");
        }
        std::os::unix::fs::symlink(root.path().join("project"), root.path().join("ws/projects/desk"))
            .expect("link the project");
        Desk { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn person(&self, person: &Person) {
        fs::write(self.path(&format!("ws/people/{}.json", person.id)), person_bytes(person)).expect("write a Person");
    }

    /// A fake runner: writes its arguments, role, home and the skills it can open to a
    /// new file in `out/`, then runs `body`.
    fn runner(&self, binary: &str, body: &str) {
        let script = format!(
            r#"#!/bin/sh
out="{out}/{binary}-$$.txt"
{{
  for a in "$@"; do echo "arg: $a"; done
  echo "role: $AGENT_GIT_ATTRIBUTION_ROLE"
  echo "launch: $AGENT_COMPOSE_LAUNCH"
  echo "home: $HOME"
  echo "runtime: $AGENT_COMPOSE_RUNTIME_HOME"
  echo "person: $AGENT_TOOLKIT_PERSON_ID"
  for folder in "$CLAUDE_CONFIG_DIR/skills"/*; do
    [ -f "$folder/SKILL.md" ] && echo "skill: $(basename "$folder")"
  done
  echo "end"
}} > "$out.tmp"
mv "$out.tmp" "$out"
{body}
"#,
            out = self.path("out").display()
        );
        let path = self.path(&format!("bin/{binary}"));
        fs::write(&path, script).expect("write a fake runner");
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("make it executable");
    }

    fn environment(&self) -> Vec<(String, String)> {
        vec![
            ("PATH".to_owned(), format!("{}:/usr/bin:/bin", self.path("bin").display())),
            ("ACOMPOSE_HOME".to_owned(), self.path("acompose-home").display().to_string()),
        ]
    }

    fn people(&self, arguments: &[&str]) -> common::Output {
        let mut all: Vec<&str> = vec!["people"];
        all.extend_from_slice(arguments);
        let workspace = self.path("ws").display().to_string();
        all.extend_from_slice(&["--workspace", &workspace]);
        let environment = self.environment();
        let pairs: Vec<(&str, &str)> = environment.iter().map(|(key, value)| (key.as_str(), value.as_str())).collect();
        common::acompose_with(self.root.path(), &all, &pairs)
    }

    /// What each run of `binary` reported, oldest first.
    fn seen(&self, binary: &str) -> Vec<String> {
        let mut files: Vec<(std::time::SystemTime, String)> = fs::read_dir(self.path("out"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.starts_with(&format!("{binary}-")) && name.ends_with(".txt")
            })
            .map(|entry| {
                let modified = entry.metadata().and_then(|metadata| metadata.modified()).expect("a time");
                (modified, fs::read_to_string(entry.path()).unwrap_or_default())
            })
            .collect();
        files.sort();
        files.into_iter().map(|(_, text)| text).collect()
    }

    fn records(&self) -> Vec<serde_json::Value> {
        let listed = self.people(&["sessions", "--json"]);
        let json: serde_json::Value = serde_json::from_str(&listed.stdout).expect("JSON");
        json["sessions"].as_array().cloned().unwrap_or_default()
    }

    fn people_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(self.path("ws/people"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| (entry.path(), fs::read(entry.path()).unwrap_or_default()))
            .collect();
        files.sort();
        files
    }
}

fn lines<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter_map(|line| line.strip_prefix(prefix)).collect()
}

#[test]
fn a_person_bound_to_platform_sees_only_platforms_skills_and_identity() {
    let desk = Desk::new();
    desk.person(&Person::new("ann", "Ann", "platform", "Keep the platform up."));
    desk.runner("claude", "exit 0");
    let shown = desk.people(&["show", "ann"]);
    assert!(
        shown.stdout.contains("roster role:         `platform`: sessions start as this role"),
        "{}{}",
        shown.stdout,
        shown.stderr
    );
    let listed = desk.people(&["list", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&listed.stdout).expect("JSON");
    assert_eq!(json["people"][0]["roster_role"], "platform");
    let run = desk.people(&["start", "ann", "--project", "desk", "--runner", "claude"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  as role:       platform — "), "{}", run.stdout);
    assert!(run.stdout.contains("  sees:          only the role's bundle: "), "{}", run.stdout);
    let seen = desk.seen("claude");
    assert_eq!(seen.len(), 1);
    let skills = lines(&seen[0], "skill: ");
    assert!(skills.contains(&"role-platform"), "{skills:?}");
    assert!(!skills.iter().any(|skill| skill.starts_with("role-") && *skill != "role-platform"), "{skills:?}");
    assert_eq!(lines(&seen[0], "role: "), ["platform"]);
    assert_eq!(lines(&seen[0], "launch: "), ["1"]);
    assert_eq!(lines(&seen[0], "person: "), ["ann"]);
    assert!(lines(&seen[0], "runtime: ")[0].starts_with(desk.path("acompose-home/runtime").to_str().expect("utf-8")));
    let records = desk.records();
    assert_eq!(records[0]["role"], "platform");
    let bundle = records[0]["bundle"].as_str().expect("the bundle id is recorded");
    assert_eq!(bundle.len(), 16);
    assert!(run.stdout.contains(&format!("  bundle:        {bundle}")), "{}", run.stdout);
}

#[test]
fn starting_as_a_role_offers_the_persons_mcp_servers_the_role_admits() {
    let desk = Desk::new();
    let inventory = "server \"files\" {\n    command \"run-files\"\n    roles \"platform\"\n}\nserver \"docs\" {\n    url \"https://docs.example.com/mcp\"\n    roles \"sysadmin\"\n}\n";
    fs::create_dir_all(desk.path("acompose-home")).expect("create the home");
    fs::write(desk.path("acompose-home/mcp.kdl"), inventory).expect("write the inventory");
    let mut ann = Person::new("ann", "Ann", "platform", "Keep the platform up.");
    ann.mcp_servers = vec!["docs".to_owned(), "files".to_owned()];
    desk.person(&ann);
    let copy = format!("cp \"$CLAUDE_CONFIG_DIR/.claude.json\" \"{}\"", desk.path("out/claude.json").display());
    desk.runner("claude", &copy);

    let review = desk.people(&["start", "ann", "--project", "desk", "--runner", "claude", "--dry-run"]);
    assert_eq!(review.code, 0, "{}{}", review.stdout, review.stderr);
    assert!(review.stdout.contains("  mcp servers:   files\n"), "{}", review.stdout);
    assert!(review.stdout.contains("  person's mcp:  files (the role admits them: delivered)\n"), "{}", review.stdout);
    assert!(
        review.stdout.contains("  not admitted:  docs (the Person's, not the role's: not delivered)\n"),
        "{}",
        review.stdout
    );
    let json = desk.people(&["start", "ann", "--project", "desk", "--runner", "claude", "--dry-run", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(json["as_role"]["mcp_servers"], serde_json::json!(["files"]));
    assert_eq!(json["as_role"]["person_mcp_offered"], serde_json::json!(["files"]));
    assert_eq!(json["as_role"]["person_mcp_not_admitted"], serde_json::json!(["docs"]));

    // The start delivers the role's servers, and so the offered ones, and no other.
    let run = desk.people(&["start", "ann", "--project", "desk", "--runner", "claude"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let seen: serde_json::Value =
        serde_json::from_slice(&fs::read(desk.path("out/claude.json")).expect("the runner's configuration"))
            .expect("JSON");
    let servers: Vec<&String> = seen["mcpServers"].as_object().expect("servers").keys().collect();
    assert_eq!(servers, ["files"]);
}

#[test]
fn an_unknown_role_gets_did_you_mean_and_starts_with_the_hosts_context() {
    let desk = Desk::new();
    let added = desk.people(&["add", "wiz", "--name", "Wiz", "--role", "wizard", "--goal", "Magic."]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(added.stderr.contains("the role is no role of the roster"), "{}", added.stderr);
    desk.person(&Person::new("bob", "Bob", "platfrom", "Typo in the role."));
    desk.runner("claude", "exit 0");
    let listed = desk.people(&["list"]);
    assert!(listed.stderr.contains("did you mean `platform`?"), "{}", listed.stderr);
    let json: serde_json::Value = serde_json::from_str(&desk.people(&["list", "--json"]).stdout).expect("JSON");
    assert_eq!(json["people"][0]["roster_role"], serde_json::Value::Null);
    let run = desk.people(&["start", "bob", "--project", "desk", "--runner", "claude"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("did you mean `platform`?"), "{}", run.stderr);
    assert!(run.stdout.contains("the runner sees the host's context"), "{}", run.stdout);
    let seen = desk.seen("claude");
    assert_eq!(lines(&seen[0], "launch: "), [""]);
    assert_eq!(lines(&seen[0], "home: "), [desk.path("no-home").to_str().expect("utf-8")]);
    assert_eq!(desk.records()[0]["bundle"], serde_json::Value::Null);
}

#[test]
fn a_three_role_swarm_starts_is_recorded_and_stops_leaving_people_unchanged() {
    let desk = Desk::new();
    desk.person(&Person::new("ann", "Ann", "sysadmin", "Keep the platform up."));
    let mut tia = Person::new("tia", "Tia", "tpm", "Plan the work.");
    tia.preferred_provider = Some("claude".to_owned());
    desk.person(&tia);
    desk.runner("claude", "sleep 120");
    desk.runner("codex", "sleep 120");
    fs::write(
        desk.path("swarm.yaml"),
        "spec: acompose/people-recipe@1\nroles:\n  - role: platform\n  - role: tpm\n  - role: frontend\n",
    )
    .expect("write the recipe");
    let before = desk.people_files();
    let recipe = desk.path("swarm.yaml").display().to_string();
    let workspace = desk.path("ws").display().to_string();
    let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
    command
        .args(["people", "swarm", "start", &recipe, "--assign", "platform=ann", "--runner", "codex"])
        .args(["--project", "desk", "--workspace", &workspace])
        .current_dir(desk.root.path())
        .env_remove("PROJECTS_ROOT")
        .env("HOME", desk.path("no-home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in desk.environment() {
        command.env(key, value);
    }
    let child = command.spawn().expect("start the swarm");
    let deadline = Instant::now() + Duration::from_secs(120);
    let run = loop {
        let listed = desk.people(&["swarm", "list", "--json"]);
        let json: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap_or_default();
        if let Some(run) = json["runs"].get(0) {
            break run.clone();
        }
        assert!(Instant::now() < deadline, "the run was never recorded");
        std::thread::sleep(Duration::from_millis(200));
    };
    let roles: Vec<(&str, Option<&str>, &str, &str)> = run["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .map(|role| {
            (
                role["role"].as_str().unwrap_or_default(),
                role["person_id"].as_str(),
                role["rule"].as_str().unwrap_or_default(),
                role["runner"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("platform", Some("ann"), "explicit", "codex"),
            ("tpm", Some("tia"), "role-match", "claude"),
            ("frontend", None, "ephemeral", "codex"),
        ]
    );
    let id = run["id"].as_str().expect("a run id").to_owned();
    let shown = desk.people(&["swarm", "show", &id, "--json"]);
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).expect("JSON");
    let statuses: Vec<&str> =
        shown["roles"].as_array().expect("roles").iter().map(|role| role["status"].as_str().unwrap_or("")).collect();
    assert_eq!(statuses, ["running", "running", "running"]);
    let stopped = desk.people(&["swarm", "stop", &id]);
    assert_eq!(stopped.code, 0, "{}{}", stopped.stdout, stopped.stderr);
    assert!(stopped.stdout.contains("3 sessions stopped"), "{}", stopped.stdout);
    let output = child.wait_with_output().expect("the swarm ends");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let records = desk.records();
    assert_eq!(records.len(), 3);
    for record in &records {
        assert_eq!(record["status"], "stopped", "{record}");
        assert_eq!(record["run"], id.as_str());
        assert!(record["bundle"].as_str().is_some_and(|bundle| bundle.len() == 16), "{record}");
    }
    let ephemeral: Vec<&serde_json::Value> = records.iter().filter(|record| record["ephemeral"] == true).collect();
    assert_eq!(ephemeral.len(), 1);
    assert_eq!(ephemeral[0]["role"], "frontend");
    assert_eq!(desk.people_files(), before, "no Person file changed");
    let roles_seen: Vec<String> = desk
        .seen("claude")
        .iter()
        .chain(desk.seen("codex").iter())
        .flat_map(|text| lines(text, "role: ").into_iter().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let mut roles_seen = roles_seen;
    roles_seen.sort();
    assert_eq!(roles_seen, ["frontend", "platform", "tpm"]);
}

#[test]
fn a_runner_with_session_id_is_resumed_and_one_without_is_refused() {
    let desk = Desk::new();
    desk.person(&Person::new("cy", "Cy", "reception", "Answer the phone."));
    desk.runner("claude", "exit 0");
    desk.runner("codex", "exit 0");
    let first = desk.people(&["start", "cy", "--project", "desk", "--runner", "claude"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let started = desk.seen("claude");
    let args = lines(&started[0], "arg: ");
    assert_eq!(args.first(), Some(&"--session-id"));
    let conversation = args[1].to_owned();
    let record = desk.records()[0].clone();
    assert_eq!(record["conversation"], conversation.as_str());
    assert_eq!(record["resumable"], true);
    let old = record["id"].as_str().expect("an id").to_owned();
    std::thread::sleep(Duration::from_millis(1100));
    let resumed = desk.people(&["resume", &old]);
    assert_eq!(resumed.code, 0, "{}{}", resumed.stdout, resumed.stderr);
    let again = desk.seen("claude");
    assert_eq!(again.len(), 2);
    assert_eq!(lines(&again[1], "arg: "), ["--resume", conversation.as_str()]);
    let newest = desk.records()[0].clone();
    assert_eq!(newest["resumed_from"], old.as_str());
    assert_eq!(newest["conversation"], conversation.as_str());
    assert_eq!(newest["person_id"], "cy");
    let codex = desk.people(&["start", "cy", "--project", "desk", "--runner", "codex"]);
    assert_eq!(codex.code, 0, "{}{}", codex.stdout, codex.stderr);
    let codex_record = desk.records().into_iter().find(|record| record["provider"] == "codex").expect("a record");
    assert_eq!(codex_record["resumable"], false);
    let refused = desk.people(&["resume", codex_record["id"].as_str().expect("an id")]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("the runner `codex` is not resumable"), "{}", refused.stderr);
    assert_eq!(desk.seen("codex").len(), 1, "nothing was started");
}

#[test]
fn a_session_as_a_role_reaches_the_users_own_ssh_git_and_tool_configuration() {
    let desk = Desk::new();
    desk.person(&Person::new("ann", "Ann", "platform", "Keep the platform up."));
    for (path, text) in [
        (".ssh/config", "Host build\n"),
        (".kube/config", "clusters: []\n"),
        (".config/gh/hosts.yml", "github.com: {}\n"),
        (".gitconfig", "[user]\n\temail = ann@example.com\n"),
    ] {
        let file = desk.path("no-home").join(path);
        fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        fs::write(file, text).expect("write");
    }
    let world = desk.path("out/world.txt");
    // Codex moves its home: the runtime home must show the user's entries.
    desk.runner(
        "codex",
        &format!(
            "{{ cat ~/.ssh/config ~/.kube/config ~/.config/gh/hosts.yml; git config --global user.email; }} > {}",
            world.display()
        ),
    );
    let run = desk.people(&["start", "ann", "--project", "desk", "--runner", "codex"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("  as role:       platform — "), "{}", run.stdout);
    assert_eq!(
        fs::read_to_string(&world).expect("the runner ran"),
        "Host build\nclusters: []\ngithub.com: {}\nann@example.com\n"
    );
}

#[test]
fn add_and_edit_refuse_a_role_one_typo_from_a_roster_role_unless_told_it_is_a_label() {
    let desk = Desk::new();
    let typo = desk.people(&["add", "bob", "--name", "Bob", "--role", "platfrom", "--goal", "Run the platform."]);
    assert_eq!(typo.code, 1, "{}", typo.stderr);
    assert!(typo.stderr.contains("did you mean `platform`?"), "{}", typo.stderr);
    assert!(typo.stderr.contains("--plain-collaborator"), "{}", typo.stderr);
    assert!(!desk.path("ws/people/bob.json").exists(), "nothing was written");
    let bound = desk.people(&["add", "bob", "--name", "Bob", "--role", "platform", "--goal", "Run the platform."]);
    assert_eq!(bound.code, 0, "{}", bound.stderr);
    let edited = desk.people(&["edit", "bob", "--role", "sysadmni"]);
    assert_eq!(edited.code, 1, "{}", edited.stderr);
    assert!(edited.stderr.contains("did you mean `sysadmin`?"), "{}", edited.stderr);
    let kept: serde_json::Value =
        serde_json::from_slice(&fs::read(desk.path("ws/people/bob.json")).expect("bob")).expect("JSON");
    assert_eq!(kept["role"], "platform", "the refused edit wrote nothing");
    let label =
        desk.people(&["add", "cyd", "--name", "Cyd", "--role", "platfrom", "--goal", "G.", "--plain-collaborator"]);
    assert_eq!(label.code, 0, "{}", label.stderr);
    assert!(label.stderr.contains("the role is no role of the roster"), "{}", label.stderr);
}
