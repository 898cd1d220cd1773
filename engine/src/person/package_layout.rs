//! Sorting a package's files into the layout of SPEC 3.1. Reads only paths, never bytes,
//! so editing a file's contents never re-runs it.

use std::collections::BTreeMap;

use crate::db::{Package, PackageKind, SourceFile};
use crate::diagnostic::{Diagnostic, Parsed, sanitize};
use crate::person::reader::is_slug;

/// A numbered declaration file `NN-<slug>.kdl`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct NumberedFile {
    pub slug: String,
    pub file: SourceFile,
}

/// One skill folder: its `SKILL.md` when present.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SkillFolder {
    pub folder: String,
    pub skill: Option<SourceFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct PackageLayout {
    pub manifest: Option<SourceFile>,
    pub roles: Vec<NumberedFile>,
    /// `roles/<slug>/SKILL.md` by slug.
    pub role_skills: BTreeMap<String, SourceFile>,
    /// `roles/<slug>/skills/<method>/` by (role slug, method id).
    pub methods: BTreeMap<(String, String), SkillFolder>,
    pub personalities: Vec<NumberedFile>,
    pub inspirations: Vec<NumberedFile>,
    pub invariant: Option<SourceFile>,
    /// `definitions/skills/<id>/` by id.
    pub definitions: BTreeMap<String, SkillFolder>,
}

fn numbered_slug(name: &str) -> Option<String> {
    let stem = name.strip_suffix(".kdl")?;
    let (number, slug) = stem.split_once('-')?;
    if number.len() != 2 || !number.bytes().all(|byte| byte.is_ascii_digit()) || !is_slug(slug) {
        return None;
    }
    Some(slug.to_owned())
}

/// Classifies every file of a package. Files at the top level outside the layout
/// (a README, a request) are ignored; unexpected files inside the layout's folders are
/// errors. Names starting with `.` are ignored everywhere.
#[salsa::tracked(returns(ref))]
pub fn package_layout(db: &dyn salsa::Database, package: Package) -> Parsed<PackageLayout> {
    let kind = package.kind(db);
    let embedded = package.embedded(db);
    let mut layout = PackageLayout::default();
    let mut diagnostics = Vec::new();
    for &file in package.files(db) {
        let relative = file.relative_path(db);
        let parts: Vec<&str> = relative.split('/').collect();
        if parts.iter().any(|part| part.starts_with('.')) {
            continue;
        }
        let unexpected = |hint: &str| {
            Diagnostic::error("unexpected-file", format!("`{}` is not part of the package layout", sanitize(relative)))
                .in_file(file.display_path(db))
                .at(Some(crate::diagnostic::Span::new(0, 0)))
                .hint(hint.to_owned())
        };
        match parts.as_slice() {
            ["person.kdl"] if kind == PackageKind::Person => layout.manifest = Some(file),
            // The embedded roster used as a library keeps its person manifest; ignore it.
            ["person.kdl"] if embedded => {}
            ["library.kdl"] if kind == PackageKind::Library => layout.manifest = Some(file),
            [_] => {}
            ["roles", name] if kind == PackageKind::Person => match numbered_slug(name) {
                Some(slug) => layout.roles.push(NumberedFile { slug, file }),
                None => diagnostics.push(unexpected("role files are named `roles/NN-<slug>.kdl` with two digits")),
            },
            ["roles", ..] if kind == PackageKind::Library && !embedded => {
                diagnostics.push(unexpected("a personality library holds no roles"));
            }
            // The embedded roster used as a library: its roles are not part of the library.
            ["roles", ..] if kind == PackageKind::Library => {}
            ["roles", slug, "SKILL.md"] => {
                layout.role_skills.insert((*slug).to_owned(), file);
            }
            ["roles", slug, "skills", method, rest @ ..] if !rest.is_empty() => {
                let entry = layout
                    .methods
                    .entry(((*slug).to_owned(), (*method).to_owned()))
                    .or_insert_with(|| SkillFolder { folder: format!("roles/{slug}/skills/{method}"), skill: None });
                if rest == ["SKILL.md"] {
                    entry.skill = Some(file);
                }
            }
            ["personalities", name] => match numbered_slug(name) {
                Some(slug) => layout.personalities.push(NumberedFile { slug, file }),
                None => diagnostics.push(unexpected("personality files are named `personalities/NN-<slug>.kdl`")),
            },
            ["inspirations", name] => match numbered_slug(name) {
                Some(slug) => layout.inspirations.push(NumberedFile { slug, file }),
                None => diagnostics.push(unexpected("inspiration files are named `inspirations/NN-<id>.kdl`")),
            },
            ["definitions", "INVARIANT.md"] => layout.invariant = Some(file),
            ["definitions", "skills", id, rest @ ..] if !rest.is_empty() => {
                let entry = layout
                    .definitions
                    .entry((*id).to_owned())
                    .or_insert_with(|| SkillFolder { folder: format!("definitions/skills/{id}"), skill: None });
                if rest == ["SKILL.md"] {
                    entry.skill = Some(file);
                }
            }
            ["roles" | "personalities" | "inspirations" | "definitions", ..] => {
                diagnostics.push(unexpected("move or remove it; see the package layout in docs/person-packages.md"));
            }
            _ => {}
        }
    }
    let by_name = |entries: &mut Vec<NumberedFile>| {
        entries.sort_by(|a, b| a.file.relative_path(db).cmp(b.file.relative_path(db)))
    };
    by_name(&mut layout.roles);
    by_name(&mut layout.personalities);
    by_name(&mut layout.inspirations);
    Parsed::new(layout, diagnostics)
}
