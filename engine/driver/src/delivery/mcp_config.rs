//! A harness's MCP configuration file the user already has: reads it bounded, and decides
//! what a projection writes there — its own file when it owns the path or nothing is
//! there, else the user's bytes with the role's servers added as text of their own (the
//! engine's `splice`) — and what taking the servers out again writes back: exactly the
//! user's bytes.

use std::path::Path;

use acompose_engine::diagnostic::sanitize;
use acompose_engine::harness_layout::{Layout, Scope};
use acompose_engine::mcp::McpServer;
use acompose_engine::mcp::harness_config::{self, McpPlaces};
use acompose_engine::mcp::splice;
use acompose_engine::projection::McpRecord;

use crate::delivery::instruction_block::read_user_file;
use crate::error::HostError;

/// The user's file at `path` in `target` with `servers` added as text of their own, and
/// its record; `None` when the projection owns the path (`owned`) or nothing is there, so
/// its own file goes there. `previous` is the record of the servers an earlier projection
/// added there, taken out first.
pub fn place(
    target: &Path,
    path: &str,
    layout: &Layout,
    servers: &[McpServer],
    owned: bool,
    previous: Option<&McpRecord>,
) -> Result<Option<(Vec<u8>, McpRecord)>, HostError> {
    let Some(places) = layout.mcp.as_ref() else { return Ok(None) };
    if owned {
        return Ok(None);
    }
    let full = target.join(path);
    let Some(existing) = read_user_file(&full)? else { return Ok(None) };
    let base = match previous {
        Some(record) => user_bytes(&full, path, &existing, places, record)?.unwrap_or(existing),
        None => existing,
    };
    let spliced = splice::spliced(path, &base, places, servers).map_err(|problem| refusal(&full, places, &problem))?;
    let record = McpRecord {
        path: path.to_owned(),
        layout: layout.harness.to_owned(),
        servers: servers.iter().map(|server| server.name.clone()).collect(),
        created_key: false,
        inserted: spliced.inserted,
    };
    Ok(Some((spliced.bytes, record)))
}

/// The user's file without the servers `record` says the projection added; `None` when
/// the file is gone, or the servers are (a pull replaced the file).
pub fn without(target: &Path, record: &McpRecord) -> Result<Option<Vec<u8>>, HostError> {
    let Some(places) = acompose_engine::harness_layout::layout(&record.layout).and_then(|layout| layout.mcp) else {
        return Ok(None);
    };
    let full = target.join(&record.path);
    let Some(existing) = read_user_file(&full)? else { return Ok(None) };
    user_bytes(&full, &record.path, &existing, &places, record)
}

/// `existing` without the servers `record` names: the text it inserted taken out, or
/// for a record of an earlier version (whose merge rewrote the file) the servers taken
/// out by name. `None` when they are not there. Servers of the record's that are there
/// but not as inserted were edited by hand, and are refused.
fn user_bytes(
    full: &Path,
    path: &str,
    existing: &[u8],
    places: &McpPlaces,
    record: &McpRecord,
) -> Result<Option<Vec<u8>>, HostError> {
    if record.inserted.is_empty() {
        let by_name = harness_config::without(path, existing, places, &record.servers, record.created_key)
            .map_err(|problem| refusal(full, places, &problem))?;
        return Ok(Some(committed_equal(full, &by_name).unwrap_or(by_name)));
    }
    if let Some(bytes) = splice::unspliced(existing, &record.inserted) {
        return Ok(Some(bytes));
    }
    let configured =
        harness_config::configured(path, existing, places.key).map_err(|problem| refusal(full, places, &problem))?;
    let edited: Vec<&String> = record.servers.iter().filter(|name| configured.contains(name)).collect();
    if edited.is_empty() {
        return Ok(None);
    }
    let names: Vec<String> = edited.iter().map(|name| format!("`{}`", sanitize(name))).collect();
    Err(HostError::invalid(
        full,
        format!(
            "the MCP servers acompose added to `{}` ({}) were edited by hand; acompose leaves them alone: take them out of the file (your own servers stay), then project again",
            full.display(),
            names.join(", ")
        ),
    ))
}

/// The bytes git holds for the file at `full` (its index entry), when they say in JSON
/// exactly what `rewritten` says: an earlier version's merge rewrote the user's file, and
/// taking its servers out by name gives the user's values back but not their layout,
/// which the committed file still has.
fn committed_equal(full: &Path, rewritten: &[u8]) -> Option<Vec<u8>> {
    let folder = full.parent()?;
    let repository = crate::delivery::git_exclude::Repository::of(folder)?;
    let relative = repository.relative(folder)?;
    let name = full.file_name()?.to_str()?;
    let path = if relative.is_empty() { name.to_owned() } else { format!("{relative}/{name}") };
    let committed = repository.git(&["cat-file", "blob", &format!(":{path}")]).ok()?;
    let parsed = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok();
    let same = parsed(&committed).is_some_and(|value| Some(value) == parsed(rewritten));
    same.then_some(committed)
}

/// The harness MCP file a layout reads at a scope, when it reads one.
pub fn file_of(layout: &Layout, scope: Scope) -> Option<&'static str> {
    let places = layout.mcp.as_ref()?;
    let path = acompose_engine::projection::mcp_path(places, scope);
    (!path.is_empty()).then_some(path)
}

fn refusal(full: &Path, places: &McpPlaces, problem: &harness_config::MergeProblem) -> HostError {
    let shown = full.display().to_string();
    HostError::invalid(full, format!("{}; acompose leaves it alone", problem.message(&shown, places.key)))
}
