//! The acompose command line: parses arguments, dispatches each command to the host
//! (`acompose_driver`), renders its reports and diagnostics, and chooses the exit code.
//! Reads and writes no file itself: every disk access is the host's.

pub mod bundle;
pub mod bundle_list;
pub mod bundle_registry;
pub mod catalogue;
pub mod catalogue_check;
pub mod completions;
pub mod compose;
pub mod config;
pub mod converge;
pub mod describe;
pub mod doctor;
pub mod exit;
pub mod gc;
pub mod identity;
pub mod launch;
pub mod mcp;
pub mod output;
pub mod overlay;
pub mod people;
pub mod progress;
pub mod project;
pub mod roster;
pub mod sarif;
pub mod serve;
pub mod setup;
pub mod snippet;
pub mod terminal;
pub mod verify;
pub mod watch;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acompose_driver::engine::diagnostic::terminal_safe;
use acompose_driver::home::settings::Flags;
use clap::{Args, Parser, Subcommand};

use crate::terminal::{ColorChoice, Terminal, report_error};

#[derive(Debug, Parser)]
#[command(
    name = "acompose",
    version,
    about = "Compose the context AI coding agents load: roster, skills, bundles, People."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub converge: converge::ConvergeArgs,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The acompose home (default: `$ACOMPOSE_HOME`, else `~/.agent-compose`).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// When to colour output; `NO_COLOR` is respected and colour needs a terminal.
    #[arg(long, global = true, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print only errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more detail.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Selects a person source and its personality libraries.
#[derive(Debug, Clone, Args, Default)]
pub struct SourceArgs {
    /// A person package directory, or `roster:core` (default: `person_source` in
    /// `agent-compose.yaml`, else `roster:core`).
    #[arg(long, value_name = "DIR")]
    pub person_source: Option<String>,
    /// A personality library directory, or `roster:core`; repeatable, in order (default:
    /// `personality_libraries` in `agent-compose.yaml` when `--person-source` is not given).
    #[arg(long = "personality-library", value_name = "DIR")]
    pub personality_libraries: Vec<String>,
}

impl SourceArgs {
    /// The settings flags these arguments and `--home` name.
    pub fn flags(&self, home: Option<&Path>) -> Flags {
        Flags {
            home: home.map(Path::to_path_buf),
            person_source: self.person_source.clone(),
            personality_libraries: self.personality_libraries.clone(),
            ..Flags::default()
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Converge, then reconverge on every change of an input until Ctrl-C.
    Watch(watch::WatchArgs),
    /// Validate, show or render a person source.
    Roster(roster::RosterArgs),
    /// List roles, personalities or seats of the loaded person source.
    Catalog(catalogue::CatalogArgs),
    /// Compose one immutable role bundle from a request.
    Compose(compose::ComposeArgs),
    /// Re-check every digest, budget and invariant of a bundle.
    Verify(verify::VerifyArgs),
    /// Show the decisions behind a bundle, or explain one item with `--why`.
    Describe(describe::DescribeArgs),
    /// Show the semantic difference of two bundles: decisions and content. Exits 0 when
    /// they are the same, 1 when they differ, 2 when a bundle cannot be read (as `diff`
    /// and `git diff --exit-code` do).
    Diff(describe::DiffArgs),
    /// Durable, reviewed collaborators bound to roles.
    People(people::PeopleArgs),
    /// Serve the People API and web page on loopback, with a per-run token.
    Serve(serve::ServeArgs),
    /// Export a bundle as a self-contained archive, or import one into a store.
    Bundle(bundle::BundleArgs),
    /// Remove the home store's entries no bundle of the home references.
    Gc(gc::GcArgs),
    /// Start a harness as one assigned role (also `acompose ROLE HARNESS [ARGS]`).
    Launch(launch::LaunchArgs),
    /// Deliver a bundle into a harness layout: its instructions file and skill folders.
    Project(project::ProjectArgs),
    /// Remove a projection: every path it owns, its blocks in your instructions files and
    /// its lines in the repository's exclude file; your own text stays byte for byte.
    Unproject(project::UnprojectArgs),
    /// List the projections of the home's bundles, each with its layout, role, bundle and
    /// state (current, stale, missing, changed by hand).
    Projections(project::ProjectionsArgs),
    /// Show the resolved settings and where each came from, or check a configuration file.
    Config(config::ConfigArgs),
    /// List and check the MCP servers of the home's inventory (`<home>/mcp.kdl`).
    Mcp(mcp::McpArgs),
    /// Wire a harness into host delivery (`load_points`, `skill_load_points`) and converge.
    Setup(setup::SetupArgs),
    /// Check the home, the configuration, the projects root, harness folders and links,
    /// runners on PATH, projections and the store; one line per check, with a fix.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (`acompose completions bash > …`).
    Completions(completions::CompletionsArgs),
    /// Print the manual page of acompose, or of one command, in roff (`acompose man | man -l -`).
    Man(completions::ManArgs),
    /// Show one seat's identity card with a renderer expression (text, or `--json`).
    Overlay(overlay::OverlayArgs),
    /// Print the identity row of the nearest projection (usable as Claude Code's `statusLine`).
    Statusline(identity::StatuslineArgs),
    /// Show the role, identity and skills of the nearest projection.
    Whoami(identity::WhoamiArgs),
}

/// Runs the program and returns its exit code.
pub fn main() -> ExitCode {
    // git runs the clean filter on every file it reads through it: nothing of the home is
    // needed, and a problem there must not stop git.
    if let Some(path) = project::git_clean_path(std::env::args_os()) {
        return exit::code(project::run_git_clean(&path));
    }
    // The home's own harness rows come first: the command tree names every harness.
    if let Err(error) = install_home_layouts() {
        let terminal = Terminal::new(ColorChoice::Auto, false, 0);
        return exit::code(report_error(&error, &terminal));
    }
    // One command tree, built once, for the shorthand's command names and for parsing.
    let mut command = <Cli as clap::CommandFactory>::command();
    let commands: Vec<String> = command.get_subcommands().map(|command| command.get_name().to_owned()).collect();
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(message) = launch::misspelt_harness(&arguments, &commands) {
        print_stderr(&message);
        return exit::code(exit::USAGE);
    }
    let arguments = launch::shorthand(arguments, &commands);
    let parsed = match command.try_get_matches_from_mut(arguments) {
        Ok(mut matches) => <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches)
            .map_err(|error| error.format(&mut command)),
        Err(error) => Err(error),
    };
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { exit::USAGE } else { exit::SUCCESS };
            let _ = error.print();
            return exit::code(code);
        }
    };
    let terminal = Terminal::new(cli.global.color, cli.global.quiet, cli.global.verbose);
    let code = match cli.command {
        Some(Command::Roster(args)) => roster::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Watch(args)) => watch::run(cli.global.home.as_deref(), &args, &terminal),
        Some(Command::Catalog(args)) => catalogue::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Overlay(args)) => overlay::run(&args, cli.global.home.as_deref(), &terminal),
        Some(Command::Compose(args)) => compose::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Verify(args)) => verify::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Describe(args)) => describe::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Diff(args)) => describe::run_diff(args, cli.global.home.as_deref(), &terminal),
        Some(Command::People(args)) => people::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Serve(args)) => serve::run(&args, cli.global.home.as_deref(), &terminal),
        Some(Command::Bundle(args)) => bundle::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Gc(args)) => gc::run(&args, cli.global.home.as_deref(), &terminal),
        Some(Command::Project(args)) => project::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Unproject(args)) => project::run_unproject(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Projections(args)) => project::run_projections(&args, cli.global.home.as_deref(), &terminal),
        Some(Command::Launch(args)) => launch::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Doctor(args)) => doctor::run(&args, cli.global.home.as_deref(), &terminal),
        Some(Command::Completions(args)) => completions::run_completions(&args),
        Some(Command::Man(args)) => completions::run_man(&args, &terminal),
        Some(Command::Config(args)) => config::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Mcp(args)) => mcp::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Setup(args)) => setup::run(args, cli.global.home.as_deref(), &terminal),
        Some(Command::Statusline(args)) => identity::run_statusline(args, &terminal),
        Some(Command::Whoami(args)) => identity::run_whoami(args, &terminal),
        None => converge::run(cli.global.home.as_deref(), &cli.converge, &terminal),
    };
    exit::code(code)
}

/// Home and the projects root as the settings resolve them (`--home`, `--projects-root`,
/// the environment, `agent-compose.yaml`, the defaults): what the commands that converge
/// need.
pub fn home_and_projects(
    home: Option<&Path>,
    projects_root: Option<&Path>,
) -> Result<(acompose_driver::home::Home, PathBuf), acompose_driver::HostError> {
    let flags = Flags {
        home: home.map(Path::to_path_buf),
        projects_root: projects_root.map(Path::to_path_buf),
        ..Flags::default()
    };
    let settings = acompose_driver::home::settings::resolve(&flags)?;
    Ok((settings.home()?.clone(), settings.projects_root.value))
}

/// The bundle folder a command's BUNDLE argument names: a path, a role of the home's
/// index (its current bundle) or a bundle id prefix of at least four hex digits.
pub fn named_bundle(home: Option<&Path>, name: &Path) -> Result<PathBuf, acompose_driver::HostError> {
    let home = acompose_driver::home::resolve_home(home).ok();
    acompose_driver::convergence::bundle_name::resolve(home.as_ref(), name)
}

/// Whether the tool's own colour sequences may pass [`print_stdout`]'s and
/// [`print_stderr`]'s guard; set from `--color` and the terminal when a command starts
/// ([`Terminal::new`]). Off until then, so nothing is coloured that was not asked for.
static STDOUT_COLOUR: AtomicBool = AtomicBool::new(false);
static STDERR_COLOUR: AtomicBool = AtomicBool::new(false);

/// The most bytes one command writes to stderr, where its diagnostics go. Each
/// diagnostic is bounded and every list of them is capped where it is rendered; this is
/// the last bound over all of them together.
pub const MAX_STDERR_BYTES: usize = 1 << 20;

/// Bytes written to stderr so far by this process.
static STDERR_WRITTEN: AtomicUsize = AtomicUsize::new(0);

/// Lets colour sequences through the terminal guard on the streams whose palette has
/// colour.
pub(crate) fn allow_colour(stdout: bool, stderr: bool) {
    STDOUT_COLOUR.store(stdout, Ordering::Relaxed);
    STDERR_COLOUR.store(stderr, Ordering::Relaxed);
}

/// Writes to stdout through the terminal guard (`diagnostic::terminal_safe`); a closed
/// pipe ends the program quietly.
pub fn print_stdout(text: &str) {
    let text = terminal_safe(text, STDOUT_COLOUR.load(Ordering::Relaxed));
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).is_err() {
        std::process::exit(i32::from(exit::SUCCESS));
    }
}

/// Writes to stderr through the terminal guard, ignoring failures (there is nowhere else
/// to report them). Past [`MAX_STDERR_BYTES`] in all, the text is cut at a line break, one
/// line says so, and later text is left out.
pub fn print_stderr(text: &str) {
    let text = terminal_safe(text, STDERR_COLOUR.load(Ordering::Relaxed));
    let written = STDERR_WRITTEN.fetch_add(text.len(), Ordering::Relaxed);
    if written > MAX_STDERR_BYTES {
        return;
    }
    let mut stderr = std::io::stderr().lock();
    match capped(&text, MAX_STDERR_BYTES - written) {
        Some(kept) => {
            let _ = stderr.write_all(kept.as_bytes());
            let _ = stderr.write_all(STDERR_CAPPED.as_bytes());
            STDERR_WRITTEN.store(MAX_STDERR_BYTES + 1, Ordering::Relaxed);
        }
        None => {
            let _ = stderr.write_all(text.as_bytes());
        }
    }
}

/// The line that ends stderr when it reached [`MAX_STDERR_BYTES`].
const STDERR_CAPPED: &str = "error: this command's messages reached 1 MiB; the rest are left out\n";

/// `None` when `text` fits in `room` bytes, else the longest prefix of it that fits and
/// ends with a line break (empty when no line fits).
fn capped(text: &str, room: usize) -> Option<&str> {
    if text.len() <= room {
        return None;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(text[..end].rfind('\n').map_or("", |line_end| &text[..=line_end]))
}

/// Lays the home's `layouts.kdl` over the built-in harness table. The home is the one the
/// command line names (`--home DIR` or `--home=DIR`), else `$ACOMPOSE_HOME`, else
/// `~/.agent-compose`, read before clap parses anything.
fn install_home_layouts() -> Result<(), acompose_driver::error::HostError> {
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut flag = None;
    for (index, argument) in arguments.iter().enumerate() {
        if argument == "--" {
            break;
        }
        if argument == "--home" {
            flag = arguments.get(index + 1).map(std::path::PathBuf::from);
        } else if let Some(value) = argument.to_str().and_then(|text| text.strip_prefix("--home=")) {
            flag = Some(std::path::PathBuf::from(value));
        }
    }
    match acompose_driver::home::resolve_home(flag.as_deref()) {
        Ok(home) => acompose_driver::home::install_layouts(&home),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::capped;

    #[test]
    fn capped_text_ends_at_a_line_break_within_the_room() {
        assert_eq!(capped("one\ntwo\n", 8), None);
        assert_eq!(capped("one\ntwo\nthree\n", 9), Some("one\ntwo\n"));
        assert_eq!(capped("a very long line\n", 4), Some(""));
        assert_eq!(capped("ééé\n", 3), Some(""));
    }
}
