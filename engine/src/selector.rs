//! Selectors: globs over skill names (`skill "machine-*"`) that bound what a provider
//! contributes. Owns matching and its rules; reads no files.

use globset::{Glob, GlobBuilder, GlobMatcher};

use crate::diagnostic::Span;

/// One pattern as written, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    pub text: String,
    pub span: Span,
}

/// Compiles a pattern; `*` never crosses `/`.
pub fn compile(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(true).build().map(|glob: Glob| glob.compile_matcher())
}

/// Which patterns match each name, in pattern order.
pub fn matches(patterns: &[Pattern], name: &str) -> Vec<usize> {
    patterns
        .iter()
        .enumerate()
        .filter(|(_, pattern)| compile(&pattern.text).is_ok_and(|matcher| matcher.is_match(name)))
        .map(|(index, _)| index)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Pattern {
        Pattern { text: text.to_owned(), span: Span::new(0, 0) }
    }

    #[test]
    fn globs_match_names() {
        let patterns = [pattern("compute-stack"), pattern("machine-*"), pattern("*")];
        assert_eq!(matches(&patterns, "machine-gpu"), [1, 2]);
        assert_eq!(matches(&patterns, "compute-stack"), [0, 2]);
        assert_eq!(matches(&patterns[..2], "other"), Vec::<usize>::new());
        assert!(compile("[").is_err());
    }
}
