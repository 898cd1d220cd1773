//! `acompose catalog roles|personalities|seats`: the loaded model as tables or JSON; and
//! `catalog expressions`, the fixed renderer vocabulary.

use std::fmt::Write as _;

use acompose_driver::engine::PersonModel;
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::render::tint;
use acompose_driver::engine::snapshot::to_json_bytes;
use serde::Serialize;

use acompose_driver::Sources;

use crate::catalogue_check::ReportFormat;
use crate::terminal::{Terminal, report_error, report_warnings};
use crate::{SourceArgs, exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct CatalogArgs {
    #[arg(value_enum)]
    pub kind: CatalogKind,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Check and audit only: `text`, `json` (as `--json`) or `sarif` (SARIF 2.1.0, for
    /// code-scanning tools).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Personalities only: keep those whose slug, alias, skill or motif contains QUERY.
    #[arg(long, value_name = "QUERY")]
    pub query: Option<String>,
    /// Seats only: keep this role's seats.
    #[arg(long, value_name = "SLUG")]
    pub role: Option<String>,
    /// Check only: repositories, `.agents/skills` folders or skill folders to check.
    #[arg(value_name = "DIR")]
    pub directories: Vec<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogKind {
    Roles,
    Personalities,
    Seats,
    /// The Agent Skills checks of catalogues, without composing.
    Check,
    /// The content audit of catalogues' skills: hidden characters, secrets, what a
    /// harness would run without asking.
    Audit,
    /// The fixed renderer expression vocabulary (`overlay --expression`).
    Expressions,
}

#[derive(Serialize)]
struct RoleRow<'a> {
    slug: &'a str,
    display_name: &'a str,
    purpose: &'a str,
    skill: &'a str,
    model_tiers: &'a [String],
    personalities: &'a [String],
    favorite_color: &'a str,
    identity: Identity<'a>,
    methods: Vec<&'a str>,
}

#[derive(Serialize)]
struct Identity<'a> {
    name: &'a str,
    pronouns: &'a str,
}

#[derive(Serialize)]
struct PersonalityRow<'a> {
    slug: &'a str,
    skill: &'a str,
    color: &'a str,
    motif: &'a str,
    aliases: &'a [String],
    package: &'a str,
    roles: Vec<&'a str>,
}

#[derive(Serialize)]
struct SeatRow<'a> {
    role: &'a str,
    key: &'a str,
    harness: &'a str,
    name: &'a str,
    pronouns: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    channel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tier: Option<&'a str>,
}

#[derive(Serialize)]
struct Listing<T> {
    format: &'static str,
    source: String,
    items: Vec<T>,
}

pub(crate) fn run(args: CatalogArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    if matches!(args.kind, CatalogKind::Check | CatalogKind::Audit) {
        let format = if args.json { ReportFormat::Json } else { args.format };
        let audit_only = args.kind == CatalogKind::Audit;
        return crate::catalogue_check::run(&args.directories, format, audit_only, home, terminal);
    }
    if args.format != ReportFormat::Text {
        print_stderr("error: `--format` applies to `catalog check` and `catalog audit` only\n");
        return exit::USAGE;
    }
    if args.kind == CatalogKind::Expressions {
        return expressions(args.json);
    }
    if !args.directories.is_empty() {
        print_stderr("error: folders apply to `catalog check` and `catalog audit` only\n");
        return exit::USAGE;
    }
    if args.query.is_some() && args.kind != CatalogKind::Personalities {
        print_stderr("error: `--query` applies to `catalog personalities` only\n");
        return exit::USAGE;
    }
    if args.role.is_some() && args.kind != CatalogKind::Seats {
        print_stderr("error: `--role` applies to `catalog seats` only\n");
        return exit::USAGE;
    }
    let selection = acompose_driver::home::settings::resolve(&args.source.flags(home))
        .and_then(|settings| settings.selection(false));
    let model = match selection.and_then(|selection| Sources::default().load_model(&selection)) {
        Ok(valid) => {
            report_warnings(&valid.warnings, terminal);
            valid.model
        }
        Err(error) => return report_error(&error, terminal),
    };
    match args.kind {
        CatalogKind::Roles => roles(&model, args.json, terminal),
        CatalogKind::Personalities => personalities(&model, args.query.as_deref(), args.json, terminal),
        CatalogKind::Seats => seats(&model, args.role.as_deref(), args.json),
        CatalogKind::Check | CatalogKind::Audit | CatalogKind::Expressions => exit::SUCCESS,
    }
}

/// The expression vocabulary: one a line, or `{format, expressions}`.
fn expressions(json: bool) -> u8 {
    use acompose_driver::engine::seat_card::EXPRESSIONS;
    if json {
        #[derive(Serialize)]
        struct Expressions {
            format: &'static str,
            expressions: [&'static str; 9],
        }
        let document = Expressions { format: "acompose.catalog.expressions.v1", expressions: EXPRESSIONS };
        print_stdout(&String::from_utf8_lossy(&to_json_bytes(&document)));
    } else {
        print_stdout(&format!("{}\n", EXPRESSIONS.join("\n")));
    }
    exit::SUCCESS
}

fn roles(model: &PersonModel, json: bool, terminal: &Terminal) -> u8 {
    if json {
        let items = model
            .roles
            .iter()
            .map(|role| RoleRow {
                slug: &role.slug,
                display_name: &role.display_name,
                purpose: &role.purpose,
                skill: &role.skill.id,
                model_tiers: &role.model_tiers,
                personalities: &role.personalities,
                favorite_color: &role.favourite.hex,
                identity: Identity { name: &role.identity.name, pronouns: &role.identity.pronouns },
                methods: role.methods.iter().map(|method| method.id.as_str()).collect(),
            })
            .collect();
        print_json("acompose.catalog.roles.v1", model, items);
        return exit::SUCCESS;
    }
    let width = model.roles.iter().map(|role| role.slug.len()).max().unwrap_or(0);
    let mut text = String::new();
    for role in &model.roles {
        let _ = writeln!(
            text,
            "{} {:<width$}  {}  {}  [{}]",
            tint(terminal.stdout, role.favourite.rgb, "●"),
            role.slug,
            role.favourite.hex,
            role.display_name,
            role.personalities.join(" + ")
        );
    }
    print_stdout(&text);
    exit::SUCCESS
}

fn personalities(model: &PersonModel, query: Option<&str>, json: bool, terminal: &Terminal) -> u8 {
    let selected = match query {
        Some(query) => model.query_personalities(query),
        None => model.personalities.iter().collect(),
    };
    if let (Some(query), true) = (query, selected.is_empty()) {
        print_stderr(&format!("error: no personality matches `{}`\n", sanitize(query)));
        return exit::INVALID;
    }
    if json {
        let items = selected
            .iter()
            .map(|personality| PersonalityRow {
                slug: &personality.slug,
                skill: &personality.skill.id,
                color: &personality.colour.hex,
                motif: &personality.motif,
                aliases: &personality.aliases,
                package: &personality.package,
                roles: model
                    .roles
                    .iter()
                    .filter(|role| role.personalities.contains(&personality.slug))
                    .map(|role| role.slug.as_str())
                    .collect(),
            })
            .collect();
        print_json("acompose.catalog.personalities.v1", model, items);
        return exit::SUCCESS;
    }
    let width = selected.iter().map(|personality| personality.slug.len()).max().unwrap_or(0);
    let mut text = String::new();
    for personality in selected {
        let aliases = if personality.aliases.is_empty() {
            String::new()
        } else {
            format!("  (also {})", personality.aliases.join(", "))
        };
        let _ = writeln!(
            text,
            "{} {:<width$}  {}  {}{aliases}",
            tint(terminal.stdout, personality.colour.rgb, "●"),
            personality.slug,
            personality.colour.hex,
            personality.skill.id,
        );
    }
    print_stdout(&text);
    exit::SUCCESS
}

fn seats(model: &PersonModel, role: Option<&str>, json: bool) -> u8 {
    if let Some(slug) = role
        && model.role(slug).is_none()
    {
        let known: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
        print_stderr(&crate::terminal::unknown_role(slug, &known));
        return exit::INVALID;
    }
    let rows: Vec<SeatRow<'_>> = model
        .roles
        .iter()
        .filter(|candidate| role.is_none_or(|slug| candidate.slug == slug))
        .flat_map(|role| {
            role.seats.iter().map(move |seat| SeatRow {
                role: &role.slug,
                key: &seat.key,
                harness: &seat.harness,
                name: &seat.name,
                pronouns: &seat.pronouns,
                channel: seat.channel.as_deref(),
                tier: seat.tier.as_deref(),
            })
        })
        .collect();
    if json {
        print_json("acompose.catalog.seats.v1", model, rows);
        return exit::SUCCESS;
    }
    let mut text = String::new();
    for row in rows {
        let _ = writeln!(
            text,
            "{}  {}  {} ({})  tier {}  channel {}",
            row.role,
            row.key,
            row.name,
            row.pronouns,
            row.tier.unwrap_or("-"),
            row.channel.unwrap_or("-")
        );
    }
    print_stdout(&text);
    exit::SUCCESS
}

fn print_json<T: Serialize>(format: &'static str, model: &PersonModel, items: Vec<T>) {
    let listing = Listing { format, source: model.source.clone(), items };
    print_stdout(&String::from_utf8_lossy(&to_json_bytes(&listing)));
}
