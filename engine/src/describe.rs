//! `describe`, `--why` and `diff`: provenance read back from `manifest.json` and
//! `trace.json` only. Owns the reports' text and JSON shapes; never reads sources, so a
//! bundle explains itself on any machine.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::bundle::Manifest;
use crate::render::{Palette, bold, tint};
use crate::trace::{Decision, Outcome, ProviderReport, Trace};

pub(crate) const DESCRIBE_FORMAT: &str = "acompose.describe.v1";
pub(crate) const WHY_FORMAT: &str = "acompose.why.v1";
pub(crate) const DIFF_FORMAT: &str = "acompose.diff.v1";

/// The symbol of an outcome: ✓ selected, ✗ excluded, ~ shadowed, → delivered.
pub(crate) fn symbol(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Selected => "✓",
        Outcome::Excluded => "✗",
        Outcome::Shadowed => "~",
        Outcome::Delivered => "→",
    }
}

fn outcome_colour(outcome: Outcome) -> [u8; 3] {
    match outcome {
        Outcome::Selected => [0x4c, 0xb0, 0x5a],
        Outcome::Excluded => [0xd0, 0x5a, 0x5a],
        Outcome::Shadowed => [0xc8, 0xa0, 0x3c],
        Outcome::Delivered => [0x5a, 0x9c, 0xd8],
    }
}

fn marked(palette: Palette, outcome: Outcome) -> String {
    tint(palette, outcome_colour(outcome), symbol(outcome))
}

/// How a provider category reads in reports.
pub(crate) fn category_label(category: &str) -> &str {
    match category {
        "person-package" => "person package",
        "ordinary-catalogue" => "ordinary catalogue",
        "skill-provider" => "skill-provider repository",
        other => other,
    }
}

/// The rule behind a cause, in one sentence.
pub fn rule(cause: &str) -> &'static str {
    match cause {
        "role-assigned" => "the request assigns one role; it is authoritative and fixed for the session",
        "role-inactive" => "skills, personalities and methods of inactive roles never enter a bundle",
        "role-method" => "the assigned role's methods travel with it and load when a task calls for them",
        "meld-member" => "the assigned role's ordered personality meld is delivered whole",
        "personality-inactive" => "only personalities in the assigned role's meld enter a bundle",
        "person-package" => "the selected person package precedes every other provider",
        "operating-context" => {
            "a source the request names is explicit operating context: its whole catalogue is admitted"
        }
        "global" => "a repository declared `global` in a trusted root serves every role",
        "direct" => "a repository the role uses without `skill` selectors contributes its whole catalogue",
        "selector-admitted" => "a skill-provider repository contributes exactly the skills its `skill` selectors match",
        "selector-excluded" => {
            "a bounded provider contributes only what its selectors match; other skills are excluded"
        }
        "role-excluded" => "a provider or composed skill admitted for another role contributes nothing to this role",
        "composed-selector" => "composed skills enter only through a `composed-skill` selector of the assigned role",
        "overlap" => "composed-skill selectors of one role form a union: a skill two selectors match is selected once",
        "identical-copy" => "a later byte-identical copy of a skill is shadowed by the first provider's copy",
        "optional-missing" => "an optional source that is unavailable is excluded with a warning",
        "duplicate-path" => "providers with the same folder collapse; the first in precedence order wins",
        "not-admitted" => "a repository no role uses and that is not global is not admitted",
        "declared-instruction" => "instructions a declaration lists are delivered with the bundle",
        "not-a-skill" => "a folder under `.agents/skills/` without `SKILL.md` holds resources, not a skill",
        "projected-entry" => {
            "a link a projection into the repository owns delivers a role's skill there; it is not the catalogue's"
        }
        "invalid-skill" => "with skill policy `skip`, a skill that breaks an Agent Skills rule is left out",
        "mcp-tagged" => "an MCP server of the home's inventory reaches the roles its `roles` tag names",
        "mcp-selected" => "an MCP server a trusted root's `mcp-server` names for the role reaches it",
        "mcp-not-for-role" => "an MCP server reaches only the roles tagged or named for it (fail-closed)",
        "overlay-applied" => {
            "a private overlay adds instructions, narrows or widens selection, or names a seat; it redefines nothing"
        }
        "overlay-seat" => {
            "a private overlay may give a seat another name and pronouns, and change nothing else about it"
        }
        "overlay-excluded" => "a private overlay's `exclude` keeps a provider or skill out of the role",
        "overlay-admitted" => "a private overlay's `admit` gives the role a repository a trusted root declares",
        "overlay-instruction" => "a private overlay's instruction is delivered with the bundles of the roles it names",
        "overlay-out-of-scope" => {
            "an overlay instruction scoped to repositories is delivered only where one of them is admitted"
        }
        _ => "see the reason",
    }
}

/// Provider rows of the context budget and their total.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetRow {
    pub source: String,
    pub outcome: Outcome,
    pub skills: usize,
    pub context_bytes: u64,
    pub approximate_tokens: u64,
    pub metadata_bytes: u64,
    pub instruction_bytes: u64,
    pub resource_bytes: u64,
    pub binary_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Budget {
    pub providers: Vec<BudgetRow>,
    pub total_skills: usize,
    pub total_bytes: u64,
    pub total_tokens: u64,
    pub total_metadata_bytes: u64,
    pub total_instruction_bytes: u64,
    pub total_resource_bytes: u64,
    pub total_binary_bytes: u64,
    /// Target harnesses whose skill listing the bundle's metadata overflows.
    pub listing_warnings: Vec<ListingWarning>,
}

/// A harness's budget for the skill listing it puts in context before truncating.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListingBudget {
    pub harness: &'static str,
    pub characters: u64,
    pub basis: &'static str,
}

/// The listing budgets of target harnesses. Codex documents about 2 % of the context
/// window, or 8,000 characters when the window is unknown; a bundle does not know the
/// window, so the fallback applies.
pub(crate) const LISTING_BUDGETS: [ListingBudget; 1] = [ListingBudget {
    harness: "Codex",
    characters: 8_000,
    basis: "about 2 % of the context window, or 8,000 characters when it is unknown",
}];

/// The bundle's metadata exceeds a harness's listing budget.
#[derive(Debug, Clone, Serialize)]
pub struct ListingWarning {
    pub harness: String,
    pub budget_characters: u64,
    pub metadata_bytes: u64,
    pub basis: String,
    /// Skills past the budget, in listing order: the ones the harness would cut.
    pub cut: Vec<String>,
}

/// Checks the listed skills (`metadata_bytes` on decisions, in trace order) against
/// every target harness's listing budget.
pub fn listing_warnings(trace: &Trace) -> Vec<ListingWarning> {
    let listed: Vec<(&str, u64)> = trace
        .decisions
        .iter()
        .filter(|decision| matches!(decision.outcome, Outcome::Selected | Outcome::Delivered))
        .filter_map(|decision| decision.metadata_bytes.map(|bytes| (decision.name(), bytes)))
        .collect();
    let total = listed.iter().fold(0u64, |sum, (_, bytes)| sum.saturating_add(*bytes));
    LISTING_BUDGETS
        .iter()
        .filter(|budget| total > budget.characters)
        .map(|budget| {
            let mut running = 0u64;
            let cut = listed
                .iter()
                .filter(|(_, bytes)| {
                    running = running.saturating_add(*bytes);
                    running > budget.characters
                })
                .map(|(name, _)| (*name).to_owned())
                .collect();
            ListingWarning {
                harness: budget.harness.to_owned(),
                budget_characters: budget.characters,
                metadata_bytes: total,
                basis: budget.basis.to_owned(),
                cut,
            }
        })
        .collect()
}

pub fn budget(trace: &Trace) -> Budget {
    let providers: Vec<BudgetRow> = trace
        .providers
        .iter()
        .map(|provider| BudgetRow {
            source: provider.source.clone(),
            outcome: provider.outcome,
            skills: provider.skills,
            context_bytes: provider.context_bytes,
            approximate_tokens: provider.approximate_tokens,
            metadata_bytes: provider.metadata_bytes,
            instruction_bytes: provider.instruction_bytes,
            resource_bytes: provider.resource_bytes,
            binary_bytes: provider.binary_bytes,
            selector: provider.selector.as_ref().map(|selector| {
                let mut text = format!(
                    "{} admitted {} of {}",
                    selector.patterns.join(", "),
                    selector.admitted,
                    selector.catalogue
                );
                if selector.overlay_excluded > 0 {
                    text.push_str(&format!(" (an overlay excluded {})", selector.overlay_excluded));
                }
                text
            }),
        })
        .collect();
    // The figures come from a bundle, which may be hostile: add without overflowing.
    let total_bytes = providers.iter().fold(0u64, |sum, row| sum.saturating_add(row.context_bytes));
    let sum = |part: fn(&BudgetRow) -> u64| providers.iter().fold(0u64, |sum, row| sum.saturating_add(part(row)));
    Budget {
        total_metadata_bytes: sum(|row| row.metadata_bytes),
        total_instruction_bytes: sum(|row| row.instruction_bytes),
        total_resource_bytes: sum(|row| row.resource_bytes),
        total_binary_bytes: sum(|row| row.binary_bytes),
        listing_warnings: listing_warnings(trace),
        total_skills: providers.iter().fold(0usize, |sum, row| sum.saturating_add(row.skills)),
        total_bytes,
        total_tokens: crate::trace::approximate_tokens(total_bytes),
        providers,
    }
}

#[derive(Serialize)]
struct DescribeDocument<'a> {
    format: &'static str,
    bundle: &'a str,
    role: &'a str,
    display_name: &'a str,
    meld: Vec<&'a str>,
    favorite_color: &'a str,
    model_tier: &'a str,
    delivery: &'a str,
    person_source: &'a str,
    profile: &'a Manifest,
    providers: &'a [ProviderReport],
    budget: Budget,
    selection: &'a [Decision],
}

/// `describe --json`.
pub fn describe_json(id: &str, manifest: &Manifest, trace: &Trace) -> Vec<u8> {
    crate::snapshot::to_json_bytes(&DescribeDocument {
        format: DESCRIBE_FORMAT,
        bundle: id,
        role: &manifest.role.slug,
        display_name: &manifest.role.display_name,
        meld: manifest.personalities.iter().map(|personality| personality.slug.as_str()).collect(),
        favorite_color: &manifest.favorite_color,
        model_tier: &manifest.model_tier,
        delivery: &manifest.delivery,
        person_source: &manifest.person_source,
        profile: manifest,
        providers: &trace.providers,
        budget: budget(trace),
        selection: &trace.decisions,
    })
}

/// Wraps text at `width` columns; continuation lines start with `indent` spaces.
pub(crate) fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let limit = if lines.is_empty() { width } else { width.saturating_sub(indent) };
        if !current.is_empty() && current.chars().count() + 1 + word.chars().count() > limit {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines.join(&format!("\n{}", " ".repeat(indent)))
}

fn rgb(hex: &str) -> [u8; 3] {
    crate::color::parse_hex(hex).unwrap_or([0x80, 0x80, 0x80])
}

/// Whether `describe` collapses runs of three or more exclusions with the same cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExclusionRuns {
    /// Runs of three or more collapse into one line naming the first two.
    Collapse,
    /// Every decision has its own line (`--all`).
    ShowAll,
}

/// `describe` as text: header, profile, providers, context budget, selection, delivery.
/// Runs of three or more exclusions with the same cause collapse unless `all`.
pub fn describe_text(id: &str, manifest: &Manifest, trace: &Trace, all: bool, palette: Palette) -> String {
    let mut text = String::new();
    write_header(&mut text, id, manifest, palette);
    write_profile(&mut text, manifest, palette);
    let id_width = provider_column_width(trace);
    write_providers(&mut text, trace, id_width, palette);
    write_context_budget(&mut text, trace, id_width, palette);
    let runs = if all { ExclusionRuns::ShowAll } else { ExclusionRuns::Collapse };
    write_selection(&mut text, trace, runs, palette);
    write_delivery(&mut text, manifest, palette);
    text
}

/// The first lines of `describe`: the bundle id, the role and how it is delivered.
fn write_header(text: &mut String, id: &str, manifest: &Manifest, palette: Palette) {
    let meld: Vec<&str> = manifest.personalities.iter().map(|personality| personality.slug.as_str()).collect();
    let _ = writeln!(text, "{} {}", bold(palette, "bundle"), id);
    let _ = writeln!(
        text,
        "role      {} — {}  [{}]  {} {}",
        manifest.role.slug,
        manifest.role.display_name,
        meld.join(" + "),
        tint(palette, rgb(&manifest.favorite_color), "●"),
        manifest.favorite_color
    );
    let _ = writeln!(
        text,
        "delivery  {} · tier {} · source {}",
        manifest.delivery, manifest.model_tier, manifest.person_source
    );
}

/// The `profile` section: purpose, identity, seats, role skill and personalities.
fn write_profile(text: &mut String, manifest: &Manifest, palette: Palette) {
    let _ = writeln!(text, "\n{}", bold(palette, "profile"));
    let _ = writeln!(text, "  purpose       {}", wrap(&manifest.role.purpose, 64, 16));
    let _ = writeln!(text, "  identity      {} ({})", manifest.identity.name, manifest.identity.pronouns);
    let seats: Vec<String> = manifest.seats.iter().map(seat_label).collect();
    if !seats.is_empty() {
        let _ = writeln!(text, "  seats         {}", wrap(&seats.join(", "), 64, 16));
    }
    let _ = writeln!(text, "  role skill    {}", manifest.role_skill.id);
    let _ = writeln!(text, "  from          {}", manifest.role_skill.source);
    for (index, personality) in manifest.personalities.iter().enumerate() {
        let label = if index == 0 { "personalities" } else { "" };
        let _ = writeln!(
            text,
            "  {label:<13} {} {} {} {}",
            tint(palette, rgb(&personality.color), "●"),
            personality.slug,
            personality.skill,
            personality.color
        );
    }
    for (index, server) in manifest.mcp_servers.iter().enumerate() {
        let label = if index == 0 { "mcp servers" } else { "" };
        let _ = writeln!(text, "  {label:<13} {}", mcp_server_label(server));
    }
}

/// An MCP server as the profile lists it: name, transport, command or URL, and the
/// variables it needs.
fn mcp_server_label(server: &crate::mcp::McpServer) -> String {
    let reach = match (&server.command, &server.url) {
        (Some(command), _) => std::iter::once(command.as_str())
            .chain(server.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(url)) => url.clone(),
        (None, None) => String::new(),
    };
    let mut label = format!("{} ({}) {}", server.name, server.transport.name(), crate::diagnostic::sanitize(&reach));
    if !server.env.is_empty() {
        let _ = write!(label, " · env {}", server.env.join(", "));
    }
    label
}

/// A seat as the profile lists it: its key, then its tier and channel when it has them.
fn seat_label(seat: &crate::bundle::ManifestSeat) -> String {
    let details: Vec<&str> = [seat.tier.as_deref(), seat.channel.as_deref()].into_iter().flatten().collect();
    if details.is_empty() { seat.key.clone() } else { format!("{} ({})", seat.key, details.join(", ")) }
}

/// The width of the source column shared by the providers and the context budget.
fn provider_column_width(trace: &Trace) -> usize {
    trace.providers.iter().map(|provider| provider.source.chars().count()).max().unwrap_or(0).max(6)
}

/// The `providers` section: one line per provider and its reason below it.
fn write_providers(text: &mut String, trace: &Trace, id_width: usize, palette: Palette) {
    let _ = writeln!(text, "\n{}", bold(palette, "providers"));
    for provider in &trace.providers {
        let _ = writeln!(
            text,
            "  {} {:<id_width$}  {:<26} {:<16} {}",
            marked(palette, provider.outcome),
            provider.source,
            category_label(&provider.category),
            provider.scope,
            provider.cause
        );
        let _ = writeln!(text, "      {}", wrap(&provider.reason, 74, 6));
    }
}

/// The `context budget` section: sizes per provider, how they load, and listing warnings.
fn write_context_budget(text: &mut String, trace: &Trace, id_width: usize, palette: Palette) {
    let report = budget(trace);
    let _ = writeln!(text, "\n{}", bold(palette, "context budget"));
    write_budget_sizes(text, &report, id_width);
    write_budget_loading(text, &report, id_width);
    write_listing_warnings(text, &report, palette);
}

/// The budget's table of skills, bytes and tokens per provider, with its total.
fn write_budget_sizes(text: &mut String, report: &Budget, id_width: usize) {
    let _ = writeln!(text, "  {:<id_width$}  {:>6} {:>9} {:>8}", "source", "skills", "bytes", "~tokens");
    for row in &report.providers {
        let _ = write!(
            text,
            "  {:<id_width$}  {:>6} {:>9} {:>8}",
            row.source, row.skills, row.context_bytes, row.approximate_tokens
        );
        if let Some(selector) = &row.selector {
            let marker = if row.outcome == Outcome::Selected { "→ selected slice" } else { "excluded" };
            let _ = write!(text, "\n  {:<id_width$}  selector {selector} {marker}", "");
        }
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "  {:<id_width$}  {:>6} {:>9} {:>8}",
        "total", report.total_skills, report.total_bytes, report.total_tokens
    );
}

/// The budget's table of how the bytes load: metadata, instructions and resources.
fn write_budget_loading(text: &mut String, report: &Budget, id_width: usize) {
    // How those bytes load: metadata is always listed, instructions load when a skill is
    // used, resources on demand; binary resources never count as tokens.
    let _ = writeln!(
        text,
        "  {:<id_width$}  {:>9} {:>12} {:>9}  (bytes)",
        "loading", "metadata", "instructions", "resources"
    );
    for row in &report.providers {
        let _ = writeln!(
            text,
            "  {:<id_width$}  {:>9} {:>12} {:>9}",
            row.source, row.metadata_bytes, row.instruction_bytes, row.resource_bytes
        );
    }
    let tokens = crate::trace::approximate_tokens;
    let _ = writeln!(
        text,
        "  {:<id_width$}  {:>9} {:>12} {:>9}",
        "total", report.total_metadata_bytes, report.total_instruction_bytes, report.total_resource_bytes
    );
    let _ = writeln!(
        text,
        "  {:<id_width$}  {:>9} {:>12} {:>9}{}",
        "~tokens",
        tokens(report.total_metadata_bytes),
        tokens(report.total_instruction_bytes),
        tokens(report.total_resource_bytes.saturating_sub(report.total_binary_bytes)),
        if report.total_binary_bytes > 0 {
            format!("  ({} bytes of binary files not counted)", report.total_binary_bytes)
        } else {
            String::new()
        }
    );
}

/// One warning per target harness whose skill listing the bundle's metadata overflows.
fn write_listing_warnings(text: &mut String, report: &Budget, palette: Palette) {
    for warning in &report.listing_warnings {
        let message = format!(
            "{} would list {} bytes of skill metadata but keeps about {} characters ({}); it would cut: {}",
            warning.harness,
            warning.metadata_bytes,
            warning.budget_characters,
            warning.basis,
            warning.cut.join(", ")
        );
        let _ = writeln!(
            text,
            "  {} {}",
            tint(palette, outcome_colour(Outcome::Shadowed), "warning:"),
            wrap(&message, 68, 4)
        );
    }
}

/// The `selection` section: every decision in trace order, runs of exclusions collapsed
/// as `runs` says.
fn write_selection(text: &mut String, trace: &Trace, runs: ExclusionRuns, palette: Palette) {
    let _ = writeln!(text, "\n{}", bold(palette, "selection"));
    let subject_width =
        trace.decisions.iter().map(|decision| decision.subject.chars().count()).max().unwrap_or(0).min(44);
    let source_width = trace.decisions.iter().map(|decision| decision.source.chars().count()).max().unwrap_or(0);
    let mut index = 0;
    let decisions = &trace.decisions;
    while index < decisions.len() {
        let decision = &decisions[index];
        let run = exclusion_run(&decisions[index..]);
        if runs == ExclusionRuns::Collapse && run >= 3 {
            write_collapsed_run(text, &decisions[index..index + run], palette);
            index += run;
            continue;
        }
        write_decision(text, decision, subject_width, source_width, palette);
        index += 1;
    }
}

/// How many decisions from the first on are exclusions with the first one's cause (none
/// when the first is not an exclusion).
fn exclusion_run(decisions: &[Decision]) -> usize {
    let Some(first) = decisions.first() else { return 0 };
    decisions
        .iter()
        .take_while(|other| {
            other.outcome == Outcome::Excluded && first.outcome == Outcome::Excluded && other.cause == first.cause
        })
        .count()
}

/// One line for a run of exclusions with the same cause, naming its first two subjects.
fn write_collapsed_run(text: &mut String, run: &[Decision], palette: Palette) {
    let Some(first) = run.first() else { return };
    let names: Vec<&str> = run.iter().map(|other| other.subject.as_str()).collect();
    let shown = names.iter().take(2).copied().collect::<Vec<_>>().join(", ");
    let _ = writeln!(
        text,
        "  {} {} × {}: {shown}{}",
        marked(palette, Outcome::Excluded),
        run.len(),
        first.cause,
        if run.len() > 2 { ", … (--all)" } else { "" }
    );
}

/// One decision's line: outcome, subject, source, cause, matched selectors and winner.
fn write_decision(text: &mut String, decision: &Decision, subject_width: usize, source_width: usize, palette: Palette) {
    let mut detail = decision.cause.clone();
    if !decision.selectors.is_empty() {
        detail.push_str(&format!(" [{}]", decision.selectors.join(", ")));
    }
    if let Some(winner) = &decision.winner {
        detail.push_str(&format!(" (kept `{winner}`)"));
    }
    let _ = writeln!(
        text,
        "  {} {:<subject_width$}  {:<source_width$}  {:<9} {}",
        marked(palette, decision.outcome),
        decision.subject,
        decision.source,
        decision.outcome.name(),
        detail
    );
}

/// The `delivery` section: the mode and where the bundle's files are.
fn write_delivery(text: &mut String, manifest: &Manifest, palette: Palette) {
    let _ = writeln!(text, "\n{}", bold(palette, "delivery"));
    let _ = writeln!(text, "  mode          {}", manifest.delivery);
    let _ = writeln!(text, "  instructions  content/instructions.md");
    for (harness, path) in &manifest.harness_instructions {
        let _ = writeln!(
            text,
            "  for {:<9} {} (appended for that harness only)",
            crate::diagnostic::sanitize(harness),
            crate::diagnostic::sanitize(path)
        );
    }
    let _ = writeln!(text, "  skills        content/skills/<source>/<skill>/SKILL.md");
    if manifest.delivery == "compiled" {
        let _ = writeln!(text, "  compiled      delivery/compiled.md");
    }
    let _ = writeln!(text, "  files         {}", manifest.content.len() + 1);
}

/// One answer of `--why`.
#[derive(Debug, Clone, Serialize)]
pub struct WhyEntry {
    pub subject: String,
    pub kind: String,
    pub source: String,
    pub outcome: Outcome,
    pub cause: String,
    pub reason: String,
    pub rule: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selectors: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winner: Option<String>,
    /// Agent Skills findings the trace recorded for the skill.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<crate::trace::FindingRecord>,
    /// The provider this subject came from (or is), with its scope, selector and budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Why {
    pub format: &'static str,
    pub item: String,
    pub entries: Vec<WhyEntry>,
}

/// Why an item failed to resolve: the kinds accepted, or the closest known names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhyError {
    BadItem,
    Unknown { item: String, suggestions: Vec<String> },
}

const WHY_KINDS: [&str; 7] = ["source", "skill", "role", "personality", "instruction", "mcp", "overlay"];

/// Follows one item (`source:<id>`, `skill:<name>`, `role:<slug>`, `personality:<slug>`,
/// `instruction:<id>`) to every decision about it.
pub fn why(trace: &Trace, item: &str) -> Result<Why, WhyError> {
    let (kind, name) = why_item(item)?;
    let decisions: Vec<Decision> =
        trace.decisions.iter().filter(|decision| decision.subject == item).cloned().collect();
    if decisions.is_empty() {
        let subjects = trace.decisions.iter().map(|decision| decision.subject.as_str());
        return Err(why_unknown(item, kind, name, subjects));
    }
    Ok(why_answer(item, decisions, &trace.providers))
}

/// The kind and name of a `--why` item, or [`WhyError::BadItem`].
pub fn why_item(item: &str) -> Result<(&str, &str), WhyError> {
    match item.split_once(':') {
        Some((kind, name)) if WHY_KINDS.contains(&kind) && !name.is_empty() => Ok((kind, name)),
        _ => Err(WhyError::BadItem),
    }
}

/// The answer from every decision about `item` (in trace order, at least one) and the
/// provider reports that name their sources (the first report of a source is its own).
pub fn why_answer(item: &str, decisions: Vec<Decision>, providers: &[ProviderReport]) -> Why {
    let provider_of = |source: &str| providers.iter().find(|provider| provider.source == source).cloned();
    let entries: Vec<WhyEntry> = decisions
        .into_iter()
        .map(|decision| WhyEntry {
            rule: rule(&decision.cause).to_owned(),
            provider: provider_of(&decision.source),
            subject: decision.subject,
            kind: decision.kind,
            source: decision.source,
            outcome: decision.outcome,
            cause: decision.cause,
            reason: decision.reason,
            selectors: decision.selectors,
            winner: decision.winner,
            findings: decision.findings,
        })
        .collect();
    Why { format: WHY_FORMAT, item: item.to_owned(), entries }
}

/// The error for an item no decision is about, suggesting the closest names of its kind
/// among the trace's `subjects`.
pub fn why_unknown<'a>(item: &str, kind: &str, name: &str, subjects: impl Iterator<Item = &'a str>) -> WhyError {
    let prefix = format!("{kind}:");
    let mut known: Vec<&str> = subjects.filter_map(|subject| subject.strip_prefix(prefix.as_str())).collect();
    known.sort_unstable();
    known.dedup();
    let mut scored: Vec<(usize, &str)> = known.iter().map(|known| (strsim::levenshtein(name, known), *known)).collect();
    scored.sort();
    let suggestions = scored.into_iter().take(3).map(|(_, known)| format!("{kind}:{known}")).collect();
    WhyError::Unknown { item: crate::diagnostic::sanitize(item), suggestions }
}

/// `--why` as text.
pub fn why_text(why: &Why, palette: Palette) -> String {
    let mut text = String::new();
    for entry in &why.entries {
        let _ = writeln!(
            text,
            "{} {} — {} ({})",
            marked(palette, entry.outcome),
            entry.subject,
            entry.outcome.name(),
            entry.cause
        );
        let _ = writeln!(text, "  source    {} ({})", entry.source, entry.kind);
        let _ = writeln!(text, "  reason    {}", wrap(&entry.reason, 68, 12));
        let _ = writeln!(text, "  rule      {}", wrap(&entry.rule, 68, 12));
        if !entry.selectors.is_empty() {
            let _ = writeln!(text, "  matched   {}", entry.selectors.join(", "));
        }
        if let Some(winner) = &entry.winner {
            let _ = writeln!(text, "  kept      the copy from `{winner}`");
        }
        for finding in &entry.findings {
            let _ =
                writeln!(text, "  finding   {} ({}): {}", finding.code, finding.level, wrap(&finding.message, 60, 12));
            let _ = writeln!(text, "            {}", wrap(&finding.consequence, 68, 12));
        }
        if let Some(provider) = &entry.provider {
            let _ = writeln!(
                text,
                "  provider  {} — {}, scope {}, {} ({})",
                provider.source,
                category_label(&provider.category),
                provider.scope,
                provider.outcome.name(),
                provider.cause
            );
            if let Some(selector) = &provider.selector {
                let excluded = match selector.overlay_excluded {
                    0 => String::new(),
                    count => format!(" (an overlay excluded {count})"),
                };
                let _ = writeln!(
                    text,
                    "  selector  {} — admitted {} of {} catalogue skills{excluded}",
                    selector.patterns.join(", "),
                    selector.admitted,
                    selector.catalogue
                );
            }
            let _ = writeln!(
                text,
                "  budget    {} skills, {} bytes, ~{} tokens ({} metadata, {} instructions, {} resources)",
                provider.skills,
                provider.context_bytes,
                provider.approximate_tokens,
                provider.metadata_bytes,
                provider.instruction_bytes,
                provider.resource_bytes
            );
        }
    }
    text
}

/// One difference between two bundles.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Change {
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    pub item: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub format: &'static str,
    pub decisions: Vec<Change>,
    pub content: Vec<Change>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty() && self.content.is_empty()
    }
}

fn decision_summary(decision: &Decision) -> String {
    format!("{} {}: {}", decision.outcome.name(), decision.cause, decision.reason)
}

/// Decisions added, removed or changed (outcome, cause or reason), keyed by subject and
/// source; content files added, removed or changed by digest (the trace index, derived
/// from `trace.json`, is left out).
pub fn diff(before: (&Manifest, &Trace), after: (&Manifest, &Trace)) -> Diff {
    let key = |decision: &Decision| format!("{} ({})", decision.subject, decision.source);
    let old: BTreeMap<String, &Decision> =
        before.1.decisions.iter().map(|decision| (key(decision), decision)).collect();
    let new: BTreeMap<String, &Decision> = after.1.decisions.iter().map(|decision| (key(decision), decision)).collect();
    let mut decisions = Vec::new();
    for (item, decision) in &old {
        match new.get(item) {
            None => decisions.push(Change {
                change: "removed",
                item: item.clone(),
                before: Some(decision_summary(decision)),
                after: None,
            }),
            Some(other) if decision_summary(decision) != decision_summary(other) => decisions.push(Change {
                change: "changed",
                item: item.clone(),
                before: Some(decision_summary(decision)),
                after: Some(decision_summary(other)),
            }),
            Some(_) => {}
        }
    }
    for (item, decision) in &new {
        if !old.contains_key(item) {
            decisions.push(Change {
                change: "added",
                item: item.clone(),
                before: None,
                after: Some(decision_summary(decision)),
            });
        }
    }
    let (old_content, new_content) = (content_digests(before.0), content_digests(after.0));
    let mut content = Vec::new();
    for (path, digest) in &old_content {
        match new_content.get(path) {
            None => content.push(Change {
                change: "removed",
                item: (*path).to_owned(),
                before: Some((*digest).to_owned()),
                after: None,
            }),
            Some(other) if other != digest => content.push(Change {
                change: "changed",
                item: (*path).to_owned(),
                before: Some((*digest).to_owned()),
                after: Some((*other).to_owned()),
            }),
            Some(_) => {}
        }
    }
    for (path, digest) in &new_content {
        if !old_content.contains_key(path) {
            content.push(Change {
                change: "added",
                item: (*path).to_owned(),
                before: None,
                after: Some((*digest).to_owned()),
            });
        }
    }
    Diff { format: DIFF_FORMAT, decisions, content }
}

/// The digest of each listed file by path, but the trace index: it is derived from
/// `trace.json`, whose change `diff` reports already.
fn content_digests(manifest: &Manifest) -> BTreeMap<&str, &str> {
    manifest
        .content
        .iter()
        .filter(|entry| entry.path != crate::trace_index::PATH)
        .map(|entry| (entry.path.as_str(), entry.digest.as_str()))
        .collect()
}

/// `diff` as text.
pub fn diff_text(diff: &Diff, palette: Palette) -> String {
    if diff.is_empty() {
        return "no semantic differences\n".to_owned();
    }
    let mut text = String::new();
    let sign = |change: &str| match change {
        "added" => tint(palette, outcome_colour(Outcome::Selected), "+"),
        "removed" => tint(palette, outcome_colour(Outcome::Excluded), "-"),
        _ => tint(palette, outcome_colour(Outcome::Shadowed), "~"),
    };
    for (title, changes) in [("decisions", &diff.decisions), ("content", &diff.content)] {
        if changes.is_empty() {
            continue;
        }
        let _ = writeln!(text, "{} ({})", bold(palette, title), changes.len());
        for change in changes {
            let _ = writeln!(text, "  {} {}", sign(change.change), change.item);
            match (&change.before, &change.after) {
                (Some(before), Some(after)) => {
                    let _ = writeln!(text, "      {before}\n    → {after}");
                }
                (Some(value), None) | (None, Some(value)) => {
                    let _ = writeln!(text, "      {value}");
                }
                (None, None) => {}
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_through_the_index_are_the_answers_of_the_whole_trace() {
        use crate::trace::{SelectorReport, TraceEntry, TraceRecord};
        use crate::trace_index::{IndexedFile, Looked, ReadIndex, TraceIndex, index_of_trace, look_up};
        use std::ops::Range;
        let decision = |subject: &str, source: &str, outcome| Decision {
            subject: subject.to_owned(),
            kind: "ordinary-skill".to_owned(),
            source: source.to_owned(),
            outcome,
            cause: "selector-admitted".to_owned(),
            reason: "a \"quoted\" reason".to_owned(),
            selectors: vec!["a*".to_owned()],
            winner: None,
            metadata_bytes: Some(12),
            findings: Vec::new(),
        };
        let provider = |source: &str, skills| ProviderReport {
            source: source.to_owned(),
            category: "skill-provider".to_owned(),
            scope: "role".to_owned(),
            outcome: Outcome::Selected,
            cause: "selector-admitted".to_owned(),
            reason: "named".to_owned(),
            location: "owner/repo".to_owned(),
            skills,
            context_bytes: 10,
            approximate_tokens: 3,
            metadata_bytes: 1,
            instruction_bytes: 8,
            resource_bytes: 1,
            binary_bytes: 0,
            selector: Some(SelectorReport {
                patterns: vec!["a*".to_owned()],
                admitted: 1,
                catalogue: 2,
                overlay_excluded: 0,
            }),
        };
        // Enough excluded skills to fill several blocks, a subject decided twice, a
        // provider reported twice (the first report is its own) and names to escape.
        let record = TraceRecord {
            role: "platform".to_owned(),
            entries: vec![
                TraceEntry::Decision(decision("source:repo-a", "repo-a", Outcome::Selected)),
                TraceEntry::ExcludedSkills {
                    source: "repo-b".to_owned(),
                    cause: "not-admitted".to_owned(),
                    names: (0..3000).map(|index| format!("skill-{index}")).collect::<Vec<_>>().into(),
                },
                TraceEntry::Decision(decision("skill:twice", "repo-a", Outcome::Selected)),
                TraceEntry::UnselectedSkills {
                    source: "repo-a".to_owned(),
                    reason: "matched by no selector".to_owned(),
                    names: vec!["q\"uote".to_owned(), "back\\slash\u{1b}".to_owned()],
                },
                TraceEntry::Decision(decision("skill:twice", "repo-c", Outcome::Shadowed)),
            ],
            providers: vec![provider("repo-a", 1), provider("repo-c", 0), provider("repo-a", 9)],
        };
        let mut bytes = Vec::new();
        record.write_json(&mut bytes).unwrap();
        bytes.push(b'\n');
        let trace = record.expand();
        let text = index_of_trace(&bytes).expect("a trace");
        let ReadIndex::Read(index) = TraceIndex::parse(&text).expect("an index") else { panic!("version") };
        assert!(index.trace_length() > 2 * crate::trace_index::BLOCK_BYTES, "{} bytes", index.trace_length());
        let mut reads = 0;
        let mut read = |range: Range<u64>| {
            reads += 1;
            Ok(bytes[range.start as usize..range.end as usize].to_vec())
        };
        let mut items: Vec<String> = trace.decisions.iter().map(|decision| decision.subject.clone()).collect();
        items.extend(["skill:skill-30".to_owned(), "skill:absent".to_owned(), "role:none".to_owned()]);
        for item in &items {
            let (kind, name) = why_item(item).unwrap();
            let through_index = match look_up(&index, item, &mut read).unwrap() {
                Looked::Found { decisions, providers } => Ok(why_answer(item, decisions, &providers)),
                Looked::NotFound { subjects } => {
                    Err(why_unknown(item, kind, name, subjects.iter().map(String::as_str)))
                }
            };
            let whole = why(&trace, item);
            let json = |answer: &Result<Why, WhyError>| match answer {
                Ok(why) => String::from_utf8(crate::snapshot::to_json_bytes(why)).unwrap(),
                Err(error) => format!("{error:?}"),
            };
            assert_eq!(json(&through_index), json(&whole), "{item}");
        }
        assert!(reads > 0);
        let mut changed = bytes.clone();
        let at = changed.len() / 2;
        changed[at] ^= 1;
        let mut read_changed = |range: Range<u64>| Ok(changed[range.start as usize..range.end as usize].to_vec());
        let middle = trace.decisions[trace.decisions.len() / 2].subject.clone();
        let problem = look_up(&index, &middle, &mut read_changed).unwrap_err();
        assert_eq!(problem.file, IndexedFile::Trace, "{problem:?}");
    }
}
