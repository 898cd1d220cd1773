//! Skill catalogues: a repository's `.agents/skills/<name>/` (ordinary skills) and
//! `.agents/composed/<name>/` (composed skills), folders there that are not skills, skill
//! tree digests and the loading split of each skill's bytes. Reads the file list and
//! per-file summaries; never decides which skill is selected, nor what a finding does.

use std::collections::BTreeMap;

use crate::db::SourceFile;
use crate::diagnostic::{Diagnostic, Parsed, Span, sanitize};
use crate::file_queries::{skill_check, skill_document};
use crate::skill::SkillDocument;
use crate::skill_rules::SkillCheck;

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
    /// Entries of `.agents/skills/` a projection into this repository owns (links into a
    /// bundle, relative to the root): the driver left them out, and the trace says so.
    #[default]
    #[returns(ref)]
    pub projected: Vec<String>,
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
    pub(crate) fn entry_file(self) -> &'static str {
        match self {
            SkillKind::Ordinary => "SKILL.md",
            SkillKind::Composed => "COMPOSED.md",
        }
    }
}

pub use crate::file_queries::file_summary;
pub use crate::summarized::{FileSummary, Summarized, is_binary};

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
    /// How the bytes load into a harness (SPEC 6.6): the three parts sum to `bytes`.
    pub budget: SkillBudget,
    /// The Agent Skills check of an ordinary skill, shared with its file's summary;
    /// composed skills have none.
    pub check: Option<std::sync::Arc<SkillCheck>>,
}

/// A skill's bytes split the way harnesses load them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SkillBudget {
    /// The name and description harnesses list up front (always in context).
    pub metadata_bytes: u64,
    /// The rest of the entry file, loaded when the skill is used.
    pub instruction_bytes: u64,
    /// Every other file, loaded on demand.
    pub resource_bytes: u64,
    /// The part of `resource_bytes` in binary files, never counted as tokens.
    pub binary_bytes: u64,
}

impl SkillBudget {
    /// Splits an entry file of `entry_length` bytes listed as `name` + `description`,
    /// beside resources; metadata never exceeds the entry file, so the parts sum exactly.
    pub fn split(name: &str, description: &str, entry_length: u64, resources: u64, binary: u64) -> SkillBudget {
        let metadata = (name.len() as u64 + description.len() as u64).min(entry_length);
        SkillBudget {
            metadata_bytes: metadata,
            instruction_bytes: entry_length - metadata,
            resource_bytes: resources,
            binary_bytes: binary,
        }
    }

    pub fn add(&mut self, other: SkillBudget) {
        self.metadata_bytes += other.metadata_bytes;
        self.instruction_bytes += other.instruction_bytes;
        self.resource_bytes += other.resource_bytes;
        self.binary_bytes += other.binary_bytes;
    }
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
    /// Folders under `.agents/skills/` without a `SKILL.md` (shared references, scripts):
    /// not skills, recorded so the trace can say so.
    pub not_skills: Vec<String>,
    /// Entries under `.agents/skills/` a projection into the repository owns: a role's
    /// delivered skills, not the catalogue's, left out and recorded so the trace says so.
    pub projected: Vec<String>,
}

/// Tree digest over (path, folded length, folded bytes digest) of every member.
pub(crate) fn tree_digest(members: &[(String, &FileSummary)]) -> String {
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
    let mut builder = ListingBuilder {
        db,
        catalogue,
        listing: CatalogueListing::default(),
        diagnostics: catalogue.load_diagnostics(db).clone(),
    };
    let folders = builder.sort_files();
    for ((kind, name), members) in folders {
        builder.list_skill_folder(kind, name, members);
    }
    let ListingBuilder { mut listing, diagnostics, .. } = builder;
    listing.instructions.sort_by(|a, b| a.id.cmp(&b.id));
    listing.projected = catalogue
        .projected(db)
        .iter()
        .filter_map(|path| path.strip_prefix(".agents/skills/"))
        .map(str::to_owned)
        .collect();
    Parsed::new(listing, diagnostics)
}

/// The files of each skill folder, keyed by kind and folder name: (path inside the
/// folder, file), in the catalogue's order.
type SkillFolders = BTreeMap<(SkillKind, String), Vec<(String, SourceFile)>>;

/// A catalogue's listing while [`catalogue_listing`] builds it, with the diagnostics found
/// on the way. It reads the database in the same order as one loop over the files would.
struct ListingBuilder<'db> {
    db: &'db dyn salsa::Database,
    catalogue: Catalogue,
    listing: CatalogueListing,
    diagnostics: Vec<Diagnostic>,
}

impl<'db> ListingBuilder<'db> {
    /// Sorts the catalogue's files: the trusted-root document and instructions go to the
    /// listing, skill files to their folders.
    fn sort_files(&mut self) -> SkillFolders {
        let db = self.db;
        let catalogue = self.catalogue;
        let mut folders = SkillFolders::new();
        for &file in catalogue.files(db) {
            let relative = file.relative_path(db);
            let parts: Vec<&str> = relative.split('/').collect();
            match parts.as_slice() {
                [".agents", "roles.kdl"] => self.listing.roles = Some(file),
                [".agents", "skills", name, rest @ ..] if !rest.is_empty() => {
                    folders.entry((SkillKind::Ordinary, (*name).to_owned())).or_default().push((rest.join("/"), file));
                }
                [".agents", "composed", name, rest @ ..] if !rest.is_empty() => {
                    folders.entry((SkillKind::Composed, (*name).to_owned())).or_default().push((rest.join("/"), file));
                }
                ["instructions", name] if name.ends_with(".md") && !crate::portable::is_portable_path(name) => {
                    self.diagnostics.push(unportable_name(catalogue.label(db), relative));
                }
                ["instructions", name] if name.ends_with(".md") => {
                    self.listing.instructions.push(Instruction { id: name.trim_end_matches(".md").to_owned(), file })
                }
                _ => {}
            }
        }
        folders
    }

    /// Lists one skill folder as a skill of its kind, or reports why it is not one.
    fn list_skill_folder(&mut self, kind: SkillKind, name: String, members: Vec<(String, SourceFile)>) {
        let Some(members) = self.portable_members(kind, &name, members) else { return };
        let entry = members.iter().find(|(path, _)| path == kind.entry_file()).map(|(_, file)| *file);
        let Some(entry) = entry else {
            self.report_missing_entry(kind, name);
            return;
        };
        let skill = self.read_skill(kind, name, &members, entry);
        match kind {
            SkillKind::Ordinary => self.listing.ordinary.push(skill),
            SkillKind::Composed => self.listing.composed.push(skill),
        }
    }

    /// The folder's members sorted by path, those with portable names only; `None` when
    /// the folder's own name is not portable.
    fn portable_members(
        &mut self,
        kind: SkillKind,
        name: &str,
        mut members: Vec<(String, SourceFile)>,
    ) -> Option<Vec<(String, SourceFile)>> {
        let db = self.db;
        members.sort_by(|a, b| a.0.cmp(&b.0));
        // A name that cannot be a portable path could never be delivered (a bundle holding
        // it fails verification): a skill folder so named is an error, a file inside one
        // (an editor's `SKILL.md.~1~`) is left out with a warning; both are named escaped
        // and never staged.
        if !crate::portable::is_portable_path(name) {
            self.diagnostics.push(unportable_name(self.catalogue.label(db), &skill_folder(kind, name)));
            return None;
        }
        members.retain(|(path, _)| {
            let portable = crate::portable::is_portable_path(path);
            if !portable {
                let relative = skill_folder(kind, &format!("{name}/{path}"));
                self.diagnostics.push(unportable_member(self.catalogue.label(db), &relative));
            }
            portable
        });
        Some(members)
    }

    /// A folder without its entry file: an ordinary one holds resources, not a skill (a
    /// note), a composed one is an error.
    fn report_missing_entry(&mut self, kind: SkillKind, name: String) {
        let folder = format!("{}/{}", self.catalogue.label(self.db), skill_folder(kind, &name));
        if kind == SkillKind::Ordinary {
            self.diagnostics.push(
                Diagnostic::note(
                    "not-a-skill",
                    format!("folder `{}` has no `SKILL.md`; it is not a skill and is left out", sanitize(&name)),
                )
                .in_file(folder)
                .hint("a folder of shared references beside skills is fine; add `SKILL.md` to make it a skill"),
            );
            self.listing.not_skills.push(name);
            return;
        }
        self.diagnostics.push(
            Diagnostic::error(
                "skill-file-missing",
                format!("{} skill `{}` has no `{}`", kind.name(), sanitize(&name), kind.entry_file()),
            )
            .in_file(folder)
            .hint(format!("add `{}` or remove the folder", kind.entry_file())),
        );
    }

    /// Reads a skill from its entry file and members: its check or document, digest,
    /// bytes, description and loading split.
    fn read_skill(
        &mut self,
        kind: SkillKind,
        name: String,
        members: &[(String, SourceFile)],
        entry: SourceFile,
    ) -> CatalogueSkill {
        let db = self.db;
        let document = skill_document(db, entry);
        // Ordinary skills are judged by the Agent Skills rules (`skill_check`) under the
        // composition's policy; the line reader's complaints would only repeat them.
        let check = (kind == SkillKind::Ordinary).then(|| skill_check(db, entry).clone());
        if kind == SkillKind::Composed {
            self.check_composed_document(&name, document, entry);
        }
        let summaries: Vec<(String, &FileSummary)> =
            members.iter().map(|(path, file)| (path.clone(), file_summary(db, *file))).collect();
        let digest = tree_digest(&summaries);
        let bytes = summaries.iter().map(|(_, summary)| summary.raw_length).sum();
        let description = check
            .as_ref()
            .and_then(|check| check.frontmatter.description.as_deref())
            .or(document.value.description.as_deref())
            .unwrap_or_default();
        let listed_name = check.as_ref().and_then(|check| check.frontmatter.name.as_deref()).unwrap_or(&name);
        let budget = skill_budget(kind, &summaries, bytes, listed_name, description);
        let members = members
            .iter()
            .zip(&summaries)
            .map(|((path, file), (_, summary))| SkillMember {
                path: path.clone(),
                file: *file,
                raw_length: summary.raw_length,
            })
            .collect();
        CatalogueSkill { name, kind, members, digest, bytes, budget, check }
    }

    /// A composed skill's document: the line reader's diagnostics, and a warning when its
    /// declared name differs from its folder.
    fn check_composed_document(&mut self, name: &str, document: &Parsed<SkillDocument>, entry: SourceFile) {
        self.diagnostics.extend(document.diagnostics.iter().cloned());
        if let Some(declared) = &document.value.name
            && declared != name
        {
            self.diagnostics.push(
                Diagnostic::warning(
                    "skill-name-mismatch",
                    format!("skill folder `{}` declares `name: {}`", sanitize(name), sanitize(declared)),
                )
                .in_file(entry.display_path(self.db))
                .at(document.value.name_span.or(Some(Span::new(0, 0))))
                .hint("the folder name is the skill's name; make the frontmatter agree"),
            );
        }
    }
}

/// How a skill of `bytes` loads: its listed name and description, the rest of its entry
/// file, and its other members (binary ones counted apart).
fn skill_budget(
    kind: SkillKind,
    summaries: &[(String, &FileSummary)],
    bytes: u64,
    listed_name: &str,
    description: &str,
) -> SkillBudget {
    let entry_length: u64 =
        summaries.iter().filter(|(path, _)| path == kind.entry_file()).map(|(_, summary)| summary.raw_length).sum();
    let resources = bytes - entry_length;
    let binary = summaries
        .iter()
        .filter(|(path, summary)| path != kind.entry_file() && summary.binary)
        .map(|(_, summary)| summary.raw_length)
        .sum();
    SkillBudget::split(listed_name, description, entry_length, resources, binary)
}

/// The error for a catalogue path that cannot be a portable file name (control bytes, a
/// newline, a space, a reserved device name, …); the path is shown escaped.
fn unportable_name(label: &str, relative: &str) -> Diagnostic {
    Diagnostic::error(
        "unportable-name",
        format!("`{}` is not a portable name, so it cannot be delivered", sanitize(relative)),
    )
    .in_file(sanitize(&format!("{label}/{relative}")))
    .hint("rename it to letters, digits, `.`, `_` and `-` (not starting with `.`, not a device name like `con`)")
}

/// The warning for a file inside a skill folder whose name is not portable: it is left
/// out of the skill.
fn unportable_member(label: &str, relative: &str) -> Diagnostic {
    Diagnostic::warning(
        "unportable-name",
        format!("`{}` is not a portable name; the file is left out of the skill", sanitize(relative)),
    )
    .in_file(sanitize(&format!("{label}/{relative}")))
    .hint("rename it to letters, digits, `.`, `_` and `-` to deliver it, or remove it")
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
    /// Shared with the traces of the roles that exclude the provider.
    pub ordinary: std::sync::Arc<[String]>,
    pub composed: Vec<String>,
    pub roles: Option<SourceFile>,
}

#[salsa::tracked(returns(ref))]
pub fn catalogue_names(db: &dyn salsa::Database, catalogue: Catalogue) -> CatalogueNames {
    let mut names = CatalogueNames::default();
    let mut ordinary = Vec::new();
    for &file in catalogue.files(db) {
        let relative = file.relative_path(db);
        let parts: Vec<&str> = relative.split('/').collect();
        match parts.as_slice() {
            [".agents", "roles.kdl"] => names.roles = Some(file),
            [".agents", "skills", name, "SKILL.md"] => ordinary.push((*name).to_owned()),
            [".agents", "composed", name, "COMPOSED.md"] => names.composed.push((*name).to_owned()),
            _ => {}
        }
    }
    ordinary.sort();
    names.ordinary = ordinary.into();
    names.composed.sort();
    names
}
