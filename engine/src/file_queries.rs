//! The per-file queries: a source file's digest summary, skill document and Agent Skills
//! check. A file the driver summarized brings them (its bytes are not in the database);
//! for any other file they are computed from its bytes and memoized.

use std::sync::Arc;

use crate::db::SourceFile;
use crate::diagnostic::Parsed;
use crate::skill::{SkillDocument, document_of};
use crate::skill_rules::{SkillCheck, check_skill, skill_folder_of};
use crate::summarized::FileSummary;

/// The per-file summary: the firewall between a file's bytes and every catalogue-wide
/// computation (a summarized file brings its own).
pub fn file_summary(db: &dyn salsa::Database, file: SourceFile) -> &FileSummary {
    match file.summary(db) {
        Some(summarized) => &summarized.summary,
        None => summary_of_bytes(db, file),
    }
}

#[salsa::tracked(returns(ref))]
fn summary_of_bytes(db: &dyn salsa::Database, file: SourceFile) -> FileSummary {
    FileSummary::of_bytes(file.bytes(db))
}

/// Parses one `SKILL.md` (or `COMPOSED.md`). Never fails. A summarized file's document
/// was parsed when the driver read it.
pub fn skill_document(db: &dyn salsa::Database, file: SourceFile) -> &Parsed<SkillDocument> {
    match file.summary(db) {
        Some(summarized) if let Some(document) = &summarized.document => document,
        _ => parsed_document(db, file),
    }
}

#[salsa::tracked(returns(ref))]
fn parsed_document(db: &dyn salsa::Database, file: SourceFile) -> Parsed<SkillDocument> {
    document_of(file.bytes(db), &file.display_path(db))
}

/// A summarized file was checked when the driver read it. Shared: a catalogue listing
/// holds the same check, not a copy of it.
pub fn skill_check(db: &dyn salsa::Database, file: SourceFile) -> &Arc<SkillCheck> {
    match file.summary(db) {
        Some(summarized) if let Some(check) = &summarized.check => check,
        _ => checked(db, file),
    }
}

#[salsa::tracked(returns(ref))]
fn checked(db: &dyn salsa::Database, file: SourceFile) -> Arc<SkillCheck> {
    Arc::new(check_skill(file.bytes(db), skill_folder_of(file.relative_path(db))))
}

/// The audit of one source file, memoized: a file the driver summarized was audited as it
/// was read. `entry` files (`SKILL.md`, `COMPOSED.md`) are also checked for their name and
/// what they would have a harness run.
pub fn file_audit(db: &dyn salsa::Database, file: SourceFile) -> &[crate::audit::AuditFinding] {
    match file.summary(db) {
        Some(summarized) => &summarized.audit,
        None => audited(db, file),
    }
}

#[salsa::tracked(returns(ref))]
fn audited(db: &dyn salsa::Database, file: SourceFile) -> Vec<crate::audit::AuditFinding> {
    crate::audit::audit_bytes(file.bytes(db), crate::audit::is_entry(file.relative_path(db)))
}
