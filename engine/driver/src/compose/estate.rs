//! The estate as composition reads it: the repositories the trusted roots' `roles.kdl`
//! declare, read under the projects root with their revisions, the estate's own
//! diagnostics (roles missing from the roster, a repository declared twice), and the
//! projects root named in an unavailable repository's diagnostic. Shared by `compose`
//! requests and estate convergence.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::compose::{CompositionSource, RepositoryInput, SourceKind};
use acompose_engine::diagnostic::sanitize;
use acompose_engine::person::PersonModel;
use acompose_engine::provider::trusted_root;
use acompose_engine::selector::Pattern;
use acompose_engine::{Database, Diagnostic};

use crate::compose::load::{Loader, label_of};
use crate::error::{Findings, HostError};

/// `owner/repo` paths as folders under the projects root: where the loader finds each on
/// disk, and its label made from the path as given.
pub fn roots_under(loader: &Loader, projects: &Path, repositories: &[String]) -> Vec<(PathBuf, String)> {
    repositories
        .iter()
        .map(|repository| {
            let path = projects.join(repository);
            let label = label_of(&path);
            (loader.on_disk(&path), label)
        })
        .collect()
}

/// The revision and resolved identity of each root (looked up again where `fresh`, or
/// where the loader re-read the root since).
pub fn facts(loader: &mut Loader, roots: &[(PathBuf, String)], fresh: bool) -> Vec<(Option<String>, String)> {
    let keys = crate::compose::load::PathKeys::default();
    loader.root_facts(roots, fresh, |path| (git_revision(path), keys.path_key(path)))
}

/// The repositories trusted roots declare, as read under the projects root.
pub struct TrustedRepositories {
    pub inputs: Vec<RepositoryInput>,
    /// Their folders and labels, in the same order.
    pub roots: Vec<(PathBuf, String)>,
    /// `owner/repo` → the revision its `.git` names.
    pub revisions: BTreeMap<String, String>,
}

/// Reads (in parallel; only those not read yet unless `fresh`) every repository the
/// trusted roots among `sources` declare. Shared by `compose` and estate convergence.
pub fn trusted_repositories(
    db: &mut Database,
    loader: &mut Loader,
    sources: &[CompositionSource],
    projects: &Path,
    fresh: bool,
) -> TrustedRepositories {
    // First-seen order, deduplicated through a set: a roles.kdl may name 100,000 paths.
    let mut paths: Vec<String> = Vec::new();
    // The `skill` selectors of each path's declarations (empty: one uses it whole).
    let mut selectors: std::collections::HashMap<String, Option<Vec<Pattern>>> = std::collections::HashMap::new();
    for source in sources.iter().filter(|source| source.kind == SourceKind::Root) {
        let Some(roles_file) = acompose_engine::catalogue::catalogue_names(db, source.catalogue).roles else {
            continue;
        };
        for repository in &trusted_root(db, roles_file).value.repositories {
            let held = selectors.entry(repository.path.clone()).or_insert_with(|| {
                paths.push(repository.path.clone());
                Some(Vec::new())
            });
            match held {
                Some(patterns) if !repository.selectors.is_empty() => patterns.extend(repository.selectors.clone()),
                _ => *held = None,
            }
        }
    }
    let roots = roots_under(loader, projects, &paths);
    for ((root, _), path) in roots.iter().zip(&paths) {
        // A path some declaration uses whole keeps every skill (an empty list).
        let held = selectors.remove(path).map(Option::unwrap_or_default);
        loader.hold_skills(root, held);
    }
    let catalogues = loader.catalogues(db, &roots, fresh);
    let mut revisions = BTreeMap::new();
    let mut inputs = Vec::new();
    for ((path, catalogue), (revision, path_key)) in paths.iter().zip(catalogues).zip(facts(loader, &roots, fresh)) {
        if let Some(revision) = revision {
            revisions.insert(path.clone(), revision);
        }
        inputs.push(RepositoryInput { path: path.clone(), path_key, catalogue });
    }
    TrustedRepositories { inputs, roots, revisions }
}

/// The files a revision is read from (`.git/HEAD`, the branch's ref, `packed-refs`), to
/// fingerprint: a commit must make the next run converge again.
pub fn revision_sources(repository: &Path) -> Vec<PathBuf> {
    let git = repository.join(".git");
    let mut paths = vec![git.join("HEAD")];
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(reference) = head.trim().strip_prefix("ref: ")
        && !reference.contains("..")
    {
        paths.push(git.join(reference));
        paths.push(git.join("packed-refs"));
    }
    paths
}

/// The revision `.git/HEAD` names, without running git: a detached hash, or the hash of
/// the branch it points to (loose ref or packed-refs), or the branch name.
pub fn git_revision(repository: &Path) -> Option<String> {
    let git = repository.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned())
            .filter(|hash| hash.len() >= 7 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()));
    };
    if reference.contains("..") {
        return None;
    }
    if let Ok(hash) = std::fs::read_to_string(git.join(reference)) {
        return Some(hash.trim().to_owned());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).unwrap_or_default();
    packed
        .lines()
        .filter_map(|line| line.split_once(' '))
        .find(|(_, name)| *name == reference)
        .map(|(hash, _)| hash.to_owned())
        .or_else(|| Some(reference.trim_start_matches("refs/heads/").to_owned()))
}

/// The `owner/repo` path a `source-unavailable` diagnostic names: the engine's message
/// ends "… is unavailable: `<location>` does not exist".
pub fn unavailable_location(diagnostic: &Diagnostic) -> Option<&str> {
    (diagnostic.code == "source-unavailable")
        .then(|| diagnostic.message.rsplit_once("is unavailable: `")?.1.strip_suffix("` does not exist"))
        .flatten()
}

/// `error` with the projects root named in every `source-unavailable` diagnostic about a
/// repository read under it: where it was looked for, and how to change the root.
pub fn name_projects_root(error: HostError, projects: &Path, repositories: &[String]) -> HostError {
    let HostError::Diagnostics { subject, mut findings } = error else { return error };
    name_projects_root_in(&mut findings, projects, repositories);
    HostError::Diagnostics { subject, findings }
}

/// [`name_projects_root`] on findings.
pub fn name_projects_root_in(findings: &mut Findings, projects: &Path, repositories: &[String]) {
    let root = std::path::absolute(projects).unwrap_or_else(|_| projects.to_path_buf());
    // A set: a roles.kdl may name 100,000 repositories, each one missing.
    let repositories: std::collections::HashSet<&str> = repositories.iter().map(String::as_str).collect();
    for diagnostic in &mut findings.diagnostics {
        let Some(repository) = unavailable_location(diagnostic).filter(|location| repositories.contains(location))
        else {
            continue;
        };
        let hint = format!(
            "looked for `{}` under the projects root `{}`; change the root with `--projects-root DIR`, `$PROJECTS_ROOT` or `projects_root:` in agent-compose.yaml",
            sanitize(repository),
            sanitize(&root.display().to_string())
        );
        diagnostic.hints.push(hint);
    }
}

/// What the trusted roots among `sources` say wrongly about the whole estate, each a
/// warning (an error under skill policy `strict`): roles they name that `model` lacks
/// (with the closest roster role), and a repository path declared twice so that one of
/// `roles` loses a selection (`provider::duplicate_paths`).
pub fn estate_diagnostics(
    db: &Database,
    sources: &[CompositionSource],
    model: &PersonModel,
    policy: acompose_engine::skill_rules::SkillPolicy,
    roles: &[&str],
) -> Vec<Diagnostic> {
    let slugs: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
    let strict = policy == acompose_engine::skill_rules::SkillPolicy::Strict;
    let roots: Vec<acompose_engine::SourceFile> = sources
        .iter()
        .filter(|source| source.kind == SourceKind::Root && source.catalogue.available(db))
        .filter_map(|source| acompose_engine::catalogue::catalogue_names(db, source.catalogue).roles)
        .collect();
    let context: Vec<String> = sources.iter().map(|source| source.location.clone()).collect();
    let mut diagnostics: Vec<Diagnostic> = roots
        .iter()
        .flat_map(|roles_file| {
            acompose_engine::provider::roles_missing_from_roster(db, *roles_file, &model.source, &slugs, strict)
        })
        .collect();
    let roles: Vec<String> = roles.iter().map(|role| (*role).to_owned()).collect();
    let estate = acompose_engine::provider::EstateRoots::new(db, roots, context, roles, strict);
    diagnostics.extend(acompose_engine::provider::duplicate_paths(db, estate).iter().cloned());
    diagnostics
}
