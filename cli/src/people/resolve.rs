//! `people resolve --recipe FILE [--assign role=person]…`: previews which Person fills
//! each recipe role and which rule chose it. It reads the recipe, the People and the
//! bindings; it writes nothing and starts nothing.

use std::path::PathBuf;

use acompose_driver::engine::Diagnostic;
use acompose_driver::engine::Severity;
use acompose_driver::people::recipe::{self, Syntax};
use acompose_driver::people::resolve::{self as resolution, Assignment};
use acompose_driver::people::{printable, report};

use super::WorkspaceArgs;
use crate::{print_stderr, print_stdout};
use acompose_driver::people::storage::{input_label, read_input_file};
use acompose_driver::people::{Stop, Workspace};

#[derive(Debug, clap::Args)]
pub struct ResolveArgs {
    /// The swarm recipe (`.json`, `.yaml` or `.yml`).
    #[arg(long, value_name = "FILE")]
    pub recipe: PathBuf,
    /// Assign a Person to a role explicitly; repeatable.
    #[arg(long = "assign", value_name = "ROLE=PERSON", value_parser = parse_assignment)]
    pub assignments: Vec<Assignment>,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the preview as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_assignment(text: &str) -> Result<Assignment, String> {
    match text.split_once('=') {
        Some((role, person_id)) if !role.is_empty() && !person_id.is_empty() => {
            Ok(Assignment { role: role.to_owned(), person_id: person_id.to_owned() })
        }
        _ => Err("expected ROLE=PERSON, e.g. `reviewer=ada`".to_owned()),
    }
}

/// Reads and parses the recipe file at `path` (`.json`, `.yaml` or `.yml`): its label and it.
pub fn read_recipe(path: &std::path::Path) -> Result<(String, recipe::Recipe), Stop> {
    let label = input_label(path);
    let Some(syntax) = Syntax::from_file_name(&label) else {
        return Err(Stop::Invalid(format!(
            "`{}` is not a recipe: use a `.json`, `.yaml` or `.yml` file",
            printable(&label)
        )));
    };
    let bytes = read_input_file(path)?;
    let recipe = recipe::parse(&label, syntax, &bytes).map_err(Stop::Findings)?;
    Ok((label, recipe))
}

pub fn run(args: &ResolveArgs, terminal: &crate::terminal::Terminal) -> Result<(), Stop> {
    let (label, recipe) = read_recipe(&args.recipe)?;
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let validation = acompose_driver::people::roster_for_resolution(&workspace)?;
    if !validation.findings.is_empty() && !args.json && !terminal.quiet {
        let warnings: Vec<Diagnostic> = validation
            .findings
            .iter()
            .map(|finding| Diagnostic { severity: Severity::Warning, ..finding.clone() })
            .collect();
        print_stderr(&report::findings_text(&warnings));
    }
    let roster = &validation.roster;
    match resolution::resolve(&recipe, &roster.people, &roster.bindings, &args.assignments) {
        Ok(resolved) => {
            if args.json {
                print_stdout(&String::from_utf8_lossy(&report::resolution_json(&label, &resolved, &[])));
            } else {
                print_stdout(&report::resolution_text(&label, &resolved));
            }
            Ok(())
        }
        Err(rejections) => {
            if args.json {
                print_stdout(&String::from_utf8_lossy(&report::resolution_json(&label, &[], &rejections)));
            } else {
                print_stderr(&report::rejections_text(&rejections));
            }
            let problems = match rejections.len() {
                1 => "1 problem".to_owned(),
                count => format!("{count} problems"),
            };
            Err(Stop::Invalid(format!("--assign was refused ({problems}); nothing was resolved")))
        }
    }
}
