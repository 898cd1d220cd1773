//! `bundle push` and `bundle pull` of one role bundle of the reference estate (SPEC 9:
//! 200 repositories × 50 skills, the `platform` role's 29 repositories × 20 selected
//! skills) through Debian's `docker-registry` on 127.0.0.1: cold (a repository or a home
//! that holds nothing of it) and after one skill edit (the previous bundle already
//! there). Before the timings it prints, once per case, the requests the registry logged
//! and the blobs and bytes that crossed the wire.
//!
//! Run with `cargo bench --bench registry` (needs `apt-get install docker-registry`).
//! The numbers are recorded in `docs/performance.md`.

#[path = "common/reference_estate.rs"]
#[allow(dead_code, reason = "the benchmark edits one skill and needs no role list")]
mod reference_estate;
#[path = "../tests/it/common/registry.rs"]
#[allow(dead_code, reason = "the benchmark uses the launcher and the log, not the tests' other helpers")]
mod registry;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use acompose_driver::compose::registry::client::Access;
use acompose_driver::compose::registry::{PullRequest, Transfer, pull, push};
use divan::Bencher;
use reference_estate::skill_text;
use registry::Registry;

/// The registry, and the platform bundle before and after one skill edit (each in a home
/// of its own, so neither is pruned).
struct Setup {
    root: PathBuf,
    registry: Registry,
    before: PathBuf,
    after: PathBuf,
}

fn converge(projects: &Path, home: &Path) -> PathBuf {
    std::fs::create_dir_all(home).expect("home");
    std::fs::write(home.join("agent-compose.yaml"), "operating_context:\n  - estate/root\n").expect("config");
    let status = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["--quiet", "--home"])
        .arg(home)
        .arg("--projects-root")
        .arg(projects)
        .status()
        .expect("run acompose");
    assert!(status.success());
    let index = std::fs::read(home.join("bundles/index.json")).expect("index");
    let index = acompose_engine::convergence::parse_index(&index).expect("parse");
    home.join("bundles").join(&index["platform"])
}

static SETUP: OnceLock<Option<Setup>> = OnceLock::new();

fn setup() -> Option<&'static Setup> {
    SETUP
        .get_or_init(|| {
            let registry = Registry::start("the registry benchmark")?;
            let root = tempfile::tempdir().expect("tempdir").keep();
            let projects = root.join("projects");
            reference_estate::write(&projects);
            let before = converge(&projects, &root.join("home-before"));
            // repo-000 belongs to platform; skill 05 is among its selected skills.
            let edited = projects.join("estate/repo-000/.agents/skills/skill-000-05/SKILL.md");
            std::fs::write(&edited, skill_text(0, 5, "Revision 1.")).expect("edit");
            let after = converge(&projects, &root.join("home-after"));
            Some(Setup { root, registry, before, after })
        })
        .as_ref()
}

static ROUND: AtomicUsize = AtomicUsize::new(0);

fn round() -> usize {
    ROUND.fetch_add(1, Ordering::Relaxed)
}

impl Setup {
    fn reference(&self, repository: &str) -> String {
        format!("{}:platform", self.registry.repository(repository))
    }

    /// A repository no push has reached.
    fn new_repository(&self) -> String {
        self.reference(&format!("bench/cold-{}", round()))
    }

    /// A home that holds nothing.
    fn new_home(&self) -> PathBuf {
        self.root.join(format!("pull-{}", round()))
    }

    fn push(&self, bundle: &Path, reference: &str) -> Transfer {
        push(bundle, reference, Access::default()).expect("push").transfer
    }

    fn pull(&self, reference: &str, home: &Path) -> Transfer {
        pull(&PullRequest { reference, home: &acompose_driver::home::Home::at(home), access: Access::default() })
            .expect("pull")
            .transfer
    }

    /// The platform bundle before the edit in `reference`'s repository.
    fn pushed_before(&self) -> String {
        static PUSHED: OnceLock<String> = OnceLock::new();
        PUSHED
            .get_or_init(|| {
                let reference = self.reference("bench/before");
                self.push(&self.before, &reference);
                reference
            })
            .clone()
    }

    fn pushed_after(&self) -> String {
        static PUSHED: OnceLock<String> = OnceLock::new();
        PUSHED
            .get_or_init(|| {
                let reference = self.reference("bench/after");
                self.push(&self.before, &reference);
                self.push(&self.after, &reference);
                reference
            })
            .clone()
    }
}

/// Runs `work` once and prints the requests the registry logged during it and what
/// crossed the wire.
fn measure(setup: &Setup, case: &str, work: impl FnOnce() -> Transfer) {
    let logged = setup.registry.requests().len();
    let transfer = work();
    let requests = setup.registry.requests().len() - logged;
    println!(
        "{case:<18} {requests:>5} requests  {:>4} blobs / {:>8} bytes sent  {:>4} blobs / {:>8} bytes received",
        transfer.blobs_sent, transfer.bytes_sent, transfer.blobs_received, transfer.bytes_received
    );
}

fn print_transfers(setup: &Setup) {
    measure(setup, "push cold", || {
        let pushed = push(&setup.before, &setup.new_repository(), Access::default()).expect("push");
        let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
        for blob in &pushed.uploaded {
            *kinds.entry(blob.media_type).or_default() += 1;
        }
        println!("the artifact: {kinds:?}");
        pushed.transfer
    });
    let reference = setup.new_repository();
    setup.push(&setup.before, &reference);
    measure(setup, "push after edit", || setup.push(&setup.after, &reference));
    let before = setup.pushed_before();
    measure(setup, "pull cold", || setup.pull(&before, &setup.new_home()));
    let after = setup.pushed_after();
    let home = setup.new_home();
    setup.pull(&before, &home);
    measure(setup, "pull after edit", || setup.pull(&after, &home));
}

fn main() {
    if let Some(setup) = setup() {
        print_transfers(setup);
        divan::main();
        setup.registry.stop();
        let _ = std::fs::remove_dir_all(&setup.root);
    }
}

/// The platform bundle into a repository that holds none of its blobs: every blob asked
/// for and uploaded, then the manifest.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn push_cold(bencher: Bencher) {
    let Some(setup) = setup() else { return };
    bencher
        .with_inputs(|| setup.new_repository())
        .bench_local_values(|reference| setup.push(&setup.before, &reference));
}

/// The bundle after one skill edit into the repository that holds the one before: every
/// blob asked for, the new tree, slice and bundle files uploaded.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn push_after_edit(bencher: Bencher) {
    let Some(setup) = setup() else { return };
    bencher
        .with_inputs(|| {
            let reference = setup.new_repository();
            setup.push(&setup.before, &reference);
            reference
        })
        .bench_local_values(|reference| setup.push(&setup.after, &reference));
}

/// The platform bundle into an empty home: every blob downloaded and checked, the bundle
/// verified and placed with its store entries.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn pull_cold(bencher: Bencher) {
    let Some(setup) = setup() else { return };
    let reference = setup.pushed_before();
    bencher.with_inputs(|| setup.new_home()).bench_local_values(|home| setup.pull(&reference, &home));
}

/// The bundle after one skill edit into a home that holds the one before: the store's
/// entries read and checked, only the new ones downloaded.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn pull_after_edit(bencher: Bencher) {
    let Some(setup) = setup() else { return };
    let after = setup.pushed_after();
    let before = setup.pushed_before();
    bencher
        .with_inputs(|| {
            let home = setup.new_home();
            setup.pull(&before, &home);
            home
        })
        .bench_local_values(|home| setup.pull(&after, &home));
}
