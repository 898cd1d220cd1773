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

/// Patterns compiled once, to match many names.
pub struct Matcher {
    compiled: Vec<Option<GlobMatcher>>,
}

impl Matcher {
    /// Compiles every pattern; one that does not compile matches nothing (the grammar
    /// reports it).
    pub fn new(patterns: &[Pattern]) -> Self {
        Matcher { compiled: patterns.iter().map(|pattern| compile(&pattern.text).ok()).collect() }
    }

    /// Which patterns match `name`, in pattern order.
    pub fn matches(&self, name: &str) -> Vec<usize> {
        self.compiled
            .iter()
            .enumerate()
            .filter(|(_, matcher)| matcher.as_ref().is_some_and(|matcher| matcher.is_match(name)))
            .map(|(index, _)| index)
            .collect()
    }
}

/// Which patterns match a name, in pattern order (compiles them; use [`Matcher`] for
/// many names).
pub fn matches(patterns: &[Pattern], name: &str) -> Vec<usize> {
    Matcher::new(patterns).matches(name)
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
