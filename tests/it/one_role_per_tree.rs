//! One role per git work tree: `project` refuses another role's projection above or
//! below its target in the same checkout (unless `--allow-foreign-context`), and
//! `project` and `launch` name a skill of the checkout that a harness shows beside, or
//! instead of, a role skill of its name; Gemini CLI, which reads skills only in the folder
//! it starts in, is named where that bites (`project`, `whoami`, `doctor`).

use std::path::{Path, PathBuf};

use crate::common::{Output, acompose_with, git, tree_of};

fn skill(name: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\nUse {name}.\n")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

const ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\" { skill \"machine-*\"; }\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role eval { use-repository benchmarks; }\n}\n";

/// A converged home with roles `platform` (skills `machine-cpu`, `machine-gpu`) and
/// `eval`, and a git checkout `work` with a package folder `packages/pkg2`.
struct Tree {
    _temporary: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
    package: PathBuf,
}

fn tree() -> Tree {
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path().canonicalize().expect("canonical");
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), ROLES);
    for name in ["machine-cpu", "machine-gpu"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name));
    }
    write(&projects.join("example/benchmarks/.agents/skills/bench-report/SKILL.md"), &skill("bench-report"));
    write(&root.join("home/agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    let work = root.join("work");
    let package = work.join("packages/pkg2");
    write(&package.join("README.md"), "# pkg2\n");
    git(&work, &["init", "--quiet"]);
    let tree = Tree { _temporary: temporary, root, work, package };
    let converged = tree.run(&tree.root, &["--projects-root", "projects"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
    tree
}

impl Tree {
    /// `acompose --home <home> ARGS` in `directory`.
    fn run(&self, directory: &Path, arguments: &[&str]) -> Output {
        let home = self.root.join("home");
        let mut full = vec!["--home", home.to_str().expect("utf-8")];
        full.extend_from_slice(arguments);
        acompose_with(directory, &full, &[])
    }

    fn project(&self, role: &str, layout: &str, target: &Path, extra: &[&str]) -> Output {
        let mut arguments = vec!["project", role, "--layout", layout, "--target", target.to_str().expect("utf-8")];
        arguments.extend_from_slice(extra);
        self.run(&self.root, &arguments)
    }
}

#[test]
fn another_roles_projection_above_the_target_refuses_project_until_allowed() {
    let tree = tree();
    let projected = tree.project("platform", "claude", &tree.work, &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let before = tree_of(&tree.root);
    let refused = tree.project("eval", "codex", &tree.package, &[]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    let work = tree.work.display().to_string();
    let stderr = refused.stderr.replace(&work, "WORK");
    assert!(stderr.contains("another role's projection is in the git work tree of `WORK/packages/pkg2`"), "{stderr}");
    assert!(stderr.contains("`WORK` holds a projection of `platform` (claude)"), "{stderr}");
    assert!(stderr.contains("--allow-foreign-context"), "{stderr}");
    assert_eq!(tree_of(&tree.root), before, "nothing was written");

    let allowed = tree.project("eval", "codex", &tree.package, &["--allow-foreign-context"]);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(
        allowed.stderr.replace(&work, "WORK").contains("warning: `WORK` holds a projection of `platform` (claude)"),
        "{}",
        allowed.stderr
    );
    assert!(tree.package.join(".agent-compose/projection.json").is_file());
}

#[test]
fn another_roles_projection_below_the_target_refuses_project_and_a_nested_checkout_does_not() {
    let tree = tree();
    let projected = tree.project("eval", "codex", &tree.package, &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let refused = tree.project("platform", "claude", &tree.work, &[]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    let stderr = refused.stderr.replace(&tree.work.display().to_string(), "WORK");
    assert!(stderr.contains("`WORK/packages/pkg2` holds a projection of `eval` (codex)"), "{stderr}");
    assert!(!tree.work.join(".agent-compose").exists(), "nothing was written");

    // The same projection in a checkout of its own inside the folder is another work tree.
    let other = tempfile::tempdir().expect("tempdir");
    let outer = other.path().canonicalize().expect("canonical").join("outer");
    let vendored = outer.join("vendor/lib");
    write(&vendored.join("README.md"), "# lib\n");
    git(&outer, &["init", "--quiet"]);
    git(&vendored, &["init", "--quiet"]);
    let inside = tree.project("eval", "codex", &vendored, &[]);
    assert_eq!(inside.code, 0, "{}", inside.stderr);
    let outside = tree.project("platform", "claude", &outer, &[]);
    assert_eq!(outside.code, 0, "{}", outside.stderr);
    assert!(!outside.stderr.contains("holds a projection"), "{}", outside.stderr);
}

#[test]
fn project_names_a_skill_of_the_checkout_that_doubles_a_role_skill_for_its_harness() {
    let tree = tree();
    write(&tree.package.join(".agents/skills/machine-cpu/SKILL.md"), &skill("machine-cpu"));
    write(&tree.package.join(".claude/skills/machine-gpu/SKILL.md"), &skill("machine-gpu"));
    write(&tree.package.join(".agents/skills/package-own/SKILL.md"), &skill("package-own"));
    let projected = tree.project("platform", "codex", &tree.work, &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let package = tree.package.display().to_string();
    let warnings: Vec<String> = projected
        .stderr
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .map(|line| line.replace(&package, "PKG"))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: Codex started in `PKG` or below lists the role skill `machine-cpu` twice: the role's and `PKG/.agents/skills/machine-cpu`"
        ]
    );
    let projected = tree.project("platform", "claude", &tree.work, &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let stderr = projected.stderr.replace(&package, "PKG");
    assert!(
        stderr.contains("warning: Claude Code started in `PKG` or below reads two skills named `machine-gpu`, the role's and `PKG/.claude/skills/machine-gpu`, and may use either"),
        "{stderr}"
    );
}

#[test]
fn gemini_cli_reading_skills_only_where_it_starts_is_said_by_project_whoami_and_doctor() {
    let tree = tree();
    let projected = tree.project("platform", "gemini", &tree.work, &[]);
    assert_eq!(projected.code, 0, "{}", projected.stderr);
    let note = "note: Gemini CLI reads a repository's skills only in the folder it starts in: started in a subfolder of `WORK` it sees none of the role's skills";
    let work = tree.work.display().to_string();
    assert!(projected.stderr.replace(&work, "WORK").contains(note), "{}", projected.stderr);
    // Codex reads the skills folders from the work tree's root down: no note.
    let other = tree.project("platform", "codex", &tree.package, &[]);
    assert_eq!(other.code, 0, "{}", other.stderr);
    assert!(!other.stderr.contains("note:"), "{}", other.stderr);

    // `packages` holds no projection: the nearest is the work tree's, above it.
    let below = tree.run(&tree.work.join("packages"), &["whoami"]);
    assert_eq!(below.code, 0, "{}", below.stderr);
    assert!(below.stderr.replace(&work, "WORK").contains(note), "{}", below.stderr);
    let at = tree.run(&tree.work, &["whoami"]);
    assert_eq!(at.code, 0, "{}", at.stderr);
    assert!(!at.stderr.contains("note:"), "{}", at.stderr);

    let doctor = tree.run(&tree.root, &["doctor"]);
    let line = doctor
        .stdout
        .lines()
        .find(|line| line.contains("in Gemini CLI"))
        .unwrap_or_else(|| panic!("no Gemini CLI line: {}", doctor.stdout));
    assert!(line.starts_with("note"), "{line}");
    assert!(line.contains("reads a repository's skills only in the folder it starts in"), "{line}");
}

/// A fake harness for `launch` that starts and ends.
fn fake_harness(bin: &Path, name: &str) {
    let path = bin.join(name);
    write(&path, "#!/bin/sh\nexit 0\n");
    let mut permissions = std::fs::metadata(&path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).expect("chmod");
}

#[test]
fn launch_names_the_role_skill_a_package_skill_shadows_or_doubles_for_its_harness() {
    let tree = tree();
    write(&tree.package.join(".agents/skills/machine-cpu/SKILL.md"), &skill("machine-cpu"));
    write(&tree.package.join(".claude/skills/machine-gpu/SKILL.md"), &skill("machine-gpu"));
    let bin = tree.root.join("bin");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let user = tree.root.join("user");
    std::fs::create_dir_all(&user).expect("user home");
    let home = tree.root.join("home");
    let projects = tree.root.join("projects");
    let package = tree.package.display().to_string();
    let mut seen = Vec::new();
    for harness in ["gemini", "codex", "claude"] {
        fake_harness(&bin, harness);
        let output = acompose_with(
            &tree.package,
            &["launch", "platform", harness, "--yes", "--projects-root", projects.to_str().expect("utf-8")],
            &[
                ("PATH", path.as_str()),
                ("HOME", user.to_str().expect("utf-8")),
                ("ACOMPOSE_HOME", home.to_str().expect("utf-8")),
            ],
        );
        assert_eq!(output.code, 0, "{harness}: {}", output.stderr);
        seen.extend(
            output.stderr.lines().filter(|line| line.contains("role skill")).map(|line| line.replace(&package, "PKG")),
        );
    }
    assert_eq!(
        seen,
        [
            "warning: Gemini CLI launched here uses `PKG/.agents/skills/machine-cpu` instead of the role skill `machine-cpu`",
            "warning: Codex launched here lists the role skill `machine-cpu` twice: the role's and `PKG/.agents/skills/machine-cpu`",
        ],
        "Claude Code uses its user skill, the role's, over a project skill of its name"
    );
}
