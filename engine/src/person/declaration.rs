//! One KDL file to one typed declaration (role, personality, inspiration, manifest).
//! These are the per-file firewall queries: editing one file re-runs only its own
//! declaration. Cross-file rules (references, Core rules, colours) live in `validate`.

use std::collections::{BTreeMap, BTreeSet};

use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Parsed, Span};
use crate::person::reader::Reader;
use crate::syntax::{Node, kdl_document};

/// A value with the span it was read from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Self { value, span }
    }
}

/// `agent "claude" tier="frontier"` or `seat "chatbot" name="guide" pronouns="they"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SeatDeclaration {
    pub key: Spanned<String>,
    pub harness: String,
    pub name: Option<String>,
    pub pronouns: Option<String>,
    pub channel: Option<String>,
    pub tier: Option<Spanned<String>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CopyRule {
    pub forbid: String,
    pub prefer: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CopyContract {
    pub scope: String,
    pub rules: Vec<CopyRule>,
}

/// `inspiration "<id>" { fit "…" }` inside a role or personality.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct InspirationUse {
    pub id: Spanned<String>,
    pub fit: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RoleDeclaration {
    pub slug: Spanned<String>,
    pub display_name: Option<String>,
    pub purpose: Option<String>,
    pub model_tiers: Option<Spanned<Vec<Spanned<String>>>>,
    pub skill: Option<Spanned<String>>,
    pub methods: Vec<Spanned<String>>,
    pub personalities: Option<Spanned<Vec<Spanned<String>>>>,
    pub identity: Option<Spanned<(String, String)>>,
    pub seats: Vec<SeatDeclaration>,
    pub copy_contract: Option<CopyContract>,
    pub briefing: Option<Spanned<String>>,
    pub inspirations: Vec<InspirationUse>,
    /// Nodes written but refused with a diagnostic already (or misspelled: the node a
    /// misspelling most likely meant), so the rules about a missing node stay quiet.
    pub broken: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Triple {
    pub first: String,
    pub second: String,
    pub third: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PersonalityDeclaration {
    pub slug: Spanned<String>,
    pub skill: Option<Spanned<String>>,
    pub color: Option<Spanned<String>>,
    pub motif: Option<String>,
    /// name, emoji, glyph
    pub emblem: Triple,
    /// silhouette, geometry, motion
    pub form: Triple,
    /// timbre, contour, pulse
    pub sound_mark: Triple,
    pub aliases: Vec<Spanned<String>>,
    pub verbs: Vec<String>,
    pub inspirations: Vec<InspirationUse>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct InspirationDeclaration {
    pub id: Spanned<String>,
    pub name: String,
}

/// A file that should hold exactly one top-level node named `expected`.
fn single_node<'n>(reader: &mut Reader<'_>, nodes: &'n [Node], expected: &str) -> Option<&'n Node> {
    let mut found = None;
    for node in nodes {
        if node.name != expected {
            reader.unknown_node(node, "this file", &[expected]);
        } else if found.is_some() {
            reader.report(
                "duplicate-node",
                node.name_span,
                format!("this file declares more than one `{expected}`"),
                format!("put each `{expected}` in its own file"),
            );
        } else {
            found = Some(node);
        }
    }
    found
}

fn with_parse(db: &dyn salsa::Database, file: SourceFile) -> (String, Vec<Node>, Vec<Diagnostic>) {
    // An oversized file is refused before it is parsed, so its cost stays bounded.
    if let Some(too_large) = crate::limits::KDL_PACKAGE_FILE.check(file.bytes(db).len(), &file.display_path(db)) {
        return (file.display_path(db), Vec::new(), vec![too_large]);
    }
    let parsed = kdl_document(db, file);
    (file.display_path(db), parsed.value.nodes.clone(), parsed.diagnostics.clone())
}

fn missing_declaration(path: &str, expected: &str) -> Diagnostic {
    Diagnostic::error("missing-node", format!("this file declares no `{expected}`"))
        .in_file(path)
        .at(Some(Span::new(0, 0)))
        .hint(format!("add one `{expected} \"<slug>\" …` node"))
}

/// `person "<name>"` or `library "<id>"`.
#[salsa::tracked(returns(ref))]
pub fn manifest_declaration(
    db: &dyn salsa::Database,
    file: SourceFile,
    expected: &'static str,
) -> Parsed<Option<String>> {
    let (path, nodes, mut diagnostics) = with_parse(db, file);
    if !diagnostics.is_empty() {
        return Parsed::new(None, diagnostics);
    }
    let mut reader = Reader::new(&path);
    let mut name = None;
    match single_node(&mut reader, &nodes, expected) {
        Some(node) => {
            reader.allowed_properties(node, &[]);
            reader.no_children(node);
            if let Some((value, span)) = reader.single_string(node)
                && reader.slug(&value, span, &format!("{expected} name"))
            {
                name = Some(value);
            }
        }
        None if reader.diagnostics.is_empty() => reader.diagnostics.push(missing_declaration(&path, expected)),
        None => {}
    }
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(name, diagnostics)
}

const ROLE_CHILDREN: &[&str] = &[
    "display-name",
    "purpose",
    "model-tier",
    "skill",
    "method",
    "personality",
    "identity",
    "agent",
    "seat",
    "copy-contract",
    "briefing",
    "inspiration",
];

/// One `roles/NN-<slug>.kdl` file.
#[salsa::tracked(returns(ref))]
pub fn role_declaration(db: &dyn salsa::Database, file: SourceFile) -> Parsed<Option<RoleDeclaration>> {
    let (path, nodes, mut diagnostics) = with_parse(db, file);
    if !diagnostics.is_empty() {
        return Parsed::new(None, diagnostics);
    }
    let mut reader = Reader::new(&path);
    let declaration = match single_node(&mut reader, &nodes, "role") {
        Some(node) => read_role(&mut reader, node),
        None => {
            if reader.diagnostics.is_empty() {
                reader.diagnostics.push(missing_declaration(&path, "role"));
            }
            None
        }
    };
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(declaration, diagnostics)
}

fn read_role(reader: &mut Reader<'_>, node: &Node) -> Option<RoleDeclaration> {
    reader.allowed_properties(node, &[]);
    let (slug, slug_span) = reader.single_string(node)?;
    reader.slug(&slug, slug_span, "role slug");
    let mut role = RoleDeclaration {
        slug: Spanned::new(slug, slug_span),
        display_name: None,
        purpose: None,
        model_tiers: None,
        skill: None,
        methods: Vec::new(),
        personalities: None,
        identity: None,
        seats: Vec::new(),
        copy_contract: None,
        briefing: None,
        inspirations: Vec::new(),
        broken: BTreeSet::new(),
    };
    let mut seen = BTreeMap::new();
    for child in &node.children {
        let before = reader.diagnostics.len();
        read_role_child(reader, &mut seen, child, &mut role);
        if reader.diagnostics.len() > before {
            let name = if ROLE_CHILDREN.contains(&child.name.as_str()) {
                Some(child.name.clone())
            } else {
                crate::suggest::closest(&child.name, ROLE_CHILDREN.iter().copied()).map(str::to_owned)
            };
            role.broken.extend(name);
        }
    }
    Some(role)
}

/// One child of a `role` node, by its name.
fn read_role_child(
    reader: &mut Reader<'_>,
    seen: &mut BTreeMap<String, Span>,
    child: &Node,
    role: &mut RoleDeclaration,
) {
    match child.name.as_str() {
        "display-name" | "purpose" | "skill" | "briefing" => read_role_text(reader, seen, child, role),
        "model-tier" | "personality" => read_role_list(reader, seen, child, role),
        "method" => {
            if let Some(method) = read_method(reader, child) {
                role.methods.push(method);
            }
        }
        "identity" => {
            if let Some(identity) = read_role_identity(reader, seen, child) {
                role.identity = Some(identity);
            }
        }
        "agent" | "seat" => {
            if let Some(seat) = read_seat(reader, child) {
                role.seats.push(seat);
            }
        }
        "copy-contract" => {
            if let Some(contract) = read_copy_contract(reader, seen, child) {
                role.copy_contract = Some(contract);
            }
        }
        "inspiration" => {
            if let Some(inspiration) = read_inspiration_use(reader, child) {
                role.inspirations.push(inspiration);
            }
        }
        _ => reader.unknown_node(child, "a `role`", ROLE_CHILDREN),
    }
}

/// `display-name`, `purpose`, `skill` and `briefing`: one non-empty string each.
fn read_role_text(
    reader: &mut Reader<'_>,
    seen: &mut BTreeMap<String, Span>,
    child: &Node,
    role: &mut RoleDeclaration,
) {
    if !reader.singleton(seen, child) {
        return;
    }
    reader.allowed_properties(child, &[]);
    reader.no_children(child);
    let Some((value, span)) = reader.single_string(child) else { return };
    if value.trim().is_empty() {
        reader.report("empty-value", span, format!("`{}` is empty", child.name), "write a non-empty value");
        return;
    }
    match child.name.as_str() {
        "display-name" => role.display_name = Some(value),
        "purpose" => role.purpose = Some(value),
        "skill" => role.skill = Some(Spanned::new(value, span)),
        _ => role.briefing = Some(Spanned::new(value, span)),
    }
}

/// `model-tier` and `personality`: a list of at least one string each.
fn read_role_list(
    reader: &mut Reader<'_>,
    seen: &mut BTreeMap<String, Span>,
    child: &Node,
    role: &mut RoleDeclaration,
) {
    if !reader.singleton(seen, child) {
        return;
    }
    reader.allowed_properties(child, &[]);
    reader.no_children(child);
    if !reader.argument_count(child, 1, None) {
        return;
    }
    let values = reader.string_arguments(child).into_iter().map(|(value, span)| Spanned::new(value, span)).collect();
    let list = Some(Spanned::new(values, child.name_span));
    if child.name == "model-tier" {
        role.model_tiers = list;
    } else {
        role.personalities = list;
    }
}

/// `method "<id>"`, which may repeat; its id is a slug.
fn read_method(reader: &mut Reader<'_>, child: &Node) -> Option<Spanned<String>> {
    reader.allowed_properties(child, &[]);
    reader.no_children(child);
    let (value, span) = reader.single_string(child)?;
    reader.slug(&value, span, "method id").then(|| Spanned::new(value, span))
}

/// `identity name=… pronouns=…`, both required.
fn read_role_identity(
    reader: &mut Reader<'_>,
    seen: &mut BTreeMap<String, Span>,
    child: &Node,
) -> Option<Spanned<(String, String)>> {
    if !reader.singleton(seen, child) {
        return None;
    }
    reader.argument_count(child, 0, Some(0));
    reader.allowed_properties(child, &["name", "pronouns"]);
    reader.no_children(child);
    let name = reader.required_string_property(child, "name");
    let pronouns = reader.required_string_property(child, "pronouns");
    match (name, pronouns) {
        (Some((name, _)), Some((pronouns, _))) => Some(Spanned::new((name, pronouns), child.name_span)),
        _ => None,
    }
}

/// `agent "<key>" …` or `seat "<key>" …`; the harness defaults to the key.
fn read_seat(reader: &mut Reader<'_>, child: &Node) -> Option<SeatDeclaration> {
    reader.allowed_properties(child, &["name", "pronouns", "channel", "tier", "harness"]);
    reader.no_children(child);
    let (key, key_span) = reader.single_string(child)?;
    reader.slug(&key, key_span, "seat key");
    let harness = reader.optional_string_property(child, "harness").map(|(value, _)| value);
    Some(SeatDeclaration {
        harness: harness.unwrap_or_else(|| key.clone()),
        key: Spanned::new(key, key_span),
        name: reader.optional_string_property(child, "name").map(|(value, _)| value),
        pronouns: reader.optional_string_property(child, "pronouns").map(|(value, _)| value),
        channel: reader.optional_string_property(child, "channel").map(|(value, _)| value),
        tier: reader.optional_string_property(child, "tier").map(|(value, span)| Spanned::new(value, span)),
        span: child.name_span,
    })
}

/// `copy-contract scope=… { forbid "…" prefer=… }`; without a scope there is no contract.
fn read_copy_contract(
    reader: &mut Reader<'_>,
    seen: &mut BTreeMap<String, Span>,
    child: &Node,
) -> Option<CopyContract> {
    if !reader.singleton(seen, child) {
        return None;
    }
    reader.argument_count(child, 0, Some(0));
    reader.allowed_properties(child, &["scope"]);
    let scope = reader.required_string_property(child, "scope").map(|(value, _)| value);
    let mut rules = Vec::new();
    for rule in &child.children {
        if rule.name != "forbid" {
            reader.unknown_node(rule, "`copy-contract`", &["forbid"]);
            continue;
        }
        reader.allowed_properties(rule, &["prefer"]);
        reader.no_children(rule);
        if let Some((forbid, _)) = reader.single_string(rule) {
            let prefer = reader.optional_string_property(rule, "prefer").map(|(value, _)| value);
            rules.push(CopyRule { forbid, prefer });
        }
    }
    scope.map(|scope| CopyContract { scope, rules })
}

fn read_inspiration_use(reader: &mut Reader<'_>, node: &Node) -> Option<InspirationUse> {
    reader.allowed_properties(node, &[]);
    let (id, span) = reader.single_string(node)?;
    let mut fit = None;
    for child in &node.children {
        if child.name != "fit" {
            reader.unknown_node(child, "an `inspiration` reference", &["fit"]);
            continue;
        }
        if fit.is_some() {
            reader.report("duplicate-node", child.name_span, "`fit` may appear only once here", "merge the two");
            continue;
        }
        reader.allowed_properties(child, &[]);
        fit = reader.single_string(child).map(|(value, _)| value);
    }
    Some(InspirationUse { id: Spanned::new(id, span), fit: fit.unwrap_or_default() })
}

const PERSONALITY_CHILDREN: &[&str] = &["emblem", "form", "sound-mark", "alias", "verb", "inspiration"];

/// One `personalities/NN-<slug>.kdl` file.
#[salsa::tracked(returns(ref))]
pub fn personality_declaration(db: &dyn salsa::Database, file: SourceFile) -> Parsed<Option<PersonalityDeclaration>> {
    let (path, nodes, mut diagnostics) = with_parse(db, file);
    if !diagnostics.is_empty() {
        return Parsed::new(None, diagnostics);
    }
    let mut reader = Reader::new(&path);
    let declaration = match single_node(&mut reader, &nodes, "personality") {
        Some(node) => read_personality(&mut reader, node),
        None => {
            if reader.diagnostics.is_empty() {
                reader.diagnostics.push(missing_declaration(&path, "personality"));
            }
            None
        }
    };
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(declaration, diagnostics)
}

fn read_triple(reader: &mut Reader<'_>, node: &Node, keys: [&str; 3]) -> Triple {
    // Only diagnostics reported from here on can be about this node, so the check below
    // looks at those alone: scanning the whole list per node would be quadratic.
    let first_own = reader.diagnostics.len();
    reader.argument_count(node, 0, Some(0));
    reader.allowed_properties(node, &[]);
    let mut values: [Option<String>; 3] = [None, None, None];
    for child in &node.children {
        match keys.iter().position(|key| *key == child.name) {
            Some(index) => {
                if values[index].is_some() {
                    reader.report(
                        "duplicate-node",
                        child.name_span,
                        format!("`{}` may appear only once here", child.name),
                        "keep one of them",
                    );
                    continue;
                }
                reader.allowed_properties(child, &[]);
                reader.no_children(child);
                values[index] = reader.single_string(child).map(|(value, _)| value);
            }
            None => reader.unknown_node(child, &format!("`{}`", node.name), &keys),
        }
    }
    for (index, key) in keys.iter().enumerate() {
        if values[index].is_none()
            && !reader.diagnostics[first_own..].iter().any(|diagnostic| diagnostic.span == Some(node.name_span))
        {
            reader.report(
                "missing-node",
                node.name_span,
                format!("`{}` needs a `{key}`", node.name),
                format!("add `{key} \"…\"` inside `{}`", node.name),
            );
        }
    }
    let [first, second, third] = values;
    Triple { first: first.unwrap_or_default(), second: second.unwrap_or_default(), third: third.unwrap_or_default() }
}

fn read_personality(reader: &mut Reader<'_>, node: &Node) -> Option<PersonalityDeclaration> {
    reader.allowed_properties(node, &["skill", "color", "motif"]);
    let (slug, slug_span) = reader.single_string(node)?;
    reader.slug(&slug, slug_span, "personality slug");
    let skill = reader.required_string_property(node, "skill").map(|(value, span)| Spanned::new(value, span));
    let color = reader.required_string_property(node, "color").map(|(value, span)| Spanned::new(value, span));
    let motif = reader.required_string_property(node, "motif").map(|(value, _)| value);
    let mut personality = PersonalityDeclaration {
        slug: Spanned::new(slug, slug_span),
        skill,
        color,
        motif,
        emblem: Triple::default(),
        form: Triple::default(),
        sound_mark: Triple::default(),
        aliases: Vec::new(),
        verbs: Vec::new(),
        inspirations: Vec::new(),
    };
    let mut seen = BTreeMap::new();
    for child in &node.children {
        match child.name.as_str() {
            "emblem" | "form" | "sound-mark" => {
                if !reader.singleton(&mut seen, child) {
                    continue;
                }
                match child.name.as_str() {
                    "emblem" => personality.emblem = read_triple(reader, child, ["name", "emoji", "glyph"]),
                    "form" => personality.form = read_triple(reader, child, ["silhouette", "geometry", "motion"]),
                    _ => personality.sound_mark = read_triple(reader, child, ["timbre", "contour", "pulse"]),
                }
            }
            "alias" | "verb" => {
                reader.allowed_properties(child, &[]);
                reader.no_children(child);
                if let Some((value, span)) = reader.single_string(child) {
                    if child.name == "alias" {
                        personality.aliases.push(Spanned::new(value, span));
                    } else {
                        personality.verbs.push(value);
                    }
                }
            }
            "inspiration" => {
                if let Some(inspiration) = read_inspiration_use(reader, child) {
                    personality.inspirations.push(inspiration);
                }
            }
            _ => reader.unknown_node(child, "a `personality`", PERSONALITY_CHILDREN),
        }
    }
    for (name, triple) in
        [("emblem", &personality.emblem), ("form", &personality.form), ("sound-mark", &personality.sound_mark)]
    {
        if !seen.contains_key(name) && *triple == Triple::default() {
            reader.report(
                "missing-node",
                node.name_span,
                format!("personality `{}` is missing its `{name}` block", personality.slug.value),
                format!("add `{name} {{ … }}`"),
            );
        }
    }
    Some(personality)
}

/// One `inspirations/NN-<id>.kdl` file.
#[salsa::tracked(returns(ref))]
pub fn inspiration_declaration(db: &dyn salsa::Database, file: SourceFile) -> Parsed<Option<InspirationDeclaration>> {
    let (path, nodes, mut diagnostics) = with_parse(db, file);
    if !diagnostics.is_empty() {
        return Parsed::new(None, diagnostics);
    }
    let mut reader = Reader::new(&path);
    let declaration = match single_node(&mut reader, &nodes, "inspiration") {
        Some(node) => read_inspiration(&mut reader, node),
        None => {
            if reader.diagnostics.is_empty() {
                reader.diagnostics.push(missing_declaration(&path, "inspiration"));
            }
            None
        }
    };
    diagnostics.append(&mut reader.diagnostics);
    Parsed::new(declaration, diagnostics)
}

fn read_inspiration(reader: &mut Reader<'_>, node: &Node) -> Option<InspirationDeclaration> {
    reader.allowed_properties(node, &["name", "profile-citation", "impact-mode"]);
    let (id, span) = reader.single_string(node)?;
    reader.slug(&id, span, "inspiration id");
    let name = reader.required_string_property(node, "name").map(|(value, _)| value).unwrap_or_default();
    let mut seen = BTreeMap::new();
    for child in &node.children {
        match child.name.as_str() {
            "achievement" | "impact-fit" => {
                if reader.singleton(&mut seen, child) {
                    reader.allowed_properties(child, &[]);
                    reader.no_children(child);
                    reader.single_string(child);
                }
            }
            "appearance" => {
                reader.allowed_properties(child, &["title", "event", "year", "format"]);
                reader.single_string(child);
                let mut inner_seen = BTreeMap::new();
                for detail in &child.children {
                    match detail.name.as_str() {
                        "summary" | "citation" => {
                            if reader.singleton(&mut inner_seen, detail) {
                                reader.allowed_properties(detail, &[]);
                                reader.no_children(detail);
                                reader.single_string(detail);
                            }
                        }
                        _ => reader.unknown_node(detail, "an `appearance`", &["summary", "citation"]),
                    }
                }
            }
            _ => reader.unknown_node(child, "an `inspiration`", &["achievement", "impact-fit", "appearance"]),
        }
    }
    Some(InspirationDeclaration { id: Spanned::new(id, span), name })
}
