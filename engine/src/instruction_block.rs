//! A role's instructions inside an instructions file the user already has (`CLAUDE.md`,
//! `AGENTS.md`, `GEMINI.md`, `.goosehints`): one managed block between two stable marker
//! lines, appended after the user's text and taken out again byte for byte. Owns the
//! markers, where the block goes and what removing it leaves; never reads or writes a
//! file (the driver does), and never changes a byte outside the block.

/// The line that opens the managed block.
pub const BEGIN: &str =
    "<!-- acompose: the projected role's instructions begin; text inside this block is replaced -->";
/// The line that closes the managed block.
pub const END: &str = "<!-- acompose: the projected role's instructions end -->";

/// A file's text with a block in it: the whole new text, the block itself (markers
/// included, the bytes whose digest tells a hand edit) and the separator written between
/// the user's text and the block, which removal takes out again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithBlock {
    pub text: Vec<u8>,
    pub block: Vec<u8>,
    pub separator: String,
}

/// Why a block could not be placed or taken out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockProblem {
    /// The markers are there but not as one opening line followed by one closing line.
    Malformed,
}

/// The block holding `instructions`.
pub fn block(instructions: &[u8]) -> Vec<u8> {
    let mut block = Vec::with_capacity(instructions.len() + BEGIN.len() + END.len() + 3);
    block.extend_from_slice(BEGIN.as_bytes());
    block.push(b'\n');
    block.extend_from_slice(instructions);
    if !instructions.is_empty() && !instructions.ends_with(b"\n") {
        block.push(b'\n');
    }
    block.extend_from_slice(END.as_bytes());
    block.push(b'\n');
    block
}

/// Where the block is in `text`: the byte range from its opening marker to the end of its
/// closing marker's line. `Ok(None)` when there is no marker at all.
pub fn find(text: &[u8]) -> Result<Option<std::ops::Range<usize>>, BlockProblem> {
    let begin = line_positions(text, BEGIN);
    let end = line_positions(text, END);
    match (begin.as_slice(), end.as_slice()) {
        ([], []) => Ok(None),
        ([start], [finish]) if start < finish => {
            let after = text[*finish..].iter().position(|byte| *byte == b'\n').map_or(text.len(), |at| finish + at + 1);
            Ok(Some(*start..after))
        }
        _ => Err(BlockProblem::Malformed),
    }
}

/// `user` (a file without a block) with a block holding `instructions` appended after one
/// blank line.
pub fn appended(user: &[u8], instructions: &[u8]) -> WithBlock {
    let separator = match user {
        [] => "",
        [.., b'\n', b'\n'] => "",
        [.., b'\n'] => "\n",
        _ => "\n\n",
    };
    let block = block(instructions);
    let mut text = Vec::with_capacity(user.len() + separator.len() + block.len());
    text.extend_from_slice(user);
    text.extend_from_slice(separator.as_bytes());
    text.extend_from_slice(&block);
    WithBlock { text, block, separator: separator.to_owned() }
}

/// `text` with its block's contents replaced by `instructions`, everything else kept.
pub fn replaced(text: &[u8], range: std::ops::Range<usize>, instructions: &[u8], separator: &str) -> WithBlock {
    let block = block(instructions);
    let mut new = Vec::with_capacity(text.len() + block.len());
    new.extend_from_slice(&text[..range.start]);
    new.extend_from_slice(&block);
    new.extend_from_slice(&text[range.end..]);
    WithBlock { text: new, block, separator: separator.to_owned() }
}

/// `text` without its block and the separator written before it: the user's file as it
/// was before the projection, with the user's own edits since. The separator goes only
/// where it is still whole and taking it leaves the user's last line ending as it did: a
/// user who wrote a line just above the block keeps its line break, and one who took the
/// blank line out keeps what is left. This is what git sees of the file (the clean filter
/// gives the same bytes) and what `unproject` leaves.
pub fn removed(text: &[u8], range: std::ops::Range<usize>, separator: &str) -> Vec<u8> {
    let before = &text[..range.start];
    let whole = match separator {
        "\n" => before.ends_with(b"\n\n") || before == b"\n",
        _ => before.ends_with(separator.as_bytes()),
    };
    let user = if whole { &before[..before.len() - separator.len()] } else { before };
    let mut restored = Vec::with_capacity(text.len());
    restored.extend_from_slice(user);
    restored.extend_from_slice(&text[range.end..]);
    restored
}

/// The byte offsets of every line of `text` that is exactly `marker`.
fn line_positions(text: &[u8], marker: &str) -> Vec<usize> {
    let mut positions = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive(|byte| *byte == b'\n') {
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if content == marker.as_bytes() {
            positions.push(offset);
        }
        offset += line.len();
    }
    positions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_then_removing_gives_back_the_user_bytes_exactly() {
        for user in ["", "# Notes\n", "# Notes", "# Notes\n\n", "a\r\nb\r\n"] {
            let with = appended(user.as_bytes(), b"Be the platform engineer.\n");
            let range = find(&with.text).expect("well formed").expect("a block");
            assert_eq!(&with.text[range.clone()], with.block.as_slice());
            assert!(with.text.starts_with(user.as_bytes()), "{user:?}");
            assert_eq!(removed(&with.text, range, &with.separator), user.as_bytes(), "{user:?}");
        }
    }

    #[test]
    fn text_the_user_adds_after_the_block_survives_a_replacement_and_a_removal() {
        let with = appended(b"# Notes\n", b"old\n");
        let mut text = with.text.clone();
        text.extend_from_slice(b"\nMore notes.\n");
        let range = find(&text).expect("well formed").expect("a block");
        let again = replaced(&text, range, b"new\n", &with.separator);
        assert!(again.text.ends_with(b"\nMore notes.\n"));
        assert!(again.text.windows(4).any(|window| window == b"new\n"));
        let range = find(&again.text).expect("well formed").expect("a block");
        assert_eq!(removed(&again.text, range, &again.separator), b"# Notes\n\nMore notes.\n");
    }

    #[test]
    fn broken_markers_are_told() {
        let begin_only = format!("{BEGIN}\ntext\n");
        assert_eq!(find(begin_only.as_bytes()), Err(BlockProblem::Malformed));
        let reversed = format!("{END}\n{BEGIN}\n");
        assert_eq!(find(reversed.as_bytes()), Err(BlockProblem::Malformed));
        assert_eq!(find(b"no block here\n"), Ok(None));
    }

    #[test]
    fn the_users_edits_just_above_the_block_keep_their_line_endings() {
        let removed_from = |text: &[u8], separator: &str| {
            let range = find(text).expect("well formed").expect("a block");
            removed(text, range, separator)
        };
        let with = appended(b"# Notes\n", b"x\n");
        assert_eq!(with.separator, "\n");
        let block = String::from_utf8(with.block.clone()).expect("text");
        // A line written after the blank line, just above the block.
        assert_eq!(removed_from(format!("# Notes\n\nMore\n{block}").as_bytes(), "\n"), b"# Notes\n\nMore\n");
        // A line written before the blank line.
        assert_eq!(removed_from(format!("# Notes\nMore\n\n{block}").as_bytes(), "\n"), b"# Notes\nMore\n");
        // The blank line taken out.
        assert_eq!(removed_from(format!("# Notes\n{block}").as_bytes(), "\n"), b"# Notes\n");
        // A file without a final line break, whose blank line was taken out.
        let with = appended(b"# Notes", b"x\n");
        assert_eq!(with.separator, "\n\n");
        let mut edited = with.text.clone();
        edited.remove(7);
        assert_eq!(removed_from(&edited, "\n\n"), b"# Notes\n");
    }
}
