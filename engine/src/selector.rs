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
pub(crate) struct Matcher {
    compiled: Vec<Compiled>,
}

/// One pattern, ready to match. Most selectors are a name or a name's beginning and a
/// `*`; those are matched as strings (a role's patterns are compiled again each time it
/// resolves, and compiling a glob costs more than matching thousands of names).
enum Compiled {
    /// No glob syntax: the name itself.
    Literal(String),
    /// `prefix*` with no other glob syntax: `*` matches anything without a `/`.
    Prefix(String),
    Glob(GlobMatcher),
    /// A pattern that does not compile matches nothing (the grammar reports it).
    Invalid,
}

impl Compiled {
    fn new(pattern: &str) -> Self {
        let plain = |text: &str| !text.is_empty() && !text.contains(['*', '?', '[', ']', '{', '}', '\\']);
        match pattern.strip_suffix('*') {
            None if plain(pattern) => Compiled::Literal(pattern.to_owned()),
            Some(prefix) if plain(prefix) => Compiled::Prefix(prefix.to_owned()),
            _ => compile(pattern).map_or(Compiled::Invalid, Compiled::Glob),
        }
    }

    fn is_match(&self, name: &str) -> bool {
        match self {
            Compiled::Literal(literal) => name == literal,
            Compiled::Prefix(prefix) => name.strip_prefix(prefix.as_str()).is_some_and(|rest| !rest.contains('/')),
            Compiled::Glob(glob) => glob.is_match(name),
            Compiled::Invalid => false,
        }
    }
}

impl Matcher {
    /// Compiles every pattern; one that does not compile matches nothing (the grammar
    /// reports it).
    pub fn new(patterns: &[Pattern]) -> Self {
        Matcher { compiled: patterns.iter().map(|pattern| Compiled::new(&pattern.text)).collect() }
    }

    /// Which patterns match `name`, in pattern order.
    pub fn matches(&self, name: &str) -> Vec<usize> {
        self.compiled
            .iter()
            .enumerate()
            .filter(|(_, compiled)| compiled.is_match(name))
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

    #[test]
    fn names_and_prefixes_match_as_their_globs_do() {
        let texts = [
            "machine-gpu",
            "machine-*",
            "machine",
            "*",
            "",
            "a/b",
            "a/*",
            "a*b",
            "a?",
            "a[bc]*",
            "{a,b}*",
            "a\\*",
            "a**",
            "é-*",
            ".*",
            "-",
        ];
        let names = [
            "machine-gpu",
            "machine-",
            "machine",
            "machine-gpu/x",
            "a",
            "ab",
            "a/b",
            "a/bc",
            "a*",
            "é-x",
            ".x",
            "",
            "-",
            "b",
        ];
        for text in texts {
            let glob = compile(text).ok();
            let fast = Compiled::new(text);
            for name in names {
                let expected = glob.as_ref().is_some_and(|glob| glob.is_match(name));
                assert_eq!(fast.is_match(name), expected, "pattern {text:?} against {name:?}");
            }
        }
        assert!(matches!(Compiled::new("machine-*"), Compiled::Prefix(_)));
        assert!(matches!(Compiled::new("machine-gpu"), Compiled::Literal(_)));
    }
}
