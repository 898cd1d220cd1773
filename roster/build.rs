//! Embeds every file under `core/` (the default roster) and `scaffold/` (the package
//! `acompose roster init` writes) into the crate, sorted by path, so the binary carries
//! both and builds are reproducible.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(directory: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        panic!("cannot read {}", directory.display());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// The `static NAME: &[(&str, &[u8])]` of every file under `root`, sorted by path.
fn embedded(name: &str, root: &Path) -> String {
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(root, &mut files);
    files.sort();
    let mut generated = format!(
        "/// Every embedded file: (path relative to the package root, bytes).\npub static {name}: &[(&str, &[u8])] = &[\n"
    );
    for file in &files {
        let relative = file
            .strip_prefix(root)
            .expect("collected under root")
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        println!("cargo::rerun-if-changed={}", file.display());
        writeln!(generated, "    ({relative:?}, include_bytes!({:?})),", file.display().to_string())
            .expect("writing to a string");
    }
    generated.push_str("];\n");
    generated
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut generated = embedded("FILES", &manifest_dir.join("core"));
    generated.push_str(&embedded("SCAFFOLD", &manifest_dir.join("scaffold")));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded.rs");
    std::fs::write(out, generated).expect("write embedded.rs");
}
