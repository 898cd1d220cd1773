//! What looks like a credential: a token with a known issuer's prefix, a bearer or basic
//! authorization value, a URL with a password, or a long run of characters with the
//! spread of random ones. The one detector: the MCP inventory (`mcp.kdl`) and the
//! content audit of every delivered text (`crate::audit`) both ask it. Errs towards
//! refusing: a user rewrites a false alarm as an environment variable reference, while a
//! missed token would be copied into every harness's configuration.
//!
//! It reads a line in one of two ways. A configuration line (`mcp.kdl`) holds values
//! only, so any authorization header and any long random run is taken for a secret.
//! Prose (a skill, an instruction, an overlay's text) talks about credentials: there an
//! authorization header or a URL's password counts only when the value itself looks
//! real (long, with letters and digits, not a `$VARIABLE` or `<placeholder>`), and runs
//! of hexadecimal digits (digests, commit ids, UUIDs) and base64 payloads with their
//! declared kind (`data:…;base64,`, `sha512-…`) are not taken for secrets.

/// Prefixes issuers put on their tokens (GitHub, GitLab, Slack, OpenAI, Anthropic,
/// Google, AWS, Stripe, npm, Hugging Face).
const PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "sk-",
    "sk_live_",
    "rk_live_",
    "AIza",
    "AKIA",
    "ASIA",
    "npm_",
    "hf_",
];

/// Integrity prefixes of subresource and lockfile digests: base64 with its kind named.
const DIGEST_PREFIXES: &[&str] = &["sha1-", "sha256-", "sha384-", "sha512-"];

/// The shortest run of token characters judged by its spread alone.
const LONG_RUN: usize = 32;
/// Bits per character above which a long run is taken for random.
const RANDOM_BITS: f64 = 3.5;
/// The shortest authorization value or URL password prose is judged to hold for real.
const PROSE_VALUE: usize = 8;

/// How a line is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A configuration file: every value is a value.
    Configuration,
    /// Text a model reads: credentials are talked about, and digests are quoted.
    Prose,
}

/// The 1-based lines of `text` holding a value that looks like a secret, read as a
/// configuration.
pub(crate) fn lines_with_secrets(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| secret_in_line(line, Reading::Configuration).is_some())
        .map(|(index, _)| index + 1)
        .collect()
}

/// The byte offset in `line` where the first value that looks like a secret starts.
pub fn secret_in_line(line: &str, reading: Reading) -> Option<usize> {
    // Prose is most of what is read: a line without a run of token characters as long as
    // the shortest value prose is judged to hold cannot hold a secret, and costs one pass.
    if reading == Reading::Prose && !worth_reading(line) {
        return None;
    }
    [authorization(line, reading), url_with_password(line, reading), token_run(line, reading)]
        .into_iter()
        .flatten()
        .min()
}

/// Whether a prose line can hold a secret at all: a run of 16 token characters (an
/// issued token or a random run), or one of 8 with an authorization header or a URL.
fn worth_reading(line: &str) -> bool {
    has_run_of(line, 16)
        || has_run_of(line, PROSE_VALUE)
            && (line.contains("://")
                || contains_ignoring_case(line, b"bearer ")
                || contains_ignoring_case(line, b"basic "))
}

fn contains_ignoring_case(line: &str, word: &[u8]) -> bool {
    line.as_bytes().windows(word.len()).any(|window| window.eq_ignore_ascii_case(word))
}

/// Whether `line` has `length` token characters in a row.
fn has_run_of(line: &str, length: usize) -> bool {
    let mut run = 0;
    for byte in line.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'+' | b'=' | b'.') {
            run += 1;
            if run >= length {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// Whether one run of token characters looks like a credential.
pub fn looks_like_secret(run: &str) -> bool {
    issued_token(run) || random_run(run)
}

fn issued_token(run: &str) -> bool {
    run.len() >= 16 && PREFIXES.iter().any(|prefix| run.starts_with(prefix))
}

fn random_run(run: &str) -> bool {
    run.len() >= LONG_RUN
        && run.chars().any(|character| character.is_ascii_digit())
        && run.chars().any(|character| character.is_ascii_alphabetic())
        && bits_per_character(run) >= RANDOM_BITS
}

/// Characters tokens are made of: path separators, dots, spaces and quotes end a run.
fn is_token_character(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '_' | '-' | '+' | '=')
}

/// The runs of token characters of a line, with their byte offsets.
fn runs(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    let mut found = Vec::new();
    for (offset, character) in line.char_indices().chain(std::iter::once((line.len(), ' '))) {
        match (is_token_character(character), start) {
            (true, None) => start = Some(offset),
            (false, Some(begin)) => {
                found.push((begin, &line[begin..offset]));
                start = None;
            }
            _ => {}
        }
    }
    found.into_iter()
}

/// The first token run that looks like a credential.
fn token_run(line: &str, reading: Reading) -> Option<usize> {
    let payload = reading == Reading::Prose && line.contains(";base64,");
    runs(line)
        .find(|(_, run)| match reading {
            Reading::Configuration => looks_like_secret(run),
            Reading::Prose => {
                issued_token(run)
                    || (!payload
                        && random_run(run)
                        && !run.chars().all(|character| character.is_ascii_hexdigit() || character == '-')
                        && !DIGEST_PREFIXES.iter().any(|prefix| run.starts_with(prefix)))
            }
        })
        .map(|(offset, _)| offset)
}

/// `Authorization: Bearer …` or `Basic …`: in a configuration, wherever written; in
/// prose, only with a value that looks real after it.
fn authorization(line: &str, reading: Reading) -> Option<usize> {
    let lowered = line.to_ascii_lowercase();
    let basic = lowered.contains("authorization");
    let at = lowered
        .match_indices("bearer ")
        .chain(lowered.match_indices("basic ").filter(|_| basic))
        .map(|(at, word)| (at, at + word.len()));
    for (at, value_start) in at {
        match reading {
            Reading::Configuration => return Some(at),
            Reading::Prose => {
                let value: String = line[value_start..]
                    .chars()
                    .take_while(|character| is_token_character(*character) || *character == '.')
                    .collect();
                if real_value(&value) {
                    return Some(value_start);
                }
            }
        }
    }
    None
}

/// A value prose holds for real: long enough, with letters and digits.
fn real_value(value: &str) -> bool {
    value.len() >= PROSE_VALUE
        && value.chars().any(|character| character.is_ascii_digit())
        && value.chars().any(|character| character.is_ascii_alphabetic())
}

/// `scheme://user:password@host`; in prose, only with a password that looks real.
fn url_with_password(line: &str, reading: Reading) -> Option<usize> {
    line.match_indices("://").find_map(|(at, _)| {
        let rest = &line[at + 3..];
        let authority = rest.split(['/', '"', ' ', '?', '#', '`', '\'', ')', '>']).next().unwrap_or("");
        let (credentials, _) = authority.rsplit_once('@')?;
        let (_, password) = credentials.split_once(':')?;
        let found = match reading {
            Reading::Configuration => true,
            Reading::Prose => real_value(password) && !password.starts_with(['$', '<', '{', '%']),
        };
        found.then_some(at + 3)
    })
}

/// The Shannon entropy of the run's characters.
fn bits_per_character(run: &str) -> f64 {
    let mut counts = std::collections::BTreeMap::<char, usize>::new();
    for character in run.chars() {
        *counts.entry(character).or_default() += 1;
    }
    let length = run.chars().count() as f64;
    counts
        .values()
        .map(|&count| {
            let share = count as f64 / length;
            -share * share.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_caught_and_ordinary_values_are_not() {
        for secret in [
            "ghp_abcdefghijklmnopqrstuvwxyz012345",
            "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "Zx9fK2mQ7pL4vR8tW1yB6nC3dH5jG0sA",
        ] {
            assert!(looks_like_secret(secret), "{secret}");
        }
        for ordinary in ["npx", "server-filesystem", "modelcontextprotocol", "GITHUB_PERSONAL_ACCESS_TOKEN", "sk-1"] {
            assert!(!looks_like_secret(ordinary), "{ordinary}");
        }
        assert_eq!(
            lines_with_secrets(
                "url \"https://user:pw@example.com/mcp\"\nurl \"https://example.com/mcp\"\nheader \"Authorization: Bearer x\"\n"
            ),
            [1, 3]
        );
    }

    #[test]
    fn prose_names_where_a_secret_starts() {
        let line = "set the token to ghp_abcdefghijklmnopqrstuvwxyz012345 first";
        assert_eq!(secret_in_line(line, Reading::Prose), Some(17));
        assert_eq!(secret_in_line("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1.x'", Reading::Prose), Some(31));
        assert_eq!(secret_in_line("psql postgres://admin:s3cretPassw0rd@db/app", Reading::Prose), Some(16));
    }

    #[test]
    fn prose_talking_about_credentials_is_not_a_secret() {
        for line in [
            "send `Authorization: Bearer $TOKEN` with every request",
            "use a bearer token from the vault",
            "connect to postgres://user:password@localhost/app",
            "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a fixed it",
            "id 123e4567-e89b-12d3-a456-426614174000",
            "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk)",
            "integrity sha512-Zx9fK2mQ7pL4vR8tW1yB6nC3dH5jG0sAZx9fK2mQ7pL4vR8tW1yB6nC3dH5jG0sA",
        ] {
            assert_eq!(secret_in_line(line, Reading::Prose), None, "{line}");
        }
    }
}
