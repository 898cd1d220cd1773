//! `acompose mcp list [--json]`: the servers of the home's MCP inventory, each with its
//! transport, command or URL, the variables it needs and the roles it is tagged for.
//! Reading and checking the file is the driver's (`acompose_driver::compose::mcp_inventory`).

use std::path::Path;

use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::mcp::{Inventory, InventoryServer};
use serde::Serialize;

use crate::terminal::{Terminal, render_diagnostics, report_error};
use crate::{exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum McpCommand {
    /// List the servers of `<home>/mcp.kdl` with the roles each is tagged for, after
    /// checking the file (file and line for every mistake).
    List(ListArgs),
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON (`acompose.mcp-inventory.v1`).
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: McpArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    match args.command {
        McpCommand::List(list) => run_list(&list, home, terminal),
    }
}

/// `mcp list --json`: the inventory as a document of its own.
#[derive(Serialize)]
struct ListDocument<'a> {
    format: &'static str,
    servers: Vec<ServerRow<'a>>,
}

#[derive(Serialize)]
struct ServerRow<'a> {
    #[serde(flatten)]
    server: &'a acompose_driver::engine::mcp::McpServer,
    roles: &'a [String],
}

fn run_list(args: &ListArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let home = match acompose_driver::home::resolve_home(home) {
        Ok(home) => home,
        Err(error) => return report_error(&error, terminal),
    };
    let (inventory, warnings) = match acompose_driver::compose::mcp_inventory::read(&home) {
        Ok(Some(read)) => read,
        Ok(None) => {
            if args.json {
                print_stdout(&json(&Inventory::default()));
            } else if !terminal.quiet {
                print_stdout(&format!(
                    "no MCP inventory: `{}` does not exist (docs/mcp.md)\n",
                    sanitize(&home.mcp_inventory().display().to_string())
                ));
            }
            return exit::SUCCESS;
        }
        Err(error) => return report_error(&error, terminal),
    };
    if !warnings.is_empty() && !terminal.quiet {
        print_stderr(&render_diagnostics(&warnings.diagnostics, terminal.stderr, &|path| warnings.text_of(path)));
    }
    if args.json {
        print_stdout(&json(&inventory));
    } else {
        print_stdout(&text(&inventory));
    }
    exit::SUCCESS
}

fn json(inventory: &Inventory) -> String {
    let document = ListDocument {
        format: "acompose.mcp-inventory.v1",
        servers: inventory
            .servers
            .iter()
            .map(|entry| ServerRow { server: &entry.server, roles: &entry.roles })
            .collect(),
    };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

/// One line per server: name, transport, command or URL, variables, roles.
fn text(inventory: &Inventory) -> String {
    let width = inventory.servers.iter().map(|entry| entry.server.name.len()).max().unwrap_or(0);
    let mut text = String::new();
    for entry in &inventory.servers {
        text.push_str(&line(entry, width));
        text.push('\n');
    }
    if inventory.servers.is_empty() {
        text.push_str("no servers\n");
    }
    text
}

fn line(entry: &InventoryServer, width: usize) -> String {
    let server = &entry.server;
    let reach = match (&server.command, &server.url) {
        (Some(command), _) => std::iter::once(command.as_str())
            .chain(server.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(url)) => url.clone(),
        (None, None) => String::new(),
    };
    let mut line = format!("{:<width$}  {:<5}  {}", server.name, server.transport.name(), sanitize(&reach));
    if !server.env.is_empty() {
        line.push_str(&format!("  env {}", server.env.join(",")));
    }
    if !server.headers.is_empty() {
        let headers: Vec<String> =
            server.headers.iter().map(|header| format!("{}<-{}", header.name, header.env)).collect();
        line.push_str(&format!("  headers {}", headers.join(",")));
    }
    let roles = if entry.roles.is_empty() { "(roles.kdl only)".to_owned() } else { entry.roles.join(",") };
    line.push_str(&format!("  roles {roles}"));
    line
}
