//! The blocks a projection keeps in its repository's own files under `info/`: in
//! `info/exclude` its own paths (the record folder, instruction files and skill links),
//! and in `info/attributes` the user's files it writes into (an instructions file with
//! the role's block, a harness MCP file with the role's servers), each given the
//! `acompose` clean filter, so git reads them without the projection's text. Every path
//! is anchored at the work tree's root, between two marker lines naming the projection
//! (its target, and the worktree when it is not the main one: both files are shared by
//! every worktree of the repository). Links into a machine's store dangle on every other
//! machine, so they are excluded locally and never committed. Owns the blocks' text and
//! their replacement inside the rest of a file, which is kept byte for byte; never reads
//! or writes a file (the driver does).

use std::fmt::Write as _;

/// The opening marker's text before the projection's name.
const BEGIN: &str = "# acompose projection into ";
/// The closing marker's text before the projection's name.
const END: &str = "# end of acompose projection into ";
/// What follows the target in the name of a projection into a linked worktree.
const WORKTREE: &str = " in worktree ";

/// The name of the filter driver in `info/attributes` and the repository's config.
pub const FILTER: &str = "acompose";

/// The name marker lines give a projection into `target` (relative to the work tree's
/// root, `""` for the root itself) of the worktree named `worktree` (`None` for the main
/// one). `None` when either holds a line break, which a marker line cannot say.
pub fn block_name(target: &str, worktree: Option<&str>) -> Option<String> {
    if target.contains(['\n', '\r']) || worktree.is_some_and(|name| name.contains(['\n', '\r'])) {
        return None;
    }
    let target = if target.is_empty() { "." } else { target };
    Some(match worktree {
        Some(worktree) => format!("{target}{WORKTREE}{worktree}"),
        None => target.to_owned(),
    })
}

/// The exclude lines of `paths` (relative to `target`): each anchored at the work tree's
/// root, matching exactly itself. `None` when a path holds a line break.
pub fn exclude_lines(target: &str, paths: &[String]) -> Option<Vec<String>> {
    paths.iter().map(|path| anchored(target, path).map(|anchored| ignore_pattern(&anchored))).collect()
}

/// The attributes lines giving `paths` (relative to `target`) the clean filter. `None`
/// when a path holds a line break.
pub fn attribute_lines(target: &str, paths: &[String]) -> Option<Vec<String>> {
    paths
        .iter()
        .map(|path| anchored(target, path).map(|anchored| format!("{} filter={FILTER}", attribute_pattern(&anchored))))
        .collect()
}

/// The block of the projection named `name` holding `lines`.
pub fn block(name: &str, lines: &[String]) -> String {
    let mut text = format!("{BEGIN}{name}\n");
    for line in lines {
        let _ = writeln!(text, "{line}");
    }
    let _ = writeln!(text, "{END}{name}");
    text
}

/// `text` with the block named `name` replaced by `block` (appended when there was none),
/// or removed when `block` is `None`. Every other line is kept byte for byte.
pub fn with_block(text: &str, name: &str, block: Option<&str>) -> String {
    let begin = format!("{BEGIN}{name}");
    let end = format!("{END}{name}");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines.iter().position(|line| line.trim_end_matches('\n') == begin);
    let mut kept = String::with_capacity(text.len());
    match start {
        Some(start) => {
            let stop = lines[start..]
                .iter()
                .position(|line| line.trim_end_matches('\n') == end)
                .map_or(lines.len(), |offset| start + offset + 1);
            kept.extend(lines[..start].iter().copied());
            if let Some(block) = block {
                kept.push_str(block);
            }
            kept.extend(lines[stop..].iter().copied());
        }
        None => {
            kept.push_str(text);
            if let Some(block) = block {
                if !kept.is_empty() && !kept.ends_with('\n') {
                    kept.push('\n');
                }
                kept.push_str(block);
            }
        }
    }
    kept
}

/// The names of every projection's block in `text`, in order.
pub fn block_names(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| line.strip_prefix(BEGIN)).map(str::to_owned).collect()
}

/// A block name split into the target (`""` for the root) and the worktree it names.
pub fn parse_block_name(name: &str) -> (String, Option<String>) {
    let (target, worktree) = match name.rsplit_once(WORKTREE) {
        Some((target, worktree)) => (target, Some(worktree.to_owned())),
        None => (name, None),
    };
    (if target == "." { String::new() } else { target.to_owned() }, worktree)
}

fn anchored(target: &str, path: &str) -> Option<String> {
    let anchored = if target.is_empty() { format!("/{path}") } else { format!("/{target}/{path}") };
    (!anchored.contains(['\n', '\r'])).then_some(anchored)
}

/// A path with the pattern characters escaped with a backslash.
fn glob_escaped(path: &str) -> String {
    let mut pattern = String::with_capacity(path.len());
    for character in path.chars() {
        if matches!(character, '\\' | '*' | '?' | '[' | ']') {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    pattern
}

/// A path as a gitignore pattern matching exactly itself: the pattern characters and a
/// trailing space escaped with a backslash.
fn ignore_pattern(path: &str) -> String {
    let mut pattern = glob_escaped(path);
    if pattern.ends_with(' ') {
        pattern.pop();
        pattern.push_str("\\ ");
    }
    pattern
}

/// A path as a gitattributes pattern matching exactly itself: escaped as a glob, and in
/// C-style quotes when it holds a space, a tab or a quote (an attributes line separates
/// the pattern from the attributes by whitespace).
fn attribute_pattern(path: &str) -> String {
    let pattern = glob_escaped(path);
    if !pattern.contains([' ', '\t', '"']) {
        return pattern;
    }
    let mut quoted = String::from('"');
    for character in pattern.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '\t' => quoted.push_str("\\t"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|path| (*path).to_owned()).collect()
    }

    #[test]
    fn a_block_anchors_every_path_at_the_root_and_escapes_patterns() {
        let lines =
            exclude_lines("web", &paths(&[".agent-compose", "CLAUDE.md", ".claude/skills/a*b"])).expect("lines");
        let text = block(&block_name("web", None).expect("name"), &lines);
        assert_eq!(
            text,
            "# acompose projection into web\n/web/.agent-compose\n/web/CLAUDE.md\n/web/.claude/skills/a\\*b\n# end of acompose projection into web\n"
        );
        let root =
            block(&block_name("", None).expect("name"), &exclude_lines("", &paths(&["AGENTS.md"])).expect("lines"));
        assert_eq!(root, "# acompose projection into .\n/AGENTS.md\n# end of acompose projection into .\n");
        assert_eq!(exclude_lines("", &paths(&["a\nb"])), None);
        assert_eq!(block_name("a\nb", None), None);
    }

    #[test]
    fn attribute_lines_quote_what_whitespace_would_split() {
        let lines = attribute_lines("my docs", &paths(&["CLAUDE.md", "a\"b*.md"])).expect("lines");
        assert_eq!(lines, ["\"/my docs/CLAUDE.md\" filter=acompose", "\"/my docs/a\\\"b\\\\*.md\" filter=acompose"]);
        assert_eq!(attribute_lines("", &paths(&[".mcp.json"])).expect("lines"), ["/.mcp.json filter=acompose"]);
    }

    #[test]
    fn a_worktree_is_named_in_its_blocks_and_read_back() {
        let name = block_name("web", Some("feature")).expect("name");
        assert_eq!(name, "web in worktree feature");
        assert_eq!(parse_block_name(&name), ("web".to_owned(), Some("feature".to_owned())));
        assert_eq!(parse_block_name("."), (String::new(), None));
        let text = format!("*.log\n{}", block(&name, &[]));
        assert_eq!(block_names(&text), [name]);
    }

    #[test]
    fn the_user_lines_stay_byte_for_byte_through_add_replace_and_remove() {
        let user = "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\nno-newline-at-end";
        let root = block_name("", None).expect("name");
        let first = block(&root, &exclude_lines("", &paths(&["CLAUDE.md"])).expect("lines"));
        let added = with_block(user, &root, Some(&first));
        assert_eq!(added, format!("{user}\n{first}"));
        let second = block(&root, &exclude_lines("", &paths(&["CLAUDE.md", ".claude/skills/x"])).expect("lines"));
        let replaced = with_block(&added, &root, Some(&second));
        assert_eq!(replaced, format!("{user}\n{second}"));
        let docs = block_name("docs", None).expect("name");
        let other = block(&docs, &exclude_lines("docs", &paths(&["AGENTS.md"])).expect("lines"));
        let both = with_block(&replaced, &docs, Some(&other));
        let removed = with_block(&both, &root, None);
        assert_eq!(removed, format!("{user}\n{other}"));
        assert_eq!(with_block(&format!("{user}\n"), &root, None), format!("{user}\n"));
    }
}
