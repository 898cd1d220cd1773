//! `people import FILE [--save]`: the reviewed, one-way import of a
//! munder-difflin/hire@1 file. Without `--save` it prints the review and writes nothing;
//! with it, the reviewed Person is written as a new file. Nothing in the hire file is
//! executed, fetched or stored beyond the mapped fields.

use std::path::PathBuf;

use acompose_driver::people::hire::{self, Overrides};
use acompose_driver::people::report;

use acompose_driver::people::storage::{input_label, read_input_file};
use acompose_driver::people::{Stop, Workspace, checked_id, create_person};

use super::WorkspaceArgs;
use crate::print_stdout;
use crate::terminal::Terminal;

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The hire file (JSON).
    pub file: PathBuf,
    /// Write the reviewed Person to `people/<id>.json`.
    #[arg(long)]
    pub save: bool,
    /// The Person's id (default: the name, slugified).
    #[arg(long)]
    pub id: Option<String>,
    /// The display name (default: the hire file's `name`).
    #[arg(long)]
    pub name: Option<String>,
    /// The role slug (default: the hire file's `description`, slugified).
    #[arg(long, value_name = "SLUG")]
    pub role: Option<String>,
    /// The goal; required when the hire file has none.
    #[arg(long)]
    pub goal: Option<String>,
    /// A token limit to use instead of a `tokenCap` above the person@1 ceiling.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
    /// Print the review as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ImportArgs, terminal: &Terminal) -> Result<(), Stop> {
    if let Some(id) = &args.id {
        checked_id(id)?;
    }
    let label = input_label(&args.file);
    let bytes = read_input_file(&args.file)?;
    let overrides = Overrides {
        id: args.id.clone(),
        name: args.name.clone(),
        role: args.role.clone(),
        goal: args.goal.clone(),
        max_tokens: args.max_tokens,
    };
    let review = hire::review(&label, &bytes, &overrides).map_err(Stop::Findings)?;
    let print = |saved_to: Option<&str>| {
        if args.json {
            print_stdout(&String::from_utf8_lossy(&report::review_json(&label, &review, saved_to)));
        } else if !terminal.quiet || saved_to.is_none() {
            print_stdout(&report::review_text(&label, &review, saved_to));
        }
    };
    if !args.save {
        print(None);
        return Ok(());
    }
    let Some(person) = &review.person else {
        print(None);
        return Err(Stop::Invalid(
            "the review has items marked [blocks --save]; supply them with the flags they name (nothing was written)"
                .to_owned(),
        ));
    };
    let workspace = Workspace::open_initialised(&args.workspace.workspace)?;
    let path = create_person(&workspace, person)?;
    print(Some(&path));
    Ok(())
}
