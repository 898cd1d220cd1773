//! The harness layout table as data: the embedded `layouts.kdl` and a home's own
//! `layouts.kdl` (rows added, or replacing the embedded row of the same name) read into
//! [`Layout`] rows. Rows live for the whole process (the table is read once), so their
//! text is kept as `&'static str`.

use super::{Carried, ConfigVariable, Layout, Listing, NameRule, Places};
use crate::diagnostic::{Diagnostic, Span};
use crate::syntax::{Node, Value, parse_text};

/// The table acompose is built with.
pub const EMBEDDED: &str = include_str!("../layouts.kdl");
/// Its name in diagnostics.
pub const EMBEDDED_NAME: &str = "layouts.kdl (built in)";
/// The most rows a table may hold.
const ROW_LIMIT: usize = 256;

/// Reads a table; every mistake of the file is a diagnostic (with its span), and a row
/// with a mistake is left out.
pub fn read(text: &str, path: &str) -> (Vec<Layout>, Vec<Diagnostic>) {
    let parsed = parse_text(text, path);
    let mut diagnostics = parsed.diagnostics.clone();
    let mut rows: Vec<Layout> = Vec::new();
    for node in &parsed.value.nodes {
        if rows.len() == ROW_LIMIT {
            diagnostics.push(problem(
                path,
                node.span,
                format!("more than {ROW_LIMIT} harness rows; the rest are ignored"),
            ));
            break;
        }
        let mut row_problems = Vec::new();
        let row = row(node, path, &mut row_problems);
        if let Some(row) = row.filter(|_| row_problems.is_empty()) {
            if rows.iter().any(|earlier| earlier.harness == row.harness) {
                diagnostics.push(problem(path, node.span, format!("harness `{}` is given twice", row.harness)));
            } else {
                rows.push(row);
            }
        }
        diagnostics.extend(row_problems);
    }
    (rows, diagnostics)
}

/// `base` with `overrides` laid over it: a row of the same name replaces the base row,
/// a new name is added. Sorted by name.
pub fn merged(base: Vec<Layout>, overrides: Vec<Layout>) -> Vec<Layout> {
    let mut rows: Vec<Layout> =
        base.into_iter().filter(|row| !overrides.iter().any(|over| over.harness == row.harness)).collect();
    rows.extend(overrides);
    rows.sort_by(|left, right| left.harness.cmp(right.harness));
    rows
}

fn problem(path: &str, span: Span, message: String) -> Diagnostic {
    Diagnostic::error("layout-invalid", message)
        .in_file(path)
        .at(Some(span))
        .hint("see docs/delivery.md, \"Layouts as data\", for the grammar of a row")
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// A harness name: lowercase letters, digits and `-`, so it can name a runtime home and
/// join others with `+` in a projection record.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !name.starts_with('-')
}

/// A path below a scope's root: not absolute, no `.` or `..` segment, no empty segment.
pub fn plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

fn string_argument(node: &Node) -> Option<&str> {
    node.arguments.first().and_then(|argument| argument.value.as_str())
}

fn string_property<'n>(node: &'n Node, name: &str) -> Option<&'n str> {
    node.property(name).and_then(|property| property.value.as_str())
}

fn integer_property(node: &Node, name: &str, path: &str, problems: &mut Vec<Diagnostic>) -> Option<u32> {
    let property = node.property(name)?;
    match property.value {
        Value::Integer(value) if (1..=i128::from(u32::MAX)).contains(&value) => u32::try_from(value).ok(),
        _ => {
            problems.push(problem(path, property.span, format!("`{name}` must be a positive whole number")));
            None
        }
    }
}

/// A path property that must be plain and relative; `empty` allows `""`.
fn path_property(
    node: &Node,
    name: &str,
    empty: bool,
    path: &str,
    problems: &mut Vec<Diagnostic>,
) -> Option<&'static str> {
    let Some(value) = string_property(node, name) else {
        problems.push(problem(path, node.span, format!("`{}` needs a string `{name}=`", node.name)));
        return None;
    };
    if (empty && value.is_empty()) || plain_relative(value) {
        Some(leak(value))
    } else {
        let span = node.property(name).map_or(node.span, |property| property.span);
        problems.push(problem(path, span, format!("`{name}` must be a relative path inside the scope, not `{value}`")));
        None
    }
}

fn row(node: &Node, path: &str, problems: &mut Vec<Diagnostic>) -> Option<Layout> {
    if node.name != "harness" {
        problems.push(problem(
            path,
            node.name_span,
            format!("unknown node `{}`; a table holds `harness` rows", node.name),
        ));
        return None;
    }
    let Some(name) = string_argument(node).filter(|name| valid_name(name)) else {
        problems.push(problem(
            path,
            node.span,
            "a `harness` row needs a name: lowercase letters, digits and `-`".to_owned(),
        ));
        return None;
    };
    let text = |property: &str, problems: &mut Vec<Diagnostic>| match string_property(node, property) {
        Some(value) if !value.is_empty() => Some(leak(value)),
        _ => {
            problems.push(problem(path, node.span, format!("harness `{name}` needs `{property}=\"…\"`")));
            None
        }
    };
    let display_name = text("name", problems);
    let binary = text("binary", problems);
    let prompt = text("prompt", problems);
    let mut row = RowParts::default();
    for child in &node.children {
        row.child(child, path, problems);
    }
    if row.keeps_home && row.config_variable.is_none() {
        problems.push(problem(
            path,
            node.span,
            format!("harness `{name}` has `keeps-home` but no `config-variable` to move its configuration folder with"),
        ));
        return None;
    }
    let (Some(repository), Some(home)) = (row.repository, row.home) else {
        if row.scopes_seen != (true, true) {
            problems.push(problem(path, node.span, format!("harness `{name}` needs a `repository` and a `home` line")));
        }
        return None;
    };
    Some(Layout {
        harness: leak(name),
        display_name: display_name?,
        binary: binary?,
        prompt: prompt?,
        repository,
        home,
        config_variable: row.config_variable,
        carried: Box::leak(row.carried.into_boxed_slice()),
        keeps_home: row.keeps_home,
        hidden: Box::leak(row.hidden.into_boxed_slice()),
        listing: row.listing,
        repository_links: row.repository_links.unwrap_or(true),
        mcp: row.mcp,
        sources: Box::leak(row.sources.into_boxed_slice()),
    })
}

/// The children of one `harness` row as they are read.
#[derive(Default)]
struct RowParts {
    repository: Option<Places>,
    home: Option<Places>,
    config_variable: Option<ConfigVariable>,
    carried: Vec<Carried>,
    keeps_home: bool,
    hidden: Vec<&'static str>,
    listing: Listing,
    repository_links: Option<bool>,
    mcp: Option<crate::mcp::harness_config::McpPlaces>,
    sources: Vec<&'static str>,
    /// Whether a `repository` and a `home` line were there (a broken one is reported
    /// where it is, not again as missing).
    scopes_seen: (bool, bool),
}

impl RowParts {
    fn child(&mut self, child: &Node, path: &str, problems: &mut Vec<Diagnostic>) {
        match child.name.as_str() {
            "source" => match string_argument(child) {
                Some(source) => self.sources.push(leak(source)),
                None => problems.push(problem(path, child.span, "`source` needs a string".to_owned())),
            },
            "repository" => {
                self.scopes_seen.0 = true;
                self.repository = places(child, path, problems);
            }
            "home" => {
                self.scopes_seen.1 = true;
                self.home = places(child, path, problems);
            }
            "config-variable" => {
                let variable = string_argument(child).filter(|name| {
                    !name.is_empty()
                        && name.bytes().all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit() || byte == b'_')
                });
                let folder =
                    string_property(child, "folder").filter(|folder| folder.is_empty() || plain_relative(folder));
                match (variable, folder) {
                    (Some(variable), Some(folder)) => {
                        self.config_variable =
                            Some(ConfigVariable { name: leak(variable), relative_to_home: leak(folder) });
                    }
                    _ => problems.push(problem(
                        path,
                        child.span,
                        "`config-variable` needs an upper-case variable name and `folder=\"…\"` (relative, or \"\")"
                            .to_owned(),
                    )),
                }
            }
            "carry" => self.carry(child, path, problems),
            "keeps-home" => match child.arguments.first().map(|argument| &argument.value) {
                Some(Value::Bool(keeps)) => self.keeps_home = *keeps,
                _ => problems.push(problem(path, child.span, "`keeps-home` takes #true or #false".to_owned())),
            },
            "hide" => match string_argument(child).filter(|hidden| plain_relative(hidden)) {
                Some(hidden) => self.hidden.push(leak(hidden)),
                None => problems.push(problem(path, child.span, "`hide` takes a relative path".to_owned())),
            },
            "mcp" => self.mcp(child, path, problems),
            "listing" => self.listing(child, path, problems),
            "links-outside-repository" => match child.arguments.first().map(|argument| &argument.value) {
                Some(Value::Bool(allowed)) => self.repository_links = Some(*allowed),
                _ => problems.push(problem(
                    path,
                    child.span,
                    "`links-outside-repository` takes #true or #false".to_owned(),
                )),
            },
            other => problems.push(problem(path, child.name_span, format!("unknown node `{other}` in a harness row"))),
        }
    }

    fn carry(&mut self, child: &Node, path: &str, problems: &mut Vec<Diagnostic>) {
        let runtime = string_argument(child).filter(|runtime| plain_relative(runtime));
        let home =
            string_property(child, "home").map_or(runtime, |home| Some(home).filter(|home| plain_relative(home)));
        let config = string_property(child, "config");
        match (runtime, home) {
            (Some(runtime), Some(home)) if config.is_none_or(plain_relative) => {
                self.carried.push(Carried { runtime: leak(runtime), home: leak(home), config: config.map(leak) })
            }
            _ => problems.push(problem(
                path,
                child.span,
                "`carry` needs the runtime path, and relative `home=` and `config=` paths when given".to_owned(),
            )),
        }
    }

    /// `mcp repository="…" home="…" launch="…" key="…" shape="…"`: where the harness
    /// reads MCP servers (`repository=""` when it reads none in a checkout; `launch=`
    /// defaults to `home=`).
    fn mcp(&mut self, child: &Node, path: &str, problems: &mut Vec<Diagnostic>) {
        let repository = path_property(child, "repository", true, path, problems);
        let home = path_property(child, "home", false, path, problems);
        let launch = match child.property("launch") {
            Some(_) => path_property(child, "launch", false, path, problems),
            None => home,
        };
        let key = string_property(child, "key").filter(|key| crate::mcp::is_server_name(key));
        let shape = string_property(child, "shape").and_then(crate::mcp::harness_config::Shape::parse);
        match (repository, home.zip(launch), key, shape) {
            (Some(repository), Some((home, launch)), Some(key), Some(shape)) => {
                self.mcp =
                    Some(crate::mcp::harness_config::McpPlaces { repository, home, launch, key: leak(key), shape });
            }
            (Some(_), Some(_), _, _) => problems.push(problem(
                path,
                child.span,
                "`mcp` needs `key=\"…\"` (a top-level key) and `shape=` \"claude\", \"codex\", \"gemini\" or \"opencode\""
                    .to_owned(),
            )),
            _ => {}
        }
    }

    fn listing(&mut self, child: &Node, path: &str, problems: &mut Vec<Diagnostic>) {
        self.listing.budget = integer_property(child, "budget", path, problems);
        self.listing.description = integer_property(child, "description", path, problems);
        self.listing.names = match string_property(child, "names") {
            None | Some("any") => NameRule::Any,
            Some("agent-skills") => NameRule::AgentSkills,
            Some(other) => {
                problems.push(problem(
                    path,
                    child.span,
                    format!("`names` is \"agent-skills\" or \"any\", not `{other}`"),
                ));
                NameRule::Any
            }
        };
    }
}

fn places(node: &Node, path: &str, problems: &mut Vec<Diagnostic>) -> Option<Places> {
    let instructions = path_property(node, "instructions", true, path, problems);
    let skills = path_property(node, "skills", false, path, problems);
    let mut also_reads = Vec::new();
    for child in &node.children {
        if child.name != "also-reads" {
            problems.push(problem(
                path,
                child.name_span,
                format!("unknown node `{}`; expected `also-reads`", child.name),
            ));
            continue;
        }
        for argument in &child.arguments {
            match argument.value.as_str().filter(|folder| plain_relative(folder)) {
                Some(folder) => also_reads.push(leak(folder)),
                None => {
                    problems.push(problem(path, argument.span, "`also-reads` takes relative folder paths".to_owned()))
                }
            }
        }
    }
    Some(Places { instructions: instructions?, skills: skills?, also_reads: Box::leak(also_reads.into_boxed_slice()) })
}
