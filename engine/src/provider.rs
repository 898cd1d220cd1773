//! Trusted roots: `.agents/roles.kdl` declares skill-provider repositories, global
//! repositories and per-role use. Owns that grammar; resolution (who wins, what is
//! selected) is in `compose`.

use std::collections::{BTreeMap, BTreeSet};

use crate::db::SourceFile;
use crate::diagnostic::{Parsed, Span, sanitize};
use crate::person::reader::{Reader, is_slug};
use crate::selector::{Pattern, compile};
use crate::syntax::{Node, kdl_document};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepositoryDeclaration {
    pub id: String,
    /// `owner/repo`, relative to the projects root.
    pub path: String,
    /// `skill` selectors; empty for a direct repository (its whole catalogue).
    pub selectors: Vec<Pattern>,
    pub span: Span,
}

impl RepositoryDeclaration {
    /// A repository with `skill` children provides a bounded slice to the roles that use
    /// it.
    pub fn is_skill_provider(&self) -> bool {
        !self.selectors.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RoleUse {
    pub slug: String,
    pub span: Span,
    pub repositories: Vec<(String, Span)>,
    pub composed: Vec<Pattern>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TrustedRoot {
    pub repositories: Vec<RepositoryDeclaration>,
    pub globals: Vec<(String, Span)>,
    pub roles: Vec<RoleUse>,
}

impl TrustedRoot {
    pub fn repository(&self, id: &str) -> Option<&RepositoryDeclaration> {
        self.repositories.iter().find(|repository| repository.id == id)
    }

    pub fn role(&self, slug: &str) -> Option<&RoleUse> {
        self.roles.iter().find(|role| role.slug == slug)
    }

    /// The roles that use a repository, in declaration order.
    pub fn users_of(&self, id: &str) -> Vec<&str> {
        self.roles
            .iter()
            .filter(|role| role.repositories.iter().any(|(used, _)| used == id))
            .map(|role| role.slug.as_str())
            .collect()
    }
}

fn read_patterns(reader: &mut Reader<'_>, node: &Node) -> Option<Pattern> {
    reader.allowed_properties(node, &[]);
    reader.no_children(node);
    let (text, span) = reader.single_string(node)?;
    if let Err(error) = compile(&text) {
        reader.report(
            "invalid-selector",
            span,
            format!("`{}` is not a valid glob: {}", sanitize(&text), error.kind()),
            "use `*` and `?` wildcards over skill names",
        );
        return None;
    }
    Some(Pattern { text, span })
}

/// How many declared repositories an `unknown-repository` hint names.
const KNOWN_IN_HINT: usize = 10;

/// Parses one `.agents/roles.kdl`.
#[salsa::tracked(returns(ref))]
pub fn trusted_root(db: &dyn salsa::Database, file: SourceFile) -> Parsed<TrustedRoot> {
    let path = file.display_path(db);
    if let Some(too_large) = crate::limits::ROLES_KDL.check(file.bytes(db).len(), &path) {
        return Parsed::new(TrustedRoot::default(), vec![too_large]);
    }
    let parsed = kdl_document(db, file);
    let mut diagnostics = parsed.diagnostics.clone();
    let mut root = TrustedRoot::default();
    if !diagnostics.is_empty() {
        return Parsed::new(root, diagnostics);
    }
    let mut reader = Reader::new(&path);
    let mut seen = BTreeMap::new();
    // Ids and slugs seen so far: a lookup per declaration through these sets keeps a
    // root of many repositories linear (a scan of the list each time was quadratic).
    let mut repository_ids: BTreeSet<String> = BTreeSet::new();
    let mut role_slugs: BTreeSet<String> = BTreeSet::new();
    for node in &parsed.value.nodes {
        match node.name.as_str() {
            "repositories" => {
                if !reader.singleton(&mut seen, node) {
                    continue;
                }
                reader.argument_count(node, 0, Some(0));
                for child in &node.children {
                    match child.name.as_str() {
                        "repository" => {
                            reader.allowed_properties(child, &["path"]);
                            let Some((id, span)) = reader.single_string(child) else { continue };
                            if !reader.slug(&id, span, "repository id") {
                                continue;
                            }
                            if repository_ids.contains(&id) {
                                reader.report(
                                    "duplicate-repository",
                                    span,
                                    format!("repository `{id}` is declared twice"),
                                    "keep one",
                                );
                                continue;
                            }
                            let Some((repository_path, path_span)) = reader.string_property(child, "path", true) else {
                                continue;
                            };
                            if !crate::converge::is_repository_path(&repository_path) {
                                reader.report(
                                    "repository-path",
                                    path_span,
                                    format!("`{}` is not an `owner/repo` path", sanitize(&repository_path)),
                                    "repository paths are `owner/repo`, relative to the projects root",
                                );
                                continue;
                            }
                            let mut selectors = Vec::new();
                            for selector in &child.children {
                                if selector.name != "skill" {
                                    reader.unknown_node(selector, "a `repository`", &["skill"]);
                                    continue;
                                }
                                if let Some(pattern) = read_patterns(&mut reader, selector) {
                                    selectors.push(pattern);
                                }
                            }
                            repository_ids.insert(id.clone());
                            root.repositories.push(RepositoryDeclaration {
                                id,
                                path: repository_path,
                                selectors,
                                span,
                            });
                        }
                        "global" => {
                            reader.allowed_properties(child, &[]);
                            reader.no_children(child);
                            if let Some((id, span)) = reader.single_string(child) {
                                root.globals.push((id, span));
                            }
                        }
                        _ => reader.unknown_node(child, "`repositories`", &["repository", "global"]),
                    }
                }
            }
            "roles" => {
                if !reader.singleton(&mut seen, node) {
                    continue;
                }
                reader.argument_count(node, 0, Some(0));
                for child in &node.children {
                    if child.name != "role" {
                        reader.unknown_node(child, "`roles`", &["role"]);
                        continue;
                    }
                    reader.allowed_properties(child, &[]);
                    let Some((slug, span)) = reader.single_string(child) else { continue };
                    if !is_slug(&slug) {
                        reader.slug(&slug, span, "role slug");
                        continue;
                    }
                    if !role_slugs.insert(slug.clone()) {
                        reader.report(
                            "duplicate-role",
                            span,
                            format!("role `{slug}` is declared twice"),
                            "merge the two",
                        );
                        continue;
                    }
                    let mut role = RoleUse { slug, span, repositories: Vec::new(), composed: Vec::new() };
                    for entry in &child.children {
                        match entry.name.as_str() {
                            "use-repository" => {
                                reader.allowed_properties(entry, &[]);
                                reader.no_children(entry);
                                if let Some(reference) = reader.single_string(entry) {
                                    role.repositories.push(reference);
                                }
                            }
                            "composed-skill" => {
                                if let Some(pattern) = read_patterns(&mut reader, entry) {
                                    role.composed.push(pattern);
                                }
                            }
                            _ => reader.unknown_node(entry, "a `role`", &["use-repository", "composed-skill"]),
                        }
                    }
                    root.roles.push(role);
                }
            }
            _ => reader.unknown_node(node, "`roles.kdl`", &["repositories", "roles"]),
        }
    }
    // References resolve.
    let references: Vec<(String, Span)> = root
        .globals
        .iter()
        .cloned()
        .chain(root.roles.iter().flat_map(|role| role.repositories.iter().cloned()))
        .collect();
    // The hint names the declared repositories once, and only the first few of them, so
    // that many unknown references do not each repeat a list as long as the root.
    let known_hint = {
        let known: Vec<&str> =
            root.repositories.iter().take(KNOWN_IN_HINT).map(|repository| repository.id.as_str()).collect();
        match root.repositories.len() {
            0 => "declare it first".to_owned(),
            count if count > KNOWN_IN_HINT => {
                format!("declared: {}, and {} more", known.join(", "), count - KNOWN_IN_HINT)
            }
            _ => format!("declared: {}", known.join(", ")),
        }
    };
    for (id, span) in references {
        if !repository_ids.contains(&id) {
            reader.report(
                "unknown-repository",
                span,
                format!("repository `{}` is not declared in `repositories`", sanitize(&id)),
                known_hint.clone(),
            );
        }
    }
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(root, crate::diagnostic::bound_per_file(diagnostics))
}

/// What one role sees of a trusted root: every repository, the globals, the
/// repositories it uses, who uses each repository, its own composed-skill selectors and,
/// per composed skill of the root, the other roles whose selectors match it. A firewall:
/// editing another role's block re-plans this role only when this view changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RoleView {
    pub roles_file: Option<SourceFile>,
    pub repositories: Vec<RepositoryDeclaration>,
    pub globals: Vec<String>,
    pub used: Vec<String>,
    pub users: BTreeMap<String, Vec<String>>,
    pub composed: Vec<Pattern>,
    pub composed_elsewhere: BTreeMap<String, Vec<String>>,
    /// Each repository id's position in `repositories`.
    pub repository_positions: BTreeMap<String, usize>,
}

impl RoleView {
    /// A declared repository by id, through [`RoleView::repository_positions`] (a scan per
    /// lookup made a role using many repositories quadratic).
    pub fn repository(&self, id: &str) -> Option<&RepositoryDeclaration> {
        self.repository_positions.get(id).and_then(|position| self.repositories.get(*position))
    }
}

/// Every declared repository with the roles that use it, in declaration order, built in
/// one pass over the roles (asking [`TrustedRoot::users_of`] per repository is quadratic).
fn users_by_repository(root: &TrustedRoot) -> BTreeMap<String, Vec<String>> {
    let mut users: BTreeMap<String, Vec<String>> =
        root.repositories.iter().map(|repository| (repository.id.clone(), Vec::new())).collect();
    for role in &root.roles {
        let mut counted: BTreeSet<&str> = BTreeSet::new();
        for (used, _) in &role.repositories {
            if counted.insert(used.as_str())
                && let Some(slugs) = users.get_mut(used)
            {
                slugs.push(role.slug.clone());
            }
        }
    }
    users
}

/// The view of one role on the trusted root of `catalogue` (empty without `roles.kdl`).
#[salsa::tracked(returns(ref))]
pub fn role_view(db: &dyn salsa::Database, catalogue: crate::catalogue::Catalogue, role: String) -> Parsed<RoleView> {
    let names = crate::catalogue::catalogue_names(db, catalogue);
    let Some(roles_file) = names.roles else { return Parsed::new(RoleView::default(), Vec::new()) };
    let parsed = trusted_root(db, roles_file);
    let root = &parsed.value;
    let matchers: Vec<(&str, crate::selector::Matcher)> = root
        .roles
        .iter()
        .filter(|other| other.slug != role && !other.composed.is_empty())
        .map(|other| (other.slug.as_str(), crate::selector::Matcher::new(&other.composed)))
        .collect();
    let composed_elsewhere = names
        .composed
        .iter()
        .map(|name| {
            let others: Vec<String> = matchers
                .iter()
                .filter(|(_, matcher)| !matcher.matches(name).is_empty())
                .map(|(slug, _)| (*slug).to_owned())
                .collect();
            (name.clone(), others)
        })
        .filter(|(_, others)| !others.is_empty())
        .collect();
    let own = root.role(&role);
    let view = RoleView {
        roles_file: Some(roles_file),
        repositories: root.repositories.clone(),
        globals: root.globals.iter().map(|(id, _)| id.clone()).collect(),
        used: own.map(|own| own.repositories.iter().map(|(id, _)| id.clone()).collect()).unwrap_or_default(),
        users: users_by_repository(root),
        composed: own.map(|own| own.composed.clone()).unwrap_or_default(),
        composed_elsewhere,
        repository_positions: root
            .repositories
            .iter()
            .enumerate()
            .map(|(position, repository)| (repository.id.clone(), position))
            .collect(),
    };
    Parsed::new(view, parsed.diagnostics.clone())
}
