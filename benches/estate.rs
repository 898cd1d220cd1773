//! Benchmarks on the reference estate of SPEC 9: 200 repositories × 50 skills of about
//! 1.5 KB, one trusted root whose `.agents/roles.kdl` gives each of the seven roles a
//! selector-bounded slice of the repositories, and the embedded roster.
//!
//! Run with `cargo bench --bench estate`. The numbers and their ratios are recorded in
//! `docs/performance.md`.

#[path = "common/reference_estate.rs"]
mod reference_estate;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use acompose_driver::NoProgress;
use acompose_driver::convergence::Converger;
use acompose_driver::home::transaction::NoFaults;
use divan::Bencher;
use rayon::prelude::*;
use reference_estate::{REPOSITORIES, ROLES, skill_text};

#[path = "common/syscalls.rs"]
mod syscalls;

struct Estate {
    _directory: tempfile::TempDir,
    root: PathBuf,
    projects: PathBuf,
    /// Every input path (files and folders) the convergence reads.
    inputs: Vec<PathBuf>,
    files: Vec<PathBuf>,
}

/// Writes the reference estate and returns its paths.
fn generate() -> Estate {
    let directory = tempfile::tempdir().expect("tempdir");
    let root = directory.path().to_path_buf();
    let projects = root.join("projects");
    reference_estate::write(&projects);
    let mut inputs = Vec::new();
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(&projects).into_iter().flatten() {
        if entry.file_type().is_file() {
            files.push(entry.path().to_path_buf());
        }
        inputs.push(entry.path().to_path_buf());
    }
    Estate { _directory: directory, root, projects, inputs, files }
}

static ESTATE: OnceLock<Estate> = OnceLock::new();

fn estate() -> &'static Estate {
    ESTATE.get_or_init(|| {
        let estate = generate();
        // Files changed within two seconds of a convergence are always re-hashed by the
        // fingerprint cache; let the freshly generated estate age past that window.
        std::thread::sleep(std::time::Duration::from_millis(2500));
        estate
    })
}

/// New homes `<prefix>-1`, `<prefix>-2`, …, one per call (a benchmark's inputs).
fn numbered_homes<'e>(estate: &'e Estate, prefix: &'e str) -> impl FnMut() -> PathBuf + 'e {
    let mut round = 0;
    move || {
        round += 1;
        new_home(estate, &format!("{prefix}-{round}"))
    }
}

fn new_home(estate: &Estate, name: &str) -> PathBuf {
    let home = estate.root.join(name);
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(home.join("agent-compose.yaml"), "operating_context:\n  - estate/root\n").expect("config");
    home
}

/// Waits until the files the setup wrote are on disk (`sync`), so that a benchmark whose
/// work flushes files does not queue behind the writeback of its own setup.
fn settle() {
    let _ = Command::new("sync").status();
}

fn converge_process(estate: &Estate, home: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["--quiet", "--home"])
        .arg(home)
        .arg("--projects-root")
        .arg(&estate.projects)
        .status()
        .expect("run acompose");
    assert!(status.success());
}

fn main() {
    divan::main();
    // A static is never dropped: remove the estate (and every home written into it) here,
    // or each run would leave hundreds of thousands of files behind.
    if let Some(estate) = ESTATE.get() {
        let _ = std::fs::remove_dir_all(&estate.root);
    }
}

/// One skill tree of the store as written: its folders (parents first) and its files.
struct WrittenTree {
    folders: Vec<PathBuf>,
    files: Vec<(PathBuf, Vec<u8>)>,
}

/// One slice of the store as written: its name and its (skill, link target) links.
struct WrittenSlice {
    name: String,
    links: Vec<(String, PathBuf)>,
}

/// The distinct skill trees and the slices a cold convergence writes into the store.
struct Outputs {
    trees: Vec<WrittenTree>,
    slices: Vec<WrittenSlice>,
}

fn outputs(estate: &Estate) -> &'static Outputs {
    static OUTPUTS: OnceLock<Outputs> = OnceLock::new();
    OUTPUTS.get_or_init(|| {
        let home = new_home(estate, "reference");
        converge_process(estate, &home);
        let store = home.join("store");
        let mut trees = Vec::new();
        let mut slices = Vec::new();
        for tree in std::fs::read_dir(&store).expect("store").flatten() {
            let name = tree.file_name().to_string_lossy().into_owned();
            if acompose_engine::store::is_slice_name(&name) {
                let links = std::fs::read_dir(tree.path())
                    .expect("slice")
                    .flatten()
                    .map(|link| {
                        let target = std::fs::read_link(link.path()).expect("link");
                        (link.file_name().to_string_lossy().into_owned(), target)
                    })
                    .collect();
                slices.push(WrittenSlice { name, links });
                continue;
            }
            if !acompose_engine::store::is_tree_key(&name) {
                continue;
            }
            let (mut folders, mut files) = (Vec::new(), Vec::new());
            for entry in walkdir::WalkDir::new(tree.path()).sort_by_file_name().into_iter().flatten() {
                let relative = entry.path().strip_prefix(&store).expect("inside").to_path_buf();
                if entry.file_type().is_dir() {
                    folders.push(relative);
                } else {
                    files.push((relative, std::fs::read(entry.path()).expect("read")));
                }
            }
            trees.push(WrittenTree { folders, files });
        }
        Outputs { trees, slices }
    })
}

/// A request naming all 200 repositories as sources, for the `platform` role.
fn request(estate: &Estate) -> PathBuf {
    let path = estate.root.join("request.kdl");
    if !path.exists() {
        let mut text = String::from("compose {\n    role \"platform\"\n    delivery \"native-skills\"\n");
        for repository in 0..REPOSITORIES {
            let _ = writeln!(text, "    source \"repo-{repository:03}\" root=\"projects/estate/repo-{repository:03}\"");
        }
        text.push_str("}\n");
        std::fs::write(&path, text).expect("request");
    }
    path
}

fn compose_process(estate: &Estate, home: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_acompose"))
        .args(["--quiet", "--home"])
        .arg(home)
        .arg("compose")
        .arg(request(estate))
        .arg("--projects-root")
        .arg(&estate.projects)
        .current_dir(&estate.root)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run acompose");
    assert!(status.success());
}

/// A new process composing the 200-source request into an empty home: reads and hashes
/// every input, writes the store trees it selects and the bundle.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn compose_cold_200_sources(bencher: Bencher) {
    let estate = estate();
    bencher
        .with_inputs(numbered_homes(estate, "compose-cold"))
        .bench_local_values(|home| compose_process(estate, &home));
}

/// The same request again with nothing changed: answered from the persisted fingerprints.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn compose_warm_200_sources(bencher: Bencher) {
    let estate = estate();
    let home = new_home(estate, "compose-warm");
    compose_process(estate, &home);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    compose_process(estate, &home);
    bencher.bench_local(|| compose_process(estate, &home));
}

/// A new process converging into an empty home: reads and hashes every input, writes
/// the roster artifact, seven bundles, the index and the plan.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cold_convergence(bencher: Bencher) {
    let estate = estate();
    bencher.with_inputs(numbered_homes(estate, "cold")).bench_local_values(|home| converge_process(estate, &home));
}

/// The entries a home holds that a run wrote (the configuration the benchmark wrote left
/// out).
fn written(home: &Path) -> syscalls::Entries {
    let configuration = home.join("agent-compose.yaml");
    syscalls::Entries::of(home, &|path| path != home && path != configuration)
}

/// The system calls of a cold convergence, counted by `strace -c -f` beside the floor of
/// its inputs and outputs (printed; the time measured is strace's, not a figure).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn syscalls_cold_convergence(bencher: Bencher) {
    let estate = estate();
    bencher.with_inputs(numbered_homes(estate, "strace-cold")).bench_local_values(|home| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
        command.args(["--quiet", "--home"]).arg(&home).arg("--projects-root").arg(&estate.projects);
        let Some(calls) = syscalls::count(&command, &estate.root) else {
            eprintln!("syscalls_cold_convergence: strace is not installed; nothing counted");
            return;
        };
        let inputs = syscalls::Entries::of(&estate.projects, &|path| path != estate.projects);
        syscalls::report("cold convergence", &calls, inputs, written(&home));
    });
}

/// The system calls of the cold 200-source compose, beside its floor (see
/// [`syscalls_cold_convergence`]).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn syscalls_cold_compose(bencher: Bencher) {
    let estate = estate();
    bencher.with_inputs(numbered_homes(estate, "strace-compose")).bench_local_values(|home| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
        command
            .args(["--quiet", "--home"])
            .arg(&home)
            .arg("compose")
            .arg(request(estate))
            .arg("--projects-root")
            .arg(&estate.projects)
            .current_dir(&estate.root);
        let Some(calls) = syscalls::count(&command, &estate.root) else {
            eprintln!("syscalls_cold_compose: strace is not installed; nothing counted");
            return;
        };
        let repositories = estate.projects.join("estate");
        let root = repositories.join("root");
        let mut inputs = syscalls::Entries::of(&repositories, &|path| path != repositories && !path.starts_with(&root));
        inputs.files += 1; // request.kdl
        syscalls::report("cold 200-source compose", &calls, inputs, written(&home));
    });
}

/// A new process on a converged home with nothing changed: stats every input.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn noop_convergence(bencher: Bencher) {
    let estate = estate();
    let home = new_home(estate, "noop");
    converge_process(estate, &home);
    // Files edited by earlier benchmarks are re-hashed while they are racily fresh (two
    // seconds); wait that out so the cache holds their real times, as in steady use.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    converge_process(estate, &home);
    converge_process(estate, &home);
    bencher.bench_local(|| converge_process(estate, &home));
}

/// `acompose launch platform claude` with nothing changed since the last launch, to the
/// harness's first instruction: a fake `claude` that exits at once. Compare with
/// `noop_convergence` (the launch's own convergence is that no-op).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn launch_nothing_changed(bencher: Bencher) {
    let estate = estate();
    let home = new_home(estate, "launch");
    let bin = estate.root.join("launch-bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let harness = bin.join("claude");
    std::fs::write(&harness, "#!/bin/sh\nexit 0\n").expect("fake harness");
    let mut permissions = std::fs::metadata(&harness).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&harness, permissions).expect("chmod");
    let user = estate.root.join("launch-user");
    std::fs::create_dir_all(&user).expect("user home");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let launch = || {
        let status = Command::new(env!("CARGO_BIN_EXE_acompose"))
            .args(["--quiet", "--home"])
            .arg(&home)
            .args(["launch", "platform", "claude", "--yes", "--projects-root"])
            .arg(&estate.projects)
            .env("HOME", &user)
            .env("PATH", &path)
            .env_remove("AGENT_COMPOSE_LAUNCH")
            .status()
            .expect("run acompose launch");
        assert!(status.success());
    };
    launch();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    launch();
    launch();
    bencher.bench_local(launch);
}

/// The live database of watch mode: one skill body edited, its catalogue re-read, and
/// the estate reconverged, every write included (the new skill tree, the new slice, the
/// platform bundle's own files and links, the index and the plan).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn edit_one_skill(bencher: Bencher) {
    let estate = estate();
    let home = new_home(estate, "watch");
    let progress = NoProgress;
    let config =
        acompose_driver::home::read_config(&acompose_driver::home::Home::at(&home), &progress).expect("config");
    let mut converger = Converger::default();
    converger.defer_pruning = true;
    converger
        .converge(&acompose_driver::home::Home::at(&home), &estate.projects, &config, &progress, &mut NoFaults, true)
        .expect("converge");
    settle();
    // repo-000 is used by the first role; skill 05 is inside its selected slice.
    let edited = estate.projects.join("estate/repo-000/.agents/skills/skill-000-05/SKILL.md");
    let mut round = 0;
    bencher
        .with_inputs(|| {
            round += 1;
            std::fs::write(&edited, skill_text(0, 5, &format!("Revision {round}."))).expect("edit");
        })
        .bench_local_values(|()| {
            converger.loader.refresh(&mut converger.db, &edited);
            converger
                .converge(
                    &acompose_driver::home::Home::at(&home),
                    &estate.projects,
                    &config,
                    &progress,
                    &mut NoFaults,
                    false,
                )
                .expect("reconverge");
        });
}

/// The in-memory half of the same edit: the catalogue re-read and every role's bundle
/// recomputed by the live database, without writing the new bundle to disk.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn edit_one_skill_recompute_only(bencher: Bencher) {
    let estate = estate();
    let home = new_home(estate, "recompute");
    let progress = NoProgress;
    let config =
        acompose_driver::home::read_config(&acompose_driver::home::Home::at(&home), &progress).expect("config");
    let mut converger = Converger::default();
    converger
        .converge(&acompose_driver::home::Home::at(&home), &estate.projects, &config, &progress, &mut NoFaults, true)
        .expect("converge");
    let edited = estate.projects.join("estate/repo-001/.agents/skills/skill-001-05/SKILL.md");
    let mut round = 0;
    bencher
        .with_inputs(|| {
            round += 1;
            std::fs::write(&edited, skill_text(1, 5, &format!("Revision {round}."))).expect("edit");
        })
        .bench_local_values(|()| {
            converger.loader.refresh(&mut converger.db, &edited);
            assert_eq!(converger.recompute_bundles(), ROLES.len());
        });
}

/// The physical floor of a no-op: stat every input (in parallel, as the cache does).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn floor_stat_every_input(bencher: Bencher) {
    let estate = estate();
    bencher.bench_local(|| estate.inputs.par_iter().filter(|path| std::fs::symlink_metadata(path).is_ok()).count());
}

/// The physical floor of a cold convergence: read and blake3 every input byte.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn floor_read_and_hash_every_input(bencher: Bencher) {
    let estate = estate();
    bencher.bench_local(|| {
        estate
            .files
            .par_iter()
            .map(|path| blake3::hash(&std::fs::read(path).expect("read")).as_bytes()[0] as u64)
            .sum::<u64>()
    });
}

/// The physical floor of a self-contained store: create the folder and write the files
/// of each distinct selected skill once (same bytes, in parallel).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn floor_write_distinct_skills(bencher: Bencher) {
    let estate = estate();
    let outputs = outputs(estate);
    bencher.with_inputs(numbered_homes(estate, "write-floor")).bench_local_values(|target| {
        outputs.trees.par_iter().for_each(|WrittenTree { folders, files }| {
            for folder in folders {
                std::fs::create_dir(target.join(folder)).expect("mkdir");
            }
            for (file, bytes) in files {
                std::fs::write(target.join(file), bytes).expect("write");
            }
        });
    });
}

/// The floor of the store's entry protocol, for comparison with the cold convergence:
/// what [`floor_write_distinct_skills`] does, plus what makes an entry immutable and
/// never half-visible — each tree written into a staging folder (files created
/// read-only), the folder made read-only and renamed to its name — and each slice
/// (a folder of links to trees) staged, sealed and renamed the same way. Nothing is read
/// back or checked.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn floor_write_store_entries(bencher: Bencher) {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let estate = estate();
    let outputs = outputs(estate);
    let read_only = |folder: &Path| {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o555)).expect("seal");
    };
    bencher.with_inputs(numbered_homes(estate, "entry-floor")).bench_local_values(|target| {
        outputs.trees.par_iter().enumerate().for_each(|(index, WrittenTree { folders, files })| {
            let staging = target.join(format!(".staging-{index}"));
            let (top, inner) = folders.split_first().expect("a tree folder");
            std::fs::create_dir(&staging).expect("mkdir");
            for folder in inner {
                std::fs::create_dir(staging.join(folder.strip_prefix(top).expect("inside"))).expect("mkdir");
            }
            for (file, bytes) in files {
                let path = staging.join(file.strip_prefix(top).expect("inside"));
                let mut created =
                    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o444).open(path).expect("create");
                std::io::Write::write_all(&mut created, bytes).expect("write");
            }
            for folder in inner.iter().rev() {
                read_only(&staging.join(folder.strip_prefix(top).expect("inside")));
            }
            read_only(&staging);
            std::fs::rename(&staging, target.join(top)).expect("rename");
        });
        outputs.slices.par_iter().enumerate().for_each(|(index, WrittenSlice { name, links })| {
            let staging = target.join(format!(".staging-slice-{index}"));
            std::fs::create_dir(&staging).expect("mkdir");
            for (skill, to) in links {
                std::os::unix::fs::symlink(to, staging.join(skill)).expect("link");
            }
            read_only(&staging);
            std::fs::rename(&staging, target.join(name)).expect("rename");
        });
    });
}

/// What the slices alone cost: each slice a folder of links (`../<tree key>`, 43 bytes
/// for an LF-only tree, short enough for ext4 to keep inside the link's inode), written
/// plainly, in parallel. A bundle that grows with its providers, not its
/// skills, needs these links on top of the trees.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn floor_write_slice_links(bencher: Bencher) {
    let estate = estate();
    let outputs = outputs(estate);
    bencher.with_inputs(numbered_homes(estate, "links-floor")).bench_local_values(|target| {
        outputs.slices.par_iter().for_each(|WrittenSlice { name, links }| {
            let folder = target.join(name);
            std::fs::create_dir(&folder).expect("mkdir");
            for (skill, to) in links {
                std::os::unix::fs::symlink(to, folder.join(skill)).expect("link");
            }
        });
    });
}

/// A bundle's own files (path, bytes) and its provider links (source, target), as read
/// from a converged home.
struct WrittenBundle {
    own: Vec<(&'static str, Vec<u8>)>,
    links: Vec<(String, PathBuf)>,
}

impl WrittenBundle {
    fn read(bundle: &Path) -> Self {
        let own = ["manifest.json", "trace.json", "content/instructions.md"]
            .into_iter()
            .map(|path| (path, std::fs::read(bundle.join(path)).expect("own file")))
            .collect();
        let links = std::fs::read_dir(bundle.join("content/skills"))
            .expect("skills")
            .flatten()
            .map(|link| {
                (link.file_name().to_string_lossy().into_owned(), std::fs::read_link(link.path()).expect("link"))
            })
            .collect();
        WrittenBundle { own, links }
    }

    /// Writes the files and links plainly into a new folder.
    fn write(&self, folder: &Path) {
        std::fs::create_dir_all(folder.join("content/skills")).expect("mkdir");
        for (path, bytes) in &self.own {
            std::fs::write(folder.join(path), bytes).expect("write");
        }
        for (source, to) in &self.links {
            std::os::unix::fs::symlink(to, folder.join("content/skills").join(source)).expect("link");
        }
    }
}

/// The bundles' own files a cold convergence writes, and nothing else: for each of the
/// seven bundles of the reference home, a folder with its `trace.json`, `manifest.json`
/// and instructions and its provider links, in parallel. The contract fixes these files
/// and their formats; no floor of the issue counts them.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn floor_write_bundle_files(bencher: Bencher) {
    let estate = estate();
    let _ = outputs(estate);
    let bundles_dir = estate.root.join("reference/bundles");
    let bundles: Vec<WrittenBundle> = std::fs::read_dir(&bundles_dir)
        .expect("bundles")
        .flatten()
        .filter(|entry| entry.path().join("manifest.json").is_file())
        .map(|entry| WrittenBundle::read(&entry.path()))
        .collect();
    assert_eq!(bundles.len(), ROLES.len());
    bencher.with_inputs(numbered_homes(estate, "bundle-floor")).bench_local_values(|target| {
        bundles.par_iter().enumerate().for_each(|(index, bundle)| bundle.write(&target.join(index.to_string())));
    });
}

/// The writes of one edit and nothing else, for comparison with [`edit_one_skill`]: a
/// new bundle with the platform bundle's own files (`trace.json`, `manifest.json`,
/// instructions) and its provider links, one new tree and one new slice of links, and
/// the index and plan written anew, flushed and renamed over the old ones. No staging,
/// no journal, no verification, nothing computed.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn floor_write_one_edit(bencher: Bencher) {
    let estate = estate();
    let outputs = outputs(estate);
    let home = estate.root.join("reference");
    let index = std::fs::read_to_string(home.join("bundles/index.json")).expect("index");
    let id = index.split("\"platform\": \"").nth(1).and_then(|rest| rest.get(..16)).expect("platform bundle");
    let bundle = WrittenBundle::read(&home.join("bundles").join(id));
    let records: Vec<(&str, Vec<u8>)> = ["bundles/index.json", "repository-plan.json"]
        .into_iter()
        .map(|path| (path, std::fs::read(home.join(path)).expect("record")))
        .collect();
    let (tree, slice) = (&outputs.trees[0], &outputs.slices[0]);
    let target = new_home(estate, "edit-floor");
    std::fs::create_dir_all(target.join("bundles")).expect("bundles");
    let mut round = 0;
    bencher.bench_local(|| {
        round += 1;
        let store = target.join(format!("store-{round}"));
        std::fs::create_dir(&store).expect("mkdir");
        for folder in &tree.folders {
            std::fs::create_dir(store.join(folder)).expect("mkdir");
        }
        for (file, bytes) in &tree.files {
            std::fs::write(store.join(file), bytes).expect("write");
        }
        let slice_folder = store.join(&slice.name);
        std::fs::create_dir(&slice_folder).expect("mkdir");
        for (skill, to) in &slice.links {
            std::os::unix::fs::symlink(to, slice_folder.join(skill)).expect("link");
        }
        bundle.write(&target.join(format!("bundles/{round}")));
        // Flushed together, as the transaction flushes its temporaries.
        records.par_iter().for_each(|(path, bytes)| {
            let temporary = target.join(format!("{path}.new"));
            let mut file = std::fs::File::create(&temporary).expect("create");
            std::io::Write::write_all(&mut file, bytes).expect("write");
            file.sync_all().expect("flush");
        });
        for (path, _) in &records {
            std::fs::rename(target.join(format!("{path}.new")), target.join(path)).expect("rename");
        }
    });
}

/// Reading every input byte also means listing every folder: the catalogue listings
/// are inputs too. Walk the estate, list every folder, read and blake3 every file.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn floor_list_read_and_hash_every_input(bencher: Bencher) {
    let estate = estate();
    let repositories: Vec<PathBuf> = std::fs::read_dir(estate.projects.join("estate"))
        .expect("estate")
        .flatten()
        .map(|entry| entry.path())
        .collect();
    bencher.bench_local(|| {
        repositories
            .par_iter()
            .map(|repository| {
                walkdir::WalkDir::new(repository)
                    .into_iter()
                    .flatten()
                    .filter(|entry| entry.file_type().is_file())
                    .map(|entry| blake3::hash(&std::fs::read(entry.path()).expect("read")).as_bytes()[0] as u64)
                    .sum::<u64>()
            })
            .sum::<u64>()
    });
}

/// The no-op's check alone, in this process: stat every input and output the cache
/// records, comparing with the recorded metadata (no process start, no cache read).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn noop_check_in_process(bencher: Bencher) {
    let estate = estate();
    let home = new_home(estate, "noop-in-process");
    converge_process(estate, &home);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    converge_process(estate, &home);
    let text =
        acompose_driver::home::cache::read(&acompose_driver::home::Home::at(&home)).expect("cache").expect("written");
    let identity = text.lines().nth(1).and_then(|line| line.strip_prefix("identity\t")).expect("identity").to_owned();
    bencher.bench_local(|| {
        let mut counters = acompose_driver::home::cache::CheckCounters::default();
        assert!(acompose_driver::home::cache::unchanged_at_a_glance(&text, &identity, &mut counters).is_some());
    });
}
