//! Which MCP servers of the home's inventory the assigned role receives: those tagged
//! for it in the inventory, and those a trusted root's `roles.kdl` names for it with
//! `mcp-server`. Fails closed: a name the inventory does not have is an error, never a
//! skip. Every inventory server gets an `mcp:<name>` decision.

use std::collections::BTreeMap;

use super::Resolver;
use crate::diagnostic::{Span, sanitize};
use crate::mcp::{McpServer, mcp_inventory};
use crate::provider::role_view;
use crate::trace::Outcome;

/// The decision's source for every MCP server.
const SOURCE: &str = "mcp-inventory";

impl Resolver<'_> {
    /// The role's servers in inventory order, each decided in the trace.
    pub(super) fn select_mcp_servers(&mut self) -> Vec<McpServer> {
        let db = self.db;
        let named = self.mcp_servers_named_in_roots();
        let Some(file) = self.composition.mcp_inventory(db) else {
            for (name, (roles_file, span)) in named {
                self.error(
                    "unknown-mcp-server",
                    roles_file,
                    Some(span),
                    format!("MCP server `{}` is not in an inventory: home has no `mcp.kdl`", sanitize(&name)),
                    "declare the server in `<home>/mcp.kdl` (docs/mcp.md)",
                );
            }
            return Vec::new();
        };
        let parsed = mcp_inventory(db, file);
        self.diagnostics.extend(parsed.diagnostics.iter().cloned());
        if parsed.has_errors() {
            // The inventory's own errors fail the composition; every name would only
            // repeat them as unknown.
            return Vec::new();
        }
        let inventory = &parsed.value;
        let inventory_path = file.display_path(db);
        for (name, (roles_file, span)) in &named {
            if inventory.server(name).is_none() {
                let names = inventory.servers.iter().map(|entry| entry.server.name.as_str());
                let hint = crate::suggest::did_you_mean(name, names)
                    .unwrap_or_else(|| format!("declare it in `{inventory_path}`"));
                self.error(
                    "unknown-mcp-server",
                    roles_file.clone(),
                    Some(*span),
                    format!("MCP server `{}` is not in `{inventory_path}`", sanitize(name)),
                    hint,
                );
            }
        }
        let mut selected = Vec::new();
        for entry in &inventory.servers {
            let name = &entry.server.name;
            let tagged = entry.roles.contains(&self.slug);
            let (outcome, cause, reason) = match (tagged, named.get(name)) {
                (true, _) => {
                    (Outcome::Selected, "mcp-tagged", format!("`{inventory_path}` tags it for `{}`", self.slug))
                }
                (false, Some((roles_file, _))) => {
                    (Outcome::Selected, "mcp-selected", format!("`{roles_file}` names it for `{}`", self.slug))
                }
                (false, None) => (
                    Outcome::Excluded,
                    "mcp-not-for-role",
                    format!("neither tagged for `{}` nor named for it in a `roles.kdl`", self.slug),
                ),
            };
            self.decide(format!("mcp:{name}"), "mcp-server", SOURCE, outcome, cause, reason, Vec::new());
            if outcome == Outcome::Selected {
                selected.push(entry.server.clone());
            }
        }
        selected
    }

    /// Every `mcp-server` name the role's blocks in the composition's trusted roots
    /// give, with the first place it is written.
    fn mcp_servers_named_in_roots(&mut self) -> BTreeMap<String, (String, Span)> {
        let db = self.db;
        let mut named: BTreeMap<String, (String, Span)> = BTreeMap::new();
        for source in self.composition.sources(db) {
            let view = &role_view(db, source.catalogue, self.slug.clone()).value;
            let Some(roles_file) = view.roles_file else { continue };
            for (name, span) in &view.mcp_servers {
                named.entry(name.clone()).or_insert_with(|| (roles_file.display_path(db), *span));
            }
        }
        named
    }
}
