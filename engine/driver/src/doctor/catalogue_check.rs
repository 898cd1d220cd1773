//! The Agent Skills checks of catalogues without composing (`acompose catalog check`).
//! Finds the skills on disk (a repository, a `.agents/skills` folder or one skill
//! folder), hands each `SKILL.md` to the engine's rules and returns a report. It does not
//! compose, write, print or follow symbolic links.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::diagnostic::{Diagnostic, Severity, line_column, sanitize};
use acompose_engine::skill_rules::{self, FindingLevel, check_skill};
use serde::Serialize;

use crate::error::HostError;

pub const FORMAT: &str = "acompose.catalog-check.v1";
/// The format of `catalog audit --json`: the same rows, with the audit's findings only.
pub const AUDIT_FORMAT: &str = "acompose.catalog-audit.v1";

/// A `SKILL.md` larger than this is refused unread: no harness lists such a file, and the
/// check must stay bounded.
const MAX_SKILL_FILE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Serialize)]
pub struct FindingRow {
    pub code: String,
    pub level: &'static str,
    pub severity: &'static str,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub consequence: String,
    /// For a finding of the content audit: the skill's file it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// What a check looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// What each kind of the content audit's findings does (the home's `audit_policy`).
    pub policy: acompose_engine::audit::AuditPolicy,
    /// `catalog audit`: the content audit only, without the Agent Skills checks.
    pub audit_only: bool,
}

#[derive(Debug, Serialize)]
pub struct SkillRow {
    pub name: String,
    pub path: String,
    pub findings: Vec<FindingRow>,
}

#[derive(Debug, Serialize)]
pub struct CatalogueRow {
    pub path: String,
    pub skills: Vec<SkillRow>,
    pub not_skills: Vec<String>,
}

/// The JSON report of `catalog check` (`format` names its version).
#[derive(Debug, Serialize)]
pub struct Report {
    pub format: &'static str,
    pub catalogues: Vec<CatalogueRow>,
    pub skills: usize,
    pub errors: usize,
    pub warnings: usize,
}

/// What a check found: the report, every diagnostic, and the text of each file a
/// diagnostic points at (for rendering snippets).
#[derive(Debug)]
pub struct Checked {
    pub report: Report,
    pub diagnostics: Vec<Diagnostic>,
    pub texts: BTreeMap<String, String>,
    /// Folders without `SKILL.md`, over every catalogue.
    pub not_skills: usize,
}

/// What a folder given on the command line turned out to be.
enum Target {
    /// One skill folder (it holds `SKILL.md`).
    Skill(PathBuf),
    /// A folder of skill folders (`.agents/skills`, or a repository's).
    Skills(PathBuf),
}

/// What `directory` (a path as given, found under `working_directory`) is.
fn target_of(working_directory: &Path, directory: &Path) -> Option<Target> {
    let is_file =
        |path: &Path| std::fs::symlink_metadata(working_directory.join(path)).is_ok_and(|metadata| metadata.is_file());
    let is_folder =
        |path: &Path| std::fs::symlink_metadata(working_directory.join(path)).is_ok_and(|metadata| metadata.is_dir());
    if !is_folder(directory) {
        return None;
    }
    if is_file(&directory.join("SKILL.md")) {
        return Some(Target::Skill(directory.to_path_buf()));
    }
    let conventional = directory.join(".agents").join("skills");
    if is_folder(&conventional) {
        return Some(Target::Skills(conventional));
    }
    Some(Target::Skills(directory.to_path_buf()))
}

fn display(path: &Path) -> String {
    sanitize(&path.to_string_lossy().replace('\\', "/"))
}

/// Sub-folders of a skills folder in lexical order, as paths under `directory` as given;
/// plain files are ignored, and so are links, but for those a projection into the
/// repository owns (which the check notes).
fn folders_in(working_directory: &Path, directory: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(working_directory.join(directory))?
        .filter_map(Result::ok)
        .filter(|entry| {
            entry.file_type().is_ok_and(|kind| {
                kind.is_dir()
                    || (kind.is_symlink() && crate::home::projection_record::owned_by_a_projection(&entry.path()))
            })
        })
        .map(|entry| directory.join(entry.file_name()))
        .collect();
    folders.sort();
    Ok(folders)
}

/// The check's state. Paths are as given, which is how they are shown; they are read
/// under `working_directory` (empty for the process's own).
struct Checker<'a> {
    working_directory: &'a Path,
    diagnostics: Vec<Diagnostic>,
    texts: BTreeMap<String, String>,
    rows: Vec<CatalogueRow>,
    options: Options,
}

impl Checker<'_> {
    fn skill(&mut self, folder: &Path) -> SkillRow {
        let name = folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        let entry = folder.join("SKILL.md");
        let label = display(&entry);
        let mut row = SkillRow { name: sanitize(&name), path: label.clone(), findings: Vec::new() };
        let on_disk = self.working_directory.join(&entry);
        let too_large = std::fs::symlink_metadata(&on_disk).is_ok_and(|metadata| metadata.len() > MAX_SKILL_FILE_BYTES);
        let bytes = if too_large {
            Err(format!("it is larger than {MAX_SKILL_FILE_BYTES} bytes"))
        } else {
            std::fs::read(&on_disk).map_err(|error| crate::compose::load::error_kind(&error))
        };
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(why) => {
                self.diagnostics.push(
                    Diagnostic::error("skill-unreadable", format!("cannot read `SKILL.md`: {why}")).in_file(label),
                );
                return row;
            }
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        self.audit(folder, &mut row);
        if self.options.audit_only {
            return row;
        }
        let check = check_skill(&bytes, &name);
        for finding in &check.findings {
            let diagnostic = skill_rules::in_file(finding, &label, Severity::Error);
            let (line, column) = line_column(&text, finding.span.map_or(0, |span| span.offset));
            row.findings.push(FindingRow {
                code: finding.code.to_owned(),
                level: FindingLevel::of(finding).name(),
                severity: severity_name(diagnostic.severity),
                line,
                column,
                message: finding.message.clone(),
                consequence: skill_rules::consequence(finding).to_owned(),
                file: None,
            });
            self.diagnostics.push(diagnostic);
        }
        self.texts.insert(label, text);
        row
    }

    /// The content audit of every file of the skill's folder.
    fn audit(&mut self, folder: &Path, row: &mut SkillRow) {
        let audit = crate::compose::audit::audit_skill_folder(self.working_directory, folder, &self.options.policy);
        for ((file, finding), diagnostic) in
            audit.findings.iter().zip(audit.diagnostics.iter().filter(|diagnostic| diagnostic.position.is_some()))
        {
            row.findings.push(FindingRow {
                code: finding.kind.code().to_owned(),
                level: "audit",
                severity: severity_name(diagnostic.severity),
                line: finding.line,
                column: finding.column,
                message: finding.what(),
                consequence: match self.options.policy.action(finding.kind) {
                    acompose_engine::audit::AuditAction::Refuse => "refused: no composition delivers the skill",
                    acompose_engine::audit::AuditAction::Warn => "delivered with a warning",
                }
                .to_owned(),
                file: Some(file.clone()),
            });
        }
        self.diagnostics.extend(audit.diagnostics);
    }

    fn catalogue(&mut self, target: Target) {
        match target {
            Target::Skill(folder) => {
                let skill = self.skill(&folder);
                self.rows.push(CatalogueRow { path: display(&folder), skills: vec![skill], not_skills: Vec::new() });
            }
            Target::Skills(directory) => {
                let mut row = CatalogueRow { path: display(&directory), skills: Vec::new(), not_skills: Vec::new() };
                let folders = match folders_in(self.working_directory, &directory) {
                    Ok(folders) => folders,
                    Err(error) => {
                        self.diagnostics.push(
                            Diagnostic::error(
                                "catalogue-unreadable",
                                format!("cannot list the folder: {}", crate::compose::load::error_kind(&error)),
                            )
                            .in_file(row.path.clone()),
                        );
                        self.rows.push(row);
                        return;
                    }
                };
                for folder in folders {
                    let on_disk = self.working_directory.join(&folder);
                    if std::fs::symlink_metadata(&on_disk).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
                        self.diagnostics.push(
                            Diagnostic::note(
                                "projected-entry",
                                "a link a projection into this repository owns; a role's delivered skill, not this catalogue's",
                            )
                            .in_file(display(&folder))
                            .hint("`acompose unproject` takes the projection out"),
                        );
                        continue;
                    }
                    let entry = on_disk.join("SKILL.md");
                    if std::fs::symlink_metadata(entry).is_ok_and(|metadata| metadata.is_file()) {
                        let skill = self.skill(&folder);
                        row.skills.push(skill);
                    } else {
                        let name =
                            folder.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                        self.diagnostics.push(
                            Diagnostic::note(
                                "not-a-skill",
                                format!("folder `{}` has no `SKILL.md`; it is not a skill", sanitize(&name)),
                            )
                            .in_file(display(&folder))
                            .hint("a folder of shared references beside skills is fine; harnesses do not list it"),
                        );
                        row.not_skills.push(sanitize(&name));
                    }
                }
                self.rows.push(row);
            }
        }
    }
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
        Severity::Detail => "detail",
    }
}

/// Checks every folder (the current folder when none is given). Folders are read under
/// `working_directory` (empty for the process's own) and shown as given, so a caller that
/// names a folder there sees what the same check run in that folder shows.
pub fn check(working_directory: &Path, directories: &[PathBuf]) -> Result<Checked, HostError> {
    check_with(working_directory, directories, Options::default())
}

/// [`check`] under `options`: the home's audit policy, or the audit alone.
pub fn check_with(working_directory: &Path, directories: &[PathBuf], options: Options) -> Result<Checked, HostError> {
    let directories = if directories.is_empty() { vec![PathBuf::from(".")] } else { directories.to_vec() };
    let mut checker =
        Checker { working_directory, diagnostics: Vec::new(), texts: BTreeMap::new(), rows: Vec::new(), options };
    for directory in &directories {
        match target_of(working_directory, directory) {
            Some(target) => checker.catalogue(target),
            None => return Err(HostError::invalid(directory, format!("`{}` is not a folder", display(directory)))),
        }
    }
    let errors = checker.diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
    let warnings = checker.diagnostics.iter().filter(|diagnostic| diagnostic.severity == Severity::Warning).count();
    let skills = checker.rows.iter().map(|row| row.skills.len()).sum();
    let not_skills = checker.rows.iter().map(|row| row.not_skills.len()).sum();
    Ok(Checked {
        report: Report {
            format: if options.audit_only { AUDIT_FORMAT } else { FORMAT },
            catalogues: checker.rows,
            skills,
            errors,
            warnings,
        },
        diagnostics: checker.diagnostics,
        texts: checker.texts,
        not_skills,
    })
}
