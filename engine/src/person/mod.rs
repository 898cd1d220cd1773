//! The roster model (roles, personalities, seats, identities) and its validation. Owns
//! every rule of SPEC 3.3 and 4; it does not read files (the driver sets them) and does
//! not render anything (that is `snapshot` and `render`).

pub mod declaration;
pub mod package_layout;
pub mod reader;
pub mod validate;

pub use declaration::{CopyContract, CopyRule, Triple};
pub use validate::person_model;

/// The three model tiers, in their canonical order.
pub(crate) const MODEL_TIERS: [&str; 3] = ["frontier", "commodity", "oss"];

/// The fixed renderer expression vocabulary.
pub const EXPRESSIONS: [&str; 9] =
    ["available", "listening", "thinking", "acting", "waiting-for-human", "blocked", "completed", "failed", "offline"];

/// A colour as written (`#rrggbb`) and its OKLab coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Colour {
    pub hex: String,
    pub rgb: [u8; 3],
    pub lab: crate::color::Lab,
}

impl Colour {
    pub(crate) fn from_lab(lab: crate::color::Lab) -> Self {
        let hex = lab.to_hex();
        let rgb = crate::color::parse_hex(&hex).unwrap_or([0, 0, 0]);
        Self { hex, rgb, lab }
    }
}

/// A skill file as loaded: where it came from, its bytes and their digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    pub id: String,
    /// The logical source, `<package label>/<relative path>`.
    pub source: String,
    /// The relative path inside its package.
    pub relative_path: String,
    pub bytes: crate::Bytes,
    /// blake3 of the bytes with CRLF folded, lowercase hex.
    pub digest: String,
    pub description: String,
    /// The body after the frontmatter.
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub pronouns: String,
}

/// Whether identity is declared once for the role or on every seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityForm {
    Role,
    PerSeat,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    pub key: String,
    pub harness: String,
    pub name: String,
    pub pronouns: String,
    pub channel: Option<String>,
    pub tier: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspirationReference {
    pub id: String,
    pub fit: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Role {
    pub slug: String,
    pub display_name: String,
    pub purpose: String,
    /// Supported tiers in canonical order; all three when the role declares none.
    pub model_tiers: Vec<String>,
    pub model_tiers_declared: bool,
    /// The role skill: `roles/<slug>/SKILL.md`, or the legacy inline `briefing`.
    pub skill: SkillFile,
    pub methods: Vec<SkillFile>,
    /// The ordered meld of personality slugs.
    pub personalities: Vec<String>,
    pub favourite: Colour,
    pub identity: Identity,
    pub identity_form: IdentityForm,
    pub seats: Vec<Seat>,
    pub copy_contract: Option<CopyContract>,
    pub inspirations: Vec<InspirationReference>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Personality {
    pub slug: String,
    pub skill: SkillFile,
    pub colour: Colour,
    pub motif: String,
    pub emblem: Triple,
    pub form: Triple,
    pub sound_mark: Triple,
    pub aliases: Vec<String>,
    pub verbs: Vec<String>,
    pub inspirations: Vec<InspirationReference>,
    /// The label of the package that declares it.
    pub package: String,
}

/// The loaded, validated person source.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonModel {
    /// `roster:core` or `person:<name>`.
    pub source: String,
    pub person: String,
    pub core: bool,
    /// Roles in canonical (file) order.
    pub roles: Vec<Role>,
    /// The personality catalogue: the package's own, then each library's, in file order.
    pub personalities: Vec<Personality>,
    pub invariant: String,
    /// The digests of the private overlays applied to this model, in order
    /// (see `overlaid_model` of the overlay module); empty for the package as written.
    pub overlays: Vec<String>,
}

impl PersonModel {
    pub fn role(&self, slug: &str) -> Option<&Role> {
        self.roles.iter().find(|role| role.slug == slug)
    }

    pub fn personality(&self, slug: &str) -> Option<&Personality> {
        self.personalities.iter().find(|personality| personality.slug == slug)
    }

    /// Personalities matching a query by slug, alias, skill or motif (case-insensitive
    /// substring).
    pub fn query_personalities(&self, query: &str) -> Vec<&Personality> {
        let needle = query.to_lowercase();
        self.personalities
            .iter()
            .filter(|personality| {
                personality.slug.contains(&needle)
                    || personality.skill.id.contains(&needle)
                    || personality.motif.to_lowercase().contains(&needle)
                    || personality.aliases.iter().any(|alias| alias.to_lowercase().contains(&needle))
            })
            .collect()
    }
}
