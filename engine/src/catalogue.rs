//! Skill catalogues: a repository's `.agents/skills/<name>/` (ordinary skills) and
//! `.agents/composed/<name>/` (composed skills), and skill tree digests. Reads the file
//! list and per-file summaries; never decides which skill is selected.

use std::collections::BTreeMap;

use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::skill::{hash_folded, skill_document};

/// One repository or declared source as the driver read it. `available` is false when
/// its folder does not exist; `files` are relative to the root (for declarations the
/// driver places declared skills under `.agents/skills/<id>/` and instructions under
/// `instructions/<id>.md`).
#[salsa::input(debug)]
pub struct Catalogue {
    #[returns(ref)]
    pub label: String,
    #[returns(copy)]
    pub available: bool,
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    #[returns(ref)]
    pub load_diagnostics: Vec<Diagnostic>,
}

/// Ordinary (`.agents/skills`) or composed (`.agents/composed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkillKind {
    Ordinary,
    Composed,
}

impl SkillKind {
    pub fn name(self) -> &'static str {
        match self {
            SkillKind::Ordinary => "ordinary",
            SkillKind::Composed => "composed",
        }
    }

    /// The file that defines a skill of this kind.
    pub fn entry_file(self) -> &'static str {
        match self {
            SkillKind::Ordinary => "SKILL.md",
            SkillKind::Composed => "COMPOSED.md",
        }
    }
}

/// What the digest of one file is: its CRLF-folded length and blake3.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileSummary {
    pub raw_length: u64,
    pub folded_length: u64,
    pub digest: [u8; 32],
}

/// The per-file summary: the firewall between a file's bytes and every catalogue-wide
/// computation.
#[salsa::tracked(returns(ref))]
pub fn file_summary(db: &dyn salsa::Database, file: SourceFile) -> FileSummary {
    let bytes = file.bytes(db);
    let mut hasher = blake3::Hasher::new();
    hash_folded(&mut hasher, bytes);
    let crlf = bytes.windows(2).filter(|pair| pair == b"\r\n").count() as u64;
    FileSummary {
        raw_length: bytes.len() as u64,
        folded_length: bytes.len() as u64 - crlf,
        digest: *hasher.finalize().as_bytes(),
    }
}

/// One file of a skill folder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SkillMember {
    /// Path inside the skill folder (`SKILL.md`, `references/x.md`).
    pub path: String,
    pub file: SourceFile,
    pub raw_length: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CatalogueSkill {
    pub name: String,
    pub kind: SkillKind,
    /// Members sorted by path; the entry file is among them.
    pub members: Vec<SkillMember>,
    /// blake3 over every member's path, folded length and folded bytes, as hex.
    pub digest: String,
    /// Raw bytes of all members.
    pub bytes: u64,
    pub description: String,
}

impl CatalogueSkill {
    /// The subject used in traces: `skill:<name>`.
    pub fn subject(&self) -> String {
        format!("skill:{}", self.name)
    }
}

/// An instruction file of a declared source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Instruction {
    pub id: String,
    pub file: SourceFile,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CatalogueListing {
    /// Ordinary skills in lexical order.
    pub ordinary: Vec<CatalogueSkill>,
    /// Composed skills in lexical order.
    pub composed: Vec<CatalogueSkill>,
    /// `.agents/roles.kdl`, when the root is a trusted root.
    pub roles: Option<SourceFile>,
    pub instructions: Vec<Instruction>,
}

impl CatalogueListing {
    pub fn skill(&self, kind: SkillKind, name: &str) -> Option<&CatalogueSkill> {
        let list = match kind {
            SkillKind::Ordinary => &self.ordinary,
            SkillKind::Composed => &self.composed,
        };
        list.iter().find(|skill| skill.name == name)
    }
}

/// Tree digest over (path, folded length, folded bytes digest) of every member.
pub fn tree_digest(members: &[(String, &FileSummary)]) -> String {
    let mut hasher = blake3::Hasher::new();
    for (path, summary) in members {
        hasher.update(path.as_bytes());
        hasher.update(&[0]);
        hasher.update(&summary.folded_length.to_le_bytes());
        hasher.update(&summary.digest);
    }
    hasher.finalize().to_hex().to_string()
}

/// Lists a catalogue's skills, composed skills, trusted-root document and instructions.
#[salsa::tracked(returns(ref))]
pub fn catalogue_listing(db: &dyn salsa::Database, catalogue: Catalogue) -> Parsed<CatalogueListing> {
    let mut listing = CatalogueListing::default();
    let mut diagnostics = catalogue.load_diagnostics(db).clone();
    let mut folders: BTreeMap<(SkillKind, String), Vec<(String, SourceFile)>> = BTreeMap::new();
    for &file in catalogue.files(db) {
        let relative = file.relative_path(db);
        let parts: Vec<&str> = relative.split('/').collect();
        match parts.as_slice() {
            [".agents", "roles.kdl"] => listing.roles = Some(file),
            [".agents", "skills", name, rest @ ..] if !rest.is_empty() => {
                folders.entry((SkillKind::Ordinary, (*name).to_owned())).or_default().push((rest.join("/"), file));
            }
            [".agents", "composed", name, rest @ ..] if !rest.is_empty() => {
                folders.entry((SkillKind::Composed, (*name).to_owned())).or_default().push((rest.join("/"), file));
            }
            ["instructions", name] if name.ends_with(".md") => {
                listing.instructions.push(Instruction { id: name.trim_end_matches(".md").to_owned(), file })
            }
            _ => {}
        }
    }
    for ((kind, name), mut members) in folders {
        members.sort_by(|a, b| a.0.cmp(&b.0));
        let entry = members.iter().find(|(path, _)| path == kind.entry_file()).map(|(_, file)| *file);
        let Some(entry) = entry else {
            diagnostics.push(
                Diagnostic::error(
                    "skill-file-missing",
                    format!("{} skill `{}` has no `{}`", kind.name(), sanitize(&name), kind.entry_file()),
                )
                .in_file(format!("{}/{}", catalogue.label(db), skill_folder(kind, &name)))
                .hint(format!("add `{}` or remove the folder", kind.entry_file())),
            );
            continue;
        };
        let document = skill_document(db, entry);
        diagnostics.extend(document.diagnostics.iter().cloned());
        if let Some(declared) = &document.value.name
            && declared != &name
        {
            diagnostics.push(
                Diagnostic::warning(
                    "skill-name-mismatch",
                    format!("skill folder `{}` declares `name: {}`", sanitize(&name), sanitize(declared)),
                )
                .in_file(entry.display_path(db))
                .at(document.value.name_span.or(Some(Span::new(0, 0))))
                .hint("the folder name is the skill's name; make the frontmatter agree"),
            );
        }
        let summaries: Vec<(String, &FileSummary)> =
            members.iter().map(|(path, file)| (path.clone(), file_summary(db, *file))).collect();
        let digest = tree_digest(&summaries);
        let bytes = summaries.iter().map(|(_, summary)| summary.raw_length).sum();
        let skill = CatalogueSkill {
            name: name.clone(),
            kind,
            members: members
                .iter()
                .zip(&summaries)
                .map(|((path, file), (_, summary))| SkillMember {
                    path: path.clone(),
                    file: *file,
                    raw_length: summary.raw_length,
                })
                .collect(),
            digest,
            bytes,
            description: document.value.description.clone().unwrap_or_default(),
        };
        match kind {
            SkillKind::Ordinary => listing.ordinary.push(skill),
            SkillKind::Composed => listing.composed.push(skill),
        }
    }
    listing.instructions.sort_by(|a, b| a.id.cmp(&b.id));
    Parsed::new(listing, diagnostics)
}

/// The folder of a skill inside its root.
pub fn skill_folder(kind: SkillKind, name: &str) -> String {
    match kind {
        SkillKind::Ordinary => format!(".agents/skills/{name}"),
        SkillKind::Composed => format!(".agents/composed/{name}"),
    }
}

/// The names in a catalogue, without digests: what other roles need of a provider they
/// exclude. A firewall: editing a skill's body never changes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CatalogueNames {
    pub ordinary: Vec<String>,
    pub composed: Vec<String>,
    pub roles: Option<SourceFile>,
}

#[salsa::tracked(returns(ref))]
pub fn catalogue_names(db: &dyn salsa::Database, catalogue: Catalogue) -> CatalogueNames {
    let mut names = CatalogueNames::default();
    for &file in catalogue.files(db) {
        let relative = file.relative_path(db);
        let parts: Vec<&str> = relative.split('/').collect();
        match parts.as_slice() {
            [".agents", "roles.kdl"] => names.roles = Some(file),
            [".agents", "skills", name, "SKILL.md"] => names.ordinary.push((*name).to_owned()),
            [".agents", "composed", name, "COMPOSED.md"] => names.composed.push((*name).to_owned()),
            _ => {}
        }
    }
    names.ordinary.sort();
    names.composed.sort();
    names
}
