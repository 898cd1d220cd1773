//! A harness's MCP configuration file the user already has: reads it bounded, and decides
//! what a projection writes there — its own file when it owns the path or nothing is
//! there, else the user's file with the role's servers merged in (the user's other keys
//! and servers kept) — and what taking the servers out again writes back.

use std::path::Path;

use acompose_engine::harness_layout::{Layout, Scope};
use acompose_engine::mcp::McpServer;
use acompose_engine::mcp::harness_config::{self, McpPlaces};
use acompose_engine::projection::McpRecord;

use crate::error::HostError;
use crate::instruction_block::read_user_file;

/// The user's file at `path` in `target` with `servers` merged in, and its record; `None`
/// when the projection owns the path (`owned`) or nothing is there, so its own file goes
/// there. `previous` is the record of the servers an earlier projection merged there.
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
    let previous_names = previous.map_or(&[][..], |record| record.servers.as_slice());
    let had_key = harness_config::has_key(path, &existing, places.key);
    let bytes = harness_config::merged(path, &existing, places, servers, previous_names)
        .map_err(|problem| refusal(&full, places, &problem))?;
    let created_key = previous.map_or(!had_key, |record| record.created_key);
    let record = McpRecord {
        path: path.to_owned(),
        layout: layout.harness.to_owned(),
        servers: servers.iter().map(|server| server.name.clone()).collect(),
        created_key,
    };
    Ok(Some((bytes, record)))
}

/// The user's file without the servers `record` says the projection added; `None` when
/// the file is gone.
pub fn without(target: &Path, record: &McpRecord) -> Result<Option<Vec<u8>>, HostError> {
    let Some(places) = acompose_engine::harness_layout::layout(&record.layout).and_then(|layout| layout.mcp) else {
        return Ok(None);
    };
    let full = target.join(&record.path);
    let Some(existing) = read_user_file(&full)? else { return Ok(None) };
    harness_config::without(&record.path, &existing, &places, &record.servers, record.created_key)
        .map(Some)
        .map_err(|problem| refusal(&full, &places, &problem))
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
