//! Convergence, the engine half: what bare `acompose` writes — the roster artifact's
//! files, and, when trusted roots are configured, the repository plan and the bundle
//! index beside the per-role bundles (which come from `compose` and `bundle`). Owns the
//! files' contents and JSON shapes; never writes (the driver's transactions do).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnostic::Parsed;
use crate::person::PersonModel;
use crate::person::validate::person_model;
use crate::snapshot::{self, to_json_bytes};
use crate::trace::{Outcome, ProviderReport, SelectorReport};
use crate::{OutputFile, PersonSource, render};

pub(crate) const PLAN_FORMAT: &str = "acompose.repository-plan.v2";
pub(crate) const INDEX_FORMAT: &str = "acompose.bundle-index.v1";

/// One operating-context repository as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextEntry {
    pub repository: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub available: bool,
}

#[derive(Serialize)]
struct PlanProvider<'a> {
    source: &'a str,
    location: &'a str,
    category: &'a str,
    scope: &'a str,
    cause: &'a str,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    selector: Option<&'a SelectorReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<&'a str>,
}

#[derive(Serialize)]
struct PlanRole<'a> {
    model_tier: &'a str,
    admitted: Vec<PlanProvider<'a>>,
    excluded: Vec<PlanProvider<'a>>,
}

#[derive(Serialize)]
struct Plan<'a> {
    format: &'static str,
    source: &'a str,
    operating_context: &'a [ContextEntry],
    roles: BTreeMap<&'a str, PlanRole<'a>>,
}

/// One role's part of the estate: its tier and the trace's provider reports. Its bundle id
/// is the index's to name: an edit that changes no admission leaves the plan's bytes, and
/// so the file, as they were.
pub struct RolePlan<'a> {
    pub role: &'a str,
    pub model_tier: &'a str,
    pub providers: &'a [ProviderReport],
}

/// `repository-plan.json`: per role, the admitted repositories with scope, reason and
/// selector, and the excluded ones with theirs. Revisions come from `revisions`
/// (repository location → revision).
pub fn repository_plan_json(
    source: &str,
    operating_context: &[ContextEntry],
    roles: &[RolePlan<'_>],
    revisions: &BTreeMap<String, String>,
) -> Vec<u8> {
    let mut plan = Plan { format: PLAN_FORMAT, source, operating_context, roles: BTreeMap::new() };
    for role in roles {
        let mut admitted = Vec::new();
        let mut excluded = Vec::new();
        for provider in role.providers {
            if provider.source == crate::compose::PERSON_SOURCE_ID {
                continue;
            }
            let entry = PlanProvider {
                source: &provider.source,
                location: &provider.location,
                category: &provider.category,
                scope: &provider.scope,
                cause: &provider.cause,
                reason: &provider.reason,
                selector: provider.selector.as_ref(),
                revision: revisions.get(&provider.location).map(String::as_str),
            };
            if provider.outcome == Outcome::Selected { admitted.push(entry) } else { excluded.push(entry) }
        }
        plan.roles.insert(role.role, PlanRole { model_tier: role.model_tier, admitted, excluded });
    }
    to_json_bytes(&plan)
}

/// A digest of everything [`repository_plan_json`] writes, for a caller that keeps the
/// last plan's bytes: an edit that changes no admission gives the same key, and the
/// plan (hundreds of kilobytes of JSON on a large estate) need not be serialized again.
/// Each field goes in with its length, so no two inputs run together; the key may change
/// where the bytes do not (an admitted and an excluded provider swapped), never the
/// other way.
pub fn repository_plan_key(
    source: &str,
    operating_context: &[ContextEntry],
    roles: &[RolePlan<'_>],
    revisions: &BTreeMap<String, String>,
) -> [u8; 32] {
    let mut key = KeyWriter(Vec::new());
    key.text(Some(PLAN_FORMAT));
    key.text(Some(source));
    // Serializing into memory cannot fail.
    key.text(Some(&serde_json::to_string(operating_context).unwrap_or_default()));
    for role in roles {
        key.text(Some(role.role));
        key.text(Some(role.model_tier));
        for provider in role.providers.iter().filter(|provider| provider.source != crate::compose::PERSON_SOURCE_ID) {
            let selector =
                provider.selector.as_ref().map(|selector| serde_json::to_string(selector).unwrap_or_default());
            key.text(Some(if provider.outcome == Outcome::Selected { "admitted" } else { "excluded" }));
            for field in [&provider.source, &provider.location, &provider.category, &provider.scope] {
                key.text(Some(field));
            }
            key.text(Some(&provider.cause));
            key.text(Some(&provider.reason));
            key.text(selector.as_deref());
            key.text(revisions.get(&provider.location).map(String::as_str));
        }
        key.text(None);
    }
    *blake3::hash(&key.0).as_bytes()
}

/// Gathers texts so that no two sequences of them read alike (each with a tag, absent or
/// present, and its length), then hashes them at once: many small updates of a hasher
/// cost more than one pass over the gathered bytes.
struct KeyWriter(Vec<u8>);

impl KeyWriter {
    fn text(&mut self, text: Option<&str>) {
        match text {
            None => self.0.push(0),
            Some(text) => {
                self.0.push(1);
                self.0.extend_from_slice(&(text.len() as u64).to_le_bytes());
                self.0.extend_from_slice(text.as_bytes());
            }
        }
    }
}

#[derive(Serialize)]
struct Index<'a> {
    format: &'static str,
    bundles: BTreeMap<&'a str, &'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    history: BTreeMap<&'a str, &'a [String]>,
}

/// `bundles/index.json`: role → bundle id, and (when any role has one) role → its earlier
/// bundles, newest first (`ROLE@{1}`, `ROLE@{2}`, …).
pub fn index_json(entries: &[(&str, &str)], history: &BTreeMap<String, Vec<String>>) -> Vec<u8> {
    let history =
        history.iter().filter(|(_, ids)| !ids.is_empty()).map(|(role, ids)| (role.as_str(), ids.as_slice())).collect();
    to_json_bytes(&Index { format: INDEX_FORMAT, bundles: entries.iter().copied().collect(), history })
}

/// Reads each role's earlier bundles, newest first, from `index.json` bytes; empty when
/// the index keeps none or is not one. Entries that are not bundle ids are skipped.
pub fn parse_history(bytes: &[u8]) -> BTreeMap<String, Vec<String>> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else { return BTreeMap::new() };
    if value.get("format").and_then(serde_json::Value::as_str) != Some(INDEX_FORMAT) {
        return BTreeMap::new();
    }
    let Some(history) = value.get("history").and_then(serde_json::Value::as_object) else { return BTreeMap::new() };
    let is_id =
        |id: &&str| id.len() == 16 && id.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
    history
        .iter()
        .filter_map(|(role, ids)| {
            let ids: Vec<String> =
                ids.as_array()?.iter().filter_map(serde_json::Value::as_str).filter(is_id).map(str::to_owned).collect();
            Some((role.clone(), ids))
        })
        .collect()
}

/// Each role's earlier bundles after a convergence: the bundle `previous` named for a
/// role whose bundle changed (or that has none now) goes first, then what it kept before;
/// no role keeps its current bundle or one id twice, nor more than `keep`. Only roles of
/// `roles` keep a history.
pub fn next_history(
    previous: &BTreeMap<String, String>,
    previous_history: &BTreeMap<String, Vec<String>>,
    current: &BTreeMap<&str, &str>,
    roles: &[&str],
    keep: usize,
) -> BTreeMap<String, Vec<String>> {
    let mut history = BTreeMap::new();
    for role in roles {
        let now = current.get(role).copied();
        let replaced = previous.get(*role).map(String::as_str).filter(|id| Some(*id) != now);
        let mut ids: Vec<String> = Vec::new();
        for id in replaced.into_iter().chain(previous_history.get(*role).into_iter().flatten().map(String::as_str)) {
            if Some(id) != now && !ids.iter().any(|kept| kept == id) {
                ids.push(id.to_owned());
            }
        }
        ids.truncate(keep);
        if !ids.is_empty() {
            history.insert((*role).to_owned(), ids);
        }
    }
    history
}

/// Reads the role → id map back from `index.json` bytes; `None` when it is not one.
pub fn parse_index(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if value.get("format")?.as_str()? != INDEX_FORMAT {
        return None;
    }
    value.get("bundles")?.as_object()?.iter().map(|(role, id)| Some((role.clone(), id.as_str()?.to_owned()))).collect()
}

/// The roster artifact: `person.json`, `ROSTER.md`, `INVARIANT.md` and the skill tree
/// `.agents/skills/<id>/SKILL.md` for every role skill, role method and personality.
/// Files are sorted by path.
pub fn roster_files(model: &PersonModel) -> Vec<OutputFile> {
    let mut files = vec![
        OutputFile { path: "person.json".to_owned(), bytes: snapshot::person_json(model).into() },
        OutputFile { path: "ROSTER.md".to_owned(), bytes: render::roster_document(model).into_bytes().into() },
        OutputFile { path: "INVARIANT.md".to_owned(), bytes: model.invariant.as_bytes().into() },
    ];
    let skill =
        |id: &str, bytes: &[u8]| OutputFile { path: format!(".agents/skills/{id}/SKILL.md"), bytes: bytes.into() };
    for role in &model.roles {
        files.push(skill(&role.skill.id, &role.skill.bytes));
        for method in &role.methods {
            files.push(skill(&method.id, &method.bytes));
        }
    }
    for personality in &model.personalities {
        files.push(skill(&personality.skill.id, &personality.skill.bytes));
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    files
}

/// The roster artifact of a person source, or its diagnostics when it is invalid.
#[salsa::tracked(returns(ref), no_eq)]
pub fn roster_artifact(db: &dyn salsa::Database, source: PersonSource) -> Parsed<Option<Vec<OutputFile>>> {
    let model = person_model(db, source);
    if model.has_errors() {
        return Parsed::new(None, model.diagnostics.clone());
    }
    Parsed::new(Some(roster_files(&model.value)), model.diagnostics.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_the_replaced_bundle_first_and_is_bounded() {
        let id = |digit: char| digit.to_string().repeat(16);
        let previous = BTreeMap::from([("platform".to_owned(), id('a')), ("builder".to_owned(), id('b'))]);
        let earlier = BTreeMap::from([("platform".to_owned(), vec![id('c'), id('d')])]);
        let (e, b) = (id('e'), id('b'));
        let current = BTreeMap::from([("platform", e.as_str()), ("builder", b.as_str())]);
        let roles = ["platform", "builder", "gone"];
        let history = next_history(&previous, &earlier, &current, &roles, 2);
        assert_eq!(history, BTreeMap::from([("platform".to_owned(), vec![id('a'), id('c')])]));
        // An edit undone: the current bundle leaves the history.
        let current = BTreeMap::from([("platform", previous["platform"].as_str())]);
        let after = next_history(&BTreeMap::from([("platform".to_owned(), e.clone())]), &history, &current, &roles, 3);
        assert_eq!(after["platform"], vec![e.clone(), id('c')]);
        // A role without a bundle now keeps the one it had.
        let failed = next_history(&previous, &earlier, &BTreeMap::new(), &["platform"], 3);
        assert_eq!(failed["platform"], vec![id('a'), id('c'), id('d')]);
        assert!(next_history(&previous, &earlier, &current, &roles, 0).is_empty());
        let bytes = index_json(&[("platform", e.as_str())], &history);
        assert_eq!(parse_history(&bytes), history);
        assert_eq!(parse_index(&bytes), Some(BTreeMap::from([("platform".to_owned(), e)])));
        assert!(!String::from_utf8_lossy(&index_json(&[], &BTreeMap::new())).contains("history"));
    }

    fn report(source: &str, outcome: Outcome) -> ProviderReport {
        ProviderReport {
            source: source.to_owned(),
            category: "ordinary-catalogue".to_owned(),
            scope: "role".to_owned(),
            outcome,
            cause: "assigned".to_owned(),
            reason: "used by the role".to_owned(),
            location: format!("owner/{source}"),
            skills: 3,
            context_bytes: 100,
            approximate_tokens: 25,
            metadata_bytes: 10,
            instruction_bytes: 80,
            resource_bytes: 10,
            binary_bytes: 0,
            selector: None,
        }
    }

    #[test]
    fn the_plan_key_changes_whenever_the_plans_bytes_do_and_not_for_sizes() {
        let context = vec![ContextEntry { repository: "owner/root".to_owned(), revision: None, available: true }];
        let base = vec![report("a", Outcome::Selected), report("c", Outcome::Selected), report("b", Outcome::Excluded)];
        let revisions: BTreeMap<String, String> = [("owner/a".to_owned(), "1".repeat(40))].into();
        let plan = |providers: &[ProviderReport], tier: &str, revisions: &BTreeMap<String, String>| {
            let roles = [RolePlan { role: "platform", model_tier: tier, providers }];
            (
                repository_plan_key("roster:core", &context, &roles, revisions),
                repository_plan_json("roster:core", &context, &roles, revisions),
            )
        };
        let (key, bytes) = plan(&base, "frontier", &revisions);
        // What the plan does not show: sizes and counts.
        let mut resized = base.clone();
        resized[0].context_bytes = 999;
        resized[0].skills = 7;
        assert_eq!(plan(&resized, "frontier", &revisions), (key, bytes.clone()));
        // Everything it shows.
        let mut changed: Vec<Vec<ProviderReport>> = Vec::new();
        for edit in 0..6 {
            let mut providers = base.clone();
            let first = &mut providers[0];
            match edit {
                0 => first.reason.push('!'),
                1 => first.outcome = Outcome::Excluded,
                2 => first.cause = "global".to_owned(),
                3 => first.location = "owner/other".to_owned(),
                4 => {
                    first.selector = Some(SelectorReport {
                        patterns: vec!["x*".to_owned()],
                        admitted: 1,
                        catalogue: 2,
                        overlay_excluded: 0,
                    });
                }
                _ => providers.swap(0, 1),
            }
            changed.push(providers);
        }
        for providers in &changed {
            let (other_key, other_bytes) = plan(providers, "frontier", &revisions);
            assert_ne!(other_bytes, bytes);
            assert_ne!(other_key, key);
        }
        let (tier_key, tier_bytes) = plan(&base, "commodity", &revisions);
        assert!(tier_key != key && tier_bytes != bytes);
        let (revision_key, revision_bytes) = plan(&base, "frontier", &BTreeMap::new());
        assert!(revision_key != key && revision_bytes != bytes);
    }
}
