//! Faults of the environment during a convergence: a full disk (`ENOSPC`) injected at
//! every write, one at a time — the bundle record, every step of the output transaction
//! and its journal, the fingerprint cache — and a read-only home. After each: the index,
//! the repository plan and `person.json` are all of the previous generation or all of
//! the new one, every indexed bundle verifies, the message tells the truth, and a
//! recovery run converges and leaves nothing behind.

use crate::common;

use std::path::Path;
use std::sync::Mutex;

use acompose_driver::convergence::{BareRun, converge_home_with};
use acompose_driver::home::transaction::{Hooks, NoFaults, Step};
use acompose_driver::{HostError, Progress};
use common::{change_estate, debris, generated_estate, generation, unused_space};

/// Fails the `fail_at`-th write (1-based) with `kind`; counts every write it sees.
struct FailAt {
    fail_at: usize,
    seen: usize,
    kind: std::io::ErrorKind,
    failed: Option<String>,
}

impl FailAt {
    fn new(fail_at: usize, kind: std::io::ErrorKind) -> Self {
        FailAt { fail_at, seen: 0, kind, failed: None }
    }
}

impl Hooks for FailAt {
    fn before(&mut self, step: Step<'_>) -> std::io::Result<()> {
        self.seen += 1;
        if self.seen == self.fail_at {
            self.failed = Some(format!("{step:?}"));
            return Err(std::io::Error::from(self.kind));
        }
        Ok(())
    }
}

/// The kind a counting run uses: it never fails.
const NO_FAULT: std::io::ErrorKind = std::io::ErrorKind::Other;

/// Records warnings, as a terminal would show them.
#[derive(Default)]
struct Warnings(Mutex<Vec<String>>);

impl Progress for Warnings {
    fn warn(&self, message: &str) {
        self.0.lock().expect("warnings").push(message.to_owned());
    }
}

fn converge(home: &Path, projects: &Path, hooks: &mut dyn Hooks) -> (Result<BareRun, HostError>, Vec<String>) {
    let warnings = Warnings::default();
    let result = converge_home_with(&acompose_driver::home::Home::at(home), projects, &warnings, hooks);
    (result, warnings.0.into_inner().expect("warnings"))
}

/// Every bundle the index names verifies.
fn assert_indexed_bundles_verify(home: &Path, context: &str) {
    let Ok(bytes) = std::fs::read(home.join("bundles/index.json")) else { return };
    let index = acompose_engine::convergence::parse_index(&bytes).expect("the index parses");
    for id in index.values() {
        let verified = acompose_driver::compose::bundle::verify_directory(&home.join("bundles").join(id));
        assert!(verified.is_ok(), "{context}: bundle {id} does not verify: {verified:?}");
    }
}

/// An estate converged once, then changed: (temporary folder, home, projects, the
/// previous generation).
fn changed_estate() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, [Option<String>; 3]) {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = generated_estate(temporary.path(), 3);
    // No earlier bundles are kept, so the change's convergence prunes the replaced ones
    // and a fault can meet every step, the prune's included.
    let config = std::fs::read_to_string(home.join("agent-compose.yaml")).expect("config");
    common::write_file(&home.join("agent-compose.yaml"), &format!("{config}bundle_history: 0\n"));
    let (first, warnings) = converge(&home, &projects, &mut NoFaults);
    assert!(matches!(first, Ok(BareRun::Converged { .. })), "the first run converges");
    assert!(warnings.is_empty(), "{warnings:?}");
    let previous = generation(&home);
    assert!(previous.iter().all(Option::is_some), "index, plan and person.json exist");
    change_estate(&home, &projects, 1);
    (temporary, home, projects, previous)
}

#[test]
fn a_full_disk_at_any_write_leaves_all_old_or_all_new_and_says_so_truly() {
    // The new generation, from a run without faults, and how many writes it takes.
    let (_reference_dir, reference_home, reference_projects, previous_reference) = changed_estate();
    let mut counter = FailAt::new(usize::MAX, NO_FAULT);
    let (result, _) = converge(&reference_home, &reference_projects, &mut counter);
    assert!(result.is_ok());
    let next_reference = generation(&reference_home);
    assert!(next_reference.iter().zip(&previous_reference).all(|(new, old)| new != old), "every output changes");
    let writes = counter.seen;
    assert!(writes > 10, "a convergence has many writes: {writes}");

    let (mut said_restored, mut said_unchanged, mut cache_warned, mut prune_stopped) = (false, false, false, false);
    for fail_at in 1..=writes {
        let (_temporary, home, projects, previous) = changed_estate();
        let mut hooks = FailAt::new(fail_at, std::io::ErrorKind::StorageFull);
        let (result, warnings) = converge(&home, &projects, &mut hooks);
        let step = hooks.failed.clone().unwrap_or_default();
        let context = format!("write {fail_at} of {writes} ({step})");
        assert!(hooks.failed.is_some(), "{context}: the fault was reached");
        let now = generation(&home);
        match result {
            Err(error) => {
                let message = error.to_string();
                assert_eq!(now, previous, "{context}: a failed run leaves all three old ({message})");
                assert!(
                    message.contains("no storage space") || message.contains("storage full"),
                    "{context}: {message}"
                );
                // Space comes back: the bundles the failed run created and the store
                // entries only they use are gone.
                assert_eq!(unused_space(&home), Vec::<String>::new(), "{context}: space after the failure");
                // "restored" only when something had changed and was put back.
                if message.contains("restored") {
                    said_restored = true;
                } else {
                    assert!(message.contains("nothing was changed"), "{context}: {message}");
                    said_unchanged = true;
                }
            }
            Ok(_) if step.starts_with("Prune") => {
                // A prune stopped as a kill would stop it: the new generation is in place,
                // and the journal says what the next run must finish.
                assert_eq!(now.as_slice(), next_reference.as_slice(), "{context}: all three new");
                assert!(home.join("bundles/.acompose-prune").is_file(), "{context}: the prune's journal stays");
                prune_stopped = true;
            }
            Ok(_) => {
                // Only the cache may fail without failing the run: a visible warning.
                assert!(step.contains("fingerprints"), "{context}: only a cache write may fail quietly");
                assert_eq!(now.as_slice(), next_reference.as_slice(), "{context}: all three new");
                assert!(
                    warnings.iter().any(|warning| warning.contains("fingerprint cache")),
                    "{context}: {warnings:?}"
                );
                cache_warned = true;
            }
        }
        assert_indexed_bundles_verify(&home, &context);
        // Recovery: a run without faults converges to the new generation, leaves no
        // debris, and the run after it writes nothing.
        let (recovered, warnings) = converge(&home, &projects, &mut NoFaults);
        assert!(recovered.is_ok() && warnings.is_empty(), "{context}: recovery: {warnings:?}");
        assert_eq!(
            generation(&home).as_slice(),
            next_reference.as_slice(),
            "{context}: recovered to the new generation"
        );
        assert_eq!(debris(&home), Vec::<std::path::PathBuf>::new(), "{context}: no debris after recovery");
        assert_eq!(unused_space(&home), Vec::<String>::new(), "{context}: space after recovery");
        let (again, _) = converge(&home, &projects, &mut NoFaults);
        assert!(matches!(again, Ok(BareRun::Unchanged { .. })), "{context}: the next run writes nothing");
    }
    assert!(said_restored && said_unchanged && cache_warned && prune_stopped, "every kind of outcome was seen");
}

/// Makes every folder under `home` read-only (or writable again).
fn set_read_only(home: &Path, read_only: bool) {
    use std::os::unix::fs::PermissionsExt as _;
    for entry in walkdir::WalkDir::new(home).into_iter().flatten().filter(|entry| entry.file_type().is_dir()) {
        let mode = if read_only { 0o555 } else { 0o755 };
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
}

#[test]
fn a_read_only_home_is_a_clear_error_and_changes_nothing() {
    let (temporary, home, projects, previous) = changed_estate();
    set_read_only(&home, true);
    let probe = home.join("probe");
    let chmod_works = std::fs::write(&probe, "x").is_err();
    if chmod_works {
        let output = common::acompose(
            temporary.path(),
            &["--home", home.to_str().expect("utf-8"), "--projects-root", projects.to_str().expect("utf-8")],
        );
        set_read_only(&home, false);
        assert_eq!(output.code, 3, "an environment failure: {}", output.stderr);
        assert!(output.stderr.contains("permission denied"), "{}", output.stderr);
        assert!(!output.stderr.contains("restored"), "nothing had changed: {}", output.stderr);
    } else {
        // Running as root, where permissions do not bind: the same fault, injected.
        let _ = std::fs::remove_file(&probe);
        set_read_only(&home, false);
        eprintln!("running as root: chmod cannot make home read-only; injecting read-only faults instead");
        for fail_at in 1..=3 {
            let mut hooks = FailAt::new(fail_at, std::io::ErrorKind::ReadOnlyFilesystem);
            let (result, _) = converge(&home, &projects, &mut hooks);
            let message = result.err().map(|error| error.to_string()).unwrap_or_default();
            assert!(message.contains("read-only"), "write {fail_at}: {message}");
        }
    }
    assert_eq!(generation(&home), previous, "index, plan and person.json are untouched");
    assert_indexed_bundles_verify(&home, "read-only home");
    let (recovered, _) = converge(&home, &projects, &mut NoFaults);
    assert!(recovered.is_ok(), "a writable home converges again");
    assert_eq!(debris(&home), Vec::<std::path::PathBuf>::new());
}

/// Copies `from` into `to` as it is (links as links, modes kept).
fn copy_as_is(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp").arg("-a").arg(from).arg(to).status().expect("cp");
    assert!(status.success(), "cp -a {} {}", from.display(), to.display());
}

/// Leaves in `home` (converged, fingerprints written) what a run of the changed estate
/// killed after materializing its bundles leaves: those bundles beside the old
/// generation, the store entries they link, and the bundle record naming them. The
/// bundles are made by converging a second estate, changed, in `elsewhere`. Returns how
/// many bundles were left.
fn leave_a_killed_runs_bundles(home: &Path, elsewhere: &Path) -> usize {
    let (other_home, other_projects) = generated_estate(elsewhere, 3);
    change_estate(&other_home, &other_projects, 1);
    let (converged, _) = converge(&other_home, &other_projects, &mut NoFaults);
    assert!(converged.is_ok(), "the changed estate converges");
    let bytes = std::fs::read(other_home.join("bundles/index.json")).expect("an index");
    let index = acompose_engine::convergence::parse_index(&bytes).expect("the index parses");
    let new: Vec<&String> = index.values().filter(|id| !home.join("bundles").join(id).exists()).collect();
    for id in &new {
        copy_as_is(&other_home.join("bundles").join(id), &home.join("bundles").join(id));
    }
    for entry in std::fs::read_dir(other_home.join("store")).expect("a store").flatten() {
        if !home.join("store").join(entry.file_name()).exists() {
            copy_as_is(&entry.path(), &home.join("store").join(entry.file_name()));
        }
    }
    let record: String = new.iter().map(|id| format!("\n{id}\n")).collect();
    let mut text = std::fs::read_to_string(home.join("bundles/.acompose-written")).expect("a record");
    text.push_str(&record);
    std::fs::write(home.join("bundles/.acompose-written"), text).expect("the record");
    new.len()
}

#[test]
fn what_a_killed_run_left_is_pruned_by_the_next_run_even_when_nothing_changed_and_by_gc() {
    for through_gc in [false, true] {
        let temporary = tempfile::tempdir().expect("tempdir");
        let (home, projects) = generated_estate(&temporary.path().join("estate"), 3);
        let (first, _) = converge(&home, &projects, &mut NoFaults);
        assert!(matches!(first, Ok(BareRun::Converged { .. })));
        let previous = generation(&home);
        let left = leave_a_killed_runs_bundles(&home, &temporary.path().join("elsewhere"));
        assert!(left > 0, "the changed estate has new bundles");
        assert_eq!(unused_space(&home).iter().filter(|unused| unused.starts_with("bundle")).count(), left);
        let context = if through_gc { "gc" } else { "the next run" };
        if through_gc {
            let report =
                acompose_driver::convergence::gc::gc(&acompose_driver::home::Home::at(&home), false).expect("gc");
            assert_eq!(report.bundles_pruned, left, "{context}");
        } else {
            // Nothing changed in the estate: before, this was the no-op path ("0 pruned").
            let (next, _) = converge(&home, &projects, &mut NoFaults);
            let Ok(BareRun::Converged { report, .. }) = next else { panic!("{context}: not the no-op path") };
            assert_eq!(report.bundles_pruned, left, "{context}");
        }
        assert_eq!(unused_space(&home), Vec::<String>::new(), "{context}: space came back");
        assert_eq!(generation(&home), previous, "{context}: the outputs are those of the estate");
        assert_indexed_bundles_verify(&home, context);
        if through_gc {
            // `gc` changed the bundle record, so the next run looks again; it writes nothing.
            let (next, _) = converge(&home, &projects, &mut NoFaults);
            let Ok(BareRun::Converged { report, .. }) = next else { panic!("{context}: a full run after gc") };
            assert_eq!((report.bundles_new, report.bundles_pruned), (0, 0), "{context}");
        }
        let (again, _) = converge(&home, &projects, &mut NoFaults);
        assert!(matches!(again, Ok(BareRun::Unchanged { .. })), "{context}: then nothing is left to do");
    }
}
