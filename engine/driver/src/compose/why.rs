//! `describe --why` on disk: answered through the bundle's trace index (`trace.index`)
//! when the bundle has one, reading the manifest, the index and only the blocks of
//! `trace.json` that hold the decisions asked about, each checked against its digest;
//! otherwise from the whole trace, as before. Both give the same answer, byte for byte.
//! The cli's `describe --why` calls [`why`]; any other face asking why must call it too.

use std::path::Path;

use acompose_engine::bundle::FileFacts;
use acompose_engine::describe::{self, Why, WhyError};
use acompose_engine::limits;
use acompose_engine::trace_index::{self, IndexProblem, Listed, Looked, ReadIndex, TraceIndex};

use crate::compose::parted::OwnFile;
use crate::error::HostError;

/// Why `--why` gave no answer.
#[derive(Debug)]
pub enum WhyFailure {
    /// A file of the bundle could not be read or does not match; the message names it.
    Bundle(HostError),
    /// The item is malformed, or no decision of the trace is about it.
    Item(WhyError),
}

/// Follows one item (`kind:name`) to every decision about it in the bundle at `bundle`.
///
/// A problem with the bundle comes before a problem with the item, as when the whole
/// trace is read: a bundle that cannot be read is reported even for a malformed item.
pub fn why(bundle: &Path, item: &str) -> Result<Why, WhyFailure> {
    let bundle_error = |message: String| WhyFailure::Bundle(HostError::invalid(bundle, message));
    let text = match listed_index(bundle) {
        Some(listed) => read_index(bundle, &listed).map_err(bundle_error)?,
        None => return whole_trace(bundle, item),
    };
    let index = match TraceIndex::parse(&text) {
        Ok(ReadIndex::Read(index)) => index,
        Ok(ReadIndex::OtherVersion) => return whole_trace(bundle, item),
        Err(problem) => return Err(bundle_error(problem_message(bundle, &problem))),
    };
    let trace = open_trace(bundle, index.trace_length()).map_err(bundle_error)?;
    let (kind, name) = describe::why_item(item).map_err(WhyFailure::Item)?;
    let mut read = |range: std::ops::Range<u64>| trace.read_at(range);
    match trace_index::look_up(&index, item, &mut read) {
        Ok(Looked::Found { decisions, providers }) => Ok(describe::why_answer(item, decisions, &providers)),
        Ok(Looked::NotFound { subjects }) => {
            Err(WhyFailure::Item(describe::why_unknown(item, kind, name, subjects.iter().map(String::as_str))))
        }
        Err(problem) => Err(bundle_error(problem_message(bundle, &problem))),
    }
}

/// The answer from the whole trace: a bundle without an index, or with one of another
/// version.
fn whole_trace(bundle: &Path, item: &str) -> Result<Why, WhyFailure> {
    let (_, _, trace) = crate::compose::bundle::read_provenance(bundle).map_err(WhyFailure::Bundle)?;
    describe::why(&trace, item).map_err(WhyFailure::Item)
}

/// The index's size and digest as the manifest lists them, read from the manifest's
/// first and last bytes: `None` for a bundle without an index, or whose manifest is not
/// as acompose writes it (those are read whole, which reports what is wrong with them).
fn listed_index(bundle: &Path) -> Option<Listed> {
    let manifest = OwnFile::locate(bundle, "manifest.json", limits::BUNDLE_MANIFEST).ok()??;
    let length = manifest.length().ok()?;
    if limits::BUNDLE_MANIFEST.check(usize::try_from(length).unwrap_or(usize::MAX), "manifest.json").is_some() {
        return None;
    }
    let head = manifest.read_at(0..trace_index::MANIFEST_HEAD.min(length)).ok()?;
    let tail_length = trace_index::MANIFEST_TAIL.min(length);
    let tail = manifest.read_at(length - tail_length..length).ok()?;
    trace_index::listed_index(&head, &tail)
}

/// The index's text, which must be what the manifest lists; an error naming the file
/// when it is missing, too large or different.
fn read_index(bundle: &Path, listed: &Listed) -> Result<Vec<u8>, String> {
    let index_path = bundle.join(trace_index::PATH);
    let label = index_path.display().to_string();
    let Some(file) = OwnFile::locate(bundle, trace_index::PATH, limits::BUNDLE_TRACE_INDEX)? else {
        return Err(format!("`{label}` is listed in the manifest but missing"));
    };
    let text = file
        .read(&label, limits::BUNDLE_TRACE_INDEX)?
        .map_err(|too_large| format!("`{label}`: {} [{}]", too_large.message, too_large.code))?;
    let facts = FileFacts::of(&text);
    if (facts.bytes, &facts.digest) != (listed.bytes, &listed.digest) {
        return Err(format!(
            "`{label}` does not match its digest in the manifest; it was changed after the bundle was written"
        ));
    }
    Ok(text)
}

/// `trace.json` (whole or as parts), when it is the size its index records.
fn open_trace(bundle: &Path, recorded: u64) -> Result<OwnFile, String> {
    let trace_path = bundle.join(acompose_engine::bundle::TraceFile::PATH);
    let shown = trace_path.display();
    let Some(trace) = OwnFile::locate(bundle, acompose_engine::bundle::TraceFile::PATH, limits::BUNDLE_TRACE)? else {
        return Err(format!("bundle `{}` has no readable `trace.json`: not found", bundle.display()));
    };
    let length = trace.length()?;
    if length != recorded {
        return Err(format!(
            "`{shown}` is {length} bytes, and its index records {recorded}; it was changed after the bundle was written"
        ));
    }
    Ok(trace)
}

/// A problem found through the index, naming the file it is in.
fn problem_message(bundle: &Path, problem: &IndexProblem) -> String {
    format!("`{}` {}", bundle.join(problem.file.path()).display(), problem.message)
}
