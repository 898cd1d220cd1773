//! The MCP inventory: the servers a user keeps in `<home>/mcp.kdl` (name, transport,
//! command and arguments or URL, the names of the environment variables each needs, and
//! the roles it is tagged for), its validation, and the refusal of values that look like
//! secrets. Owns that grammar and the server record a bundle keeps; which servers a role
//! receives is decided in `compose`, and each harness's file is written by
//! [`harness_config`]. Never holds an environment variable's value.

pub mod harness_config;
pub mod splice;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::person::reader::Reader;
use crate::syntax::{Node, parse_text};

pub use crate::secret::looks_like_secret;

/// The inventory's file in home.
pub const FILE: &str = "mcp.kdl";
/// The label the inventory is shown with (`home/mcp.kdl`): no absolute path enters a
/// bundle's trace.
pub const ORIGIN: &str = "home";

/// How a harness reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A local process speaking over its standard input and output.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// Server-sent events (the older remote transport).
    Sse,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Sse => "sse",
        }
    }
}

/// One server as the inventory declares it and a bundle's manifest records it: never an
/// environment variable's value, only its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    pub name: String,
    pub transport: Transport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The environment variables the server needs, by name, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The HTTP headers a remote server is sent, each with the variable its value comes
    /// from, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<McpHeader>,
}

/// One header of a remote server: its name, the environment variable its value is read
/// from when the harness starts, and an optional scheme put before the value (`Bearer`,
/// for `Authorization` only). Never a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpHeader {
    pub name: String,
    pub env: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
}

impl McpHeader {
    /// Whether this is `Authorization: Bearer <variable>`.
    pub fn is_bearer(&self) -> bool {
        self.name.eq_ignore_ascii_case("authorization") && self.scheme.as_deref() == Some("Bearer")
    }
}

/// One inventory entry: the server, the roles it is tagged for and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InventoryServer {
    pub server: McpServer,
    pub roles: Vec<String>,
    pub span: Span,
}

/// The whole inventory, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Inventory {
    pub servers: Vec<InventoryServer>,
}

impl Inventory {
    pub fn server(&self, name: &str) -> Option<&InventoryServer> {
        self.servers.iter().find(|entry| entry.server.name == name)
    }
}

/// The most servers one inventory declares.
pub const SERVERS: usize = 256;

/// The inventory of one file, as a query: the driver sets the file's bytes.
#[salsa::tracked(returns(ref))]
pub fn mcp_inventory(db: &dyn salsa::Database, file: SourceFile) -> Parsed<Inventory> {
    let path = file.display_path(db);
    match std::str::from_utf8(file.bytes(db)) {
        Ok(text) => read_inventory(text, &path),
        Err(_) => Parsed::new(
            Inventory::default(),
            vec![Diagnostic::error("not-utf8", format!("`{path}` is not valid UTF-8")).in_file(path)],
        ),
    }
}

/// Reads an inventory's text. A value that looks like a secret refuses the whole file
/// before it is parsed, by line only: no snippet of it is ever shown.
pub fn read_inventory(text: &str, path: &str) -> Parsed<Inventory> {
    if let Some(too_large) = crate::limits::MCP_INVENTORY.check(text.len(), path) {
        return Parsed::new(Inventory::default(), vec![too_large]);
    }
    let secrets = crate::secret::lines_with_secrets(text);
    if !secrets.is_empty() {
        let diagnostics = secrets
            .into_iter()
            .map(|line| {
                Diagnostic::error(
                    "secret-in-inventory",
                    format!("`{path}` line {line} holds a value that looks like a secret; it is not shown"),
                )
                .in_file(path)
                .hint("never write a credential in the inventory: name the variable with `env \"NAME\"` and set it in the environment the harness starts in")
            })
            .collect();
        return Parsed::new(Inventory::default(), crate::diagnostic::bound_per_file(diagnostics));
    }
    let parsed = parse_text(text, path);
    if !parsed.diagnostics.is_empty() {
        return Parsed::new(Inventory::default(), parsed.diagnostics);
    }
    let mut reader = Reader::new(path);
    let mut inventory = Inventory::default();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for node in &parsed.value.nodes {
        if node.name != "server" {
            reader.unknown_node(node, "`mcp.kdl`", &["server"]);
            continue;
        }
        if inventory.servers.len() == SERVERS {
            reader.report(
                "too-many-servers",
                node.name_span,
                format!("more than {SERVERS} servers"),
                "keep the inventory to the servers your roles use",
            );
            break;
        }
        if let Some(entry) = read_server(&mut reader, node) {
            if !names.insert(entry.server.name.clone()) {
                reader.report(
                    "duplicate-server",
                    entry.span,
                    format!("server `{}` is declared twice", entry.server.name),
                    "keep one",
                );
                continue;
            }
            inventory.servers.push(entry);
        }
    }
    Parsed::new(inventory, crate::diagnostic::bound_per_file(reader.diagnostics))
}

/// Whether a server name is one every harness takes as a key: letters, digits, `-` and
/// `_`, starting with a letter, at most 64 characters.
pub fn is_server_name(name: &str) -> bool {
    name.len() <= 64
        && name.chars().next().is_some_and(|first| first.is_ascii_alphabetic())
        && name.chars().all(|character| character.is_ascii_alphanumeric() || matches!(character, '-' | '_'))
}

/// Whether a variable name is a portable environment variable name.
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && name.chars().all(|character| character.is_ascii_alphanumeric() || character == '_')
}

/// What a `server` block says before it is checked whole.
#[derive(Default)]
struct Written {
    command: Option<(Vec<String>, Span)>,
    url: Option<(String, Span)>,
    transport: Option<(String, Span)>,
    env: Vec<String>,
    /// Where `env` was written, for the warning on a remote server.
    env_span: Option<Span>,
    headers: Vec<(McpHeader, Span)>,
    roles: Vec<String>,
}

/// Reads one `server` block.
fn read_server(reader: &mut Reader<'_>, node: &Node) -> Option<InventoryServer> {
    reader.allowed_properties(node, &[]);
    let (name, span) = reader.single_string(node)?;
    if !is_server_name(&name) {
        reader.report(
            "server-name",
            span,
            format!("`{}` is not a server name", sanitize(&name)),
            "start with a letter; use letters, digits, `-` and `_`, at most 64 characters",
        );
        return None;
    }
    let mut written = Written::default();
    for child in &node.children {
        read_server_entry(reader, child, &mut written);
    }
    let (transport, command, args, url) =
        server_reach(reader, &name, span, written.transport, written.command, written.url)?;
    let mut env = written.env;
    env.sort();
    env.dedup();
    let mut roles = written.roles;
    roles.sort();
    roles.dedup();
    let headers = server_headers(reader, &name, transport, written.headers);
    if transport != Transport::Stdio
        && let Some(env_span) = written.env_span
    {
        // A remote server is no process the harness starts: no variable reaches it.
        reader.diagnostics.push(
            Diagnostic::warning(
                "env-on-remote-server",
                format!("server `{name}` is remote: `env` passes variables to a process the harness starts, so no harness file gives them to it"),
            )
            .in_file(reader.path)
            .at(Some(env_span))
            .hint("send a variable's value in a header instead: `header \"Authorization\" env=\"NAME\" scheme=\"Bearer\"` or `header \"X-Api-Key\" env=\"NAME\"`; or remove `env`"),
        );
    }
    Some(InventoryServer { server: McpServer { name, transport, command, args, url, env, headers }, roles, span })
}

/// The headers of a server, checked whole: only a remote server takes them, each name
/// once.
fn server_headers(
    reader: &mut Reader<'_>,
    name: &str,
    transport: Transport,
    headers: Vec<(McpHeader, Span)>,
) -> Vec<McpHeader> {
    let mut kept: Vec<McpHeader> = Vec::new();
    for (header, span) in headers {
        if transport == Transport::Stdio {
            reader.report(
                "header-on-local-server",
                span,
                format!("server `{name}` is local: headers go to a remote server only"),
                "pass what a local server needs with `env \"NAME\"`",
            );
        } else if kept.iter().any(|other| other.name.eq_ignore_ascii_case(&header.name)) {
            reader.report("duplicate-header", span, format!("header `{}` is given twice", header.name), "keep one");
        } else {
            kept.push(header);
        }
    }
    kept
}

/// Whether `name` is an HTTP header name every harness writes as it is: letters, digits
/// and `-`, at most 64 characters.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|character| character.is_ascii_alphanumeric() || character == '-')
}

/// Reads one `header "NAME" env="VARIABLE" scheme="Bearer"` entry.
fn read_header(reader: &mut Reader<'_>, child: &Node) -> Option<(McpHeader, Span)> {
    reader.allowed_properties(child, &["env", "scheme"]);
    reader.no_children(child);
    let (name, span) = reader.single_string(child)?;
    if !is_header_name(&name) {
        reader.report(
            "header-name",
            span,
            format!("`{}` is not a header name", sanitize(&name)),
            "use letters, digits and `-` (`Authorization`, `X-Api-Key`)",
        );
        return None;
    }
    let (env, env_span) = reader.required_string_property(child, "env")?;
    if !is_variable_name(&env) {
        // The text may be a value: it is not shown.
        reader.report(
            "env-name",
            env_span,
            "a header's `env` is not a variable name",
            "write the variable's name only (`GITHUB_TOKEN`), never its value",
        );
        return None;
    }
    let scheme = match reader.optional_string_property(child, "scheme") {
        None => None,
        Some((scheme, _)) if scheme == "Bearer" && name.eq_ignore_ascii_case("authorization") => Some(scheme),
        Some((_, scheme_span)) => {
            reader.report(
                "header-scheme",
                scheme_span,
                "the only scheme is `Bearer`, on the `Authorization` header",
                "write `header \"Authorization\" env=\"NAME\" scheme=\"Bearer\"`, or leave `scheme` out to send the variable's value as it is",
            );
            return None;
        }
    };
    Some((McpHeader { name, env, scheme }, span))
}

/// Reads one entry of a `server` block into `written`.
fn read_server_entry(reader: &mut Reader<'_>, child: &Node, written: &mut Written) {
    let known = ["command", "url", "env", "header", "roles"];
    match child.name.as_str() {
        "command" => {
            reader.allowed_properties(child, &[]);
            reader.no_children(child);
            if reader.argument_count(child, 1, None) {
                let words: Vec<String> = reader.string_arguments(child).into_iter().map(|(word, _)| word).collect();
                written.command = Some((words, child.name_span));
            }
        }
        "url" => {
            reader.allowed_properties(child, &["transport"]);
            reader.no_children(child);
            written.transport = reader.optional_string_property(child, "transport");
            if let Some((url, span)) = reader.single_string(child) {
                if url.starts_with("https://") || url.starts_with("http://") {
                    written.url = Some((url, span));
                } else {
                    reader.report(
                        "server-url",
                        span,
                        format!("`{}` is not an `http://` or `https://` URL", sanitize(&url)),
                        "give the server's URL",
                    );
                }
            }
        }
        "header" => written.headers.extend(read_header(reader, child)),
        "env" => {
            reader.allowed_properties(child, &[]);
            reader.no_children(child);
            written.env_span.get_or_insert(child.name_span);
            for (variable, span) in reader.string_arguments(child) {
                if is_variable_name(&variable) {
                    written.env.push(variable);
                } else {
                    // The text may be `NAME=value`: it is not shown.
                    reader.report(
                        "env-name",
                        span,
                        "an `env` entry is not a variable name",
                        "write the variable's name only (`GITHUB_TOKEN`), never its value",
                    );
                }
            }
        }
        "roles" => {
            reader.allowed_properties(child, &[]);
            reader.no_children(child);
            for (role, span) in reader.string_arguments(child) {
                if reader.slug(&role, span, "role slug") {
                    written.roles.push(role);
                }
            }
        }
        _ => reader.unknown_node(child, "a `server`", &known),
    }
}

type Reach = (Transport, Option<String>, Vec<String>, Option<String>);

/// How the server is reached: exactly one of `command` (stdio) and `url` (http, or sse
/// with `transport="sse"`).
fn server_reach(
    reader: &mut Reader<'_>,
    name: &str,
    span: Span,
    transport: Option<(String, Span)>,
    command: Option<(Vec<String>, Span)>,
    url: Option<(String, Span)>,
) -> Option<Reach> {
    match (command, url) {
        (Some((mut words, _)), None) => {
            if words.is_empty() {
                return None;
            }
            let program = words.remove(0);
            Some((Transport::Stdio, Some(program), words, None))
        }
        (None, Some((url, _))) => {
            let transport = match transport {
                None => Transport::Http,
                Some((text, _)) if text == "http" => Transport::Http,
                Some((text, _)) if text == "sse" => Transport::Sse,
                Some((text, span)) => {
                    reader.report(
                        "server-transport",
                        span,
                        format!("`{}` is not a remote transport", sanitize(&text)),
                        "use `http` (the default) or `sse`",
                    );
                    return None;
                }
            };
            Some((transport, None, Vec::new(), Some(url)))
        }
        (Some(_), Some((_, url_span))) => {
            reader.report(
                "server-reach",
                url_span,
                format!("server `{name}` has both a `command` and a `url`"),
                "a local server has a `command`, a remote one a `url`",
            );
            None
        }
        (None, None) => {
            reader.report(
                "server-reach",
                span,
                format!("server `{name}` has neither a `command` nor a `url`"),
                "give `command \"program\" \"argument\" …` or `url \"https://…\"`",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<String> {
        read_inventory(text, "mcp.kdl").diagnostics.iter().map(|diagnostic| diagnostic.code.to_string()).collect()
    }

    #[test]
    fn reads_local_and_remote_servers() {
        let parsed = read_inventory(
            "server \"files\" {\n    command \"npx\" \"-y\" \"server-files\" \".\"\n    env \"FILES_ROOT\"\n    roles \"engineer\" \"reviewer\"\n}\nserver \"docs\" {\n    url \"https://docs.example.com/mcp\" transport=\"sse\"\n}\n",
            "mcp.kdl",
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let files = &parsed.value.servers[0];
        assert_eq!(files.server.transport, Transport::Stdio);
        assert_eq!(files.server.command.as_deref(), Some("npx"));
        assert_eq!(files.server.args, ["-y", "server-files", "."]);
        assert_eq!(files.server.env, ["FILES_ROOT"]);
        assert_eq!(files.roles, ["engineer", "reviewer"]);
        assert_eq!(parsed.value.servers[1].server.transport, Transport::Sse);
    }

    #[test]
    fn mistakes_are_reported_with_a_span() {
        let text = "server \"a\" { command \"w\" }\nserver \"b\" {}\nserver \"d\" {\n    command \"x\"\n    url \"ftp://x\"\n}\nserver \"a\" { command \"y\" }\nserver \"c\" { command \"z\"; env \"A=b\"; colour \"red\" }\n";
        let parsed = read_inventory(text, "mcp.kdl");
        let mut found: Vec<&str> = parsed.diagnostics.iter().map(|diagnostic| diagnostic.code).collect();
        found.sort_unstable();
        assert_eq!(found, ["duplicate-server", "env-name", "server-reach", "server-url", "unknown-node"]);
        assert!(parsed.diagnostics.iter().all(|diagnostic| diagnostic.span.is_some()));
        assert!(parsed.diagnostics.iter().all(|diagnostic| !diagnostic.message.contains("A=b")));
    }

    #[test]
    fn a_remote_server_takes_headers_from_variables_and_says_its_env_reaches_nothing() {
        let text = "server \"svc\" {\n    url \"https://mcp.example.com/\"\n    header \"Authorization\" env=\"SERVICE_TOKEN\" scheme=\"Bearer\"\n    header \"X-Team\" env=\"TEAM_ID\"\n    env \"UNUSED\"\n}\n";
        let parsed = read_inventory(text, "mcp.kdl");
        let headers = &parsed.value.servers[0].server.headers;
        assert_eq!(headers.len(), 2);
        assert!(headers[0].is_bearer() && headers[1].scheme.is_none());
        let [warning] = parsed.diagnostics.as_slice() else { panic!("{:?}", parsed.diagnostics) };
        assert_eq!((warning.code, warning.severity), ("env-on-remote-server", crate::Severity::Warning));
        assert_eq!(warning.span.map(|span| crate::diagnostic::line_column(text, span.offset).0), Some(5));
        assert!(warning.hints[0].contains("header \"Authorization\" env=\"NAME\" scheme=\"Bearer\""));
        let mistakes = "server \"a\" {\n    command \"x\"\n    header \"X-A\" env=\"A\"\n}\nserver \"b\" {\n    url \"https://b/\"\n    header \"X-B\" env=\"B\" scheme=\"Bearer\"\n    header \"Bad Name\" env=\"B\"\n    header \"X-C\" env=\"c=secret\"\n    header \"X-D\" env=\"D\"\n    header \"x-d\" env=\"E\"\n}\n";
        let mut found = codes(mistakes);
        found.sort_unstable();
        assert_eq!(found, ["duplicate-header", "env-name", "header-name", "header-on-local-server", "header-scheme"]);
    }

    #[test]
    fn a_secret_is_refused_by_line_without_its_value() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let text = format!("server \"gh\" {{\n    command \"gh-mcp\" \"--token\" \"{token}\"\n}}\n");
        let parsed = read_inventory(&text, "mcp.kdl");
        assert_eq!(codes(&text), ["secret-in-inventory"]);
        let diagnostic = &parsed.diagnostics[0];
        assert!(diagnostic.message.contains("line 2"));
        assert!(diagnostic.span.is_none());
        assert!(!format!("{diagnostic:?}").contains("abcdefghij"));
    }
}
