//! Small helpers that read typed values out of KDL nodes and report grammar mistakes
//! (unknown nodes, duplicates, argument counts, property names) as diagnostics.

use std::collections::BTreeMap;

use crate::diagnostic::{Diagnostic, Span, sanitize};
use crate::syntax::{Node, Value};

/// Whether a property must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    Required,
    Optional,
}

/// Collects diagnostics for one file while its nodes are read.
pub(crate) struct Reader<'a> {
    pub path: &'a str,
    pub diagnostics: Vec<Diagnostic>,
    /// Properties reported as misspellings, by the node they were on (its name's span)
    /// and the property they most likely meant: that property is not reported missing too.
    misspelled: Vec<(Span, String)>,
}

impl<'a> Reader<'a> {
    pub fn new(path: &'a str) -> Self {
        Self { path, diagnostics: Vec::new(), misspelled: Vec::new() }
    }

    pub fn report(&mut self, code: &'static str, span: Span, message: impl Into<String>, hint: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(code, message).in_file(self.path).at(Some(span)).hint(hint));
    }

    /// Checks the number of positional arguments; reports and returns false when wrong.
    pub(crate) fn argument_count(&mut self, node: &Node, minimum: usize, maximum: Option<usize>) -> bool {
        let count = node.arguments.len();
        let too_few = count < minimum;
        let too_many = maximum.is_some_and(|maximum| count > maximum);
        if !(too_few || too_many) {
            return true;
        }
        let expected = match maximum {
            Some(maximum) if maximum == minimum => format!("{minimum}"),
            Some(maximum) => format!("{minimum} to {maximum}"),
            None => format!("at least {minimum}"),
        };
        let span = if too_many {
            node.arguments.get(maximum.unwrap_or(0)).map_or(node.name_span, |argument| argument.span)
        } else {
            node.name_span
        };
        self.report(
            "argument-count",
            span,
            format!("`{}` takes {expected} argument(s), found {count}", node.name),
            format!("write `{}` with {expected} quoted argument(s)", node.name),
        );
        false
    }

    /// The string arguments of a node; non-strings are reported and skipped.
    pub(crate) fn string_arguments(&mut self, node: &Node) -> Vec<(String, Span)> {
        let mut values = Vec::new();
        for argument in &node.arguments {
            match &argument.value {
                Value::String(text) => values.push((text.clone(), argument.span)),
                other => self.report(
                    "argument-type",
                    argument.span,
                    format!("`{}` expects a string argument, found a {}", node.name, other.kind_name()),
                    "quote the value",
                ),
            }
        }
        values
    }

    /// The first argument as a string, after checking the node takes exactly one.
    pub(crate) fn single_string(&mut self, node: &Node) -> Option<(String, Span)> {
        if !self.argument_count(node, 1, Some(1)) {
            return None;
        }
        self.string_arguments(node).into_iter().next()
    }

    /// Reports properties outside `allowed` and repeated properties.
    pub(crate) fn allowed_properties(&mut self, node: &Node, allowed: &[&str]) {
        let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
        for property in &node.properties {
            if !allowed.contains(&property.name.as_str()) {
                let unwritten = allowed.iter().copied().filter(|name| node.property(name).is_none());
                let expected = match crate::suggest::closest(&property.name, unwritten) {
                    Some(meant) => {
                        self.misspelled.push((node.name_span, meant.to_owned()));
                        format!("did you mean `{meant}`? `{}` accepts {}", node.name, quoted_list(allowed))
                    }
                    None if allowed.is_empty() => format!("`{}` takes no properties", node.name),
                    None => format!("`{}` accepts {}", node.name, quoted_list(allowed)),
                };
                self.report(
                    "unknown-property",
                    property.span,
                    format!("unknown property `{}` on `{}`", sanitize(&property.name), node.name),
                    expected,
                );
            } else if seen.insert(&property.name, property.span).is_some() {
                self.report(
                    "duplicate-property",
                    property.span,
                    format!("property `{}` is given twice", property.name),
                    "keep one of them",
                );
            }
        }
    }

    /// A string property that must be there: reports a wrong type and its absence.
    pub(crate) fn required_string_property(&mut self, node: &Node, name: &str) -> Option<(String, Span)> {
        self.string_property(node, name, Presence::Required)
    }

    /// A string property that may be left out: reports only a wrong type.
    pub(crate) fn optional_string_property(&mut self, node: &Node, name: &str) -> Option<(String, Span)> {
        self.string_property(node, name, Presence::Optional)
    }

    /// A string property; reports a wrong type, and its absence when it is required.
    fn string_property(&mut self, node: &Node, name: &str, presence: Presence) -> Option<(String, Span)> {
        match node.property(name) {
            Some(property) => match &property.value {
                Value::String(text) => Some((text.clone(), property.span)),
                other => {
                    self.report(
                        "argument-type",
                        property.span,
                        format!("property `{name}` expects a string, found a {}", other.kind_name()),
                        "quote the value",
                    );
                    None
                }
            },
            None => {
                let misspelled = self.misspelled.iter().any(|(span, meant)| *span == node.name_span && meant == name);
                if presence == Presence::Required && !misspelled {
                    self.report(
                        "missing-property",
                        node.name_span,
                        format!("`{}` needs the property `{name}`", node.name),
                        format!("add `{name}=\"…\"`"),
                    );
                }
                None
            }
        }
    }

    pub(crate) fn no_children(&mut self, node: &Node) {
        if let Some(child) = node.children.first() {
            self.report(
                "unknown-node",
                child.name_span,
                format!("`{}` takes no children", node.name),
                "remove the `{ … }` block",
            );
        }
    }

    /// Reports a node that is not part of the grammar at this place.
    pub(crate) fn unknown_node(&mut self, node: &Node, place: &str, known: &[&str]) {
        let hint = match crate::suggest::closest(&node.name, known.iter().copied()) {
            Some(meant) => format!("did you mean `{meant}`? expected one of {}", quoted_list(known)),
            None => format!("expected one of {}", quoted_list(known)),
        };
        self.report(
            "unknown-node",
            node.name_span,
            format!("unknown node `{}` in {place}", sanitize(&node.name)),
            hint,
        );
    }

    /// Records a singleton node; reports and returns false when it was already seen.
    pub(crate) fn singleton(&mut self, seen: &mut BTreeMap<String, Span>, node: &Node) -> bool {
        if seen.contains_key(&node.name) {
            self.report(
                "duplicate-node",
                node.name_span,
                format!("`{}` may appear only once here", node.name),
                "merge the two declarations into one",
            );
            return false;
        }
        seen.insert(node.name.clone(), node.name_span);
        true
    }

    /// Checks a slug: `[a-z0-9]` and `-`, not leading or trailing.
    pub fn slug(&mut self, value: &str, span: Span, what: &str) -> bool {
        if is_slug(value) {
            return true;
        }
        self.report(
            "invalid-slug",
            span,
            format!("{what} `{}` is not a valid slug", sanitize(value)),
            "use lowercase letters, digits and `-`, not at the start or end",
        );
        false
    }
}

/// `[a-z0-9]` and `-`, not leading or trailing, not empty.
pub fn is_slug(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with('-')
        && !value.ends_with('-')
        && value.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

pub(crate) fn quoted_list(items: &[&str]) -> String {
    items.iter().map(|item| format!("`{item}`")).collect::<Vec<_>>().join(", ")
}
