//! Estate convergence: per-role bundles, the repository plan, incrementality (checked
//! against salsa's executed-query log), the fingerprint cache, `--stats` and watch mode.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acompose_driver::NoProgress;
use acompose_driver::convergence::Converger;
use acompose_driver::home::transaction::NoFaults;
use acompose_engine::Database;
use common::{acompose, backdate_folders, git, tree_of};

fn skill(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\n# {name}\n\n{body}\n")
}

/// Writes a file and dates it an hour back, so the fingerprint cache does not treat it as
/// racily fresh (a file changed within two seconds of a convergence is always re-hashed).
fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    backdate(path);
}

fn backdate(path: &Path) {
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(path).and_then(|file| file.set_modified(hour_ago)).expect("backdate");
}

const ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; composed-skill \"design-*\"; }\n    role eval { use-repository benchmarks; composed-skill \"metrics-*\"; }\n}\n";

/// A small estate: a trusted root `acme/root` and two skill repositories.
fn estate(root: &Path) -> (PathBuf, PathBuf) {
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), ROLES);
    write(&projects.join("acme/root/.agents/skills/estate-map/SKILL.md"), &skill("estate-map", "Where things are."));
    write(
        &projects.join("acme/root/.agents/composed/design-review/COMPOSED.md"),
        &skill("design-review", "Review designs."),
    );
    write(
        &projects.join("acme/root/.agents/composed/metrics-board/COMPOSED.md"),
        &skill("metrics-board", "Read metrics."),
    );
    for name in ["machine-cpu", "machine-gpu", "compute-stack"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name, "Hardware."));
    }
    for name in ["bench-harness", "bench-report"] {
        write(
            &projects.join(format!("example/benchmarks/.agents/skills/{name}/SKILL.md")),
            &skill(name, "Benchmarks."),
        );
    }
    write(&projects.join("acme/root/.git/HEAD"), "ref: refs/heads/main\n");
    write(&projects.join("acme/root/.git/refs/heads/main"), "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n");
    let home = root.join("home");
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    backdate_folders(root);
    (home, projects)
}

fn quiet() -> NoProgress {
    NoProgress
}

fn config(home: &Path) -> acompose_engine::host_config::HostConfig {
    acompose_driver::home::read_config(&acompose_driver::home::Home::at(home), &quiet()).expect("config")
}

fn index(home: &Path) -> BTreeMap<String, String> {
    acompose_engine::convergence::parse_index(&std::fs::read(home.join("bundles/index.json")).expect("index"))
        .expect("parse")
}

/// A live converger over an estate, converged once, with the executed-query log cleared.
fn live_converger(home: &Path, projects: &Path) -> (Converger, acompose_engine::host_config::HostConfig) {
    let mut converger = Converger::with_database(Database::with_execution_log());
    let config = config(home);
    converger
        .converge(&acompose_driver::home::Home::at(home), projects, &config, &quiet(), &mut NoFaults, true)
        .expect("converge");
    converger.db.take_executed();
    (converger, config)
}

fn count(executed: &[String], query: &str) -> usize {
    executed.iter().filter(|entry| entry.starts_with(&format!("{query}("))).count()
}

#[test]
fn editing_one_skill_body_reruns_its_summary_and_the_roles_that_admit_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, config) = live_converger(&home, &projects);
    let before = index(&home);
    assert_eq!(before.len(), 7, "one bundle per role");

    let edited = projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md");
    write(&edited, &skill("machine-gpu", "Hardware, revised."));
    assert!(converger.loader.refresh(&mut converger.db, &edited));
    let report = converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("reconverge");
    let executed = converger.db.take_executed();
    // The loader summarized the edited file as it read it again: no per-file query runs.
    assert_eq!(count(&executed, "summary_of_bytes"), 0, "{executed:#?}");
    assert_eq!(count(&executed, "parsed_document"), 0, "{executed:#?}");
    assert_eq!(count(&executed, "catalogue_listing"), 1, "only the hardware catalogue: {executed:#?}");
    assert_eq!(count(&executed, "composition_bundle"), 1, "only the platform role: {executed:#?}");
    assert_eq!(count(&executed, "kdl_document"), 0, "{executed:#?}");
    assert_eq!(report.bundles_new, 1);
    let after = index(&home);
    for (role, id) in &before {
        assert_eq!(after[role] != *id, role == "platform", "{role}");
    }
}

/// The memos three successive edits of the same skill validate, in an estate with
/// `extra` more skills in a repository the edit does not touch.
fn memos_validated_by_three_edits(extra: usize) -> [usize; 3] {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    // More skills in the benchmarks repository, which only the eval role admits.
    for index in 0..extra {
        let name = format!("bench-extra-{index:02}");
        write(&projects.join(format!("example/benchmarks/.agents/skills/{name}/SKILL.md")), &skill(&name, "More."));
    }
    let (mut converger, config) = live_converger(&home, &projects);
    let edited = projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md");
    let mut edit = |body: &str| {
        write(&edited, &skill("machine-gpu", body));
        assert!(converger.loader.refresh(&mut converger.db, &edited));
        let report = converger
            .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
            .expect("reconverge");
        let executed = converger.db.take_executed();
        assert_eq!(count(&executed, "catalogue_listing"), 1, "{executed:#?}");
        assert_eq!(count(&executed, "composition_bundle"), 1, "only the platform role: {executed:#?}");
        report.queries_reused
    };
    [edit("Revised once."), edit("Revised twice."), edit("Revised three times.")]
}

#[test]
fn editing_the_same_skill_again_checks_only_what_depends_on_it() {
    // Skill files are summaries set by the loader, so no memo exists per untouched skill:
    // what an edit validates does not grow with the skills it does not touch. The first
    // edit drops the file to LOW durability; the later ones validate no more than it.
    // One memo's reuse depends on how the edits fall in time (runs of the same estate
    // give 61 or 62 for a later edit), so the counts are compared within one; a memo per
    // untouched skill would add 40.
    let few = memos_validated_by_three_edits(0);
    let many = memos_validated_by_three_edits(40);
    for (few, many) in few.iter().zip(&many) {
        assert!(few.abs_diff(*many) <= 1, "40 untouched skills changed what an edit validates: {few} → {many}");
    }
    assert!(many[1] <= many[0] && many[2] <= many[0], "{many:?}");
}

#[test]
fn adding_a_skill_file_is_picked_up() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, config) = live_converger(&home, &projects);
    let added = projects.join("example/hardware/.agents/skills/machine-npu/SKILL.md");
    write(&added, &skill("machine-npu", "New hardware."));
    assert!(converger.loader.refresh(&mut converger.db, &added));
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("reconverge");
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    assert!(platform.join("content/skills/hardware/machine-npu/SKILL.md").is_file());
}

#[test]
fn a_file_added_beside_a_skill_replans_only_the_role_that_admits_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, config) = live_converger(&home, &projects);
    // An editor's backup beside a skill: the catalogue's file list changes, its skill
    // names do not.
    for round in 0..2 {
        let added = projects.join(format!("example/hardware/.agents/skills/machine-gpu/SKILL.md.~{round}~"));
        write(&added, "backup");
        assert!(converger.loader.refresh(&mut converger.db, &added));
        converger
            .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
            .expect("reconverge");
        let executed = converger.db.take_executed();
        assert_eq!(count(&executed, "composition_bundle"), 1, "round {round}: only the platform role: {executed:#?}");
    }
}

#[test]
fn editing_roles_kdl_replans_only_the_affected_role() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, config) = live_converger(&home, &projects);
    let before = index(&home);
    let roles = projects.join("acme/root/.agents/roles.kdl");
    write(&roles, &ROLES.replace("composed-skill \"metrics-*\"", "composed-skill \"metrics-board\""));
    assert!(converger.loader.refresh(&mut converger.db, &roles));
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("reconverge");
    let executed = converger.db.take_executed();
    assert_eq!(count(&executed, "trusted_root"), 1, "{executed:#?}");
    assert_eq!(count(&executed, "composition_bundle"), 1, "only eval re-plans: {executed:#?}");
    let after = index(&home);
    for (role, id) in &before {
        assert_eq!(after[role] != *id, role == "eval", "{role}");
    }
}

fn outputs(home: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in walkdir_files(home) {
        let relative = entry.strip_prefix(home).expect("under home").to_path_buf();
        let first = relative.components().next().map(|component| component.as_os_str().to_string_lossy().into_owned());
        if matches!(first.as_deref(), Some("cache" | ".acompose.lock" | "agent-compose.yaml")) {
            continue;
        }
        files.insert(relative, std::fs::read(&entry).expect("read"));
    }
    files
}

fn walkdir_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() { pending.push(path) } else { files.push(path) }
        }
    }
    files
}

#[test]
fn two_bare_runs_write_nothing_the_second_time_and_match_a_fresh_home() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = estate(temporary.path());
    let first = acompose(temporary.path(), &["--home", "home", "--projects-root", "projects", "--stats"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("bundles   7 new"), "{}", first.stdout);
    let plan = std::fs::read_to_string(home.join("repository-plan.json")).expect("plan");
    assert!(plan.contains("\"revision\": \"4b825dc642cb6eb9a060e54bf8d69288fbee4904\""), "{plan}");
    let second = acompose(temporary.path(), &["--home", "home", "--projects-root", "projects", "--stats"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stdout.contains("read 0, hashed 0, written 0"), "{}", second.stdout);
    assert!(second.stdout.contains(" 0 written,"), "{}", second.stdout);

    // A fresh home converges to the same bytes.
    std::fs::create_dir_all(temporary.path().join("fresh")).expect("fresh");
    std::fs::copy(home.join("agent-compose.yaml"), temporary.path().join("fresh/agent-compose.yaml")).expect("config");
    assert_eq!(acompose(temporary.path(), &["--home", "fresh", "--projects-root", "projects"]).code, 0);
    assert_eq!(outputs(&home), outputs(&temporary.path().join("fresh")));
}

/// Every file under `root` with its size, time and inode.
fn file_states(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    walkdir_files(root)
        .into_iter()
        .filter_map(|path| {
            let metadata = std::fs::symlink_metadata(&path).ok()?;
            let relative = path.strip_prefix(root).ok()?.to_path_buf();
            Some((relative, (metadata.len(), metadata.modified().ok()?, metadata.ino())))
        })
        .collect()
}

#[test]
fn an_edit_to_one_skill_writes_its_bundle_its_store_entries_and_a_few_lines_of_cache() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let arguments = ["--home", "home", "--projects-root", "projects", "--stats"];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    let mut before = file_states(&home);
    let mut platform = index(&home)["platform"].clone();
    for round in 0..2 {
        let name = ["machine-gpu", "machine-cpu"][round];
        let path = projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md"));
        write(&path, &skill(name, &format!("Hardware, edited in round {round}.")));
        let edited = acompose(temporary.path(), &arguments);
        assert!(edited.stdout.contains("bundles   1 new"), "{}", edited.stdout);
        let now = index(&home)["platform"].clone();
        assert_ne!(now, platform, "round {round}: the platform role has a new bundle");
        let after = file_states(&home);
        let written: Vec<&PathBuf> =
            after.iter().filter(|(path, state)| before.get(*path) != Some(*state)).map(|(path, _)| path).collect();
        // Its new bundle, the edited skill's store entries, the index, the bundle record
        // and the cache's log (and the locks' times); the plan, the cache's base, every
        // other bundle and entry are left as they were.
        let expected = |path: &&PathBuf| {
            path.ends_with(".acompose.lock")
                || path.starts_with(Path::new("bundles").join(&now))
                || path.starts_with("store")
                || [
                    Path::new("bundles/index.json"),
                    Path::new("bundles/.acompose-written"),
                    Path::new("cache/fingerprints.log"),
                ]
                .contains(&path.as_path())
        };
        let unexpected: Vec<&&PathBuf> = written.iter().filter(|path| !expected(path)).collect();
        assert!(unexpected.is_empty(), "round {round}: {unexpected:#?}");
        let store_files = written.iter().filter(|path| path.starts_with("store")).count();
        assert!(store_files <= 4, "round {round}: one tree and its slice: {written:#?}");
        let log = after[Path::new("cache/fingerprints.log")].0
            - before.get(Path::new("cache/fingerprints.log")).map_or(0, |state| state.0);
        assert!(log > 0 && log < 8 * 1024, "round {round}: the log grew by {log} bytes");
        platform = now;
        before = after;
    }
    // The next runs read the base and its log and find nothing to do. They write no
    // output; the cache's log may take one more record of what was racily fresh when the
    // edit was recorded (a store folder changed within two seconds of its save), and the
    // cache's base is left as it was.
    for _ in 0..2 {
        let unchanged = acompose(temporary.path(), &arguments);
        assert!(unchanged.stdout.contains("read 0, hashed 0, written 0"), "{}", unchanged.stdout);
    }
    let after = file_states(&home);
    let moved: Vec<&PathBuf> =
        after.keys().chain(before.keys()).filter(|path| after.get(*path) != before.get(*path)).collect();
    assert!(
        moved
            .iter()
            .all(|path| path.ends_with(".acompose.lock") || path.as_path() == Path::new("cache/fingerprints.log")),
        "a run with nothing to do writes nothing: {moved:#?}"
    );
    // What the base and its log say is what a fresh home converges to.
    std::fs::create_dir_all(temporary.path().join("fresh")).expect("fresh");
    std::fs::copy(home.join("agent-compose.yaml"), temporary.path().join("fresh/agent-compose.yaml")).expect("config");
    assert_eq!(acompose(temporary.path(), &["--home", "fresh", "--projects-root", "projects"]).code, 0);
    let fresh = temporary.path().join("fresh");
    assert_eq!(index(&home), index(&fresh));
    let plan = |home: &Path| std::fs::read(home.join("repository-plan.json")).expect("the plan");
    assert_eq!(plan(&home), plan(&fresh));
    // An edit the log does not know of yet is still seen.
    let gpu = projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md");
    write(&gpu, &skill("machine-gpu", "Hardware, edited once more."));
    let edited = acompose(temporary.path(), &arguments);
    assert!(edited.stdout.contains("bundles   1 new"), "{}", edited.stdout);
}

#[test]
fn the_cache_sees_touched_files_and_discards_a_corrupt_cache() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let arguments = ["--home", "home", "--projects-root", "projects", "--stats"];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    // Same bytes, new mtime: recognised by the hash, nothing rewritten.
    let skill_path = projects.join("example/hardware/.agents/skills/machine-cpu/SKILL.md");
    let bytes = std::fs::read(&skill_path).expect("read");
    std::fs::write(&skill_path, &bytes).expect("rewrite");
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&skill_path)
        .and_then(|file| file.set_modified(two_hours_ago))
        .expect("a different old time");
    let touched = acompose(temporary.path(), &arguments);
    assert!(touched.stdout.contains("read 1, hashed 1, written 0"), "{}", touched.stdout);
    // A changed body converges.
    write(&skill_path, &skill("machine-cpu", "Changed."));
    let changed = acompose(temporary.path(), &arguments);
    assert!(changed.stdout.contains("bundles   1 new"), "{}", changed.stdout);
    // A corrupt cache is discarded with a warning, never trusted.
    std::fs::write(home.join("cache/fingerprints"), "acompose-fingerprints 2\nF\tgarbage\n").expect("corrupt");
    let corrupt = acompose(temporary.path(), &arguments);
    assert_eq!(corrupt.code, 0, "{}", corrupt.stderr);
    assert!(corrupt.stderr.contains("discarding the fingerprint cache"), "{}", corrupt.stderr);
    assert!(corrupt.stdout.contains(" 0 written,"), "{}", corrupt.stdout);
    let again = acompose(temporary.path(), &arguments);
    assert!(again.stdout.contains("read 0"), "the cache is rebuilt: {}", again.stdout);
}

#[test]
fn freshness_is_judged_when_a_file_is_read_not_when_the_cache_is_written() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    // Written just now (not dated back): racily fresh when the convergence reads it.
    let fresh = projects.join("example/hardware/.agents/skills/machine-npu/SKILL.md");
    std::fs::create_dir_all(fresh.parent().expect("parent")).expect("mkdir");
    std::fs::write(&fresh, skill("machine-npu", "Fresh.")).expect("write");
    let mut converger = Converger::default();
    let config = config(&home);
    let report = converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, true)
        .expect("converge");
    // The cache is written later than two seconds after the read (a long convergence,
    // or watch mode waiting for the inputs to settle). A real wait, not a fake clock: the
    // claim is that no clock is asked again when the cache is written, the system's
    // included, and only the passing of real time shows that.
    std::thread::sleep(Duration::from_millis(2200));
    let cache = acompose_driver::convergence::fingerprints(
        &mut converger,
        &acompose_driver::home::Home::at(&home),
        &projects,
        &report,
    );
    let recorded = cache.inputs.iter().find(|(path, _)| path == &fresh).map(|(_, observed)| *observed);
    match recorded {
        Some(acompose_driver::compose::load::Observed::File(stat, _)) => {
            assert_eq!(stat.modified_nanos, 0, "the fresh file's time is smudged")
        }
        other => panic!("the fresh file is not recorded as a file: {other:?}"),
    }
}

#[test]
fn staging_folders_and_temporaries_no_live_run_owns_are_removed() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = estate(temporary.path());
    let arguments = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    let bundles = home.join("bundles");
    let old = bundles.join(".staging-0123456789abcdef-4242");
    let recent = bundles.join(".staging-fedcba9876543210-4343");
    let foreign = bundles.join(".staging-notes");
    for folder in [&old, &recent, &foreign] {
        write(&folder.join("manifest.json"), "{}");
    }
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    for folder in [&old, &foreign] {
        std::fs::File::open(folder).and_then(|handle| handle.set_modified(two_hours_ago)).expect("date back");
    }
    let temporaries = [
        bundles.join(".acompose-a1b2c3.tmp"),
        home.join("cache/.acompose-d4e5f6.tmp"),
        home.join(".acompose-g7h8i9.tmp"),
    ];
    for path in &temporaries {
        write(path, "half written");
    }
    // A change, so the run converges rather than stopping at the fingerprint check.
    write(
        &temporary.path().join("projects/example/hardware/.agents/skills/machine-cpu/SKILL.md"),
        &skill("machine-cpu", "Again."),
    );
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    // Under the home and bundles locks no other run is live: every staging folder and
    // temporary goes, whatever its age.
    assert!(!old.exists() && !recent.exists(), "staging folders are gone");
    for path in &temporaries {
        assert!(!path.exists(), "{} is gone", path.display());
    }
    assert!(foreign.is_dir(), "a folder not named like a staging folder is not ours");
}

#[test]
fn compose_and_bare_report_stats() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let output = acompose(temporary.path(), &["--home", "home", "--stats"]);
    assert!(output.stdout.contains("stats     stat'ed"), "{}", output.stdout);
    assert!(output.stdout.contains("queries executed"), "{}", output.stdout);
    estate(temporary.path());
    std::fs::write(
        temporary.path().join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"root\" root=\"projects/acme/root\"\n}\n",
    )
    .expect("request");
    let arguments = ["compose", "request.kdl", "--out", "out", "--projects-root", "projects", "--stats"];
    let first = acompose(temporary.path(), &arguments);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let line = first.stdout.lines().find(|line| line.starts_with("stats")).expect("a stats line").to_owned();
    assert!(line.contains("read 9,") && !line.contains("written 0;"), "{line}");
    let second = acompose(temporary.path(), &arguments);
    assert!(second.stdout.contains("written 0;"), "{}", second.stdout);
}

/// A running `acompose watch` in `directory`: its stdout lines, and its stderr lines
/// prefixed `stderr: `, in one channel.
struct Watching {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Watching {
    fn start(directory: &Path) -> Watching {
        Watching::start_with(directory, &[])
    }

    /// `acompose [FLAGS] watch` in `directory`.
    fn start_with(directory: &Path, flags: &[&str]) -> Watching {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_acompose"))
            .args(flags)
            .args(["watch", "--home", "home", "--projects-root", "projects", "--debounce", "50"])
            .current_dir(directory)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn watch");
        let (sender, lines) = std::sync::mpsc::channel::<String>();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let to_stderr = sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if to_stderr.send(format!("stderr: {line}")).is_err() {
                    break;
                }
            }
        });
        Watching { child, lines }
    }

    /// The next line starting with `prefix` (earlier lines are skipped).
    fn wait_for(&self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut skipped = Vec::new();
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                if line.starts_with(prefix) {
                    return line;
                }
                skipped.push(line);
            }
        }
        panic!("no `{prefix}` line; seen instead:\n{}", skipped.join("\n"));
    }

    /// Waits for reconvergences until `done` holds after one of them.
    fn reconverged_until(&self, what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100))
                && line.starts_with("reconverged:")
                && done()
            {
                return;
            }
        }
        panic!("no reconvergence made {what}");
    }

    /// The lines that arrive within `period`.
    fn lines_within(&self, period: Duration) -> Vec<String> {
        let deadline = Instant::now() + period;
        let mut lines = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if let Ok(line) = self.lines.recv_timeout(left.min(Duration::from_millis(100))) {
                lines.push(line);
            }
        }
        lines
    }

    /// Ctrl-C, then the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let status =
            std::process::Command::new("kill").args(["-INT", &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(exit) = self.child.try_wait().expect("wait") {
                return exit;
            }
            assert!(Instant::now() < deadline, "watch did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watching {
    /// A test that fails before `stop` leaves no watch running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn watch_reconverges_on_an_edit_and_stops_cleanly() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let watching = Watching::start(temporary.path());
    watching.wait_for("watching");
    let before = index(&home)["platform"].clone();
    write(
        &projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"),
        &skill("machine-gpu", "Edited while watching."),
    );
    let line = watching.wait_for("reconverged:");
    assert!(line.contains("machine-gpu"), "{line}");
    assert!(line.contains("queries") && line.contains("files written"), "{line}");
    assert_ne!(index(&home)["platform"], before, "the platform bundle changed");
    // A broken edit keeps the last good outputs.
    let good = index(&home);
    write(&projects.join("acme/root/.agents/roles.kdl"), "repositories {\n");
    watching.wait_for("stderr: reconvergence failed");
    assert_eq!(index(&home), good);
    let exit = watching.stop();
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn watch_says_when_an_edit_has_settled_and_a_bare_run_then_writes_nothing() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (_, projects) = estate(temporary.path());
    let watching = Watching::start_with(temporary.path(), &["-v"]);
    watching.wait_for("watching");
    // Several edits: from the second save on, the watch records the store trees it
    // recorded before with the numbers it kept, and its prune reads only what it replaced.
    for round in ["Settles.", "Settles again.", "Settles a third time."] {
        write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", round));
        watching.wait_for("reconverged:");
        watching.wait_for("settled: fingerprints saved");
    }
    // The watch still runs: what a bare run finds is what the settled watch left, and
    // the fingerprints it saved answer for it (no query runs).
    let bare = acompose(temporary.path(), &["--home", "home", "--projects-root", "projects", "--stats"]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    assert!(bare.stdout.contains(" 0 written,"), "{}", bare.stdout);
    assert!(bare.stdout.contains("written 0"), "{}", bare.stdout);
    assert!(bare.stdout.contains("queries executed 0, reused 0"), "{}", bare.stdout);
    assert!(watching.stop().success());
}

#[test]
fn watch_sees_a_repository_cloned_after_roles_kdl_names_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let watching = Watching::start(temporary.path());
    watching.wait_for("watching");
    let before = index(&home);
    // roles.kdl names a repository that is not there yet: the role that selects it fails
    // alone (seed 001) and keeps its bundle as `eval@{1}`; the others converge.
    let roles = ROLES
        .replace(
            "    repository benchmarks path=\"example/benchmarks\"\n",
            "    repository benchmarks path=\"example/benchmarks\"\n    repository tools path=\"vendor/tools\" { skill \"tool-*\"; }\n",
        )
        .replace("role eval { use-repository benchmarks;", "role eval { use-repository benchmarks; use-repository tools;");
    assert_ne!(roles, ROLES);
    write(&projects.join("acme/root/.agents/roles.kdl"), &roles);
    watching.wait_for("stderr: failed    1 of the roles got no bundle");
    assert!(watching.wait_for("stderr:").contains("eval  missing `vendor/tools`"));
    assert!(!index(&home).contains_key("eval"), "the failed role has no bundle");
    assert_eq!(index(&home).len(), before.len() - 1, "every other role has one");
    assert_eq!(
        acompose_driver::home::read_history(&acompose_driver::home::Home::at(&home))["eval"],
        [before["eval"].clone()]
    );
    // The repository is cloned (its parent folder did not exist either).
    let in_eval_bundle = |skill_name: &str, words: &str| {
        let Some(eval) = index(&home).get("eval").cloned() else { return false };
        std::fs::read_to_string(
            home.join("bundles").join(eval).join(format!("content/skills/tools/{skill_name}/SKILL.md")),
        )
        .is_ok_and(|text| text.contains(words))
    };
    write(&projects.join("vendor/tools/.agents/skills/tool-lathe/SKILL.md"), &skill("tool-lathe", "Turn parts."));
    watching
        .reconverged_until("the cloned skill part of the eval bundle", || in_eval_bundle("tool-lathe", "Turn parts."));
    assert_ne!(index(&home)["eval"], before["eval"], "the eval bundle changed");

    // Removed and cloned again: still watched, and its new skill is seen.
    std::fs::remove_dir_all(projects.join("vendor")).expect("remove");
    watching.wait_for("stderr: failed    1 of the roles got no bundle");
    write(&projects.join("vendor/tools/.agents/skills/tool-mill/SKILL.md"), &skill("tool-mill", "Mill parts."));
    watching.reconverged_until("the re-cloned skill part of the eval bundle", || {
        in_eval_bundle("tool-mill", "Mill parts.")
    });
    // An edit inside the new clone reconverges too.
    write(&projects.join("vendor/tools/.agents/skills/tool-mill/SKILL.md"), &skill("tool-mill", "Mill finer."));
    watching.reconverged_until("the edit in the clone part of the eval bundle", || {
        in_eval_bundle("tool-mill", "Mill finer.")
    });
    let exit = watching.stop();
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn watch_does_not_spin_on_a_repository_replaced_by_a_link() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let watching = Watching::start(temporary.path());
    watching.wait_for("watching");
    let before = index(&home);
    // The benchmarks repository becomes a link to a copy of itself: refused, outputs kept.
    let benchmarks = projects.join("example/benchmarks");
    std::fs::rename(&benchmarks, projects.join("example/benchmarks-real")).expect("move");
    std::os::unix::fs::symlink(projects.join("example/benchmarks-real"), &benchmarks).expect("link");
    watching.wait_for("stderr: reconvergence failed");
    let later = watching.lines_within(Duration::from_millis(1500));
    let failures = later.iter().filter(|line| line.starts_with("stderr: reconvergence failed")).count();
    assert!(failures <= 1, "watch keeps reconverging: {later:#?}");
    assert_eq!(index(&home), before);
    let exit = watching.stop();
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn pruning_removes_only_bundles_a_previous_index_named() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let arguments = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    let before = index(&home);
    // A bundle `compose` wrote into the same folder is not the estate's to remove.
    std::fs::write(temporary.path().join("request.kdl"), "compose {\n    role \"tpm\"\n    delivery \"compiled\"\n}\n")
        .expect("request");
    let composed = acompose(temporary.path(), &["compose", "request.kdl", "--out", "home/bundles"]);
    assert_eq!(composed.code, 0, "{}", composed.stderr);
    let composed_id = composed.stdout.split_whitespace().nth(1).expect("id").to_owned();
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Changed."));
    let output = acompose(temporary.path(), &["--home", "home", "--projects-root", "projects", "--stats"]);
    // The replaced bundle is kept as the role's earlier one (`platform@{1}`), not pruned.
    assert!(output.stdout.contains("bundles   1 new, 6 reused, 0 pruned"), "{}", output.stdout);
    assert!(home.join("bundles").join(&before["platform"]).is_dir(), "kept as platform@{{1}}");
    // With no history kept, the next convergence prunes it, and only it.
    let config = std::fs::read_to_string(home.join("agent-compose.yaml")).expect("config");
    write(&home.join("agent-compose.yaml"), &format!("{config}bundle_history: 0\n"));
    let output = acompose(temporary.path(), &["--home", "home", "--projects-root", "projects", "--stats"]);
    assert!(output.stdout.contains("bundles   0 new, 7 reused, 1 pruned"), "{}", output.stdout);
    assert!(!home.join("bundles").join(&before["platform"]).exists(), "the stale platform bundle is gone");
    assert!(home.join("bundles").join(&composed_id).is_dir(), "the composed bundle stays");
}

/// Fails every transaction step (not the bundle record): the convergence stops after its
/// bundles are written.
struct FailingWrites;

impl acompose_driver::home::transaction::Hooks for FailingWrites {
    fn before(&mut self, step: acompose_driver::home::transaction::Step<'_>) -> std::io::Result<()> {
        match step {
            acompose_driver::home::transaction::Step::WriteTemporary(path) if path.ends_with(".acompose-written") => {
                Ok(())
            }
            _ => Err(std::io::Error::other("injected failure")),
        }
    }
}

#[test]
fn a_bundle_a_failed_convergence_wrote_is_removed_before_it_reports_the_failure() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let config = config(&home);
    let mut converger = Converger::default();
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, true)
        .expect("converge");
    let first = index(&home);
    let gpu = projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md");

    // An edit, then a convergence whose writes fail after the new bundle is on disk.
    write(&gpu, &skill("machine-gpu", "Second."));
    let mut failing = Converger::default();
    assert!(
        failing
            .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut FailingWrites, true)
            .is_err()
    );
    assert_eq!(index(&home), first, "the failed run changed nothing that is named");
    let listed = |home: &Path| -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(home.join("bundles"))
            .expect("bundles")
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect();
        ids.sort();
        ids
    };
    let orphans: Vec<String> =
        listed(&home).into_iter().filter(|id| !first.values().any(|named| named == id)).collect();
    assert_eq!(orphans, Vec::<String>::new(), "the failed run took back its new platform bundle");
    assert_eq!(common::unused_space(&home), Vec::<String>::new(), "and the store entries only it used");

    // Another edit, and a convergence that succeeds: the replaced bundle is kept as the
    // role's earlier one, and with no history kept it goes.
    write(&gpu, &skill("machine-gpu", "Third."));
    let report = Converger::default()
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, true)
        .expect("ok");
    assert_eq!(report.bundles_pruned, 0, "the previously named platform bundle is platform@{{1}}");
    assert_eq!(
        acompose_driver::home::read_history(&acompose_driver::home::Home::at(&home))["platform"],
        [first["platform"].clone()]
    );
    let mut no_history = config.clone();
    no_history.bundle_history = Some(0);
    let report = Converger::default()
        .converge(&acompose_driver::home::Home::at(&home), &projects, &no_history, &quiet(), &mut NoFaults, true)
        .expect("ok");
    assert_eq!(report.bundles_pruned, 1, "the previously named platform bundle");
    let now = index(&home);
    let mut named: Vec<String> = now.values().cloned().collect();
    named.sort();
    named.dedup();
    assert_eq!(listed(&home), named, "only named bundles remain");
    let record = std::fs::read_to_string(home.join("bundles/.acompose-written")).expect("record");
    let mut recorded: Vec<String> = record.lines().map(str::to_owned).collect();
    recorded.sort();
    assert_eq!(recorded, named, "the record holds exactly the bundles on disk");
}

#[test]
fn the_cache_notices_commits_damaged_bundles_and_replaced_roots() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let arguments = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    // A commit moves the branch: the plan must follow.
    write(&projects.join("acme/root/.git/refs/heads/main"), "1111111111111111111111111111111111111111\n");
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    let plan = std::fs::read_to_string(home.join("repository-plan.json")).expect("plan");
    assert!(plan.contains("1111111111111111111111111111111111111111"), "{plan}");
    // A bundle missing a file is not passed off as reused.
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    std::fs::remove_file(platform.join("trace.json")).expect("damage");
    let damaged = acompose(temporary.path(), &arguments);
    assert_ne!(damaged.code, 0, "{}", damaged.stdout);
    assert!(damaged.stderr.contains("damaged"), "{}", damaged.stderr);
    std::fs::remove_dir_all(&platform).expect("remove the damaged bundle");
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    // A repository replaced by a symbolic link is noticed, not skipped.
    let real = temporary.path().join("hardware-real");
    std::fs::rename(projects.join("example/hardware"), &real).expect("move");
    std::os::unix::fs::symlink(&real, projects.join("example/hardware")).expect("symlink");
    let replaced = acompose(temporary.path(), &arguments);
    assert_ne!(replaced.code, 0, "{}", replaced.stdout);
    assert!(replaced.stderr.contains("symbolic link"), "{}", replaced.stderr);
}

#[test]
fn a_live_converger_follows_a_commit_it_is_told_of_and_only_then() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, config) = live_converger(&home, &projects);
    let plan = || std::fs::read_to_string(home.join("repository-plan.json")).expect("plan");
    let branch = projects.join("acme/root/.git/refs/heads/main");
    write(&branch, "2222222222222222222222222222222222222222\n");
    // Facts about the roots are kept between edits: without being told, the converger
    // still names the revision it read.
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("converge");
    assert!(!plan().contains("2222222222222222222222222222222222222222"), "{}", plan());
    // Watch mode refreshes the path that changed: the next convergence reads it.
    assert!(converger.loader.refresh(&mut converger.db, &branch));
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("converge");
    assert!(plan().contains("2222222222222222222222222222222222222222"), "{}", plan());
}

#[test]
fn a_refresh_reads_only_the_files_that_changed() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, config) = live_converger(&home, &projects);
    let before = index(&home);
    let gpu = projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md");
    write(&gpu, &skill("machine-gpu", "Edited while watched."));
    let read_before = converger.loader.counters.files_read;
    assert!(converger.loader.refresh(&mut converger.db, &gpu));
    assert_eq!(
        converger.loader.counters.files_read - read_before,
        1,
        "the edited file is read; its two unchanged neighbours are kept"
    );
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("converge");
    let after = index(&home);
    assert_ne!(after["platform"], before["platform"], "the edit reached the bundle");
    let bundle = home.join("bundles").join(&after["platform"]);
    let text = std::fs::read_to_string(bundle.join("content/skills/hardware/machine-gpu/SKILL.md")).expect("skill");
    assert!(text.contains("Edited while watched."), "{text}");
    let cpu = std::fs::read_to_string(bundle.join("content/skills/hardware/machine-cpu/SKILL.md")).expect("skill");
    assert!(cpu.contains("Hardware."), "{cpu}");
}

/// The skill names a bundle selected, by provider.
fn selected_skills(bundle: &Path) -> Vec<String> {
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("trace.json")).expect("trace")).expect("json");
    let mut selected: Vec<String> = trace["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .filter(|decision| decision["outcome"] == "selected" && decision["kind"] == "skill")
        .filter_map(|decision| decision["subject"].as_str().map(str::to_owned))
        .collect();
    selected.sort();
    selected
}

#[test]
fn a_projection_into_a_catalogue_repository_leaves_the_catalogue_a_catalogue() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let bare = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &bare).code, 0);
    let before = index(&home);
    let platform_before = selected_skills(&home.join("bundles").join(&before["platform"]));
    let hardware = projects.join("example/hardware");
    let eval_bundle = home.join("bundles").join(&before["eval"]);
    let arguments = ["project", eval_bundle.to_str().expect("utf-8"), "--layout", "codex", "--target"];
    let mut arguments = arguments.to_vec();
    arguments.push(hardware.to_str().expect("utf-8"));
    let projected = acompose(temporary.path(), &arguments);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    assert!(std::fs::symlink_metadata(hardware.join(".agents/skills/bench-report")).expect("link").is_symlink());

    let converged = acompose(temporary.path(), &bare);
    assert_eq!(converged.code, 0, "the catalogue's projected links are not refused: {}", converged.stderr);
    let after = index(&home);
    let platform = home.join("bundles").join(&after["platform"]);
    assert_eq!(selected_skills(&platform), platform_before, "the catalogue's own skills, unchanged");
    let trace = std::fs::read_to_string(platform.join("trace.json")).expect("trace");
    assert!(trace.contains("\"cause\": \"projected-entry\"") && trace.contains("skill:bench-report"), "{trace}");

    let check = acompose(temporary.path(), &["catalog", "check", hardware.to_str().expect("utf-8")]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(format!("{}{}", check.stdout, check.stderr).contains("projected-entry"), "{}", check.stdout);

    // A link the projection does not own is still refused.
    std::os::unix::fs::symlink(&eval_bundle, hardware.join(".agents/skills/stray")).expect("stray link");
    let refused = acompose(temporary.path(), &bare);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("symlink-refused"), "{}", refused.stderr);
}

#[test]
fn a_projection_of_a_role_follows_the_next_edit_and_unproject_gives_the_repository_back() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let bare = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &bare).code, 0);
    let work = temporary.path().join("work");
    std::fs::create_dir(&work).expect("work");
    git(&work, &["init", "--quiet"]);
    let (claude, agents) = ("# How we work\n\nTabs, not spaces.\n", "# Agents\n\nAsk before pushing.");
    std::fs::write(work.join("CLAUDE.md"), claude).expect("claude");
    std::fs::write(work.join("AGENTS.md"), agents).expect("agents");
    git(&work, &["add", "CLAUDE.md", "AGENTS.md"]);
    git(&work, &["commit", "--quiet", "-m", "start"]);
    let before = tree_of(&work);
    let work_text = work.to_str().expect("utf-8");
    for layout in ["claude", "codex"] {
        let arguments = ["--home", "home", "project", "platform", "--layout", layout, "--target", work_text];
        let projected = acompose(temporary.path(), &arguments);
        assert_eq!(projected.code, 0, "{}", projected.stderr);
        assert!(projected.stdout.contains("it follows its role"), "{}", projected.stdout);
    }

    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Revised."));
    let converged = acompose(temporary.path(), &bare);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    let current = index(&home)["platform"].clone();
    assert!(converged.stdout.contains(&format!("projected {current} (platform)")), "{}", converged.stdout);
    for skills in [".claude/skills", ".agents/skills"] {
        let text = std::fs::read_to_string(work.join(skills).join("machine-gpu/SKILL.md")).expect("readable");
        assert!(text.contains("Revised."), "{skills}: the new bundle's skill: {text}");
    }
    assert!(std::fs::read_to_string(work.join("CLAUDE.md")).expect("claude").starts_with(claude));
    assert!(std::fs::read_to_string(work.join("AGENTS.md")).expect("agents").starts_with(agents));
    assert_eq!(git(&work, &["status", "--porcelain"]), "", "git sees nothing of the projection");
    assert_eq!(git(&work, &["ls-files", "-v"]), "H AGENTS.md\nH CLAUDE.md\n", "no skip-worktree mark");
    git(&work, &["add", "--all"]);
    assert_eq!(git(&work, &["diff", "--cached", "--name-only"]), "", "`git add` stages nothing of the projection");
    let listed = acompose(temporary.path(), &["--home", "home", "projections", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).expect("json");
    assert_eq!(listed["projections"][0]["state"], "current", "{listed}");
    assert_eq!(listed["projections"][0]["layout"], "claude+codex", "{listed}");
    let whoami = acompose(temporary.path(), &["whoami", "--target", work_text]);
    assert_eq!(whoami.code, 0, "{}", whoami.stdout);

    let unprojected = acompose(temporary.path(), &["--home", "home", "unproject", "--target", work_text]);
    assert_eq!(unprojected.code, 0, "{}", unprojected.stderr);
    assert_eq!(tree_of(&work), before, "the repository as it was, tree and bytes");
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(git(&work, &["ls-files", "-v"]), "H AGENTS.md\nH CLAUDE.md\n");
    assert_eq!(git(&work, &["config", "--list", "--local"]).matches("acompose").count(), 0, "no filter left");
    let listed = acompose(temporary.path(), &["--home", "home", "projections", "--json"]);
    assert!(listed.stdout.contains("\"projections\": []"), "{}", listed.stdout);
}

#[test]
fn a_deleted_projection_target_is_reported_and_not_recreated() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (_home, projects) = estate(temporary.path());
    let bare = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &bare).code, 0);
    let work = temporary.path().join("work");
    std::fs::create_dir(&work).expect("work");
    let work_text = work.to_str().expect("utf-8");
    let arguments = ["--home", "home", "project", "eval", "--layout", "claude", "--target", work_text];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    std::fs::remove_dir_all(&work).expect("remove the target");
    write(&projects.join("example/benchmarks/.agents/skills/bench-report/SKILL.md"), &skill("bench-report", "New."));
    let converged = acompose(temporary.path(), &bare);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    assert!(converged.stderr.contains("it is not recreated"), "{}", converged.stderr);
    assert!(!work.exists(), "never recreated behind the user's back");
    let listed = acompose(temporary.path(), &["--home", "home", "projections"]);
    assert!(listed.stdout.contains("eval@-") && listed.stdout.trim_end().ends_with("missing"), "{}", listed.stdout);
}

#[test]
fn a_pinned_projection_keeps_its_bundle_through_a_convergence_that_reindexes_the_role() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut converger, mut config) = live_converger(&home, &projects);
    // No earlier bundles are kept: a replaced bundle is pruned unless a projection shows it.
    config.bundle_history = Some(0);
    converger.defer_pruning = true;
    let old = index(&home)["platform"].clone();
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Revised."));
    converger.loader.refresh(&mut converger.db, &projects.join("example/hardware"));
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("reconverge");
    assert_ne!(index(&home)["platform"], old, "the role is indexed anew");
    let old_bundle = home.join("bundles").join(&old);
    assert!(old_bundle.is_dir(), "watch mode prunes later");

    let work = temporary.path().join("work");
    std::fs::create_dir(&work).expect("work");
    let work_text = work.to_str().expect("utf-8");
    let old_text = old_bundle.to_str().expect("utf-8");
    let arguments = ["--home", "home", "project", old_text, "--layout", "claude", "--target", work_text];
    let projected = acompose(temporary.path(), &arguments);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let listed = acompose(temporary.path(), &["--home", "home", "projections"]);
    assert!(listed.stdout.trim_end().ends_with("pinned"), "{}", listed.stdout);

    converger.prune();
    assert!(old_bundle.is_dir(), "a bundle a pinned projection shows is never pruned");
    assert!(work.join(".claude/skills/machine-gpu/SKILL.md").is_file(), "the projection still reads");
    assert_eq!(acompose(temporary.path(), &["--home", "home", "gc"]).code, 0);
    assert!(work.join(".claude/skills/machine-gpu/SKILL.md").is_file(), "gc keeps what it links");

    let arguments = ["--home", "home", "unproject", "--target", work_text];
    assert_eq!(acompose(temporary.path(), &arguments).code, 0);
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Again."));
    converger.loader.refresh(&mut converger.db, &projects.join("example/hardware"));
    converger
        .converge(&acompose_driver::home::Home::at(&home), &projects, &config, &quiet(), &mut NoFaults, false)
        .expect("reconverge");
    converger.prune();
    assert!(!old_bundle.exists(), "without the projection the old bundle goes");
}

#[test]
fn watch_reconverges_when_the_mcp_inventory_changes() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _projects) = estate(temporary.path());
    let watching = Watching::start(temporary.path());
    watching.wait_for("watching");
    let before = index(&home)["platform"].clone();
    write(
        &home.join("mcp.kdl"),
        "server \"docs\" {\n    url \"https://docs.example.com/mcp\"\n    roles \"platform\"\n}\n",
    );
    watching.reconverged_until("the platform bundle take the server", || index(&home)["platform"] != before);
    let exit = watching.stop();
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn watch_reconverges_when_a_private_overlay_is_added_and_edited() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = estate(temporary.path());
    let watching = Watching::start(temporary.path());
    watching.wait_for("watching");
    let before = index(&home);
    let instruction = |home: &Path| {
        let platform = index(home)["platform"].clone();
        std::fs::read_to_string(home.join("bundles").join(platform).join("content/overlays/team-review.md")).ok()
    };
    let overlay =
        |text: &str| format!("instruction \"team-review\" {{\n    role \"platform\"\n    text \"{text}\"\n}}\n");
    // The overlays folder did not exist when watch started.
    write(&home.join("overlays/team.kdl"), &overlay("First."));
    watching.reconverged_until("the added overlay's instruction part of the platform bundle", || {
        instruction(&home).as_deref() == Some("First.\n")
    });
    write(&home.join("overlays/team.kdl"), &overlay("Second."));
    watching.reconverged_until("the edited instruction part of the platform bundle", || {
        instruction(&home).as_deref() == Some("Second.\n")
    });
    let after = index(&home);
    assert_ne!(after["platform"], before["platform"]);
    assert_eq!(after["eval"], before["eval"], "a role the overlay does not name keeps its bundle");
    assert!(watching.stop().success());
}

#[test]
fn a_repository_declared_twice_that_drops_a_selection_names_both_declarations() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    // `runbooks` (global) and `infra` (platform's) read one folder: platform meets the
    // global slice first, and `infra`'s selection would vanish without a word.
    let roles = "repositories {\n    repository runbooks path=\"example/hardware\" { skill \"machine-cpu\"; }\n    global runbooks\n    repository infra path=\"example/hardware\" { skill \"machine-*\"; }\n}\nroles {\n    role platform { use-repository infra; }\n}\n";
    write(&projects.join("acme/root/.agents/roles.kdl"), roles);
    let bare = ["--home", "home", "--projects-root", "projects"];
    let output = acompose(temporary.path(), &bare);
    assert_eq!(output.code, 0, "a warning: {}", output.stderr);
    let roles_file = "projects/acme/root/.agents/roles.kdl";
    assert!(output.stderr.contains(&format!("{roles_file}:4:16")), "the second declaration: {}", output.stderr);
    assert!(output.stderr.contains(&format!("`runbooks` is declared at {roles_file}:2:16")), "{}", output.stderr);
    assert!(output.stderr.contains("role(s) `platform` receive only `runbooks`'s slice and lose `machine-*`"));
    assert!(output.stderr.contains("duplicate-path"), "{}", output.stderr);
    // Under `strict` it is an error, and nothing is written.
    let before = std::fs::read(home.join("bundles/index.json")).expect("index");
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\nskill_policy: strict\n");
    let strict = acompose(temporary.path(), &bare);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    assert!(strict.stderr.contains("error") && strict.stderr.contains("duplicate-path"), "{}", strict.stderr);
    assert_eq!(std::fs::read(home.join("bundles/index.json")).expect("index"), before);
}

#[test]
fn a_missing_provider_fails_only_the_roles_that_select_it_and_the_others_follow_edits() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let bare = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &bare).code, 0);
    let before = index(&home);
    // Only eval selects the benchmarks repository.
    std::fs::rename(projects.join("example/benchmarks"), temporary.path().join("benchmarks-moved")).expect("move");
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Edited."));
    let output = acompose(temporary.path(), &bare);
    assert_eq!(output.code, 1, "some roles failed: {}", output.stdout);
    assert!(output.stdout.contains("failed    1 of the roles got no bundle"), "{}", output.stdout);
    assert!(output.stdout.contains("eval  missing `example/benchmarks`"), "{}", output.stdout);
    assert!(output.stderr.contains("selected provider `benchmarks` is unavailable"), "{}", output.stderr);
    assert!(output.stderr.contains("acme/root/.agents/roles.kdl:"), "filed where it is named: {}", output.stderr);
    let after = index(&home);
    assert!(!after.contains_key("eval"), "the failed role has no bundle: {after:?}");
    assert_ne!(after["platform"], before["platform"], "the edit reached platform's bundle");
    assert_eq!(after.len(), before.len() - 1, "every other role converged");
    assert_eq!(
        acompose_driver::home::read_history(&acompose_driver::home::Home::at(&home))["eval"],
        [before["eval"].clone()],
        "kept as eval@{{1}}"
    );
    let json = acompose(temporary.path(), &["--home", "home", "--projects-root", "projects", "--json"]);
    assert_eq!(json.code, 1);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(report["failed"], serde_json::json!([{"role": "eval", "missing": ["example/benchmarks"]}]));
    // Every run says so again; back in place, the role converges and the run succeeds.
    std::fs::rename(temporary.path().join("benchmarks-moved"), projects.join("example/benchmarks")).expect("back");
    let fixed = acompose(temporary.path(), &bare);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert_eq!(index(&home)["eval"], before["eval"]);
}

#[test]
fn a_missing_operating_context_still_fails_every_role_and_writes_nothing() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let bare = ["--home", "home", "--projects-root", "projects"];
    assert_eq!(acompose(temporary.path(), &bare).code, 0);
    let before = std::fs::read(home.join("bundles/index.json")).expect("index");
    std::fs::rename(projects.join("acme/root"), temporary.path().join("root-moved")).expect("move");
    let output = acompose(temporary.path(), &bare);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("required source `root` is unavailable"), "{}", output.stderr);
    assert!(output.stderr.contains("agent-compose.yaml:2:5"), "filed where it is named: {}", output.stderr);
    assert_eq!(std::fs::read(home.join("bundles/index.json")).expect("index"), before);
}
