//! Instructions files the user already has: reads one bounded, and decides what a
//! projection writes there — the whole file when the projection owns it or it is missing,
//! else the user's bytes with the engine's managed block in them — and what removing a
//! recorded block writes back. A block whose digest is not the recorded one was edited by
//! hand and is refused, never overwritten.

use std::path::Path;

use acompose_engine::instruction_block::{self, BlockProblem};
use acompose_engine::projection::BlockRecord;

use crate::compose::load::error_kind;
use crate::error::HostError;

/// The largest instructions file of the user's that a projection edits.
const FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// Where a projection's instructions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// A file of the projection's own (missing, or owned by its record).
    Owned,
    /// A managed block in the user's file: the file's new bytes and the block's record.
    Block { text: Vec<u8>, record: BlockRecord },
}

/// Where `instructions` go at `path` in `target`: `owned` says whether the previous
/// projection owned the whole file, `previous` is its record of a block there.
pub fn place(
    target: &Path,
    path: &str,
    instructions: &[u8],
    owned: bool,
    previous: Option<&BlockRecord>,
) -> Result<Placement, HostError> {
    if owned {
        return Ok(Placement::Owned);
    }
    let full = target.join(path);
    let Some(text) = read_user_file(&full)? else {
        return Ok(Placement::Owned);
    };
    let with_block = match instruction_block::find(&text).map_err(|problem| refusal(&full, problem))? {
        None => instruction_block::appended(&text, instructions),
        Some(range) => {
            let Some(previous) = previous else {
                return Err(HostError::invalid(
                    &full,
                    format!(
                        "`{}` holds an acompose block no projection record knows; remove the block by hand, then project again",
                        full.display()
                    ),
                ));
            };
            check_digest(&full, &text[range.clone()], previous)?;
            instruction_block::replaced(&text, range, instructions, &previous.separator)
        }
    };
    let record = BlockRecord {
        path: path.to_owned(),
        separator: with_block.separator,
        digest: blake3::hash(&with_block.block).to_hex().to_string(),
        hidden_from_git: false,
    };
    Ok(Placement::Block { text: with_block.text, record })
}

/// The user's file at `block.path` in `target` without the recorded block: exactly the
/// bytes it had before the projection. `None` when the file or the block is gone already.
pub fn without(target: &Path, block: &BlockRecord) -> Result<Option<Vec<u8>>, HostError> {
    let full = target.join(&block.path);
    let Some(text) = read_user_file(&full)? else {
        return Ok(None);
    };
    let Some(range) = instruction_block::find(&text).map_err(|problem| refusal(&full, problem))? else {
        return Ok(None);
    };
    check_digest(&full, &text[range.clone()], block)?;
    Ok(Some(instruction_block::removed(&text, range, &block.separator)))
}

fn check_digest(full: &Path, block: &[u8], record: &BlockRecord) -> Result<(), HostError> {
    if blake3::hash(block).to_hex().as_str() == record.digest {
        return Ok(());
    }
    Err(HostError::invalid(
        full,
        format!(
            "the acompose block in `{}` was edited by hand; it is left alone: move your text outside the block (or remove the block) and project again",
            full.display()
        ),
    ))
}

fn refusal(full: &Path, problem: BlockProblem) -> HostError {
    let reason = match problem {
        BlockProblem::Malformed => "its acompose markers are not one opening line followed by one closing line",
    };
    HostError::invalid(full, format!("`{}` is left alone: {reason}; fix it by hand", full.display()))
}

/// A user's file a projection edits (an instructions file, a harness's MCP file): its
/// bytes, `None` when nothing is there; anything else (a folder, a link) is for the
/// transaction to refuse, so it reads as `None` too. A file over 4 MiB is refused.
pub(crate) fn read_user_file(full: &Path) -> Result<Option<Vec<u8>>, HostError> {
    match std::fs::symlink_metadata(full) {
        Ok(metadata) if metadata.is_file() && metadata.len() <= FILE_LIMIT => {
            std::fs::read(full).map(Some).map_err(|error| {
                HostError::environment(full, format!("cannot read `{}`: {}", full.display(), error_kind(&error)))
            })
        }
        Ok(metadata) if metadata.is_file() => Err(HostError::invalid(
            full,
            format!("`{}` is larger than 4 MiB; acompose does not edit it", full.display()),
        )),
        Ok(_) => Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => {
            Err(HostError::environment(full, format!("cannot inspect `{}`: {}", full.display(), error_kind(&error))))
        }
    }
}
