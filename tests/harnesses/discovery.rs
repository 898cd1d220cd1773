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
    /// `gemini skills list`: the discovered skills; conflicts are warned on stderr. The
    /// instructions are what `gemini -p hello` then sends the recording endpoint.
    GeminiSkillsList,
    /// `claude -p … --output-format stream-json --verbose`: the `init` event lists the
    /// skills; the request sent to the recording endpoint holds the instructions.
    ClaudeInitEvent,
    /// `copilot skill list --json`, offline.
    CopilotSkillList,
    /// `kilo debug skill`: OpenCode's JSON list.
    KiloDebugSkill,
    /// `amp skill list --json`, its service pointed at the recorder (which it asks for
    /// nothing it needs to list).
    AmpSkillList,
    /// `qwen … hello` against the recorder: the `<available_skills>` of its first request.
    QwenRequest,
    /// `droid exec … hello` with a custom model at the recorder: its "Available skills"
    /// reminder.
    DroidRequest,
    /// `cline "say hello"` with a provider at the recorder (`cline auth` first): the skills
    /// tool's "Available skills" list.
    ClineRequest,
    /// `auggie --print hello` with its tenant at the recorder: the `skills` of its
    /// `/chat-stream` request.
    AuggieRequest,
}

pub const HARNESSES: &[Harness] = &[
    Harness { binary: "claude", layout: "claude", method: Method::ClaudeInitEvent },
    Harness { binary: "codex", layout: "codex", method: Method::CodexPromptInput },
    Harness { binary: "gemini", layout: "gemini", method: Method::GeminiSkillsList },
    Harness { binary: "opencode", layout: "opencode", method: Method::OpencodeDebugSkill },
    Harness { binary: "copilot", layout: "copilot", method: Method::CopilotSkillList },
    Harness { binary: "kilo", layout: "kilo", method: Method::KiloDebugSkill },
    Harness { binary: "amp", layout: "amp", method: Method::AmpSkillList },
    Harness { binary: "qwen", layout: "qwen", method: Method::QwenRequest },
    Harness { binary: "droid", layout: "droid", method: Method::DroidRequest },
    Harness { binary: "cline", layout: "cline", method: Method::ClineRequest },
    Harness { binary: "auggie", layout: "auggie", method: Method::AuggieRequest },
];

impl Harness {
    /// Whether repository-scope projections for it must be copies (Kilo Code).
    pub fn copies_in_repositories(&self) -> bool {
        matches!(self.method, Method::KiloDebugSkill)
    }
}

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
    before(harness, bin, home, cwd, &recorder);
    let command = |words: Vec<String>| {
        let mut command = Command::new(bin.join(harness.binary));
        prepare(&mut command, bin, home, cwd, &recorder);
        command.args(words);
        command
    };
    let mut seen = run(harness, command(arguments(harness.method, home)), &recorder, home);
    if let Method::GeminiSkillsList = harness.method {
        seen.instructions = Some(gemini_sent(command(gemini_request()), &recorder));
    }
    seen
}

/// Gemini CLI's `skills list` shows no instructions: a headless prompt to the recorder
/// (`GOOGLE_GEMINI_BASE_URL`, with the API-key auth its settings select, see [`before`])
/// sends them.
fn gemini_request() -> Vec<String> {
    ["-p", "hello", "--skip-trust"].iter().map(|word| (*word).to_owned()).collect()
}

/// What Gemini CLI sent the recorder for [`gemini_request`], its JSON strings decoded.
fn gemini_sent(mut command: Command, recorder: &Recorder) -> String {
    let already = recorder.bodies().len();
    command.env("GEMINI_API_KEY", "dummy-recorded-not-a-key").stdin(std::process::Stdio::null());
    let output = command.output().expect("run gemini -p");
    let mut texts = Vec::new();
    for body in recorder.bodies().iter().skip(already) {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
            collect_strings(&value, &mut texts);
        }
    }
    assert!(
        !texts.is_empty(),
        "gemini -p sent the recorder nothing; exited {:?}: {}",
        output.status.code(),
        tail(&String::from_utf8_lossy(&output.stderr))
    );
    texts.join("\n")
}

/// What a harness needs in its home before it is asked: Cline's provider at the
/// recorder (`cline auth`, which writes `~/.cline/data/settings/providers.json`, a file a
/// launch carries), Droid's settings file with a custom model at the recorder.
fn before(harness: &Harness, bin: &Path, home: &Path, cwd: &Path, recorder: &Recorder) {
    match harness.method {
        Method::ClineRequest => {
            let mut command = Command::new(bin.join("cline"));
            prepare(&mut command, bin, home, cwd, recorder);
            let base = format!("{}/v1", recorder.url);
            command.args(["auth", "-p", "openai", "-k", "dummy", "-m", "gpt-4.1", "-b", &base]);
            let output = command.stdin(std::process::Stdio::null()).output().expect("cline auth");
            assert!(output.status.success(), "cline auth: {}", String::from_utf8_lossy(&output.stderr));
        }
        Method::GeminiSkillsList => {
            // Headless, it needs an auth type chosen (else "Invalid auth method selected").
            let settings = home.join(".gemini/settings.json");
            if !settings.exists() {
                std::fs::create_dir_all(home.join(".gemini")).expect("gemini folder");
                let selected = serde_json::json!({ "security": { "auth": { "selectedType": "gemini-api-key" } } });
                std::fs::write(settings, selected.to_string()).expect("gemini settings");
            }
        }
        Method::DroidRequest => {
            let settings = serde_json::json!({ "customModels": [{
                "model": "m1", "displayName": "recorder", "baseUrl": format!("{}/v1", recorder.url),
                "apiKey": "dummy", "provider": "generic-chat-completion-api", "maxOutputTokens": 1000
            }]});
            std::fs::write(home.join("droid-recorder.json"), settings.to_string()).expect("droid settings");
        }
        _ => {}
    }
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
    before(harness, bin, user, cwd, &recorder);
    let projects = acompose_home.parent().expect("root").join("projects");
    let command = |words: Vec<String>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
        prepare(&mut command, bin, user, cwd, &recorder);
        command
            .arg("--home")
            .arg(acompose_home)
            .args(["launch", role, harness.layout, "--yes", "--projects-root"])
            .arg(&projects)
            .arg("--")
            .args(words);
        command
    };
    let mut seen = run(harness, command(arguments(harness.method, user)), &recorder, user);
    if let Method::GeminiSkillsList = harness.method {
        seen.instructions = Some(gemini_sent(command(gemini_request()), &recorder));
    }
    seen
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

fn arguments(method: Method, home: &Path) -> Vec<String> {
    let words: &[&str] = match method {
        Method::CodexPromptInput => &["debug", "prompt-input"],
        Method::OpencodeDebugSkill | Method::KiloDebugSkill => &["debug", "skill"],
        Method::GeminiSkillsList => &["skills", "list"],
        Method::ClaudeInitEvent => &["-p", "hello", "--output-format", "stream-json", "--verbose"],
        Method::CopilotSkillList | Method::AmpSkillList => &["skill", "list", "--json"],
        Method::QwenRequest => &["--auth-type", "openai", "--openai-api-key", "dummy", "-m", "gpt-4.1", "hello"],
        Method::DroidRequest => &["exec", "-m", "custom:m1", "hello"],
        Method::ClineRequest => &["say hello"],
        Method::AuggieRequest => &["--print", "hello"],
    };
    let mut arguments: Vec<String> = words.iter().map(|word| (*word).to_owned()).collect();
    if let Method::DroidRequest = method {
        arguments.splice(1..1, ["--settings".to_owned(), home.join("droid-recorder.json").display().to_string()]);
    }
    arguments
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
        ("GOOGLE_GEMINI_BASE_URL", recorder.url.as_str()),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("COPILOT_OFFLINE", "true"),
        ("COPILOT_AUTO_UPDATE", "false"),
        ("KILO_DISABLE_AUTOUPDATE", "1"),
        ("KILO_DISABLE_MODELS_FETCH", "1"),
        ("AMP_API_KEY", "dummy-recorded-not-a-key"),
        ("AUGMENT_DISABLE_AUTO_UPDATE", "1"),
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("CI", "true"),
    ] {
        command.env(name, value);
    }
    command.env("AMP_URL", format!("{}/", recorder.url));
    command.env("OPENAI_BASE_URL", format!("{}/v1", recorder.url));
    let tenant =
        serde_json::json!({ "accessToken": "dummy", "tenantURL": format!("{}/", recorder.url), "scopes": ["email"] });
    command.env("AUGMENT_SESSION_AUTH", tenant.to_string());
    // Copilot unpacks itself (about 200 MB) into its cache on first start: one cache for
    // every run, outside the homes the checks make.
    command.env("XDG_CACHE_HOME", Path::new(env!("CARGO_TARGET_TMPDIR")).join("harness-cache"));
    // A temporary folder inside the run's home, which the test removes: a harness writes
    // there (Gemini CLI its error reports) and nothing is left in the machine's `/tmp`.
    let temporary = home.join(".tmp");
    std::fs::create_dir_all(&temporary).expect("the harness's temporary folder");
    command.env("TMPDIR", temporary);
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
        Method::CopilotSkillList => copilot(&stdout).unwrap_or_else(|| panic!("no skill JSON: {}", context())),
        Method::KiloDebugSkill => opencode(&stdout).unwrap_or_else(|| panic!("no skill JSON: {}", context())),
        Method::AmpSkillList => amp(&stdout).unwrap_or_else(|| panic!("no skill JSON: {}", context())),
        Method::QwenRequest => recorded(recorder, qwen_skills).unwrap_or_else(|| panic!("no request: {}", context())),
        Method::DroidRequest => recorded(recorder, droid_skills).unwrap_or_else(|| panic!("no request: {}", context())),
        Method::ClineRequest => recorded(recorder, cline_skills).unwrap_or_else(|| panic!("no request: {}", context())),
        Method::AuggieRequest => auggie(recorder).unwrap_or_else(|| panic!("no /chat-stream request: {}", context())),
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

/// Copilot's `skill list --json`: `[{name, source, …}]`.
fn copilot(stdout: &str) -> Option<Seen> {
    let start = stdout.find('[')?;
    let list: Vec<serde_json::Value> = serde_json::from_str(&stdout[start..]).ok()?;
    let skills = list.iter().filter_map(|skill| skill["name"].as_str().map(str::to_owned)).collect();
    Some(Seen { skills, ..Seen::default() })
}

/// Amp's `skill list --json`: `{skills: [{name, …}], errors: […]}`; its errors are warnings.
fn amp(stdout: &str) -> Option<Seen> {
    let start = stdout.find('{')?;
    let listing: serde_json::Value = serde_json::from_str(&stdout[start..]).ok()?;
    let skills =
        listing["skills"].as_array()?.iter().filter_map(|skill| skill["name"].as_str().map(str::to_owned)).collect();
    let errors =
        listing["errors"].as_array().map(|errors| errors.iter().map(ToString::to_string).collect()).unwrap_or_default();
    Some(Seen { skills, instructions: None, warnings: errors })
}

/// The skills a recorded request lists (read by `names` from its decoded strings) and
/// the whole of what was sent, as the instructions.
fn recorded(recorder: &Recorder, names: fn(&str) -> Option<Vec<String>>) -> Option<Seen> {
    let bodies = recorder.bodies();
    let mut texts = Vec::new();
    for body in &bodies {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
            collect_strings(&value, &mut texts);
        }
    }
    if bodies.is_empty() {
        return None;
    }
    // A request that lists no skills (an empty folder and home) lists none.
    let skills = texts.iter().find_map(|text| names(text)).unwrap_or_default();
    Some(Seen { skills, instructions: Some(texts.join("\n")), warnings: Vec::new() })
}

/// Qwen Code: `<available_skills><skill><name>\nNAME\n</name>…`.
fn qwen_skills(text: &str) -> Option<Vec<String>> {
    let listing = text.split_once("<available_skills>")?.1;
    let listing = listing.split_once("</available_skills>").map_or(listing, |(inside, _)| inside);
    Some(
        listing
            .split("<name>")
            .skip(1)
            .filter_map(|part| part.split_once("</name>").map(|(name, _)| name.trim().to_owned()))
            .collect(),
    )
}

/// Factory Droid: "Available skills (…):" then a `name: description` line each.
fn droid_skills(text: &str) -> Option<Vec<String>> {
    let rest = text.split_once("Available skills (")?.1;
    let lines = rest.split_once('\n')?.1;
    Some(
        lines
            .lines()
            .take_while(|line| !line.trim().is_empty())
            .filter_map(|line| line.split_once(": ").map(|(name, _)| name.trim().to_owned()))
            .collect(),
    )
}

/// Cline: "Available skills: a, b, c." in its skills tool.
fn cline_skills(text: &str) -> Option<Vec<String>> {
    let rest = text.split_once("Available skills: ")?.1;
    let list = rest.lines().next()?.trim_end_matches('.');
    Some(list.split(", ").map(|name| name.trim().to_owned()).filter(|name| !name.is_empty()).collect())
}

/// Auggie: the `skills` array of its `/chat-stream` request; the instructions are all it sent.
fn auggie(recorder: &Recorder) -> Option<Seen> {
    let bodies = recorder.bodies();
    let request = bodies.iter().find_map(|body| {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        value.get("skills").filter(|skills| skills.is_array()).is_some().then_some(value)
    })?;
    let skills =
        request["skills"].as_array()?.iter().filter_map(|skill| skill["name"].as_str().map(str::to_owned)).collect();
    Some(Seen { skills, instructions: Some(bodies.join("\n")), warnings: Vec::new() })
}
