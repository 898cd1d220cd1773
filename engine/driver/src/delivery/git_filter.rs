//! The clean filter that lets git read a projected file of the user's without the
//! projection's text: git runs `acompose git-clean <path>` (a command in the repository's
//! own config, `filter.acompose.clean`, for the paths `info/attributes` gives the
//! `acompose` filter) with the file on standard input, and stores what it writes. The
//! filter takes out exactly what the projection record at or above the file says the
//! projection put there (its managed block, the MCP servers' inserted text) and passes
//! everything else through, so git sees the user's own bytes; where no record names the
//! file (another worktree, a block edited by hand) it passes the file through unchanged.
//! The filter is not `required`: when git cannot run it, git stores the file as it is.
//! Also reads and writes the filter's config (the config file read as text; written by
//! `git config`).

use std::path::{Path, PathBuf};

use acompose_engine::git_exclude::FILTER;
use acompose_engine::instruction_block;
use acompose_engine::mcp::splice;
use acompose_engine::projection::{BlockRecord, McpRecord};

use crate::delivery::git_exclude::Repository;

/// The command name git runs the filter as (a plumbing command, not in `--help`).
pub const SUBCOMMAND: &str = "git-clean";

/// The config key holding the filter's command.
fn key() -> String {
    format!("filter.{FILTER}.clean")
}

/// The largest file the filter takes anything out of; a larger one passes through.
pub const FILTER_LIMIT: usize = 4 * 1024 * 1024;

/// The names of the binaries that run the filter (the cli's, under both its names).
const PROGRAMS: [&str; 2] = ["acompose", "agent-compose"];

/// What git is told to run: this binary by its absolute path (a shell without `acompose`
/// on `PATH`, an editor's git, still finds it), quoted for the shell git runs it with.
/// A host that is not one of the cli's binaries (a test, say) names `acompose` on `PATH`.
pub fn command() -> String {
    let program = std::env::current_exe().ok().filter(|program| {
        program.file_name().and_then(|name| name.to_str()).is_some_and(|name| PROGRAMS.contains(&name))
    });
    match program {
        Some(program) => format!("{} {SUBCOMMAND} %f", shell_quoted(&program.to_string_lossy())),
        None => format!("acompose {SUBCOMMAND} %f"),
    }
}

fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The program a configured command runs, when it names one by absolute path.
pub fn program_of(command: &str) -> Option<PathBuf> {
    let quoted = command.strip_prefix('\'')?;
    let mut program = String::new();
    let mut rest = quoted;
    loop {
        let end = rest.find('\'')?;
        program.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(after) => {
                program.push('\'');
                rest = after;
            }
            None => break,
        }
    }
    Some(PathBuf::from(program)).filter(|program| program.is_absolute())
}

/// `input` (the bytes of `path`, relative to the work tree's root `top`) as git should
/// store it: without the blocks and MCP text the projection records at or above it name.
pub fn clean(top: &Path, path: &str, input: &[u8]) -> Vec<u8> {
    let segments: Vec<&str> = path.split('/').collect();
    let safe =
        !path.is_empty() && segments.iter().all(|segment| !segment.is_empty() && *segment != "." && *segment != "..");
    if !safe || input.len() > FILTER_LIMIT {
        return input.to_vec();
    }
    let mut text = input.to_vec();
    for depth in 0..segments.len() {
        let folder = top.join(segments[..depth].join("/"));
        let relative = segments[depth..].join("/");
        let Some(record) = crate::home::projection_record::read_record(&folder) else { continue };
        for block in record.details.blocks.iter().filter(|block| block.path == relative) {
            text = without_block(text, block);
        }
        for servers in record.details.mcp.iter().filter(|servers| servers.path == relative) {
            text = without_servers(text, servers);
        }
    }
    text
}

/// `text` without the recorded block; unchanged when the block is not there as it was
/// written (edited by hand, markers broken).
pub fn without_block(text: Vec<u8>, block: &BlockRecord) -> Vec<u8> {
    match instruction_block::find(&text) {
        Ok(Some(range)) if blake3::hash(&text[range.clone()]).to_hex().as_str() == block.digest => {
            instruction_block::removed(&text, range, &block.separator)
        }
        _ => text,
    }
}

/// `text` without the servers' recorded text; unchanged when it is not there exactly once.
fn without_servers(text: Vec<u8>, servers: &McpRecord) -> Vec<u8> {
    splice::unspliced(&text, &servers.inserted).unwrap_or(text)
}

/// What the repository's config says of the filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configured {
    /// The command of `filter.acompose.clean`.
    pub command: Option<String>,
    /// Whether the `filter "acompose"` section holds another key (someone else's).
    pub other_keys: bool,
}

/// Reads the filter's section of the repository's config file (as text: a glance, for
/// deciding whether `git config` must run, never for writing).
pub fn configured(repository: &Repository) -> Configured {
    let Ok(text) = crate::delivery::git_exclude::read_info(&repository.config()) else { return Configured::default() };
    let mut configured = Configured::default();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim_start();
        let line = match line.strip_prefix('[') {
            Some(header) => {
                let Some((section, rest)) = header.split_once(']') else { continue };
                inside = is_filter_section(section);
                rest.trim_start()
            }
            None => line,
        };
        if !inside || line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let (name, value) = line.split_once('=').unwrap_or((line, ""));
        if name.trim().eq_ignore_ascii_case("clean") {
            configured.command = Some(config_value(value));
        } else {
            configured.other_keys = true;
        }
    }
    configured
}

/// Whether a section header's text names the filter's section (`filter "acompose"`, or
/// the older `filter.acompose`).
fn is_filter_section(section: &str) -> bool {
    let section = section.trim();
    match section.split_once(char::is_whitespace) {
        Some((name, subsection)) => name.eq_ignore_ascii_case("filter") && subsection.trim() == format!("\"{FILTER}\""),
        None => section.eq_ignore_ascii_case(&format!("filter.{FILTER}")),
    }
}

/// A config value as git reads it: quotes joined, escapes read, a comment cut.
fn config_value(raw: &str) -> String {
    let mut value = String::new();
    let mut quoted = false;
    let mut characters = raw.trim().chars();
    while let Some(character) = characters.next() {
        match character {
            '"' => quoted = !quoted,
            '\\' => match characters.next() {
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some(other) => value.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            other => value.push(other),
        }
    }
    value.trim_end().to_owned()
}

/// Points the repository's filter at `command`.
pub fn install(repository: &Repository, command: &str) -> Result<(), String> {
    repository.git(&["config", "--local", &key(), command]).map(drop)
}

/// Takes the filter out of the repository's config: the whole section when it holds only
/// the filter's command, else that key alone.
pub fn remove(repository: &Repository) -> Result<(), String> {
    let configured = configured(repository);
    if configured.command.is_none() {
        return Ok(());
    }
    if configured.other_keys {
        return repository.git(&["config", "--local", "--unset-all", &key()]).map(drop);
    }
    repository.git(&["config", "--local", "--remove-section", &format!("filter.{FILTER}")]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_names_the_clis_binary_and_is_read_back() {
        // This test's own binary is not the cli's: git is told to find `acompose`.
        assert_eq!(command(), "acompose git-clean %f");
        assert_eq!(shell_quoted("/opt/it's/acompose"), "'/opt/it'\\''s/acompose'");
        assert_eq!(program_of("'/opt/it'\\''s/acompose' git-clean %f"), Some(PathBuf::from("/opt/it's/acompose")));
        assert_eq!(program_of("acompose git-clean %f"), None);
    }

    /// A target holding `CLAUDE.md` (the user's text and a block) and `.mcp.json` (the
    /// user's server and the role's), recorded as a projection would record them.
    fn projected(target: &Path) -> (Vec<u8>, Vec<u8>) {
        use acompose_engine::harness_layout::layout;
        use acompose_engine::mcp::{McpServer, Transport};
        let with_block = instruction_block::appended(b"# Ours\n", b"Be the platform engineer.\n");
        let user_mcp = b"{\n\t\"mcpServers\": {}\n}\n";
        let places = layout("claude").and_then(|layout| layout.mcp).expect("claude reads .mcp.json");
        let server = McpServer {
            name: "docs".to_owned(),
            transport: Transport::Http,
            command: None,
            args: Vec::new(),
            url: Some("https://docs.example.com/mcp".to_owned()),
            env: Vec::new(),
            headers: Vec::new(),
        };
        let spliced = splice::spliced(".mcp.json", user_mcp, &places, &[server]).expect("spliced");
        std::fs::write(target.join("CLAUDE.md"), &with_block.text).expect("write");
        std::fs::write(target.join(".mcp.json"), &spliced.bytes).expect("write");
        let details = serde_json::json!({
            "bundle": "0123456789abcdef", "bundle_path": "/nowhere", "layout": "claude", "scope": "repository",
            "mode": "link", "delivery": "native-skills", "role": "platform", "role_name": "Platform",
            "name": "Ada", "pronouns": "she/her", "model_tier": "frontier", "personalities": [], "skills": [],
            "approximate_tokens": 0,
            "blocks": [{"path": "CLAUDE.md", "separator": with_block.separator,
                        "digest": blake3::hash(&with_block.block).to_hex().to_string()}],
            "mcp": [{"path": ".mcp.json", "layout": "claude", "servers": ["docs"], "inserted": spliced.inserted}],
        });
        let record =
            serde_json::json!({"format": acompose_engine::projection::FORMAT, "files": [], "details": details});
        std::fs::create_dir_all(target.join(".agent-compose")).expect("mkdir");
        std::fs::write(target.join(acompose_engine::projection::RECORD), record.to_string()).expect("record");
        (with_block.text, spliced.bytes)
    }

    #[test]
    fn the_filter_takes_out_exactly_what_the_record_names_and_passes_the_rest_through() {
        let top = tempfile::tempdir().expect("tempdir");
        let target = top.path().join("service");
        std::fs::create_dir(&target).expect("mkdir");
        let (claude, mcp) = projected(&target);
        assert_eq!(clean(top.path(), "service/CLAUDE.md", &claude), b"# Ours\n");
        assert_eq!(clean(top.path(), "service/.mcp.json", &mcp), b"{\n\t\"mcpServers\": {}\n}\n");
        // The user's own edit outside the block stays.
        let mut edited = claude.clone();
        edited.splice(0..0, b"Intro.\n".iter().copied());
        assert_eq!(clean(top.path(), "service/CLAUDE.md", &edited), b"Intro.\n# Ours\n");
        // A block edited by hand, a file no record names, a path out of the tree: as they are.
        let hand = String::from_utf8(claude.clone()).expect("utf-8").replace("platform", "hardware");
        assert_eq!(clean(top.path(), "service/CLAUDE.md", hand.as_bytes()), hand.as_bytes());
        assert_eq!(clean(top.path(), "CLAUDE.md", &claude), claude);
        assert_eq!(clean(top.path(), "service/../service/CLAUDE.md", &claude), claude);
        assert_eq!(clean(top.path(), "", &claude), claude);
    }

    #[test]
    fn config_values_are_read_as_git_reads_them() {
        assert_eq!(config_value(" '/a b/acompose' git-clean %f "), "'/a b/acompose' git-clean %f");
        assert_eq!(config_value("\"'/a;b' x\" # note"), "'/a;b' x");
        assert!(is_filter_section("filter \"acompose\""));
        assert!(is_filter_section("FILTER.acompose"));
        assert!(!is_filter_section("filter \"lfs\""));
    }
}
