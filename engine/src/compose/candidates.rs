//! The providers after the person package, in precedence order: the request sources,
//! then each trusted root's global repositories, the repositories the role uses, and
//! every other declared repository (excluded); and the one namespace of their ids.

use std::collections::{BTreeMap, BTreeSet};

use crate::db::SourceFile;
use crate::provider::{RepositoryDeclaration, RoleView, role_view};

use super::{Admission, Candidate, PERSON_SOURCE_ID, RepositoryInput, Resolver, SkillListing, SourceKind};

/// A trusted root among the request sources: its id, its `roles.kdl` and the role's view of it.
struct TrustedRootSource<'db> {
    id: String,
    roles_file: SourceFile,
    view: &'db RoleView,
}

/// The providers listed so far, and which repositories of which trusted root they are.
struct CandidateList<'db> {
    candidates: Vec<Candidate<'db>>,
    /// (trusted root id, repository id) of every repository listed.
    listed: BTreeSet<(String, String)>,
}

/// The repositories the projects root holds, looked up by `owner/repo` path.
struct RepositoryInputs<'a> {
    // Looked up by path once per repository: a map keeps a root of many repositories linear.
    by_path: BTreeMap<&'a str, &'a RepositoryInput>,
}

impl<'a> RepositoryInputs<'a> {
    /// Indexes the repositories by path; the first input of a path wins.
    fn new(repositories: &'a [RepositoryInput]) -> Self {
        // Collected in reverse so that, as with a scan, the first input of a path wins.
        let by_path = repositories.iter().rev().map(|repository| (repository.path.as_str(), repository)).collect();
        RepositoryInputs { by_path }
    }

    /// A provider for a trusted root's repository, with its catalogue when the projects root holds it.
    fn candidate<'db>(
        &self,
        (id, declared): (&str, (SourceFile, crate::diagnostic::Span)),
        path: &str,
        category: &'static str,
        scope: String,
        admission: Admission,
    ) -> Candidate<'db> {
        let input = self.by_path.get(path).copied();
        Candidate {
            id: id.to_owned(),
            category,
            scope,
            location: path.to_owned(),
            path_key: input.map_or_else(|| format!("projects/{path}"), |input| input.path_key.clone()),
            catalogue: input.map(|input| input.catalogue),
            required: true,
            is_request_source: false,
            selectors: match &admission {
                Admission::Selector { patterns, .. } => patterns.clone(),
                _ => Vec::new(),
            },
            admission,
            view: None,
            declaration: (Some(declared.0), Some(declared.1)),
        }
    }
}

/// The category of a declared repository: a skill provider when it has `skill` selectors.
fn repository_category(repository: &RepositoryDeclaration) -> &'static str {
    if repository.is_skill_provider() { "skill-provider" } else { "ordinary-catalogue" }
}

impl<'db> Resolver<'db> {
    /// Lists every provider after the person package, in precedence order: request sources,
    /// then each trusted root's global repositories, then the repositories the role uses,
    /// then every other declared repository (excluded).
    pub(super) fn gather_candidates(&mut self) -> Vec<Candidate<'db>> {
        let db = self.db;
        let repositories = RepositoryInputs::new(self.composition.repositories(db));
        let (candidates, trusted_roots) = self.request_candidates();
        let mut list = CandidateList { candidates, listed: BTreeSet::new() };
        list_global_repositories(&mut list, &trusted_roots, &repositories);
        list_used_repositories(&mut list, &trusted_roots, &repositories, &self.slug);
        list_other_repositories(&mut list, &trusted_roots, &repositories);
        self.check_source_ids(&list.candidates);
        list.candidates
    }

    /// Lists the request sources, each admitted whole, and the trusted roots among them.
    fn request_candidates(&mut self) -> (Vec<Candidate<'db>>, Vec<TrustedRootSource<'db>>) {
        let db = self.db;
        let mut request_sources = Vec::new();
        let mut trusted_roots = Vec::new();
        for source in self.composition.sources(db) {
            let mut view = None;
            if source.kind == SourceKind::Root && !source.catalogue.available(db) {
                self.incomplete_roots = true;
            }
            if source.kind == SourceKind::Root && source.catalogue.available(db) {
                let parsed = role_view(db, source.catalogue, self.slug.clone());
                self.incomplete_roots |= parsed.has_errors();
                self.diagnostics.extend(parsed.diagnostics.iter().cloned());
                if let Some(roles_file) = parsed.value.roles_file {
                    trusted_roots.push(TrustedRootSource { id: source.id.clone(), roles_file, view: &parsed.value });
                    view = Some(&parsed.value);
                }
            }
            request_sources.push(Candidate {
                id: source.id.clone(),
                category: "ordinary-catalogue",
                scope: "explicit".to_owned(),
                location: source.location.clone(),
                path_key: source.path_key.clone(),
                catalogue: Some(source.catalogue),
                required: source.required,
                is_request_source: true,
                admission: Admission::Whole {
                    cause: "operating-context",
                    reason: "named as explicit operating context (by the request or the host configuration)".to_owned(),
                },
                view,
                selectors: Vec::new(),
                declaration: (None, source.span),
            });
        }
        (request_sources, trusted_roots)
    }

    /// Reports source ids that name more than one provider, or the person package.
    fn check_source_ids(&mut self, candidates: &[Candidate]) {
        // Source ids are unique across the request and every trusted root.
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        for candidate in candidates {
            *ids.entry(candidate.id.clone()).or_default() += 1;
        }
        for (id, count) in ids {
            if count > 1 || id == PERSON_SOURCE_ID {
                self.error(
                    "duplicate-source-id",
                    self.request_path.clone(),
                    None,
                    format!("source id `{id}` names more than one provider"),
                    "source ids of the request and repository ids of trusted roots share one namespace; rename one",
                );
            }
        }
    }
}

/// Lists each trusted root's `global` repositories, which every role receives.
fn list_global_repositories(
    list: &mut CandidateList<'_>,
    trusted_roots: &[TrustedRootSource<'_>],
    repositories: &RepositoryInputs<'_>,
) {
    for root in trusted_roots {
        let root_id = &root.id;
        for id in &root.view.globals {
            let Some(repository) = root.view.repository(id) else { continue };
            list.listed.insert((root_id.clone(), id.clone()));
            // A global repository with `skill` selectors gives every role its bounded slice.
            let admission = if repository.is_skill_provider() {
                Admission::Selector {
                    patterns: repository.selectors.clone(),
                    roles_file: root.roles_file,
                    reason: format!(
                        "declared `global` in the trusted root `{root_id}`, bounded by its `skill` selectors; every role receives the slice"
                    ),
                }
            } else {
                Admission::Whole {
                    cause: "global",
                    reason: format!("declared `global` in the trusted root `{root_id}`; every role receives it"),
                }
            };
            let category = repository_category(repository);
            list.candidates.push(repositories.candidate(
                (id, (root.roles_file, repository.span)),
                &repository.path,
                category,
                "global".to_owned(),
                admission,
            ));
        }
    }
}

/// Lists the repositories the role uses (`use-repository`) that are not global.
fn list_used_repositories(
    list: &mut CandidateList<'_>,
    trusted_roots: &[TrustedRootSource<'_>],
    repositories: &RepositoryInputs<'_>,
    slug: &str,
) {
    for root in trusted_roots {
        let root_id = &root.id;
        for id in &root.view.used {
            let Some(repository) = root.view.repository(id) else { continue };
            if list.listed.contains(&(root_id.clone(), id.clone())) {
                continue;
            }
            list.listed.insert((root_id.clone(), id.clone()));
            let admission = if repository.is_skill_provider() {
                Admission::Selector {
                    patterns: repository.selectors.clone(),
                    roles_file: root.roles_file,
                    reason: format!(
                        "`use-repository {id}` in role `{slug}` of trusted root `{root_id}`, bounded by its `skill` selectors"
                    ),
                }
            } else {
                Admission::Whole {
                    cause: "direct",
                    reason: format!(
                        "`use-repository {id}` in role `{slug}` of trusted root `{root_id}`; the whole catalogue"
                    ),
                }
            };
            let category = repository_category(repository);
            let scope = format!("role:{slug}");
            let declared = (id.as_str(), (root.roles_file, repository.span));
            list.candidates.push(repositories.candidate(declared, &repository.path, category, scope, admission));
        }
    }
}

/// Lists every other declared repository, excluded: used only by other roles, or by none.
fn list_other_repositories(
    list: &mut CandidateList<'_>,
    trusted_roots: &[TrustedRootSource<'_>],
    repositories: &RepositoryInputs<'_>,
) {
    for root in trusted_roots {
        let root_id = &root.id;
        for repository in &root.view.repositories {
            if list.listed.contains(&(root_id.clone(), repository.id.clone())) {
                continue;
            }
            let users = root.view.users.get(&repository.id).cloned().unwrap_or_default();
            let (cause, reason, scope) = if users.is_empty() {
                (
                    "not-admitted",
                    format!("declared in trusted root `{root_id}` but used by no role and not global"),
                    "none".to_owned(),
                )
            } else {
                (
                    "role-excluded",
                    format!("admitted only for role(s) {}", users.join(", ")),
                    format!("role:{}", users[0]),
                )
            };
            let mut candidate = repositories.candidate(
                (&repository.id, (root.roles_file, repository.span)),
                &repository.path,
                repository_category(repository),
                scope,
                Admission::Excluded { cause, reason, skills: SkillListing::Listed },
            );
            // Keep the selector visible in the excluded provider's report.
            candidate.selectors = repository.selectors.clone();
            list.candidates.push(candidate);
        }
    }
}
