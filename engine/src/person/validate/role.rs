//! The rules of the person package's roles: each role file's purpose, skill, methods,
//! model tiers, meld, identity and seats, and the role folders no role declares.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    CORE_MELD_SIZE, Context, InspirationRegistry, ROLE_SKILL_MAX_WORDS, ROLE_SKILL_MIN_PARAGRAPHS, check_file_name,
    known_hint,
};
use crate::color::{self, Lab};
use crate::db::{Package, PackageKind, SourceFile};
use crate::diagnostic::{Span, sanitize};
use crate::person::declaration::{RoleDeclaration, SeatDeclaration, Spanned, role_declaration};
use crate::person::package_layout::PackageLayout;
use crate::person::{Colour, Identity, IdentityForm, MODEL_TIERS, Personality, Role, Seat, SkillFile};
use crate::skill::{SkillDocument, content_digest};

/// The roles of the person package.
pub(super) struct RoleList {
    pub(super) roles: Vec<Role>,
    /// Where each loaded role's meld is written (or its slug without one), for the Core rules.
    pub(super) files: Vec<(SourceFile, Span)>,
    /// Whether a role file did not parse.
    pub(super) incomplete: bool,
    /// Roles declared whose own errors kept them out of the list (by slug, or by file
    /// name when the file did not parse): counted by the Core rules, never reported again.
    pub(super) broken: BTreeSet<String>,
}

/// Reads the roles of a person package; a library has none.
pub(super) fn load_roles(
    context: &mut Context<'_>,
    package: Package,
    layout: &PackageLayout,
    personalities: (&[Personality], &BTreeSet<String>),
    inspirations: &mut InspirationRegistry,
    core: bool,
) -> RoleList {
    let db = context.db;
    let (personalities, broken_personalities) = personalities;
    let mut list = RoleList { roles: Vec::new(), files: Vec::new(), incomplete: false, broken: BTreeSet::new() };
    if package.kind(db) != PackageKind::Person {
        return list;
    }
    let mut role_context =
        RoleContext { layout, personalities, broken_personalities, methods_seen: BTreeMap::new(), core };
    for numbered in &layout.roles {
        let parsed = role_declaration(db, numbered.file);
        context.extend(&parsed.diagnostics);
        let Some(declaration) = &parsed.value else {
            list.incomplete = true;
            list.broken.insert(numbered.slug.clone());
            continue;
        };
        check_file_name(context, numbered.file, &numbered.slug, &declaration.slug, "role");
        let references = inspirations.resolve(context, numbered.file, &declaration.inspirations);
        if list.roles.iter().any(|known| known.slug == declaration.slug.value) {
            context.report(
                numbered.file,
                Some(declaration.slug.span),
                "duplicate-role",
                format!("role `{}` is declared more than once", declaration.slug.value),
                "a role slug is unique in its package",
            );
            continue;
        }
        if let Some(role) = load_role(context, &mut role_context, numbered.file, declaration) {
            list.files.push((
                numbered.file,
                declaration.personalities.as_ref().map_or(declaration.slug.span, |meld| meld.span),
            ));
            list.roles.push(Role { inspirations: references, ..role });
        } else {
            list.broken.insert(declaration.slug.value.clone());
        }
    }
    check_orphan_role_folders(context, layout, &list.roles);
    if layout.roles.is_empty() {
        context.report_package(
            package,
            "roles",
            "no-roles",
            "the package declares no roles".to_owned(),
            "add at least one `roles/NN-<slug>.kdl`",
        );
    }
    list
}

/// What every role of the person package is checked against.
struct RoleContext<'a> {
    layout: &'a PackageLayout,
    /// The personality catalogue a meld names from.
    personalities: &'a [Personality],
    /// Personalities declared whose own errors kept them out of the catalogue: a meld
    /// naming one is not reported again.
    broken_personalities: &'a BTreeSet<String>,
    /// Method ids already declared, with the role that declared each.
    methods_seen: BTreeMap<String, String>,
    /// Whether the Core rules apply.
    core: bool,
}

/// One role's rules: its purpose, skill, methods, model tiers, meld, identity and seats.
fn load_role(
    context: &mut Context<'_>,
    role_context: &mut RoleContext<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
) -> Option<Role> {
    let slug = declaration.slug.value.clone();
    let purpose = role_purpose(context, file, declaration);
    let expected_skill = format!("role-{slug}");
    check_role_skill_name(context, file, declaration, &expected_skill);
    // Every rule runs even when the role skill is missing, so one run reports every
    // independent mistake of the role; the role is left out afterwards.
    let skill = load_role_skill(context, role_context.layout, file, declaration, &purpose);
    let methods = load_methods(context, role_context, file, declaration);
    check_undeclared_methods(context, role_context.layout, file, declaration);
    let model_tiers = read_model_tiers(context, file, declaration, role_context.core);
    let (meld, lab_components) = read_meld(context, file, declaration, role_context);
    let identity_form = check_identity_form(context, file, declaration, role_context.core);
    let seats = read_seats(context, file, declaration, &model_tiers);
    let identity = role_identity(declaration, &seats);
    let skill = skill?;

    let favourite = color::favourite(&lab_components).map(Colour::from_lab)?;
    let display_name = declaration.display_name.clone().or_else(|| skill_title(&skill)).unwrap_or_else(|| slug.clone());
    Some(Role {
        slug,
        display_name,
        purpose,
        model_tiers,
        model_tiers_declared: declaration.model_tiers.is_some(),
        skill,
        methods,
        personalities: meld,
        favourite,
        identity,
        identity_form,
        seats,
        copy_contract: declaration.copy_contract.clone(),
        inspirations: Vec::new(),
    })
}

/// The role's one-sentence purpose, empty (and reported) when missing.
fn role_purpose(context: &mut Context<'_>, file: SourceFile, declaration: &RoleDeclaration) -> String {
    match &declaration.purpose {
        Some(purpose) => purpose.clone(),
        None if declaration.broken.contains("purpose") => String::new(),
        None => {
            context.report(
                file,
                Some(declaration.slug.span),
                "missing-node",
                format!("role `{}` has no `purpose`", declaration.slug.value),
                "add `purpose \"…\"`, one sentence",
            );
            String::new()
        }
    }
}

/// The role names its skill `role-<slug>`; a legacy role with a `briefing` may leave it out.
fn check_role_skill_name(context: &mut Context<'_>, file: SourceFile, declaration: &RoleDeclaration, expected: &str) {
    let slug = &declaration.slug.value;
    match &declaration.skill {
        Some(skill) if skill.value != expected => context.report(
            file,
            Some(skill.span),
            "role-skill-name",
            format!("role `{slug}` names skill `{}`, expected `{expected}`", sanitize(&skill.value)),
            format!("write `skill \"{expected}\"`"),
        ),
        Some(_) => {}
        // A legacy role carries its body inline; its skill id is implied as `role-<slug>`.
        None if declaration.briefing.is_some() || declaration.broken.contains("skill") => {}
        None => context.report(
            file,
            Some(declaration.slug.span),
            "missing-node",
            format!("role `{slug}` has no `skill`"),
            format!("add `skill \"{expected}\"`"),
        ),
    }
}

/// The role skill: `roles/<slug>/SKILL.md`, or one made from a legacy `briefing`;
/// `None` when the role has neither.
fn load_role_skill(
    context: &mut Context<'_>,
    layout: &PackageLayout,
    file: SourceFile,
    declaration: &RoleDeclaration,
    purpose: &str,
) -> Option<SkillFile> {
    let slug = &declaration.slug.value;
    let expected_skill = format!("role-{slug}");
    match (layout.role_skills.get(slug), &declaration.briefing) {
        (Some(&skill_file), briefing) => {
            if let Some(briefing) = briefing {
                context.report(
                    file,
                    Some(briefing.span),
                    "briefing-and-skill",
                    format!("role `{slug}` has both a `briefing` and `roles/{slug}/SKILL.md`"),
                    "keep the `SKILL.md` and remove the legacy `briefing`",
                );
            }
            let (skill, document) = context.skill_file(skill_file, &expected_skill);
            check_role_skill(context, skill_file, &document, &expected_skill);
            Some(skill)
        }
        (None, Some(briefing)) => Some(briefing_skill(context, file, declaration, briefing, purpose)),
        (None, None) => {
            context.report(
                file,
                Some(declaration.slug.span),
                "role-skill-missing",
                format!("role `{slug}` has no `roles/{slug}/SKILL.md`"),
                format!("write the role skill at `roles/{slug}/SKILL.md`"),
            );
            None
        }
    }
}

/// A role skill made from a legacy inline `briefing`, held to the role skill's limits.
fn briefing_skill(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
    briefing: &Spanned<String>,
    purpose: &str,
) -> SkillFile {
    let db = context.db;
    let slug = &declaration.slug.value;
    let expected_skill = format!("role-{slug}");
    let paragraphs = crate::skill::count_paragraphs(&briefing.value);
    let words = briefing.value.split_whitespace().count();
    if paragraphs < ROLE_SKILL_MIN_PARAGRAPHS {
        context.report(
            file,
            Some(briefing.span),
            "role-skill-paragraphs",
            format!("briefing of role `{slug}` has {paragraphs} paragraph(s), at least {ROLE_SKILL_MIN_PARAGRAPHS} are required"),
            "separate paragraphs with a blank line",
        );
    }
    if words > ROLE_SKILL_MAX_WORDS {
        context.report(
            file,
            Some(briefing.span),
            "role-skill-too-long",
            format!("briefing of role `{slug}` has {words} words, at most {ROLE_SKILL_MAX_WORDS} are allowed"),
            "shorten it",
        );
    }
    let text = format!(
        "---\nname: {expected_skill}\ndescription: {}\n---\n\n# {}\n\n{}\n",
        purpose,
        declaration.display_name.clone().unwrap_or_else(|| slug.clone()),
        briefing.value.trim()
    );
    let bytes = text.into_bytes();
    SkillFile {
        id: expected_skill,
        source: file.display_path(db),
        relative_path: file.relative_path(db).clone(),
        digest: content_digest(&bytes),
        description: purpose.to_owned(),
        body: briefing.value.trim().to_owned(),
        bytes: bytes.into(),
    }
}

/// The role's declared methods, each unique across the package and backed by
/// `roles/<slug>/skills/<method>/SKILL.md` named for it.
fn load_methods(
    context: &mut Context<'_>,
    role_context: &mut RoleContext<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
) -> Vec<SkillFile> {
    let slug = &declaration.slug.value;
    let mut methods = Vec::new();
    for method in &declaration.methods {
        if let Some(owner) = role_context.methods_seen.get(&method.value) {
            context.report(
                file,
                Some(method.span),
                "duplicate-method",
                format!("method `{}` is already declared by role `{owner}`", method.value),
                "method ids are unique across the package",
            );
            continue;
        }
        role_context.methods_seen.insert(method.value.clone(), slug.clone());
        let folder = role_context.layout.methods.get(&(slug.clone(), method.value.clone()));
        let Some(method_file) = folder.and_then(|folder| folder.skill) else {
            context.report(
                file,
                Some(method.span),
                "method-skill-missing",
                format!("method `{}` has no `roles/{slug}/skills/{}/SKILL.md`", method.value, method.value),
                "write the method skill there",
            );
            continue;
        };
        let (skill, document) = context.skill_file(method_file, &method.value);
        if document.name.as_deref() != Some(method.value.as_str()) {
            context.report(
                method_file,
                document.name_span,
                "method-skill-mismatch",
                format!("method skill is not named `{}`", method.value),
                format!("write `name: {}` in the frontmatter", method.value),
            );
        }
        methods.push(skill);
    }
    methods
}

/// Every folder under `roles/<slug>/skills/` is a method the role declares.
fn check_undeclared_methods(
    context: &mut Context<'_>,
    layout: &PackageLayout,
    file: SourceFile,
    declaration: &RoleDeclaration,
) {
    let slug = &declaration.slug.value;
    for ((owner, method), folder) in layout.methods.range((slug.clone(), String::new())..) {
        if owner != slug {
            break;
        }
        if !declaration.methods.iter().any(|declared| &declared.value == method) {
            let target = folder.skill.unwrap_or(file);
            context.report(
                target,
                None,
                "method-undeclared",
                format!("`roles/{slug}/skills/{}` is not a declared method of role `{slug}`", sanitize(method)),
                format!("add `method \"{}\"` to the role or remove the folder", sanitize(method)),
            );
        }
    }
}

/// The model tiers the role supports, in canonical order; every tier when none are declared.
fn read_model_tiers(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
    core: bool,
) -> Vec<String> {
    let Some(declared) = &declaration.model_tiers else {
        if core {
            context.report(
                file,
                Some(declaration.slug.span),
                "core-model-tiers-required",
                format!("Core role `{}` does not declare its model tiers", declaration.slug.value),
                "add `model-tier \"frontier\" …` with the tiers the role supports",
            );
        }
        return MODEL_TIERS.iter().map(|tier| (*tier).to_owned()).collect();
    };
    let mut seen = BTreeSet::new();
    for tier in &declared.value {
        if !MODEL_TIERS.contains(&tier.value.as_str()) {
            context.report(
                file,
                Some(tier.span),
                "unknown-model-tier",
                format!("`{}` is not a model tier", sanitize(&tier.value)),
                "model tiers are `frontier`, `commodity` and `oss`",
            );
        } else if !seen.insert(tier.value.clone()) {
            context.report(
                file,
                Some(tier.span),
                "duplicate-model-tier",
                format!("model tier `{}` is listed twice", tier.value),
                "list each tier once",
            );
        }
    }
    MODEL_TIERS.iter().filter(|tier| seen.contains(**tier)).map(|tier| (*tier).to_owned()).collect()
}

/// The personalities the role melds, and the colours of those the catalogue knows.
fn read_meld(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
    role_context: &RoleContext<'_>,
) -> (Vec<String>, Vec<Lab>) {
    let (personalities, core) = (role_context.personalities, role_context.core);
    let slug = &declaration.slug.value;
    let mut meld = Vec::new();
    let mut lab_components: Vec<Lab> = Vec::new();
    let Some(list) = &declaration.personalities else {
        if declaration.broken.contains("personality") {
            return (meld, lab_components);
        }
        context.report(
            file,
            Some(declaration.slug.span),
            "meld-empty",
            format!("role `{slug}` names no personalities"),
            "add `personality \"<slug>\" …` with at least one personality",
        );
        return (meld, lab_components);
    };
    for reference in &list.value {
        if meld.contains(&reference.value) {
            context.report(
                file,
                Some(reference.span),
                "meld-repeat",
                format!("personality `{}` appears twice in the meld", reference.value),
                "list each personality once",
            );
            continue;
        }
        match personalities.iter().find(|personality| personality.slug == reference.value) {
            Some(personality) => lab_components.push(personality.colour.lab),
            None if role_context.broken_personalities.contains(&reference.value) => {}
            None => context.report(
                file,
                Some(reference.span),
                "unknown-personality",
                format!("personality `{}` has no catalogue binding", sanitize(&reference.value)),
                known_hint("personalities", personalities.iter().map(|personality| personality.slug.as_str())),
            ),
        }
        meld.push(reference.value.clone());
    }
    if core && list.value.len() != CORE_MELD_SIZE {
        context.report(
            file,
            Some(list.span),
            "core-meld-size",
            format!(
                "Core role `{slug}` melds {} personalities, exactly {CORE_MELD_SIZE} are required",
                list.value.len()
            ),
            "name exactly two personalities",
        );
    }
    (meld, lab_components)
}

/// Which identity form the role uses: one role-level `identity` or names per seat, never
/// both; Core roles use the role-level form and have seats.
fn check_identity_form(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
    core: bool,
) -> IdentityForm {
    let slug = &declaration.slug.value;
    let role_span = Some(declaration.slug.span);
    let seat_identity = declaration.seats.iter().any(|seat| seat.name.is_some() || seat.pronouns.is_some());
    let identity_form = if declaration.identity.is_some() { IdentityForm::Role } else { IdentityForm::PerSeat };
    if let Some(identity) = &declaration.identity
        && seat_identity
    {
        context.report(
            file,
            Some(identity.span),
            "identity-mixed",
            format!("role `{slug}` declares a role-level `identity` and per-seat names"),
            "use one form: either `identity name=… pronouns=…` or name/pronouns on every seat",
        );
    }
    let identity_written = declaration.identity.is_some() || declaration.broken.contains("identity");
    if core && !identity_written {
        context.report(
            file,
            role_span,
            "core-identity-required",
            format!("Core role `{slug}` has no role-level `identity`"),
            "add `identity name=\"…\" pronouns=\"…\"` and keep seats for routing only",
        );
    }
    if core && declaration.seats.is_empty() {
        context.report(
            file,
            role_span,
            "core-seats-required",
            format!("Core role `{slug}` has no harness seats"),
            "add at least one `agent \"<harness>\" tier=\"…\"`",
        );
    }
    if !identity_written && declaration.seats.is_empty() && !core {
        context.report(
            file,
            role_span,
            "identity-missing",
            format!("role `{slug}` has no identity"),
            "add `identity name=\"…\" pronouns=\"…\"` or a `seat` with name and pronouns",
        );
    }
    identity_form
}

/// The role's seats, each with a unique key, a supported tier and an identity.
fn read_seats(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
    model_tiers: &[String],
) -> Vec<Seat> {
    let slug = &declaration.slug.value;
    let mut seats = Vec::new();
    let mut seat_keys = BTreeSet::new();
    for seat in &declaration.seats {
        if !seat_keys.insert(seat.key.value.clone()) {
            context.report(
                file,
                Some(seat.key.span),
                "duplicate-seat",
                format!("seat `{}` is declared twice in role `{slug}`", sanitize(&seat.key.value)),
                "seat keys are unique within a role",
            );
            continue;
        }
        check_seat_tier(context, file, slug, seat, model_tiers);
        let (name, pronouns) = seat_identity(context, file, declaration, seat);
        seats.push(Seat {
            key: seat.key.value.clone(),
            harness: seat.harness.clone(),
            name,
            pronouns,
            channel: seat.channel.clone(),
            tier: seat.tier.as_ref().map(|tier| tier.value.clone()),
        });
    }
    seats
}

/// A seat's tier, when written, is a model tier the role supports.
fn check_seat_tier(
    context: &mut Context<'_>,
    file: SourceFile,
    slug: &str,
    seat: &SeatDeclaration,
    model_tiers: &[String],
) {
    let Some(tier) = &seat.tier else { return };
    if !MODEL_TIERS.contains(&tier.value.as_str()) {
        context.report(
            file,
            Some(tier.span),
            "unknown-model-tier",
            format!("`{}` is not a model tier", sanitize(&tier.value)),
            "model tiers are `frontier`, `commodity` and `oss`",
        );
    } else if !model_tiers.contains(&tier.value) {
        context.report(
            file,
            Some(tier.span),
            "seat-tier-unsupported",
            format!("seat `{}` routes to tier `{}`, which role `{slug}` does not support", seat.key.value, tier.value),
            format!("use one of {}", model_tiers.join(", ")),
        );
    }
}

/// A seat's name and pronouns: the role's `identity` when it has one, else the seat's own.
fn seat_identity(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &RoleDeclaration,
    seat: &SeatDeclaration,
) -> (String, String) {
    match (&declaration.identity, &seat.name, &seat.pronouns) {
        (Some(identity), _, _) => identity.value.clone(),
        (None, Some(name), Some(pronouns)) => (name.clone(), pronouns.clone()),
        // The role's `identity` is written but broken: already reported.
        (None, _, _) if declaration.broken.contains("identity") => (String::new(), String::new()),
        (None, _, _) => {
            context.report(
                file,
                Some(seat.key.span),
                "identity-missing",
                format!(
                    "seat `{}` of role `{}` has no name and pronouns, and the role has no `identity`",
                    seat.key.value, declaration.slug.value
                ),
                "add `identity name=\"…\" pronouns=\"…\"` to the role",
            );
            (String::new(), String::new())
        }
    }
}

/// The role's identity: its `identity`, else its first seat's, else empty.
fn role_identity(declaration: &RoleDeclaration, seats: &[Seat]) -> Identity {
    match &declaration.identity {
        Some(identity) => Identity { name: identity.value.0.clone(), pronouns: identity.value.1.clone() },
        None => seats
            .first()
            .map(|seat| Identity { name: seat.name.clone(), pronouns: seat.pronouns.clone() })
            .unwrap_or(Identity { name: String::new(), pronouns: String::new() }),
    }
}

/// The title of a skill body: its first line when that is a `# ` heading.
fn skill_title(skill: &SkillFile) -> Option<String> {
    skill
        .body
        .lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| line.strip_prefix("# "))
        .map(|title| title.trim().to_owned())
}

/// A role skill file names itself, describes itself, and keeps to the body limits.
fn check_role_skill(context: &mut Context<'_>, file: SourceFile, document: &SkillDocument, expected: &str) {
    if document.empty {
        context.report(file, None, "role-skill-empty", "role skill is empty".to_owned(), "write the role charter");
        return;
    }
    match &document.name {
        Some(name) if name == expected => {}
        Some(name) => context.report(
            file,
            document.name_span,
            "role-skill-frontmatter",
            format!("role skill is named `{}`, expected `{expected}`", sanitize(name)),
            format!("write `name: {expected}` in the frontmatter"),
        ),
        None => context.report(
            file,
            None,
            "role-skill-frontmatter",
            format!("role skill has no frontmatter `name: {expected}`"),
            format!("start the file with `---`, `name: {expected}`, `description: …`, `---`"),
        ),
    }
    if document.description.as_deref().is_none_or(|description| description.trim().is_empty()) {
        context.report(
            file,
            document.name_span,
            "role-skill-description",
            "role skill has no frontmatter `description:`".to_owned(),
            "add `description: <one line>` to the frontmatter",
        );
    }
    if document.paragraphs < ROLE_SKILL_MIN_PARAGRAPHS {
        context.report(
            file,
            None,
            "role-skill-paragraphs",
            format!("role skill body has {} paragraph(s) after its title, at least {ROLE_SKILL_MIN_PARAGRAPHS} are required", document.paragraphs),
            "separate paragraphs with a blank line",
        );
    }
    if document.words > ROLE_SKILL_MAX_WORDS {
        context.report(
            file,
            None,
            "role-skill-too-long",
            format!("role skill body has {} words, at most {ROLE_SKILL_MAX_WORDS} are allowed", document.words),
            "shorten the body after the title",
        );
    }
}

/// Every `roles/<slug>/SKILL.md` belongs to a declared role.
fn check_orphan_role_folders(context: &mut Context<'_>, layout: &PackageLayout, roles: &[Role]) {
    let declared: BTreeSet<String> = layout.roles.iter().map(|numbered| numbered.slug.clone()).collect();
    for (slug, file) in &layout.role_skills {
        if !declared.contains(slug) && !roles.iter().any(|role| &role.slug == slug) {
            context.report(
                *file,
                None,
                "role-skill-orphan",
                format!("`roles/{}/SKILL.md` belongs to no declared role", sanitize(slug)),
                "declare the role in `roles/NN-<slug>.kdl` or remove the folder",
            );
        }
    }
}
