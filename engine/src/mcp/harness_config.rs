//! A role's MCP servers in a harness's own configuration file: the entry each harness
//! expects for a server (its `shape`, named by the layout row), a file of the
//! projection's own holding only them, and the same servers merged into a file of the
//! user's — its other keys and its other servers kept — and taken out of it again.
//! Reads and writes no file: the driver hands in the bytes it read.
//!
//! JSON files keep their keys' order and are written back with two-space indentation;
//! TOML files (Codex's `config.toml`) are edited with `toml_edit`, which keeps the
//! user's comments and formatting outside the tables it changes.

use serde_json::{Map, Value, json};

use super::{McpServer, Transport};

/// The entry shape a harness reads for one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Claude Code (`.mcp.json`, `.claude.json`): `type`, `command`, `args`, `env` with
    /// `${VAR}` references, or `url`.
    Claude,
    /// Gemini CLI (`settings.json`): `command`, `args`, `env` with `$VAR` references, or
    /// `httpUrl` (streamable HTTP) and `url` (SSE).
    Gemini,
    /// OpenCode (`opencode.json`): `type` `local` with `command` as one list and
    /// `environment` with `{env:VAR}` references, or `remote` with `url`.
    OpenCode,
    /// Codex (`config.toml`): `[mcp_servers.NAME]` with `command`, `args` and
    /// `env_vars` (the names it passes through), or `url`.
    Codex,
}

impl Shape {
    pub fn parse(text: &str) -> Option<Shape> {
        match text {
            "claude" => Some(Shape::Claude),
            "gemini" => Some(Shape::Gemini),
            "opencode" => Some(Shape::OpenCode),
            "codex" => Some(Shape::Codex),
            _ => None,
        }
    }
}

/// Where one harness reads MCP servers: its files per scope, the key holding the
/// servers, and the shape of each entry. A row of `layouts.kdl` (`mcp …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpPlaces {
    /// Relative to a repository checkout; `""` when the harness reads none there.
    pub repository: &'static str,
    /// Relative to a home.
    pub home: &'static str,
    /// Relative to a launch's runtime home, with the harness's configuration folder
    /// moved there (Claude Code reads `.claude.json` inside `CLAUDE_CONFIG_DIR`).
    pub launch: &'static str,
    pub key: &'static str,
    pub shape: Shape,
}

/// Why a file of the user's cannot take the servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeProblem {
    /// The file does not parse (the reason names no value of it).
    Unreadable(String),
    /// The key holding the servers, or the file itself, is not a table.
    NotATable,
    /// The user's own configuration already has a server of this name.
    Taken(String),
    /// The servers cannot be added as text of their own without rewriting the user's
    /// (the key is a TOML inline table).
    Unplaceable,
}

impl MergeProblem {
    pub fn message(&self, path: &str, key: &str) -> String {
        match self {
            MergeProblem::Unreadable(reason) => format!("`{path}` cannot be read as its harness reads it: {reason}"),
            MergeProblem::NotATable => format!("`{path}` has a `{key}` that is not a table of servers"),
            MergeProblem::Taken(name) => format!(
                "`{path}` already configures an MCP server `{name}` of your own; rename one of the two, or remove yours"
            ),
            MergeProblem::Unplaceable => format!(
                "`{path}` keeps its `{key}` in a form acompose cannot add servers to without rewriting your text (an inline table); write each server as a `[{key}.NAME]` table"
            ),
        }
    }
}

pub(super) fn is_toml(path: &str) -> bool {
    path.ends_with(".toml")
}

/// The JSON entry of one server in a harness's shape.
pub(super) fn json_entry(shape: Shape, server: &McpServer) -> Value {
    let command = server.command.clone().unwrap_or_default();
    let url = server.url.clone().unwrap_or_default();
    let variables = |reference: &dyn Fn(&str) -> String| -> Map<String, Value> {
        server.env.iter().map(|name| (name.clone(), Value::String(reference(name)))).collect()
    };
    let mut entry = match (shape, server.transport) {
        (Shape::Claude, Transport::Stdio) => json!({"type": "stdio", "command": command, "args": server.args}),
        (Shape::Claude, transport) => json!({"type": transport.name(), "url": url}),
        (Shape::Gemini, Transport::Stdio) => json!({"command": command, "args": server.args}),
        (Shape::Gemini, Transport::Http) => json!({"httpUrl": url}),
        (Shape::Gemini, Transport::Sse) => json!({"url": url}),
        (Shape::OpenCode, Transport::Stdio) => {
            let words: Vec<String> = std::iter::once(command).chain(server.args.iter().cloned()).collect();
            json!({"type": "local", "command": words, "enabled": true})
        }
        (Shape::OpenCode, _) => json!({"type": "remote", "url": url, "enabled": true}),
        (Shape::Codex, Transport::Stdio) => json!({"command": command, "args": server.args}),
        (Shape::Codex, _) => json!({"url": url}),
    };
    if server.transport != Transport::Stdio {
        if !server.headers.is_empty()
            && let Some(object) = entry.as_object_mut()
        {
            for (field, value) in header_fields(shape, &server.headers) {
                object.insert(field.to_owned(), value);
            }
        }
        return entry;
    }
    if server.env.is_empty() {
        return entry;
    }
    let (field, references) = match shape {
        Shape::Claude => ("env", variables(&|name| format!("${{{name}}}"))),
        Shape::Gemini => ("env", variables(&|name| format!("${name}"))),
        Shape::OpenCode => ("environment", variables(&|name| format!("{{env:{name}}}"))),
        Shape::Codex => {
            let names: Vec<Value> = server.env.iter().map(|name| Value::String(name.clone())).collect();
            ("env_vars", Map::from_iter([("list".to_owned(), Value::Array(names))]))
        }
    };
    if let Some(object) = entry.as_object_mut() {
        let value = match shape {
            Shape::Codex => references.get("list").cloned().unwrap_or(Value::Null),
            _ => Value::Object(references),
        };
        object.insert(field.to_owned(), value);
    }
    entry
}

/// A remote server's headers in a harness's shape: each value a reference to its
/// variable that the harness expands when it starts (`${VAR}` for Claude Code, `$VAR`
/// for Gemini CLI, `{env:VAR}` for OpenCode), or for Codex the variables by name
/// (`bearer_token_env_var` for `Authorization: Bearer`, `env_http_headers` for the rest).
fn header_fields(shape: Shape, headers: &[crate::mcp::McpHeader]) -> Vec<(&'static str, Value)> {
    let value = |header: &crate::mcp::McpHeader, reference: String| match &header.scheme {
        Some(scheme) => format!("{scheme} {reference}"),
        None => reference,
    };
    let map = |reference: &dyn Fn(&str) -> String| -> Value {
        Value::Object(
            headers
                .iter()
                .map(|header| (header.name.clone(), Value::String(value(header, reference(&header.env)))))
                .collect(),
        )
    };
    match shape {
        Shape::Claude => vec![("headers", map(&|name| format!("${{{name}}}")))],
        Shape::Gemini => vec![("headers", map(&|name| format!("${name}")))],
        Shape::OpenCode => vec![("headers", map(&|name| format!("{{env:{name}}}")))],
        Shape::Codex => {
            let mut fields = Vec::new();
            if let Some(bearer) = headers.iter().find(|header| header.is_bearer()) {
                fields.push(("bearer_token_env_var", Value::String(bearer.env.clone())));
            }
            let others: Map<String, Value> = headers
                .iter()
                .filter(|header| !header.is_bearer())
                .map(|header| (header.name.clone(), Value::String(header.env.clone())))
                .collect();
            if !others.is_empty() {
                fields.push(("env_http_headers", Value::Object(others)));
            }
            fields
        }
    }
}

/// A file of the projection's own: the key with exactly `servers`.
pub fn owned_file(path: &str, places: &McpPlaces, servers: &[McpServer]) -> Vec<u8> {
    let empty: &[u8] = if is_toml(path) { b"" } else { b"{}" };
    // A file built from nothing always parses and is a table.
    merged(path, empty, places, servers, &[]).unwrap_or_default()
}

/// The user's file `existing` with `servers` in its key, after taking out `previous`
/// (the servers an earlier projection put there). Every other key and server is kept; a
/// server of the user's with the name of one of `servers` is refused.
pub fn merged(
    path: &str,
    existing: &[u8],
    places: &McpPlaces,
    servers: &[McpServer],
    previous: &[String],
) -> Result<Vec<u8>, MergeProblem> {
    let text = std::str::from_utf8(existing).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    if is_toml(path) {
        return merged_toml(text, places, servers, previous);
    }
    let mut document: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?
    };
    let root = document.as_object_mut().ok_or(MergeProblem::NotATable)?;
    let table = root.entry(places.key.to_owned()).or_insert_with(|| Value::Object(Map::new()));
    let table = table.as_object_mut().ok_or(MergeProblem::NotATable)?;
    for name in previous {
        table.remove(name);
    }
    for server in servers {
        if table.contains_key(&server.name) {
            return Err(MergeProblem::Taken(server.name.clone()));
        }
        table.insert(server.name.clone(), json_entry(places.shape, server));
    }
    Ok(json_bytes(&document))
}

/// The user's file `existing` (empty when there is none) with exactly `servers` under
/// the key, every other key kept: what a launch's runtime home holds, so the harness sees
/// the role's servers and none of the user's own. Returns the bytes and the names of the
/// user's servers it leaves out.
pub fn exactly(
    path: &str,
    existing: &[u8],
    places: &McpPlaces,
    servers: &[McpServer],
) -> Result<(Vec<u8>, Vec<String>), MergeProblem> {
    let own = if existing.is_empty() { Vec::new() } else { configured(path, existing, places.key)? };
    let base = if existing.is_empty() {
        if is_toml(path) { Vec::new() } else { b"{}".to_vec() }
    } else {
        without(path, existing, places, &own, true)?
    };
    let bytes = if servers.is_empty() { base } else { merged(path, &base, places, servers, &[])? };
    let hidden = own.into_iter().filter(|name| !servers.iter().any(|server| server.name == *name)).collect();
    Ok((bytes, hidden))
}

/// The user's file without `names` (the servers a projection put there); the key goes
/// too when nothing is left in it and `remove_empty_key`.
pub fn without(
    path: &str,
    existing: &[u8],
    places: &McpPlaces,
    names: &[String],
    remove_empty_key: bool,
) -> Result<Vec<u8>, MergeProblem> {
    let text = std::str::from_utf8(existing).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    if is_toml(path) {
        let mut document: toml_edit::DocumentMut =
            text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
        let emptied = match document.get_mut(places.key).and_then(toml_edit::Item::as_table_like_mut) {
            Some(table) => {
                for name in names {
                    table.remove(name);
                }
                table.is_empty()
            }
            None => false,
        };
        if emptied && remove_empty_key {
            document.remove(places.key);
        }
        return Ok(document.to_string().into_bytes());
    }
    let mut document: Value =
        serde_json::from_str(text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?;
    let root = document.as_object_mut().ok_or(MergeProblem::NotATable)?;
    let emptied = match root.get_mut(places.key).and_then(Value::as_object_mut) {
        Some(table) => {
            for name in names {
                table.remove(name);
            }
            table.is_empty()
        }
        None => false,
    };
    if emptied && remove_empty_key {
        root.remove(places.key);
    }
    Ok(json_bytes(&document))
}

/// The names of the servers a harness file configures under the key (for the launch
/// review and tests), in file order.
pub fn configured(path: &str, existing: &[u8], key: &str) -> Result<Vec<String>, MergeProblem> {
    let text = std::str::from_utf8(existing).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    if is_toml(path) {
        let document: toml_edit::DocumentMut =
            text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
        return Ok(document
            .get(key)
            .and_then(toml_edit::Item::as_table_like)
            .map(|table| table.iter().map(|(name, _)| name.to_owned()).collect())
            .unwrap_or_default());
    }
    let document: Value = serde_json::from_str(text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?;
    Ok(document.get(key).and_then(Value::as_object).map(|table| table.keys().cloned().collect()).unwrap_or_default())
}

/// Whether the file has the key at all (a file that does not parse has none).
pub fn has_key(path: &str, existing: &[u8], key: &str) -> bool {
    let Ok(text) = std::str::from_utf8(existing) else { return false };
    if is_toml(path) {
        return text.parse::<toml_edit::DocumentMut>().is_ok_and(|document| document.contains_key(key));
    }
    serde_json::from_str::<Value>(text).is_ok_and(|document| document.get(key).is_some())
}

fn merged_toml(
    text: &str,
    places: &McpPlaces,
    servers: &[McpServer],
    previous: &[String],
) -> Result<Vec<u8>, MergeProblem> {
    let mut document: toml_edit::DocumentMut =
        text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
    let item = document.entry(places.key).or_insert_with(|| {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        toml_edit::Item::Table(table)
    });
    let table = item.as_table_like_mut().ok_or(MergeProblem::NotATable)?;
    for name in previous {
        table.remove(name);
    }
    for server in servers {
        if table.contains_key(&server.name) {
            return Err(MergeProblem::Taken(server.name.clone()));
        }
        table.insert(&server.name, toml_edit::Item::Table(toml_entry(places.shape, server)));
    }
    Ok(document.to_string().into_bytes())
}

/// One server as a TOML table, from its JSON entry (strings and lists of strings).
pub(super) fn toml_entry(shape: Shape, server: &McpServer) -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    if let Value::Object(fields) = json_entry(shape, server) {
        for (field, value) in fields {
            let value: toml_edit::Value = match value {
                Value::String(text) => text.into(),
                Value::Bool(flag) => flag.into(),
                Value::Array(items) => items.iter().filter_map(Value::as_str).collect::<toml_edit::Array>().into(),
                Value::Object(entries) => {
                    let mut inline = toml_edit::InlineTable::new();
                    for (key, text) in entries.iter().filter_map(|(key, value)| Some((key, value.as_str()?))) {
                        inline.insert(key, text.into());
                    }
                    inline.into()
                }
                _ => continue,
            };
            table.insert(&field, toml_edit::value(value));
        }
    }
    table
}

/// A digest of each top-level key's value of a harness file but `key` (the servers):
/// what a launch's copy held when it was written, to tell later which keys the harness
/// changed. Digests only: no value of the file is kept.
pub fn key_digests(
    path: &str,
    bytes: &[u8],
    key: &str,
) -> Result<std::collections::BTreeMap<String, String>, MergeProblem> {
    let digest = |text: &str| blake3::hash(text.as_bytes()).to_hex()[..32].to_owned();
    let text = std::str::from_utf8(bytes).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    if is_toml(path) {
        let document: toml_edit::DocumentMut =
            text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
        return Ok(document
            .iter()
            .filter(|(name, _)| *name != key)
            .map(|(name, item)| (name.to_owned(), digest(&item.to_string())))
            .collect());
    }
    let document: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?
    };
    let root = document.as_object().ok_or(MergeProblem::NotATable)?;
    Ok(root
        .iter()
        .filter(|(name, _)| *name != key)
        .map(|(name, value)| (name.clone(), digest(&value.to_string())))
        .collect())
}

/// The user's file `user` (empty when there is none) with what the harness changed in
/// its launch copy `copy` since it was written (`written`, from [`key_digests`]): each
/// top-level key but `key` whose value differs from what was written is set (or
/// removed) in the user's file, every other key of the user's kept as it is. `None`
/// when the harness changed nothing.
pub fn carried_back(
    path: &str,
    user: &[u8],
    copy: &[u8],
    written: &std::collections::BTreeMap<String, String>,
    key: &str,
) -> Result<Option<Vec<u8>>, MergeProblem> {
    let now = key_digests(path, copy, key)?;
    let changed: Vec<&String> =
        now.keys().chain(written.keys()).filter(|name| now.get(*name) != written.get(*name)).collect();
    if changed.is_empty() {
        return Ok(None);
    }
    let copy_text = std::str::from_utf8(copy).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    let user_text = std::str::from_utf8(user).map_err(|_| MergeProblem::Unreadable("not UTF-8".to_owned()))?;
    if is_toml(path) {
        let from: toml_edit::DocumentMut =
            copy_text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
        let mut into: toml_edit::DocumentMut =
            user_text.parse().map_err(|error: toml_edit::TomlError| MergeProblem::Unreadable(toml_problem(&error)))?;
        for name in changed {
            match from.get(name) {
                Some(item) => {
                    into.insert(name, item.clone());
                }
                None => {
                    into.remove(name);
                }
            }
        }
        return Ok(Some(into.to_string().into_bytes()));
    }
    let from: Value =
        serde_json::from_str(copy_text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?;
    let mut into: Value = if user_text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(user_text).map_err(|error| MergeProblem::Unreadable(json_problem(&error)))?
    };
    let into_root = into.as_object_mut().ok_or(MergeProblem::NotATable)?;
    for name in changed {
        match from.get(name) {
            Some(value) => {
                into_root.insert(name.clone(), value.clone());
            }
            None => {
                into_root.remove(name);
            }
        }
    }
    Ok(Some(json_bytes(&into)))
}

/// A JSON parse problem by line and column, never quoting the file.
pub(super) fn json_problem(error: &serde_json::Error) -> String {
    format!("not JSON at line {}, column {}", error.line(), error.column())
}

/// A TOML parse problem by position, never quoting the file.
pub(super) fn toml_problem(error: &toml_edit::TomlError) -> String {
    match error.span() {
        Some(span) => format!("not TOML at byte {}", span.start),
        None => "not TOML".to_owned(),
    }
}

fn json_bytes(document: &Value) -> Vec<u8> {
    // Serializing a `Value` into memory cannot fail.
    let mut bytes = serde_json::to_vec_pretty(document).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
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

    fn remote(name: &str) -> McpServer {
        McpServer {
            name: name.to_owned(),
            transport: Transport::Http,
            command: None,
            args: Vec::new(),
            url: Some("https://mcp.example.com/".to_owned()),
            env: Vec::new(),
            headers: vec![
                crate::mcp::McpHeader {
                    name: "Authorization".to_owned(),
                    env: "SERVICE_TOKEN".to_owned(),
                    scheme: Some("Bearer".to_owned()),
                },
                crate::mcp::McpHeader { name: "X-Team".to_owned(), env: "TEAM_ID".to_owned(), scheme: None },
            ],
        }
    }

    #[test]
    fn a_remote_servers_headers_reach_every_harness_as_references_to_their_variables() {
        let claude = String::from_utf8(owned_file(".mcp.json", &CLAUDE, &[remote("svc")])).unwrap();
        assert!(claude.contains("\"Authorization\": \"Bearer ${SERVICE_TOKEN}\""), "{claude}");
        assert!(claude.contains("\"X-Team\": \"${TEAM_ID}\""), "{claude}");
        let codex = String::from_utf8(owned_file(".codex/config.toml", &CODEX, &[remote("svc")])).unwrap();
        assert!(codex.contains("bearer_token_env_var = \"SERVICE_TOKEN\""), "{codex}");
        assert!(codex.contains("env_http_headers = { X-Team = \"TEAM_ID\" }"), "{codex}");
        for (shape, expected) in
            [(Shape::Gemini, "\"Bearer $SERVICE_TOKEN\""), (Shape::OpenCode, "\"Bearer {env:SERVICE_TOKEN}\"")]
        {
            let entry = json_entry(shape, &remote("svc")).to_string();
            assert!(entry.contains(expected), "{entry}");
        }
        // No header, no field: an entry without headers is as before.
        let plain = McpServer { headers: Vec::new(), ..remote("svc") };
        assert!(!json_entry(Shape::Claude, &plain).to_string().contains("headers"));
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

    #[test]
    fn a_launch_file_holds_exactly_the_roles_servers_and_names_the_hidden_ones() {
        let user = br#"{"numStartups": 3, "mcpServers": {"mine": {"command": "x"}, "ours": {"command": "y"}}}"#;
        let (bytes, hidden) = exactly(".claude.json", user, &CLAUDE, &[server("ours")]).unwrap();
        assert_eq!(configured(".claude.json", &bytes, "mcpServers").unwrap(), ["ours"]);
        assert_eq!(hidden, ["mine"]);
        assert!(String::from_utf8(bytes).unwrap().contains("\"numStartups\": 3"));
        let toml = b"model = \"o3\"\n[mcp_servers.mine]\ncommand = \"x\"\n";
        let (bytes, hidden) = exactly("config.toml", toml, &CODEX, &[]).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), "model = \"o3\"\n");
        assert_eq!(hidden, ["mine"]);
    }

    #[test]
    fn json_merge_keeps_the_users_keys_and_servers_and_takes_back_its_own() {
        let user = br#"{"theme": "dark", "mcpServers": {"mine": {"command": "x"}}}"#;
        let with = merged(".mcp.json", user, &CLAUDE, &[server("ours")], &[]).unwrap();
        let text = String::from_utf8(with.clone()).unwrap();
        assert!(text.find("theme").unwrap() < text.find("mcpServers").unwrap());
        assert!(text.contains("\"${SERVER_TOKEN}\""));
        assert_eq!(configured(".mcp.json", &with, "mcpServers").unwrap(), ["mine", "ours"]);
        let back = without(".mcp.json", &with, &CLAUDE, &["ours".to_owned()], false).unwrap();
        assert_eq!(configured(".mcp.json", &back, "mcpServers").unwrap(), ["mine"]);
        assert_eq!(merged(".mcp.json", user, &CLAUDE, &[server("mine")], &[]), Err(MergeProblem::Taken("mine".into())));
    }

    #[test]
    fn toml_merge_keeps_comments_and_other_tables() {
        let user = b"# my settings\nmodel = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"x\"\n";
        let with = merged("config.toml", user, &CODEX, &[server("ours")], &[]).unwrap();
        let text = String::from_utf8(with.clone()).unwrap();
        assert!(text.starts_with("# my settings\nmodel = \"o3\"\n"), "{text}");
        assert!(text.contains("[mcp_servers.ours]"), "{text}");
        assert!(text.contains("env_vars = [\"SERVER_TOKEN\"]"), "{text}");
        let back = without("config.toml", &with, &CODEX, &["ours".to_owned()], false).unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), String::from_utf8(user.to_vec()).unwrap());
    }

    #[test]
    fn what_the_harness_changed_in_a_launch_copy_goes_back_to_the_users_file_and_nothing_else() {
        let places = McpPlaces {
            repository: ".mcp.json",
            home: ".claude.json",
            launch: ".claude/.claude.json",
            key: "mcpServers",
            shape: Shape::Claude,
        };
        let user = br#"{"numStartups": 1, "theme": "dark", "mcpServers": {"mine": {"command": "x"}}}"#;
        let (copy, _) = exactly(".claude.json", user, &places, &[server("role-server")]).expect("copy");
        let written = key_digests(".claude.json", &copy, "mcpServers").expect("digests");
        assert!(!written.contains_key("mcpServers"));
        assert_eq!(carried_back(".claude.json", user, &copy, &written, "mcpServers"), Ok(None));
        // The harness trusts a folder, counts a start and drops the theme; meanwhile the
        // user changed a key of their own directly.
        let mut harness: Value = serde_json::from_slice(&copy).expect("json");
        harness["projects"] = json!({"/work": {"hasTrustDialogAccepted": true}});
        harness["numStartups"] = json!(2);
        harness.as_object_mut().expect("object").remove("theme");
        let harness = json_bytes(&harness);
        let user_now =
            br#"{"numStartups": 1, "theme": "dark", "editor": "vim", "mcpServers": {"mine": {"command": "x"}}}"#;
        let back =
            carried_back(".claude.json", user_now, &harness, &written, "mcpServers").expect("merge").expect("changed");
        let back: Value = serde_json::from_slice(&back).expect("json");
        assert_eq!(back["projects"]["/work"]["hasTrustDialogAccepted"], json!(true));
        assert_eq!(back["numStartups"], json!(2));
        assert_eq!(back.get("theme"), None);
        assert_eq!(back["editor"], json!("vim"), "the user's own change stays");
        assert_eq!(back["mcpServers"], json!({"mine": {"command": "x"}}), "the role's servers never reach it");
    }

    #[test]
    fn a_toml_launch_copy_carries_back_its_changed_tables() {
        let user = b"model = \"o3\"\n\n[mcp_servers.mine]\ncommand = \"x\"\n";
        let written = key_digests("config.toml", user, "mcp_servers").expect("digests");
        let copy = b"model = \"o3\"\n\n[projects.\"/work\"]\ntrust_level = \"trusted\"\n";
        let back = carried_back("config.toml", user, copy, &written, "mcp_servers").expect("merge").expect("changed");
        let text = String::from_utf8(back).expect("utf-8");
        assert!(text.contains("trust_level = \"trusted\"") && text.contains("[mcp_servers.mine]"), "{text}");
    }

    #[test]
    fn an_owned_file_holds_exactly_the_servers() {
        let bytes = owned_file(".codex/config.toml", &CODEX, &[server("a")]);
        assert_eq!(configured("config.toml", &bytes, "mcp_servers").unwrap(), ["a"]);
        let bytes = owned_file(".mcp.json", &CLAUDE, &[server("a"), server("b")]);
        assert_eq!(configured(".mcp.json", &bytes, "mcpServers").unwrap(), ["a", "b"]);
    }
}
