//! `acompose overlay --role R --seat S [--expression E] [--width N] [--json]`: one seat's
//! identity card with an expression, as text or as the `agent-compose.overlay.v1`
//! document; the roster as the home's private overlays leave it.

use acompose_driver::Sources;
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::engine::seat_card::{CardError, EXPRESSIONS, MIN_WIDTH, card_text, seat_card};
use acompose_driver::engine::snapshot::to_json_bytes;

use crate::terminal::{Terminal, report_error, report_warnings};
use crate::{SourceArgs, exit, print_stderr, print_stdout};

#[derive(Debug, clap::Args)]
pub struct OverlayArgs {
    /// The role whose seat to show.
    #[arg(long, value_name = "SLUG")]
    pub role: String,
    /// The seat (its key, as `catalog seats` lists them).
    #[arg(long, value_name = "KEY")]
    pub seat: String,
    /// The renderer expression (`catalog expressions` lists them).
    #[arg(long, value_name = "EXPRESSION", default_value = "available")]
    pub expression: String,
    /// The width of the text card, at least 20 characters.
    #[arg(long, value_name = "N", default_value_t = 80)]
    pub width: usize,
    /// Print the JSON document instead of the text card.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: SourceArgs,
}

pub(crate) fn run(args: &OverlayArgs, home: Option<&std::path::Path>, terminal: &Terminal) -> u8 {
    let settings = match acompose_driver::home::settings::resolve(&args.source.flags(home)) {
        Ok(settings) => settings,
        Err(error) => return report_error(&error, terminal),
    };
    let loaded = settings
        .selection(false)
        .and_then(|selection| Sources::default().load_overlaid_model(&selection, &settings.overlay_paths()));
    let model = match loaded {
        Ok(valid) => {
            report_warnings(&valid.warnings, terminal);
            valid.model
        }
        Err(error) => return report_error(&error, terminal),
    };
    let card = match seat_card(&model, &args.role, &args.seat, &args.expression) {
        Ok(card) => card,
        Err(error) => return refuse(&error, args),
    };
    if args.json {
        print_stdout(&String::from_utf8_lossy(&to_json_bytes(&card)));
        return exit::SUCCESS;
    }
    match card_text(&card, args.width) {
        Ok(text) => {
            print_stdout(&text);
            exit::SUCCESS
        }
        Err(error) => refuse(&error, args),
    }
}

fn refuse(error: &CardError, args: &OverlayArgs) -> u8 {
    let message = match error {
        CardError::UnknownRole { valid } => {
            format!("role `{}` is not in the roster; roles: {}", sanitize(&args.role), valid.join(", "))
        }
        CardError::UnknownSeat { valid } => format!(
            "role `{}` has no seat `{}`; seats: {}",
            sanitize(&args.role),
            sanitize(&args.seat),
            valid.join(", ")
        ),
        CardError::UnknownExpression => {
            format!("`{}` is not an expression; expressions: {}", sanitize(&args.expression), EXPRESSIONS.join(", "))
        }
        CardError::TooNarrow => format!("`--width` must be at least {MIN_WIDTH}"),
    };
    print_stderr(&format!("error: {message}\n"));
    exit::INVALID
}
