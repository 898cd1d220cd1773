//! What the engine keeps of one file instead of its bytes: its digest summary and, for a
//! catalogue's skill file the driver summarized as it read it, its parsed document and
//! Agent Skills check. Pure: computed from bytes by whoever holds them.

use crate::diagnostic::Parsed;
use crate::skill::hash_folded;
use crate::skill_rules::SkillCheck;

/// What the digest of one file is: its CRLF-folded length and blake3.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileSummary {
    pub raw_length: u64,
    pub folded_length: u64,
    pub digest: [u8; 32],
    /// Holds a NUL byte or is not UTF-8: counted in bytes, never as tokens.
    pub binary: bool,
}

impl FileSummary {
    /// The summary of bytes held in memory (person package skills).
    pub(crate) fn of_bytes(bytes: &[u8]) -> FileSummary {
        Self::of_bytes_hashed(bytes, None)
    }

    /// [`FileSummary::of_bytes`] given the blake3 of the raw bytes when it is known: a file
    /// without a CRLF folds to itself, so its folded digest is that one.
    pub(crate) fn of_bytes_hashed(bytes: &[u8], raw_digest: Option<[u8; 32]>) -> FileSummary {
        let crlf = crate::skill::crlf_positions(bytes).count() as u64;
        let digest = match raw_digest {
            Some(digest) if crlf == 0 => digest,
            _ => {
                let mut hasher = blake3::Hasher::new();
                hash_folded(&mut hasher, bytes);
                *hasher.finalize().as_bytes()
            }
        };
        FileSummary {
            raw_length: bytes.len() as u64,
            folded_length: bytes.len() as u64 - crlf,
            digest,
            binary: is_binary(bytes),
        }
    }
}

/// Whether bytes are binary as far as a context window is concerned.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// What the engine keeps of a catalogue's skill file the driver summarized as it read
/// it: everything catalogue reading and bundle building need, so its bytes need not stay
/// in memory. The driver reads the file again from `location` when it writes a bundle
/// that holds it; `location` never enters an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarized {
    pub location: std::path::PathBuf,
    /// blake3 of the raw bytes (the manifest's digest of the file).
    pub raw_digest: [u8; 32],
    pub summary: FileSummary,
    /// For a `SKILL.md` or `COMPOSED.md`: its parsed document.
    pub document: Option<Parsed<crate::skill::SkillDocument>>,
    /// For a `SKILL.md`: its Agent Skills check, shared with the catalogue listing that
    /// lists its skill.
    pub check: Option<std::sync::Arc<SkillCheck>>,
    /// The content audit's findings (`crate::audit`); empty for a clean or binary file.
    pub audit: Vec<crate::audit::AuditFinding>,
}

impl Summarized {
    /// Summarizes a file read at `location`: `display_path` labels its diagnostics as
    /// [`SourceFile::display_path`] would, `relative` is its path in its catalogue.
    pub fn of(location: std::path::PathBuf, display_path: &str, relative: &str, bytes: &[u8]) -> Summarized {
        let name = relative.rsplit('/').next().unwrap_or_default();
        let entry = name == "SKILL.md" || name == "COMPOSED.md";
        let raw_digest = *blake3::hash(bytes).as_bytes();
        Summarized {
            location,
            raw_digest,
            summary: FileSummary::of_bytes_hashed(bytes, Some(raw_digest)),
            document: entry.then(|| crate::skill::document_of(bytes, display_path)),
            check: (name == "SKILL.md")
                .then(|| crate::skill_rules::check_skill(bytes, crate::skill_rules::skill_folder_of(relative)))
                .map(std::sync::Arc::new),
            audit: crate::audit::audit_bytes(bytes, entry),
        }
    }

    /// Whether a catalogue file is summarized when the driver reads it: every file inside
    /// a skill folder (`.agents/skills/<name>/…`, `.agents/composed/<name>/…`).
    pub fn applies_to(relative: &str) -> bool {
        let mut parts = relative.split('/');
        matches!(
            (parts.next(), parts.next(), parts.next(), parts.next()),
            (Some(".agents"), Some("skills" | "composed"), Some(_), Some(_))
        )
    }
}
