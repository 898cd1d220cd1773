//! What looks like a credential: a token with a known issuer's prefix, a bearer or basic
//! authorization value, a URL with a password, or a long run of characters with the
//! spread of random ones. Errs towards refusing: a user rewrites a false alarm as an
//! environment variable reference, while a missed token would be copied into every
//! harness's configuration.

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

/// The shortest run of token characters judged by its spread alone.
const LONG_RUN: usize = 32;
/// Bits per character above which a long run is taken for random.
const RANDOM_BITS: f64 = 3.5;

/// The 1-based lines of `text` holding a value that looks like a secret.
pub(super) fn lines_with_secrets(text: &str) -> Vec<usize> {
    text.lines().enumerate().filter(|(_, line)| line_has_secret(line)).map(|(index, _)| index + 1).collect()
}

fn line_has_secret(line: &str) -> bool {
    let lowered = line.to_ascii_lowercase();
    if lowered.contains("bearer ") || lowered.contains("basic ") && lowered.contains("authorization") {
        return true;
    }
    if url_with_password(line) {
        return true;
    }
    line.split(|character: char| !is_token_character(character)).any(looks_like_secret)
}

/// Whether one run of token characters looks like a credential.
pub fn looks_like_secret(run: &str) -> bool {
    if run.len() >= 16 && PREFIXES.iter().any(|prefix| run.starts_with(prefix)) {
        return true;
    }
    run.len() >= LONG_RUN
        && run.chars().any(|character| character.is_ascii_digit())
        && run.chars().any(|character| character.is_ascii_alphabetic())
        && bits_per_character(run) >= RANDOM_BITS
}

/// Characters tokens are made of: path separators, dots, spaces and quotes end a run.
fn is_token_character(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '_' | '-' | '+' | '=')
}

/// `scheme://user:password@host`.
fn url_with_password(line: &str) -> bool {
    line.match_indices("://").any(|(at, _)| {
        let rest = &line[at + 3..];
        let authority = rest.split(['/', '"', ' ', '?', '#']).next().unwrap_or("");
        authority.split_once('@').is_some_and(|(credentials, _)| credentials.contains(':'))
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
}
