//! "Did you mean": the known name closest to a mistyped one (subcommands, harnesses,
//! role slugs, `--why` subjects, KDL nodes and properties, configuration keys), by
//! Jaro-Winkler similarity from `strsim`. Only names similar enough to be a likely typo
//! are suggested; ties keep the first candidate, so the answer is deterministic.

/// How similar a candidate must be (Jaro-Winkler, 0 to 1) to be suggested.
const THRESHOLD: f64 = 0.8;

/// The candidate most similar to `word`, when one is similar enough. An exact match is
/// not a suggestion.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lowered = word.to_lowercase();
    let mut best: Option<(f64, &'a str)> = None;
    for candidate in candidates {
        if candidate == word {
            return None;
        }
        let score = strsim::jaro_winkler(&lowered, &candidate.to_lowercase());
        if score >= THRESHOLD && best.is_none_or(|(best_score, _)| score > best_score) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// `did you mean `name`?` for the closest candidate, when there is one.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(word, candidates).map(|name| format!("did you mean `{name}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_likely_typo_gets_the_closest_name_and_a_stranger_gets_none() {
        assert_eq!(closest("reviewr", ["builder", "reviewer"]), Some("reviewer"));
        assert_eq!(closest("pronoun", ["name", "pronouns"]), Some("pronouns"));
        assert_eq!(closest("claud", ["claude", "codex", "gemini"]), Some("claude"));
        assert_eq!(closest("Builder", ["builder"]), Some("builder"));
        assert_eq!(closest("zzz", ["builder", "reviewer"]), None);
        assert_eq!(closest("builder", ["builder"]), None);
        assert_eq!(did_you_mean("projects_rot", ["projects_root"]).as_deref(), Some("did you mean `projects_root`?"));
    }
}
