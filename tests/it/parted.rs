//! A bundle's large own files kept as parts in the content store (the trace, its index
//! and the manifest) or linked to a store entry (the instructions): what an edit writes,
//! and every reader of a bundle reading the parted form as it reads the whole one.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_driver::compose::bundle::verify_directory;
use common::{acompose, backdate_folders};

/// 40 repositories × 60 skills: each role's trace (a decision per skill of the estate) is
/// well over the size from which it is kept as parts, and so is its index.
const REPOSITORIES: usize = 40;
const SKILLS: usize = 60;

fn skill(repository: usize, skill: usize, salt: &str) -> String {
    format!(
        "---\nname: skill-{repository:02}-{skill:02}\ndescription: Skill {skill} of repository {repository}.\n---\n\n# Skill\n\nOne practice, explained. {salt}\n"
    )
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(path).and_then(|file| file.set_modified(hour_ago)).expect("backdate");
}

fn skill_path(projects: &Path, repository: usize, number: usize) -> PathBuf {
    projects.join(format!("estate/repo-{repository:02}/.agents/skills/skill-{repository:02}-{number:02}/SKILL.md"))
}

/// The estate, its home, and the platform role's bundle after a first convergence.
fn estate(root: &Path) -> (PathBuf, PathBuf) {
    let projects = root.join("projects");
    let mut roles = String::from("repositories {\n");
    for repository in 0..REPOSITORIES {
        roles.push_str(&format!(
            "    repository repo-{repository:02} path=\"estate/repo-{repository:02}\" {{ skill \"skill-{repository:02}-*\"; }}\n"
        ));
    }
    roles.push_str("}\nroles {\n    role platform {");
    for repository in (0..REPOSITORIES).step_by(2) {
        roles.push_str(&format!(" use-repository repo-{repository:02};"));
    }
    roles.push_str(" }\n    role eval {");
    for repository in (1..REPOSITORIES).step_by(2) {
        roles.push_str(&format!(" use-repository repo-{repository:02};"));
    }
    roles.push_str(" }\n}\n");
    write(&projects.join("estate/root/.agents/roles.kdl"), &roles);
    write(&projects.join("estate/root/.git/HEAD"), "ref: refs/heads/main\n");
    write(&projects.join("estate/root/.git/refs/heads/main"), "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n");
    for repository in 0..REPOSITORIES {
        for number in 0..SKILLS {
            write(&skill_path(&projects, repository, number), &skill(repository, number, ""));
        }
    }
    let home = root.join("home");
    // No earlier bundles kept: a replaced bundle is pruned with the parts only it listed.
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - estate/root\nbundle_history: 0\n");
    backdate_folders(root);
    (home, projects)
}

const ARGUMENTS: [&str; 5] = ["--home", "home", "--projects-root", "projects", "--stats"];

fn platform(home: &Path) -> PathBuf {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.join("bundles/index.json")).expect("index")).expect("json");
    let id = index["bundles"]["platform"].as_str().unwrap_or_else(|| panic!("no platform bundle in {index}"));
    home.join("bundles").join(id)
}

/// Every file under `root` with its size (links as their targets' lengths).
fn sizes(root: &Path) -> BTreeMap<PathBuf, u64> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|entry| !entry.file_type().is_dir())
        .map(|entry| {
            let size = std::fs::symlink_metadata(entry.path()).map(|metadata| metadata.len()).unwrap_or(0);
            (entry.path().strip_prefix(root).unwrap_or(entry.path()).to_path_buf(), size)
        })
        .collect()
}

fn path_text(path: &Path) -> &str {
    path.to_str().expect("utf-8")
}

#[test]
fn a_large_trace_and_its_index_are_kept_as_parts_and_every_reader_sees_the_whole_files() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = estate(temporary.path());
    let converged = acompose(temporary.path(), &ARGUMENTS);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    let bundle = platform(&home);
    for file in ["trace.json", "trace.index", "manifest.json"] {
        assert!(!bundle.join(file).exists(), "{file} is not kept whole");
        assert!(bundle.join(format!("{file}.parts")).is_file(), "{file} is kept as parts");
    }
    let parts = std::fs::read_dir(home.join("store"))
        .expect("store")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("part-"))
        .count();
    assert!(parts > 4, "{parts} parts");
    assert!(verify_directory(&bundle).is_ok(), "{:?}", verify_directory(&bundle));

    // The same bundle exported: real, whole files in a plain folder.
    let archive = temporary.path().join("platform.tar");
    let exported = acompose(temporary.path(), &["bundle", "export", path_text(&bundle), "--out", "platform.tar"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let whole = temporary.path().join("whole");
    tar::Archive::new(std::fs::File::open(&archive).expect("archive")).unpack(&whole).expect("unpack");
    let id = bundle.file_name().expect("id").to_string_lossy().into_owned();
    let copy = whole.join(&id);
    assert!(copy.join("trace.json").is_file() && copy.join("trace.index").is_file(), "the archive holds whole files");
    // Every reader answers alike for the two forms of one bundle (paths aside).
    let same = |arguments: &[&str]| {
        let run = |folder: &Path| {
            let mut all: Vec<&str> = arguments.to_vec();
            all.push(path_text(folder));
            let output = acompose(temporary.path(), &all);
            (
                output.code,
                output.stdout.replace(path_text(folder), "BUNDLE"),
                output.stderr.replace(path_text(folder), "BUNDLE"),
            )
        };
        let (parted, plain) = (run(&bundle), run(&copy));
        assert_eq!(parted, plain, "{arguments:?}");
        parted
    };
    assert_eq!(same(&["verify"]).0, 0);
    assert_eq!(same(&["describe"]).0, 0);
    assert_eq!(same(&["describe", "--json"]).0, 0);
    for item in ["skill:skill-00-07", "skill:skill-01-07", "source:repo-02", "skill:nothing-like-it"] {
        same(&["describe", "--why", item]);
    }
    // `--why` through the parts reads the decisions asked about.
    let why = same(&["describe", "--why", "skill:skill-01-07"]);
    assert!(why.1.contains("role-excluded"), "{}", why.1);
    // The home's own commands find the bundle by its role through its parted manifest.
    let listed = acompose(temporary.path(), &["--home", "home", "bundle", "list", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains(&id), "{}", listed.stdout);
    let described = acompose(temporary.path(), &["--home", "home", "describe", "platform"]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    let diff = acompose(temporary.path(), &["diff", path_text(&bundle), path_text(&copy)]);
    assert_eq!(diff.code, 0, "{}{}", diff.stdout, diff.stderr);
}

#[test]
fn an_edit_writes_the_parts_it_changes_and_gc_keeps_exactly_the_listed_ones() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    assert_eq!(acompose(temporary.path(), &ARGUMENTS).code, 0);
    let before_store = sizes(&home.join("store"));
    let before = platform(&home);
    let trace_length: u64 = std::fs::read_to_string(before.join("trace.json.parts"))
        .expect("list")
        .lines()
        .filter_map(|line| line.strip_prefix("part ")?.split(' ').next()?.parse::<u64>().ok())
        .sum();
    let before_instructions = {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::symlink_metadata(before.join("content/instructions.md")).expect("instructions");
        (metadata.ino(), metadata.nlink())
    };
    write(&skill_path(&projects, 4, 7), &skill(4, 7, "Edited, and longer than it was."));
    let edited = acompose(temporary.path(), &ARGUMENTS);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    let after = platform(&home);
    assert_ne!(after, before, "the platform role has a new bundle");
    // What the edit wrote of the trace, its index and the manifest: a few new parts in the
    // store and three short lists in the new bundle, far less than the trace.
    let new_parts: Vec<(PathBuf, u64)> = sizes(&home.join("store"))
        .into_iter()
        .filter(|(path, _)| !before_store.contains_key(path) && path.to_string_lossy().starts_with("part-"))
        .collect();
    assert!((1..=9).contains(&new_parts.len()), "{new_parts:#?}");
    let parts_bytes: u64 = new_parts.iter().map(|(_, size)| size).sum();
    let files = sizes(&after);
    let lists = ["trace.json.parts", "trace.index.parts", "manifest.json.parts"]
        .iter()
        .map(|list| files[Path::new(list)])
        .sum::<u64>();
    assert!(lists < 4096, "{lists} bytes of lists");
    assert!(
        parts_bytes + lists < trace_length / 4,
        "{parts_bytes} bytes of parts and {lists} of lists for a trace of {trace_length}"
    );
    assert!(verify_directory(&after).is_ok(), "{:?}", verify_directory(&after));
    // The instructions did not change: the new bundle's file is the store entry the old
    // one's was, linked again and not written.
    let instructions = |bundle: &Path| {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::symlink_metadata(bundle.join("content/instructions.md")).expect("instructions");
        (metadata.ino(), metadata.nlink(), metadata.is_file())
    };
    let (inode, links, regular) = instructions(&after);
    assert!(regular && links >= 2, "a hard link to its store entry: {links} links");
    assert_eq!(inode, before_instructions.0, "the same bytes, not written again");
    // Two more edits, each pruning the bundle it replaces and the parts only that one
    // listed: gc then finds no part to remove.
    for round in 0..2 {
        write(&skill_path(&projects, 4, 7), &skill(4, 7, &format!("Edited again, round {round}.")));
        assert_eq!(acompose(temporary.path(), &ARGUMENTS).code, 0);
    }
    assert!(!before.exists(), "the replaced bundles are pruned");
    let after = platform(&home);
    let gc = acompose(temporary.path(), &["--home", "home", "gc", "--dry-run"]);
    assert_eq!(gc.code, 0, "{}", gc.stderr);
    assert!(!gc.stdout.contains("part-"), "prune left a part no bundle lists: {}", gc.stdout);
    assert_eq!(acompose(temporary.path(), &["--home", "home", "gc"]).code, 0);
    assert!(verify_directory(&after).is_ok(), "gc keeps what the bundles hold: {:?}", verify_directory(&after));
    let listed: std::collections::BTreeSet<String> = std::fs::read_dir(home.join("bundles"))
        .expect("bundles")
        .flatten()
        .flat_map(|bundle| {
            ["trace.json.parts", "trace.index.parts", "manifest.json.parts"]
                .map(|list| std::fs::read_to_string(bundle.path().join(list)))
        })
        .flatten()
        .flat_map(|text| {
            text.lines()
                .filter_map(|line| Some(format!("part-{}", line.strip_prefix("part ")?.split(' ').nth(1)?)))
                .collect::<Vec<_>>()
        })
        .collect();
    let stored: std::collections::BTreeSet<String> = std::fs::read_dir(home.join("store"))
        .expect("store")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("part-"))
        .filter(|name| {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(home.join("store").join(name)).is_ok_and(|metadata| metadata.nlink() == 1)
        })
        .collect();
    assert_eq!(stored, listed, "the store keeps the listed parts (and those a bundle's file links) and no other");
    // A part lost is found by `verify` (naming it) and by the next bare run.
    let lost = home.join("store").join(listed.iter().next().expect("a part"));
    std::fs::remove_file(&lost).expect("remove a part");
    let verified = acompose(temporary.path(), &["verify", path_text(&after)]);
    assert_ne!(verified.code, 0);
    assert!(
        verified.stdout.contains(lost.file_name().expect("name").to_str().expect("utf-8"))
            || verified.stderr.contains("part-"),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
    let noticed = acompose(temporary.path(), &ARGUMENTS);
    assert!(!noticed.stdout.contains("read 0, hashed 0, written 0"), "a lost part is noticed: {}", noticed.stdout);
}

#[test]
fn a_run_right_after_a_convergence_that_wrote_parts_finds_nothing_changed() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, _) = estate(temporary.path());
    assert_eq!(acompose(temporary.path(), &ARGUMENTS).code, 0);
    assert!(platform(&home).join("trace.json.parts").is_file(), "the trace is kept as parts");
    // The store's folder changed a moment before the fingerprints were saved, so the next
    // run looks at every entry the bundles reach, the parts' files among the trees.
    let again = acompose(temporary.path(), &ARGUMENTS);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("inputs    unchanged since the last convergence"), "{}", again.stdout);
}

/// Makes `folder` and what it holds writable (bundles are read-only), or read-only again.
fn set_writable(folder: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt as _;
    for entry in walkdir::WalkDir::new(folder).into_iter().flatten().filter(|entry| !entry.path_is_symlink()) {
        let mode = match (entry.file_type().is_dir(), writable) {
            (true, true) => 0o755,
            (true, false) => 0o555,
            (false, true) => 0o644,
            (false, false) => 0o444,
        };
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
}

#[test]
fn a_bundle_of_the_format_before_parts_is_read_verified_and_pruned() {
    let temporary = tempfile::tempdir().expect("tempdir");
    let (home, projects) = estate(temporary.path());
    assert_eq!(acompose(temporary.path(), &ARGUMENTS).code, 0);
    let bundle = platform(&home);
    let why =
        |folder: &Path| acompose(temporary.path(), &["describe", "--why", "skill:skill-01-07", path_text(folder)]);
    let parted_why = why(&bundle);
    // The bundle as the format before parts held it: the same id, its three large files
    // whole in its folder (taken from its export), its providers still links into the store.
    let exported = acompose(temporary.path(), &["bundle", "export", path_text(&bundle), "--out", "platform.tar"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let whole = temporary.path().join("whole");
    tar::Archive::new(std::fs::File::open(temporary.path().join("platform.tar")).expect("archive"))
        .unpack(&whole)
        .expect("unpack");
    let copy = whole.join(bundle.file_name().expect("id"));
    set_writable(&bundle, true);
    for file in ["trace.json", "trace.index", "manifest.json"] {
        std::fs::remove_file(bundle.join(format!("{file}.parts"))).expect("remove the list");
        std::fs::copy(copy.join(file), bundle.join(file)).expect("whole file");
    }
    set_writable(&bundle, false);
    assert!(verify_directory(&bundle).is_ok(), "{:?}", verify_directory(&bundle));
    let verified = acompose(temporary.path(), &["verify", path_text(&bundle)]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let whole_why = why(&bundle);
    assert_eq!((whole_why.code, &whole_why.stdout), (parted_why.code, &parted_why.stdout));
    let described = acompose(temporary.path(), &["--home", "home", "describe", "platform"]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    // A run with nothing changed keeps it; an edit replaces it and prunes it.
    assert_eq!(acompose(temporary.path(), &ARGUMENTS).code, 0);
    assert_eq!(platform(&home), bundle, "nothing changed, the same bundle");
    write(&skill_path(&projects, 4, 7), &skill(4, 7, "Edited after the format changed."));
    let edited = acompose(temporary.path(), &ARGUMENTS);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    let after = platform(&home);
    assert_ne!(after, bundle);
    assert!(!bundle.exists(), "the bundle of the earlier format is pruned");
    assert!(after.join("trace.json.parts").is_file(), "the new bundle is written with parts");
    assert!(verify_directory(&after).is_ok(), "{:?}", verify_directory(&after));
    let gc = acompose(temporary.path(), &["--home", "home", "gc", "--dry-run"]);
    assert_eq!(gc.code, 0, "{}", gc.stderr);
}
