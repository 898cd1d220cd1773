//! The known runners of People sessions as data, and the one function that turns a
//! runner, an optional model and the initial prompt into the exact argv to spawn. The
//! review shows this argv and the driver spawns this argv; nothing else builds one.
//!
//! It does not look for binaries on `PATH`, start anything or decide the prompt text.

use super::is_reference;

/// How a runner takes an initial prompt while staying interactive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptIntake {
    /// As the last, positional argument: `claude "<p>"`.
    Positional,
    /// As the value of a flag: `copilot -i "<p>"`.
    Flag(&'static str),
    /// No verified way: the runner opens without a prompt and the review offers the
    /// prompt for copying.
    CopyOnly,
}

/// One runner a session can start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runner {
    /// The name users pass to `--runner` and the record keeps as `provider`.
    pub name: &'static str,
    /// The program looked up on `PATH`.
    pub binary: &'static str,
    /// Arguments that always come first (a subcommand, a flag every session needs).
    pub leading: &'static [&'static str],
    pub prompt: PromptIntake,
    /// The flag that selects a model, if the runner takes one.
    pub model_flag: Option<&'static str>,
    /// How the runner's conversation can be fixed at the start and resumed; `None` when
    /// the caller can neither fix nor read its id, so the session is not resumable.
    pub conversation: Option<Conversation>,
}

/// A runner's own conversation id, as its command line takes it: a new conversation
/// started under a UUID the caller chose, and that conversation resumed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conversation {
    /// `--session-id <uuid>`: start a new conversation with this id.
    pub start_flag: &'static str,
    /// `--resume <uuid>`: open that conversation again.
    pub resume_flag: &'static str,
}

/// Claude Code and Gemini CLI both take `--session-id <uuid>` for a new conversation and
/// `--resume <uuid>` to reopen it (each CLI's `--help` and documentation).
const SESSION_ID_AND_RESUME: Conversation = Conversation { start_flag: "--session-id", resume_flag: "--resume" };

/// Why a runner is not resumable, in one sentence for the refusal.
pub fn not_resumable_reason(runner: &Runner) -> &'static str {
    match runner.name {
        "codex" => "Codex resumes by id, but a new conversation's id cannot be chosen at the start or read back",
        "opencode" => "OpenCode continues a session by id, but a new session's id cannot be chosen at the start",
        "copilot" => "GitHub Copilot CLI's conversation id cannot be chosen at the start",
        _ => "this runner offers no way to choose or read its conversation id",
    }
}

/// Codex's interactive terminal runs its conversations in a shared background server
/// (`codex app-server --managed-daemon`) that it starts in a session of its own, so it
/// outlives the runner's process group: ended for a limit, a stop or a time-out, the
/// terminal would go while the server finished the turn, ran its tools and asked the
/// model again. `--no-daemon` (Codex's `--help`: "Run without the shared background
/// server, even if it is already running") keeps the conversation in the runner's own
/// process, so ending the group ends it.
const CODEX_LEADING: &[&str] = &["--no-daemon"];

/// The runner table. Prompt options follow the People contract; model flags follow
/// each CLI's documentation. A model flag comes after the leading arguments and before
/// the prompt, so a flag-valued prompt stays last.
pub const RUNNERS: [Runner; 6] = [
    Runner {
        name: "claude",
        binary: "claude",
        leading: &[],
        prompt: PromptIntake::Positional,
        model_flag: Some("--model"),
        conversation: Some(SESSION_ID_AND_RESUME),
    },
    Runner {
        name: "codex",
        binary: "codex",
        leading: CODEX_LEADING,
        prompt: PromptIntake::Positional,
        model_flag: Some("--model"),
        conversation: None,
    },
    Runner {
        name: "copilot",
        binary: "copilot",
        leading: &[],
        prompt: PromptIntake::Flag("-i"),
        model_flag: Some("--model"),
        conversation: None,
    },
    Runner {
        name: "gemini",
        binary: "gemini",
        leading: &[],
        prompt: PromptIntake::Flag("-i"),
        model_flag: Some("--model"),
        conversation: Some(SESSION_ID_AND_RESUME),
    },
    Runner {
        name: "opencode",
        binary: "opencode",
        leading: &["mini"],
        prompt: PromptIntake::Flag("--prompt"),
        model_flag: Some("--model"),
        conversation: None,
    },
    Runner {
        name: "cursor",
        binary: "cursor-agent",
        leading: &[],
        prompt: PromptIntake::CopyOnly,
        model_flag: None,
        conversation: None,
    },
];

/// The runner called `name`, if the table has one.
pub fn runner(name: &str) -> Option<&'static Runner> {
    RUNNERS.iter().find(|runner| runner.name == name)
}

/// Why no argv could be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgvError {
    /// A model was asked for, but the runner has no verified model flag.
    ModelNotTaken { runner: &'static str },
    /// The model is not a reference (`^[a-zA-Z0-9][a-zA-Z0-9._:/-]*$`, ≤ 128), so it could
    /// be mistaken for a flag or carry spaces.
    InvalidModel,
}

/// What will be spawned and whether the prompt is part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// `argv[0]` is the binary name; the driver resolves it on `PATH`.
    pub argv: Vec<String>,
    /// Whether `argv` carries the prompt. If not, the review offers it for copying.
    pub prompt_in_argv: bool,
}

/// The exact argv for `runner` with an optional model and the initial prompt.
pub fn invocation(runner: &Runner, model: Option<&str>, prompt: &str) -> Result<Invocation, ArgvError> {
    invocation_in(runner, model, prompt, None)
}

/// The argv of a new conversation: with a conversation id (a runner that takes one, see
/// [`Runner::conversation`]) it is fixed by the start flag, after the model.
pub fn invocation_in(
    runner: &Runner,
    model: Option<&str>,
    prompt: &str,
    conversation: Option<&str>,
) -> Result<Invocation, ArgvError> {
    let mut argv = model_argv(runner, model)?;
    if let (Some(id), Some(flags)) = (conversation, runner.conversation) {
        argv.push(flags.start_flag.to_owned());
        argv.push(id.to_owned());
    }
    let prompt_in_argv = match runner.prompt {
        PromptIntake::Positional => {
            argv.push(prompt.to_owned());
            true
        }
        PromptIntake::Flag(flag) => {
            argv.push(flag.to_owned());
            argv.push(prompt.to_owned());
            true
        }
        PromptIntake::CopyOnly => false,
    };
    Ok(Invocation { argv, prompt_in_argv })
}

/// The argv that reopens conversation `id`: the runner, the model, the resume flag and
/// the id; no prompt (the conversation has its own). `None` for a runner that cannot.
pub fn resume_invocation(runner: &Runner, model: Option<&str>, id: &str) -> Option<Result<Vec<String>, ArgvError>> {
    let flags = runner.conversation?;
    Some(model_argv(runner, model).map(|mut argv| {
        argv.push(flags.resume_flag.to_owned());
        argv.push(id.to_owned());
        argv
    }))
}

/// The binary, the leading arguments and the model flag.
fn model_argv(runner: &Runner, model: Option<&str>) -> Result<Vec<String>, ArgvError> {
    let mut argv = vec![runner.binary.to_owned()];
    argv.extend(runner.leading.iter().map(|argument| (*argument).to_owned()));
    if let Some(model) = model {
        let Some(flag) = runner.model_flag else {
            return Err(ArgvError::ModelNotTaken { runner: runner.name });
        };
        if !is_reference(model) {
            return Err(ArgvError::InvalidModel);
        }
        argv.push(flag.to_owned());
        argv.push(model.to_owned());
    }
    Ok(argv)
}

/// An argv as one line a POSIX shell reads back to the same words: each argument that
/// is not plainly safe is single-quoted.
pub(crate) fn argv_text(argv: &[String]) -> String {
    argv.iter().map(|argument| shell_word(argument)).collect::<Vec<_>>().join(" ")
}

fn shell_word(argument: &str) -> String {
    let plain = !argument.is_empty()
        && argument.bytes().all(|byte| {
            byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'/' | b':' | b'=' | b'@' | b'+' | b',')
        });
    if plain { argument.to_owned() } else { format!("'{}'", argument.replace('\'', "'\\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(name: &str, model: Option<&str>) -> Result<Vec<String>, ArgvError> {
        let runner = runner(name).ok_or(ArgvError::InvalidModel)?;
        invocation(runner, model, "Do it.").map(|invocation| invocation.argv)
    }

    #[test]
    fn every_row_builds_the_contract_argv() {
        assert_eq!(argv("claude", None), Ok(vec!["claude".into(), "Do it.".into()]));
        assert_eq!(argv("codex", None), Ok(vec!["codex".into(), "--no-daemon".into(), "Do it.".into()]));
        assert_eq!(argv("copilot", None), Ok(vec!["copilot".into(), "-i".into(), "Do it.".into()]));
        assert_eq!(argv("gemini", None), Ok(vec!["gemini".into(), "-i".into(), "Do it.".into()]));
        assert_eq!(
            argv("opencode", None),
            Ok(vec!["opencode".into(), "mini".into(), "--prompt".into(), "Do it.".into()])
        );
        assert_eq!(argv("cursor", None), Ok(vec!["cursor-agent".into()]));
    }

    #[test]
    fn models_go_before_the_prompt_where_a_runner_takes_one() {
        assert_eq!(
            argv("claude", Some("sonnet")),
            Ok(vec!["claude".into(), "--model".into(), "sonnet".into(), "Do it.".into()])
        );
        assert_eq!(
            argv("opencode", Some("anthropic/claude-sonnet-4.5")),
            Ok(vec![
                "opencode".into(),
                "mini".into(),
                "--model".into(),
                "anthropic/claude-sonnet-4.5".into(),
                "--prompt".into(),
                "Do it.".into()
            ])
        );
        assert_eq!(argv("cursor", Some("gpt")), Err(ArgvError::ModelNotTaken { runner: "cursor" }));
        assert_eq!(argv("claude", Some("--dangerously")), Err(ArgvError::InvalidModel));
        assert_eq!(argv("claude", Some("two words")), Err(ArgvError::InvalidModel));
    }

    #[test]
    fn the_table_has_unique_names_and_copy_only_rows_say_so() {
        for (index, row) in RUNNERS.iter().enumerate() {
            assert!(RUNNERS.iter().skip(index + 1).all(|other| other.name != row.name));
            assert!(super::super::is_slug(row.name));
            let invocation = invocation(row, None, "p");
            assert_eq!(
                invocation.map(|invocation| invocation.prompt_in_argv),
                Ok(row.prompt != PromptIntake::CopyOnly)
            );
        }
        assert_eq!(runner("vim"), None);
    }

    #[test]
    fn argv_text_quotes_what_a_shell_would_split() {
        let argv = vec!["claude".to_owned(), "--model".to_owned(), "it's two\nlines".to_owned(), String::new()];
        assert_eq!(argv_text(&argv), "claude --model 'it'\\''s two\nlines' ''");
    }
}
