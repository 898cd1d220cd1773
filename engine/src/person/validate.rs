//! Assembling the person model from a package and its libraries, and every rule that
//! spans files: references, definitions strictness, identities, seats, tiers, colours
//! and the Core rules. Each rule has its own stable diagnostic code.

use std::collections::{BTreeMap, BTreeSet};

use crate::color::{self, GateFailure, Lab};
use crate::db::{Package, PackageKind, PersonSource, SourceFile};
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::file_queries::skill_document;
use crate::person::declaration::{
    InspirationUse, PersonalityDeclaration, Spanned, inspiration_declaration, manifest_declaration,
    personality_declaration,
};
use crate::person::package_layout::{PackageLayout, package_layout};
use crate::person::{Colour, InspirationReference, PersonModel, Personality, Role, SkillFile};
use crate::skill::{SkillDocument, content_digest};

mod role;

use role::load_roles;

/// The most words a role skill body may hold after its title.
pub(crate) const ROLE_SKILL_MAX_WORDS: usize = 400;
/// The fewest paragraphs a role skill body (or legacy briefing) must hold.
pub(crate) const ROLE_SKILL_MIN_PARAGRAPHS: usize = 3;
/// The most words a personality skill body may hold.
pub(crate) const PERSONALITY_SKILL_MAX_WORDS: usize = 320;
/// Core: roles and personalities in the embedded default.
pub(crate) const CORE_ROLE_COUNT: usize = 7;
pub(crate) const CORE_PERSONALITY_COUNT: usize = 10;
/// Core: personalities per role, and the most roles one personality may serve.
pub(crate) const CORE_MELD_SIZE: usize = 2;
pub(crate) const CORE_MAX_ROLES_PER_PERSONALITY: usize = 3;

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
    let layouts = load_layouts(&mut context, &packages);
    let person_name = read_manifests(&mut context, &packages, &layouts);
    let source_id = if package.embedded(db) { "roster:core".to_owned() } else { format!("person:{person_name}") };

    let mut inspirations = InspirationRegistry::declared_by(&mut context, &layouts);
    let catalogue = load_personality_catalogue(&mut context, &packages, &layouts, &mut inspirations);
    let layout = layouts[0];
    let personalities = (catalogue.personalities.as_slice(), &catalogue.broken);
    let roles = load_roles(&mut context, package, layout, personalities, &mut inspirations, core);
    // When a declaration file does not parse, its references are unknown, so rules
    // about unused entries would only repeat the parse error.
    let incomplete = catalogue.incomplete || roles.incomplete;
    if !incomplete {
        inspirations.report_unused(&mut context);
    }
    let invariant = read_invariant(&mut context, package, layout);

    if core && !incomplete {
        let locations = CoreLocations {
            manifest: layout.manifest,
            roles: &roles.files,
            personalities: &catalogue.locations,
            declared: (roles.roles.len() + roles.broken.len(), catalogue.personalities.len() + catalogue.broken.len()),
        };
        check_core(&mut context, package, &roles.roles, &catalogue.personalities, &locations);
    }

    let model = PersonModel {
        source: source_id,
        person: person_name,
        core,
        roles: roles.roles,
        personalities: catalogue.personalities,
        invariant,
        overlays: Vec::new(),
    };
    let mut diagnostics = context.diagnostics;
    diagnostics.dedup();
    Parsed::new(model, crate::diagnostic::bound_per_file(diagnostics))
}

/// The layout of every package, with the diagnostics of loading and laying it out.
fn load_layouts<'db>(context: &mut Context<'db>, packages: &[Package]) -> Vec<&'db PackageLayout> {
    let db = context.db;
    let mut layouts = Vec::new();
    for &each in packages {
        context.extend(each.load_diagnostics(db));
        let layout = package_layout(db, each);
        context.extend(&layout.diagnostics);
        layouts.push(&layout.value);
    }
    layouts
}

/// Every package's manifest (`person.kdl` or `library.kdl`); returns the person's name.
fn read_manifests(context: &mut Context<'_>, packages: &[Package], layouts: &[&PackageLayout]) -> String {
    let db = context.db;
    let mut person_name = String::new();
    for (&each, layout) in packages.iter().zip(layouts) {
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
    person_name
}

/// The inspirations every package declares, and which of them a role or personality uses.
struct InspirationRegistry {
    declared: BTreeMap<String, (SourceFile, Span)>,
    used: BTreeSet<String>,
}

impl InspirationRegistry {
    /// Reads the inspiration files of every package; an id is declared once.
    fn declared_by(context: &mut Context<'_>, layouts: &[&PackageLayout]) -> Self {
        let db = context.db;
        let mut declared: BTreeMap<String, (SourceFile, Span)> = BTreeMap::new();
        for layout in layouts {
            for numbered in &layout.inspirations {
                let parsed = inspiration_declaration(db, numbered.file);
                context.extend(&parsed.diagnostics);
                let Some(declaration) = &parsed.value else { continue };
                check_file_name(context, numbered.file, &numbered.slug, &declaration.id, "inspiration");
                if declared.contains_key(&declaration.id.value) {
                    context.report(
                        numbered.file,
                        Some(declaration.id.span),
                        "duplicate-inspiration",
                        format!("inspiration `{}` is declared twice", declaration.id.value),
                        "give each inspiration a unique id",
                    );
                } else {
                    declared.insert(declaration.id.value.clone(), (numbered.file, declaration.id.span));
                }
            }
        }
        Self { declared, used: BTreeSet::new() }
    }

    /// The references a declaration makes, each to a declared inspiration.
    fn resolve(
        &mut self,
        context: &mut Context<'_>,
        file: SourceFile,
        uses: &[InspirationUse],
    ) -> Vec<InspirationReference> {
        let mut references = Vec::new();
        for used in uses {
            if self.declared.contains_key(&used.id.value) {
                self.used.insert(used.id.value.clone());
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
    }

    /// Inspirations that nothing uses.
    fn report_unused(&self, context: &mut Context<'_>) {
        for (id, (file, span)) in &self.declared {
            if !self.used.contains(id) {
                context.report(
                    *file,
                    Some(*span),
                    "unused-inspiration",
                    format!("inspiration `{id}` is not used by any role or personality"),
                    "reference it with `inspiration \"<id>\" { fit \"…\" }` or remove the file",
                );
            }
        }
    }
}

/// The personality catalogue across the package and its libraries.
struct PersonalityCatalogue {
    personalities: Vec<Personality>,
    /// Where each personality is declared, for the Core rules.
    locations: BTreeMap<String, (SourceFile, Span)>,
    /// Whether a personality file did not parse.
    incomplete: bool,
    /// Personalities declared whose own errors kept them out (by slug, or by file name
    /// when the file did not parse): roles naming one do not report it unknown.
    broken: BTreeSet<String>,
}

/// One package being read: its handle and the files it holds.
#[derive(Clone, Copy)]
struct PackageFiles<'a> {
    package: Package,
    layout: &'a PackageLayout,
}

/// Reads every package's personalities, then checks each package's definitions.
fn load_personality_catalogue(
    context: &mut Context<'_>,
    packages: &[Package],
    layouts: &[&PackageLayout],
    inspirations: &mut InspirationRegistry,
) -> PersonalityCatalogue {
    let db = context.db;
    let mut catalogue = PersonalityCatalogue {
        personalities: Vec::new(),
        locations: BTreeMap::new(),
        incomplete: false,
        broken: BTreeSet::new(),
    };
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    for (&package, &layout) in packages.iter().zip(layouts) {
        let files = PackageFiles { package, layout };
        let mut bound: BTreeSet<String> = BTreeSet::new();
        for numbered in &layout.personalities {
            let parsed = personality_declaration(db, numbered.file);
            context.extend(&parsed.diagnostics);
            let Some(declaration) = &parsed.value else {
                catalogue.incomplete = true;
                catalogue.broken.insert(numbered.slug.clone());
                continue;
            };
            check_file_name(context, numbered.file, &numbered.slug, &declaration.slug, "personality");
            let references = inspirations.resolve(context, numbered.file, &declaration.inspirations);
            if catalogue.personalities.iter().any(|known| known.slug == declaration.slug.value) {
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
                load_personality(context, files, numbered.file, declaration, &mut bound, &mut aliases)
            {
                catalogue.locations.insert(personality.slug.clone(), (numbered.file, declaration.slug.span));
                catalogue.personalities.push(Personality { inspirations: references, ..personality });
            } else {
                catalogue.broken.insert(declaration.slug.value.clone());
            }
        }
        check_definitions(context, package, layout, &bound);
    }
    catalogue
}

/// The personality invariant of a person package; a library has none.
fn read_invariant(context: &mut Context<'_>, package: Package, layout: &PackageLayout) -> String {
    let db = context.db;
    if package.kind(db) != PackageKind::Person {
        return String::new();
    }
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
            text
        }
        None => {
            context.report_package(
                package,
                "definitions/INVARIANT.md",
                "invariant-missing",
                "the package has no `definitions/INVARIANT.md`".to_owned(),
                "write the personality invariant there",
            );
            String::new()
        }
    }
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

/// One personality's rules: its skill binding, colour, aliases and skill file.
fn load_personality(
    context: &mut Context<'_>,
    files: PackageFiles<'_>,
    file: SourceFile,
    declaration: &PersonalityDeclaration,
    bound: &mut BTreeSet<String>,
    aliases: &mut BTreeMap<String, String>,
) -> Option<Personality> {
    let slug = &declaration.slug.value;
    let skill_id = personality_skill_id(context, file, declaration)?;
    bound.insert(skill_id.clone());
    let colour = declaration.color.as_ref().and_then(|written| read_colour(context, file, written));
    register_aliases(context, file, declaration, aliases);
    let skill = load_personality_skill(context, files, file, declaration, &skill_id)?;
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
        package: files.package.label(context.db).clone(),
    })
}

/// The skill a personality binds, which should be `personality-<slug>`; `None` when it
/// binds none (the declaration already reported the missing property).
fn personality_skill_id(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &PersonalityDeclaration,
) -> Option<String> {
    let slug = &declaration.slug.value;
    let expected_skill = format!("personality-{slug}");
    let skill = declaration.skill.as_ref()?;
    if skill.value != expected_skill {
        context.report(
            file,
            Some(skill.span),
            "personality-skill-binding",
            format!("personality `{slug}` binds `{}`, expected `{expected_skill}`", sanitize(&skill.value)),
            format!("write `skill=\"{expected_skill}\"`"),
        );
    }
    Some(skill.value.clone())
}

/// A personality colour: a `#rrggbb` value inside the lightness and chroma gate.
/// A colour outside the gate is reported and still kept.
fn read_colour(context: &mut Context<'_>, file: SourceFile, written: &Spanned<String>) -> Option<Colour> {
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
    if let Some((code, message)) = colour_gate_failure(lab, &written.value) {
        context.report(
            file,
            Some(written.span),
            code,
            message,
            "pick a colour with OKLab lightness 0.60–0.80 and chroma at least 0.05",
        );
    }
    Some(Colour { hex: written.value.to_lowercase(), rgb, lab })
}

/// The code and message for a colour outside the gate, or `None` inside it.
fn colour_gate_failure(lab: Lab, written: &str) -> Option<(&'static str, String)> {
    match color::gate(lab) {
        Ok(()) => None,
        Err(GateFailure::TooDark(lightness)) => {
            Some(("color-too-dark", format!("colour `{written}` has OKLab lightness {lightness:.3}, below 0.60")))
        }
        Err(GateFailure::TooLight(lightness)) => {
            Some(("color-too-light", format!("colour `{written}` has OKLab lightness {lightness:.3}, above 0.80")))
        }
        Err(GateFailure::TooGray(chroma)) => {
            Some(("color-too-gray", format!("colour `{written}` has OKLab chroma {chroma:.3}, below 0.05")))
        }
    }
}

/// Records a personality's aliases; an alias belongs to one personality of the catalogue.
fn register_aliases(
    context: &mut Context<'_>,
    file: SourceFile,
    declaration: &PersonalityDeclaration,
    aliases: &mut BTreeMap<String, String>,
) {
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
            aliases.insert(alias.value.clone(), declaration.slug.value.clone());
        }
    }
}

/// The personality skill at `definitions/skills/<id>/SKILL.md` of the same package;
/// `None` when it is missing or empty.
fn load_personality_skill(
    context: &mut Context<'_>,
    files: PackageFiles<'_>,
    file: SourceFile,
    declaration: &PersonalityDeclaration,
    skill_id: &str,
) -> Option<SkillFile> {
    let slug = &declaration.slug.value;
    let folder = files.layout.definitions.get(skill_id);
    let Some(skill_file) = folder.and_then(|folder| folder.skill) else {
        context.report(
            file,
            declaration.skill.as_ref().map(|skill| skill.span),
            "definition-missing",
            format!(
                "personality `{slug}` has no `definitions/skills/{}/SKILL.md` in {}",
                sanitize(skill_id),
                files.package.label(context.db)
            ),
            "write the personality skill there",
        );
        return None;
    };
    let (skill, document) = context.skill_file(skill_file, skill_id);
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
    Some(skill)
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

/// Where Core diagnostics point: the manifest for counts, each role's meld and each
/// personality's declaration.
struct CoreLocations<'a> {
    manifest: Option<SourceFile>,
    roles: &'a [(SourceFile, Span)],
    personalities: &'a BTreeMap<String, (SourceFile, Span)>,
    /// Roles and personalities declared, those whose own errors kept them out included.
    declared: (usize, usize),
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
    let (declared_roles, declared_personalities) = locations.declared;
    if declared_roles != CORE_ROLE_COUNT {
        report_at(
            context,
            package,
            manifest,
            "roles",
            "core-role-count",
            format!("Core declares {declared_roles} roles, exactly {CORE_ROLE_COUNT} are required"),
            "the embedded default has seven roles",
        );
    }
    if declared_personalities != CORE_PERSONALITY_COUNT {
        report_at(
            context,
            package,
            manifest,
            "personalities",
            "core-personality-count",
            format!(
                "Core declares {declared_personalities} personalities, exactly {CORE_PERSONALITY_COUNT} are required"
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
        for earlier in roles.iter().take(index) {
            let distance = role.favourite.lab.distance(earlier.favourite.lab);
            if distance < color::CORE_DISTANCE_MIN {
                let (file, span) = role_files[index];
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
