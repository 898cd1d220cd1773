//! Every command line of the README and `docs/` marked runnable is run as printed. A
//! fenced block opened with ```` ```sh runnable ```` runs under `sh -eu` and must succeed;
//! one opened with ```` ```console runnable ```` runs its `$ ` lines in one shell and each
//! command must print exactly the lines that follow it. Each block runs in an empty
//! folder that is also `HOME`, with `acompose` first on `PATH`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One runnable block: where it is and what it holds.
struct Block {
    origin: String,
    console: bool,
    text: String,
}

fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    docs.sort();
    documents.extend(docs);
    documents
}

/// The runnable blocks of one Markdown file.
fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).expect("read");
    let mut found = Vec::new();
    let mut current: Option<Block> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut current {
            Some(_) if trimmed.starts_with("```") => found.extend(current.take()),
            Some(block) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            None => {
                let Some(info) = trimmed.strip_prefix("```") else { continue };
                let words: Vec<&str> = info.split_whitespace().collect();
                if words.contains(&"runnable") {
                    let name = path.file_name().expect("name").to_string_lossy();
                    current = Some(Block {
                        origin: format!("{name}:{}", number + 1),
                        console: words.first() == Some(&"console"),
                        text: String::new(),
                    });
                }
            }
        }
    }
    found
}

/// A console block as a script: each `$ ` command's stdout goes to its own numbered
/// file; returns the script and the output each command must print.
fn console_script(text: &str) -> (String, Vec<(String, String)>) {
    let mut commands: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("$ ") {
            Some(command) => commands.push((command.to_owned(), String::new())),
            None => {
                let (_, expected) = commands.last_mut().expect("a console block starts with a command");
                expected.push_str(line);
                expected.push('\n');
            }
        }
    }
    let script = commands
        .iter()
        .enumerate()
        .map(|(index, (command, _))| format!("{{ {command}\n}} > \"$DOC_OUTPUT/{index}\"\n"))
        .collect();
    (script, commands)
}

fn run(block: &Block) {
    let temporary = tempfile::tempdir().expect("tempdir");
    let folder = temporary.path().join("work");
    let output_folder = temporary.path().join("output");
    std::fs::create_dir_all(&folder).expect("work");
    std::fs::create_dir_all(&output_folder).expect("output");
    let binary = Path::new(env!("CARGO_BIN_EXE_acompose"));
    let path =
        format!("{}:{}", binary.parent().expect("bin folder").display(), std::env::var("PATH").unwrap_or_default());
    let (script, expected) = if block.console { console_script(&block.text) } else { (block.text.clone(), Vec::new()) };
    let output = Command::new("sh")
        .args(["-eu", "-c", &script])
        .current_dir(&folder)
        .env("PATH", path)
        .env("HOME", &folder)
        .env("DOC_OUTPUT", &output_folder)
        .env("NO_COLOR", "1")
        .env_remove("ACOMPOSE_HOME")
        .env_remove("PROJECTS_ROOT")
        .env_remove("COLORTERM")
        .output()
        .expect("run sh");
    assert!(
        output.status.success(),
        "{} failed ({:?})\n--- block ---\n{}--- stdout ---\n{}--- stderr ---\n{}",
        block.origin,
        output.status.code(),
        block.text,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for (index, (command, expected)) in expected.iter().enumerate() {
        let printed = std::fs::read_to_string(output_folder.join(index.to_string())).unwrap_or_default();
        assert_eq!(&printed, expected, "{}: `{command}` printed something else", block.origin);
    }
}

#[test]
fn every_command_line_marked_runnable_runs_as_printed() {
    let all: Vec<Block> = documents().iter().flat_map(|path| blocks(path)).collect();
    // The README's and the pages' examples: losing a marker must not pass unnoticed.
    assert!(
        all.len() >= 7,
        "only {} runnable blocks: {:?}",
        all.len(),
        all.iter().map(|b| &b.origin).collect::<Vec<_>>()
    );
    for block in &all {
        run(block);
    }
}

#[test]
fn a_console_block_is_split_into_commands_and_their_output() {
    let (script, commands) = console_script("$ echo one\none\n$ cd x\n$ true\n");
    assert_eq!(commands.len(), 3);
    assert_eq!(commands[0], ("echo one".to_owned(), "one\n".to_owned()));
    assert_eq!(commands[1].1, "");
    assert!(script.contains("{ cd x\n} > \"$DOC_OUTPUT/1\""), "{script}");
}

#[test]
fn every_relative_link_of_the_readme_and_docs_names_a_file_that_exists() {
    let mut broken = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document).expect("read");
        let folder = document.parent().expect("folder");
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            if !folder.join(target).exists() {
                broken.push(format!("{}: {target}", document.file_name().expect("name").to_string_lossy()));
            }
        }
    }
    assert_eq!(broken, Vec::<String>::new(), "links to files that do not exist");
}
