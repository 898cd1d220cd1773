//! What the private overlays do to one resolution: their `overlay:<file>` decisions, the
//! seats they rename, the providers they exclude or admit, the catalogue skills they keep
//! out and the instructions they add. Reads each overlay only through its share for the
//! role (`crate::overlay::role_overlay`).

use crate::db::SourceFile;
use crate::overlay::{Effect, OverlayEntry, RoleOverlay, overlay_problems, role_overlay};
use crate::person::PersonModel;
use crate::selector::Matcher;
use crate::trace::Outcome;

use super::{Admission, Candidate, ManifestSource, Resolver, SkillListing};

/// One overlay's share for the role, and its file (selector spans point into it).
#[derive(Debug, Clone)]
pub(super) struct AppliedOverlay {
    pub(super) share: RoleOverlay,
    pub(super) file: SourceFile,
}

/// An instruction an overlay adds to the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayInstruction {
    /// The overlay's file name.
    pub overlay: String,
    pub id: String,
    /// The harnesses it is for, in the layout table's order; every harness when empty.
    pub harnesses: Vec<String>,
    pub text: String,
}

impl AppliedOverlay {
    fn effects(&self) -> impl Iterator<Item = (&OverlayEntry, &Effect)> {
        self.share.entries.iter().map(|entry| (entry, &entry.effect))
    }
}

impl Resolver<'_> {
    /// Reads every overlay's share for the role, records one `overlay:<file>` decision for
    /// each that concerns it, and keeps the shares for the steps after.
    pub(super) fn read_overlays(&mut self) -> Vec<AppliedOverlay> {
        let db = self.db;
        let mut applied = Vec::new();
        for file in self.composition.overlays(db) {
            let share = role_overlay(db, *file, self.slug.clone());
            self.diagnostics.extend(share.diagnostics.iter().cloned());
            self.diagnostics.extend(overlay_problems(db, *file, self.composition.person(db)).iter().cloned());
            if share.value.entries.is_empty() {
                continue;
            }
            let share = share.value.clone();
            let did: Vec<String> = share.entries.iter().map(|entry| entry.effect.describe()).collect();
            let subject = share.subject();
            self.decide(
                subject.clone(),
                "overlay",
                &subject,
                Outcome::Delivered,
                "overlay-applied",
                format!("for role `{}`: {}", self.slug, did.join("; ")),
                Vec::new(),
            );
            applied.push(AppliedOverlay { share, file: *file });
        }
        applied
    }

    /// The model with the overlays' seat names applied to the assigned role (later
    /// overlays win), each rename recorded under the seat's role.
    pub(super) fn rename_seats(&mut self, model: &PersonModel, overlays: &[AppliedOverlay]) -> PersonModel {
        let mut model = model.clone();
        for overlay in overlays {
            for (_, effect) in overlay.effects() {
                let Effect::Seat { role, seat, name, pronouns } = effect else { continue };
                let Some(target) = model.roles.iter_mut().find(|candidate| &candidate.slug == role) else { continue };
                let Some(target) = target.seats.iter_mut().find(|candidate| &candidate.key == seat) else { continue };
                target.name = name.clone();
                target.pronouns = pronouns.clone();
                let subject = overlay.share.subject();
                self.decide(
                    format!("role:{role}"),
                    "seat",
                    &subject,
                    Outcome::Delivered,
                    "overlay-seat",
                    format!("{} names the seat `{seat}` {name} ({pronouns})", overlay.share.at()),
                    Vec::new(),
                );
            }
        }
        model
    }

    /// Applies the overlays' `exclude repository` and `admit` entries to the candidates.
    pub(super) fn overlay_admissions(&mut self, candidates: &mut [Candidate], overlays: &[AppliedOverlay]) {
        for overlay in overlays {
            for (entry, effect) in overlay.effects() {
                match effect {
                    Effect::ExcludeRepository { repository, .. } => {
                        let at = overlay.share.at();
                        let found = candidates.iter_mut().find(|candidate| &candidate.id == repository);
                        match found {
                            Some(candidate) => {
                                candidate.admission = Admission::Excluded {
                                    cause: "overlay-excluded",
                                    reason: format!("excluded for role `{}` by {at}", self.slug),
                                    skills: SkillListing::Listed,
                                };
                            }
                            None => self.overlay_names_nothing(overlay, entry, repository),
                        }
                    }
                    Effect::Admit { repository, skills, .. } => {
                        self.admit(candidates, overlay, entry, repository, skills);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Admits a repository a trusted root declares for the role, whole or by a slice.
    fn admit(
        &mut self,
        candidates: &mut [Candidate],
        overlay: &AppliedOverlay,
        entry: &OverlayEntry,
        repository: &str,
        skills: &[crate::selector::Pattern],
    ) {
        let at = overlay.share.at();
        let slug = self.slug.clone();
        let Some(candidate) =
            candidates.iter_mut().find(|candidate| candidate.id == repository && !candidate.is_request_source)
        else {
            self.overlay_names_nothing(overlay, entry, repository);
            return;
        };
        candidate.scope = format!("role:{slug}");
        candidate.admission = if skills.is_empty() {
            Admission::Whole { cause: "overlay-admitted", reason: format!("admitted whole for role `{slug}` by {at}") }
        } else {
            candidate.selectors = skills.to_vec();
            Admission::Selector {
                patterns: skills.to_vec(),
                roles_file: overlay.file,
                reason: format!("admitted for role `{slug}` by {at}, bounded by its `skill` selectors"),
            }
        };
    }

    /// An overlay entry that names no provider of this composition is an error: it would
    /// silently do nothing.
    fn overlay_names_nothing(&mut self, overlay: &AppliedOverlay, entry: &OverlayEntry, repository: &str) {
        // A trusted root that could not be read reports its own error; what the overlay
        // names may well be declared there (root cause first).
        if self.incomplete_roots {
            return;
        }
        let path = overlay.file.display_path(self.db);
        self.diagnostics.push(
            crate::Diagnostic::error(
                "overlay-unknown-repository",
                format!(
                    "line {}: `{}` is no repository a trusted root declares for role `{}`",
                    entry.line,
                    crate::diagnostic::sanitize(repository),
                    self.slug
                ),
            )
            .in_file(path)
            .hint("name a repository by its id in a trusted root's roles.kdl, or a source of the request"),
        );
    }

    /// The overlay entry that keeps a catalogue skill out of the role, as a reason.
    pub(super) fn overlay_exclusion(&self, name: &str) -> Option<String> {
        self.overlays.iter().find_map(|overlay| {
            overlay.effects().find_map(|(_, effect)| match effect {
                Effect::ExcludeSkill { pattern, .. }
                    if !Matcher::new(std::slice::from_ref(pattern)).matches(name).is_empty() =>
                {
                    Some(format!("excluded for role `{}` by {} (`{}`)", self.slug, overlay.share.at(), pattern.text))
                }
                _ => None,
            })
        })
    }

    /// The instructions the overlays add, each recorded; one scoped to repositories is
    /// delivered only when one of them is among the selected providers.
    pub(super) fn overlay_instructions(
        &mut self,
        overlays: &[AppliedOverlay],
        sources: &[ManifestSource],
    ) -> Vec<OverlayInstruction> {
        let mut delivered = Vec::new();
        for overlay in overlays {
            for (entry, effect) in overlay.effects() {
                let Effect::Instruction { id, repositories, harnesses, text, .. } = effect else { continue };
                let in_scope = repositories.is_empty()
                    || repositories
                        .iter()
                        .any(|wanted| sources.iter().any(|source| &source.id == wanted || &source.location == wanted));
                let subject = overlay.share.subject();
                let at = overlay.share.at();
                if in_scope && delivered.iter().any(|earlier: &OverlayInstruction| &earlier.id == id) {
                    self.diagnostics.push(
                        crate::Diagnostic::error(
                            "overlay-duplicate-instruction",
                            format!("line {}: instruction `{id}` is added twice for role `{}`", entry.line, self.slug),
                        )
                        .in_file(overlay.file.display_path(self.db))
                        .hint("give each overlay instruction its own id"),
                    );
                } else if in_scope {
                    let mut reason = format!("added for role `{}` by {at}", self.slug);
                    if !harnesses.is_empty() {
                        reason.push_str(&format!(", for {} only", crate::overlay::harness_list(harnesses)));
                    }
                    self.decide(
                        format!("instruction:{id}"),
                        "instruction",
                        &subject,
                        Outcome::Delivered,
                        "overlay-instruction",
                        reason,
                        Vec::new(),
                    );
                    delivered.push(OverlayInstruction {
                        overlay: overlay.share.name.clone(),
                        id: id.clone(),
                        harnesses: harnesses.clone(),
                        text: text.clone(),
                    });
                } else {
                    self.decide(
                        format!("instruction:{id}"),
                        "instruction",
                        &subject,
                        Outcome::Excluded,
                        "overlay-out-of-scope",
                        format!("{at} scopes it to repositories the role does not admit"),
                        Vec::new(),
                    );
                }
            }
        }
        delivered
    }
}
