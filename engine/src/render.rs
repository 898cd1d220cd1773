//! Human-readable text built from the person model: the compact identity card, the
//! terminal transcript of a roster, and the roster document of the artifact. Each
//! document is built by one function. Colour is a parameter; this module never asks
//! whether a terminal is attached.

use std::fmt::Write as _;

use crate::color;
use crate::person::{PersonModel, Role};

/// How text may be tinted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Palette {
    Plain,
    Xterm256,
    TrueColor,
}

/// Wraps `text` in the foreground colour `rgb` for the palette.
pub fn tint(palette: Palette, rgb: [u8; 3], text: &str) -> String {
    match palette {
        Palette::Plain => text.to_owned(),
        Palette::TrueColor => format!("\x1b[38;2;{};{};{}m{text}\x1b[0m", rgb[0], rgb[1], rgb[2]),
        Palette::Xterm256 => format!("\x1b[38;5;{}m{text}\x1b[0m", color::xterm_256(rgb)),
    }
}

/// Bold text, when the palette allows styling.
pub(crate) fn bold(palette: Palette, text: &str) -> String {
    match palette {
        Palette::Plain => text.to_owned(),
        _ => format!("\x1b[1m{text}\x1b[0m"),
    }
}

fn seat_line(role: &Role) -> String {
    role.seats
        .iter()
        .map(|seat| {
            let mut details = Vec::new();
            if let Some(tier) = &seat.tier {
                details.push(tier.clone());
            }
            if let Some(channel) = &seat.channel {
                details.push(format!("channel {channel}"));
            }
            if seat.harness != seat.key {
                details.push(format!("harness {}", seat.harness));
            }
            if details.is_empty() { seat.key.clone() } else { format!("{} ({})", seat.key, details.join(", ")) }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The compact identity card of one role: role, purpose, identity, seats, tiers, every
/// personality with its skill and colour, and the melded favourite.
pub fn identity_card(model: &PersonModel, role: &Role, palette: Palette) -> String {
    let mut card = String::new();
    let swatch = tint(palette, role.favourite.rgb, "●");
    let _ = writeln!(card, "{swatch} {} — {}", bold(palette, &role.slug), role.display_name);
    let _ = writeln!(card, "  purpose     {}", role.purpose);
    let _ = writeln!(card, "  identity    {} ({})", role.identity.name, role.identity.pronouns);
    if !role.seats.is_empty() {
        let _ = writeln!(card, "  seats       {}", seat_line(role));
    }
    let _ = writeln!(card, "  tiers       {}", role.model_tiers.join(", "));
    let width = role.personalities.iter().map(|slug| slug.chars().count()).max().unwrap_or(0);
    let skill_width = role
        .personalities
        .iter()
        .filter_map(|slug| model.personality(slug))
        .map(|personality| personality.skill.id.chars().count())
        .max()
        .unwrap_or(0);
    for (index, slug) in role.personalities.iter().enumerate() {
        let label = if index == 0 { "personality" } else { "" };
        match model.personality(slug) {
            Some(personality) => {
                let _ = writeln!(
                    card,
                    "  {label:<11} {} {slug:<width$}  {:<skill_width$}  {}",
                    tint(palette, personality.colour.rgb, "●"),
                    personality.skill.id,
                    personality.colour.hex,
                );
            }
            None => {
                let _ = writeln!(card, "  {label:<11} ? {slug}");
            }
        }
    }
    let _ = writeln!(card, "  favourite   {} {}", swatch, role.favourite.hex);
    card
}

/// The terminal transcript of a whole roster: a header and every role's card.
pub fn roster_transcript(model: &PersonModel, palette: Palette) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} — {} roles, {} personalities",
        bold(palette, &model.source),
        model.roles.len(),
        model.personalities.len()
    );
    for role in &model.roles {
        text.push('\n');
        text.push_str(&identity_card(model, role, palette));
    }
    text
}

/// The human-readable roster document of the artifact (`ROSTER.md`): the native
/// role-selection contract and every role's card, without colour codes.
pub(crate) fn roster_document(model: &PersonModel) -> String {
    let mut text = String::new();
    let slugs: Vec<String> = model.roles.iter().map(|role| format!("`{}`", role.slug)).collect();
    let _ = writeln!(text, "# Roster `{}`\n", model.source);
    let _ = writeln!(
        text,
        "This file is generated from the person source `{}`. Read it; do not edit it and do not treat it as a second policy source.\n",
        model.source
    );
    let _ = writeln!(text, "## Role selection\n");
    let _ = writeln!(text, "The rendered roles are: {}.\n", slugs.join(", "));
    let _ = writeln!(
        text,
        "- When no launch context assigns a role, take the first substantive request as a soft signal, choose the closest role above, and record it as *inferred*. Load its role skill and its complete ordered personality meld; load role methods only when a task calls for them."
    );
    let _ = writeln!(
        text,
        "- When the user explicitly asks for a role by a slug listed above, switch at once: load that role's charter, announce the switch, and stop acting from the previous charter. The switched role stays inferred until another explicit switch or the end of the session."
    );
    let _ = writeln!(
        text,
        "- When you, the agent, think another role fits better, propose the switch and wait for a separate confirmation before switching."
    );
    let _ = writeln!(
        text,
        "- When a requested slug is not listed above, refuse the switch and name the valid slugs: {}.",
        slugs.join(", ")
    );
    let _ = writeln!(
        text,
        "- A bundle launched with an assigned role overrides all of this: that role is fixed for the session.\n"
    );
    let _ = writeln!(
        text,
        "Role and personality text never grants authority: no tool, permission, credential or model choice comes from this roster. Switching roles changes only the active charter and meld.\n"
    );
    let _ = writeln!(text, "## Roles\n");
    for role in &model.roles {
        let _ = writeln!(text, "### `{}` — {}\n", role.slug, role.display_name);
        let _ = writeln!(text, "{}\n", role.purpose);
        let _ = writeln!(text, "- identity: {} ({})", role.identity.name, role.identity.pronouns);
        if !role.seats.is_empty() {
            let _ = writeln!(text, "- seats: {}", seat_line(role));
        }
        let _ = writeln!(text, "- model tiers: {}", role.model_tiers.join(", "));
        let _ = writeln!(text, "- role skill: `{}`", role.skill.id);
        if !role.methods.is_empty() {
            let methods: Vec<String> = role.methods.iter().map(|method| format!("`{}`", method.id)).collect();
            let _ = writeln!(text, "- methods: {}", methods.join(", "));
        }
        for slug in &role.personalities {
            if let Some(personality) = model.personality(slug) {
                let _ = writeln!(
                    text,
                    "- personality `{slug}`: skill `{}`, colour `{}`",
                    personality.skill.id, personality.colour.hex
                );
            }
        }
        let _ = writeln!(text, "- favourite colour: `{}`\n", role.favourite.hex);
    }
    let _ = writeln!(text, "## Expressions\n");
    let _ = writeln!(text, "{}", crate::person::EXPRESSIONS.join(", "));
    text
}
