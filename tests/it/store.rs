//! The content-addressed store: shared entries, writes proportional to an edit, crash
//! recovery, `gc`, `bundle export`/`import` and `verify` through the store's links.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use acompose_driver::NoProgress;
use acompose_driver::compose::bundle::{Placement, Verification, materialize_into, verify_directory};
use acompose_driver::compose::load::Loader;
use acompose_driver::compose::store::Store;
use acompose_driver::convergence::Converger;
use acompose_driver::home::transaction::NoFaults;
use acompose_engine::Database;
use common::{acompose, copy_dir};

fn skill(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\n# {name}\n\n{body}\n")
}

/// Writes a file dated an hour back (the fingerprint cache re-hashes racily fresh files).
fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(path).and_then(|file| file.set_modified(hour_ago)).expect("backdate");
}

const ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role eval { use-repository hardware; use-repository benchmarks; }\n}\n";

/// A trusted root and two skill repositories; platform and eval both admit the hardware
/// skills.
fn estate(root: &Path) -> (PathBuf, PathBuf) {
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), ROLES);
    write(&projects.join("acme/root/.agents/skills/estate-map/SKILL.md"), &skill("estate-map", "Where things are."));
    for name in ["machine-cpu", "machine-gpu", "machine-tpu"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name, "Hardware."));
    }
    for name in ["bench-harness", "bench-report"] {
        write(&projects.join(format!("example/benchmarks/.agents/skills/{name}/SKILL.md")), &skill(name, "Bench."));
    }
    write(&projects.join("acme/root/.git/HEAD"), "ref: refs/heads/main\n");
    write(&projects.join("acme/root/.git/refs/heads/main"), "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n");
    let home = root.join("home");
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    (home, projects)
}

fn converge(converger: &mut Converger, home: &Path, projects: &Path) -> acompose_driver::convergence::Report {
    let config =
        acompose_driver::home::read_config(&acompose_driver::home::Home::at(home), &NoProgress).expect("config");
    converger
        .converge(&acompose_driver::home::Home::at(home), projects, &config, &NoProgress, &mut NoFaults, true)
        .expect("converge")
}

fn index(home: &Path) -> BTreeMap<String, String> {
    acompose_engine::convergence::parse_index(&std::fs::read(home.join("bundles/index.json")).expect("index"))
        .expect("parse")
}

/// Every bundle the home's index names verifies, store entries included.
fn assert_indexed_bundles_verify(home: &Path, context: &str) {
    for id in index(home).values() {
        if let Err(problems) = verify_directory(&home.join("bundles").join(id)) {
            panic!("{context}: bundle {id} does not verify: {problems:?}");
        }
    }
}

/// Every store entry (top-level name) with the modification times of it and its files.
fn store_listing(store: &Path) -> BTreeMap<String, Vec<(PathBuf, SystemTime)>> {
    let mut listing = BTreeMap::new();
    for entry in std::fs::read_dir(store).expect("store").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let times: Vec<(PathBuf, SystemTime)> = walkdir::WalkDir::new(entry.path())
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .flatten()
            .map(|item| {
                let modified = std::fs::symlink_metadata(item.path()).and_then(|metadata| metadata.modified());
                (item.path().to_path_buf(), modified.expect("mtime"))
            })
            .collect();
        listing.insert(name, times);
    }
    listing
}

#[test]
fn two_roles_that_admit_the_same_skill_share_one_store_entry() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let index = index(&home);
    let skill_of =
        |role: &str| home.join("bundles").join(&index[role]).join("content/skills/hardware/machine-cpu/SKILL.md");
    let (platform, eval) = (skill_of("platform"), skill_of("eval"));
    assert_ne!(index["platform"], index["eval"]);
    assert!(std::fs::read_to_string(&platform).expect("opens through the links").contains("machine-cpu"));
    let provider = home.join("bundles").join(&index["platform"]).join("content/skills/hardware");
    assert!(std::fs::symlink_metadata(&provider).expect("provider folder").file_type().is_symlink());
    assert!(std::fs::read_link(&provider).expect("link").is_relative());
    let (one, two) = (std::fs::metadata(&platform).expect("one"), std::fs::metadata(&eval).expect("two"));
    assert_eq!((one.dev(), one.ino()), (two.dev(), two.ino()), "one file for both roles");
    let resolved = platform.canonicalize().expect("resolve");
    assert!(resolved.starts_with(home.join("store").canonicalize().expect("store")), "{}", resolved.display());
}

#[test]
fn an_edit_writes_one_new_tree_and_touches_no_other_entry() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let store = home.join("store");
    let before = store_listing(&store);
    let trees = |listing: &BTreeMap<String, Vec<(PathBuf, SystemTime)>>| -> Vec<String> {
        listing.keys().filter(|name| !name.starts_with("slice-")).cloned().collect()
    };
    assert!(trees(&before).len() >= 6, "estate-map, three hardware and two benchmark skills: {:?}", before.keys());
    std::thread::sleep(Duration::from_millis(20));
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Revised."));
    let report = converge(&mut Converger::default(), &home, &projects);
    let after = store_listing(&store);
    let new: Vec<&String> = after.keys().filter(|name| !before.contains_key(*name)).collect();
    let new_trees: Vec<&&String> = new.iter().filter(|name| !name.starts_with("slice-")).collect();
    let new_slices: Vec<&&String> = new.iter().filter(|name| name.starts_with("slice-")).collect();
    assert_eq!(new_trees.len(), 1, "one new skill tree: {new:?}");
    assert_eq!(new_slices.len(), 1, "one new hardware slice, shared by both roles: {new:?}");
    for (name, times) in &after {
        if let Some(previous) = before.get(name) {
            assert_eq!(previous, times, "{name} was rewritten");
        }
    }
    let gone: Vec<&String> = before.keys().filter(|name| !after.contains_key(*name)).collect();
    // The replaced bundles are kept as their roles' earlier ones (`platform@{1}`), and
    // with them what they link.
    assert_eq!(gone, Vec::<&String>::new(), "the earlier bundles' entries stay");
    let history = acompose_driver::home::read_history(&acompose_driver::home::Home::at(&home));
    assert_eq!(history.len(), 2, "platform and eval keep their earlier bundle: {history:?}");
    // Two new bundles (platform and eval), each its own files plus one link per provider.
    assert_eq!(report.bundles_new, 2);
    let own_and_links = |role: &str| {
        walkdir::WalkDir::new(home.join("bundles").join(&index(&home)[role]))
            .follow_links(false)
            .into_iter()
            .flatten()
            .filter(|entry| !entry.file_type().is_dir())
            .count()
    };
    let written_by_bundles = own_and_links("platform") + own_and_links("eval");
    assert_eq!(
        report.files_written,
        written_by_bundles + 2 + report.roster.written.len() + report.estate_files_written
    );
    // Keeping no earlier bundles, the next convergence prunes them with the old tree and
    // the old slice, which only they linked.
    let config = std::fs::read_to_string(home.join("agent-compose.yaml")).expect("config");
    write(&home.join("agent-compose.yaml"), &format!("{config}bundle_history: 0\n"));
    let report = converge(&mut Converger::default(), &home, &projects);
    assert_eq!(report.bundles_pruned, 2);
    let pruned = store_listing(&store);
    let gone: Vec<&String> = before.keys().filter(|name| !pruned.contains_key(*name)).collect();
    assert_eq!(gone.len(), 2, "the old tree and the old slice are pruned with the bundles: {gone:?}");
}

#[test]
fn an_edit_sets_aside_a_damaged_tree_its_new_slice_links_and_writes_it_again() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    let tree = platform.join("content/skills/hardware/machine-cpu").canonicalize().expect("resolve");
    let file = tree.join("SKILL.md");
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("writable");
    std::fs::write(&file, "Damaged.\n").expect("damage the store");
    // The edit of a sibling skill makes a new hardware slice, which links the damaged
    // tree: an edit looks its few entries up by name, and the damaged one is written
    // again as when the store is listed.
    std::thread::sleep(Duration::from_millis(20));
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Revised."));
    converge(&mut Converger::default(), &home, &projects);
    let text = std::fs::read_to_string(&file).expect("the entry is there");
    assert_eq!(text, skill("machine-cpu", "Hardware."), "the damaged entry is written again");
    assert_indexed_bundles_verify(&home, "after the edit");
}

/// Copies a compose case next to the base person package.
fn stage(case: &str) -> (tempfile::TempDir, PathBuf) {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().join("case");
    copy_dir(&common::fixtures().join("compose").join(case), &root);
    copy_dir(&common::fixtures().join("roster/base"), &temporary.path().join("person-base"));
    (temporary, root)
}

#[test]
fn a_crash_between_the_store_and_the_bundle_rename_leaves_nothing_half_visible() {
    let (_temporary, root) = stage("selector-slice");
    let mut db = Database::default();
    let mut loader = Loader::default();
    let prepared = acompose_driver::compose::request::prepare(
        &mut db,
        &mut loader,
        &root.join("request.kdl"),
        &root.join("projects"),
        None,
        &acompose_driver::compose::request::RequestDefaults::default(),
    )
    .expect("prepare");
    let out = root.join("out");
    let store = Store::at(root.join("store"));
    let crashed = materialize_into(&out, prepared.bundle, Placement::Linked(&store), Verification::Full, &mut || {
        Err("injected crash".to_owned())
    });
    assert!(crashed.is_err());
    let visible: Vec<String> = std::fs::read_dir(&out)
        .expect("out")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(visible.is_empty(), "no bundle and no staging folder: {visible:?}");
    for entry in std::fs::read_dir(store.root()).expect("store").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "a staging entry was left visible: {name}");
    }
    let again = materialize_into(&out, prepared.bundle, Placement::Linked(&store), Verification::Full, &mut || Ok(()))
        .expect("the next run recovers");
    assert_eq!(again.outcome, acompose_driver::compose::bundle::Materialized::New);
    let placed = out.join(&prepared.bundle.id);
    let own_and_links =
        walkdir::WalkDir::new(&placed).into_iter().flatten().filter(|entry| !entry.file_type().is_dir()).count();
    assert_eq!(again.written, own_and_links, "the bundle's own files and links; store entries were in place");
    verify_directory(&placed).expect("verifies");
}

#[test]
fn a_skill_changed_after_it_was_read_is_never_stored_as_the_one_composed() {
    // Skill files are kept as summaries and read again when a store entry is written: a
    // file that changed in between must not enter the store under the old digest.
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let mut converger = Converger::default();
    converge(&mut converger, &home, &projects);
    let other = temporary.path().join("other");
    write(&other.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    let edited = projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md");
    write(&edited, &skill("machine-gpu", "Edited after it was read."));
    // The same converger, not told about the edit, converges into a home with an empty store.
    let config =
        acompose_driver::home::read_config(&acompose_driver::home::Home::at(&other), &NoProgress).expect("config");
    let error = converger
        .converge(&acompose_driver::home::Home::at(&other), &projects, &config, &NoProgress, &mut NoFaults, false)
        .expect_err("refused");
    assert!(error.to_string().contains("changed while it was being composed"), "{error}");
    let store = Store::of_home(&acompose_driver::home::Home::at(&other));
    for name in std::fs::read_dir(store.root()).expect("store").map(|entry| entry.expect("entry").file_name()) {
        let name = name.to_string_lossy().into_owned();
        if let Ok(text) = std::fs::read_to_string(store.root().join(&name).join("SKILL.md")) {
            assert!(!text.contains("Edited after it was read."), "{name} holds the edited bytes");
        }
    }
    // The refused run took back the bundles it had written before the refusal.
    assert_eq!(common::unused_space(&other), Vec::<String>::new(), "the refused run left nothing unused");
    // Told about it, the next run converges and its bundles verify.
    let report = converge(&mut converger, &other, &projects);
    assert_eq!(report.bundles_reused, 0, "nothing the refused run wrote was left to reuse");
    assert!(report.bundles_new > 0);
    assert_indexed_bundles_verify(&other, "the bundles of the next run verify");
}

/// Bare convergence's arguments in the estates of these tests, with `--stats`.
const SETTLED: [&str; 5] = ["--home", "home", "--projects-root", "projects", "--stats"];

/// The estate (with `extra` files in its repositories), its folders dated back past the
/// racily fresh window, converged, and a second run answered from the cache.
fn settled_estate(root: &Path, extra: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let (home, projects) = estate(root);
    for (path, text) in extra {
        write(&projects.join(path), text);
    }
    common::backdate_folders(&projects);
    assert_eq!(acompose(root, &SETTLED).code, 0);
    let unchanged = acompose(root, &SETTLED);
    assert!(unchanged.stdout.contains("read 0, hashed 0, written 0"), "{}", unchanged.stdout);
    (home, projects)
}

/// Makes a read-only store folder writable again, to damage it.
fn writable(folder: &Path) {
    let mut permissions = std::fs::metadata(folder).expect("metadata").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(folder, permissions).expect("writable");
}

#[test]
fn a_store_tree_removed_is_noticed_by_the_next_bare_run() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = settled_estate(temporary.path(), &[]);
    let arguments = SETTLED;
    // Removing an entry changes the store's folder; the next run then checks the folder
    // of every tree the bundles link.
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    let tree = platform.join("content/skills/hardware/machine-gpu").canonicalize().expect("resolve");
    writable(&tree);
    std::fs::remove_dir_all(&tree).expect("damage the store");
    let noticed = acompose(temporary.path(), &arguments);
    assert_ne!(noticed.code, 0, "a damaged store entry is not passed off as reused: {}", noticed.stdout);
    assert!(noticed.stderr.contains("is damaged"), "{}", noticed.stderr);
    // As the message says: with the bundles that link it removed (platform and eval
    // both admit the hardware skills), the entry is written again.
    for id in index(&home).values() {
        std::fs::remove_dir_all(home.join("bundles").join(id)).expect("remove a bundle");
    }
    let repaired = acompose(temporary.path(), &arguments);
    assert_eq!(repaired.code, 0, "{}", repaired.stderr);
    assert!(tree.join("SKILL.md").is_file(), "the damaged entry is written again");
    verify_directory(&platform).expect("the bundle verifies");
}

#[test]
fn a_file_lost_inside_a_store_tree_is_found_by_verify_and_once_the_store_moves() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let notes = "example/hardware/.agents/skills/machine-gpu/references/notes.md";
    let (home, _) = settled_estate(temporary.path(), &[(notes, "GPU notes.\n")]);
    let arguments = SETTLED;
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    let file =
        platform.join("content/skills/hardware/machine-gpu/references/notes.md").canonicalize().expect("resolve");
    writable(file.parent().expect("folder"));
    std::fs::remove_file(&file).expect("damage the store");
    // `verify` reads every entry a bundle reaches and names the damaged one.
    let platform_text = platform.to_str().expect("utf-8");
    let verified = acompose(temporary.path(), &["verify", platform_text]);
    assert_ne!(verified.code, 0, "{}", verified.stdout);
    let tree = file.parent().and_then(Path::parent).expect("tree");
    let key = tree.file_name().expect("key").to_string_lossy().into_owned();
    assert!(verified.stdout.contains(&key) || verified.stderr.contains(&key), "{}{}", verified.stdout, verified.stderr);
    // Once the store's folder moves (a compose into the same home, an import), the next
    // bare run checks every linked tree folder and finds the one that lost a file.
    std::fs::create_dir(home.join("store/added-by-another-run")).expect("the store moves");
    let noticed = acompose(temporary.path(), &arguments);
    assert_ne!(noticed.code, 0, "a damaged store entry is not passed off as reused: {}", noticed.stdout);
    assert!(noticed.stderr.contains("is damaged"), "{}", noticed.stderr);
}

/// Dates a folder an hour back, past the window in which a recorded time is smudged.
fn backdate_folder(folder: &Path) {
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(folder).and_then(|file| file.set_modified(hour_ago)).expect("backdate");
}

#[test]
fn a_store_that_only_gained_entries_still_answers_from_the_cache() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = settled_estate(temporary.path(), &[]);
    let arguments = SETTLED;
    let stated = |output: &common::Output| -> usize {
        let line = output.stdout.lines().find(|line| line.starts_with("stats")).expect("stats");
        line.split_whitespace().nth(2).and_then(|count| count.trim_end_matches(',').parse().ok()).expect("a count")
    };
    // The store was written a moment ago: its recorded time is smudged, so the next run
    // checks the trees once, and with the store's time no longer fresh, the cache takes it.
    let store = home.join("store");
    backdate_folder(&store);
    let settled = acompose(temporary.path(), &arguments);
    assert!(settled.stdout.contains("read 0, hashed 0, written 0"), "{}", settled.stdout);
    let glance = acompose(temporary.path(), &arguments);
    assert!(glance.stdout.contains("read 0, hashed 0, written 0"), "{}", glance.stdout);
    assert!(stated(&settled) > stated(&glance), "{}{}", settled.stdout, glance.stdout);
    // Another run's entry in the store: every linked tree is checked, nothing is read,
    // and the cache takes the store's new time.
    std::fs::create_dir(store.join("added-by-another-run")).expect("the store moves");
    backdate_folder(&store);
    let checked = acompose(temporary.path(), &arguments);
    assert!(checked.stdout.contains("inputs    unchanged"), "{}", checked.stdout);
    assert!(checked.stdout.contains("read 0, hashed 0, written 0"), "{}", checked.stdout);
    assert!(stated(&checked) > stated(&glance), "the trees were checked: {}", checked.stdout);
    let again = acompose(temporary.path(), &arguments);
    assert_eq!(stated(&again), stated(&glance), "back to a glance: {}", again.stdout);
}

#[test]
fn a_bundle_link_repointed_to_another_slice_is_noticed_by_the_next_bare_run() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = settled_estate(temporary.path(), &[]);
    let arguments = SETTLED;
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    let skills = platform.join("content/skills");
    let mut links: Vec<PathBuf> = std::fs::read_dir(&skills)
        .expect("skills")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_symlink())
        .collect();
    links.sort();
    assert!(links.len() >= 2, "the platform bundle links several slices: {links:?}");
    // The link keeps the shape of a slice link and lands on a slice that exists, but not
    // on its own.
    let other = std::fs::read_link(&links[1]).expect("link");
    let mut permissions = std::fs::metadata(&skills).expect("metadata").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&skills, permissions).expect("writable");
    std::fs::remove_file(&links[0]).expect("unlink");
    std::os::unix::fs::symlink(&other, &links[0]).expect("repoint");
    let noticed = acompose(temporary.path(), &arguments);
    assert_ne!(noticed.code, 0, "a repointed link is not passed off as reused: {}", noticed.stdout);
    assert!(noticed.stderr.contains("not a link to its store entry"), "{}", noticed.stderr);
}

#[test]
fn gc_removes_exactly_the_unreferenced_entries() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let store = home.join("store");
    let referenced: Vec<String> = store_listing(&store).into_keys().collect();
    // A composition outside convergence, into the home: its entries are referenced too.
    let (_case, root) = stage("selector-slice");
    let composed = acompose(
        &root,
        &["--home", home.to_str().expect("utf-8"), "compose", "request.kdl", "--projects-root", "projects"],
    );
    assert_eq!(composed.code, 0, "{}", composed.stderr);
    let with_compose: Vec<String> = store_listing(&store).into_keys().collect();
    assert!(with_compose.len() > referenced.len());
    // An orphan tree and a staging folder a crash left behind.
    let orphan_tree = acompose_engine::store::tree_key(&[("SKILL.md", b"orphan")]);
    std::fs::create_dir_all(store.join(&orphan_tree)).expect("orphan");
    std::fs::write(store.join(&orphan_tree).join("SKILL.md"), "orphan").expect("orphan file");
    // A writing thread's staging folder, with a sealed entry in it (read-only file and
    // folder), as a run cut off before the rename leaves it.
    let sealed = store.join(".staging-1-0").join(format!("{orphan_tree}-7"));
    std::fs::create_dir_all(&sealed).expect("staging");
    std::fs::write(sealed.join("SKILL.md"), "orphan").expect("staged file");
    for (path, mode) in [(sealed.join("SKILL.md"), 0o444), (sealed.clone(), 0o555)] {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).expect("seal");
    }
    let orphan_slice = format!("slice-{}", "0".repeat(64));
    std::fs::create_dir_all(store.join(&orphan_slice)).expect("orphan slice");

    let home_flag = home.to_str().expect("utf-8");
    let dry = acompose(temporary.path(), &["--home", home_flag, "gc", "--dry-run", "--json"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let report: serde_json::Value = serde_json::from_str(&dry.stdout).expect("json");
    let mut expected = vec![orphan_tree.clone(), orphan_slice.clone(), ".staging-1-0".to_owned()];
    expected.sort();
    let mut listed: Vec<String> = report["removed"]
        .as_array()
        .expect("removed")
        .iter()
        .map(|name| name.as_str().expect("name").to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, expected);
    assert!(store.join(&orphan_tree).exists(), "a dry run removes nothing");

    let run = acompose(temporary.path(), &["--home", home_flag, "gc"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let left: Vec<String> = store_listing(&store).into_keys().collect();
    assert_eq!(left, with_compose, "exactly the unreferenced entries went");
    assert_indexed_bundles_verify(&home, "every bundle still verifies");
}

#[test]
fn export_then_import_on_another_home_verifies_with_the_same_id() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let id = index(&home)["eval"].clone();
    let bundle = home.join("bundles").join(&id);
    let archive = temporary.path().join("eval.tar");
    let exported =
        acompose(temporary.path(), &["bundle", "export", bundle.to_str().expect("utf-8"), "--out", "eval.tar"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let first = std::fs::read(&archive).expect("archive");
    // Real copies: the archive holds no link, and exporting again gives the same bytes.
    let mut entries = tar::Archive::new(first.as_slice());
    for entry in entries.entries().expect("entries") {
        let entry = entry.expect("entry");
        assert!(matches!(entry.header().entry_type(), tar::EntryType::Regular | tar::EntryType::Directory));
    }
    assert_eq!(
        acompose(temporary.path(), &["bundle", "export", bundle.to_str().expect("utf-8"), "--out", "eval.tar"]).code,
        0
    );
    assert_eq!(std::fs::read(&archive).expect("archive"), first);

    let other = temporary.path().join("elsewhere/home");
    std::fs::create_dir_all(&other).expect("other home");
    let imported = acompose(
        temporary.path(),
        &["--home", other.to_str().expect("utf-8"), "bundle", "import", "eval.tar", "--json"],
    );
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let report: serde_json::Value = serde_json::from_str(&imported.stdout).expect("json");
    assert_eq!(report["bundle"], id.as_str());
    let placed = other.join("bundles").join(&id);
    let verified = acompose(temporary.path(), &["verify", placed.to_str().expect("utf-8")]);
    assert_eq!(verified.code, 0, "{}", verified.stderr);
    let link = placed.join("content/skills/hardware");
    assert!(std::fs::symlink_metadata(&link).expect("provider").file_type().is_symlink(), "imported into a store");
    assert!(
        link.join("machine-cpu/SKILL.md")
            .canonicalize()
            .expect("resolve")
            .starts_with(other.join("store").canonicalize().expect("store"))
    );
}

#[test]
fn a_flipped_byte_in_a_store_entry_fails_verify_naming_it() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let bundle = home.join("bundles").join(&index(&home)["platform"]);
    let skill = bundle.join("content/skills/hardware/machine-gpu/SKILL.md").canonicalize().expect("resolve");
    let entry = skill.parent().expect("tree").file_name().expect("name").to_string_lossy().into_owned();
    let mut bytes = std::fs::read(&skill).expect("skill");
    bytes[5] ^= 0x01;
    let mut permissions = std::fs::metadata(&skill).expect("metadata").permissions();
    assert!(permissions.readonly(), "store files are read-only");
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&skill, permissions).expect("writable");
    std::fs::write(&skill, bytes).expect("flip");
    let broken = acompose(temporary.path(), &["verify", bundle.to_str().expect("utf-8")]);
    assert_eq!(broken.code, 1);
    let store = home.join("store").canonicalize().expect("store");
    assert!(broken.stderr.contains(&format!("store entry `{}", store.display())), "{}", broken.stderr);
    assert!(broken.stderr.contains(&entry), "names the damaged entry {entry}: {}", broken.stderr);
    assert!(broken.stderr.contains("content/skills/hardware/machine-gpu/SKILL.md"), "{}", broken.stderr);
}

#[test]
fn a_live_watch_keeps_the_entries_its_bundles_reference() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    let (mut watcher, _) = acompose_driver::convergence::watch::Watcher::start(
        &acompose_driver::home::Home::at(&home),
        &projects,
        Duration::from_millis(20),
        &NoProgress,
    )
    .expect("watch");
    let home_flag = home.to_str().expect("utf-8");
    let collect = || {
        let run = acompose(temporary.path(), &["--home", home_flag, "gc"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_indexed_bundles_verify(&home, "the watched bundles keep their entries");
    };
    collect();
    let before = index(&home)["platform"].clone();
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/SKILL.md"), &skill("machine-gpu", "Watched."));
    // Bounded: the watcher reports each batch of events; a few hundred rounds is ample.
    for _ in 0..300 {
        if let acompose_driver::convergence::watch::WatchEvent::Reconverged { .. } = watcher.next(&NoProgress) {
            break;
        }
    }
    assert_ne!(index(&home)["platform"], before, "the edit reconverged");
    // Between reconvergences the stale bundle awaits pruning; gc keeps what it links too.
    collect();
    watcher.stop();
    collect();
}

#[test]
fn a_warm_compose_answers_from_the_fingerprints_and_notices_every_change() {
    let (temporary, root) = stage("selector-slice");
    // Inputs changed within two seconds of a run are re-hashed by the next (racily fresh).
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for entry in walkdir::WalkDir::new(temporary.path()).contents_first(true).into_iter().flatten() {
        let file = if entry.file_type().is_dir() {
            std::fs::File::open(entry.path())
        } else {
            std::fs::File::options().write(true).open(entry.path())
        };
        file.and_then(|file| file.set_modified(hour_ago)).expect("backdate");
    }
    let home = temporary.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let home_flag = home.to_str().expect("utf-8");
    let compose = || {
        let output =
            acompose(&root, &["--home", home_flag, "compose", "request.kdl", "--projects-root", "projects", "--stats"]);
        assert_eq!(output.code, 0, "{}", output.stderr);
        output.stdout
    };
    let first = compose();
    assert!(first.contains("(new)"), "{first}");
    let id = first.split_whitespace().nth(1).expect("id").to_owned();
    let warm = compose();
    assert!(warm.starts_with(&format!("bundle {id} (reused)")), "{warm}");
    assert!(warm.contains("read 0, hashed 0, written 0"), "no file body read: {warm}");
    assert_eq!(
        warm.lines().filter(|line| !line.starts_with("stats")).collect::<Vec<_>>(),
        first.replace("(new)", "(reused)").lines().filter(|line| !line.starts_with("stats")).collect::<Vec<_>>(),
        "the same report"
    );
    // A skill edited: composed again, a new bundle.
    let skill = root.join("projects/example/hardware-knowledge/.agents/skills/machine-gpu/SKILL.md");
    let text = std::fs::read_to_string(&skill).expect("skill");
    write(&skill, &text.replace("\n\n", "\n\nEdited.\n\n"));
    let edited = compose();
    assert!(edited.contains("(new)"), "{edited}");
    assert_ne!(edited.split_whitespace().nth(1), Some(id.as_str()));
    // The store gaining an entry: every linked tree is checked, and still nothing read.
    let bundle = home.join("bundles").join(edited.split_whitespace().nth(1).expect("id"));
    let warm = compose();
    assert!(warm.contains("(reused)") && warm.contains("read 0"), "{warm}");
    std::fs::create_dir(home.join("store/added-by-another-run")).expect("the store moves");
    let warm = compose();
    assert!(warm.contains("(reused)") && warm.contains("read 0, hashed 0, written 0"), "{warm}");
    // A store tree removed is noticed, not answered from the cache.
    let link = std::fs::read_dir(bundle.join("content/skills")).expect("skills").flatten().next().expect("a provider");
    let tree = std::fs::read_dir(link.path()).expect("slice").flatten().next().expect("a skill").path();
    let tree = tree.canonicalize().expect("resolve");
    writable(&tree);
    std::fs::remove_dir_all(&tree).expect("damage the store");
    let output = acompose(&root, &["--home", home_flag, "compose", "request.kdl", "--projects-root", "projects"]);
    assert_ne!(output.code, 0, "a damaged store entry is not passed off as reused: {}", output.stdout);
}

#[test]
fn standalone_and_named_stores_give_the_same_id() {
    let (_temporary, root) = stage("selector-slice");
    let run = |arguments: &[&str]| {
        let mut all = vec!["compose", "request.kdl", "--projects-root", "projects"];
        all.extend_from_slice(arguments);
        let output = acompose(&root, &all);
        assert_eq!(output.code, 0, "{}", output.stderr);
        output.stdout.split_whitespace().nth(1).expect("id").to_owned()
    };
    let linked = run(&["--out", "linked"]);
    let named = run(&["--out", "named", "--store", "shared-store"]);
    let standalone = run(&["--out", "standalone", "--standalone"]);
    assert_eq!(linked, named);
    assert_eq!(linked, standalone);
    // `--out` outside the home: the store is `<out>/.store`; `--store` names another one.
    assert!(root.join("linked/.store").is_dir());
    assert!(root.join("shared-store").is_dir() && !root.join("named/.store").exists());
    let links = |bundle: &Path| {
        walkdir::WalkDir::new(bundle).into_iter().flatten().filter(|entry| entry.path_is_symlink()).count()
    };
    assert!(links(&root.join("linked").join(&linked)) > 0);
    assert_eq!(links(&root.join("standalone").join(&standalone)), 0, "real copies");
    for bundle in [root.join("named").join(&named), root.join("standalone").join(&standalone)] {
        verify_directory(&bundle).expect("verifies");
    }
    // A linked bundle in place is not passed off as standalone.
    let refused =
        acompose(&root, &["compose", "request.kdl", "--projects-root", "projects", "--out", "linked", "--standalone"]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("linked into a store"), "{}", refused.stderr);
}

/// An archive with one entry whose name and type are set byte by byte (the tar crate
/// refuses to build such names itself).
fn crafted_archive(name: &str, kind: tar::EntryType, body: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_ustar();
    header.as_mut_bytes()[..name.len()].copy_from_slice(name.as_bytes());
    header.set_entry_type(kind);
    header.set_size(body.len() as u64);
    header.set_mode(0o644);
    if kind == tar::EntryType::Symlink {
        header.set_link_name("/etc/passwd").expect("link name");
    }
    header.set_cksum();
    let mut builder = tar::Builder::new(Vec::new());
    builder.append(&header, body).expect("append");
    builder.into_inner().expect("archive")
}

#[test]
fn import_refuses_archives_that_are_no_bundle_and_writes_nothing() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let home = temporary.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let home_flag = home.to_str().expect("utf-8");
    let cases = [
        ("climbing", crafted_archive("0123456789abcdef/../../escaped", tar::EntryType::Regular, b"x")),
        ("link", crafted_archive("0123456789abcdef/content/skills/a", tar::EntryType::Symlink, b"")),
        ("foreign", crafted_archive("0123456789abcdef/manifest.json", tar::EntryType::Regular, b"{}")),
        ("garbage", b"not an archive at all".repeat(40)),
    ];
    for (name, bytes) in cases {
        let file = temporary.path().join(format!("{name}.tar"));
        std::fs::write(&file, bytes).expect("archive");
        let output =
            acompose(temporary.path(), &["--home", home_flag, "bundle", "import", file.to_str().expect("utf-8")]);
        assert_eq!(output.code, 1, "{name}: {}{}", output.stdout, output.stderr);
        assert!(!output.stderr.contains("panicked"), "{name}: {}", output.stderr);
    }
    assert!(!temporary.path().join("escaped").exists());
    assert!(!home.join("escaped").exists());
    let placed: Vec<_> = std::fs::read_dir(home.join("bundles"))
        .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect())
        .unwrap_or_default();
    assert!(placed.is_empty(), "nothing placed: {placed:?}");
}

/// Every symbolic link under `folder`, with its target.
fn links_under(folder: &Path) -> Vec<(PathBuf, PathBuf)> {
    walkdir::WalkDir::new(folder)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter(|entry| entry.path_is_symlink())
        .map(|entry| (entry.path().to_path_buf(), std::fs::read_link(entry.path()).expect("link")))
        .collect()
}

#[test]
fn a_cold_convergence_writes_only_store_links_that_fit_inside_an_inode() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    // A tree holding a CRLF has the longest key: its raw suffix too.
    let crlf = skill("machine-crlf", "Line endings.").replace('\n', "\r\n");
    write(&projects.join("example/hardware/.agents/skills/machine-crlf/SKILL.md"), &crlf);
    converge(&mut Converger::default(), &home, &projects);
    let links = links_under(&home.join("store"));
    assert!(links.len() >= 6, "every skill of each slice is a link: {links:?}");
    assert!(links.iter().any(|(_, target)| target.to_string_lossy().contains('-')), "a CRLF tree is linked");
    for (link, target) in &links {
        // ext4 keeps a link's target inside its inode when it is shorter than 60 bytes.
        let length = target.as_os_str().len();
        assert!(length < 60, "`{}` -> `{}` is {length} bytes", link.display(), target.display());
    }
    assert_indexed_bundles_verify(&home, "with short keys");
}

/// The name an older store gave a tree of LF-only files: the full 64 hex digits of its
/// CRLF-folded tree digest.
fn full_tree_name(files: &[(String, Vec<u8>)]) -> String {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort();
    let mut hasher = blake3::Hasher::new();
    for (path, bytes) in sorted {
        assert!(!bytes.windows(2).any(|pair| pair == b"\r\n"), "LF-only files");
        hasher.update(path.as_bytes());
        hasher.update(&[0]);
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(blake3::hash(bytes).as_bytes());
    }
    hasher.finalize().to_hex().to_string()
}

/// The name an older store gave a slice: `slice-` and the full 64 hex digits.
fn full_slice_name(skills: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = skills.iter().collect();
    sorted.sort();
    let mut hasher = blake3::Hasher::new();
    for (name, key) in sorted {
        hasher.update(name.as_bytes());
        hasher.update(&[0]);
        hasher.update(key.as_bytes());
        hasher.update(b"\n");
    }
    format!("slice-{}", hasher.finalize().to_hex())
}

/// Writes a full-length copy of the slice a bundle's provider folder links, with
/// full-length copies of its trees, and links the provider folder to it. Returns the
/// names of the entries written.
fn relink_to_full_length_entries(store: &Path, provider: &Path) -> Vec<String> {
    let slice = std::fs::read_link(provider).expect("provider link");
    let slice_folder = store.join(slice.file_name().expect("slice name"));
    let mut skills = Vec::new();
    let mut written = Vec::new();
    for entry in std::fs::read_dir(&slice_folder).expect("slice").flatten() {
        let tree = store.join(std::fs::read_link(entry.path()).expect("tree link").file_name().expect("key"));
        let short = tree.file_name().expect("key").to_string_lossy().into_owned();
        let files: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(&tree)
            .into_iter()
            .flatten()
            .filter(|item| item.file_type().is_file())
            .map(|item| {
                let path = item.path().strip_prefix(&tree).expect("inside").to_string_lossy().into_owned();
                (path, std::fs::read(item.path()).expect("read"))
            })
            .collect();
        let full = full_tree_name(&files);
        assert_eq!(short, full[..40], "a short key is the first 40 digits of the full one");
        for (path, bytes) in &files {
            write(&store.join(&full).join(path), std::str::from_utf8(bytes).expect("utf-8"));
        }
        skills.push((entry.file_name().to_string_lossy().into_owned(), full.clone()));
        written.push(full);
    }
    let name = full_slice_name(&skills);
    std::fs::create_dir(store.join(&name)).expect("full-length slice");
    for (skill, full) in &skills {
        std::os::unix::fs::symlink(Path::new("..").join(full), store.join(&name).join(skill)).expect("link");
    }
    let folder = provider.parent().expect("skills folder");
    writable(folder);
    std::fs::remove_file(provider).expect("unlink");
    std::os::unix::fs::symlink(slice.with_file_name(&name), provider).expect("relink");
    written.push(name);
    written
}

#[test]
fn full_length_entries_of_an_older_store_are_verified_and_kept_by_gc_while_a_bundle_links_them() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    converge(&mut Converger::default(), &home, &projects);
    let store = home.join("store");
    let platform = home.join("bundles").join(&index(&home)["platform"]);
    let full = relink_to_full_length_entries(&store, &platform.join("content/skills/hardware"));
    assert!(full.iter().all(|name| name.len() >= 64), "{full:?}");
    verify_directory(&platform).expect("a bundle linking full-length entries verifies");

    let home_flag = home.to_str().expect("utf-8");
    let run = acompose(temporary.path(), &["--home", home_flag, "gc", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let left: Vec<String> = store_listing(&store).into_keys().collect();
    for name in &full {
        assert!(left.contains(name), "gc kept `{name}`: {left:?}");
    }
    verify_directory(&platform).expect("still verifies after gc");

    // A flipped byte in a full-length tree is found by its full-length name.
    let skill = platform.join("content/skills/hardware/machine-gpu/SKILL.md").canonicalize().expect("resolve");
    let tree = skill.parent().expect("tree").file_name().expect("name").to_string_lossy().into_owned();
    assert_eq!(tree.len(), 64, "the bundle reads through the full-length entry");
    let mut bytes = std::fs::read(&skill).expect("skill");
    bytes[5] ^= 0x01;
    writable(skill.parent().expect("tree folder"));
    std::fs::remove_file(&skill).expect("unlink");
    std::fs::write(&skill, bytes).expect("flip");
    let problems = verify_directory(&platform).expect_err("a damaged full-length entry fails");
    assert!(format!("{problems:?}").contains(&tree), "{problems:?}");
}
