//! Projection of one bundle into one harness layout, the engine half: which paths the
//! target gets (the instructions file, one entry per selected skill), what each holds
//! (bytes, or a link to a folder of the bundle), and the identity the projection record
//! carries for `statusline` and `whoami`. Reads no file and writes none: the host hands
//! in the bundle's files and writes the plan through a transaction.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bundle::Manifest;
use crate::diagnostic::sanitize;
use crate::harness_layout::{self, Layout, Scope};
use crate::render::{Palette, tint};

/// The projection record, relative to the target.
pub const RECORD: &str = ".agent-compose/projection.json";
/// The journal folder of a projection in progress, relative to the target.
pub const JOURNAL: &str = ".agent-compose/transaction";
/// The `format` of the projection record.
pub const FORMAT: &str = "acompose.projection.v1";

/// How skills reach the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Each skill folder is a symbolic link to the bundle's folder of that skill.
    Link,
    /// Each skill's files are copied.
    Copy,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Link => "link",
            Mode::Copy => "copy",
        }
    }
}

/// What one planned path holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    Bytes(Vec<u8>),
    /// A link to this folder of the bundle (relative to the bundle's root).
    BundleFolder(String),
}

/// One path of the target, relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEntry {
    pub path: String,
    pub content: Planned,
}

/// The personality marks of the identity row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordPersonality {
    pub slug: String,
    pub color: String,
}

/// What a projection record says about the projection (its `details`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Details {
    pub bundle: String,
    /// The absolute path of the bundle the links point into.
    pub bundle_path: String,
    pub layout: String,
    pub scope: String,
    pub mode: String,
    pub delivery: String,
    pub role: String,
    pub role_name: String,
    pub name: String,
    pub pronouns: String,
    pub model_tier: String,
    pub personalities: Vec<RecordPersonality>,
    /// The skill names under the skills folder, sorted.
    pub skills: Vec<String>,
    /// `ceil(bytes / 4)` over the skill files the projection delivers.
    pub approximate_tokens: u64,
    /// The instructions the projection keeps as a managed block inside a file of the
    /// user's (which it does not own), rather than as a file of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockRecord>,
    /// The MCP servers the projection put into a harness file of the user's (which it
    /// does not own), to take them out again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<McpRecord>,
    /// What the projection still has to do to git's own files (see [`GitRecord`]).
    #[serde(default, skip_serializing_if = "GitRecord::is_empty")]
    pub git: GitRecord,
    /// `unproject` took the projection's paths out and put the user's files back; what
    /// is left (its git lines and this record) the next run takes out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unprojecting: bool,
}

/// The projection's changes to git's own files (the filter in the repository's config,
/// its `info/attributes` and `info/exclude` lines, marks an earlier version set in the
/// index), journaled in the record before they are made: the record is written first,
/// saying what is in flight, and rewritten once git's files say what it says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitRecord {
    /// Git's files may not match the record yet (a run was stopped between the two): the
    /// next run brings them in line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// Files an earlier version marked `skip-worktree` in the index whose mark is still
    /// to be taken off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marked: Vec<String>,
}

impl GitRecord {
    pub fn is_empty(&self) -> bool {
        !self.pending && self.marked.is_empty()
    }
}

/// The role's MCP servers merged into a harness's configuration file the user owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpRecord {
    /// The file, relative to the target.
    pub path: String,
    /// The layout whose file it is (its key and shape come from the layout).
    pub layout: String,
    /// The servers the projection added, by name.
    pub servers: Vec<String>,
    /// Whether the file had no key for servers before: taken out with the last server
    /// (a record of an earlier version, whose merge rewrote the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub created_key: bool,
    /// The exact text the projection inserted into the user's file (the servers' entries
    /// with their separators): taking it out gives back the user's bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub inserted: String,
}

/// One managed block of instructions in a file the user owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockRecord {
    /// The file, relative to the target.
    pub path: String,
    /// What was written between the user's text and the block, taken out with it.
    pub separator: String,
    /// The blake3 digest of the block as written (markers included): a block whose
    /// digest differs was edited by hand and is left alone.
    pub digest: String,
    /// Whether an earlier version marked the file `skip-worktree` in the git index (a
    /// tracked file of a linked projection). Read from such records only: the next run
    /// takes the mark off and lets the clean filter hide the block instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden_from_git: bool,
}

/// A projection decided before anything is touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub entries: Vec<PlannedEntry>,
    pub details: Details,
}

/// The bundle as the host read it.
pub struct BundleInput<'a> {
    pub id: &'a str,
    /// The absolute path of the bundle directory, as text.
    pub path: &'a str,
    pub manifest: &'a Manifest,
    /// Every file of the bundle by its `/`-separated path.
    pub files: &'a BTreeMap<String, Vec<u8>>,
}

/// Why a bundle cannot be projected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The bundle has no instructions document for its delivery.
    MissingDocument(String),
    /// Two sources deliver a skill of the same name; one folder cannot hold both.
    DuplicateSkill { skill: String, sources: [String; 2] },
    /// A compiled bundle is one document, and the harness reads no instructions file at
    /// this scope.
    NoInstructionsFile { harness: String, scope: String },
    /// The harness drops repository-scope skill links that leave the checkout.
    LinksDropped { harness: String },
    /// Two layouts projected together read one instructions file, and the bundle holds
    /// an overlay instruction for one of them only: one file cannot show it to one alone.
    SharedInstructions { path: String, harnesses: [String; 2] },
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::MissingDocument(path) => format!("the bundle has no `{}`", sanitize(path)),
            Refusal::DuplicateSkill { skill, sources } => format!(
                "sources `{}` and `{}` both deliver a skill named `{}`; a harness folder holds one",
                sanitize(&sources[0]),
                sanitize(&sources[1]),
                sanitize(skill)
            ),
            Refusal::NoInstructionsFile { harness, scope } => format!(
                "{harness} reads no instructions file at {scope} scope, and a compiled bundle is only its instructions; compose it with native skills"
            ),
            Refusal::LinksDropped { harness } => format!(
                "{harness} drops repository skills that link outside the checkout, so a linked projection would show it nothing; project with `--copy`"
            ),
            Refusal::SharedInstructions { path, harnesses } => format!(
                "{} and {} both read `{}`, and a private overlay scopes an instruction to only one of them; project them into separate targets",
                harnesses[0],
                harnesses[1],
                sanitize(path)
            ),
        }
    }
}

/// The skill folders of a bundle: skill name → (source, files relative to the folder).
type SkillFolders<'a> = BTreeMap<&'a str, (&'a str, Vec<(&'a str, &'a [u8])>)>;

fn skill_folders<'a>(files: &'a BTreeMap<String, Vec<u8>>) -> Result<SkillFolders<'a>, Refusal> {
    let mut folders: SkillFolders<'a> = BTreeMap::new();
    for (path, bytes) in files {
        let Some(rest) = path.strip_prefix("content/skills/") else { continue };
        let mut parts = rest.splitn(3, '/');
        let (Some(source), Some(skill), Some(inner)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let folder = folders.entry(skill).or_insert_with(|| (source, Vec::new()));
        if folder.0 != source {
            return Err(Refusal::DuplicateSkill {
                skill: skill.to_owned(),
                sources: [folder.0.to_owned(), source.to_owned()],
            });
        }
        folder.1.push((inner, bytes.as_slice()));
    }
    Ok(folders)
}

/// Plans the projection of `bundle` into `layout` at `scope`. A compiled bundle delivers
/// its single document and no skill folder.
pub fn plan(bundle: &BundleInput<'_>, layout: &Layout, scope: Scope, mode: Mode) -> Result<Plan, Refusal> {
    let places = layout.places(scope);
    let compiled = bundle.manifest.delivery == crate::request::Delivery::Compiled.name();
    let document = if compiled { "delivery/compiled.md" } else { "content/instructions.md" };
    let instructions = bundle.files.get(document).ok_or_else(|| Refusal::MissingDocument(document.to_owned()))?;
    if places.instructions.is_empty() && compiled {
        return Err(Refusal::NoInstructionsFile {
            harness: layout.display_name.to_owned(),
            scope: scope.name().to_owned(),
        });
    }
    if scope == Scope::Repository && mode == Mode::Link && !layout.repository_links {
        return Err(Refusal::LinksDropped { harness: layout.display_name.to_owned() });
    }
    let instructions = with_harness_part(bundle, layout, instructions)?;
    let mut entries = Vec::new();
    if !places.instructions.is_empty() {
        entries
            .push(PlannedEntry { path: places.instructions.to_owned(), content: Planned::Bytes(instructions.clone()) });
    }
    let folders = if compiled { BTreeMap::new() } else { skill_folders(bundle.files)? };
    let mut skill_bytes: u64 = 0;
    for (skill, (source, files)) in &folders {
        skill_bytes += files.iter().map(|(_, bytes)| bytes.len() as u64).sum::<u64>();
        let folder = format!("{}/{skill}", places.skills);
        match mode {
            Mode::Link => entries.push(PlannedEntry {
                path: folder,
                content: Planned::BundleFolder(format!("content/skills/{source}/{skill}")),
            }),
            Mode::Copy => entries.extend(files.iter().map(|(inner, bytes)| PlannedEntry {
                path: format!("{folder}/{inner}"),
                content: Planned::Bytes(bytes.to_vec()),
            })),
        }
    }
    if compiled {
        skill_bytes = instructions.len() as u64;
    }
    if let Some(entry) = mcp_entry(bundle.manifest, layout, scope) {
        entries.push(entry);
    }
    entries.sort_by(|left, right| left.path.cmp(&right.path));
    let manifest = bundle.manifest;
    let details = Details {
        bundle: bundle.id.to_owned(),
        bundle_path: bundle.path.to_owned(),
        layout: layout.harness.to_owned(),
        scope: scope.name().to_owned(),
        mode: mode.name().to_owned(),
        delivery: manifest.delivery.clone(),
        role: manifest.role.slug.clone(),
        role_name: manifest.role.display_name.clone(),
        name: manifest.identity.name.clone(),
        pronouns: manifest.identity.pronouns.clone(),
        model_tier: manifest.model_tier.clone(),
        personalities: manifest
            .personalities
            .iter()
            .map(|personality| RecordPersonality { slug: personality.slug.clone(), color: personality.color.clone() })
            .collect(),
        skills: folders.keys().map(|skill| (*skill).to_owned()).collect(),
        approximate_tokens: skill_bytes.div_ceil(4),
        blocks: Vec::new(),
        mcp: Vec::new(),
        git: GitRecord::default(),
        unprojecting: false,
    };
    Ok(Plan { entries, details })
}

/// The instructions document for `layout`: the bundle's document, followed by the
/// harness's own part when an overlay scoped instructions to it.
fn with_harness_part(bundle: &BundleInput<'_>, layout: &Layout, document: &[u8]) -> Result<Vec<u8>, Refusal> {
    let mut bytes = document.to_vec();
    if let Some(path) = bundle.manifest.harness_instructions.get(layout.harness) {
        let part = bundle.files.get(path).ok_or_else(|| Refusal::MissingDocument(path.clone()))?;
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(part);
    }
    Ok(bytes)
}

/// The harness's MCP file at `scope` holding exactly the role's servers, as a file of the
/// projection's own; the driver merges it into the user's file when one is there. None
/// when the role has no server or the harness reads none at this scope.
fn mcp_entry(manifest: &Manifest, layout: &Layout, scope: Scope) -> Option<PlannedEntry> {
    let places = layout.mcp.as_ref()?;
    let path = mcp_path(places, scope);
    if manifest.mcp_servers.is_empty() || path.is_empty() {
        return None;
    }
    let bytes = crate::mcp::harness_config::owned_file(path, places, &manifest.mcp_servers);
    Some(PlannedEntry { path: path.to_owned(), content: Planned::Bytes(bytes) })
}

/// Where a harness reads MCP servers at `scope` (`""`: nowhere).
pub fn mcp_path(places: &crate::mcp::harness_config::McpPlaces, scope: Scope) -> &'static str {
    match scope {
        Scope::Repository => places.repository,
        Scope::Home => places.home,
    }
}

/// The separator of layouts sharing one target in a record's `layout` (`claude+codex`);
/// no harness name holds it.
pub const LAYOUT_SEPARATOR: char = '+';

/// One projection of a bundle for several layouts into one target: every layout's entries,
/// a path two layouts share (`AGENTS.md` for Codex and OpenCode, `.agents/skills/…`)
/// written once, and the layouts named together in the details. `plans` is never empty
/// in a caller; an empty list gives an empty plan of no layout.
///
/// Skills go only into the folders [`harness_layout::skill_folders`] chooses for the
/// layouts together, so a harness that reads another's folder (Gemini CLI and
/// `.agents/skills`) does not see each skill twice.
///
/// Refused when two layouts would write one path with different bytes: an instructions
/// file both read, holding a part an overlay scoped to one of them.
pub fn merged(plans: Vec<Plan>, scope: Scope) -> Result<Option<Plan>, Refusal> {
    let layouts: Vec<&Layout> = plans.iter().filter_map(|plan| harness_layout::layout(&plan.details.layout)).collect();
    let chosen = harness_layout::skill_folders(&layouts, scope);
    let dropped: Vec<String> = layouts
        .iter()
        .map(|layout| layout.places(scope).skills)
        .filter(|folder| !chosen.contains(folder))
        .map(|folder| format!("{folder}/"))
        .collect();
    let instructions_of = |plan: &Plan| {
        harness_layout::layout(&plan.details.layout).map_or("", |layout| layout.places(scope).instructions)
    };
    let display = |harness: &str| {
        harness_layout::layout(harness).map_or(harness.to_owned(), |layout| layout.display_name.to_owned())
    };
    let mut plans = plans.into_iter();
    let Some(mut merged) = plans.next() else { return Ok(None) };
    // The instructions file each layout so far writes, with its bytes and the layout.
    let mut written: Vec<(String, Planned, String)> = Vec::new();
    let note = |plan: &Plan, written: &mut Vec<(String, Planned, String)>| -> Result<(), Refusal> {
        let path = instructions_of(plan);
        let Some(entry) = plan.entries.iter().find(|entry| !path.is_empty() && entry.path == path) else {
            return Ok(());
        };
        if let Some((_, content, layout)) = written.iter().find(|(earlier, _, _)| earlier == path)
            && *content != entry.content
        {
            return Err(Refusal::SharedInstructions {
                path: path.to_owned(),
                harnesses: [display(layout), display(&plan.details.layout)],
            });
        }
        written.push((path.to_owned(), entry.content.clone(), plan.details.layout.clone()));
        Ok(())
    };
    note(&merged, &mut written)?;
    let mut paths: BTreeSet<String> = merged.entries.iter().map(|entry| entry.path.clone()).collect();
    for plan in plans {
        note(&plan, &mut written)?;
        merged.details.layout.push(LAYOUT_SEPARATOR);
        merged.details.layout.push_str(&plan.details.layout);
        for entry in plan.entries {
            if paths.insert(entry.path.clone()) {
                merged.entries.push(entry);
            }
        }
    }
    merged.entries.retain(|entry| !dropped.iter().any(|folder| entry.path.starts_with(folder.as_str())));
    merged.entries.sort_by(|left, right| left.path.cmp(&right.path));
    Ok(Some(merged))
}

/// Whether the projection still looks like what its record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    /// The bundle the projection points into is gone.
    BundleMissing,
    /// An owned path is missing or a link no longer resolves.
    Damaged,
    /// The bundle is still there, but the home it came from now indexes a newer bundle
    /// for the role: the projection shows the role as it was.
    Stale,
}

impl Health {
    pub fn name(self) -> &'static str {
        match self {
            Health::Ok => "ok",
            Health::BundleMissing => "bundle missing",
            Health::Damaged => "damaged",
            Health::Stale => "stale",
        }
    }
}

/// A token count as people read it: `950`, `1.2k`, `34k`.
fn approximate(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..10_000 => format!("{}.{}k", count / 1_000, (count % 1_000) / 100),
        _ => format!("{}k", count / 1_000),
    }
}

/// The identity row of a projection: personality marks, `Name [pronouns]`,
/// `role@layout`, tier, skills and approximate tokens, health. Every value from the
/// record is sanitized; colour only through `palette`.
pub fn identity_row(details: &Details, health: Health, palette: Palette) -> String {
    let mut row = String::new();
    for personality in &details.personalities {
        match crate::color::parse_hex(&personality.color) {
            Some(rgb) => row.push_str(&tint(palette, rgb, "●")),
            None => row.push('●'),
        }
    }
    if !row.is_empty() {
        row.push(' ');
    }
    let _ = write!(row, "{}", sanitize(&details.name));
    if !details.pronouns.is_empty() {
        let _ = write!(row, " [{}]", sanitize(&details.pronouns));
    }
    let skills =
        if details.skills.len() == 1 { "1 skill".to_owned() } else { format!("{} skills", details.skills.len()) };
    let _ = write!(
        row,
        " · {}@{} · {} · {skills} ~{} tokens · {}",
        sanitize(&details.role),
        sanitize(&details.layout),
        sanitize(&details.model_tier),
        approximate(details.approximate_tokens),
        health.name()
    );
    row
}

/// The longer `whoami` text: the row, then one line per fact.
pub fn whoami_text(details: &Details, health: Health, target: &str) -> String {
    let mut text = identity_row(details, health, Palette::Plain);
    text.push('\n');
    let lines = [
        ("role", format!("{} ({})", sanitize(&details.role), sanitize(&details.role_name))),
        ("layout", format!("{} at {} scope, skills by {}", details.layout, details.scope, details.mode)),
        ("bundle", format!("{} ({})", sanitize(&details.bundle), details.delivery)),
        ("target", sanitize(target)),
        ("skills", details.skills.iter().map(|skill| sanitize(skill)).collect::<Vec<_>>().join(", ")),
    ];
    for (key, value) in lines {
        let _ = writeln!(text, "{key:<8}{value}");
    }
    text
}

/// What `layout`'s harness would cut, shorten or refuse of a bundle's skills, by its
/// `listing` row: names outside the Agent Skills rule where the harness holds names to
/// it, descriptions over its limit, and a listing over its budget. Each is one sentence
/// naming the harness, the skills and why; none when the bundle fits.
pub fn listing_warnings(files: &BTreeMap<String, Vec<u8>>, layout: &Layout) -> Vec<String> {
    let harness = layout.display_name;
    let mut skills: Vec<(String, usize)> = Vec::new();
    let mut warnings = Vec::new();
    for (path, bytes) in files {
        let Some(folder) = path.strip_prefix("content/skills/").and_then(|rest| rest.strip_suffix("/SKILL.md")) else {
            continue;
        };
        let Some((_, skill)) = folder.split_once('/').filter(|(_, skill)| !skill.contains('/')) else { continue };
        let document = crate::skill::document_of(bytes, path).value;
        let name = document.name.unwrap_or_else(|| skill.to_owned());
        let description = document.description.unwrap_or_default().chars().count();
        if layout.listing.names == crate::harness_layout::NameRule::AgentSkills && !agent_skills_name(&name) {
            warnings.push(format!(
                "{harness} takes skill names of 1–64 lowercase letters, digits and single hyphens: `{}` may be left out",
                sanitize(&name)
            ));
        }
        if let Some(limit) = layout.listing.description.filter(|limit| description > *limit as usize) {
            warnings.push(format!(
                "{harness} takes descriptions of at most {limit} characters: `{}`'s has {description} and may be cut or left out",
                sanitize(&name)
            ));
        }
        skills.push((name, description));
    }
    if let Some(budget) = layout.listing.budget {
        skills.sort();
        let mut used = 0usize;
        let mut over = Vec::new();
        for (name, description) in &skills {
            used += name.chars().count() + description + 4;
            if used > budget as usize {
                over.push(format!("`{}`", sanitize(name)));
            }
        }
        if !over.is_empty() {
            let shown = over.len().min(5);
            let rest = if over.len() > shown { format!(" and {} more", over.len() - shown) } else { String::new() };
            warnings.push(format!(
                "{harness} lists about {budget} characters of skill names and descriptions; these {} skills take {used}, so it will shorten or leave out some ({}{rest})",
                skills.len(),
                over[..shown].join(", ")
            ));
        }
    }
    warnings
}

/// The Agent Skills rule for a skill name.
fn agent_skills_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn details() -> Details {
        Details {
            bundle: "0123456789abcdef".to_owned(),
            bundle_path: "/bundles/0123456789abcdef".to_owned(),
            layout: "claude".to_owned(),
            scope: "repo".to_owned(),
            mode: "link".to_owned(),
            delivery: "native-skills".to_owned(),
            role: "platform".to_owned(),
            role_name: "Developer Platform Engineer".to_owned(),
            name: "Rowan\u{1b}[31m Keel".to_owned(),
            pronouns: "she".to_owned(),
            model_tier: "frontier".to_owned(),
            personalities: vec![RecordPersonality { slug: "grounded".to_owned(), color: "#8f8c47".to_owned() }],
            skills: vec!["role-platform".to_owned()],
            approximate_tokens: 1_234,
            blocks: Vec::new(),
            mcp: Vec::new(),
            git: GitRecord::default(),
            unprojecting: false,
        }
    }

    #[test]
    fn the_identity_row_never_carries_a_control_byte_from_the_record() {
        let row = identity_row(&details(), Health::Ok, Palette::Plain);
        assert_eq!(row, "● Rowan\u{fffd}[31m Keel [she] · platform@claude · frontier · 1 skill ~1.2k tokens · ok");
        let tinted = identity_row(&details(), Health::Damaged, Palette::TrueColor);
        assert!(tinted.starts_with("\x1b[38;2;143;140;71m●\x1b[0m "), "{tinted:?}");
        assert_eq!(tinted.matches('\x1b').count(), 2);
    }

    fn manifest(delivery: &str) -> Manifest {
        use crate::bundle::{ManifestIdentity, ManifestRole, ManifestSkill};
        Manifest {
            format: "agent-compose.bundle".to_owned(),
            format_version: 1,
            person_source: "roster:core".to_owned(),
            role: ManifestRole {
                slug: "platform".to_owned(),
                display_name: "Platform".to_owned(),
                purpose: String::new(),
            },
            role_skill: ManifestSkill {
                id: "role-platform".to_owned(),
                source: "person".to_owned(),
                digest: String::new(),
            },
            model_tier: "frontier".to_owned(),
            delivery: delivery.to_owned(),
            personalities: Vec::new(),
            favorite_color: "#8f8c47".to_owned(),
            identity: ManifestIdentity { name: "Rowan".to_owned(), pronouns: String::new() },
            seats: Vec::new(),
            sources: Vec::new(),
            mcp_servers: Vec::new(),
            harness_instructions: BTreeMap::new(),
            content: Vec::new(),
        }
    }

    fn files(paths: &[&str]) -> BTreeMap<String, Vec<u8>> {
        paths.iter().map(|path| ((*path).to_owned(), b"12345".to_vec())).collect()
    }

    fn plan_of(delivery: &str, paths: &[&str], mode: Mode) -> Result<Plan, Refusal> {
        let manifest = manifest(delivery);
        let files = files(paths);
        let bundle =
            BundleInput { id: "0123456789abcdef", path: "/b/0123456789abcdef", manifest: &manifest, files: &files };
        plan(&bundle, crate::harness_layout::layout("claude").expect("claude"), Scope::Repository, mode)
    }

    #[test]
    fn links_name_the_bundle_folder_and_copies_every_file() {
        let paths =
            ["content/instructions.md", "content/skills/ops/deploy/SKILL.md", "content/skills/ops/deploy/notes/a.md"];
        let linked = plan_of("native-skills", &paths, Mode::Link).expect("plan");
        let summary: Vec<(&str, &Planned)> =
            linked.entries.iter().map(|entry| (entry.path.as_str(), &entry.content)).collect();
        assert_eq!(
            summary,
            [
                (".claude/skills/deploy", &Planned::BundleFolder("content/skills/ops/deploy".to_owned())),
                ("CLAUDE.md", &Planned::Bytes(b"12345".to_vec())),
            ]
        );
        assert_eq!(linked.details.approximate_tokens, 3);
        let copied = plan_of("native-skills", &paths, Mode::Copy).expect("plan");
        let copied: Vec<&str> = copied.entries.iter().map(|entry| entry.path.as_str()).collect();
        assert_eq!(copied, [".claude/skills/deploy/SKILL.md", ".claude/skills/deploy/notes/a.md", "CLAUDE.md"]);
    }

    #[test]
    fn two_sources_with_one_skill_name_and_a_missing_document_are_refused() {
        let paths = ["content/instructions.md", "content/skills/a/deploy/SKILL.md", "content/skills/b/deploy/SKILL.md"];
        let refusal = plan_of("native-skills", &paths, Mode::Link).expect_err("refused");
        assert_eq!(
            refusal,
            Refusal::DuplicateSkill { skill: "deploy".to_owned(), sources: ["a".to_owned(), "b".to_owned()] }
        );
        let refusal = plan_of("compiled", &["content/instructions.md"], Mode::Link).expect_err("refused");
        assert_eq!(refusal, Refusal::MissingDocument("delivery/compiled.md".to_owned()));
    }

    #[test]
    fn a_harness_part_follows_the_instructions_of_its_harness_alone() {
        let mut manifest = manifest("native-skills");
        manifest.harness_instructions.insert("codex".to_owned(), "content/harness/codex/instructions.md".to_owned());
        let mut files = files(&["content/instructions.md"]);
        files.insert("content/harness/codex/instructions.md".to_owned(), b"\n## for Codex\n".to_vec());
        let bundle = BundleInput { id: "0123", path: "/b/0123", manifest: &manifest, files: &files };
        let for_harness = |harness: &str| {
            let layout = crate::harness_layout::layout(harness).expect("layout");
            plan(&bundle, layout, Scope::Repository, Mode::Copy).expect("plan")
        };
        let document = |plan: &Plan| match &plan.entries[0].content {
            Planned::Bytes(bytes) => String::from_utf8(bytes.clone()).expect("utf-8"),
            Planned::BundleFolder(_) => panic!("a folder"),
        };
        let (codex, opencode, claude) = (for_harness("codex"), for_harness("opencode"), for_harness("claude"));
        assert_eq!(document(&codex), "12345\n\n## for Codex\n");
        assert_eq!(document(&opencode), "12345");
        assert_eq!(document(&claude), "12345");
        assert!(merged(vec![claude, codex.clone()], Scope::Repository).expect("merged").is_some());
        let refusal = merged(vec![codex, opencode], Scope::Repository).expect_err("one AGENTS.md");
        assert_eq!(
            refusal,
            Refusal::SharedInstructions {
                path: "AGENTS.md".to_owned(),
                harnesses: ["Codex".to_owned(), "OpenCode".to_owned()]
            }
        );
        files.remove("content/harness/codex/instructions.md");
        let bundle = BundleInput { id: "0123", path: "/b/0123", manifest: &manifest, files: &files };
        let layout = crate::harness_layout::layout("codex").expect("codex");
        assert_eq!(
            plan(&bundle, layout, Scope::Repository, Mode::Copy),
            Err(Refusal::MissingDocument("content/harness/codex/instructions.md".to_owned()))
        );
    }

    #[test]
    fn token_counts_read_as_people_write_them() {
        assert_eq!(approximate(950), "950");
        assert_eq!(approximate(1_249), "1.2k");
        assert_eq!(approximate(34_500), "34k");
    }
}
