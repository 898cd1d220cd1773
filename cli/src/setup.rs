//! `acompose setup HARNESS`: the host adds the harness to `load_points` and
//! `skill_load_points` in `agent-compose.yaml`, then converges and delivers; this module
//! prints what changed.

use std::path::{Path, PathBuf};

use acompose_driver::convergence::converge_home;
use acompose_driver::delivery::mounts::{deliver, enable};
use acompose_driver::engine::harness_layout;
use acompose_driver::engine::host_config::KeyChange;
use acompose_driver::home::{read_config, resolve_home};

use crate::progress::TerminalProgress;
use crate::terminal::{Terminal, report_error};
use crate::{exit, print_stdout};

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The harness to deliver the roster into.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(harness_layout::harness_names()))]
    pub harness: String,
    /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
    /// `projects_root` in `agent-compose.yaml`, else `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
}

fn change_line(change: KeyChange, harness: &str) -> String {
    match change {
        KeyChange::Added(key) => format!("added     `{key}.{harness}`\n"),
        KeyChange::Kept(key) => format!("kept      `{key}.{harness}` as written\n"),
        KeyChange::OptedOut(key) => {
            format!("kept      `{key}.{harness}` opted out (`null`); remove that line to let setup wire it\n")
        }
    }
}

pub(crate) fn run(args: SetupArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(error) => return report_error(&error, terminal),
    };
    let changes = match enable(&home, &args.harness) {
        Ok(changes) => changes,
        Err(error) => return report_error(&error, terminal),
    };
    let projects = match crate::home_and_projects(Some(&home), args.projects_root.as_deref()) {
        Ok((_, projects)) => projects,
        Err(error) => return report_error(&error, terminal),
    };
    let progress = TerminalProgress::new(terminal);
    let delivered = match converge_home(&home, &projects, &progress)
        .and_then(|_| read_config(&home, &progress))
        .and_then(|config| deliver(&home, &config))
    {
        Ok(delivered) => delivered,
        Err(error) => return report_error(&error, terminal),
    };
    for kept in &delivered.kept {
        crate::terminal::warn(terminal, &crate::terminal::kept_warning(kept));
    }
    if !terminal.quiet {
        let mut text = format!("config    {}\n", home.config_file().display());
        for change in changes {
            text.push_str(&change_line(change, &args.harness));
        }
        text.push_str(&format!(
            "delivery  {} linked, {} unchanged, {} removed, {} kept as yours\n",
            delivered.created.len(),
            delivered.unchanged,
            delivered.removed.len(),
            delivered.kept.len()
        ));
        print_stdout(&text);
    }
    exit::SUCCESS
}
