//! How each harness is asked what it would give the model: its own listing command where
//! it has one that works offline, else its first request to a recording endpoint.

use std::path::Path;
use std::process::Command;

use crate::recorder::Recorder;

/// One harness CLI and how it tells what it sees.
pub struct Harness {
    /// The executable in the harness folder.
    pub binary: &'static str,
    /// The acompose layout (`--layout`, `launch`, `setup`).
    pub layout: &'static str,
    method: Method,
}

#[derive(Clone, Copy)]
enum Method {
    /// `codex debug prompt-input`: the exact input of the first turn, skills list and
    /// `AGENTS.md` text included.
    CodexPromptInput,
    /// `opencode debug skill`: every skill it discovered, as JSON.
    OpencodeDebugSkill,
    /// `gemini skills list`: the discovered skills; conflicts are warned on stderr.
    GeminiSkillsList,
    /// `claude -p … --output-format stream-json --verbose`: the `init` event lists the
    /// skills; the request sent to the recording endpoint holds the instructions.
    ClaudeInitEvent,
}

pub const HARNESSES: &[Harness] = &[
    Harness { binary: "claude", layout: "claude", method: Method::ClaudeInitEvent },
    Harness { binary: "codex", layout: "codex", method: Method::CodexPromptInput },
    Harness { binary: "gemini", layout: "gemini", method: Method::GeminiSkillsList },
    Harness { binary: "opencode", layout: "opencode", method: Method::OpencodeDebugSkill },
];

/// What a harness said it would give the model.
#[derive(Debug, Default)]
pub struct Seen {
    /// Every skill name it listed, in its order, repeats kept.
    pub skills: Vec<String>,
    /// The text it sends, where its discovery shows instructions.
    pub instructions: Option<String>,
    /// Its warnings about duplicate or conflicting skills.
    pub warnings: Vec<String>,
}

/// Runs the harness directly in `cwd` with `home` as its home.
pub fn discover(harness: &Harness, bin: &Path, home: &Path, cwd: &Path) -> Seen {
    let recorder = Recorder::start();
    let mut command = Command::new(bin.join(harness.binary));
    prepare(&mut command, bin, home, cwd, &recorder);
    command.args(arguments(harness.method));
    run(harness, command, &recorder, home)
}

/// Runs the harness through `acompose launch ROLE HARNESS -- …` in `cwd`, with `user` as
/// the real home (whose harness folders may hold every roster skill).
pub fn discover_launched(
    harness: &Harness,
    bin: &Path,
    acompose_home: &Path,
    user: &Path,
    role: &str,
    cwd: &Path,
) -> Seen {
    let recorder = Recorder::start();
    let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
    prepare(&mut command, bin, user, cwd, &recorder);
    let projects = acompose_home.parent().expect("root").join("projects");
    command
        .arg("--home")
        .arg(acompose_home)
        .args(["launch", role, harness.layout, "--yes", "--projects-root"])
        .arg(projects)
        .arg("--")
        .args(arguments(harness.method));
    run(harness, command, &recorder, user)
}

/// Marks `folder` trusted where the harness reads repository skills only in trusted
/// folders (Gemini CLI's `~/.gemini/trustedFolders.json`).
pub fn trust(harness: &Harness, home: &Path, folder: &Path) {
    if let Method::GeminiSkillsList = harness.method {
        let settings = home.join(".gemini");
        std::fs::create_dir_all(&settings).expect("gemini folder");
        let trusted = serde_json::json!({ folder.to_str().expect("utf-8"): "TRUST_FOLDER" });
        std::fs::write(settings.join("trustedFolders.json"), trusted.to_string()).expect("trust");
    }
}

fn arguments(method: Method) -> &'static [&'static str] {
    match method {
        Method::CodexPromptInput => &["debug", "prompt-input"],
        Method::OpencodeDebugSkill => &["debug", "skill"],
        Method::GeminiSkillsList => &["skills", "list"],
        Method::ClaudeInitEvent => &["-p", "hello", "--output-format", "stream-json", "--verbose"],
    }
}

/// An environment with nothing of the machine's user in it: `home` as the home, no
/// configuration folder variables, the harness folder first on `PATH`, every model
/// endpoint pointed at the recorder, and no telemetry or update checks.
fn prepare(command: &mut Command, bin: &Path, home: &Path, cwd: &Path, recorder: &Recorder) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut folders = vec![bin.to_path_buf()];
    folders.extend(std::env::split_paths(&path));
    command.env_clear().current_dir(cwd).env("HOME", home).env("PATH", std::env::join_paths(folders).expect("PATH"));
    for (name, value) in [
        ("ANTHROPIC_BASE_URL", recorder.url.as_str()),
        ("ANTHROPIC_API_KEY", "sk-test-recorded-not-a-key"),
        ("OPENAI_BASE_URL", recorder.url.as_str()),
        ("GOOGLE_GEMINI_BASE_URL", recorder.url.as_str()),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("CI", "true"),
    ] {
        command.env(name, value);
    }
    if let Some(temporary) = std::env::var_os("TMPDIR") {
        command.env("TMPDIR", temporary);
    }
}

/// Runs the harness; its warnings come from its standard error and, for OpenCode, from the
/// log files it writes under `home` (where it reports duplicate skill names).
fn run(harness: &Harness, mut command: Command, recorder: &Recorder, home: &Path) -> Seen {
    command.stdin(std::process::Stdio::null());
    let output = command.output().unwrap_or_else(|error| panic!("run {}: {error}", harness.binary));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let context = || {
        format!(
            "{} exited {:?}\nstdout: {}\nstderr: {}",
            harness.binary,
            output.status.code(),
            tail(&stdout),
            tail(&stderr)
        )
    };
    let mut seen = match harness.method {
        Method::CodexPromptInput => codex(&stdout).unwrap_or_else(|| panic!("no skills list: {}", context())),
        Method::OpencodeDebugSkill => opencode(&stdout).unwrap_or_else(|| panic!("no skill JSON: {}", context())),
        Method::GeminiSkillsList => gemini(&stdout).unwrap_or_else(|| panic!("no skill listing: {}", context())),
        Method::ClaudeInitEvent => claude(&stdout, recorder).unwrap_or_else(|| panic!("no init event: {}", context())),
    };
    let logs = match harness.method {
        Method::OpencodeDebugSkill => opencode_logs(home),
        _ => String::new(),
    };
    seen.warnings = stderr
        .lines()
        .chain(logs.lines())
        .filter(|line| {
            let lower = line.to_ascii_lowercase();
            lower.contains("conflict") || lower.contains("duplicate skill")
        })
        .map(|line| line.chars().take(300).collect())
        .collect();
    seen
}

fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(3000);
    let start = (start..=text.len()).find(|&index| text.is_char_boundary(index)).unwrap_or(text.len());
    &text[start..]
}

/// Codex's prompt input: a JSON list of messages; the skills are the `- name: …` lines of
/// its `<skills_instructions>` text, the instructions the whole input.
fn codex(stdout: &str) -> Option<Seen> {
    let input: serde_json::Value = serde_json::from_str(stdout).ok()?;
    let mut texts = Vec::new();
    collect_strings(&input, &mut texts);
    let listing = texts.iter().find(|text| text.contains("<skills_instructions>"))?;
    let section = listing.split("### Available skills").nth(1)?;
    let skills = section
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|entry| entry.split_once(':').map(|(name, _)| name.trim().to_owned()))
        .collect();
    Some(Seen { skills, instructions: Some(texts.join("\n")), warnings: Vec::new() })
}

fn collect_strings(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => into.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_strings(item, into)),
        serde_json::Value::Object(map) => map.values().for_each(|item| collect_strings(item, into)),
        _ => {}
    }
}

/// OpenCode's `debug skill`: a JSON list of `{name, location, …}`.
fn opencode(stdout: &str) -> Option<Seen> {
    let start = stdout.find('[')?;
    let list: Vec<serde_json::Value> = serde_json::from_str(&stdout[start..]).ok()?;
    let skills = list.iter().filter_map(|skill| skill["name"].as_str().map(str::to_owned)).collect();
    Some(Seen { skills, ..Seen::default() })
}

/// Gemini CLI's `skills list`: a `name [Enabled]` line per skill.
fn gemini(stdout: &str) -> Option<Seen> {
    if !stdout.contains("Agent Skills") && !stdout.contains("No skills") {
        return None;
    }
    let skills = stdout
        .lines()
        .filter_map(|line| line.strip_suffix(" [Enabled]").or_else(|| line.strip_suffix(" [Disabled]")))
        .map(|name| name.trim().to_owned())
        .collect();
    Some(Seen { skills, ..Seen::default() })
}

/// Claude Code's stream: the `init` event's `skills`; the instructions are what it sent
/// the recording endpoint.
fn claude(stdout: &str, recorder: &Recorder) -> Option<Seen> {
    let init = stdout.lines().find_map(|line| {
        let event: serde_json::Value = serde_json::from_str(line).ok()?;
        (event["type"] == "system" && event["subtype"] == "init").then_some(event)
    })?;
    let skills = init["skills"].as_array()?.iter().filter_map(|skill| skill.as_str().map(str::to_owned)).collect();
    let sent = recorder.bodies().join("\n");
    Some(Seen { skills, instructions: (!sent.is_empty()).then_some(sent), warnings: Vec::new() })
}

/// Every log file OpenCode wrote under `home`.
fn opencode_logs(home: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(home.join(".local/share/opencode/log")) else {
        return String::new();
    };
    entries.filter_map(Result::ok).filter_map(|entry| std::fs::read_to_string(entry.path()).ok()).collect()
}
