//! What a user's `acompose watch` costs per edit, measured on the process itself: the
//! release binary watches a generated estate (200 and 1000 repositories of the reference
//! shape; `ACOMPOSE_WATCH_SIZES=200,1000,2000` for others), one selected skill is edited
//! per sample, and the benchmark reads what the watch prints — its own time for the
//! reconvergence (`reconverged: … N ms`) and `settled:` once the bundles it replaced are
//! pruned and the fingerprints saved — and the bytes the process wrote meanwhile
//! (`wchar` of `/proc/<pid>/io`), the processor time of all its threads from the edit to
//! `settled:` (`/proc/<pid>/task/*/schedstat`: the reconvergence and the quiet moment's
//! prune and save, which the watch's own time leaves out), and its resident memory
//! (`VmRSS`, `VmHWM`).
//!
//! Divan's own time for a sample is from the write of the edit to `settled:`: it holds the
//! file watcher's debounce and the quiet moment the watch waits for, so the table printed
//! at the end, from the watch's own figures, is the one `docs/performance.md` records.
//!
//! Before each watch starts, the same estate is converged cold into a home of its own,
//! converged again with nothing changed (the no-op), and composed cold into a third home
//! from one request naming every repository as a source of the `platform` role (up to a
//! request's limit of 1000 sources; none past it), each run
//! under GNU time (`/usr/bin/time`, wall seconds and peak resident memory): the second
//! table, the scaling table of `docs/performance.md`.
//!
//! Each estate is written into a temporary folder of its own; `TMPDIR` chooses the file
//! system (an ext4 without a journal slows the making of files for minutes after many
//! were deleted: `docs/performance.md`, "the file system under the figures").

#[path = "common/reference_estate.rs"]
mod reference_estate;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use divan::Bencher;
use reference_estate::{REPOSITORIES, skill_text};

/// The estate sizes measured: `ACOMPOSE_WATCH_SIZES` (comma-separated), else 200 and 1000.
fn sizes() -> Vec<usize> {
    std::env::var("ACOMPOSE_WATCH_SIZES")
        .ok()
        .map(|text| text.split(',').filter_map(|size| size.trim().parse().ok()).collect())
        .filter(|sizes: &Vec<usize>| !sizes.is_empty())
        .unwrap_or_else(|| vec![REPOSITORIES, 1000])
}

/// One running watch over its own estate.
struct Watch {
    _directory: tempfile::TempDir,
    projects: PathBuf,
    child: Child,
    lines: Receiver<String>,
    /// Per edit: the watch's own milliseconds, the bytes the process wrote, and the
    /// processor time of all its threads in milliseconds (the reconvergence and the quiet
    /// moment after it: the prune and the fingerprints' save).
    edits: Vec<(u64, u64, u64)>,
    round: usize,
    /// The one-shot runs measured on the same estate before the watch started.
    runs: Runs,
}

/// The release binary's one-shot runs on an estate, each as (wall seconds, peak resident
/// KiB) as GNU time reports them: a cold convergence into a fresh home, the no-op run
/// after it, and a cold compose of one request naming every repository as a source of
/// the `platform` role into another fresh home.
#[derive(Debug, Default, Clone, Copy)]
struct Runs {
    cold_convergence: (f64, u64),
    noop: (f64, u64),
    /// None past a request's limit of 1000 sources (`limit-request-sources`).
    cold_compose: Option<(f64, u64)>,
}

/// Runs the release binary under GNU time (`/usr/bin/time`) in `directory`: its wall
/// seconds and peak resident KiB.
fn timed(directory: &std::path::Path, arguments: &[&str]) -> (f64, u64) {
    let output = Command::new("/usr/bin/time")
        .args(["-f", "timed %e %M"])
        .arg(env!("CARGO_BIN_EXE_acompose"))
        .args(arguments)
        .current_dir(directory)
        .stdout(Stdio::null())
        .output()
        .expect("run acompose under /usr/bin/time");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stderr);
    let line = text.lines().rev().find_map(|line| line.strip_prefix("timed ")).expect("time's line");
    let mut fields = line.split_whitespace();
    let seconds = fields.next().and_then(|field| field.parse().ok()).unwrap_or(0.0);
    let peak = fields.next().and_then(|field| field.parse().ok()).unwrap_or(0);
    (seconds, peak)
}

/// The one-shot runs (see [`Runs`]), each into its own home beside the watch's.
fn one_shot_runs(directory: &std::path::Path, repositories: usize) -> Runs {
    let config = "operating_context:\n  - estate/root\n";
    for home in ["cold-home", "compose-home"] {
        std::fs::create_dir_all(directory.join(home)).expect("home");
        std::fs::write(directory.join(home).join("agent-compose.yaml"), config).expect("config");
    }
    let cold_convergence = timed(directory, &["--quiet", "--home", "cold-home", "--projects-root", "projects"]);
    // Past the fingerprint cache's two-second window, so the no-op sees settled outputs.
    std::thread::sleep(Duration::from_millis(2500));
    let noop = timed(directory, &["--quiet", "--home", "cold-home", "--projects-root", "projects"]);
    if repositories > 1000 {
        return Runs { cold_convergence, noop, cold_compose: None };
    }
    let mut request = String::from("compose {\n    role \"platform\"\n    delivery \"native-skills\"\n");
    for repository in 0..repositories {
        request
            .push_str(&format!("    source \"repo-{repository:03}\" root=\"projects/estate/repo-{repository:03}\"\n"));
    }
    request.push_str("}\n");
    std::fs::write(directory.join("request.kdl"), request).expect("request");
    let cold_compose = Some(timed(
        directory,
        &["--quiet", "--home", "compose-home", "compose", "request.kdl", "--projects-root", "projects"],
    ));
    Runs { cold_convergence, noop, cold_compose }
}

impl Watch {
    /// Generates an estate of `repositories`, lets it age past the fingerprint cache's
    /// two-second window, and starts `acompose -v watch` on it (which converges first).
    fn start(repositories: usize) -> Watch {
        let directory = tempfile::tempdir().expect("tempdir");
        let projects = directory.path().join("projects");
        if repositories == REPOSITORIES {
            reference_estate::write(&projects);
        } else {
            reference_estate::write_sized(&projects, repositories);
        }
        let home = directory.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(home.join("agent-compose.yaml"), "operating_context:\n  - estate/root\n").expect("config");
        std::thread::sleep(Duration::from_millis(2500));
        let runs = one_shot_runs(directory.path(), repositories);
        let mut child = Command::new(env!("CARGO_BIN_EXE_acompose"))
            .args(["-v", "watch", "--debounce", "10", "--home"])
            .arg(&home)
            .arg("--projects-root")
            .arg(&projects)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start acompose watch");
        let (sender, lines) = channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let watch = Watch { _directory: directory, projects, child, lines, edits: Vec::new(), round: 0, runs };
        watch.line_starting("watching");
        let _ = Command::new("sync").status();
        watch
    }

    /// The next line that starts with `prefix`; the watch ending first is a failure.
    fn line_starting(&self, prefix: &str) -> String {
        loop {
            let line = self.lines.recv().unwrap_or_else(|_| panic!("the watch ended before `{prefix}`"));
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    fn written_bytes(&self) -> u64 {
        proc_field(&format!("/proc/{}/io", self.child.id()), "wchar:")
    }

    /// The processor time of every thread of the watch so far, in nanoseconds (the first
    /// field of each `/proc/<pid>/task/<tid>/schedstat`).
    fn processor_nanos(&self) -> u64 {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id())).into_iter().flatten().flatten();
        tasks
            .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
            .filter_map(|text| text.split_whitespace().next().and_then(|nanos| nanos.parse::<u64>().ok()))
            .sum()
    }

    /// One edit of a selected skill, measured from before the write to `settled:`.
    fn edit(&mut self) {
        self.round += 1;
        let skill = self.projects.join("estate/repo-000/.agents/skills/skill-000-05/SKILL.md");
        let (before, processor) = (self.written_bytes(), self.processor_nanos());
        std::fs::write(&skill, skill_text(0, 5, &format!("Revision {}.", self.round))).expect("edit");
        let line = self.line_starting("reconverged:");
        let milliseconds = line
            .rsplit("; ")
            .next()
            .and_then(|last| last.strip_suffix(" ms"))
            .and_then(|number| number.parse().ok())
            .unwrap_or_else(|| panic!("no time in `{line}`"));
        self.line_starting("settled:");
        let processor = self.processor_nanos().saturating_sub(processor) / 1_000_000;
        self.edits.push((milliseconds, self.written_bytes() - before, processor));
    }

    /// Resident and peak resident memory, in KiB.
    fn memory(&self) -> (u64, u64) {
        let status = format!("/proc/{}/status", self.child.id());
        (proc_field(&status, "VmRSS:"), proc_field(&status, "VmHWM:"))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// The number after `key` in a `/proc` file of `key value` lines.
fn proc_field(path: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or(0)
}

static WATCHES: OnceLock<Mutex<BTreeMap<usize, Watch>>> = OnceLock::new();

fn watches() -> &'static Mutex<BTreeMap<usize, Watch>> {
    WATCHES.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// One selected skill edited while `acompose watch` runs on an estate of `repositories`.
#[divan::bench(args = sizes(), sample_count = 15, sample_size = 1)]
fn watch_edit(bencher: Bencher, repositories: usize) {
    let mut watches = watches().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let watch = watches.entry(repositories).or_insert_with(|| Watch::start(repositories));
    bencher.bench_local(|| watch.edit());
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

fn main() {
    divan::main();
    let mut watches = watches().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    println!(
        "\nrepositories | edits | watch's time, ms (median, min–max) | bytes written per edit (median, max) | processor ms per edit to `settled:` (median, max) | VmRSS / VmHWM KiB"
    );
    for (repositories, watch) in watches.iter() {
        let times: Vec<u64> = watch.edits.iter().map(|(time, _, _)| *time).collect();
        let bytes: Vec<u64> = watch.edits.iter().map(|(_, bytes, _)| *bytes).collect();
        let processor: Vec<u64> = watch.edits.iter().map(|(_, _, processor)| *processor).collect();
        let (resident, peak) = watch.memory();
        println!(
            "{repositories} | {} | {} ({}–{}) | {} ({}) | {} ({}) | {resident} / {peak}",
            watch.edits.len(),
            median(times.clone()),
            times.iter().min().unwrap_or(&0),
            times.iter().max().unwrap_or(&0),
            median(bytes.clone()),
            bytes.iter().max().unwrap_or(&0),
            median(processor.clone()),
            processor.iter().max().unwrap_or(&0),
        );
    }
    println!(
        "\nrepositories | cold convergence s / peak KiB | no-op s / peak KiB | cold compose (every repository a source) s / peak KiB"
    );
    for (repositories, watch) in watches.iter() {
        let Runs { cold_convergence: (cs, cp), noop: (ns, np), cold_compose } = watch.runs;
        let compose = match cold_compose {
            Some((seconds, peak)) => format!("{seconds:.2} / {peak}"),
            None => "over a request's 1000 sources".to_owned(),
        };
        println!("{repositories} | {cs:.2} / {cp} | {ns:.2} / {np} | {compose}");
    }
    // Statics are never dropped: stop the watches and remove their estates here.
    std::mem::take(&mut *watches);
}
