//! Trusted roots: `.agents/roles.kdl` declares skill-provider repositories, global
//! repositories and per-role use. Owns that grammar; resolution (who wins, what is
//! selected) is in `compose`.

use std::collections::{BTreeMap, BTreeSet};

use crate::db::SourceFile;
use crate::diagnostic::{Parsed, Span, sanitize};
use crate::limits::{REPOSITORIES, ROLES, SELECTORS};
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
    pub(crate) fn is_skill_provider(&self) -> bool {
        !self.selectors.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RoleUse {
    pub slug: String,
    pub span: Span,
    pub repositories: Vec<(String, Span)>,
    pub composed: Vec<Pattern>,
    /// `mcp-server` references: servers of the home's MCP inventory the role receives.
    pub mcp_servers: Vec<(String, Span)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TrustedRoot {
    pub repositories: Vec<RepositoryDeclaration>,
    pub globals: Vec<(String, Span)>,
    pub roles: Vec<RoleUse>,
}

impl TrustedRoot {
    pub fn role(&self, slug: &str) -> Option<&RoleUse> {
        self.roles.iter().find(|role| role.slug == slug)
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
    // The parser's tree costs far more than the text: a file of very many nodes is
    // refused before it is parsed, and one of too many roles, repositories or selectors
    // before they are read.
    if let Some(too_many) = crate::limits::ROLES_KDL_NODES.check(crate::syntax::node_bound(file.bytes(db)), &path) {
        return Parsed::new(TrustedRoot::default(), vec![too_many]);
    }
    let parsed = kdl_document(db, file);
    let mut diagnostics = parsed.diagnostics.clone();
    if !diagnostics.is_empty() {
        return Parsed::new(TrustedRoot::default(), diagnostics);
    }
    if let Some(too_many) = over_a_count_limit(&parsed.value.nodes, &path) {
        return Parsed::new(TrustedRoot::default(), vec![too_many]);
    }
    let mut reading = RootReading {
        reader: Reader::new(&path),
        seen: BTreeMap::new(),
        repository_ids: BTreeSet::new(),
        role_slugs: BTreeSet::new(),
        root: TrustedRoot::default(),
    };
    for node in &parsed.value.nodes {
        match node.name.as_str() {
            "repositories" => reading.read_repositories(node),
            "roles" => reading.read_roles(node),
            _ => reading.reader.unknown_node(node, "`roles.kdl`", &["repositories", "roles"]),
        }
    }
    reading.check_references();
    diagnostics.append(&mut reading.reader.diagnostics);
    Parsed::new(reading.root, crate::diagnostic::bound_per_file(diagnostics))
}

/// The first count limit the nodes of a `roles.kdl` exceed: its roles, its repositories,
/// or its `skill` and `composed-skill` selectors together.
fn over_a_count_limit(nodes: &[Node], path: &str) -> Option<crate::diagnostic::Diagnostic> {
    let children = |block: &'static str, name: &'static str| {
        nodes
            .iter()
            .filter(move |node| node.name == block)
            .flat_map(|node| &node.children)
            .filter(move |child| child.name == name)
    };
    let grandchildren = |block: &'static str, child: &'static str, name: &'static str| {
        children(block, child).flat_map(|node| &node.children).filter(move |entry| entry.name == name).count()
    };
    let selectors =
        grandchildren("repositories", "repository", "skill") + grandchildren("roles", "role", "composed-skill");
    None.or_else(|| ROLES.check(children("roles", "role").count(), path))
        .or_else(|| REPOSITORIES.check(children("repositories", "repository").count(), path))
        .or_else(|| SELECTORS.check(selectors, path))
}

/// The state of reading one `roles.kdl`: the diagnostics so far, what was declared, and
/// the root being built.
struct RootReading<'a> {
    reader: Reader<'a>,
    /// Top-level singleton nodes seen so far.
    seen: BTreeMap<String, Span>,
    // Ids and slugs seen so far: a lookup per declaration through these sets keeps a
    // root of many repositories linear (a scan of the list each time was quadratic).
    repository_ids: BTreeSet<String>,
    role_slugs: BTreeSet<String>,
    root: TrustedRoot,
}

impl RootReading<'_> {
    /// Reads the `repositories` block: `repository` declarations and `global` references.
    fn read_repositories(&mut self, node: &Node) {
        if !self.reader.singleton(&mut self.seen, node) {
            return;
        }
        self.reader.argument_count(node, 0, Some(0));
        for child in &node.children {
            match child.name.as_str() {
                "repository" => {
                    if let Some(repository) = self.read_repository(child) {
                        self.repository_ids.insert(repository.id.clone());
                        self.root.repositories.push(repository);
                    }
                }
                "global" => self.read_global(child),
                _ => self.reader.unknown_node(child, "`repositories`", &["repository", "global"]),
            }
        }
    }

    /// Reads one `repository` declaration with its id, `path` and `skill` selectors.
    fn read_repository(&mut self, child: &Node) -> Option<RepositoryDeclaration> {
        let reader = &mut self.reader;
        reader.allowed_properties(child, &["path"]);
        let (id, span) = reader.single_string(child)?;
        if !reader.slug(&id, span, "repository id") {
            return None;
        }
        if self.repository_ids.contains(&id) {
            reader.report("duplicate-repository", span, format!("repository `{id}` is declared twice"), "keep one");
            return None;
        }
        let (repository_path, path_span) = reader.required_string_property(child, "path")?;
        if !crate::host_config::is_repository_path(&repository_path) {
            reader.report(
                "repository-path",
                path_span,
                format!("`{}` is not an `owner/repo` path", sanitize(&repository_path)),
                "repository paths are `owner/repo`, relative to the projects root",
            );
            return None;
        }
        let selectors = read_repository_selectors(reader, child);
        Some(RepositoryDeclaration { id, path: repository_path, selectors, span })
    }

    /// Reads one `global` reference to a declared repository.
    fn read_global(&mut self, child: &Node) {
        self.reader.allowed_properties(child, &[]);
        self.reader.no_children(child);
        if let Some((id, span)) = self.reader.single_string(child) {
            self.root.globals.push((id, span));
        }
    }

    /// Reads the `roles` block: one `role` per slug.
    fn read_roles(&mut self, node: &Node) {
        if !self.reader.singleton(&mut self.seen, node) {
            return;
        }
        self.reader.argument_count(node, 0, Some(0));
        for child in &node.children {
            if child.name != "role" {
                self.reader.unknown_node(child, "`roles`", &["role"]);
                continue;
            }
            if let Some(role) = self.read_role(child) {
                self.root.roles.push(role);
            }
        }
    }

    /// Reads one `role` with its `use-repository` references and `composed-skill` selectors.
    fn read_role(&mut self, child: &Node) -> Option<RoleUse> {
        let reader = &mut self.reader;
        reader.allowed_properties(child, &[]);
        let (slug, span) = reader.single_string(child)?;
        if !is_slug(&slug) {
            reader.slug(&slug, span, "role slug");
            return None;
        }
        if !self.role_slugs.insert(slug.clone()) {
            reader.report("duplicate-role", span, format!("role `{slug}` is declared twice"), "merge the two");
            return None;
        }
        let mut role = RoleUse { slug, span, repositories: Vec::new(), composed: Vec::new(), mcp_servers: Vec::new() };
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
                    if let Some(pattern) = read_patterns(reader, entry) {
                        role.composed.push(pattern);
                    }
                }
                "mcp-server" => {
                    reader.allowed_properties(entry, &[]);
                    reader.no_children(entry);
                    if reader.argument_count(entry, 1, None) {
                        role.mcp_servers.extend(reader.string_arguments(entry));
                    }
                }
                _ => reader.unknown_node(entry, "a `role`", &["use-repository", "composed-skill", "mcp-server"]),
            }
        }
        Some(role)
    }

    /// Reports every `global` and `use-repository` reference to an undeclared repository.
    fn check_references(&mut self) {
        let references: Vec<(String, Span)> = self
            .root
            .globals
            .iter()
            .cloned()
            .chain(self.root.roles.iter().flat_map(|role| role.repositories.iter().cloned()))
            .collect();
        let known_hint = known_repositories_hint(&self.root);
        for (id, span) in references {
            if !self.repository_ids.contains(&id) {
                let ids = self.root.repositories.iter().map(|repository| repository.id.as_str());
                let hint = match crate::suggest::did_you_mean(&id, ids) {
                    Some(suggestion) => format!("{suggestion} {known_hint}"),
                    None => known_hint.clone(),
                };
                self.reader.report(
                    "unknown-repository",
                    span,
                    format!("repository `{}` is not declared in `repositories`", sanitize(&id)),
                    hint,
                );
            }
        }
    }
}

/// Reads the `skill` selectors under one `repository`.
fn read_repository_selectors(reader: &mut Reader<'_>, repository: &Node) -> Vec<Pattern> {
    let mut selectors = Vec::new();
    for selector in &repository.children {
        if selector.name != "skill" {
            reader.unknown_node(selector, "a `repository`", &["skill"]);
            continue;
        }
        if let Some(pattern) = read_patterns(reader, selector) {
            selectors.push(pattern);
        }
    }
    selectors
}

/// The hint of an `unknown-repository` diagnostic: the declared repositories.
///
/// The hint names the declared repositories once, and only the first few of them, so
/// that many unknown references do not each repeat a list as long as the root.
fn known_repositories_hint(root: &TrustedRoot) -> String {
    let known: Vec<&str> =
        root.repositories.iter().take(KNOWN_IN_HINT).map(|repository| repository.id.as_str()).collect();
    match root.repositories.len() {
        0 => "declare it first".to_owned(),
        count if count > KNOWN_IN_HINT => {
            format!("declared: {}, and {} more", known.join(", "), count - KNOWN_IN_HINT)
        }
        _ => format!("declared: {}", known.join(", ")),
    }
}

/// Roles a trusted root names that the selected roster does not have: their admissions
/// apply to no role, which is almost always a typo. A warning each, with the closest
/// roster role; an error when `strict` (skill policy `strict`). `roster` is the roster's
/// label (`person:<name>`), `slugs` its roles. Not a query: it reads the memoized
/// `trusted_root`, so no role's composition depends on another role's block.
pub fn roles_missing_from_roster(
    db: &dyn salsa::Database,
    roles_file: SourceFile,
    roster: &str,
    slugs: &[&str],
    strict: bool,
) -> Vec<crate::diagnostic::Diagnostic> {
    let path = roles_file.display_path(db);
    let mut diagnostics = Vec::new();
    for role in &trusted_root(db, roles_file).value.roles {
        if slugs.contains(&role.slug.as_str()) {
            continue;
        }
        let message =
            format!("role `{}` is not a role of `{roster}`: its admissions apply to no role", sanitize(&role.slug));
        let diagnostic = if strict {
            crate::diagnostic::Diagnostic::error("role-not-in-roster", message)
        } else {
            crate::diagnostic::Diagnostic::warning("role-not-in-roster", message)
        };
        let mut diagnostic = diagnostic.in_file(path.clone()).at(Some(role.span));
        if let Some(hint) = crate::suggest::did_you_mean(&role.slug, slugs.iter().copied()) {
            diagnostic = diagnostic.hint(hint);
        }
        diagnostics.push(diagnostic.hint(format!("roles of `{roster}`: {}", slugs.join(", "))));
    }
    crate::diagnostic::bound_per_file(diagnostics)
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
    /// The MCP servers this role's block names, with where.
    pub mcp_servers: Vec<(String, Span)>,
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
/// one pass over the roles (asking each role per repository would be quadratic).
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
        mcp_servers: own.map(|own| own.mcp_servers.clone()).unwrap_or_default(),
        repository_positions: root
            .repositories
            .iter()
            .enumerate()
            .map(|(position, repository)| (repository.id.clone(), position))
            .collect(),
    };
    Parsed::new(view, parsed.diagnostics.clone())
}

/// One trusted root's repository as a role meets it: which root (its position among the
/// roots), the declaration, and the root's `roles.kdl`.
#[derive(Clone, Copy)]
struct Met<'a> {
    root: usize,
    roles_file: SourceFile,
    repository: &'a RepositoryDeclaration,
}

/// The trusted roots' repositories a role meets, in precedence order (every root's
/// globals, then every root's repositories the role uses), each once.
fn met_by_role<'a>(roots: &'a [(SourceFile, &'a TrustedRoot)], slug: &str) -> Vec<Met<'a>> {
    let mut met: Vec<Met<'a>> = Vec::new();
    let mut listed: BTreeSet<(usize, &str)> = BTreeSet::new();
    let globals = roots
        .iter()
        .enumerate()
        .flat_map(|(root, (_, trusted))| trusted.globals.iter().map(move |(id, _)| (root, id.as_str())));
    let used = roots.iter().enumerate().flat_map(|(root, (_, trusted))| {
        trusted.role(slug).into_iter().flat_map(|role| &role.repositories).map(move |(id, _)| (root, id.as_str()))
    });
    for (root, id) in globals.chain(used) {
        let (roles_file, trusted) = roots[root];
        let Some(repository) = trusted.repositories.iter().find(|repository| repository.id == id) else { continue };
        if listed.insert((root, id)) {
            met.push(Met { root, roles_file, repository });
        }
    }
    met
}

/// The patterns of `loser` a role loses when `winner`, a slice of the same folder, comes
/// first: `None` when nothing is lost (the winner takes the whole catalogue, or every
/// pattern of the loser is the winner's too); an empty list when the loser would have
/// taken the whole catalogue.
fn dropped_patterns(winner: &RepositoryDeclaration, loser: &RepositoryDeclaration) -> Option<Vec<String>> {
    if !winner.is_skill_provider() {
        return None;
    }
    let kept: BTreeSet<&str> = winner.selectors.iter().map(|pattern| pattern.text.as_str()).collect();
    let dropped: Vec<String> = loser
        .selectors
        .iter()
        .map(|pattern| pattern.text.clone())
        .filter(|pattern| !kept.contains(pattern.as_str()))
        .collect();
    (loser.selectors.is_empty() || !dropped.is_empty()).then_some(dropped)
}

/// A repository declared twice that drops a selection: the same `owner/repo` path under
/// two ids, in one trusted root or in two, where a role meets both and the first is a
/// `skill` slice that does not hold what the second selects (a folder is read once per
/// role: the second is excluded as `duplicate-path`). One diagnostic per pair, at the
/// second declaration, naming the first's file, line and column, the roles and what they
/// lose: a warning, an error when `strict`. A path the operating context names is read
/// whole first and drops nothing.
///
/// Memoized: an edit to a skill changes no `roles.kdl`, so the estate's pairs are not
/// sought again.
#[salsa::tracked(returns(ref))]
pub fn duplicate_paths<'db>(
    db: &'db dyn salsa::Database,
    estate: EstateRoots<'db>,
) -> Vec<crate::diagnostic::Diagnostic> {
    let roles: Vec<&str> = estate.roles(db).iter().map(String::as_str).collect();
    pairs_dropping_selections(db, estate.roots(db), estate.context(db), &roles, estate.strict(db))
}

/// What [`duplicate_paths`] looks at.
#[salsa::interned(debug)]
pub struct EstateRoots<'db> {
    /// The trusted roots' `roles.kdl`, in operating-context order.
    #[returns(ref)]
    pub roots: Vec<SourceFile>,
    /// The paths the operating context names.
    #[returns(ref)]
    pub context: Vec<String>,
    /// The roster's role slugs.
    #[returns(ref)]
    pub roles: Vec<String>,
    #[returns(copy)]
    pub strict: bool,
}

fn pairs_dropping_selections(
    db: &dyn salsa::Database,
    roots: &[SourceFile],
    context: &[String],
    roles: &[&str],
    strict: bool,
) -> Vec<crate::diagnostic::Diagnostic> {
    let parsed: Vec<(SourceFile, &TrustedRoot)> =
        roots.iter().map(|file| (*file, &trusted_root(db, *file).value)).collect();
    let mut pairs: BTreeMap<PairKey<'_>, Dropped<'_>> = BTreeMap::new();
    for slug in roles {
        let mut first: BTreeMap<&str, Met<'_>> = BTreeMap::new();
        for met in met_by_role(&parsed, slug) {
            if context.contains(&met.repository.path) {
                continue;
            }
            let Some(winner) = first.get(met.repository.path.as_str()).copied() else {
                first.insert(&met.repository.path, met);
                continue;
            };
            let Some(dropped) = dropped_patterns(winner.repository, met.repository) else { continue };
            let key = ((met.root, met.repository.id.as_str()), (winner.root, winner.repository.id.as_str()));
            pairs
                .entry(key)
                .or_insert_with(|| Dropped { loser: met, winner, roles: Vec::new(), dropped })
                .roles
                .push(slug);
        }
    }
    let diagnostics = pairs.into_values().map(|pair| duplicate_path_diagnostic(db, &pair, strict)).collect();
    crate::diagnostic::bound_per_file(diagnostics)
}

/// Two declarations of one folder as (root, id): the one dropped, then the one first.
type PairKey<'a> = ((usize, &'a str), (usize, &'a str));

/// What one pair of declarations of a folder drops: for which roles, which patterns.
struct Dropped<'a> {
    loser: Met<'a>,
    winner: Met<'a>,
    roles: Vec<&'a str>,
    dropped: Vec<String>,
}

/// The diagnostic of one repository declared twice (see [`duplicate_paths`]).
fn duplicate_path_diagnostic(
    db: &dyn salsa::Database,
    pair: &Dropped<'_>,
    strict: bool,
) -> crate::diagnostic::Diagnostic {
    let Dropped { loser, winner, roles: slugs, dropped } = pair;
    let winner_file = winner.roles_file.display_path(db);
    let (line, column) = crate::diagnostic::line_column(
        &String::from_utf8_lossy(winner.roles_file.bytes(db)),
        winner.repository.span.offset,
    );
    let roles = slugs.iter().map(|slug| format!("`{slug}`")).collect::<Vec<_>>().join(", ");
    let lost = match dropped.as_slice() {
        [] => "the rest of its catalogue".to_owned(),
        patterns => patterns.iter().map(|pattern| format!("`{}`", sanitize(pattern))).collect::<Vec<_>>().join(", "),
    };
    let (first, second) = (&winner.repository.id, &loser.repository.id);
    let message = format!(
        "repository `{second}` reads the same folder `{}` as `{first}`, which comes first: role(s) {roles} receive only `{first}`'s slice and lose {lost}",
        sanitize(&loser.repository.path)
    );
    let diagnostic = if strict {
        crate::diagnostic::Diagnostic::error("duplicate-path", message)
    } else {
        crate::diagnostic::Diagnostic::warning("duplicate-path", message)
    };
    diagnostic
        .in_file(loser.roles_file.display_path(db))
        .at(Some(loser.repository.span))
        .hint(format!("`{first}` is declared at {winner_file}:{line}:{column}"))
        .hint(format!(
            "a folder is read once per role: declare `{}` once with every `skill` selector the roles need, or give the two slices to different roles",
            sanitize(&loser.repository.path)
        ))
}
