//! Isolation of People sessions with fake runners: `worktree` gives every session its own
//! `git worktree` of the project on a branch named for the Person and session, kept after
//! the end and removed by `people clean`; `session` runs the runner in a bubblewrap
//! sandbox that can read the project but write only its worktree and its own temporary
//! folder. The sandbox tests need Debian's `bubblewrap`; with
//! `ACOMPOSE_SANDBOX_TESTS=required` (as `.ci/run` sets) a missing `bwrap` fails them.

#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use acompose_people::document::person_bytes;
use acompose_people::session::{SessionRecord, Status, Timestamp};
use acompose_people::start::UnsupportedLimit;
use acompose_people::{Isolation, Person};

use acompose_driver::people::Workspace;
use acompose_driver::people::isolation::clean_worktrees;
use acompose_driver::people::session_runner::{LaunchOptions, start_session};
use acompose_driver::people::sessions::{Clock, FixedClock, StartOptions, review_session};
use tempfile::TempDir;

/// A workspace at `ws/` with the git project `project/` linked as `ws/projects/desk`,
/// fake runners in `bin/` and an `outside/` folder no runner should write.
struct Place {
    root: TempDir,
}

impl Place {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary folder");
        for folder in ["ws/people", "ws/projects", "project", "bin", "outside"] {
            fs::create_dir_all(root.path().join(folder)).expect("create a folder");
        }
        let project = root.path().join("project");
        fs::write(project.join("README"), "the project's own text\n").expect("write a project file");
        for arguments in [
            &["init", "--quiet", "--initial-branch=main"][..],
            &["add", "README"],
            &["-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "--quiet", "-m", "first"],
        ] {
            git(&project, arguments);
        }
        std::os::unix::fs::symlink(&project, root.path().join("ws/projects/desk")).expect("link the project");
        Place { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(&self.path("ws")).expect("the workspace opens")
    }

    fn person(&self, id: &str, isolation: Isolation) {
        let mut person = Person::new(id, id, "sales", "Sell paper.");
        person.isolation = Some(isolation);
        fs::write(self.path(&format!("ws/people/{id}.json")), person_bytes(&person)).expect("write a Person");
    }

    /// A fake `claude` that runs `body` in its working folder.
    fn runner(&self, body: &str) {
        let path = self.path("bin/claude");
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write a fake runner");
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("make it executable");
    }

    /// `bin/` first, then the system's folders (where `bwrap` and `git` are).
    fn path_variable(&self) -> std::ffi::OsString {
        format!("{}:/usr/local/bin:/usr/bin:/bin", self.path("bin").display()).into()
    }

    fn options(&self, person: &str) -> StartOptions {
        StartOptions {
            person_id: person.to_owned(),
            project_id: "desk".to_owned(),
            runner: "claude".to_owned(),
            model: None,
            task: None,
            roster: None,
            conversation: None,
        }
    }

    /// Reviews and runs one session of `person` to its end.
    fn run(&self, person: &str) -> SessionRecord {
        let reviewed = review_session(&self.workspace(), &self.options(person), Some(&self.path_variable()))
            .expect("the review passes");
        assert!(reviewed.review.unsupported.is_empty(), "{:?}", reviewed.review.unsupported);
        let options = LaunchOptions { grace: Duration::from_secs(2), ..LaunchOptions::default() };
        let handle = start_session(&self.workspace(), &reviewed, &options, clock()).expect("the session starts");
        if let Ok(mut reader) = handle.reader() {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut reader, &mut std::io::sink());
            });
        }
        handle.wait().expect("the session ends").record
    }

    fn people(&self, arguments: &[&str]) -> common::Output {
        let mut all: Vec<&str> = vec!["people"];
        all.extend_from_slice(arguments);
        let workspace = self.path("ws");
        let workspace = workspace.to_str().expect("a UTF-8 path");
        all.extend_from_slice(&["--workspace", workspace]);
        let path_variable = self.path_variable();
        let path_variable = path_variable.to_str().expect("a UTF-8 PATH");
        common::acompose_with(self.root.path(), &all, &[("PATH", path_variable)])
    }
}

fn git(folder: &Path, arguments: &[&str]) -> String {
    let output = Command::new("git").arg("-C").arg(folder).args(arguments).output().expect("git runs");
    assert!(output.status.success(), "git {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim_end().to_owned()
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(FixedClock(Timestamp::parse("2026-12-01T09:00:00Z").expect("a timestamp")))
}

fn later() -> FixedClock {
    FixedClock(Timestamp::parse("2026-12-01T10:00:00Z").expect("a timestamp"))
}

/// Whether the sandbox can be tested here: `bwrap` is installed, or the run demands it.
fn sandbox_available() -> bool {
    let found = ["/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"].iter().any(|path| Path::new(path).exists());
    let required = std::env::var("ACOMPOSE_SANDBOX_TESTS").is_ok_and(|value| value == "required");
    assert!(found || !required, "ACOMPOSE_SANDBOX_TESTS=required but bubblewrap (`bwrap`) is not installed");
    found
}

#[test]
fn worktree_isolation_gives_two_people_two_worktrees_on_their_own_branches() {
    let place = Place::new();
    place.person("dwight", Isolation::Worktree);
    place.person("jim", Isolation::Worktree);
    place.runner("pwd -P > where; git branch --show-current > branch; cat README > seen; exit 0");
    let dwight = place.run("dwight");
    let jim = place.run("jim");
    let project = fs::canonicalize(place.path("project")).expect("the project folder");
    for (record, person) in [(&dwight, "dwight"), (&jim, "jim")] {
        assert_eq!(record.status, Status::Completed, "{record:?}");
        let worktree = PathBuf::from(record.links.worktree.as_deref().expect("a worktree is recorded"));
        assert_eq!(record.cwd, worktree.display().to_string());
        assert_ne!(worktree, project);
        let branch = format!("people/{person}/{}", record.id);
        assert_eq!(record.links.branch.as_deref(), Some(branch.as_str()));
        assert_eq!(record.links.isolation, Some(Isolation::Worktree));
        assert_eq!(fs::read_to_string(worktree.join("where")).ok(), Some(format!("{}\n", worktree.display())));
        assert_eq!(fs::read_to_string(worktree.join("branch")).ok(), Some(format!("{branch}\n")));
        assert_eq!(fs::read_to_string(worktree.join("seen")).ok().as_deref(), Some("the project's own text\n"));
        assert!(git(&project, &["worktree", "list"]).contains(&worktree.display().to_string()));
    }
    assert_ne!(dwight.links.worktree, jim.links.worktree);
    assert!(!project.join("where").exists(), "the project's own working tree is untouched");

    let listed = place.people(&["sessions"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains(&format!("worktree isolation: {}", dwight.cwd)), "{}", listed.stdout);

    // The runners left files uncommitted: git keeps those worktrees unless forced.
    let kept = clean_worktrees(&place.workspace(), None, false, &later()).expect("clean runs");
    assert_eq!((kept.removed.len(), kept.refused.len()), (0, 2));
    let cleaned = place.people(&["clean", &dwight.id, "--force"]);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert!(cleaned.stdout.contains(&format!("branch people/dwight/{} kept", dwight.id)), "{}", cleaned.stdout);
    assert!(!Path::new(&dwight.cwd).exists());
    assert!(Path::new(&jim.cwd).exists());
    assert!(git(&project, &["branch", "--list"]).contains(&format!("people/dwight/{}", dwight.id)));
}

#[test]
fn worktree_isolation_refuses_a_project_that_is_no_git_repository() {
    let place = Place::new();
    place.person("dwight", Isolation::Worktree);
    place.runner("exit 0");
    fs::remove_dir_all(place.path("project/.git")).expect("remove the repository");
    let refused = review_session(&place.workspace(), &place.options("dwight"), Some(&place.path_variable()));
    let Err(acompose_driver::people::Stop::Invalid(message)) = refused else {
        panic!("the review must refuse: {:?}", refused.map(|reviewed| reviewed.review.cwd));
    };
    assert!(message.contains("git repository"), "{message}");
}

#[test]
fn session_isolation_writes_only_its_worktree_and_reads_the_project() {
    if !sandbox_available() {
        return;
    }
    let place = Place::new();
    place.person("creed", Isolation::Session);
    let outside = place.path("outside");
    let project = fs::canonicalize(place.path("project")).expect("the project folder");
    place.runner(&format!(
        "cat '{project}/README' > seen\n\
         if echo x > '{project}/escaped' 2>/dev/null; then echo wrote > project-write; else echo refused > project-write; fi\n\
         if echo x > '{outside}/escaped' 2>/dev/null; then echo wrote > outside-write; else echo refused > outside-write; fi\n\
         if echo x > \"$TMPDIR/scratch\"; then echo wrote > temporary-write; fi\n\
         exit 0",
        project = project.display(),
        outside = outside.display()
    ));
    let record = place.run("creed");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    assert_eq!(record.links.isolation, Some(Isolation::Session));
    let worktree = PathBuf::from(&record.cwd);
    let read = |name: &str| fs::read_to_string(worktree.join(name)).unwrap_or_default();
    assert_eq!(read("seen"), "the project's own text\n");
    assert_eq!(read("project-write"), "refused\n");
    assert_eq!(read("outside-write"), "refused\n");
    assert_eq!(read("temporary-write"), "wrote\n");
    assert!(!project.join("escaped").exists());
    assert!(!outside.join("escaped").exists());
}

#[test]
fn session_isolation_without_bubblewrap_is_reported_as_not_enforced() {
    let place = Place::new();
    place.person("creed", Isolation::Session);
    place.runner("exit 0");
    // Only `bin/` on PATH: no `bwrap` can be found there.
    let path_variable = place.path("bin").into_os_string();
    let reviewed =
        review_session(&place.workspace(), &place.options("creed"), Some(&path_variable)).expect("the review passes");
    assert_eq!(reviewed.review.unsupported, vec![UnsupportedLimit::Isolation(Isolation::Session)]);
    let refused = start_session(&place.workspace(), &reviewed, &LaunchOptions::default(), clock());
    assert!(refused.is_err(), "an unacknowledged missing sandbox is refused");
    let review = place.people(&["start", "creed", "--project", "desk", "--runner", "claude", "--dry-run"]);
    assert!(review.stdout.contains("isolation:     session: its own git worktree"), "{}", review.stdout);
}
