//! Estate convergence, the engine half: the repository plan and the bundle index that
//! bare `acompose` writes when trusted roots are configured. Owns their JSON shapes;
//! the per-role bundles themselves come from `compose` and `bundle`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::snapshot::to_json_bytes;
use crate::trace::{Outcome, ProviderReport, SelectorReport};

pub const PLAN_FORMAT: &str = "acompose.repository-plan.v1";
pub const INDEX_FORMAT: &str = "acompose.bundle-index.v1";

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
    bundle: &'a str,
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

/// One role's part of the estate: its bundle id, tier and the trace's provider reports.
pub struct RolePlan<'a> {
    pub role: &'a str,
    pub bundle: &'a str,
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
        plan.roles.insert(role.role, PlanRole { bundle: role.bundle, model_tier: role.model_tier, admitted, excluded });
    }
    to_json_bytes(&plan)
}

#[derive(Serialize)]
struct Index<'a> {
    format: &'static str,
    bundles: BTreeMap<&'a str, &'a str>,
}

/// `bundles/index.json`: role → bundle id.
pub fn index_json(entries: &[(&str, &str)]) -> Vec<u8> {
    to_json_bytes(&Index { format: INDEX_FORMAT, bundles: entries.iter().copied().collect() })
}

/// Reads the role → id map back from `index.json` bytes; `None` when it is not one.
pub fn parse_index(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if value.get("format")?.as_str()? != INDEX_FORMAT {
        return None;
    }
    value.get("bundles")?.as_object()?.iter().map(|(role, id)| Some((role.clone(), id.as_str()?.to_owned()))).collect()
}
