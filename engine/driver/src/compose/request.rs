//! `compose` requests on disk: reading a request, its declared sources and its trusted
//! roots into salsa inputs and resolving one bundle. Writes nothing; materializing the
//! bundle is `bundle::materialize`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::bundle::{Bundle, composition_bundle};
use acompose_engine::compose::{Composition, CompositionSource, SourceKind};
use acompose_engine::request::{SourceLocation, parse_declaration, parse_request};
use acompose_engine::{Database, Diagnostic, limits};

use crate::compose::load::{
    Body, EMBEDDED, Loader, Location, Selection, error_kind, label_of, printable, read_folder, read_limited,
};
use crate::error::{Findings, HostError};

/// Texts of files the request names, for rendering diagnostics outside packages.
#[derive(Default)]
struct Texts {
    by_path: BTreeMap<String, String>,
}

/// Reads a declared source into a virtual catalogue: declared skills under
/// `.agents/skills/<id>/`, instructions under `instructions/<id>.md`. `file` is the path
/// as the request gave it, which labels it; it is read where the loader finds it on disk.
fn read_declaration(
    db: &mut Database,
    loader: &mut Loader,
    id: &str,
    file: &Path,
    texts: &mut Texts,
) -> (acompose_engine::catalogue::Catalogue, Vec<Diagnostic>) {
    let label = label_of(file);
    let file = &loader.on_disk(file);
    let mut diagnostics = Vec::new();
    let text = match std::fs::symlink_metadata(file) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            diagnostics.push(
                Diagnostic::error("symlink-refused", format!("declaration `{label}` is a symbolic link"))
                    .in_file(label.clone()),
            );
            None
        }
        Ok(_) => match read_limited(file, &label, limits::REQUEST_KDL).map(|read| read.map(String::from_utf8)) {
            Ok(Ok(Ok(text))) => Some(text),
            Ok(Err(too_large)) => {
                diagnostics.push(too_large);
                None
            }
            _ => {
                diagnostics.push(
                    Diagnostic::error("unreadable-file", "cannot read the declaration as UTF-8 text")
                        .in_file(label.clone()),
                );
                None
            }
        },
        Err(_) => None,
    };
    let Some(text) = text else {
        // A missing declaration makes the source unavailable; an unreadable one is broken.
        let exists = !diagnostics.is_empty();
        let catalogue = loader.catalogue_from(db, &label, exists, Vec::new(), diagnostics);
        return (catalogue, Vec::new());
    };
    texts.by_path.insert(label.clone(), printable(&text));
    let parsed = parse_declaration(&text, &label, id);
    diagnostics.extend(parsed.diagnostics.iter().cloned());
    let folder = file.parent().unwrap_or(Path::new("."));
    let (mut files, load) = declared_files(folder, &parsed.value, &label);
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let catalogue = loader.catalogue_from(db, &label, true, files, load);
    (catalogue, diagnostics)
}

/// The files a declaration names (instructions, skill folders), as catalogue paths, with
/// a diagnostic for each one that is missing or unreadable.
fn declared_files(
    folder: &Path,
    declaration: &acompose_engine::request::Declaration,
    label: &str,
) -> (Vec<(String, Body)>, Vec<Diagnostic>) {
    let mut files = Vec::new();
    let mut load = Vec::new();
    for entry in &declaration.instructions {
        match std::fs::symlink_metadata(folder.join(&entry.path)) {
            Ok(metadata) if metadata.is_file() => match read_limited(
                &folder.join(&entry.path),
                &format!("{label}: instruction `{}`", entry.id),
                limits::SKILL_DOCUMENT,
            ) {
                Ok(Ok(bytes)) => files.push((format!("instructions/{}.md", entry.id), Body::Bytes(bytes.into()))),
                Ok(Err(too_large)) => load.push(too_large.in_file(label.to_owned()).at(Some(entry.span))),
                Err(_) => load.push(
                    Diagnostic::error("unreadable-file", format!("cannot read instruction `{}`", entry.id))
                        .in_file(label.to_owned())
                        .at(Some(entry.span)),
                ),
            },
            _ => load.push(
                Diagnostic::error(
                    "declared-path-missing",
                    format!("instruction `{}` points at no regular file", entry.id),
                )
                .in_file(label.to_owned())
                .at(Some(entry.span))
                .hint("paths are relative to the declaration file's folder; symbolic links are refused"),
            ),
        }
    }
    for entry in &declaration.skills {
        let skill_folder = folder.join(&entry.path);
        let has_skill =
            std::fs::symlink_metadata(skill_folder.join("SKILL.md")).is_ok_and(|metadata| metadata.is_file());
        let is_folder = std::fs::symlink_metadata(&skill_folder).is_ok_and(|metadata| metadata.is_dir());
        if !is_folder || !has_skill {
            load.push(
                Diagnostic::error(
                    "declared-path-missing",
                    format!("skill `{}` points at no folder with a `SKILL.md`", entry.id),
                )
                .in_file(label.to_owned())
                .at(Some(entry.span))
                .hint("a declared skill path names a folder holding `SKILL.md`"),
            );
            continue;
        }
        let read = read_folder(&skill_folder, &format!("{label}:{}", entry.id));
        load.extend(read.diagnostics);
        for (relative, bytes) in read.files {
            files.push((format!(".agents/skills/{}/{relative}", entry.id), bytes));
        }
    }
    (files, load)
}

/// What a request that names no `person-source` (or no `skill-policy`) composes with:
/// the home's settings (`RequestDefaults::of` makes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestDefaults {
    /// The person source and libraries; `Err` holds the refusal of a home whose
    /// `person_policy: external-only` selects no external source.
    pub selection: Result<Selection, Findings>,
    pub skill_policy: acompose_engine::skill_rules::SkillPolicy,
    /// The home's `audit_policy`.
    pub audit_policy: acompose_engine::audit::AuditPolicy,
    /// The home's private overlays in order, and home's folder of them when listed from it.
    pub overlays: (Vec<PathBuf>, Option<PathBuf>),
}

impl RequestDefaults {
    /// What a `compose` request that names no person source composes with.
    pub fn of(settings: &crate::home::settings::Settings) -> RequestDefaults {
        RequestDefaults {
            selection: settings.selection(false).map_err(|error| match error {
                HostError::Diagnostics { findings, .. } => findings,
                other => {
                    Findings::collect(vec![acompose_engine::Diagnostic::error("settings", other.to_string())], |_| None)
                }
            }),
            skill_policy: settings.skill_policy.value,
            audit_policy: settings.config.audit_policy,
            overlays: settings.overlay_paths(),
        }
    }
}

impl Default for RequestDefaults {
    /// No home: the embedded roster, skill policy `warn`, no overlay.
    fn default() -> Self {
        RequestDefaults {
            selection: Ok(Selection::embedded()),
            skill_policy: Default::default(),
            audit_policy: Default::default(),
            overlays: (Vec::new(), None),
        }
    }
}

/// Everything `compose` resolved, ready to materialize.
pub struct Prepared<'db> {
    /// The bundle as the database holds it (borrowed: a 200-source bundle holds every
    /// selected skill's bytes, and a copy would double them).
    pub bundle: &'db Bundle,
    /// Warnings met on the way (no errors: those stop `prepare`).
    pub warnings: Findings,
    pub model: acompose_engine::person::PersonModel,
    /// Salsa queries (executed, reused) since the database's counters were last taken,
    /// counted when the bundle was ready (`compose --stats`).
    pub queries: (usize, usize),
}

/// The request's text; an unreadable or non-UTF-8 request is invalid input.
fn read_request_text(request_path: &Path, label: &str) -> Result<String, HostError> {
    match read_limited(request_path, label, limits::REQUEST_KDL) {
        Ok(Ok(bytes)) => String::from_utf8(bytes)
            .map_err(|_| HostError::invalid(request_path, format!("request `{label}` is not valid UTF-8"))),
        Ok(Err(too_large)) => Err(HostError::Diagnostics {
            subject: format!("request `{label}` is refused"),
            findings: Findings::collect(vec![too_large], |_| None),
        }),
        Err(error) => {
            Err(HostError::invalid(request_path, format!("cannot read request `{label}`: {}", error_kind(&error))))
        }
    }
}

/// Reads every source the request names (roots and declarations, relative to its
/// folder) into catalogue inputs; returns them with the declarations' diagnostics.
fn request_sources(
    db: &mut Database,
    loader: &mut Loader,
    request: &acompose_engine::request::Request,
    folder: &Path,
    texts: &mut Texts,
) -> (Vec<CompositionSource>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut sources = Vec::new();
    // Every root is read afresh, in parallel, before the sources are put in order.
    let roots: Vec<(PathBuf, String)> = request
        .sources
        .iter()
        .filter_map(|source| match &source.location {
            SourceLocation::Root(root) => Some(folder.join(root)),
            SourceLocation::Declaration(_) => None,
        })
        .map(|path| {
            let label = label_of(&path);
            (loader.on_disk(&path), label)
        })
        .collect();
    loader.catalogues(db, &roots, true);
    let keys = crate::compose::load::PathKeys::default();
    for request_source in &request.sources {
        let (kind, catalogue, key) = match &request_source.location {
            SourceLocation::Root(root) => {
                let path = folder.join(root);
                let on_disk = loader.on_disk(&path);
                let catalogue = loader.cached_catalogue(db, &on_disk, &label_of(&path));
                (SourceKind::Root, catalogue, keys.path_key(&on_disk))
            }
            SourceLocation::Declaration(file) => {
                let path = folder.join(file);
                let (catalogue, problems) = read_declaration(db, loader, &request_source.id, &path, texts);
                diagnostics.extend(problems);
                (SourceKind::Declaration, catalogue, keys.path_key(&loader.on_disk(&path)))
            }
        };
        let location = match &request_source.location {
            SourceLocation::Root(path) | SourceLocation::Declaration(path) => path.clone(),
        };
        sources.push(CompositionSource {
            id: request_source.id.clone(),
            kind,
            required: request_source.required,
            location,
            path_key: key,
            catalogue,
            span: Some(request_source.span),
        });
    }
    (sources, diagnostics)
}

/// The person source a request composes with: its own `person-source` (with its own
/// libraries), else the home's (with the home's libraries, then the request's).
fn request_selection(
    request: &acompose_engine::request::Request,
    defaults: &RequestDefaults,
    locate: &dyn Fn(&str) -> Location,
) -> Result<Selection, HostError> {
    let libraries = request.personality_libraries.iter().map(|text| locate(text));
    match request.person_source.as_deref() {
        Some(text) => {
            let person = locate(text);
            Ok(Selection { core_rules: person == Location::Embedded, person, libraries: libraries.collect() })
        }
        None => match &defaults.selection {
            Ok(selection) => {
                let mut selection = selection.clone();
                selection.libraries.extend(libraries);
                Ok(selection)
            }
            Err(findings) => Err(HostError::Diagnostics {
                subject: crate::home::EXTERNAL_ONLY_SUBJECT.to_owned(),
                findings: findings.clone(),
            }),
        },
    }
}

/// The mistakes of a request that did not read cleanly about its role and tier, checked
/// against the roster it names: nothing when its person source nodes were refused, it
/// names no role, or the roster cannot be selected; the roster's own errors when it is
/// invalid (they are independent of the request's).
fn roster_mistakes(
    db: &mut Database,
    loader: &mut Loader,
    request: &acompose_engine::request::Request,
    defaults: &RequestDefaults,
    locate: &dyn Fn(&str) -> Location,
    label: &str,
) -> Vec<Diagnostic> {
    let Some((slug, role_span)) = request.role.as_ref().filter(|_| !request.person_nodes_refused) else {
        return Vec::new();
    };
    let Ok(selection) = request_selection(request, defaults, locate) else { return Vec::new() };
    let source = loader.load(db, &selection);
    let model = acompose_engine::person::person_model(db, source);
    if model.has_errors() {
        return model.diagnostics.clone();
    }
    let tier = request.model_tier.as_ref();
    let written = acompose_engine::compose::RoleAndTier {
        slug,
        role_span: Some(*role_span),
        tier: tier.map_or("frontier", |(tier, _)| tier.as_str()),
        tier_span: tier.map(|(_, span)| *span),
        file: label,
    };
    acompose_engine::compose::role_and_tier_diagnostics(&model.value, &written)
}

/// The home's private overlays, read into the database.
fn read_overlays(
    db: &mut Database,
    loader: &mut Loader,
    defaults: &RequestDefaults,
) -> Result<Vec<acompose_engine::SourceFile>, HostError> {
    let (paths, folder) = &defaults.overlays;
    loader.overlays(db, paths, folder.as_deref()).map_err(|diagnostics| HostError::Diagnostics {
        subject: "a private overlay is invalid".to_owned(),
        findings: Findings::collect(diagnostics, |_| None),
    })
}

/// Keeps the text of `file` for the findings that point into it, read once.
fn remember_text(texts: &mut Texts, loader: &Loader, db: &Database, file: String) {
    if !texts.by_path.contains_key(&file)
        && let Some(text) = loader.text_of(db, &file)
    {
        texts.by_path.insert(file, text);
    }
}

/// Reads and resolves a request: the bundle, or every diagnostic that stopped it. Paths
/// are as the caller was given them (labels are made from them) and are read where the
/// loader finds them on disk (see [`Loader::on_disk`]).
pub fn prepare<'db>(
    db: &'db mut Database,
    loader: &mut Loader,
    request_path: &Path,
    projects: &Path,
    skill_policy: Option<acompose_engine::skill_rules::SkillPolicy>,
    defaults: &RequestDefaults,
) -> Result<Prepared<'db>, HostError> {
    let label = label_of(request_path);
    let on_disk = loader.on_disk(request_path);
    let text = read_request_text(&on_disk, &label)?;
    loader.note(&on_disk, crate::home::observe::observe(&on_disk));
    let mut texts = Texts::default();
    texts.by_path.insert(label.clone(), printable(&text));
    let findings = |diagnostics: &[Diagnostic], texts: &Texts, loader: &Loader, db: &Database| {
        Findings::collect(diagnostics.to_vec(), |path| {
            texts.by_path.get(path).cloned().or_else(|| loader.text_of(db, path))
        })
    };
    let parsed = parse_request(&text, &label);
    let folder = request_path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let folder = if folder.as_os_str().is_empty() { PathBuf::from(".") } else { folder };
    let locate = |text: &str| {
        if text == EMBEDDED { Location::Embedded } else { Location::Directory(folder.join(text)) }
    };
    if parsed.has_errors() {
        // Every mistake of the request in one run: its role and tier are still checked
        // against the roster it names, when that much of it could be read.
        let mut diagnostics = parsed.diagnostics.clone();
        diagnostics.extend(roster_mistakes(db, loader, &parsed.value, defaults, &locate, &label));
        // The request's own mistakes in the order they are written, then the others.
        diagnostics.sort_by_key(|diagnostic| {
            (diagnostic.file.as_deref() != Some(label.as_str()), diagnostic.span.map(|span| span.offset))
        });
        return Err(HostError::Diagnostics {
            subject: format!("request `{label}` is invalid"),
            findings: findings(&diagnostics, &texts, loader, db),
        });
    }
    // Warnings about request nodes that are read but ignored are shown with the rest.
    let (request, request_warnings) = (parsed.value, parsed.diagnostics);
    let selection = request_selection(&request, defaults, &locate)?;
    let source = loader.load(db, &selection);
    let overlays = read_overlays(db, loader, defaults)?;
    // A compiled bundle inlines its skills' text; any other keeps only their summaries in
    // memory and reads the files again when it is written.
    loader.summarize_skills(request.delivery != Some(acompose_engine::request::Delivery::Compiled));
    let (sources, source_diagnostics) = request_sources(db, loader, &request, &folder, &mut texts);
    let mut diagnostics = request_warnings;
    diagnostics.extend(source_diagnostics);
    // Repositories named by trusted roots, read under the projects root.
    for source in &sources {
        if let Some(roles_file) = acompose_engine::catalogue::catalogue_names(db, source.catalogue).roles {
            remember_text(&mut texts, loader, db, roles_file.display_path(db));
        }
    }
    let policy = skill_policy.or(request.skill_policy).unwrap_or(defaults.skill_policy);
    let model = &acompose_engine::person::person_model(db, source).value;
    let role = request.role.as_ref().map_or("", |(slug, _)| slug.as_str());
    diagnostics.extend(crate::compose::estate::estate_diagnostics(db, &sources, model, policy, &[role]));
    let repositories = crate::compose::estate::trusted_repositories(db, loader, &sources, projects, false).inputs;
    let trusted_paths: Vec<String> = repositories.iter().map(|repository| repository.path.clone()).collect();
    let composition = Composition::new(
        db,
        source,
        request.role.as_ref().map(|(slug, _)| slug.clone()).unwrap_or_default(),
        request.delivery.unwrap_or(acompose_engine::request::Delivery::NativeSkills),
        request.model_tier.as_ref().map_or_else(|| "frontier".to_owned(), |(tier, _)| tier.clone()),
        sources,
        repositories,
        label.clone(),
        request.role.as_ref().map(|(_, span)| *span),
        request.model_tier.as_ref().map(|(_, span)| *span),
        // The caller's policy (`compose --strict`) wins over the request's, then the home's.
        policy,
    );
    salsa::Setter::to(composition.set_overlays(db), overlays.clone());
    salsa::Setter::to(composition.set_audit_policy(db), defaults.audit_policy);
    let db: &'db Database = db;
    let result = composition_bundle(db, composition);
    diagnostics.extend(result.diagnostics.iter().cloned());
    // Catalogue files that diagnostics point at.
    for file in diagnostics.iter().filter_map(|diagnostic| diagnostic.file.clone()) {
        remember_text(&mut texts, loader, db, file);
    }
    let all = findings(&diagnostics, &texts, loader, db);
    match &result.value {
        Some(bundle) if !all.has_errors() => {
            let model = acompose_engine::overlay::overlaid_model(db, source, &overlays).value;
            Ok(Prepared { bundle, warnings: all, model, queries: db.take_query_counts() })
        }
        _ => Err(crate::compose::estate::name_projects_root(
            HostError::Diagnostics { subject: format!("cannot compose `{label}`"), findings: all },
            projects,
            &trusted_paths,
        )),
    }
}
