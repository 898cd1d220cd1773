//! `acompose compose REQUEST.kdl`: read a request, its person source and catalogues,
//! resolve, and materialize one immutable bundle (staging → verify → rename).

use std::collections::BTreeMap;

use rayon::prelude::*;
use std::path::{Path, PathBuf};

use acompose_engine::bundle::{Bundle, composition_bundle};
use acompose_engine::compose::{Composition, CompositionSource, SourceKind};
use acompose_engine::request::{SourceLocation, parse_declaration, parse_request};
use acompose_engine::{Database, Diagnostic, render};

use crate::load::{Loader, Location, Selection, label_of, path_key, printable};
use crate::terminal::{Terminal, count_summary, render_diagnostics};
use crate::{exit, print_stderr, print_stdout};
use acompose_engine::skill_rules::SkillPolicy;

#[derive(Debug, clap::Args)]
pub struct ComposeArgs {
    /// The request file (`request.kdl`).
    pub request: PathBuf,
    /// Where bundles are written (default: `<home>/bundles`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The folder `owner/repo` paths of trusted roots resolve under (default:
    /// `$PROJECTS_ROOT`, else `~/projects`).
    #[arg(long, value_name = "DIR")]
    pub projects_root: Option<PathBuf>,
    /// Also print every decision of the trace.
    #[arg(long)]
    pub explain: bool,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print files stat'ed, read, hashed and written, and queries executed and reused.
    #[arg(long)]
    pub stats: bool,
    /// Make every Agent Skills finding about a delivered skill an error (skill policy
    /// `strict`): nothing is written.
    #[arg(long)]
    pub strict: bool,
}

/// Resolves the projects root: flag, `$PROJECTS_ROOT`, `~/projects`.
pub fn projects_root(flag: Option<&Path>) -> PathBuf {
    if let Some(path) = flag {
        return path.to_path_buf();
    }
    if let Some(value) = std::env::var_os("PROJECTS_ROOT").filter(|value| !value.is_empty()) {
        return PathBuf::from(value);
    }
    std::env::home_dir().map_or_else(|| PathBuf::from("projects"), |home| home.join("projects"))
}

/// Texts of files the request names, for rendering diagnostics outside packages.
#[derive(Default)]
struct Texts {
    by_path: BTreeMap<String, String>,
}

/// Reads a declared source into a virtual catalogue: declared skills under
/// `.agents/skills/<id>/`, instructions under `instructions/<id>.md`.
fn read_declaration(
    db: &mut Database,
    loader: &mut Loader,
    id: &str,
    file: &Path,
    texts: &mut Texts,
) -> (acompose_engine::catalogue::Catalogue, Vec<Diagnostic>) {
    let label = label_of(file);
    let mut diagnostics = Vec::new();
    let text = match std::fs::symlink_metadata(file) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            diagnostics.push(
                Diagnostic::error("symlink-refused", format!("declaration `{label}` is a symbolic link"))
                    .in_file(label.clone()),
            );
            None
        }
        Ok(_) => match std::fs::read(file).map(String::from_utf8) {
            Ok(Ok(text)) => Some(text),
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
    let mut files = Vec::new();
    let mut load = Vec::new();
    for entry in &parsed.value.instructions {
        match std::fs::symlink_metadata(folder.join(&entry.path)) {
            Ok(metadata) if metadata.is_file() => match std::fs::read(folder.join(&entry.path)) {
                Ok(bytes) => files.push((format!("instructions/{}.md", entry.id), bytes)),
                Err(_) => load.push(
                    Diagnostic::error("unreadable-file", format!("cannot read instruction `{}`", entry.id))
                        .in_file(label.clone())
                        .at(Some(entry.span)),
                ),
            },
            _ => load.push(
                Diagnostic::error(
                    "declared-path-missing",
                    format!("instruction `{}` points at no regular file", entry.id),
                )
                .in_file(label.clone())
                .at(Some(entry.span))
                .hint("paths are relative to the declaration file's folder; symbolic links are refused"),
            ),
        }
    }
    for entry in &parsed.value.skills {
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
                .in_file(label.clone())
                .at(Some(entry.span))
                .hint("a declared skill path names a folder holding `SKILL.md`"),
            );
            continue;
        }
        let read = crate::load::read_folder(&skill_folder, &format!("{label}:{}", entry.id));
        load.extend(read.diagnostics);
        for (relative, bytes) in read.files {
            files.push((format!(".agents/skills/{}/{relative}", entry.id), bytes));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let catalogue = loader.catalogue_from(db, &label, true, files, load);
    (catalogue, diagnostics)
}

/// Everything `compose` resolved, ready to materialize.
pub struct Prepared {
    pub bundle: Bundle,
    pub diagnostics: Vec<Diagnostic>,
    pub model: acompose_engine::person::PersonModel,
}

/// Reads and resolves a request; prints diagnostics; returns the bundle or an exit code.
pub fn prepare(
    db: &mut Database,
    loader: &mut Loader,
    request_path: &Path,
    projects: &Path,
    terminal: &Terminal,
    strict: bool,
) -> Result<Prepared, u8> {
    let label = label_of(request_path);
    let text = match std::fs::read(request_path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                print_stderr(&format!("error: request `{label}` is not valid UTF-8\n"));
                return Err(exit::INVALID);
            }
        },
        Err(error) => {
            print_stderr(&format!("error: cannot read request `{label}`: {}\n", crate::load::error_kind(&error)));
            return Err(exit::INVALID);
        }
    };
    let mut texts = Texts::default();
    texts.by_path.insert(label.clone(), printable(&text));
    let render = |diagnostics: &[Diagnostic], texts: &Texts, loader: &Loader, db: &Database| {
        let text_of = |path: &str| texts.by_path.get(path).cloned().or_else(|| loader.text_of(db, path));
        print_stderr(&render_diagnostics(&crate::terminal::visible(diagnostics, *terminal), terminal.stderr, &text_of));
    };
    let parsed = parse_request(&text, &label);
    if parsed.has_errors() {
        render(&parsed.diagnostics, &texts, loader, db);
        print_stderr(&format!("error: request `{label}` is invalid ({})\n", count_summary(&parsed.diagnostics)));
        return Err(exit::INVALID);
    }
    let request = parsed.value;
    let folder = request_path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let folder = if folder.as_os_str().is_empty() { PathBuf::from(".") } else { folder };
    let locate = |text: &str| {
        if text == crate::load::EMBEDDED { Location::Embedded } else { Location::Directory(folder.join(text)) }
    };
    let person = request.person_source.as_deref().map_or(Location::Embedded, locate);
    let selection = Selection {
        core_rules: person == Location::Embedded,
        person,
        libraries: request.personality_libraries.iter().map(|text| locate(text)).collect(),
    };
    let source = loader.load(db, &selection);

    let mut diagnostics = Vec::new();
    let mut sources = Vec::new();
    for request_source in &request.sources {
        let (kind, catalogue, key) = match &request_source.location {
            SourceLocation::Root(root) => {
                let path = folder.join(root);
                let catalogue = loader.catalogue(db, &path, &label_of(&path));
                (SourceKind::Root, catalogue, path_key(&path))
            }
            SourceLocation::Declaration(file) => {
                let path = folder.join(file);
                let (catalogue, problems) = read_declaration(db, loader, &request_source.id, &path, &mut texts);
                diagnostics.extend(problems);
                (SourceKind::Declaration, catalogue, path_key(&path))
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
        });
    }
    // Repositories named by trusted roots, read under the projects root.
    for source in &sources {
        if let Some(roles_file) = acompose_engine::catalogue::catalogue_names(db, source.catalogue).roles
            && let Some(text) = loader.text_of(db, &roles_file.display_path(db))
        {
            texts.by_path.insert(roles_file.display_path(db), text);
        }
    }
    let repositories = crate::estate::trusted_repositories(db, loader, &sources, projects, false).inputs;
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
        if strict { SkillPolicy::Strict } else { request.skill_policy.unwrap_or_default() },
    );
    let result = composition_bundle(db, composition);
    diagnostics.extend(result.diagnostics.iter().cloned());
    // Catalogue files that diagnostics point at.
    for diagnostic in &diagnostics {
        if let Some(file) = &diagnostic.file
            && !texts.by_path.contains_key(file)
            && let Some(text) = loader.text_of(db, file)
        {
            texts.by_path.insert(file.clone(), text);
        }
    }
    if !diagnostics.is_empty() && (diagnostics.iter().any(Diagnostic::is_error) || !terminal.quiet) {
        render(&diagnostics, &texts, loader, db);
    }
    match &result.value {
        Some(bundle) if !diagnostics.iter().any(Diagnostic::is_error) => {
            let model = acompose_engine::person::person_model(db, source).value.clone();
            Ok(Prepared { bundle: bundle.clone(), diagnostics, model })
        }
        _ => {
            print_stderr(&format!("error: cannot compose `{label}` ({})\n", count_summary(&diagnostics)));
            Err(exit::INVALID)
        }
    }
}

/// Whether a bundle was written now or found already in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Materialized {
    New,
    Reused,
}

impl Materialized {
    pub fn name(self) -> &'static str {
        match self {
            Materialized::New => "new",
            Materialized::Reused => "reused",
        }
    }
}

/// How an existing or staged bundle is checked before it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Re-read and re-hash every file (what `verify` does).
    Full,
    /// Compare the manifest's bytes with the expected ones and every file's size; the id
    /// is content-addressed, so this catches missing, truncated or foreign bundles
    /// without reading every byte (estate convergence and watch mode).
    Light,
}

/// Checks `directory` against the bundle we expect to find there.
fn check_against(directory: &Path, bundle: &Bundle, verification: Verification) -> Result<(), String> {
    match verification {
        Verification::Full => crate::verify::verify_directory_named(directory, &bundle.id)
            .map(|_| ())
            .map_err(|problems| problems.join("; ")),
        Verification::Light => {
            let manifest = bundle.files.iter().find(|file| file.path == "manifest.json").map(|file| &file.bytes);
            match std::fs::read(directory.join("manifest.json")) {
                Ok(bytes) if Some(&bytes) == manifest => {}
                _ => return Err("manifest.json differs from the expected one".to_owned()),
            }
            let mismatch = bundle.files.par_iter().find_any(|file| {
                std::fs::symlink_metadata(directory.join(&file.path))
                    .map_or(true, |metadata| !metadata.is_file() || metadata.len() != file.bytes.len() as u64)
            });
            match mismatch {
                Some(file) => Err(format!("{}: missing or of the wrong size", file.path)),
                None => Ok(()),
            }
        }
    }
}

/// Writes a bundle into `out/<id>`: staging folder, verification, rename. An existing
/// bundle is verified and reused; a damaged one is an error. Files are written in
/// parallel after their folders exist.
pub fn materialize(out: &Path, bundle: &Bundle) -> Result<Materialized, String> {
    materialize_with(out, bundle, Verification::Full)
}

pub fn materialize_with(out: &Path, bundle: &Bundle, verification: Verification) -> Result<Materialized, String> {
    let target = out.join(&bundle.id);
    if std::fs::symlink_metadata(&target).is_ok() {
        return check_against(&target, bundle, verification).map(|()| Materialized::Reused).map_err(|problem| {
            format!("bundle `{}` exists but is damaged ({problem}); remove it to compose it again", target.display())
        });
    }
    std::fs::create_dir_all(out)
        .map_err(|error| format!("cannot create `{}`: {}", out.display(), crate::load::error_kind(&error)))?;
    let staging = out.join(format!(".staging-{}-{}", bundle.id, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let written = (|| -> Result<(), String> {
        let mut folders: Vec<PathBuf> =
            bundle.files.iter().filter_map(|file| staging.join(&file.path).parent().map(Path::to_path_buf)).collect();
        folders.sort();
        folders.dedup();
        for folder in &folders {
            std::fs::create_dir_all(folder).map_err(|error| {
                format!("cannot create `{}`: {}", folder.display(), crate::load::error_kind(&error))
            })?;
        }
        bundle.files.par_iter().try_for_each(|file| {
            let path = staging.join(&file.path);
            std::fs::write(&path, &file.bytes)
                .map_err(|error| format!("cannot write `{}`: {}", path.display(), crate::load::error_kind(&error)))
        })?;
        check_against(&staging, bundle, verification)
            .map_err(|problem| format!("the staged bundle failed verification: {problem}"))
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    match std::fs::rename(&staging, &target) {
        Ok(()) => Ok(Materialized::New),
        Err(_) if target.is_dir() => {
            // Another composition of the same inputs won the race: same id, same bytes.
            let _ = std::fs::remove_dir_all(&staging);
            check_against(&target, bundle, verification).map(|()| Materialized::Reused)
        }
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(format!("cannot move the bundle into `{}`: {}", target.display(), crate::load::error_kind(&error)))
        }
    }
}

pub fn run(args: ComposeArgs, home: Option<&Path>, terminal: &Terminal) -> u8 {
    let mut db = Database::default();
    let mut loader = Loader::default();
    let projects = projects_root(args.projects_root.as_deref());
    let prepared = match prepare(&mut db, &mut loader, &args.request, &projects, terminal, args.strict) {
        Ok(prepared) => prepared,
        Err(code) => return code,
    };
    let out = match args.out {
        Some(out) => out,
        None => match crate::converge::resolve_home(home) {
            Ok(home) => home.join("bundles"),
            Err(message) => {
                print_stderr(&format!("error: {message}\n"));
                return exit::ENVIRONMENT;
            }
        },
    };
    let materialized = match materialize(&out, &prepared.bundle) {
        Ok(materialized) => materialized,
        Err(message) => {
            print_stderr(&format!("error: {message}\n"));
            return exit::ENVIRONMENT;
        }
    };
    let bundle = &prepared.bundle;
    let stats = {
        let (executed, reused) = db.take_query_counts();
        crate::converge::Stats {
            stated: loader.observed().len(),
            read: loader.counters.files_read,
            hashed: loader.counters.files_read,
            written: if materialized == Materialized::New { bundle.files.len() } else { 0 },
            queries_executed: executed,
            queries_reused: reused,
        }
    };
    if args.json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            format: &'static str,
            bundle: &'a str,
            status: &'static str,
            path: String,
            selected: usize,
            excluded: usize,
            shadowed: usize,
            delivered: usize,
        }
        let report = Report {
            format: "acompose.compose.v1",
            bundle: &bundle.id,
            status: materialized.name(),
            path: out.join(&bundle.id).display().to_string(),
            selected: bundle.summary.selected,
            excluded: bundle.summary.excluded,
            shadowed: bundle.summary.shadowed,
            delivered: bundle.summary.delivered,
        };
        print_stdout(&String::from_utf8_lossy(&acompose_engine::snapshot::to_json_bytes(&report)));
        return exit::SUCCESS;
    }
    let mut text = format!("bundle {} ({})\n", bundle.id, materialized.name());
    if !terminal.quiet {
        text.push_str(&format!("path   {}\n\n", out.join(&bundle.id).display()));
        let slug = &bundle_role(bundle);
        if let Some(role) = prepared.model.role(slug) {
            text.push_str(&render::identity_card(&prepared.model, role, terminal.stdout));
        }
        text.push('\n');
        text.push_str(&bundle.summary.line());
        text.push('\n');
    }
    if args.explain
        && let Some(trace) = bundle_trace(bundle)
    {
        text.push('\n');
        for decision in &trace.decisions {
            text.push_str(&format!(
                "{:<9} {:<40} {:<14} {:<22} {}\n",
                decision.outcome.name(),
                decision.subject,
                decision.source,
                decision.cause,
                decision.reason
            ));
        }
    }
    if args.stats {
        text.push_str(&stats.line());
    }
    print_stdout(&text);
    exit::SUCCESS
}

fn bundle_trace(bundle: &Bundle) -> Option<acompose_engine::trace::Trace> {
    bundle.files.iter().find(|file| file.path == "trace.json").and_then(|file| serde_json::from_slice(&file.bytes).ok())
}

fn bundle_role(bundle: &Bundle) -> String {
    bundle_trace(bundle).map(|trace| trace.role).unwrap_or_default()
}
