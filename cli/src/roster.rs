//! `acompose roster validate|show` and `acompose roster --out DIR`.

use std::path::PathBuf;

use acompose_driver::Sources;
use acompose_driver::compose::artifact::write_roster;
use acompose_driver::compose::load::{EMBEDDED, Location, Selection, label_of};
use acompose_driver::engine::render;
use acompose_driver::home::settings;

use crate::output::CommandOutput;
use crate::terminal::{
    Terminal, count_summary, diagnostics_json, render_diagnostics, report_error, report_warnings, visible,
};
use crate::{SourceArgs, exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct RosterArgs {
    #[command(subcommand)]
    pub command: Option<RosterCommand>,
    /// Render the roster artifact (person.json and the skill tree) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
}

impl RosterArgs {
    pub fn default_show() -> Self {
        RosterArgs {
            command: Some(RosterCommand::Show(ShowArgs { source: SourceArgs::default(), json: false, role: None })),
            out: None,
            source: SourceArgs::default(),
        }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum RosterCommand {
    /// Write a small valid external person package (two roles, three personalities,
    /// every definition) into a new or empty folder, to edit into your own.
    Init(InitArgs),
    /// Load a person source and print every diagnostic.
    Validate(ValidateArgs),
    /// Print the loaded roster (or one role's card).
    Show(ShowArgs),
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The folder to write (it must not exist, or be empty); its name names the package.
    #[arg(value_name = "DIR")]
    pub folder: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Also apply the Core rules (seven roles, ten personalities, two per role, colour
    /// distinctness) to an external package.
    #[arg(long)]
    pub core_rules: bool,
    /// Print the diagnostics as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print `person.json` instead of the transcript.
    #[arg(long)]
    pub json: bool,
    /// Print only this role's identity card.
    #[arg(long, value_name = "SLUG")]
    pub role: Option<String>,
}

pub(crate) fn run(args: RosterArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    if args.command.is_some()
        && (args.out.is_some() || args.source.person_source.is_some() || !args.source.personality_libraries.is_empty())
    {
        print_stderr(
            "error: put `--out`, `--person-source` and `--personality-library` after the `roster` subcommand, or use `acompose roster --out DIR` alone\n",
        );
        return exit::USAGE;
    }
    let mut sources = Sources::default();
    let (source, core_rules) = match &args.command {
        Some(RosterCommand::Init(init)) => return run_init(init, terminal),
        Some(RosterCommand::Validate(validate)) => (&validate.source, validate.core_rules),
        Some(RosterCommand::Show(show)) => (&show.source, false),
        None => (&args.source, false),
    };
    let selection = match settings::resolve(&source.flags(home)).and_then(|settings| settings.selection(core_rules)) {
        Ok(selection) => selection,
        Err(error) => return report_error(&error, terminal),
    };
    match args.command {
        Some(RosterCommand::Init(_)) => exit::SUCCESS,
        Some(RosterCommand::Validate(validate)) => {
            validate_output(&validate, &selection, &mut sources, terminal).print()
        }
        Some(RosterCommand::Show(show)) => {
            let model = match sources.load_model(&selection) {
                Ok(valid) => {
                    report_warnings(&valid.warnings, terminal);
                    valid.model
                }
                Err(error) => return report_error(&error, terminal),
            };
            if show.json {
                print_stdout(&String::from_utf8_lossy(&acompose_driver::engine::snapshot::person_json(&model)));
                return exit::SUCCESS;
            }
            match show.role {
                Some(slug) => match model.role(&slug) {
                    Some(role) => print_stdout(&render::identity_card(&model, role, terminal.stdout)),
                    None => {
                        let known: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
                        print_stderr(&crate::terminal::unknown_role(&slug, &known));
                        return exit::INVALID;
                    }
                },
                None => print_stdout(&render::roster_transcript(&model, terminal.stdout)),
            }
            exit::SUCCESS
        }
        None => match args.out {
            Some(out) => render_roster_out(&mut sources, &selection, &out, terminal),
            None => {
                print_stderr("error: `acompose roster` needs a subcommand (`validate`, `show`) or `--out DIR`\n");
                exit::USAGE
            }
        },
    }
}

/// `roster init DIR`: the scaffold package written into a new or empty folder.
fn run_init(init: &InitArgs, terminal: &Terminal) -> u8 {
    match acompose_driver::compose::scaffold::init_package(&init.folder) {
        Ok(made) => {
            if !terminal.quiet {
                let folder = acompose_driver::engine::diagnostic::sanitize(&init.folder.display().to_string());
                print_stdout(&format!(
                    "wrote person:{} into `{folder}` ({} files): two roles, three personalities\nnext: edit it, then `acompose roster validate --person-source {}`\n",
                    made.name,
                    made.files.len(),
                    crate::terminal::shell_word(&folder)
                ));
            }
            exit::SUCCESS
        }
        Err(error) => report_error(&error, terminal),
    }
}

/// `roster validate`: every diagnostic of `selection` (the person source the flags and
/// settings name), and whether it is valid. Returns what the command prints; `sources`
/// reads the paths the selection names (see [`Sources::in_directory`]).
pub fn validate_output(
    validate: &ValidateArgs,
    selection: &Selection,
    sources: &mut Sources,
    terminal: &Terminal,
) -> CommandOutput {
    let mut output = CommandOutput::default();
    let validation = sources.validate(selection);
    let diagnostics = &validation.findings.diagnostics;
    if validate.json {
        output
            .stdout(String::from_utf8_lossy(&diagnostics_json(diagnostics, &|path| validation.findings.text_of(path))));
    } else if !diagnostics.is_empty() {
        let text_of = |path: &str| validation.findings.text_of(path);
        output.stderr(render_diagnostics(&visible(diagnostics, *terminal), terminal.stderr, &text_of));
    }
    let model = &validation.model;
    if validation.has_errors {
        output.stderr(format!("error: `{}` is invalid ({})\n", source_label(selection), count_summary(diagnostics)));
        return output.exit(exit::INVALID);
    }
    if !terminal.quiet && !validate.json {
        output.stdout(format!(
            "{} is valid: {} roles, {} personalities ({})\n",
            model.source,
            model.roles.len(),
            model.personalities.len(),
            count_summary(diagnostics)
        ));
    }
    output.exit(exit::SUCCESS)
}

fn source_label(selection: &Selection) -> String {
    match &selection.person {
        Location::Embedded => EMBEDDED.to_owned(),
        Location::Directory(path) => label_of(path),
    }
}

/// `roster --out DIR`: the roster artifact rendered anywhere, with the same transaction
/// as host convergence.
fn render_roster_out(sources: &mut Sources, selection: &Selection, out: &std::path::Path, terminal: &Terminal) -> u8 {
    let model = match sources.load_model(selection) {
        Ok(valid) => {
            report_warnings(&valid.warnings, terminal);
            valid.model
        }
        Err(error) => return report_error(&error, terminal),
    };
    match write_roster(&model, out) {
        Ok(outcome) => {
            if !terminal.quiet {
                print_stdout(&format!(
                    "roster {} -> {}: {} written, {} unchanged, {} removed\n",
                    model.source,
                    out.display(),
                    outcome.written.len(),
                    outcome.unchanged,
                    outcome.removed.len()
                ));
            }
            exit::SUCCESS
        }
        Err(error) => report_error(&error, terminal),
    }
}
