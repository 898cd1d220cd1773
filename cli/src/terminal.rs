//! How output reaches the terminal: colour decisions (`--color`, `NO_COLOR`, TTY,
//! `COLORTERM`), diagnostic rendering with miette, and the rendering every command shares
//! (host errors, warnings, `--stats`, the convergence summary).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use crate::output::CommandOutput;
use crate::print_stderr;
use acompose_driver::convergence::Report;
use acompose_driver::convergence::Stats;
use acompose_driver::engine::diagnostic::{LineIndex, sanitize, snippet_safe};
use acompose_driver::engine::render::Palette;
use acompose_driver::engine::{Diagnostic, Severity};
use acompose_driver::{Blame, Findings, HostError};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic};

use crate::snippet::Snippet;

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
    /// The settings of this run; lets the palettes' colour through the terminal guard of
    /// `print_stdout` and `print_stderr`.
    pub fn new(choice: ColorChoice, quiet: bool, verbose: u8) -> Self {
        let terminal = Terminal {
            stdout: palette_for(choice, std::io::stdout().is_terminal()),
            stderr: palette_for(choice, std::io::stderr().is_terminal()),
            quiet,
            verbose,
        };
        crate::allow_colour(terminal.stdout != Palette::Plain, terminal.stderr != Palette::Plain);
        terminal
    }

    /// No colour on either stream, neither quiet nor verbose: what a command prints when
    /// its output is redirected, asked without reading the environment.
    pub fn plain() -> Self {
        Terminal { stdout: Palette::Plain, stderr: Palette::Plain, quiet: false, verbose: 0 }
    }
}

/// A file's printable text and its line index, shared by every diagnostic in that file.
type IndexedSource = (Arc<str>, Arc<LineIndex>);

/// The most bytes one call of [`render_diagnostics`] writes; the diagnostics after it are
/// counted in one line instead.
pub const MAX_RENDERED_BYTES: usize = 256 * 1024;
/// The most characters of one line of a message or hint.
const MAX_MESSAGE_LINE: usize = 400;
/// The most lines of a message, and of a diagnostic's hints together.
const MAX_MESSAGE_LINES: usize = 20;

/// A message or hint from a diagnostic, escaped and bounded: each line at most
/// [`MAX_MESSAGE_LINE`] characters, at most [`MAX_MESSAGE_LINES`] lines, each cut marked.
fn bounded_text(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut shown: Vec<String> = lines
        .iter()
        .take(MAX_MESSAGE_LINES)
        .map(|line| match line.char_indices().nth(MAX_MESSAGE_LINE) {
            Some((cut, _)) => format!("{}… ({} more characters)", sanitize(&line[..cut]), line[cut..].chars().count()),
            None => sanitize(line),
        })
        .collect();
    if lines.len() > MAX_MESSAGE_LINES {
        shown.push(format!("… and {} more lines", lines.len() - MAX_MESSAGE_LINES));
    }
    shown.join("\n")
}

/// Renders diagnostics with source snippets. `text_of` returns a file's text by its
/// display path. The header line `file:line:col` is always printed so the location is
/// readable even without a snippet. Each file's text is fetched and indexed once, however
/// many diagnostics it has, and made safe to print (control bytes replaced, offsets kept)
/// before miette quotes it; messages, hints and paths are sanitized too.
///
/// Everything is bounded: a snippet shows a window of each long line around the span
/// ([`Snippet`]), a message or hint its first lines and characters, a file its first
/// diagnostics (`bound_per_file`), and all of them together at most
/// [`MAX_RENDERED_BYTES`], after which one line counts the diagnostics left out.
pub fn render_diagnostics(
    diagnostics: &[Diagnostic],
    palette: Palette,
    text_of: &dyn Fn(&str) -> Option<String>,
) -> String {
    let theme = if palette == Palette::Plain { GraphicalTheme::unicode_nocolor() } else { GraphicalTheme::unicode() };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100).with_links(false);
    let mut output = String::new();
    let bounded = acompose_driver::engine::diagnostic::bound_per_file(diagnostics.to_vec());
    let mut sources: BTreeMap<String, Option<IndexedSource>> = BTreeMap::new();
    for (index, diagnostic) in bounded.iter().enumerate() {
        if output.len() > MAX_RENDERED_BYTES {
            let rest = bounded.len() - index;
            output.push_str(&format!(
                "… and {rest} more diagnostic{} not shown: a report is cut after {} KiB\n",
                if rest == 1 { "" } else { "s" },
                MAX_RENDERED_BYTES / 1024
            ));
            break;
        }
        let source = diagnostic.file.as_deref().and_then(|file| {
            sources
                .entry(file.to_owned())
                .or_insert_with(|| {
                    text_of(file).map(|text| {
                        let safe: Arc<str> = Arc::from(snippet_safe(&text));
                        let lines = Arc::new(LineIndex::new(&safe));
                        (safe, lines)
                    })
                })
                .clone()
        });
        render_one(diagnostic, source.as_ref(), &handler, &mut output);
    }
    output
}

/// Renders one diagnostic, with its snippet when it has a span in a known file.
fn render_one(
    diagnostic: &Diagnostic,
    source: Option<&IndexedSource>,
    handler: &GraphicalReportHandler,
    output: &mut String,
) {
    let shown_file = diagnostic.file.as_deref().map(bounded_text);
    let location = match (&shown_file, diagnostic.span, source) {
        (Some(file), Some(span), Some((text, lines))) => {
            let (line, column) = lines.line_column(text, span.offset);
            format!("{file}:{line}:{column}")
        }
        (Some(file), None, _) if let Some(position) = diagnostic.position => {
            format!("{file}:{}:{}", position.line, position.column)
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
        MietteDiagnostic::new(bounded_text(&diagnostic.message)).with_code(diagnostic.code).with_severity(severity);
    if !diagnostic.hints.is_empty() {
        report = report.with_help(bounded_text(&diagnostic.hints.join("\n")));
    }
    if !location.is_empty() {
        output.push_str(&format!("{location}\n"));
    }
    let mut buffer = String::new();
    match (source, &shown_file, diagnostic.span) {
        (Some((text, lines)), Some(file), Some(span)) => {
            let snippet = Snippet::new(file, text, lines, span.offset..span.offset + span.length);
            report = report.with_label(LabeledSpan::at(snippet.span.clone(), "here"));
            let report = miette::Report::new(report).with_source_code(snippet);
            let _ = handler.render_report(&mut buffer, report.as_ref());
        }
        _ => {
            let _ = handler.render_report(&mut buffer, &report);
        }
    }
    output.push_str(&buffer);
    if !output.ends_with('\n') {
        output.push('\n');
    }
}

/// The diagnostics a terminal shows: errors only under `-q`, detail only under `-v`.
pub fn visible(diagnostics: &[Diagnostic], terminal: Terminal) -> Vec<Diagnostic> {
    diagnostics
        .iter()
        .filter(|diagnostic| !terminal.quiet || diagnostic.is_error())
        .filter(|diagnostic| terminal.verbose > 0 || diagnostic.severity != Severity::Detail)
        .cloned()
        .collect()
}

/// Prints `warning: MESSAGE` unless `--quiet` (which prints only errors).
pub fn warn(terminal: &Terminal, message: &str) {
    if !terminal.quiet {
        print_stderr(&format!("warning: {message}\n"));
    }
}

/// `N error(s), M warning(s)`.
pub fn count_summary(diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
    let warnings = diagnostics.iter().filter(|diagnostic| diagnostic.severity == Severity::Warning).count();
    let plural = |count: usize, word: &str| if count == 1 { format!("1 {word}") } else { format!("{count} {word}s") };
    format!("{}, {}", plural(errors, "error"), plural(warnings, "warning"))
}

/// Prints why a host operation stopped and returns the exit code it calls for.
pub fn report_error(error: &HostError, terminal: &Terminal) -> u8 {
    print_stderr(&error_text(error, terminal));
    exit_code(error)
}

/// Why a host operation stopped, as [`report_error`] prints it.
pub fn error_text(error: &HostError, terminal: &Terminal) -> String {
    match error {
        HostError::Diagnostics { subject, findings } => {
            let shown = visible(&findings.diagnostics, *terminal);
            let mut text = render_diagnostics(&shown, terminal.stderr, &|path| findings.text_of(path));
            text.push_str(&format!("error: {subject} ({})\n", count_summary(&findings.diagnostics)));
            text
        }
        other => format!("error: {other}\n"),
    }
}

/// `output` ended by a host error: the error as [`report_error`] prints it, and its code.
pub fn ended_by_error(mut output: CommandOutput, error: &HostError, terminal: &Terminal) -> CommandOutput {
    output.stderr(error_text(error, terminal));
    output.exit(exit_code(error))
}

/// [`ended_by_error`], or with `json` the error's diagnostics as an
/// `acompose.diagnostics.v1` document on stdout (with line and column), the subject
/// still on stderr.
pub fn ended_by_error_as(output: CommandOutput, error: &HostError, terminal: &Terminal, json: bool) -> CommandOutput {
    match error {
        HostError::Diagnostics { subject, findings } if json => {
            let mut output = output;
            output.stdout(String::from_utf8_lossy(&diagnostics_json(&findings.diagnostics, &|path| {
                findings.text_of(path)
            })));
            output.stderr(format!("error: {subject} ({})\n", count_summary(&findings.diagnostics)));
            output.exit(exit_code(error))
        }
        _ => ended_by_error(output, error, terminal),
    }
}

/// The exit code of a host error: invalid input or a failed environment.
pub fn exit_code(error: &HostError) -> u8 {
    match error.blame() {
        Blame::Input => crate::exit::INVALID,
        Blame::Environment => crate::exit::ENVIRONMENT,
    }
}

/// Prints warnings unless `--quiet`.
pub fn report_warnings(findings: &Findings, terminal: &Terminal) {
    print_stderr(&warnings_text(findings, terminal));
}

/// Warnings as [`report_warnings`] prints them: nothing under `--quiet`.
pub fn warnings_text(findings: &Findings, terminal: &Terminal) -> String {
    if findings.is_empty() || terminal.quiet {
        return String::new();
    }
    let shown = visible(&findings.diagnostics, *terminal);
    render_diagnostics(&shown, terminal.stderr, &|path| findings.text_of(path))
}

/// `error: unknown role `SLUG`; did you mean `X`? valid roles: …` for a role a flag names.
pub fn unknown_role(slug: &str, known: &[&str]) -> String {
    let suggestion = acompose_driver::engine::suggest::did_you_mean(slug, known.iter().copied())
        .map(|suggestion| format!(" {suggestion}"))
        .unwrap_or_default();
    format!("error: unknown role `{}`;{suggestion} valid roles: {}\n", sanitize(slug), known.join(", "))
}

/// A word as a POSIX shell reads it back unchanged: as it is when it holds only safe
/// characters, else in single quotes (a quote inside written `'\''`). For command lines
/// printed for a person to paste.
pub fn shell_word(word: &str) -> String {
    let safe = |character: char| character.is_ascii_alphanumeric() || "/._-+:@%=,".contains(character);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The `--stats` line.
pub fn stats_line(stats: &Stats) -> String {
    format!(
        "stats     stat'ed {}, read {}, hashed {}, written {}; queries executed {}, reused {}\n",
        stats.stated, stats.read, stats.hashed, stats.written, stats.queries_executed, stats.queries_reused
    )
}

/// The one-screen summary of a convergence.
pub fn summary(report: &Report, elapsed: Duration) -> String {
    let outcome = &report.roster;
    let mut text = format!(
        "source    {} ({} roles, {} personalities)\nartifact  {}\nfiles     {} written, {} unchanged, {} removed\n",
        report.source,
        report.roles,
        report.personalities,
        report.artifact.display(),
        outcome.written.len(),
        outcome.unchanged,
        outcome.removed.len()
    );
    if report.bundles_new + report.bundles_reused + report.bundles_pruned > 0 {
        text.push_str(&format!(
            "bundles   {} new, {} reused, {} pruned\n",
            report.bundles_new, report.bundles_reused, report.bundles_pruned
        ));
        let width = report.changed.iter().map(|(role, _)| role.len()).max().unwrap_or(0);
        for (role, id) in &report.changed {
            text.push_str(&format!("          {:<width$}  {id}\n", sanitize(role)));
        }
    }
    if !report.failed.is_empty() {
        text.push_str(&failed_lines(&report.failed));
    }
    if outcome.recovered {
        text.push_str("recovered an interrupted convergence before this one\n");
    }
    text.push_str(&format!("time      {} ms\n", elapsed.as_millis()));
    text
}

/// The summary's lines for the roles a convergence could not give a bundle: one per
/// role with the repositories it selects that are missing.
pub fn failed_lines(failed: &[acompose_driver::convergence::FailedRole]) -> String {
    let width = failed.iter().map(|failed| failed.role.len()).max().unwrap_or(0);
    let mut text = format!(
        "failed    {} of the roles got no bundle (the others are written); their launch is refused until it is fixed\n",
        failed.len()
    );
    for role in failed {
        let missing: Vec<String> = role.missing.iter().map(|path| format!("`{}`", sanitize(path))).collect();
        text.push_str(&format!("          {:<width$}  missing {}\n", sanitize(&role.role), missing.join(", ")));
    }
    text
}

/// Diagnostics as a JSON document (`acompose.diagnostics.v1`): each with its file, byte
/// offset, line and column (1-based, columns in characters) where it has them. `text_of`
/// returns a file's text by its display path.
pub fn diagnostics_json(diagnostics: &[Diagnostic], text_of: &dyn Fn(&str) -> Option<String>) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Document<'a> {
        format: &'static str,
        errors: usize,
        warnings: usize,
        diagnostics: Vec<Entry<'a>>,
    }
    #[derive(serde::Serialize)]
    struct Entry<'a> {
        severity: &'static str,
        code: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        offset: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        column: Option<usize>,
        message: &'a str,
        hints: &'a [String],
    }
    let mut texts: BTreeMap<&str, Option<(String, LineIndex)>> = BTreeMap::new();
    let mut entries = Vec::new();
    for diagnostic in diagnostics {
        let position = match (diagnostic.file.as_deref(), diagnostic.span, diagnostic.position) {
            (_, _, Some(position)) => Some((position.line, position.column)),
            (Some(file), Some(span), None) => texts
                .entry(file)
                .or_insert_with(|| {
                    text_of(file).map(|text| {
                        let lines = LineIndex::new(&text);
                        (text, lines)
                    })
                })
                .as_ref()
                .map(|(text, lines)| lines.line_column(text, span.offset)),
            _ => None,
        };
        entries.push(Entry {
            severity: if diagnostic.is_error() { "error" } else { "warning" },
            code: diagnostic.code,
            file: diagnostic.file.as_deref(),
            offset: diagnostic.span.map(|span| span.offset),
            line: position.map(|(line, _)| line),
            column: position.map(|(_, column)| column),
            message: &diagnostic.message,
            hints: &diagnostic.hints,
        });
    }
    let errors = diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).count();
    let document = Document {
        format: "acompose.diagnostics.v1",
        errors,
        warnings: diagnostics.len() - errors,
        diagnostics: entries,
    };
    acompose_driver::engine::snapshot::to_json_bytes(&document)
}

/// The warning for a path host delivery leaves to the user, with the two ways to settle
/// it: make room for the roster's file, or opt the harness out of that key.
pub fn kept_warning(kept: &acompose_driver::delivery::mounts::Kept) -> String {
    let path = sanitize(&kept.path.display().to_string());
    let harness = sanitize(&kept.harness);
    if kept.instructions {
        format!(
            "`{path}` is your own file, so the roster's document is not linked there and yours wins; to settle it, move yours aside and run `acompose` (the roster's `ROSTER.md` is linked in its place), or keep yours and set `load_points.{harness}: null` in agent-compose.yaml (the roster's skills are still delivered)"
        )
    } else {
        format!(
            "`{path}` is taken by something of yours (at it or on the way to it); it is left as it is and wins over the roster's; rename or remove yours and run `acompose`, or set `skill_load_points.{harness}: null` in agent-compose.yaml to deliver no roster skill there"
        )
    }
}
