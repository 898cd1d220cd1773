//! `person.json`: the versioned export of the loaded person model. Owns the JSON shape
//! (its own `Serialize` structs, fixed key order, sorted maps); it never decides
//! validity, which is `person`'s job.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::person::{EXPRESSIONS, PersonModel, Role};

pub const FORMAT: &str = "agent-compose.person-snapshot.v3";
pub(crate) const SCHEMA_VERSION: u32 = 3;

#[derive(Serialize)]
struct Snapshot<'a> {
    format: &'static str,
    schema_version: u32,
    source: &'a str,
    person: &'a str,
    role_order: Vec<&'a str>,
    roles: BTreeMap<&'a str, RoleEntry<'a>>,
    personalities: BTreeMap<&'a str, PersonalityEntry<'a>>,
    expressions: [&'static str; 9],
    /// The private overlays applied, by digest, in order (never a path or their text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    overlays: Vec<OverlayEntry<'a>>,
}

#[derive(Serialize)]
struct OverlayEntry<'a> {
    digest: &'a str,
}

#[derive(Serialize)]
struct RoleEntry<'a> {
    display_name: &'a str,
    purpose: &'a str,
    skill: &'a str,
    skill_source: String,
    skill_digest: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    methods: Vec<&'a str>,
    briefing: &'a str,
    personalities: &'a [String],
    favorite_color: &'a str,
    identity: IdentityEntry<'a>,
    seats: Vec<SeatEntry<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    supported_model_tiers: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    copy_contract: Option<CopyContractEntry<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    inspirations: Vec<InspirationEntry<'a>>,
}

#[derive(Serialize)]
struct IdentityEntry<'a> {
    name: &'a str,
    pronouns: &'a str,
}

#[derive(Serialize)]
struct SeatEntry<'a> {
    key: &'a str,
    harness: &'a str,
    name: &'a str,
    pronouns: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    channel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<&'a str>,
}

#[derive(Serialize)]
struct CopyContractEntry<'a> {
    scope: &'a str,
    rules: Vec<CopyRuleEntry<'a>>,
}

#[derive(Serialize)]
struct CopyRuleEntry<'a> {
    forbid: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefer: Option<&'a str>,
}

#[derive(Serialize)]
struct InspirationEntry<'a> {
    id: &'a str,
    fit: &'a str,
}

#[derive(Serialize)]
struct PersonalityEntry<'a> {
    skill: &'a str,
    color: &'a str,
    motif: &'a str,
    emblem: EmblemEntry<'a>,
    form: FormEntry<'a>,
    sound_mark: SoundMarkEntry<'a>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    aliases: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    verbs: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    inspirations: Vec<InspirationEntry<'a>>,
}

#[derive(Serialize)]
struct EmblemEntry<'a> {
    name: &'a str,
    emoji: &'a str,
    glyph: &'a str,
}

#[derive(Serialize)]
struct FormEntry<'a> {
    silhouette: &'a str,
    geometry: &'a str,
    motion: &'a str,
}

#[derive(Serialize)]
struct SoundMarkEntry<'a> {
    timbre: &'a str,
    contour: &'a str,
    pulse: &'a str,
}

/// The logical source of a file: `<source id>/<relative path>`; never a disk path.
pub(crate) fn logical_source(source: &str, relative_path: &str) -> String {
    format!("{source}/{relative_path}")
}

fn role_entry<'a>(model: &'a PersonModel, role: &'a Role) -> RoleEntry<'a> {
    let briefing_source = if role.skill.relative_path.ends_with(".kdl") {
        format!("{}#briefing", role.skill.relative_path)
    } else {
        role.skill.relative_path.clone()
    };
    RoleEntry {
        display_name: &role.display_name,
        purpose: &role.purpose,
        skill: &role.skill.id,
        skill_source: logical_source(&model.source, &briefing_source),
        skill_digest: format!("blake3:{}", role.skill.digest),
        methods: role.methods.iter().map(|method| method.id.as_str()).collect(),
        briefing: role.skill.body.trim(),
        personalities: &role.personalities,
        favorite_color: &role.favourite.hex,
        identity: IdentityEntry { name: &role.identity.name, pronouns: &role.identity.pronouns },
        seats: role
            .seats
            .iter()
            .map(|seat| SeatEntry {
                key: &seat.key,
                harness: &seat.harness,
                name: &seat.name,
                pronouns: &seat.pronouns,
                channel: seat.channel.as_deref(),
                tier: seat.tier.as_deref(),
            })
            .collect(),
        supported_model_tiers: role.model_tiers_declared.then_some(role.model_tiers.as_slice()),
        copy_contract: role.copy_contract.as_ref().map(|contract| CopyContractEntry {
            scope: &contract.scope,
            rules: contract
                .rules
                .iter()
                .map(|rule| CopyRuleEntry { forbid: &rule.forbid, prefer: rule.prefer.as_deref() })
                .collect(),
        }),
        inspirations: role
            .inspirations
            .iter()
            .map(|inspiration| InspirationEntry { id: &inspiration.id, fit: &inspiration.fit })
            .collect(),
    }
}

/// Renders `person.json`: 2-space indentation, a trailing newline, keys in the order of
/// the structs above, roles and personalities sorted by slug.
pub fn person_json(model: &PersonModel) -> Vec<u8> {
    let snapshot = Snapshot {
        format: FORMAT,
        schema_version: SCHEMA_VERSION,
        source: &model.source,
        person: &model.person,
        role_order: model.roles.iter().map(|role| role.slug.as_str()).collect(),
        roles: model.roles.iter().map(|role| (role.slug.as_str(), role_entry(model, role))).collect(),
        personalities: model
            .personalities
            .iter()
            .map(|personality| {
                (
                    personality.slug.as_str(),
                    PersonalityEntry {
                        skill: &personality.skill.id,
                        color: &personality.colour.hex,
                        motif: &personality.motif,
                        emblem: EmblemEntry {
                            name: &personality.emblem.first,
                            emoji: &personality.emblem.second,
                            glyph: &personality.emblem.third,
                        },
                        form: FormEntry {
                            silhouette: &personality.form.first,
                            geometry: &personality.form.second,
                            motion: &personality.form.third,
                        },
                        sound_mark: SoundMarkEntry {
                            timbre: &personality.sound_mark.first,
                            contour: &personality.sound_mark.second,
                            pulse: &personality.sound_mark.third,
                        },
                        aliases: &personality.aliases,
                        verbs: &personality.verbs,
                        inspirations: personality
                            .inspirations
                            .iter()
                            .map(|inspiration| InspirationEntry { id: &inspiration.id, fit: &inspiration.fit })
                            .collect(),
                    },
                )
            })
            .collect(),
        expressions: EXPRESSIONS,
        overlays: model.overlays.iter().map(|digest| OverlayEntry { digest }).collect(),
    };
    to_json_bytes(&snapshot)
}

/// Pretty JSON with 2-space indentation and a trailing newline.
pub fn to_json_bytes(value: &impl Serialize) -> Vec<u8> {
    // Serializing these plain structs into memory cannot fail: every key is a string and
    // no value is a float NaN.
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
