//! The block of a repository's `.git/info/exclude` that a linked projection keeps: its own
//! paths (the record folder, instruction files and skill links), anchored at the work
//! tree's root, between two marker lines that name the projection's target. Links into a
//! machine's store dangle on every other machine, so they are excluded locally and never
//! committed. Owns the block's text and its replacement inside the rest of the file,
//! which is kept byte for byte; never reads or writes the file (the driver does).

use std::fmt::Write as _;

/// The opening marker's text before the target.
const BEGIN: &str = "# acompose projection into ";
/// The closing marker's text before the target.
const END: &str = "# end of acompose projection into ";

/// The block excluding `paths` (relative to the target) of a projection into `target`
/// (relative to the work tree's root, `""` for the root itself). `None` when a path holds
/// a line break, which an exclude file cannot say.
pub fn block(target: &str, paths: &[String]) -> Option<String> {
    let name = marker_name(target)?;
    let mut text = format!("{BEGIN}{name}\n");
    for path in paths {
        let anchored = if target.is_empty() { format!("/{path}") } else { format!("/{target}/{path}") };
        if anchored.contains(['\n', '\r']) {
            return None;
        }
        let _ = writeln!(text, "{}", escaped(&anchored));
    }
    let _ = writeln!(text, "{END}{name}");
    Some(text)
}

/// `text` with the block of `target` replaced by `block` (appended when there was none),
/// or removed when `block` is `None`. Every other line is kept byte for byte. `None` when
/// the target cannot be named in a marker line.
pub fn with_block(text: &str, target: &str, block: Option<&str>) -> Option<String> {
    let name = marker_name(target)?;
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
    Some(kept)
}

/// The target as marker lines name it: `.` for the root.
fn marker_name(target: &str) -> Option<&str> {
    if target.contains(['\n', '\r']) {
        return None;
    }
    Some(if target.is_empty() { "." } else { target })
}

/// A path as a gitignore pattern matching exactly itself: the pattern characters and a
/// trailing space escaped with a backslash.
fn escaped(path: &str) -> String {
    let mut pattern = String::with_capacity(path.len());
    for character in path.chars() {
        if matches!(character, '\\' | '*' | '?' | '[' | ']') {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    if pattern.ends_with(' ') {
        pattern.pop();
        pattern.push_str("\\ ");
    }
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|path| (*path).to_owned()).collect()
    }

    #[test]
    fn a_block_anchors_every_path_at_the_root_and_escapes_patterns() {
        let text = block("web", &paths(&[".agent-compose", "CLAUDE.md", ".claude/skills/a*b"])).expect("block");
        assert_eq!(
            text,
            "# acompose projection into web\n/web/.agent-compose\n/web/CLAUDE.md\n/web/.claude/skills/a\\*b\n# end of acompose projection into web\n"
        );
        let root = block("", &paths(&["AGENTS.md"])).expect("block");
        assert_eq!(root, "# acompose projection into .\n/AGENTS.md\n# end of acompose projection into .\n");
        assert_eq!(block("", &paths(&["a\nb"])), None);
    }

    #[test]
    fn the_user_lines_stay_byte_for_byte_through_add_replace_and_remove() {
        let user = "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\nno-newline-at-end";
        let first = block("", &paths(&["CLAUDE.md"])).expect("block");
        let added = with_block(user, "", Some(&first)).expect("added");
        assert_eq!(added, format!("{user}\n{first}"));
        let second = block("", &paths(&["CLAUDE.md", ".claude/skills/x"])).expect("block");
        let replaced = with_block(&added, "", Some(&second)).expect("replaced");
        assert_eq!(replaced, format!("{user}\n{second}"));
        let other = block("docs", &paths(&["AGENTS.md"])).expect("block");
        let both = with_block(&replaced, "docs", Some(&other)).expect("both");
        let removed = with_block(&both, "", None).expect("removed");
        assert_eq!(removed, format!("{user}\n{other}"));
        assert_eq!(with_block(&format!("{user}\n"), "", None).expect("nothing to remove"), format!("{user}\n"));
    }
}
