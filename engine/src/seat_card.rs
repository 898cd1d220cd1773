//! The identity card of one seat with an expression: `acompose overlay`, in the Go
//! program's `agent-compose.overlay.v1` document and its one-line (or wrapped) text.
//! Pure: built from the loaded (and overlaid) model.

use serde::Serialize;

use crate::person::{EXPRESSIONS, PersonModel, Seat};

/// The format marker of the JSON document.
pub const FORMAT: &str = "agent-compose.overlay.v1";
const SCHEMA_VERSION: u32 = 1;
/// The narrowest text card.
pub const MIN_WIDTH: usize = 20;

#[derive(Debug, Serialize)]
pub struct SeatCard<'a> {
    pub format: &'static str,
    pub schema_version: u32,
    pub person: &'a str,
    pub role: &'a str,
    pub role_display_name: &'a str,
    pub purpose: &'a str,
    pub seat: SeatEntry<'a>,
    /// `Name [pronouns] (Role display name)`.
    pub annotation: String,
    pub expression: &'a str,
    pub favorite_color: &'a str,
    pub personalities: Vec<CardPersonality<'a>>,
}

#[derive(Debug, Serialize)]
pub struct SeatEntry<'a> {
    pub key: &'a str,
    pub harness: &'a str,
    pub name: &'a str,
    pub pronouns: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<&'a str>,
}

#[derive(Debug, Serialize)]
pub struct CardPersonality<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub motif: &'a str,
    pub geometry: &'a str,
    pub emblem: Trio<'a>,
    pub form: Trio<'a>,
    pub sound_mark: Trio<'a>,
}

/// A personality's three-part primitive, named as `person.json` names its parts.
#[derive(Debug, Serialize)]
pub struct Trio<'a> {
    #[serde(flatten)]
    pub parts: std::collections::BTreeMap<&'static str, &'a str>,
}

/// Why a card cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardError {
    UnknownRole { valid: Vec<String> },
    UnknownSeat { valid: Vec<String> },
    UnknownExpression,
    TooNarrow,
}

fn trio<'a>(names: [&'static str; 3], triple: &'a crate::person::Triple) -> Trio<'a> {
    Trio {
        parts: [
            (names[0], triple.first.as_str()),
            (names[1], triple.second.as_str()),
            (names[2], triple.third.as_str()),
        ]
        .into_iter()
        .collect(),
    }
}

/// The card of `seat` of `role` with `expression` (one of [`EXPRESSIONS`]).
pub fn seat_card<'a>(
    model: &'a PersonModel,
    role: &str,
    seat: &str,
    expression: &'a str,
) -> Result<SeatCard<'a>, CardError> {
    let Some(role) = model.role(role) else {
        return Err(CardError::UnknownRole { valid: model.roles.iter().map(|role| role.slug.clone()).collect() });
    };
    let Some(seat) = role.seats.iter().find(|candidate| candidate.key == seat) else {
        return Err(CardError::UnknownSeat { valid: role.seats.iter().map(|seat| seat.key.clone()).collect() });
    };
    if !EXPRESSIONS.contains(&expression) {
        return Err(CardError::UnknownExpression);
    }
    let personalities = role
        .personalities
        .iter()
        .filter_map(|slug| model.personality(slug))
        .map(|personality| CardPersonality {
            name: &personality.slug,
            color: &personality.colour.hex,
            motif: &personality.motif,
            geometry: &personality.form.second,
            emblem: trio(["name", "emoji", "glyph"], &personality.emblem),
            form: trio(["silhouette", "geometry", "motion"], &personality.form),
            sound_mark: trio(["timbre", "contour", "pulse"], &personality.sound_mark),
        })
        .collect();
    Ok(SeatCard {
        format: FORMAT,
        schema_version: SCHEMA_VERSION,
        person: &model.person,
        role: &role.slug,
        role_display_name: &role.display_name,
        purpose: &role.purpose,
        seat: seat_entry(seat),
        annotation: format!("{} [{}] ({})", seat.name, seat.pronouns, role.display_name),
        expression,
        favorite_color: &role.favourite.hex,
        personalities,
    })
}

fn seat_entry(seat: &Seat) -> SeatEntry<'_> {
    SeatEntry {
        key: &seat.key,
        harness: &seat.harness,
        name: &seat.name,
        pronouns: &seat.pronouns,
        channel: seat.channel.as_deref(),
        tier: seat.tier.as_deref(),
    }
}

/// The card as text: one line when it fits in `width` characters, else four parts each
/// wrapped at word boundaries.
pub fn card_text(card: &SeatCard<'_>, width: usize) -> Result<String, CardError> {
    if width < MIN_WIDTH {
        return Err(CardError::TooNarrow);
    }
    let marks: Vec<&str> = card.personalities.iter().map(|personality| emoji(personality)).collect();
    let names: Vec<&str> = card.personalities.iter().map(|personality| personality.name).collect();
    let seat = format!("{} [{}]", card.seat.name, card.seat.pronouns);
    let role = card.role.replace('-', " ");
    let parts = [
        format!("{}  {seat}", marks.join(" ")),
        format!("{role} / {}", card.expression),
        names.join(" + "),
        card.favorite_color.to_owned(),
    ];
    let line = format!("{}  //  {}  //  {}  //  {}", parts[0], parts[1], parts[2], parts[3]);
    if line.chars().count() <= width {
        return Ok(format!("{line}\n"));
    }
    let mut lines = Vec::new();
    for part in &parts {
        lines.extend(wrap(part, width));
    }
    Ok(format!("{}\n", lines.join("\n")))
}

fn emoji<'a>(personality: &CardPersonality<'a>) -> &'a str {
    personality.emblem.parts.get("emoji").copied().unwrap_or_default()
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(last) if last.chars().count() + 1 + word.chars().count() <= width => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}
