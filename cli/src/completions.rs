//! `acompose completions SHELL` and `acompose man [COMMAND…]`: shell completion scripts
//! (clap_complete) and manual pages (clap_mangen), both generated from the clap
//! definitions of this crate, so they never drift from the commands. Printed to stdout;
//! the user chooses where they go.

use clap::CommandFactory as _;

use crate::{Cli, exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The command whose page to print (`roster validate`); the whole tool when empty.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn run_completions(args: &CompletionsArgs) -> u8 {
    let mut command = Cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(args.shell, &mut command, "acompose", &mut bytes);
    print_stdout(&String::from_utf8_lossy(&bytes));
    exit::SUCCESS
}

pub fn run_man(args: &ManArgs, _terminal: &crate::terminal::Terminal) -> u8 {
    let mut command = Cli::command();
    command.build();
    let mut page = command;
    let mut path = vec!["acompose".to_owned()];
    for word in &args.command {
        let Some(sub) = page.find_subcommand(word).cloned() else {
            let names: Vec<String> = page.get_subcommands().map(|sub| sub.get_name().to_owned()).collect();
            let hint = acompose_driver::engine::suggest::did_you_mean(word, names.iter().map(String::as_str))
                .map(|hint| format!("; {hint}"))
                .unwrap_or_default();
            print_stderr(&format!(
                "error: `{}` has no command `{}`{hint}\n",
                path.join(" "),
                acompose_driver::engine::diagnostic::sanitize(word)
            ));
            return exit::USAGE;
        };
        path.push(word.clone());
        page = sub.version(env!("CARGO_PKG_VERSION"));
    }
    let mut bytes = Vec::new();
    if clap_mangen::Man::new(page).title(path.join("-")).render(&mut bytes).is_err() {
        print_stderr("error: the manual page could not be rendered\n");
        return exit::ENVIRONMENT;
    }
    print_stdout(&String::from_utf8_lossy(&bytes));
    exit::SUCCESS
}
