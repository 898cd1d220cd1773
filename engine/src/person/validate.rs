//! Assembling the person model from a package and its libraries, and every rule that
//! spans files: references, definitions strictness, identities, seats, tiers, colours
//! and the Core rules. Each rule has its own stable diagnostic code.

use std::collections::{BTreeMap, BTreeSet};

use crate::color::{self, GateFailure, Lab};
use crate::db::{Package, PackageKind, PersonSource, SourceFile};
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::file_queries::skill_document;
use crate::person::declaration::{
    InspirationUse, PersonalityDeclaration, RoleDeclaration, Spanned, inspiration_declaration, manifest_declaration,
    personality_declaration, role_declaration,
};
use crate::person::layout::{PackageLayout, package_layout};
use crate::person::{
    Colour, Identity, IdentityForm, InspirationReference, MODEL_TIERS, PersonModel, Personality, Role, Seat, SkillFile,
};
use crate::skill::{SkillDocument, content_digest};

/// The most words a role skill body may hold after its title.
pub const ROLE_SKILL_MAX_WORDS: usize = 400;
/// The fewest paragraphs a role skill body (or legacy briefing) must hold.
pub const ROLE_SKILL_MIN_PARAGRAPHS: usize = 3;
/// The most words a personality skill body may hold.
pub const PERSONALITY_SKILL_MAX_WORDS: usize = 320;
/// Core: roles and personalities in the embedded default.
pub const CORE_ROLE_COUNT: usize = 7;
pub const CORE_PERSONALITY_COUNT: usize = 10;
/// Core: personalities per role, and the most roles one personality may serve.
pub const CORE_MELD_SIZE: usize = 2;
pub const CORE_MAX_ROLES_PER_PERSONALITY: usize = 3;

struct Context<'db> {
    db: &'db dyn salsa::Database,
    diagnostics: Vec<Diagnostic>,
}

impl Context<'_> {
    fn report(
        &mut self,
        file: SourceFile,
        span: Option<Span>,
        code: &'static str,
        message: String,
        hint: impl Into<String>,
    ) {
        let diagnostic = Diagnostic::error(code, message)
            .in_file(file.display_path(self.db))
            .at(span.or(Some(Span::new(0, 0))))
            .hint(hint);
        self.diagnostics.push(diagnostic);
    }

    fn report_package(
        &mut self,
        package: Package,
        relative: &str,
        code: &'static str,
        message: String,
        hint: impl Into<String>,
    ) {
        let label = package.label(self.db);
        let diagnostic = Diagnostic::error(code, message).in_file(format!("{label}/{relative}")).hint(hint);
        self.diagnostics.push(diagnostic);
    }

    fn extend(&mut self, diagnostics: &[Diagnostic]) {
        self.diagnostics.extend_from_slice(diagnostics);
    }

    fn skill_file(&mut self, file: SourceFile, id: &str) -> (SkillFile, SkillDocument) {
        let parsed = skill_document(self.db, file);
        self.extend(&parsed.diagnostics);
        let document = parsed.value.clone();
        let bytes = file.bytes(self.db).clone();
        let skill = SkillFile {
            id: id.to_owned(),
            source: file.display_path(self.db),
            relative_path: file.relative_path(self.db).clone(),
            digest: content_digest(&bytes),
            description: document.description.clone().unwrap_or_default(),
            body: document.body(&bytes).to_owned(),
            bytes,
        };
        (skill, document)
    }
}

/// Loads and validates the selected person source. The model is complete when the
/// diagnostics hold no error; with errors it holds what could be read.
#[salsa::tracked(returns(ref), no_eq)]
pub fn person_model(db: &dyn salsa::Database, source: PersonSource) -> Parsed<PersonModel> {
    let package = source.package(db);
    let core = source.core_rules(db);
    let mut context = Context { db, diagnostics: Vec::new() };

    let packages: Vec<Package> = std::iter::once(package).chain(source.libraries(db).iter().copied()).collect();
    let mut layouts: Vec<&PackageLayout> = Vec::new();
    for &each in &packages {
        context.extend(each.load_diagnostics(db));
        let layout = package_layout(db, each);
        context.extend(&layout.diagnostics);
        layouts.push(&layout.value);
    }

    // Manifests.
    let mut person_name = String::new();
    for (&each, layout) in packages.iter().zip(&layouts) {
        let is_person = each.kind(db) == PackageKind::Person;
        let expected = if is_person { "person" } else { "library" };
        match layout.manifest {
            Some(file) => {
                let parsed = manifest_declaration(db, file, expected);
                context.extend(&parsed.diagnostics);
                if is_person && let Some(name) = &parsed.value {
                    person_name = name.clone();
                }
            }
            None if each.embedded(db) && !is_person => {}
            None => context.report_package(
                each,
                &format!("{expected}.kdl"),
                "manifest-missing",
                format!("the package has no `{expected}.kdl`"),
                format!("create `{expected}.kdl` holding exactly `{expected} \"<name>\"`"),
            ),
        }
    }
    let source_id = if package.embedded(db) { "roster:core".to_owned() } else { format!("person:{person_name}") };

    // Inspirations declared by every package.
    let mut inspirations: BTreeMap<String, (SourceFile, Span)> = BTreeMap::new();
    for layout in &layouts {
        for numbered in &layout.inspirations {
            let parsed = inspiration_declaration(db, numbered.file);
            context.extend(&parsed.diagnostics);
            let Some(declaration) = &parsed.value else { continue };
            check_file_name(&mut context, numbered.file, &numbered.slug, &declaration.id, "inspiration");
            if inspirations.contains_key(&declaration.id.value) {
                context.report(
                    numbered.file,
                    Some(declaration.id.span),
                    "duplicate-inspiration",
                    format!("inspiration `{}` is declared twice", declaration.id.value),
                    "give each inspiration a unique id",
                );
            } else {
                inspirations.insert(declaration.id.value.clone(), (numbered.file, declaration.id.span));
            }
        }
    }
    let mut used_inspirations: BTreeSet<String> = BTreeSet::new();
    // When a declaration file does not parse, its references are unknown, so rules
    // about unused entries would only repeat the parse error.
    let mut incomplete = false;
    let mut resolve_inspirations = |context: &mut Context<'_>, file: SourceFile, uses: &[InspirationUse]| {
        let mut references = Vec::new();
        for used in uses {
            if inspirations.contains_key(&used.id.value) {
                used_inspirations.insert(used.id.value.clone());
                references.push(InspirationReference { id: used.id.value.clone(), fit: used.fit.clone() });
            } else {
                context.report(
                    file,
                    Some(used.id.span),
                    "unknown-inspiration",
                    format!("inspiration `{}` is not declared", sanitize(&used.id.value)),
                    "declare it in `inspirations/NN-<id>.kdl` of this package or a library",
                );
            }
        }
        references
    };

    // The personality catalogue.
    let mut personalities: Vec<Personality> = Vec::new();
    let mut personality_locations: BTreeMap<String, (SourceFile, Span)> = BTreeMap::new();
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    for (&each, layout) in packages.iter().zip(&layouts) {
        let mut bound: BTreeSet<String> = BTreeSet::new();
        for numbered in &layout.personalities {
            let parsed = personality_declaration(db, numbered.file);
            context.extend(&parsed.diagnostics);
            let Some(declaration) = &parsed.value else {
                incomplete = true;
                continue;
            };
            check_file_name(&mut context, numbered.file, &numbered.slug, &declaration.slug, "personality");
            let references = resolve_inspirations(&mut context, numbered.file, &declaration.inspirations);
            if personalities.iter().any(|known| known.slug == declaration.slug.value) {
                context.report(
                    numbered.file,
                    Some(declaration.slug.span),
                    "duplicate-personality",
                    format!("personality `{}` is declared more than once", declaration.slug.value),
                    "a personality slug is unique across the package and its libraries",
                );
                continue;
            }
            if let Some(personality) =
                load_personality(&mut context, each, layout, numbered.file, declaration, &mut bound, &mut aliases)
            {
                personality_locations.insert(personality.slug.clone(), (numbered.file, declaration.slug.span));
                personalities.push(Personality { inspirations: references, ..personality });
            }
        }
        check_definitions(&mut context, each, layout, &bound);
    }

    // Roles.
    let mut roles: Vec<Role> = Vec::new();
    let mut methods_seen: BTreeMap<String, String> = BTreeMap::new();
    let mut role_files: Vec<(SourceFile, Span)> = Vec::new();
    let layout = layouts[0];
    if package.kind(db) == PackageKind::Person {
        for numbered in &layout.roles {
            let parsed = role_declaration(db, numbered.file);
            context.extend(&parsed.diagnostics);
            let Some(declaration) = &parsed.value else {
                incomplete = true;
                continue;
            };
            check_file_name(&mut context, numbered.file, &numbered.slug, &declaration.slug, "role");
            let references = resolve_inspirations(&mut context, numbered.file, &declaration.inspirations);
            if roles.iter().any(|known| known.slug == declaration.slug.value) {
                context.report(
                    numbered.file,
                    Some(declaration.slug.span),
                    "duplicate-role",
                    format!("role `{}` is declared more than once", declaration.slug.value),
                    "a role slug is unique in its package",
                );
                continue;
            }
            let loaded =
                load_role(&mut context, layout, numbered.file, declaration, &personalities, &mut methods_seen, core);
            if let Some(role) = loaded {
                role_files.push((
                    numbered.file,
                    declaration.personalities.as_ref().map_or(declaration.slug.span, |list| list.span),
                ));
                roles.push(Role { inspirations: references, ..role });
            }
        }
        check_orphan_role_folders(&mut context, package, layout, &roles);
        if layout.roles.is_empty() {
            context.report_package(
                package,
                "roles",
                "no-roles",
                "the package declares no roles".to_owned(),
                "add at least one `roles/NN-<slug>.kdl`",
            );
        }
    }

    // Inspirations that nothing uses.
    for (id, (file, span)) in &inspirations {
        if !incomplete && !used_inspirations.contains(id) {
            context.report(
                *file,
                Some(*span),
                "unused-inspiration",
                format!("inspiration `{id}` is not used by any role or personality"),
                "reference it with `inspiration \"<id>\" { fit \"…\" }` or remove the file",
            );
        }
    }

    // The invariant.
    let mut invariant = String::new();
    if package.kind(db) == PackageKind::Person {
        match layout.invariant {
            Some(file) => {
                let text = String::from_utf8_lossy(file.bytes(db)).into_owned();
                if text.trim().is_empty() {
                    context.report(
                        file,
                        None,
                        "invariant-empty",
                        "the personality invariant is empty".to_owned(),
                        "write the invariant every personality keeps",
                    );
                }
                invariant = text;
            }
            None => context.report_package(
                package,
                "definitions/INVARIANT.md",
                "invariant-missing",
                "the package has no `definitions/INVARIANT.md`".to_owned(),
                "write the personality invariant there",
            ),
        }
    }

    if core && !incomplete {
        let locations =
            CoreLocations { manifest: layout.manifest, roles: &role_files, personalities: &personality_locations };
        check_core(&mut context, package, &roles, &personalities, &locations);
    }

    let model = PersonModel { source: source_id, person: person_name, core, roles, personalities, invariant };
    let mut diagnostics = context.diagnostics;
    diagnostics.dedup();
    Parsed::new(model, crate::diagnostic::bound_per_file(diagnostics))
}

fn check_file_name(
    context: &mut Context<'_>,
    file: SourceFile,
    file_slug: &str,
    declared: &Spanned<String>,
    what: &str,
) {
    if file_slug != declared.value {
        context.report(
            file,
            Some(declared.span),
            "file-name-mismatch",
            format!("{what} `{}` is declared in a file named for `{file_slug}`", sanitize(&declared.value)),
            format!("rename the file to `NN-{}.kdl` or the {what} to `{file_slug}`", sanitize(&declared.value)),
        );
    }
}

fn load_personality(
    context: &mut Context<'_>,
    package: Package,
    layout: &PackageLayout,
    file: SourceFile,
    declaration: &PersonalityDeclaration,
    bound: &mut BTreeSet<String>,
    aliases: &mut BTreeMap<String, String>,
) -> Option<Personality> {
    let slug = &declaration.slug.value;
    let expected_skill = format!("personality-{slug}");
    let skill_id = declaration.skill.as_ref().map(|skill| skill.value.clone())?;
    if skill_id != expected_skill {
        let span = declaration.skill.as_ref().map(|skill| skill.span);
        context.report(
            file,
            span,
            "personality-skill-binding",
            format!("personality `{slug}` binds `{}`, expected `{expected_skill}`", sanitize(&skill_id)),
            format!("write `skill=\"{expected_skill}\"`"),
        );
    }
    bound.insert(skill_id.clone());

    let colour = declaration.color.as_ref().and_then(|written| {
        let Some(rgb) = color::parse_hex(&written.value) else {
            context.report(
                file,
                Some(written.span),
                "color-invalid",
                format!("`{}` is not a `#rrggbb` colour", sanitize(&written.value)),
                "write six hexadecimal digits after `#`, e.g. `#8f8c47`",
            );
            return None;
        };
        let lab = color::oklab(rgb);
        let failure = match color::gate(lab) {
            Ok(()) => None,
            Err(GateFailure::TooDark(lightness)) => Some((
                "color-too-dark",
                format!("colour `{}` has OKLab lightness {lightness:.3}, below 0.60", written.value),
            )),
            Err(GateFailure::TooLight(lightness)) => Some((
                "color-too-light",
                format!("colour `{}` has OKLab lightness {lightness:.3}, above 0.80", written.value),
            )),
            Err(GateFailure::TooGray(chroma)) => {
                Some(("color-too-gray", format!("colour `{}` has OKLab chroma {chroma:.3}, below 0.05", written.value)))
            }
        };
        if let Some((code, message)) = failure {
            context.report(
                file,
                Some(written.span),
                code,
                message,
                "pick a colour with OKLab lightness 0.60–0.80 and chroma at least 0.05",
            );
        }
        Some(Colour { hex: written.value.to_lowercase(), rgb, lab })
    });

    for alias in &declaration.aliases {
        if let Some(owner) = aliases.get(&alias.value) {
            context.report(
                file,
                Some(alias.span),
                "duplicate-alias",
                format!("alias `{}` is already used by personality `{owner}`", sanitize(&alias.value)),
                "aliases are unique across the catalogue",
            );
        } else {
            aliases.insert(alias.value.clone(), slug.clone());
        }
    }

    let folder = layout.definitions.get(&skill_id);
    let skill_file = match folder.and_then(|folder| folder.skill) {
        Some(skill_file) => skill_file,
        None => {
            context.report(
                file,
                declaration.skill.as_ref().map(|skill| skill.span),
                "definition-missing",
                format!(
                    "personality `{slug}` has no `definitions/skills/{}/SKILL.md` in {}",
                    sanitize(&skill_id),
                    package.label(context.db)
                ),
                "write the personality skill there",
            );
            return None;
        }
    };
    let (skill, document) = context.skill_file(skill_file, &skill_id);
    if document.empty {
        // Reported once by `check_definitions`.
        return None;
    }
    if document.words > PERSONALITY_SKILL_MAX_WORDS {
        context.report(
            skill_file,
            None,
            "personality-skill-too-long",
            format!(
                "personality skill has {} words, at most {PERSONALITY_SKILL_MAX_WORDS} are allowed",
                document.words
            ),
            "shorten the body after the title",
        );
    }
    Some(Personality {
        slug: slug.clone(),
        skill,
        // An unreadable colour is already reported; a stand-in keeps the personality in
        // the catalogue so roles that name it do not report a second, misleading error.
        colour: colour.unwrap_or_else(|| Colour::from_lab(Lab { l: 0.7, a: 0.0, b: 0.0 })),
        motif: declaration.motif.clone().unwrap_or_default(),
        emblem: declaration.emblem.clone(),
        form: declaration.form.clone(),
        sound_mark: declaration.sound_mark.clone(),
        aliases: declaration.aliases.iter().map(|alias| alias.value.clone()).collect(),
        verbs: declaration.verbs.clone(),
        inspirations: Vec::new(),
        package: package.label(context.db).clone(),
    })
}

/// Definitions strictness: every folder under `definitions/skills/` is bound by exactly
/// one personality of the same package, holds a non-empty `SKILL.md`, and names itself.
fn check_definitions(context: &mut Context<'_>, package: Package, layout: &PackageLayout, bound: &BTreeSet<String>) {
    let db = context.db;
    for (id, folder) in &layout.definitions {
        if !bound.contains(id) {
            match folder.skill {
                Some(file) => context.report(
                    file,
                    None,
                    "definition-extra",
                    format!("definition `{}` is not bound by any personality of this package", sanitize(id)),
                    "remove the folder or bind it with `skill=\"…\"` on a personality",
                ),
                None => context.report_package(
                    package,
                    &folder.folder,
                    "definition-extra",
                    format!("definition folder `{}` is not bound by any personality", sanitize(id)),
                    "remove the folder",
                ),
            }
            continue;
        }
        // A bound folder without `SKILL.md` is reported at the personality that binds it.
        let Some(file) = folder.skill else { continue };
        let document = &skill_document(db, file).value;
        if document.empty {
            context.report(
                file,
                None,
                "definition-empty",
                format!("definition `{}` is empty", sanitize(id)),
                "write the personality skill",
            );
            continue;
        }
        match &document.name {
            Some(name) if name == id => {}
            Some(name) => context.report(
                file,
                document.name_span,
                "definition-mismatch",
                format!("definition in folder `{}` is named `{}`", sanitize(id), sanitize(name)),
                format!("write `name: {}` in the frontmatter", sanitize(id)),
            ),
            None => context.report(
                file,
                None,
                "definition-mismatch",
                format!("definition `{}` has no frontmatter `name:`", sanitize(id)),
                format!("start the file with `---`, `name: {}`, `description: …`, `---`", sanitize(id)),
            ),
        }
    }
}

fn load_role(
    context: &mut Context<'_>,
    layout: &PackageLayout,
    file: SourceFile,
    declaration: &RoleDeclaration,
    personalities: &[Personality],
    methods_seen: &mut BTreeMap<String, String>,
    core: bool,
) -> Option<Role> {
    let db = context.db;
    let slug = declaration.slug.value.clone();
    let role_span = Some(declaration.slug.span);

    let purpose = match &declaration.purpose {
        Some(purpose) => purpose.clone(),
        None => {
            context.report(
                file,
                role_span,
                "missing-node",
                format!("role `{slug}` has no `purpose`"),
                "add `purpose \"…\"`, one sentence",
            );
            String::new()
        }
    };

    // The role skill id and its body.
    let expected_skill = format!("role-{slug}");
    match &declaration.skill {
        Some(skill) if skill.value != expected_skill => context.report(
            file,
            Some(skill.span),
            "role-skill-name",
            format!("role `{slug}` names skill `{}`, expected `{expected_skill}`", sanitize(&skill.value)),
            format!("write `skill \"{expected_skill}\"`"),
        ),
        Some(_) => {}
        // A legacy role carries its body inline; its skill id is implied as `role-<slug>`.
        None if declaration.briefing.is_some() => {}
        None => context.report(
            file,
            role_span,
            "missing-node",
            format!("role `{slug}` has no `skill`"),
            format!("add `skill \"{expected_skill}\"`"),
        ),
    }
    let skill = match (layout.role_skills.get(&slug), &declaration.briefing) {
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
            skill
        }
        (None, Some(briefing)) => {
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
                id: expected_skill.clone(),
                source: file.display_path(db),
                relative_path: file.relative_path(db).clone(),
                digest: content_digest(&bytes),
                description: purpose.clone(),
                body: briefing.value.trim().to_owned(),
                bytes: bytes.into(),
            }
        }
        (None, None) => {
            context.report(
                file,
                role_span,
                "role-skill-missing",
                format!("role `{slug}` has no `roles/{slug}/SKILL.md`"),
                format!("write the role skill at `roles/{slug}/SKILL.md`"),
            );
            return None;
        }
    };

    // Methods.
    let mut methods = Vec::new();
    for method in &declaration.methods {
        if let Some(owner) = methods_seen.get(&method.value) {
            context.report(
                file,
                Some(method.span),
                "duplicate-method",
                format!("method `{}` is already declared by role `{owner}`", method.value),
                "method ids are unique across the package",
            );
            continue;
        }
        methods_seen.insert(method.value.clone(), slug.clone());
        let folder = layout.methods.get(&(slug.clone(), method.value.clone()));
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
    for ((owner, method), folder) in layout.methods.range((slug.clone(), String::new())..) {
        if owner != &slug {
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

    // Model tiers.
    let mut model_tiers = Vec::new();
    if let Some(declared) = &declaration.model_tiers {
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
        model_tiers = MODEL_TIERS.iter().filter(|tier| seen.contains(**tier)).map(|tier| (*tier).to_owned()).collect();
    } else if core {
        context.report(
            file,
            role_span,
            "core-model-tiers-required",
            format!("Core role `{slug}` does not declare its model tiers"),
            "add `model-tier \"frontier\" …` with the tiers the role supports",
        );
    }
    if declaration.model_tiers.is_none() {
        model_tiers = MODEL_TIERS.iter().map(|tier| (*tier).to_owned()).collect();
    }

    // The meld.
    let mut meld = Vec::new();
    let mut lab_components: Vec<Lab> = Vec::new();
    match &declaration.personalities {
        None => context.report(
            file,
            role_span,
            "meld-empty",
            format!("role `{slug}` names no personalities"),
            "add `personality \"<slug>\" …` with at least one personality",
        ),
        Some(list) => {
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
            if core && list.value.len() != crate::person::validate::CORE_MELD_SIZE {
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
        }
    }

    // Identity and seats.
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
    if core && declaration.identity.is_none() {
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
    if declaration.identity.is_none() && declaration.seats.is_empty() && !core {
        context.report(
            file,
            role_span,
            "identity-missing",
            format!("role `{slug}` has no identity"),
            "add `identity name=\"…\" pronouns=\"…\"` or a `seat` with name and pronouns",
        );
    }
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
        if let Some(tier) = &seat.tier {
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
                    format!(
                        "seat `{}` routes to tier `{}`, which role `{slug}` does not support",
                        seat.key.value, tier.value
                    ),
                    format!("use one of {}", model_tiers.join(", ")),
                );
            }
        }
        let (name, pronouns) = match (&declaration.identity, &seat.name, &seat.pronouns) {
            (Some(identity), _, _) => identity.value.clone(),
            (None, Some(name), Some(pronouns)) => (name.clone(), pronouns.clone()),
            (None, _, _) => {
                context.report(
                    file,
                    Some(seat.key.span),
                    "identity-missing",
                    format!(
                        "seat `{}` of role `{slug}` has no name and pronouns, and the role has no `identity`",
                        seat.key.value
                    ),
                    "add `identity name=\"…\" pronouns=\"…\"` to the role",
                );
                (String::new(), String::new())
            }
        };
        seats.push(Seat {
            key: seat.key.value.clone(),
            harness: seat.harness.clone(),
            name,
            pronouns,
            channel: seat.channel.clone(),
            tier: seat.tier.as_ref().map(|tier| tier.value.clone()),
        });
    }
    let identity = match &declaration.identity {
        Some(identity) => Identity { name: identity.value.0.clone(), pronouns: identity.value.1.clone() },
        None => seats
            .first()
            .map(|seat| Identity { name: seat.name.clone(), pronouns: seat.pronouns.clone() })
            .unwrap_or(Identity { name: String::new(), pronouns: String::new() }),
    };

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

fn skill_title(skill: &SkillFile) -> Option<String> {
    skill
        .body
        .lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| line.strip_prefix("# "))
        .map(|title| title.trim().to_owned())
}

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

fn check_orphan_role_folders(context: &mut Context<'_>, package: Package, layout: &PackageLayout, roles: &[Role]) {
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
    let _ = package;
}

/// Where Core diagnostics point: the manifest for counts, each role's meld and each
/// personality's declaration.
struct CoreLocations<'a> {
    manifest: Option<SourceFile>,
    roles: &'a [(SourceFile, Span)],
    personalities: &'a BTreeMap<String, (SourceFile, Span)>,
}

fn report_at(
    context: &mut Context<'_>,
    package: Package,
    location: Option<(SourceFile, Option<Span>)>,
    fallback: &str,
    code: &'static str,
    message: String,
    hint: &str,
) {
    match location {
        Some((file, span)) => context.report(file, span, code, message, hint),
        None => context.report_package(package, fallback, code, message, hint),
    }
}

fn check_core(
    context: &mut Context<'_>,
    package: Package,
    roles: &[Role],
    personalities: &[Personality],
    locations: &CoreLocations<'_>,
) {
    let role_files = locations.roles;
    let manifest = locations.manifest.map(|file| (file, None));
    if roles.len() != CORE_ROLE_COUNT {
        report_at(
            context,
            package,
            manifest,
            "roles",
            "core-role-count",
            format!("Core declares {} roles, exactly {CORE_ROLE_COUNT} are required", roles.len()),
            "the embedded default has seven roles",
        );
    }
    if personalities.len() != CORE_PERSONALITY_COUNT {
        report_at(
            context,
            package,
            manifest,
            "personalities",
            "core-personality-count",
            format!(
                "Core declares {} personalities, exactly {CORE_PERSONALITY_COUNT} are required",
                personalities.len()
            ),
            "the embedded default has ten personalities",
        );
    }
    for personality in personalities {
        let users: Vec<&str> = roles
            .iter()
            .filter(|role| role.personalities.contains(&personality.slug))
            .map(|role| role.slug.as_str())
            .collect();
        let location = locations.personalities.get(&personality.slug).map(|(file, span)| (*file, Some(*span)));
        if users.is_empty() {
            report_at(
                context,
                package,
                location,
                &personality.skill.relative_path,
                "core-personality-unused",
                format!("Core personality `{}` is used by no role", personality.slug),
                "every Core personality serves at least one role",
            );
        } else if users.len() > CORE_MAX_ROLES_PER_PERSONALITY {
            report_at(
                context,
                package,
                location,
                &personality.skill.relative_path,
                "core-personality-overused",
                format!(
                    "Core personality `{}` is used by {} roles ({}), at most {CORE_MAX_ROLES_PER_PERSONALITY} are allowed",
                    personality.slug,
                    users.len(),
                    users.join(", ")
                ),
                "move it out of one of those melds",
            );
        }
    }
    for (index, role) in roles.iter().enumerate() {
        for (earlier_index, earlier) in roles.iter().enumerate().take(index) {
            let distance = role.favourite.lab.distance(earlier.favourite.lab);
            if distance < color::CORE_DISTANCE_MIN {
                let (file, span) = role_files[index];
                let _ = earlier_index;
                context.report(
                    file,
                    Some(span),
                    "core-colors-too-close",
                    format!(
                        "favourite colours of roles `{}` ({}) and `{}` ({}) are {distance:.3} apart in OKLab, at least 0.08 is required",
                        earlier.slug, earlier.favourite.hex, role.slug, role.favourite.hex
                    ),
                    "change a personality colour or the meld of one of the two roles",
                );
            }
        }
    }
}

fn known_hint<'a>(what: &str, names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() { format!("no {what} are declared") } else { format!("known {what}: {}", names.join(", ")) }
}
