//! Colours in OKLab: the legibility gate, the per-role favourite and distances. Owns the
//! arithmetic only; which colours must pass which rule is decided in `person`.

use palette::convert::FromColorUnclamped;
use palette::{FromColor, Oklab, Srgb};

/// The lightness band every personality colour and every favourite stays inside.
pub(crate) const LIGHTNESS_MIN: f64 = 0.60;
pub(crate) const LIGHTNESS_MAX: f64 = 0.80;
/// The least chroma a personality colour may have.
pub(crate) const CHROMA_MIN: f64 = 0.05;
/// The least OKLab distance between two Core role favourites.
pub(crate) const CORE_DISTANCE_MIN: f64 = 0.08;

/// A colour in OKLab coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lab {
    pub l: f64,
    pub a: f64,
    pub b: f64,
}

impl Lab {
    pub fn chroma(self) -> f64 {
        self.a.hypot(self.b)
    }

    pub fn distance(self, other: Lab) -> f64 {
        ((self.l - other.l).powi(2) + (self.a - other.a).powi(2) + (self.b - other.b).powi(2)).sqrt()
    }

    /// The nearest `#rrggbb` (each channel rounded after clamping).
    pub fn to_hex(self) -> String {
        let srgb: Srgb<f64> = Srgb::from_color_unclamped(Oklab::new(self.l, self.a, self.b));
        let channel = |value: f64| (value.clamp(0.0, 1.0) * 255.0).round() as u8;
        format!("#{:02x}{:02x}{:02x}", channel(srgb.red), channel(srgb.green), channel(srgb.blue))
    }

    fn in_srgb_gamut(self) -> bool {
        let srgb: Srgb<f64> = Srgb::from_color_unclamped(Oklab::new(self.l, self.a, self.b));
        let tolerance = 1e-9;
        [srgb.red, srgb.green, srgb.blue].iter().all(|channel| (-tolerance..=1.0 + tolerance).contains(channel))
    }
}

/// Parses `#rrggbb` (lowercase or uppercase). Anything else is `None`.
pub(crate) fn parse_hex(text: &str) -> Option<[u8; 3]> {
    let digits = text.strip_prefix('#')?;
    if digits.len() != 6 || !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    let channel = |index: usize| u8::from_str_radix(&digits[index..index + 2], 16).ok();
    Some([channel(0)?, channel(2)?, channel(4)?])
}

/// The OKLab coordinates of an sRGB colour.
pub(crate) fn oklab(rgb: [u8; 3]) -> Lab {
    let srgb: Srgb<f64> = Srgb::new(rgb[0], rgb[1], rgb[2]).into_format();
    let lab: Oklab<f64> = Oklab::from_color(srgb);
    Lab { l: lab.l, a: lab.a, b: lab.b }
}

/// Why a colour fails the legibility gate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GateFailure {
    TooDark(f64),
    TooLight(f64),
    TooGray(f64),
}

/// Checks the legibility gate: lightness 0.60–0.80 and chroma at least 0.05.
pub(crate) fn gate(lab: Lab) -> Result<(), GateFailure> {
    if lab.l < LIGHTNESS_MIN {
        return Err(GateFailure::TooDark(lab.l));
    }
    if lab.l > LIGHTNESS_MAX {
        return Err(GateFailure::TooLight(lab.l));
    }
    if lab.chroma() < CHROMA_MIN {
        return Err(GateFailure::TooGray(lab.chroma()));
    }
    Ok(())
}

/// The favourite colour of a meld: the OKLab centroid of its components; when the
/// centroid's chroma is below the smallest component chroma, a/b are scaled up to it;
/// lightness is clamped into the band; chroma is then reduced (hue and lightness kept)
/// until the colour is inside the sRGB gamut. An empty meld has no favourite.
pub fn favourite(components: &[Lab]) -> Option<Lab> {
    if components.is_empty() {
        return None;
    }
    let count = components.len() as f64;
    let mut centroid = Lab {
        l: components.iter().map(|lab| lab.l).sum::<f64>() / count,
        a: components.iter().map(|lab| lab.a).sum::<f64>() / count,
        b: components.iter().map(|lab| lab.b).sum::<f64>() / count,
    };
    let minimum_chroma = components.iter().map(|lab| lab.chroma()).fold(f64::INFINITY, f64::min);
    let chroma = centroid.chroma();
    if chroma < minimum_chroma {
        if chroma > 1e-12 {
            let scale = minimum_chroma / chroma;
            centroid.a *= scale;
            centroid.b *= scale;
        } else {
            // Opposite hues cancel out exactly: keep the first component's hue so the
            // favourite is never gray.
            let first = components[0];
            let first_chroma = first.chroma().max(1e-12);
            centroid.a = first.a / first_chroma * minimum_chroma;
            centroid.b = first.b / first_chroma * minimum_chroma;
        }
    }
    centroid.l = centroid.l.clamp(LIGHTNESS_MIN, LIGHTNESS_MAX);
    if !centroid.in_srgb_gamut() {
        // Bisect the chroma scale between gray (always in gamut at this lightness) and
        // the current colour.
        let (mut inside, mut outside) = (0.0_f64, 1.0_f64);
        for _ in 0..60 {
            let middle = (inside + outside) / 2.0;
            let candidate = Lab { l: centroid.l, a: centroid.a * middle, b: centroid.b * middle };
            if candidate.in_srgb_gamut() {
                inside = middle;
            } else {
                outside = middle;
            }
        }
        centroid.a *= inside;
        centroid.b *= inside;
    }
    Some(centroid)
}

/// Rounds OKLab coordinates for stable output (4 decimals).
pub fn rounded(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

/// The xterm-256 palette index nearest to an sRGB colour (6×6×6 cube and gray ramp).
pub(crate) fn xterm_256(rgb: [u8; 3]) -> u8 {
    let levels = [0u8, 95, 135, 175, 215, 255];
    let nearest_level = |value: u8| {
        levels
            .iter()
            .enumerate()
            .min_by_key(|(_, level)| (i32::from(**level) - i32::from(value)).abs())
            .map_or(0, |(index, _)| index)
    };
    let (red, green, blue) = (nearest_level(rgb[0]), nearest_level(rgb[1]), nearest_level(rgb[2]));
    let cube_index = 16 + 36 * red + 6 * green + blue;
    let cube_colour = [levels[red], levels[green], levels[blue]];
    let average = (u32::from(rgb[0]) + u32::from(rgb[1]) + u32::from(rgb[2])) / 3;
    let gray_step = (average.saturating_sub(8) / 10).min(23);
    let gray_value = (8 + gray_step * 10) as u8;
    let distance = |other: [u8; 3]| -> u32 {
        (0..3).map(|index| (i32::from(rgb[index]) - i32::from(other[index])).pow(2) as u32).sum()
    };
    if distance([gray_value; 3]) < distance(cube_colour) { (232 + gray_step) as u8 } else { cube_index as u8 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_colour_matches_reference_coordinates() {
        let lab = oklab([0x8f, 0x8c, 0x47]);
        assert!((lab.l - 0.6273).abs() < 1e-3, "{lab:?}");
        assert!((lab.chroma() - 0.0913).abs() < 1e-3, "{lab:?}");
    }

    #[test]
    fn gate_rejects_dark_light_and_gray() {
        assert!(matches!(gate(oklab([0x20, 0x20, 0x60])), Err(GateFailure::TooDark(_))));
        assert!(matches!(gate(oklab([0xf0, 0xf0, 0xff])), Err(GateFailure::TooLight(_))));
        assert!(matches!(gate(oklab([0xa0, 0xa0, 0xa0])), Err(GateFailure::TooGray(_))));
        assert!(gate(oklab([0x8f, 0x8c, 0x47])).is_ok());
    }

    #[test]
    fn favourite_of_opposite_hues_is_not_gray() {
        let red = oklab([0xd0, 0x70, 0x80]);
        let teal = oklab([0x50, 0xb0, 0xa0]);
        let favourite = favourite(&[red, teal]).expect("non-empty meld");
        assert!(favourite.chroma() >= red.chroma().min(teal.chroma()) - 1e-6 || favourite.in_srgb_gamut());
        assert!(favourite.chroma() > 0.03, "{favourite:?}");
        assert!((LIGHTNESS_MIN..=LIGHTNESS_MAX).contains(&favourite.l));
    }

    #[test]
    fn parses_only_six_digit_hex() {
        assert_eq!(parse_hex("#8F8c47"), Some([0x8f, 0x8c, 0x47]));
        assert_eq!(parse_hex("8f8c47"), None);
        assert_eq!(parse_hex("#8f8c4"), None);
        assert_eq!(parse_hex("#8f8c4g"), None);
    }
}
