//! `acompose launch ROLE HARNESS [-- ARGS…]` (and `acompose ROLE HARNESS [ARGS…]`): the
//! host converges, composes the role's bundle and projects it into a runtime home; on an
//! interactive terminal this module shows the role card and waits for Enter (`--yes`
//! skips it), then the harness runs in the foreground and what it wrote to its launch
//! copy is carried back to the user's file when it exits.

use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use acompose_driver::convergence::launch::{LaunchRequest, Prepared, finish, person_model, prepare, spawn};
use acompose_driver::delivery::tree_sight::launch_same_name_warnings;
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::harness_layout::{self, Layout};
use acompose_driver::engine::render;

use crate::progress::TerminalProgress;
use crate::terminal::{Terminal, error_text, report_error};
use crate::{exit, print_stderr};

#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// The role to assign (a slug of the person source).
    pub role: String,
    /// The harness to start.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(harness_layout::harness_names()))]
    pub harness: String,
    /// The model tier to compose for (default: `$AGENT_COMPOSE_MODEL_TIER`, else the
    /// tier of the role's bundle in the home, else `frontier`).
    #[arg(long, value_name = "TIER")]
    pub tier: Option<String>,
    /// Launch even when the working folder holds another role's projection, which the
    /// harness would read too.
    #[arg(long)]
    pub allow_foreign_context: bool,
    /// Launch this bundle (a path, or a bundle id of the home) instead of the role's
    /// current one: a bundle pulled from a registry, say. It must be of ROLE.
    #[arg(long, value_name = "BUNDLE")]
    pub bundle: Option<PathBuf>,
    /// Start without showing the role card and waiting for Enter.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The folder `owner/repo` paths resolve under (default: `$PROJECTS_ROOT`, else
    /// `projects_root` in `agent-compose.yaml`, else `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// Arguments passed to the harness unchanged.
    #[arg(last = true, value_name = "ARGS")]
    pub arguments: Vec<OsString>,
}

/// The index of the first word after the global flags.
fn first_word(arguments: &[OsString]) -> usize {
    let mut index = 1;
    while let Some(argument) = arguments.get(index).and_then(|argument| argument.to_str()) {
        match argument {
            "--home" | "--color" => index += 2,
            flag if flag.starts_with('-') => index += 1,
            _ => break,
        }
    }
    index
}

/// The error of `acompose ROLE HARNES` with a misspelt harness: the first word is no
/// command and the second is not a harness but close to one. `None` otherwise (clap then
/// reports an unknown command, with its own suggestion).
pub fn misspelt_harness(arguments: &[OsString], commands: &[String]) -> Option<String> {
    let index = first_word(arguments);
    let word = |offset: usize| arguments.get(index + offset).and_then(|argument| argument.to_str());
    let (role, harness) = (word(0)?, word(1)?);
    if role == "help" || commands.iter().any(|command| command == role) || harness.starts_with('-') {
        return None;
    }
    let names = harness_layout::harness_names();
    if names.contains(&harness) {
        return None;
    }
    let suggestion = acompose_driver::engine::suggest::did_you_mean(harness, names.iter().copied())?;
    Some(format!(
        "error: `{}` is not a harness; {suggestion} (`acompose ROLE HARNESS` starts HARNESS as ROLE; harnesses: {})\n",
        acompose_driver::engine::diagnostic::sanitize(harness),
        names.join(", ")
    ))
}

/// Rewrites `acompose ROLE HARNESS ARGS…` into `acompose launch ROLE HARNESS -- ARGS…`
/// when the first word is no command and the second a known harness.
pub fn shorthand(arguments: Vec<OsString>, commands: &[String]) -> Vec<OsString> {
    let index = first_word(&arguments);
    let word = |offset: usize| arguments.get(index + offset).and_then(|argument| argument.to_str());
    match (word(0), word(1)) {
        (Some(role), Some(harness))
            if role != "help"
                && !commands.iter().any(|command| command == role)
                && harness_layout::layout(harness).is_some() =>
        {
            let mut rewritten = arguments[..index].to_vec();
            rewritten.extend(["launch".into(), role.into(), harness.into(), "--".into()]);
            rewritten.extend(arguments[index + 2..].iter().cloned());
            rewritten
        }
        _ => arguments,
    }
}

/// The launch review's MCP lines: the role's servers, and the user's own servers the
/// runtime home hides.
fn mcp_lines(prepared: &Prepared, layout: &harness_layout::Layout) -> String {
    let names = |names: &[String]| names.iter().map(|name| sanitize(name)).collect::<Vec<_>>().join(", ");
    let mut lines = String::new();
    if layout.mcp.is_none() && !prepared.mcp_servers.is_empty() {
        // The row has no file acompose writes servers into: say so rather than claim them.
        lines.push_str(&format!(
            "mcp servers: none delivered to {} (acompose writes no MCP file for it; the role selects {}); your own configuration is read as it is\n",
            layout.display_name,
            names(&prepared.mcp_servers)
        ));
        return lines;
    }
    if !prepared.mcp_servers.is_empty() {
        lines.push_str(&format!("mcp servers: {}\n", names(&prepared.mcp_servers)));
    }
    if !prepared.mcp_hidden.is_empty() {
        lines.push_str(&format!(
            "hidden from this launch (your own, not the role's): {}\n",
            names(&prepared.mcp_hidden)
        ));
    }
    lines
}

/// One line about what else the harness reads from the working folder: other skills,
/// each one named like a role skill with what the harness does about it, and other
/// roles' projections let through with `--allow-foreign-context`.
fn warn_about_sight(prepared: &Prepared, layout: &Layout, terminal: &Terminal) {
    for warning in prepared.projection.iter().flat_map(|report| &report.listing) {
        print_stderr(&format!("warning: {warning}\n"));
    }
    for (folder, role, layouts) in &prepared.sight.foreign {
        print_stderr(&format!(
            "warning: `{}` holds a projection of `{}` ({}), which the harness reads too\n",
            sanitize(&folder.display().to_string()),
            sanitize(role),
            sanitize(layouts)
        ));
    }
    for warning in launch_same_name_warnings(&prepared.sight, &prepared.runtime, layout) {
        print_stderr(&format!("warning: {warning}\n"));
    }
    let others = &prepared.sight.other_skills;
    if !others.is_empty() && !terminal.quiet {
        let mut folders: Vec<String> = others
            .iter()
            .filter_map(|skill| skill.parent())
            .map(|folder| sanitize(&folder.display().to_string()))
            .collect();
        folders.dedup();
        print_stderr(&format!(
            "warning: the harness also reads {} skill{} of this checkout that are not the role's, in {}\n",
            others.len(),
            if others.len() == 1 { "" } else { "s" },
            folders.join(", ")
        ));
    }
}

fn confirm(text: &str) -> bool {
    print_stderr(text);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok_and(|read| read > 0)
}

pub(crate) fn run(args: LaunchArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let Some(layout) = harness_layout::layout(&args.harness) else {
        return exit::USAGE;
    };
    let (home, projects) = match crate::home_and_projects(home, args.projects_root.as_deref()) {
        Ok(places) => places,
        Err(error) => return report_error(&error, terminal),
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let bundle = match args.bundle.as_deref().map(|name| crate::named_bundle(Some(&home), name)).transpose() {
        Ok(bundle) => bundle,
        Err(error) => return report_error(&error, terminal),
    };
    // A pulled bundle must pass the home's `bundle_signers` policy.
    if let Some(bundle) = &bundle
        && let Err(error) = acompose_driver::compose::signature::enforce_for_use(&home, bundle)
    {
        return report_error(&error, terminal);
    }
    let request = LaunchRequest {
        home: &home,
        projects: &projects,
        role: &args.role,
        layout,
        tier: args.tier.as_deref(),
        cwd: &cwd,
        allow_foreign: args.allow_foreign_context,
        bundle: bundle.as_deref(),
        path_variable: None,
    };
    let progress = TerminalProgress::new(terminal);
    let prepared = match prepare(&request, &progress) {
        Ok(prepared) => prepared,
        Err(error) => return report_error(&error, terminal),
    };
    warn_about_sight(&prepared, layout, terminal);
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut headline = format!(
        "launching {} as `{}` (tier {}, {} skills) from {}\n",
        layout.display_name,
        prepared.role,
        prepared.tier,
        prepared.skills,
        prepared.runtime.display()
    );
    headline.push_str(&mcp_lines(&prepared, layout));
    if interactive && !args.yes {
        let model = match &prepared.model {
            Some(model) => Ok(model.clone()),
            None => person_model(&home, &progress),
        };
        let card = model
            .ok()
            .and_then(|model| {
                model.role(&prepared.role).map(|role| render::identity_card(&model, role, terminal.stderr))
            })
            .unwrap_or_default();
        if !confirm(&format!("{card}\n{headline}press Enter to start, Ctrl-C to stop ")) {
            print_stderr("not started\n");
            return exit::INVALID;
        }
    } else if !terminal.quiet {
        print_stderr(&headline);
    }
    run_harness(&prepared, &args.arguments, terminal)
}

/// Runs the harness in the foreground and exits as it did: the terminal's Ctrl-C and
/// Ctrl-\\ reach it directly (this process only outlives them), a SIGTERM or SIGHUP sent
/// to this process is passed on to it; once it has exited, what it wrote to its launch
/// copy is carried back to the user's own file.
fn run_harness(prepared: &Prepared, arguments: &[std::ffi::OsString], terminal: &Terminal) -> u8 {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let outlived = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let registered: Vec<signal_hook::SigId> = [SIGINT, SIGQUIT]
        .into_iter()
        .filter_map(|signal| signal_hook::flag::register(signal, std::sync::Arc::clone(&outlived)).ok())
        .collect();
    let mut child = match spawn(prepared, arguments) {
        Ok(child) => child,
        Err(error) => return report_error(&error, terminal),
    };
    let pid = child.id();
    let forwarded = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP]).ok();
    let handle = forwarded.as_ref().map(signal_hook::iterator::Signals::handle);
    let forwarder = forwarded.map(|mut signals| {
        std::thread::spawn(move || {
            for signal in signals.forever() {
                let signal = rustix::process::Signal::from_named_raw(signal);
                let target = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0));
                if let (Some(signal), Some(target)) = (signal, target) {
                    let _ = rustix::process::kill_process(target, signal);
                }
            }
        })
    });
    let status = child.wait();
    if let Some(handle) = handle {
        handle.close();
    }
    if let Some(forwarder) = forwarder {
        let _ = forwarder.join();
    }
    for id in registered {
        signal_hook::low_level::unregister(id);
    }
    if let Some(error) = finish(prepared) {
        print_stderr(&format!("warning: {}", error_text(&error, terminal)));
    }
    match status {
        Ok(status) => exit_status_code(status),
        Err(_) => exit::INVALID,
    }
}

/// The harness's exit code, or 128 + the signal that ended it, as a shell reports it.
fn exit_status_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(words: &[&str]) -> Vec<String> {
        let commands = ["roster".to_owned(), "launch".to_owned()];
        shorthand(words.iter().map(OsString::from).collect(), &commands)
            .into_iter()
            .map(|word| word.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_role_and_a_harness_become_a_launch_with_every_later_word_for_the_harness() {
        assert_eq!(
            rewritten(&["acompose", "--home", "h", "platform", "claude", "--continue"]),
            ["acompose", "--home", "h", "launch", "platform", "claude", "--", "--continue"]
        );
    }

    #[test]
    fn commands_help_and_unknown_harnesses_are_left_alone() {
        for words in
            [&["acompose", "roster", "claude"][..], &["acompose", "help", "claude"], &["acompose", "platform", "vim"]]
        {
            assert_eq!(rewritten(words), words);
        }
    }
}
