//! How output reaches the terminal: colour decisions (`--color`, `NO_COLOR`, TTY,
//! `COLORTERM`) and diagnostic rendering with miette.

use std::io::IsTerminal;

use acompose_engine::diagnostic::line_column;
use acompose_engine::render::Palette;
use acompose_engine::{Diagnostic, Severity};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// The terminal settings every command renders with.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    /// Colour for stdout.
    pub stdout: Palette,
    /// Colour for stderr.
    pub stderr: Palette,
    pub quiet: bool,
    pub verbose: u8,
}

fn palette_for(choice: ColorChoice, is_terminal: bool) -> Palette {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    let enabled = match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && !no_color,
    };
    if !enabled {
        return Palette::Plain;
    }
    match std::env::var("COLORTERM").as_deref() {
        Ok("truecolor" | "24bit") => Palette::TrueColor,
        _ => Palette::Xterm256,
    }
}

impl Terminal {
    pub fn new(choice: ColorChoice, quiet: bool, verbose: u8) -> Self {
        Terminal {
            stdout: palette_for(choice, std::io::stdout().is_terminal()),
            stderr: palette_for(choice, std::io::stderr().is_terminal()),
            quiet,
            verbose,
        }
    }
}

/// Renders diagnostics with source snippets. `text_of` returns a file's text by its
/// display path. The header line `file:line:col` is always printed so the location is
/// readable even without a snippet.
pub fn render_diagnostics(
    diagnostics: &[Diagnostic],
    palette: Palette,
    text_of: &dyn Fn(&str) -> Option<String>,
) -> String {
    let theme = if palette == Palette::Plain { GraphicalTheme::unicode_nocolor() } else { GraphicalTheme::unicode() };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100).with_links(false);
    let mut output = String::new();
    for diagnostic in diagnostics {
        let text = diagnostic.file.as_deref().and_then(text_of);
        let location = match (&diagnostic.file, diagnostic.span, &text) {
            (Some(file), Some(span), Some(text)) => {
                let (line, column) = line_column(text, span.offset);
                format!("{file}:{line}:{column}")
            }
            (Some(file), _, _) => file.clone(),
            (None, _, _) => String::new(),
        };
        let severity = match diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Note | Severity::Detail => miette::Severity::Advice,
        };
        let mut report =
            MietteDiagnostic::new(diagnostic.message.clone()).with_code(diagnostic.code).with_severity(severity);
        if !diagnostic.hints.is_empty() {
            report = report.with_help(diagnostic.hints.join("\n"));
        }
        if let (Some(span), Some(_)) = (diagnostic.span, &text) {
            report = report.with_label(LabeledSpan::at(span.offset..span.offset + span.length, "here"));
        }
        if !location.is_empty() {
            output.push_str(&format!("{location}\n"));
        }
        let rendered = match (text, &diagnostic.file) {
            (Some(text), Some(file)) if diagnostic.span.is_some() => {
                let report = miette::Report::new(report).with_source_code(NamedSource::new(file, text));
                let mut buffer = String::new();
                let _ = handler.render_report(&mut buffer, report.as_ref());
                buffer
            }
            _ => {
                let mut buffer = String::new();
                let _ = handler.render_report(&mut buffer, &report);
                buffer
            }
        };
        output.push_str(&rendered);
        if !output.ends_with('\n') {
            output.push('\n');
        }
    }
    output
}

/// The diagnostics a terminal shows: detail only under `-v`.
pub fn visible(diagnostics: &[Diagnostic], terminal: Terminal) -> Vec<Diagnostic> {
    diagnostics
        .iter()
        .filter(|diagnostic| terminal.verbose > 0 || diagnostic.severity != Severity::Detail)
        .cloned()
        .collect()
}

/// `N error(s), M warning(s)`.
pub fn count_summary(diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
    let warnings = diagnostics.iter().filter(|diagnostic| diagnostic.severity == Severity::Warning).count();
    let plural = |count: usize, word: &str| if count == 1 { format!("1 {word}") } else { format!("{count} {word}s") };
    format!("{}, {}", plural(errors, "error"), plural(warnings, "warning"))
}
