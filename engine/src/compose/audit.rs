//! The content audit's part of a resolution (`crate::audit`): each delivered text's
//! findings reported under the composition's `audit_policy`. A refused catalogue skill
//! or instruction is kept out with an `audit-refused` decision (a third party's text: the
//! rest of the role still composes); a refused text of the user's own (the person
//! package's skills, a private overlay, the MCP inventory) is an error, and the
//! composition yields no bundle.

use crate::audit::{self, AuditAction, AuditFinding, AuditKind, AuditPolicy};
use crate::catalogue::CatalogueSkill;
use crate::db::SourceFile;
use crate::file_queries::file_audit;
use crate::person::SkillFile;
use crate::trace::FindingRecord;

use super::Resolver;

/// The decision's cause for a text the audit refused.
pub(super) const REFUSED: &str = "audit-refused";

/// What the audit says of one delivered text or skill.
pub(super) struct Audited {
    /// The findings as the trace keeps them.
    pub(super) records: Vec<FindingRecord>,
    /// Why the policy refuses it, when it does.
    pub(super) refusal: Option<String>,
}

/// Why the policy refuses the findings, naming the first refused one and its file.
fn refusal_reason(findings: &[(String, AuditFinding)], policy: &AuditPolicy) -> Option<String> {
    let mut refused = findings.iter().filter(|(_, finding)| policy.action(finding.kind) == AuditAction::Refuse);
    let (file, first) = refused.next()?;
    let more = refused.count();
    let mut reason = format!("refused by the content audit: {} in `{file}` at {}", first.what(), first.place());
    if more > 0 {
        reason.push_str(&format!(", and {more} more finding{}", if more == 1 { "" } else { "s" }));
    }
    Some(reason)
}

impl Resolver<'_> {
    fn audit_policy(&self) -> AuditPolicy {
        self.composition.audit_policy(self.db)
    }

    /// Audits every file of a catalogue skill; a refusal keeps the skill out.
    pub(super) fn audit_skill(&mut self, skill: &CatalogueSkill) -> Audited {
        let policy = self.audit_policy();
        let findings: Vec<(String, AuditFinding)> = skill
            .members
            .iter()
            .flat_map(|member| {
                let file = member.file.display_path(self.db);
                file_audit(self.db, member.file).iter().map(move |finding| (file.clone(), *finding))
            })
            .collect();
        self.report_findings(&findings, &policy, "the skill is not delivered", false);
        Audited { records: audit::records(&findings, &policy), refusal: refusal_reason(&findings, &policy) }
    }

    /// Audits an instruction file a provider declares; a refusal keeps it out.
    pub(super) fn audit_instruction(&mut self, file: SourceFile) -> Audited {
        let policy = self.audit_policy();
        let display = file.display_path(self.db);
        let findings: Vec<(String, AuditFinding)> =
            file_audit(self.db, file).iter().map(|finding| (display.clone(), *finding)).collect();
        self.report_findings(&findings, &policy, "the instruction is not delivered", false);
        Audited { records: audit::records(&findings, &policy), refusal: refusal_reason(&findings, &policy) }
    }

    /// Audits a skill of the person package: a refusal is an error.
    pub(super) fn audit_person_skill(&mut self, skill: &SkillFile) -> Vec<FindingRecord> {
        let policy = self.audit_policy();
        let findings: Vec<(String, AuditFinding)> =
            audit::audit_bytes(&skill.bytes, true).into_iter().map(|finding| (skill.source.clone(), finding)).collect();
        self.report_findings(&findings, &policy, "the role cannot be composed until it is fixed", true);
        audit::records(&findings, &policy)
    }

    /// Audits a text file of the user's own that a composition delivers from (a private
    /// overlay, the MCP inventory): a refusal is an error. `kinds` limits what is looked
    /// for (the inventory refuses secrets itself, before it is parsed).
    pub(super) fn audit_own_file(&mut self, file: SourceFile, kinds: &[AuditKind]) {
        let policy = self.audit_policy();
        let display = file.display_path(self.db);
        let findings: Vec<(String, AuditFinding)> = file_audit(self.db, file)
            .iter()
            .filter(|finding| kinds.contains(&finding.kind))
            .map(|finding| (display.clone(), *finding))
            .collect();
        self.report_findings(&findings, &policy, "the role cannot be composed until it is fixed", true);
    }

    /// One diagnostic per finding: a warning, or for a refusal an error when `own`.
    fn report_findings(
        &mut self,
        findings: &[(String, AuditFinding)],
        policy: &AuditPolicy,
        consequence: &str,
        own: bool,
    ) {
        for (file, finding) in findings {
            let action = policy.action(finding.kind);
            let diagnostic = match action {
                AuditAction::Refuse if own => audit::refusal(finding, file, consequence),
                _ => audit::diagnostic(finding, file, action, consequence),
            };
            self.diagnostics.push(diagnostic);
        }
    }
}
