//! `docs/compatibility.md` matches behaviour row by row: every test a row names exists
//! (so this suite runs it), every command a row shows by succeeds, every command it calls
//! "not yet" is refused, and every configuration key it calls "not yet" is an unknown key.

use crate::common;

use std::path::Path;

use common::acompose;

/// One table row: its section, its cells.
struct Row {
    section: String,
    cells: Vec<String>,
}

fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/compatibility.md"))
        .expect("compatibility.md");
    let mut section = String::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.to_owned();
            continue;
        }
        if !line.starts_with('|') || line.starts_with("|---") {
            continue;
        }
        let cells: Vec<String> = line
            .replace("\\|", "\u{1}")
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().replace('\u{1}', "|"))
            .collect();
        if cells.len() == 3 && !matches!(cells[1].as_str(), "status") {
            rows.push(Row { section: section.clone(), cells });
        }
    }
    rows
}

/// The backticked spans of a cell.
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn source_files(folder: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(folder).expect("folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(std::fs::read_to_string(&path).expect("source"));
        }
    }
}

/// Whether the test a row names exists: `file::function` in `tests/it/<file>.rs`, or a
/// `module::tests::function` of the engine when the cell says `(engine)`.
fn test_exists(name: &str, engine: bool) -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let function = name.rsplit("::").next().unwrap_or(name);
    let needle = format!("fn {function}(");
    if engine {
        let mut sources = Vec::new();
        source_files(&root.join("engine/src"), &mut sources);
        return sources.iter().any(|source| source.contains(&needle));
    }
    let file = name.split("::").next().unwrap_or(name);
    std::fs::read_to_string(root.join("tests/it").join(format!("{file}.rs")))
        .is_ok_and(|source| source.contains(&format!("#[test]\nfn {function}(")))
}

#[test]
fn every_named_test_exists_and_every_row_has_evidence() {
    let rows = rows();
    assert!(rows.len() > 40, "the tables were read: {} rows", rows.len());
    for row in &rows {
        let [subject, status, shown_by] = [&row.cells[0], &row.cells[1], &row.cells[2]];
        if shown_by == "—" {
            assert!(
                status.starts_with("not yet") || status.starts_with("different on purpose: refused"),
                "{}: `{subject}` claims `{status}` with nothing that shows it",
                row.section
            );
            continue;
        }
        let engine = shown_by.contains("(engine)");
        for span in code_spans(shown_by) {
            if span.starts_with("acompose ") || span.contains(' ') || !span.contains("::") {
                continue;
            }
            assert!(test_exists(&span, engine), "{}: `{subject}` names `{span}`, which does not exist", row.section);
        }
    }
}

#[test]
fn every_command_a_row_shows_by_succeeds() {
    let temporary = tempfile::tempdir().expect("tempdir");
    for row in rows() {
        for span in code_spans(&row.cells[2]).into_iter().filter(|span| span.starts_with("acompose ")) {
            let words: Vec<&str> = span.split_whitespace().skip(1).collect();
            let output = acompose(temporary.path(), &words);
            assert_eq!(output.code, 0, "{}: `{span}`: {}", row.section, output.stderr);
        }
    }
}

#[test]
fn every_command_not_yet_here_is_refused() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let commands: Vec<String> = rows()
        .into_iter()
        .filter(|row| {
            row.section == "Commands"
                && (row.cells[1].starts_with("not yet") || row.cells[1].starts_with("different on purpose: refused"))
        })
        .flat_map(|row| code_spans(&row.cells[0]))
        .collect();
    assert!(commands.len() >= 6, "{commands:?}");
    for command in commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        let output = acompose(temporary.path(), &words);
        assert_ne!(output.code, 0, "`{command}` is said to be absent but ran: {}", output.stdout);
        assert_eq!(output.stdout, "", "`{command}`");
    }
}

#[test]
fn every_configuration_key_not_yet_read_is_an_unknown_key() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let keys: Vec<String> = rows()
        .into_iter()
        .filter(|row| row.section.starts_with("Host configuration") && row.cells[1].starts_with("not yet"))
        .flat_map(|row| code_spans(&row.cells[0]))
        .collect();
    assert!(keys.len() >= 5, "{keys:?}");
    for key in keys {
        std::fs::write(temporary.path().join("config.yaml"), format!("{key}: 1\n")).expect("config");
        let output = acompose(temporary.path(), &["config", "validate", "config.yaml"]);
        assert_eq!(output.code, 1, "`{key}`: {}", output.stderr);
        assert!(output.stderr.contains("config-unknown-key"), "`{key}`: {}", output.stderr);
    }
}
