//! A role's MCP servers added to a harness file of the user's as text of their own: the
//! user's bytes are never rewritten, the entries go in as one piece of text (after the
//! opening brace of the servers' object in JSON, as tables at the end in TOML), and that
//! exact text, kept in the projection record, is what taking them out removes. So the
//! user's file comes back byte for byte, and git's clean filter can show git the file
//! without the role's servers while the projection stands. Reads and writes no file.

use serde::Serialize as _;
use serde_json::Value;

use super::McpServer;
use super::harness_config::{
    self, McpPlaces, MergeProblem, is_toml, json_entry, json_problem, toml_entry, toml_problem,
};

/// The user's file with the servers in it, and the exact text that was inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spliced {
    pub bytes: Vec<u8>,
    pub inserted: String,
}

/// `existing` (the user's file) with `servers` inserted as text of their own. A server of
/// the user's with the name of one of `servers` is refused, and so is a file the harness
/// could not read or whose servers' key is not a table.
pub fn spliced(
    path: &str,
    existing: &[u8],
    places: &McpPlaces,
    servers: &[McpServer],
) -> Result<Spliced, MergeProblem> {
    let text = std::str::from_utf8(existing).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    let (at, inserted) =
        if is_toml(path) { toml_insertion(text, places, servers)? } else { json_insertion(text, places, servers)? };
    let mut bytes = Vec::with_capacity(existing.len() + inserted.len());
    bytes.extend_from_slice(&existing[..at]);
    bytes.extend_from_slice(inserted.as_bytes());
    bytes.extend_from_slice(&existing[at..]);
    // Read back as the harness reads it: the user's servers and the role's, nothing else.
    let before =
        if text.trim().is_empty() { Vec::new() } else { harness_config::configured(path, existing, places.key)? };
    let after = harness_config::configured(path, &bytes, places.key).map_err(|_| MergeProblem::Unplaceable)?;
    let mut expected: Vec<&str> =
        before.iter().map(String::as_str).chain(servers.iter().map(|s| s.name.as_str())).collect();
    let mut found: Vec<&str> = after.iter().map(String::as_str).collect();
    expected.sort_unstable();
    found.sort_unstable();
    if expected != found {
        return Err(MergeProblem::Unplaceable);
    }
    Ok(Spliced { bytes, inserted })
}

/// `existing` without `inserted`: the user's own bytes. `None` when the inserted text is
/// not there exactly once (taken out, or edited by hand).
pub fn unspliced(existing: &[u8], inserted: &str) -> Option<Vec<u8>> {
    let needle = inserted.as_bytes();
    if needle.is_empty() {
        return None;
    }
    let first = position(existing, needle)?;
    if position(&existing[first + 1..], needle).is_some() {
        return None;
    }
    let mut bytes = Vec::with_capacity(existing.len() - needle.len());
    bytes.extend_from_slice(&existing[..first]);
    bytes.extend_from_slice(&existing[first + needle.len()..]);
    Some(bytes)
}

fn position(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// Where the TOML tables go (the end of the file) and their text, after a blank line.
fn toml_insertion(text: &str, places: &McpPlaces, servers: &[McpServer]) -> Result<(usize, String), MergeProblem> {
    let document: toml_edit::DocumentMut =
        text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
    if let Some(item) = document.get(places.key) {
        let table = item.as_table_like().ok_or(MergeProblem::NotATable)?;
        if let Some(server) = servers.iter().find(|server| table.contains_key(&server.name)) {
            return Err(MergeProblem::Taken(server.name.clone()));
        }
        if item.is_inline_table() {
            return Err(MergeProblem::Unplaceable);
        }
    }
    let mut ours = toml_edit::DocumentMut::new();
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    for server in servers {
        table.insert(&server.name, toml_edit::Item::Table(toml_entry(places.shape, server)));
    }
    ours.insert(places.key, toml_edit::Item::Table(table));
    let separator = match text {
        "" => "",
        _ if text.ends_with('\n') => "\n",
        _ => "\n\n",
    };
    Ok((text.len(), format!("{separator}{ours}")))
}

/// Where the JSON entries go (first in the servers' object, or a new servers' member
/// first in the file's object) and their text, indented as the file is.
fn json_insertion(text: &str, places: &McpPlaces, servers: &[McpServer]) -> Result<(usize, String), MergeProblem> {
    let entries = |indent: &Indent| -> Vec<String> {
        servers
            .iter()
            .map(|server| format!("{}: {}", json_string(&server.name), indent.value(&json_entry(places.shape, server))))
            .collect()
    };
    if text.trim().is_empty() {
        let indent = Indent { line: Some("  ".to_owned()), unit: "  ".to_owned() };
        let inner = Indent { line: Some("    ".to_owned()), unit: "  ".to_owned() };
        let members = entries(&inner).join(",\n    ");
        return Ok((0, format!("{{\n{}{}: {{\n    {members}\n  }}\n}}\n", indent.prefix(), json_string(places.key))));
    }
    let document: Value = serde_json::from_str(text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?;
    let root = document.as_object().ok_or(MergeProblem::NotATable)?;
    if let Some(table) = root.get(places.key) {
        let table = table.as_object().ok_or(MergeProblem::NotATable)?;
        if let Some(server) = servers.iter().find(|server| table.contains_key(&server.name)) {
            return Err(MergeProblem::Taken(server.name.clone()));
        }
    }
    let bytes = text.as_bytes();
    let unreadable = || MergeProblem::Unreadable("not JSON".to_owned());
    let open = skip_whitespace(bytes, 0);
    let members = object_members(bytes, open).ok_or_else(unreadable)?;
    let root_indent = Indent::of_object(bytes, members.first(), "", None);
    match members.iter().rev().find(|member| member.key == places.key) {
        Some(member) => {
            let inner = object_members(bytes, member.value_start).ok_or_else(unreadable)?;
            let outer = line_indent(bytes, member.key_start).unwrap_or_default();
            let indent = Indent::of_object(bytes, inner.first(), &outer, Some(&root_indent));
            Ok((member.value_start + 1, indent.insertion(&entries(&indent), !inner.is_empty(), &outer)))
        }
        None => {
            let inner = root_indent.nested();
            let servers = inner.insertion(&entries(&inner), false, root_indent.prefix());
            let member = format!("{}: {{{servers}}}", json_string(places.key));
            Ok((open + 1, root_indent.insertion(&[member], !members.is_empty(), "")))
        }
    }
}

/// How the members of one JSON object are laid out: each on its own line with this
/// indentation, or all on one line (`line` is `None`); `unit` is one level more.
struct Indent {
    line: Option<String>,
    unit: String,
}

impl Indent {
    /// The layout of an object whose first member is `first`, inside
    /// a line indented by `outer`. An empty object is laid out on lines when its parent
    /// is (the file's own object always is).
    fn of_object(bytes: &[u8], first: Option<&Member>, outer: &str, parent: Option<&Indent>) -> Indent {
        let unit = parent.map_or_else(
            || first.and_then(|member| line_indent(bytes, member.key_start)).filter(|unit| !unit.is_empty()),
            |parent| Some(parent.unit.clone()),
        );
        let unit = unit.unwrap_or_else(|| "  ".to_owned());
        let line = match first {
            Some(member) => line_indent(bytes, member.key_start),
            None if parent.is_none_or(|parent| parent.line.is_some()) => Some(format!("{outer}{unit}")),
            None => None,
        };
        Indent { line, unit }
    }

    /// The layout of an object one level deeper.
    fn nested(&self) -> Indent {
        Indent { line: self.line.as_ref().map(|line| format!("{line}{}", self.unit)), unit: self.unit.clone() }
    }

    fn prefix(&self) -> &str {
        self.line.as_deref().unwrap_or_default()
    }

    /// A value in this layout: pretty, its later lines indented to the member's line, or
    /// on one line.
    fn value(&self, value: &Value) -> String {
        let Some(line) = &self.line else { return value.to_string() };
        let mut bytes = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
        // Serializing a `Value` into memory cannot fail.
        let _ = value.serialize(&mut serializer);
        String::from_utf8_lossy(&bytes).replace('\n', &format!("\n{line}"))
    }

    /// The text that puts `members` first in an object (before the members it has when
    /// `before_others`), right after its opening brace; `outer` indents its closing line.
    fn insertion(&self, members: &[String], before_others: bool, outer: &str) -> String {
        match &self.line {
            Some(line) => {
                let joined = members.join(&format!(",\n{line}"));
                if before_others { format!("\n{line}{joined},") } else { format!("\n{line}{joined}\n{outer}") }
            }
            None => {
                let joined = members.join(", ");
                if before_others { format!("{joined}, ") } else { joined }
            }
        }
    }
}

fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// One member of a JSON object: its key and where its key and value begin.
struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
}

/// The members of the object opening at `open`, in order; `None` when the text there is
/// not an object (the caller has already parsed the whole text).
fn object_members(bytes: &[u8], open: usize) -> Option<Vec<Member>> {
    if bytes.get(open) != Some(&b'{') {
        return None;
    }
    let mut members = Vec::new();
    let mut at = skip_whitespace(bytes, open + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(members);
    }
    loop {
        let key_end = string_end(bytes, at)?;
        let key: String = serde_json::from_slice(&bytes[at..key_end]).ok()?;
        let colon = skip_whitespace(bytes, key_end);
        if bytes.get(colon) != Some(&b':') {
            return None;
        }
        let value_start = skip_whitespace(bytes, colon + 1);
        members.push(Member { key, key_start: at, value_start });
        at = skip_whitespace(bytes, value_end(bytes, value_start)?);
        match bytes.get(at) {
            Some(b',') => at = skip_whitespace(bytes, at + 1),
            Some(b'}') => return Some(members),
            _ => return None,
        }
    }
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// Just past the string opening at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut index = at + 1;
    while let Some(byte) = bytes.get(index) {
        match byte {
            b'\\' => index += 2,
            b'"' => return Some(index + 1),
            _ => index += 1,
        }
    }
    None
}

/// Just past the value starting at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut index = at;
            while let Some(byte) = bytes.get(index) {
                match byte {
                    b'"' => {
                        index = string_end(bytes, index)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(index + 1);
                        }
                    }
                    _ => {}
                }
                index += 1;
            }
            None
        }
        _ => {
            let mut index = at;
            while bytes
                .get(index)
                .is_some_and(|byte| !matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                index += 1;
            }
            Some(index)
        }
    }
}

/// The spaces and tabs before `at` when nothing else is before it on its line.
fn line_indent(bytes: &[u8], at: usize) -> Option<String> {
    let start = bytes[..at].iter().rposition(|byte| !matches!(byte, b' ' | b'\t')).map_or(0, |index| index + 1);
    let at_line_start = start == 0 || bytes[start - 1] == b'\n';
    at_line_start.then(|| String::from_utf8_lossy(&bytes[start..at]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::super::Transport;
    use super::super::harness_config::Shape;
    use super::*;

    fn server(name: &str) -> McpServer {
        McpServer {
            name: name.to_owned(),
            transport: Transport::Stdio,
            command: Some("run-server".to_owned()),
            args: vec!["--quiet".to_owned()],
            url: None,
            env: vec!["SERVER_TOKEN".to_owned()],
            headers: Vec::new(),
        }
    }

    const CLAUDE: McpPlaces = McpPlaces {
        repository: ".mcp.json",
        home: ".claude.json",
        launch: ".claude/.claude.json",
        key: "mcpServers",
        shape: Shape::Claude,
    };
    const CODEX: McpPlaces = McpPlaces {
        repository: ".codex/config.toml",
        home: ".codex/config.toml",
        launch: ".codex/config.toml",
        key: "mcp_servers",
        shape: Shape::Codex,
    };

    /// Splices two servers in, checks what the harness reads, and takes them out again.
    fn round_trip(path: &str, places: &McpPlaces, user: &str) -> String {
        let servers = [server("ours"), server("also-ours")];
        let spliced = spliced(path, user.as_bytes(), places, &servers).expect("spliced");
        let text = String::from_utf8(spliced.bytes.clone()).expect("utf-8");
        let names = harness_config::configured(path, &spliced.bytes, places.key).expect("readable");
        for name in ["ours", "also-ours"] {
            assert!(names.iter().any(|listed| listed == name), "{name} in {text}");
        }
        assert_eq!(unspliced(&spliced.bytes, &spliced.inserted).expect("found once"), user.as_bytes(), "{text}");
        text
    }

    #[test]
    fn json_entries_go_in_and_come_out_byte_for_byte_in_every_layout() {
        let pretty =
            "{\n    \"theme\": \"dark\",\n    \"mcpServers\": {\n        \"mine\": {\"command\": \"x\"}\n    }\n}\n";
        let text = round_trip(".mcp.json", &CLAUDE, pretty);
        assert!(text.contains("\n        \"ours\": {\n            \"type\": \"stdio\","), "{text}");
        assert!(text.contains("},\n        \"mine\""), "{text}");
        round_trip(".mcp.json", &CLAUDE, "{\"mcpServers\":{\"mine\":{\"command\":\"x\"}}}");
        round_trip(".mcp.json", &CLAUDE, "{\n\t\"mcpServers\": {}\n}");
        let without_key = round_trip(".mcp.json", &CLAUDE, "{\n  \"theme\": \"dark\"\n}\n");
        assert!(without_key.starts_with("{\n  \"mcpServers\": {\n    \"ours\": {\n      \"type\""), "{without_key}");
        round_trip(".mcp.json", &CLAUDE, "{}");
        round_trip(".mcp.json", &CLAUDE, "");
        round_trip(".mcp.json", &CLAUDE, "{ \"a\": [1, {\"b\": \"}\"}], \"mcpServers\": { } }");
    }

    #[test]
    fn toml_tables_go_at_the_end_and_come_out_byte_for_byte() {
        let text =
            round_trip(".codex/config.toml", &CODEX, "# mine\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"x\"\n");
        assert!(text.ends_with("[mcp_servers.also-ours]\ncommand = \"run-server\"\nargs = [\"--quiet\"]\nenv_vars = [\"SERVER_TOKEN\"]\n"), "{text}");
        round_trip(".codex/config.toml", &CODEX, "model = \"o3\"");
        round_trip(".codex/config.toml", &CODEX, "");
        let inline = "mcp_servers = { mine = { command = \"x\" } }\n";
        assert_eq!(
            spliced("config.toml", inline.as_bytes(), &CODEX, &[server("ours")]),
            Err(MergeProblem::Unplaceable)
        );
    }

    #[test]
    fn a_name_the_user_has_and_text_edited_by_hand_are_told() {
        let user = "{\"mcpServers\": {\"ours\": {}}}";
        assert_eq!(
            spliced(".mcp.json", user.as_bytes(), &CLAUDE, &[server("ours")]),
            Err(MergeProblem::Taken("ours".into()))
        );
        let spliced = spliced(".mcp.json", b"{}", &CLAUDE, &[server("ours")]).expect("spliced");
        let edited = String::from_utf8(spliced.bytes).expect("utf-8").replace("--quiet", "--loud");
        assert_eq!(unspliced(edited.as_bytes(), &spliced.inserted), None);
        let twice = format!("{}{}", spliced.inserted, spliced.inserted);
        assert_eq!(unspliced(twice.as_bytes(), &spliced.inserted), None);
    }
}
