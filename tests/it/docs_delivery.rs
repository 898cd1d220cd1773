//! `docs/delivery.md` as written: every `acompose …` line of its `sh` blocks runs and
//! succeeds (with `BUNDLE` a composed bundle and `DIR` a fresh folder), every harness of
//! the layout table has a section, and the Claude Code `statusLine` snippet is valid.

use crate::common;

use std::path::{Path, PathBuf};

use acompose_engine::harness_layout::layouts;
use common::{acompose_with, copy_dir};

fn page() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/delivery.md")).expect("docs/delivery.md")
}

/// The fenced blocks of `language`, in order.
fn blocks(text: &str, language: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) if info.trim() == language => current = Some(String::new()),
            (Some(block), Some(_)) => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (None, Some(_)) => current = Some("\u{0}".to_owned()),
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks.into_iter().filter(|block| !block.starts_with('\u{0}')).collect()
}

fn composed_bundle(root: &Path) -> PathBuf {
    let case = root.join("case");
    copy_dir(&common::fixtures().join("compose/selector-slice"), &case);
    copy_dir(&common::fixtures().join("roster/base"), &root.join("person-base"));
    let output = common::acompose(&case, &["compose", "request.kdl", "--out", "out", "--projects-root", "projects"]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    std::fs::read_dir(case.join("out"))
        .expect("out")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_dir() && !path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('.')))
        .expect("a bundle")
}

#[test]
fn every_command_on_the_delivery_page_runs() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let bundle = composed_bundle(root);
    let user_home = root.join("user");
    let repository = root.join("repository");
    let bin = root.join("bin");
    for folder in [&user_home, &repository, &bin] {
        std::fs::create_dir_all(folder).expect("mkdir");
    }
    for layout in layouts() {
        let path = bin.join(layout.binary);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").expect("write");
        let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).expect("chmod");
    }
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let acompose_home = root.join("acompose-home");
    let environment = [
        ("HOME", user_home.to_str().expect("utf-8")),
        ("ACOMPOSE_HOME", acompose_home.to_str().expect("utf-8")),
        ("PATH", path.as_str()),
    ];
    let mut commands = 0;
    for (index, line) in
        blocks(&page(), "sh").iter().flat_map(|block| block.lines().map(str::to_owned).collect::<Vec<_>>()).enumerate()
    {
        let Some(rest) = line.strip_prefix("acompose ") else { continue };
        let folder = root.join(format!("target-{index}"));
        std::fs::create_dir_all(&folder).expect("mkdir");
        let words: Vec<String> = rest
            .split_whitespace()
            .map(|word| match word {
                "BUNDLE" => bundle.display().to_string(),
                "DIR" => folder.display().to_string(),
                other => other.to_owned(),
            })
            .collect();
        let arguments: Vec<&str> = words.iter().map(String::as_str).collect();
        let output = acompose_with(&repository, &arguments, &environment);
        assert_eq!(output.code, 0, "`{line}`:\n{}{}", output.stdout, output.stderr);
        commands += 1;
    }
    assert!(commands >= 25, "only {commands} commands");
}

#[test]
fn every_harness_has_a_section_and_the_status_line_snippet_is_valid() {
    let text = page();
    for layout in layouts() {
        assert!(text.contains(&format!("\n## {}\n", layout.display_name)), "{}", layout.display_name);
        assert!(text.contains(&format!("--layout {} --scope repo", layout.harness)), "{}", layout.harness);
        // The Layouts table names each row with its own folders, as the data says.
        let places = |scope: acompose_engine::harness_layout::Scope| layout.places(scope);
        let row = text
            .lines()
            .find(|line| line.starts_with(&format!("| `{}` |", layout.harness)))
            .unwrap_or_else(|| panic!("{} has no row in the Layouts table", layout.harness));
        for scope in [acompose_engine::harness_layout::Scope::Repository, acompose_engine::harness_layout::Scope::Home]
        {
            assert!(row.contains(&format!("`{}/`", places(scope).skills)), "{row}");
            for folder in places(scope).also_reads {
                assert!(row.contains(&format!("`{folder}/`")), "{row}");
            }
        }
        assert!(text.contains(&format!("acompose setup {}", layout.harness)), "{}", layout.harness);
    }
    let snippet = blocks(&text, "json").into_iter().next().expect("a json block");
    let settings: serde_json::Value = serde_json::from_str(&snippet).expect("valid JSON");
    assert_eq!(settings["statusLine"]["command"], "acompose statusline");
}
