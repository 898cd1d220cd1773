//! Which MCP servers of the home's inventory the assigned role receives: those tagged
//! for it in the inventory, those a trusted root's `roles.kdl` names for it with
//! `mcp-server`, and those a private overlay selects for it. Fails closed: a name the inventory does not have is an error, never a
//! skip. Every inventory server gets an `mcp:<name>` decision.

use std::collections::BTreeMap;

use super::Resolver;
use crate::audit::AuditKind;
use crate::diagnostic::{Span, sanitize};
use crate::mcp::{Inventory, McpServer, mcp_inventory};
use crate::overlay::Effect;
use crate::provider::role_view;
use crate::trace::Outcome;

/// The decision's source for every MCP server.
const SOURCE: &str = "mcp-inventory";

/// Where an overlay selects a server for the role: its file as shown, the entry's place
/// for reasons (`overlay \`team.kdl\` line 4`), its line and the name's span.
struct OverlaySelection {
    file: String,
    at: String,
    line: usize,
    span: Span,
}

impl Resolver<'_> {
    /// The role's servers in inventory order, each decided in the trace.
    pub(super) fn select_mcp_servers(&mut self) -> Vec<McpServer> {
        let db = self.db;
        let named = self.mcp_servers_named_in_roots();
        let overlaid = self.mcp_servers_selected_in_overlays();
        let Some(file) = self.composition.mcp_inventory(db) else {
            self.unknown_mcp_servers(&named, &overlaid, None, "");
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
        self.unknown_mcp_servers(&named, &overlaid, Some(inventory), &inventory_path);
        let mut selected = Vec::new();
        for entry in &inventory.servers {
            let name = &entry.server.name;
            let tagged = entry.roles.contains(&self.slug);
            let (outcome, cause, reason) = match (tagged, named.get(name), overlaid.get(name)) {
                (true, _, _) => {
                    (Outcome::Selected, "mcp-tagged", format!("`{inventory_path}` tags it for `{}`", self.slug))
                }
                (false, Some((roles_file, _)), _) => {
                    (Outcome::Selected, "mcp-selected", format!("`{roles_file}` names it for `{}`", self.slug))
                }
                (false, None, Some(selection)) => (
                    Outcome::Selected,
                    "overlay-mcp-selected",
                    format!("selected for role `{}` by {}", self.slug, selection.at),
                ),
                (false, None, None) => (
                    Outcome::Excluded,
                    "mcp-not-for-role",
                    format!("neither tagged for `{}` nor named for it in a `roles.kdl` or an overlay", self.slug),
                ),
            };
            self.decide(format!("mcp:{name}"), "mcp-server", SOURCE, outcome, cause, reason, Vec::new());
            if outcome == Outcome::Selected {
                selected.push(entry.server.clone());
            }
        }
        if !selected.is_empty() {
            // What a harness is given of the inventory: its hidden characters are the
            // audit's; its secrets were refused before it was parsed.
            let kinds = [AuditKind::TagCharacters, AuditKind::BidiControls, AuditKind::ZeroWidth];
            self.audit_own_file(file, &kinds);
        }
        selected
    }

    /// Reports every name a `roles.kdl` or an overlay gives that the inventory (none
    /// without `mcp.kdl`) does not declare, where it is written.
    fn unknown_mcp_servers(
        &mut self,
        named: &BTreeMap<String, (String, Span)>,
        overlaid: &BTreeMap<String, OverlaySelection>,
        inventory: Option<&Inventory>,
        inventory_path: &str,
    ) {
        let unknown = |name: &str| inventory.is_none_or(|inventory| inventory.server(name).is_none());
        let problem = |name: &str| match inventory {
            None => (
                format!("MCP server `{}` is not in an inventory: home has no `mcp.kdl`", sanitize(name)),
                "declare the server in `<home>/mcp.kdl` (docs/mcp.md)".to_owned(),
            ),
            Some(inventory) => {
                let names = inventory.servers.iter().map(|entry| entry.server.name.as_str());
                let hint = crate::suggest::did_you_mean(name, names)
                    .unwrap_or_else(|| format!("declare it in `{inventory_path}`"));
                (format!("MCP server `{}` is not in `{inventory_path}`", sanitize(name)), hint)
            }
        };
        for (name, (roles_file, span)) in named {
            if unknown(name) {
                let (message, hint) = problem(name);
                self.error("unknown-mcp-server", roles_file.clone(), Some(*span), message, hint);
            }
        }
        for (name, selection) in overlaid {
            if unknown(name) {
                let (message, hint) = problem(name);
                let message = format!("line {}: {message}", selection.line);
                self.error("unknown-mcp-server", selection.file.clone(), Some(selection.span), message, hint);
            }
        }
    }

    /// Every server the overlays' `mcp-server` entries select for the role, with the
    /// first place it is written.
    fn mcp_servers_selected_in_overlays(&self) -> BTreeMap<String, OverlaySelection> {
        let mut selected = BTreeMap::new();
        for overlay in &self.overlays {
            for entry in &overlay.share.entries {
                let Effect::McpServers { names, .. } = &entry.effect else { continue };
                for (name, span) in names {
                    selected.entry(name.clone()).or_insert_with(|| OverlaySelection {
                        file: overlay.file.display_path(self.db),
                        at: overlay.share.at(),
                        line: entry.line,
                        span: *span,
                    });
                }
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
