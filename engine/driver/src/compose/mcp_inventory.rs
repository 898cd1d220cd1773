//! The home's MCP inventory on disk (`<home>/mcp.kdl`) for `acompose mcp list`: read
//! bounded and checked, every mistake returned with the file's text for rendering. Every
//! composition reads the same file through the converger's loader instead.

use acompose_engine::mcp::{self, Inventory};

use crate::compose::load::{error_kind, printable, read_limited};
use crate::error::{Findings, HostError};
use crate::home::Home;

/// The inventory of `home`: `Ok(None)` when there is no `mcp.kdl`; its problems as
/// `HostError::Diagnostics` (a secret-looking value is named by line only, never shown).
/// Warnings come back beside the inventory.
pub fn read(home: &Home) -> Result<Option<(Inventory, Findings)>, HostError> {
    let path = home.mcp_inventory();
    match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Ok(metadata) if metadata.is_file() => {}
        _ => return Err(HostError::invalid(&path, format!("`{}` is not a regular file", path.display()))),
    }
    let label = format!("{}/{}", mcp::ORIGIN, mcp::FILE);
    let bytes = match read_limited(&path, &label, acompose_engine::limits::MCP_INVENTORY) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(too_large)) => {
            let findings = Findings::collect(vec![too_large], |_| None);
            return Err(HostError::Diagnostics { subject: format!("`{label}` is refused"), findings });
        }
        Err(error) => {
            return Err(HostError::environment(
                &path,
                format!("cannot read `{}`: {}", path.display(), error_kind(&error)),
            ));
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(HostError::invalid(&path, format!("`{label}` is not valid UTF-8")));
    };
    let parsed = mcp::read_inventory(&text, &label);
    let printable = printable(&text);
    let findings = Findings::collect(parsed.diagnostics.clone(), |file| (file == label).then(|| printable.clone()));
    if parsed.has_errors() {
        return Err(HostError::Diagnostics { subject: format!("`{label}` is invalid"), findings });
    }
    Ok(Some((parsed.value, findings)))
}
