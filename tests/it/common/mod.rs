//! Helpers shared by the integration tests: running the binary, fixtures, temp packages.

#![allow(dead_code, reason = "each test module and binary uses a different subset of these helpers")]

pub mod registry;

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, PartialEq, Eq)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<acompose_cli::output::CommandOutput> for Output {
    /// What a command run in-process printed, in the shape of a run of the binary.
    fn from(output: acompose_cli::output::CommandOutput) -> Self {
        Output { code: i32::from(output.code()), stdout: output.stdout_text(), stderr: output.stderr_text() }
    }
}

/// Runs the real binary in `directory` with a clean environment (no colour, no HOME).
pub fn acompose(directory: &Path, arguments: &[&str]) -> Output {
    acompose_with(directory, arguments, &[])
}

pub fn acompose_with(directory: &Path, arguments: &[&str], environment: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_acompose"));
    command
        .args(arguments)
        .current_dir(directory)
        .env_remove("ACOMPOSE_HOME")
        .env_remove("PROJECTS_ROOT")
        .env_remove("COLORTERM")
        .env("NO_COLOR", "1")
        .env("HOME", directory.join("no-home"));
    for (key, value) in environment {
        command.env(key, value);
    }
    let output = command.output().expect("run acompose");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs the real binary as [`acompose_with`] does, and its peak memory in KiB as the
/// kernel accounts it: the `ru_maxrss` of `getrusage(RUSAGE_CHILDREN)` in a parent whose
/// only child it is (python3, which the checks of `.ci` need anyway; the tests forbid
/// the `unsafe` a direct `wait4` would take).
pub fn acompose_peak(directory: &Path, arguments: &[&str]) -> (Output, u64) {
    const PARENT: &str = "import resource, subprocess, sys\n\
        code = subprocess.call(sys.argv[2:])\n\
        open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n\
        sys.exit(code)\n";
    let report = tempfile::NamedTempFile::new().expect("a report file");
    let mut command = Command::new("python3");
    command
        .arg("-c")
        .arg(PARENT)
        .arg(report.path())
        .arg(env!("CARGO_BIN_EXE_acompose"))
        .args(arguments)
        .current_dir(directory)
        .env_remove("ACOMPOSE_HOME")
        .env_remove("PROJECTS_ROOT")
        .env_remove("COLORTERM")
        .env("NO_COLOR", "1")
        .env("HOME", directory.join("no-home"));
    let output = command.output().expect("python3 runs (it measures the peak memory)");
    let peak = std::fs::read_to_string(report.path()).expect("the peak").trim().parse().expect("a number");
    let output = Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    (output, peak)
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The public example packages of the Go program, kept outside the repository.
pub fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat")
}

pub fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir_entries(from) {
        let relative = entry.strip_prefix(from).expect("under root");
        let target = to.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::copy(&entry, &target).expect("copy");
        }
    }
}

fn walkdir_entries(root: &Path) -> Vec<PathBuf> {
    let mut entries = vec![root.to_path_buf()];
    let mut index = 0;
    while index < entries.len() {
        let path = entries[index].clone();
        if path.is_dir() {
            let mut children: Vec<PathBuf> =
                std::fs::read_dir(&path).expect("read_dir").map(|entry| entry.expect("entry").path()).collect();
            children.sort();
            entries.extend(children);
        }
        index += 1;
    }
    entries
}

/// Writes the embedded roster:core package into `to`.
pub fn write_embedded(to: &Path) {
    for (relative, bytes) in acompose_roster::files() {
        let target = to.join(relative);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(&target, bytes).expect("write");
    }
}

/// Builds the package a `case.txt` describes into `to` and returns extra arguments.
///
/// Directives: `//- base core` (start from the embedded roster instead of
/// `fixtures/roster/base`), `//- args …`, `//- file PATH` (the following lines are the
/// whole file), `//- delete PATH`, `//- symlink PATH -> TARGET`, `//- bytes PATH hex…`,
/// and `//- replace PATH` followed by `<<< old` / `>>> new` line pairs (`\n` in them
/// stands for a newline; the old text must occur).
pub fn materialize_case(case: &Path, to: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(case).expect("read case");
    let lines: Vec<&str> = text.lines().collect();
    let base_core = lines.iter().any(|line| line.trim() == "//- base core");
    if base_core {
        write_embedded(to);
    } else {
        copy_dir(&fixtures().join("roster/base"), to);
    }
    let mut arguments = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        let Some(directive) = line.strip_prefix("//- ") else {
            panic!("{}: unexpected line `{line}`", case.display());
        };
        let (verb, rest) = directive.split_once(' ').unwrap_or((directive, ""));
        match verb {
            "base" => {}
            "args" => arguments.extend(rest.split_whitespace().map(str::to_owned)),
            "file" => {
                let mut body = String::new();
                while index < lines.len() && !lines[index].starts_with("//- ") {
                    body.push_str(lines[index]);
                    body.push('\n');
                    index += 1;
                }
                let target = to.join(rest);
                std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
                std::fs::write(target, body).expect("write");
            }
            "delete" => std::fs::remove_file(to.join(rest)).expect("delete"),
            "symlink" => {
                let (link, target) = rest.split_once(" -> ").expect("symlink PATH -> TARGET");
                std::os::unix::fs::symlink(target, to.join(link)).expect("symlink");
            }
            "bytes" => {
                let mut parts = rest.split_whitespace();
                let path = parts.next().expect("path");
                let bytes: Vec<u8> = parts.map(|hex| u8::from_str_radix(hex, 16).expect("hex byte")).collect();
                std::fs::write(to.join(path), bytes).expect("write");
            }
            "replace" => {
                let target = to.join(rest);
                let mut content = std::fs::read_to_string(&target).expect("read target");
                while index + 1 < lines.len() && lines[index].starts_with("<<< ") {
                    let old = lines[index][4..].replace("\\n", "\n");
                    let new = lines[index + 1]
                        .strip_prefix(">>> ")
                        .or_else(|| lines[index + 1].strip_prefix(">>>"))
                        .expect(">>> line")
                        .replace("\\n", "\n");
                    assert!(content.contains(&old), "{}: `{old}` not found in {rest}", case.display());
                    content = content.replacen(&old, &new, 1);
                    index += 2;
                }
                std::fs::write(&target, content).expect("write");
            }
            other => panic!("{}: unknown directive `{other}`", case.display()),
        }
    }
    arguments
}

/// `--person-source <compat person-package> --personality-library <compat library>`.
pub fn compat_source_arguments() -> Vec<String> {
    let compat = compat_dir();
    vec![
        "--person-source".to_owned(),
        compat.join("person-package").display().to_string(),
        "--personality-library".to_owned(),
        compat.join("personality-library").display().to_string(),
    ]
}

/// Runs the binary with a fixed head of arguments followed by owned ones.
pub fn acompose_args(directory: &Path, head: &[&str], tail: &[String]) -> Output {
    let mut arguments: Vec<&str> = head.to_vec();
    arguments.extend(tail.iter().map(String::as_str));
    acompose(directory, &arguments)
}

/// A trusted root built from the compat `provider-selector/roles.kdl`, a device-notes
/// repository holding `skills`, and a request composing `platform` from the root.
pub fn compat_selector_estate(root: &Path, skills: &[&str]) {
    let roles = std::fs::read_to_string(compat_dir().join("provider-selector/roles.kdl")).expect("roles.kdl");
    std::fs::create_dir_all(root.join("trusted/.agents")).expect("mkdir");
    std::fs::write(root.join("trusted/.agents/roles.kdl"), roles).expect("roles");
    for name in skills {
        let folder = root.join("projects/sample/device-notes/.agents/skills").join(name);
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: d\n---\n\n# {name}\n\nBody.\n"),
        )
        .expect("skill");
    }
    std::fs::write(
        root.join("request.kdl"),
        "compose {\n    role \"platform\"\n    delivery \"native-skills\"\n    source \"trusted\" root=\"trusted\"\n}\n",
    )
    .expect("request");
}

/// A generated estate for fault and crash tests, under `root`: a trusted root
/// `acme/root` declaring `repositories` skill repositories (two skills each) and one role
/// per repository, a home whose person source is a copy of `roster:core` in `home/person`
/// (so `person.json` can change), every file dated an hour back. Returns (home, projects).
pub fn generated_estate(root: &Path, repositories: usize) -> (PathBuf, PathBuf) {
    let projects = root.join("projects");
    let home = root.join("home");
    let skill = |name: &str, body: &str| format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\n{body}\n");
    let mut roles = String::from("repositories {\n");
    for index in 0..repositories {
        roles.push_str(&format!("    repository repo{index} path=\"example/repo{index}\"\n"));
        for name in ["alpha", "beta"] {
            let name = format!("skill{index}-{name}");
            write_file(
                &projects.join(format!("example/repo{index}/.agents/skills/{name}/SKILL.md")),
                &skill(&name, "Body."),
            );
        }
    }
    roles.push_str("}\nroles {\n    role platform {\n");
    for index in 0..repositories {
        roles.push_str(&format!("        use-repository repo{index}\n"));
    }
    roles.push_str("    }\n}\n");
    write_file(&projects.join("acme/root/.agents/roles.kdl"), &roles);
    write_file(&projects.join("acme/root/.agents/skills/estate-map/SKILL.md"), &skill("estate-map", "Where."));
    write_embedded(&home.join("person"));
    write_file(&home.join("agent-compose.yaml"), "person_source: person\noperating_context:\n  - acme/root\n");
    backdate_tree(root);
    (home, projects)
}

/// A change to every output of a generated estate: a skill body (a bundle and the
/// index), the trusted root's revision (the plan) and a role's purpose (`person.json`).
/// `round` makes each change new.
pub fn change_estate(home: &Path, projects: &Path, round: usize) {
    write_file(&projects.join("acme/root/.git/HEAD"), "ref: refs/heads/main\n");
    write_file(&projects.join("acme/root/.git/refs/heads/main"), &format!("{:040x}\n", round + 1));
    let skill = projects.join("example/repo0/.agents/skills/skill0-alpha/SKILL.md");
    write_file(
        &skill,
        &format!("---\nname: skill0-alpha\ndescription: The skill0-alpha skill.\n---\n\nRound {round}.\n"),
    );
    let role = home.join("person/roles/02-sysadmin.kdl");
    let text = std::fs::read_to_string(&role).expect("role");
    let start = text.find("purpose \"").expect("a purpose") + "purpose \"".len();
    let end = start + text[start..].find('"').expect("closing quote");
    write_file(&role, &format!("{}Round {round}.{}", &text[..start], &text[end..]));
    backdate_tree(home.join("person").as_path());
    backdate_tree(projects);
}

pub fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Dates every file and folder under `root` an hour back, so nothing counts as racily
/// fresh for the fingerprint cache.
pub fn backdate_tree(root: &Path) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for path in walkdir_entries(root) {
        let handle =
            if path.is_dir() { std::fs::File::open(&path) } else { std::fs::File::options().write(true).open(&path) };
        let _ = handle.and_then(|handle| handle.set_modified(hour_ago));
    }
}

/// The three outputs that must always agree — index, plan and `person.json` — each as its
/// length and a digest of its bytes (None when missing), short enough to read in a
/// failed assertion.
pub fn generation(home: &Path) -> [Option<String>; 3] {
    let digest = |path: PathBuf| {
        std::fs::read(path).ok().map(|bytes| {
            use std::hash::{Hash as _, Hasher as _};
            let mut hasher = std::hash::DefaultHasher::new();
            bytes.hash(&mut hasher);
            format!("{} bytes, {:016x}", bytes.len(), hasher.finish())
        })
    };
    [
        digest(home.join("bundles/index.json")),
        digest(home.join("repository-plan.json")),
        digest(home.join("sources/personality/person.json")),
    ]
}

/// Every file left by an interrupted writer anywhere under `home`: staging folders,
/// temporaries, transaction journals and prune journals.
pub fn debris(home: &Path) -> Vec<PathBuf> {
    walkdir_entries(home)
        .into_iter()
        .filter(|path| {
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
            name.starts_with(".staging-")
                || (name.starts_with(".acompose-") && name.ends_with(".tmp"))
                || name == ".acompose-transaction"
                || name == ".acompose-prune"
        })
        .collect()
}

/// What takes space in `home` without being used: bundle folders in `home/bundles` the
/// index does not name, and entries of the home's store no bundle of the home reaches.
/// Empty when space came back.
pub fn unused_space(home: &Path) -> Vec<String> {
    // The index's bundles and the roles' earlier ones it keeps (`ROLE@{1}` …) are used.
    let bytes = std::fs::read(home.join("bundles/index.json")).unwrap_or_default();
    let indexed: Vec<String> = acompose_engine::convergence::parse_index(&bytes)
        .map(|index| index.into_values().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(acompose_engine::convergence::parse_history(&bytes).into_values().flatten())
        .collect();
    let names = |folder: PathBuf| -> Vec<String> {
        std::fs::read_dir(folder)
            .map(|entries| entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    };
    let is_id = |name: &String| name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_hexdigit());
    let mut unused: Vec<String> = names(home.join("bundles"))
        .into_iter()
        .filter(|name| is_id(name) && !indexed.contains(name))
        .map(|name| format!("bundle {name}"))
        .collect();
    let store = acompose_driver::compose::store::Store::of_home(&acompose_driver::home::Home::at(home));
    let referenced = acompose_driver::convergence::gc::referenced(&acompose_driver::home::Home::at(home), &store);
    unused.extend(
        names(store.root().to_path_buf())
            .into_iter()
            .filter(|name| !name.starts_with('.') && !referenced.contains(name))
            .map(|name| format!("store entry {name}")),
    );
    unused.sort();
    unused
}

/// Dates every folder under `root` an hour back (folders listed within two seconds of a
/// convergence are listed again by the next one, as racily fresh).
pub fn backdate_folders(root: &Path) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in walkdir::WalkDir::new(root).into_iter().flatten().filter(|entry| entry.file_type().is_dir()) {
        std::fs::File::open(entry.path()).and_then(|folder| folder.set_modified(hour_ago)).expect("backdate folder");
    }
}

/// Runs git in `folder` with a fixed identity and no user or system configuration.
pub fn git(folder: &Path, arguments: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"])
        .args(arguments)
        .current_dir(folder)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every path under `root` (links not followed) with what it holds: a file's bytes as
/// text, a link's target, or `dir`.
pub fn tree_of(root: &Path) -> std::collections::BTreeMap<String, String> {
    let mut entries = std::collections::BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name().min_depth(1) {
        let entry = entry.expect("entry");
        let relative = entry.path().strip_prefix(root).expect("under root").to_string_lossy().into_owned();
        if relative == ".git" || relative.starts_with(".git/") {
            continue;
        }
        let kind = if entry.path_is_symlink() {
            format!("link -> {}", std::fs::read_link(entry.path()).expect("link").display())
        } else if entry.file_type().is_dir() {
            "dir".to_owned()
        } else {
            String::from_utf8_lossy(&std::fs::read(entry.path()).expect("file")).into_owned()
        };
        entries.insert(relative, kind);
    }
    entries
}

/// `acompose compose request.kdl --out out [--projects-root PROJECTS]` in `root`, run
/// in-process as the binary runs it there with `HOME` at `no-home` (where no home exists):
/// without `--projects-root` the projects root is the one that home would name.
pub fn compose_in_process(root: &Path, projects_root: Option<&str>) -> Output {
    use acompose_cli::compose::{ComposeArgs, Places, compose_output};
    let args = ComposeArgs {
        request: PathBuf::from("request.kdl"),
        out: Some(PathBuf::from("out")),
        projects_root: projects_root.map(PathBuf::from),
        explain: false,
        json: false,
        stats: false,
        store: None,
        standalone: false,
        strict: false,
        command: Vec::new(),
    };
    let places = Places {
        working_directory: root.to_path_buf(),
        home: Some(root.join("no-home/.agent-compose")),
        out: PathBuf::from("out"),
        projects: projects_root.map_or_else(|| root.join("no-home/projects"), PathBuf::from),
        defaults: acompose_driver::compose::request::RequestDefaults::default(),
    };
    Output::from(compose_output(&args, &places, &acompose_cli::terminal::Terminal::plain()))
}
