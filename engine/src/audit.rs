//! The content audit every delivered text goes through (skills and their files, role
//! skills, methods and personality skills, instruction files, private overlays, the MCP
//! inventory): invisible and deceptive characters, names made of look-alike letters,
//! values that look like secrets (the one detector, `crate::secret`) and what a harness
//! would run without asking. Owns the kinds, the policy (`audit_policy` in the host
//! configuration: refuse or warn, per kind) and the diagnostics, which name a file, a line
//! and a column and never the hidden text or the secret. Does not decide what a refusal
//! does to a composition: `compose` keeps a refused catalogue skill or instruction out,
//! and fails on a refused text of the user's own. The per-file query is
//! `file_queries::file_audit`.

use crate::diagnostic::{Diagnostic, Position, Severity};
use crate::secret::{Reading, secret_in_line};

/// The most findings kept for one file; the rest are dropped (the first already decide).
const MAX_FINDINGS: usize = 200;

/// What the audit looks for. The order is the order of the policy's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuditKind {
    /// Unicode tag characters (U+E0000–U+E007F): invisible, and read by every model.
    TagCharacters,
    /// Bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069).
    BidiControls,
    /// Zero-width and other invisible characters outside an emoji sequence or a script
    /// that joins with them.
    ZeroWidth,
    /// A skill name whose non-ASCII letters only look like ASCII ones.
    ConfusableNames,
    /// A value that looks like a credential.
    Secrets,
    /// What a harness runs without asking: a skill granting unrestricted shell, or a
    /// command the harness runs while loading the text.
    UnattendedExecution,
}

/// What a finding of one kind does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditAction {
    /// Kept out: a catalogue skill or instruction is not delivered, and a text of the
    /// user's own fails the composition.
    Refuse,
    /// Delivered, with a warning.
    Warn,
}

impl AuditAction {
    pub fn from_name(name: &str) -> Option<AuditAction> {
        match name {
            "refuse" => Some(AuditAction::Refuse),
            "warn" => Some(AuditAction::Warn),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AuditAction::Refuse => "refuse",
            AuditAction::Warn => "warn",
        }
    }
}

impl AuditKind {
    pub const ALL: [AuditKind; 6] = [
        AuditKind::TagCharacters,
        AuditKind::BidiControls,
        AuditKind::ZeroWidth,
        AuditKind::ConfusableNames,
        AuditKind::Secrets,
        AuditKind::UnattendedExecution,
    ];

    /// The kind's key in `audit_policy`.
    pub fn name(self) -> &'static str {
        match self {
            AuditKind::TagCharacters => "tag-characters",
            AuditKind::BidiControls => "bidi-controls",
            AuditKind::ZeroWidth => "zero-width",
            AuditKind::ConfusableNames => "confusable-names",
            AuditKind::Secrets => "secrets",
            AuditKind::UnattendedExecution => "unattended-execution",
        }
    }

    pub fn from_name(name: &str) -> Option<AuditKind> {
        AuditKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The diagnostic code of the kind's findings.
    pub fn code(self) -> &'static str {
        match self {
            AuditKind::TagCharacters => "audit-tag-characters",
            AuditKind::BidiControls => "audit-bidi-controls",
            AuditKind::ZeroWidth => "audit-zero-width",
            AuditKind::ConfusableNames => "audit-confusable-name",
            AuditKind::Secrets => "audit-secret",
            AuditKind::UnattendedExecution => "audit-unattended-execution",
        }
    }

    /// What a finding of the kind is, for a message; `count` characters of it.
    pub fn description_of(self, count: usize) -> &'static str {
        match (self, count) {
            (AuditKind::TagCharacters, 1) => "invisible Unicode tag character",
            (AuditKind::BidiControls, 1) => "bidirectional control character, which reorders the text on screen",
            (AuditKind::ZeroWidth, 1) => "zero-width or invisible character",
            _ => self.description(),
        }
    }

    /// What a finding of the kind is, for a message.
    pub fn description(self) -> &'static str {
        match self {
            AuditKind::TagCharacters => "invisible Unicode tag characters",
            AuditKind::BidiControls => "bidirectional control characters, which reorder the text on screen",
            AuditKind::ZeroWidth => "zero-width or invisible characters",
            AuditKind::ConfusableNames => "a name whose letters only look like ASCII letters",
            AuditKind::Secrets => "a value that looks like a secret",
            AuditKind::UnattendedExecution => "a command a harness would run without asking",
        }
    }

    /// What the kind does when the configuration says nothing: hidden text and secrets
    /// are refused (fail closed), the rest warned about.
    pub fn default_action(self) -> AuditAction {
        match self {
            AuditKind::TagCharacters | AuditKind::BidiControls | AuditKind::Secrets => AuditAction::Refuse,
            AuditKind::ZeroWidth | AuditKind::ConfusableNames | AuditKind::UnattendedExecution => AuditAction::Warn,
        }
    }

    fn index(self) -> usize {
        AuditKind::ALL.iter().position(|kind| *kind == self).unwrap_or_default()
    }
}

/// The host's `audit_policy`: an action per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuditPolicy {
    actions: [AuditAction; 6],
}

impl Default for AuditPolicy {
    fn default() -> Self {
        AuditPolicy { actions: AuditKind::ALL.map(AuditKind::default_action) }
    }
}

impl AuditPolicy {
    pub fn action(&self, kind: AuditKind) -> AuditAction {
        self.actions[kind.index()]
    }

    pub fn set(&mut self, kind: AuditKind, action: AuditAction) {
        self.actions[kind.index()] = action;
    }

    /// Whether any of `findings` is refused.
    pub fn refuses(&self, findings: &[AuditFinding]) -> bool {
        findings.iter().any(|finding| self.action(finding.kind) == AuditAction::Refuse)
    }
}

/// One finding: a run of characters of one kind on one line (or one value), where it
/// starts (1-based; columns count characters) and how many characters it holds. Holds
/// nothing of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuditFinding {
    pub kind: AuditKind,
    pub line: usize,
    pub column: usize,
    pub count: usize,
}

impl AuditFinding {
    /// What was found, without the text: `52 invisible Unicode tag characters`.
    pub fn what(&self) -> String {
        match self.kind {
            AuditKind::TagCharacters | AuditKind::BidiControls | AuditKind::ZeroWidth => {
                format!("{} {}", self.count, self.kind.description_of(self.count))
            }
            _ => self.kind.description().to_owned(),
        }
    }

    /// `line 3, column 1`.
    pub fn place(&self) -> String {
        format!("line {}, column {}", self.line, self.column)
    }
}

/// Which kind of hidden character `character` is, if any.
fn hidden_kind(character: char) -> Option<AuditKind> {
    match character {
        '\u{E0000}'..='\u{E007F}' => Some(AuditKind::TagCharacters),
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => Some(AuditKind::BidiControls),
        '\u{200B}'..='\u{200F}'
        | '\u{2060}'..='\u{2064}'
        | '\u{FEFF}'
        | '\u{180E}'
        | '\u{061C}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{3164}'
        | '\u{FFA0}' => Some(AuditKind::ZeroWidth),
        _ => None,
    }
}

/// Whether a character is a pictograph, or a modifier or selector inside an emoji.
fn is_emoji_part(character: char) -> bool {
    matches!(
        character,
        '\u{00A9}' | '\u{00AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}'
            | '\u{2194}'..='\u{21AA}'
            | '\u{231A}'..='\u{23FF}'
            | '\u{24C2}'
            | '\u{25AA}'..='\u{27BF}'
            | '\u{2934}'..='\u{2935}'
            | '\u{2B05}'..='\u{2B55}'
            | '\u{3030}' | '\u{303D}' | '\u{3297}' | '\u{3299}'
            | '\u{FE0F}'
            | '\u{1F000}'..='\u{1FAFF}'
    )
}

/// Whether an invisible character at `index` of `line` is one a text legitimately holds:
/// a zero-width joiner between two emoji (a family, a profession), a joiner or
/// non-joiner between two letters of a script that uses them, a byte order mark opening
/// the file.
fn legitimate(line: &[char], index: usize, first_line: bool) -> bool {
    let character = line[index];
    let before = index.checked_sub(1).map(|at| line[at]);
    let after = line.get(index + 1).copied();
    match character {
        '\u{FEFF}' => first_line && index == 0,
        '\u{200D}' if before.is_some_and(is_emoji_part) && after.is_some_and(is_emoji_part) => true,
        '\u{200C}' | '\u{200D}' => {
            let letter = |character: Option<char>| character.is_some_and(|c| c.is_alphabetic() && !c.is_ascii());
            letter(before) && (letter(after) || after.is_some_and(|c| matches!(c, '\u{0300}'..='\u{036F}')))
        }
        _ => false,
    }
}

/// The length of an emoji subdivision flag starting at `index` (U+1F3F4, tag letters or
/// digits, U+E007F), or 0.
fn flag_sequence(line: &[char], index: usize) -> usize {
    if line[index] != '\u{1F3F4}' {
        return 0;
    }
    let tags = line[index + 1..].iter().take_while(|c| matches!(**c, '\u{E0020}'..='\u{E007E}')).count();
    match line.get(index + 1 + tags) {
        Some('\u{E007F}') if (1..=30).contains(&tags) => tags + 2,
        _ => 0,
    }
}

/// Audits one text: hidden characters on every line, values that look like secrets, and
/// for a skill's entry file (`entry`) its name and what it would have a harness run.
pub fn audit_text(text: &str, entry: bool) -> Vec<AuditFinding> {
    let mut findings = Vec::new();
    let mut frontmatter = entry && text.trim_start_matches('\u{FEFF}').starts_with("---");
    for (index, line) in text.lines().enumerate() {
        if findings.len() >= MAX_FINDINGS {
            break;
        }
        let number = index + 1;
        hidden_characters(line, number, &mut findings);
        if let Some(offset) = secret_in_line(line, Reading::Prose) {
            findings.push(finding(AuditKind::Secrets, number, column_of(line, offset), 1));
        }
        if entry {
            if frontmatter && index > 0 && line.trim_end() == "---" {
                frontmatter = false;
            } else if frontmatter {
                frontmatter_line(line, number, &mut findings);
            }
            if let Some(offset) = line.find("!`") {
                findings.push(finding(AuditKind::UnattendedExecution, number, column_of(line, offset), 1));
            }
        }
    }
    findings.truncate(MAX_FINDINGS);
    findings
}

/// Audits bytes: a binary file (NUL bytes, or not UTF-8) holds no text a model reads as
/// such and is not audited.
pub fn audit_bytes(bytes: &[u8], entry: bool) -> Vec<AuditFinding> {
    if bytes.contains(&0) {
        return Vec::new();
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => audit_text(text, entry),
        Err(_) => Vec::new(),
    }
}

fn finding(kind: AuditKind, line: usize, column: usize, count: usize) -> AuditFinding {
    AuditFinding { kind, line, column, count }
}

fn column_of(line: &str, offset: usize) -> usize {
    line[..offset].chars().count() + 1
}

/// Records each run of hidden characters of one kind on a line as one finding.
fn hidden_characters(line: &str, number: usize, findings: &mut Vec<AuditFinding>) {
    // Most lines are ASCII: nothing to look at.
    if line.is_ascii() {
        return;
    }
    let characters: Vec<char> = line.chars().collect();
    let mut index = 0;
    let mut open: Option<AuditFinding> = None;
    while index < characters.len() {
        let flag = flag_sequence(&characters, index);
        if flag > 0 {
            index += flag;
            continue;
        }
        let kind = hidden_kind(characters[index]).filter(|_| !legitimate(&characters, index, number == 1));
        match (kind, open.as_mut()) {
            (Some(kind), Some(run)) if run.kind == kind && run.column + run.count == index + 1 => run.count += 1,
            (Some(kind), _) => {
                findings.extend(open.take());
                open = Some(finding(kind, number, index + 1, 1));
            }
            (None, _) => findings.extend(open.take()),
        }
        index += 1;
    }
    findings.extend(open);
}

/// A frontmatter line of a skill's entry file: a `name` of look-alike letters, or
/// `allowed-tools` granting the shell unrestricted.
fn frontmatter_line(line: &str, number: usize, findings: &mut Vec<AuditFinding>) {
    if let Some(value) = line.strip_prefix("name:") {
        let name = value.trim().trim_matches(['"', '\'']);
        if confusable(name) {
            let offset = line.len() - value.trim_start().len();
            findings.push(finding(AuditKind::ConfusableNames, number, column_of(line, offset), 1));
        }
    }
    if let Some(value) = line.strip_prefix("allowed-tools:") {
        let unrestricted = value
            .split([',', ' ', '[', ']', '"', '\''])
            .any(|tool| matches!(tool.trim(), "Bash" | "Bash(*)" | "Bash(*:*)" | "Bash(:*)"));
        if unrestricted {
            let offset = line.len() - value.trim_start().len();
            findings.push(finding(AuditKind::UnattendedExecution, number, column_of(line, offset), 1));
        }
    }
}

/// Cyrillic and Greek letters that look like ASCII ones, with the ASCII letter.
const LOOK_ALIKES: &[(char, char)] = &[
    ('а', 'a'),
    ('е', 'e'),
    ('о', 'o'),
    ('р', 'p'),
    ('с', 'c'),
    ('у', 'y'),
    ('х', 'x'),
    ('і', 'i'),
    ('ј', 'j'),
    ('ѕ', 's'),
    ('ԁ', 'd'),
    ('һ', 'h'),
    ('ԛ', 'q'),
    ('ԝ', 'w'),
    ('ο', 'o'),
    ('α', 'a'),
    ('ν', 'v'),
    ('ι', 'i'),
    ('κ', 'k'),
    ('τ', 't'),
    ('ρ', 'p'),
    ('ɡ', 'g'),
    ('ı', 'i'),
    ('ℓ', 'l'),
];

/// Whether a name holds non-ASCII letters and every one of them looks like an ASCII
/// letter: a name dressed as another.
pub fn confusable(name: &str) -> bool {
    !name.is_ascii()
        && name
            .chars()
            .all(|character| character.is_ascii() || LOOK_ALIKES.iter().any(|(alike, _)| *alike == character))
}

/// Whether a path names a skill's entry file.
pub fn is_entry(relative: &str) -> bool {
    matches!(relative.rsplit('/').next(), Some("SKILL.md" | "COMPOSED.md"))
}

/// A finding as a diagnostic of `file`: its place as a position (so no renderer shows the
/// line), the action the policy takes and what `refused` means for this text.
pub fn diagnostic(finding: &AuditFinding, file: &str, action: AuditAction, consequence: &str) -> Diagnostic {
    let verdict = match action {
        AuditAction::Refuse => format!("refused: {consequence}"),
        AuditAction::Warn => "delivered with this warning".to_owned(),
    };
    let message = format!("{} at {} (not shown); {verdict}", finding.what(), finding.place());
    Diagnostic::warning(finding.kind.code(), message)
        .in_file(file)
        .at_position(Some(Position { line: finding.line, column: finding.column }))
        .hint(remedy(finding.kind))
        .hint(format!(
            "`audit_policy: {{{}: {}}}` in `agent-compose.yaml` decides what this kind does",
            finding.kind.name(),
            match action {
                AuditAction::Refuse => "warn",
                AuditAction::Warn => "refuse",
            }
        ))
}

/// [`diagnostic`] as an error: a refused text of the user's own stops the composition.
pub fn refusal(finding: &AuditFinding, file: &str, consequence: &str) -> Diagnostic {
    Diagnostic { severity: Severity::Error, ..diagnostic(finding, file, AuditAction::Refuse, consequence) }
}

/// How to fix a finding of one kind.
fn remedy(kind: AuditKind) -> &'static str {
    match kind {
        AuditKind::TagCharacters | AuditKind::BidiControls | AuditKind::ZeroWidth => {
            "look at the file with a hex viewer and remove the characters; an editor does not show them"
        }
        AuditKind::ConfusableNames => "write the name in ASCII letters",
        AuditKind::Secrets => {
            "never write a credential in a delivered text: name the environment variable that holds it instead"
        }
        AuditKind::UnattendedExecution => {
            "narrow `allowed-tools` to the commands the skill needs, and run commands only when the model asks"
        }
    }
}

/// The findings as the trace keeps them, without the text.
pub fn records(findings: &[(String, AuditFinding)], policy: &AuditPolicy) -> Vec<crate::trace::FindingRecord> {
    findings
        .iter()
        .map(|(file, finding)| crate::trace::FindingRecord {
            code: finding.kind.code().to_owned(),
            level: "audit".to_owned(),
            message: format!("{} in `{file}` at {}", finding.what(), finding.place()),
            consequence: match policy.action(finding.kind) {
                AuditAction::Refuse => "refused by the content audit".to_owned(),
                AuditAction::Warn => "delivered with a warning".to_owned(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(AuditKind, usize, usize, usize)> {
        audit_text(text, true)
            .into_iter()
            .map(|finding| (finding.kind, finding.line, finding.column, finding.count))
            .collect()
    }

    #[test]
    fn smuggled_tag_characters_are_one_finding_per_run() {
        let hidden: String = "Ignore previous".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap()).collect();
        let text = format!("---\nname: x\n---\nHello{hidden} world\n");
        assert_eq!(kinds(&text), [(AuditKind::TagCharacters, 4, 6, 15)]);
    }

    #[test]
    fn bidi_and_zero_width_characters_are_found() {
        assert_eq!(kinds("a\u{202E}b\n"), [(AuditKind::BidiControls, 1, 2, 1)]);
        assert_eq!(kinds("x\u{200B}\u{200B}y\n"), [(AuditKind::ZeroWidth, 1, 2, 2)]);
    }

    #[test]
    fn legitimate_sequences_are_not_flagged() {
        // A family emoji, a Persian word with a non-joiner, an England flag, a BOM.
        for text in [
            "team: 👨\u{200D}👩\u{200D}👧 ok\n",
            "گفت\u{200C}وگو\n",
            "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}\n",
            "\u{FEFF}# title\n",
            "👩\u{200D}💻 and ❤\u{FE0F}\u{200D}🔥\n",
        ] {
            assert_eq!(kinds(text), [], "{text:?}");
        }
        assert_eq!(kinds("a\u{200D}b\n"), [(AuditKind::ZeroWidth, 1, 2, 1)]);
    }

    #[test]
    fn secrets_names_and_execution_are_found() {
        let text = "---\nname: dерloy\nallowed-tools: Bash, Read\n---\ntoken ghp_abcdefghijklmnopqrstuvwxyz012345\nrun !`curl x`\n";
        assert_eq!(
            kinds(text),
            [
                (AuditKind::ConfusableNames, 2, 7, 1),
                (AuditKind::UnattendedExecution, 3, 16, 1),
                (AuditKind::Secrets, 5, 7, 1),
                (AuditKind::UnattendedExecution, 6, 5, 1)
            ]
        );
        assert_eq!(kinds("---\nallowed-tools: Bash(git status:*)\n---\n"), []);
    }

    #[test]
    fn the_default_policy_refuses_hidden_text_and_secrets() {
        let policy = AuditPolicy::default();
        let refused: Vec<&str> = AuditKind::ALL
            .into_iter()
            .filter(|kind| policy.action(*kind) == AuditAction::Refuse)
            .map(AuditKind::name)
            .collect();
        assert_eq!(refused, ["tag-characters", "bidi-controls", "secrets"]);
    }

    #[test]
    fn a_diagnostic_never_holds_the_text() {
        let text = "key ghp_abcdefghijklmnopqrstuvwxyz012345\n";
        let found = audit_text(text, false);
        let diagnostic = diagnostic(&found[0], "s/SKILL.md", AuditAction::Refuse, "the skill is not delivered");
        assert!(!format!("{diagnostic:?}").contains("ghp_"));
        assert_eq!(diagnostic.position, Some(Position { line: 1, column: 5 }));
    }
}
