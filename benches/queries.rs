//! Benchmarks of the read-only queries over one bundle, each a whole run of the binary
//! beside the cost of starting it (`acompose --version`): `describe --why`, `describe`,
//! `statusline` and `whoami`, on the reference estate's largest bundle — the 200-source
//! composition of `benches/estate.rs` (200 repositories × 50 skills of about 1.5 KB, every
//! skill selected: a 2.9 MB `trace.json`), projected for Claude Code at repository scope.
//!
//! Run with `cargo bench --bench queries`. The numbers and their ratios are recorded in
//! `docs/performance.md`.

#[path = "common/reference_estate.rs"]
#[allow(dead_code, reason = "the queries need the estate, not its roles or edits")]
mod reference_estate;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use divan::Bencher;
use reference_estate::REPOSITORIES;

/// A skill the bundle selects, about halfway through its trace.
const SKILL: &str = "skill:skill-100-25";

struct Reference {
    _directory: tempfile::TempDir,
    /// The bundle, with its trace index.
    bundle: PathBuf,
    /// The same bundle as one written before the trace index: `trace.json` and a
    /// manifest without the index's entry, so `--why` reads the whole trace.
    without_index: PathBuf,
    /// The folder the bundle is projected into.
    target: PathBuf,
}

fn run(arguments: &[&str], directory: &Path) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(arguments)
        .current_dir(directory)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run acompose");
    assert!(output.status.success(), "{arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Writes the estate, composes the 200-source request into a home and projects the
/// bundle.
fn generate() -> Reference {
    let directory = tempfile::tempdir().expect("tempdir");
    let root = directory.path().to_path_buf();
    reference_estate::write(&root.join("projects"));
    let mut request = String::from("compose {\n    role \"platform\"\n    delivery \"native-skills\"\n");
    for repository in 0..REPOSITORIES {
        let _ = writeln!(request, "    source \"repo-{repository:03}\" root=\"projects/estate/repo-{repository:03}\"");
    }
    request.push_str("}\n");
    std::fs::write(root.join("request.kdl"), request).expect("request");
    let composed = run(&["--quiet", "--home", "home", "compose", "request.kdl", "--projects-root", "projects"], &root);
    let id = String::from_utf8_lossy(&composed.stdout).split_whitespace().nth(1).expect("bundle id").to_owned();
    let bundle = root.join("home/bundles").join(&id);
    let target = root.join("target");
    std::fs::create_dir_all(&target).expect("target");
    let (bundle_text, target_text) = (bundle.to_str().expect("utf-8"), target.to_str().expect("utf-8"));
    run(&["project", bundle_text, "--layout", "claude", "--scope", "repo", "--target", target_text], &root);
    let without_index = root.join("without-index");
    std::fs::create_dir_all(&without_index).expect("mkdir");
    std::fs::copy(bundle.join("trace.json"), without_index.join("trace.json")).expect("trace");
    let manifest = std::fs::read_to_string(bundle.join("manifest.json")).expect("manifest");
    let mut value: serde_json::Value = serde_json::from_str(&manifest).expect("json");
    value["content"].as_array_mut().expect("content").retain(|entry| entry["path"] != "trace.index");
    let mut bytes = serde_json::to_vec_pretty(&value).expect("json");
    bytes.push(b'\n');
    std::fs::write(without_index.join("manifest.json"), bytes).expect("manifest");
    Reference { _directory: directory, bundle, without_index, target }
}

static REFERENCE: OnceLock<Reference> = OnceLock::new();

fn reference() -> &'static Reference {
    REFERENCE.get_or_init(generate)
}

fn main() {
    divan::main();
    // A static is never dropped: remove the estate here.
    if let Some(reference) = REFERENCE.get() {
        let _ = std::fs::remove_dir_all(reference._directory.path());
    }
}

fn text(path: &Path) -> &str {
    path.to_str().expect("utf-8")
}

/// The floor: starting the binary, which prints its version and exits.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn process_start_floor(bencher: Bencher) {
    let reference = reference();
    bencher.bench_local(|| run(&["--version"], &reference.target));
}

/// `describe BUNDLE --why skill:…` through the trace index.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn describe_why(bencher: Bencher) {
    let reference = reference();
    let bundle = text(&reference.bundle);
    bencher.bench_local(|| run(&["describe", bundle, "--why", SKILL], &reference.target));
}

/// The same question of the same bundle without its index: the whole trace is read.
#[divan::bench(sample_count = 50, sample_size = 1)]
fn describe_why_whole_trace(bencher: Bencher) {
    let reference = reference();
    let bundle = text(&reference.without_index);
    bencher.bench_local(|| run(&["describe", bundle, "--why", SKILL], &reference.target));
}

/// `describe BUNDLE`: every section, so the whole trace.
#[divan::bench(sample_count = 50, sample_size = 1)]
fn describe(bencher: Bencher) {
    let reference = reference();
    let bundle = text(&reference.bundle);
    bencher.bench_local(|| run(&["describe", bundle], &reference.target));
}

/// `statusline` inside the projection, as Claude Code runs it on every prompt update.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn statusline(bencher: Bencher) {
    let reference = reference();
    let target = text(&reference.target);
    bencher.bench_local(|| run(&["statusline", "--target", target], &reference.target));
}

/// `whoami` inside the projection: the row and every skill's name.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn whoami(bencher: Bencher) {
    let reference = reference();
    let target = text(&reference.target);
    bencher.bench_local(|| run(&["whoami", "--target", target], &reference.target));
}
