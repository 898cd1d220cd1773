//! Every size limit of the tool's inputs, in one place, and the diagnostic that names a
//! limit when an input exceeds it. Owns the numbers and the check; it does not decide
//! where a check happens (each reader calls [`Limit::check`] where bytes enter a query)
//! and it never reads a file.
//!
//! The limits exist so that one hostile file costs a bounded amount of work: an input
//! over its limit is refused with one diagnostic and is never parsed. Each is far above
//! what a real file of its kind holds.

use crate::diagnostic::Diagnostic;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// One input kind's size limit and the stable diagnostic code that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What kind of input this limit covers, as a user reads it (`a KDL package file`).
    pub input: &'static str,
    /// The diagnostic code reported when the limit is exceeded; it names the limit.
    pub code: &'static str,
    /// The largest accepted size, in bytes.
    pub bytes: usize,
}

/// A KDL file of a person package or personality library (`person.kdl`, `library.kdl`,
/// `roles/*.kdl`, `personalities/*.kdl`, `inspirations/*.kdl`).
pub const KDL_PACKAGE_FILE: Limit = Limit { input: "a KDL package file", code: "limit-kdl-package-file", bytes: MIB };
/// A `SKILL.md` or `COMPOSED.md`, in a package or a catalogue.
pub const SKILL_DOCUMENT: Limit = Limit { input: "a skill document", code: "limit-skill-document", bytes: 4 * MIB };
/// A trusted root's `.agents/roles.kdl`. Large enough for a 100,000-repository estate.
pub const ROLES_KDL: Limit = Limit { input: "a `roles.kdl`", code: "limit-roles-kdl", bytes: 16 * MIB };
/// A `request.kdl` and each source declaration file it names.
/// A private overlay (`engine::overlay`).
pub const OVERLAY_KDL: Limit = Limit { input: "an overlay", code: "limit-overlay", bytes: MIB };
pub const REQUEST_KDL: Limit = Limit { input: "a request file", code: "limit-request-kdl", bytes: MIB };
/// A bundle's `manifest.json` as `describe`, `verify` and `diff` read it.
pub const BUNDLE_MANIFEST: Limit = Limit { input: "a bundle manifest", code: "limit-bundle-manifest", bytes: 16 * MIB };
/// A bundle's `trace.json` as `describe`, `verify` and `diff` read it.
pub const BUNDLE_TRACE: Limit = Limit { input: "a bundle trace", code: "limit-bundle-trace", bytes: 64 * MIB };
/// A bundle's `trace.index` as `describe --why` and `verify` read it (always smaller than
/// the trace it indexes).
pub const BUNDLE_TRACE_INDEX: Limit =
    Limit { input: "a bundle's trace index", code: "limit-bundle-trace-index", bytes: 64 * MIB };
/// A People file (person@1 JSON, `bindings.yaml`, hire and recipe files) and the host
/// configuration YAML, which share the hardened JSON and YAML readers. Its code is the one
/// People reports have always used (`docs/people.md`).
/// The home's MCP inventory, `mcp.kdl`.
pub const MCP_INVENTORY: Limit = Limit { input: "an MCP inventory", code: "limit-mcp-inventory", bytes: 256 * KIB };
pub const PEOPLE_FILE: Limit = Limit { input: "a People file", code: "file-too-large", bytes: 64 * KIB };
/// A request or response body of the HTTP interface (reserved: no HTTP reader exists yet).
pub(crate) const HTTP_BODY: Limit = Limit { input: "an HTTP body", code: "limit-http-body", bytes: MIB };

/// Every limit, for the documentation test and the reliability table.
pub const ALL: &[Limit] = &[
    KDL_PACKAGE_FILE,
    SKILL_DOCUMENT,
    ROLES_KDL,
    REQUEST_KDL,
    OVERLAY_KDL,
    BUNDLE_MANIFEST,
    BUNDLE_TRACE,
    BUNDLE_TRACE_INDEX,
    PEOPLE_FILE,
    HTTP_BODY,
];

/// One count limit: how many of one kind of thing a single input may declare, and the
/// stable diagnostic code that names it. Counted before the things are read, so an input
/// over a count limit costs no more than one within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountLimit {
    /// What is counted, in the plural (`roles`).
    pub what: &'static str,
    /// The input that declares them, as a user reads it (`a `roles.kdl``).
    pub input: &'static str,
    pub code: &'static str,
    /// The most accepted.
    pub count: usize,
}

/// The KDL nodes of a `roles.kdl`, bounded from above by a scan of its text before the
/// KDL parser runs (the parser's tree of a node costs far more than its text). Room for
/// the 100,000-repository estate of [`ROLES_KDL`] and a role using each of them.
pub const ROLES_KDL_NODES: CountLimit =
    CountLimit { what: "KDL nodes", input: "a `roles.kdl`", code: "limit-roles-kdl-nodes", count: 250_000 };
/// The `role` entries of a `roles.kdl`.
pub const ROLES: CountLimit = CountLimit { what: "roles", input: "a `roles.kdl`", code: "limit-roles", count: 1_000 };
/// The `repository` declarations of a `roles.kdl`.
pub const REPOSITORIES: CountLimit =
    CountLimit { what: "repositories", input: "a `roles.kdl`", code: "limit-repositories", count: 100_000 };
/// The `skill` and `composed-skill` selectors of a `roles.kdl`, together.
pub const SELECTORS: CountLimit =
    CountLimit { what: "selectors", input: "a `roles.kdl`", code: "limit-selectors", count: 100_000 };
/// The `source` entries of a `request.kdl`.
pub const REQUEST_SOURCES: CountLimit =
    CountLimit { what: "sources", input: "a request", code: "limit-request-sources", count: 1_000 };

/// Every count limit, for the documentation test and the reliability table.
pub const ALL_COUNTS: &[CountLimit] = &[ROLES_KDL_NODES, ROLES, REPOSITORIES, SELECTORS, REQUEST_SOURCES];

impl CountLimit {
    /// `None` when `count` is within the limit, else the one diagnostic that refuses the
    /// input and names the limit.
    pub fn check(self, count: usize, path: &str) -> Option<Diagnostic> {
        if count <= self.count {
            return None;
        }
        Some(
            Diagnostic::error(
                self.code,
                if self.code == ROLES_KDL_NODES.code {
                    format!(
                        "the file holds up to {count} {}, over the limit of {} for {} (`{}`); it was not parsed",
                        self.what, self.count, self.input, self.code
                    )
                } else {
                    format!(
                        "the file declares {count} {}, over the limit of {} for {} (`{}`); none of them was read",
                        self.what, self.count, self.input, self.code
                    )
                },
            )
            .in_file(path)
            .hint(format!(
                "keep {} to at most {} {}; split it or remove what is not needed",
                self.input, self.count, self.what
            )),
        )
    }
}

/// The per-file diagnostic cap lives with the diagnostics it bounds; named here too so
/// every limit can be read in one place.
pub use crate::diagnostic::{MAX_DIAGNOSTICS_PER_FILE, OMITTED_DIAGNOSTICS_CODE};

/// The limit of a file a package (`in_package`) or a catalogue holds, by its path in its
/// root, when its kind has one: the loader checks it before reading the file. Other files
/// (a skill's resources) have no limit of their own.
pub fn for_file(relative: &str, in_package: bool) -> Option<Limit> {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    if !in_package && relative == ".agents/roles.kdl" {
        Some(ROLES_KDL)
    } else if name == "SKILL.md" || name == "COMPOSED.md" {
        Some(SKILL_DOCUMENT)
    } else if in_package && name.ends_with(".kdl") {
        Some(KDL_PACKAGE_FILE)
    } else {
        None
    }
}

impl Limit {
    /// `None` when `length` is within the limit, else the diagnostic that names it.
    pub fn check(self, length: usize, path: &str) -> Option<Diagnostic> {
        if length <= self.bytes {
            return None;
        }
        Some(
            Diagnostic::error(
                self.code,
                format!(
                    "the file is {}, over the limit of {} for {} (`{}`); it was not parsed",
                    human_size(length),
                    human_size(self.bytes),
                    self.input,
                    self.code
                ),
            )
            .in_file(path)
            .hint(format!(
                "keep {} under {}; split it or remove what is not needed",
                self.input,
                human_size(self.bytes)
            )),
        )
    }
}

/// A byte count for messages: whole KiB or MiB when exact, else the bytes and, past a
/// KiB, the rounded size in tenths.
pub(crate) fn human_size(bytes: usize) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else if bytes >= MIB {
        format!("{bytes} bytes ({}.{} MiB)", bytes / MIB, bytes % MIB * 10 / MIB)
    } else if bytes >= KIB {
        format!("{bytes} bytes ({}.{} KiB)", bytes / KIB, bytes % KIB * 10 / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_passes_its_size_and_refuses_one_byte_more() {
        for limit in ALL {
            assert!(limit.check(limit.bytes, "f").is_none());
            let diagnostic = limit.check(limit.bytes + 1, "f");
            assert_eq!(diagnostic.as_ref().map(|diagnostic| diagnostic.code), Some(limit.code));
            assert!(diagnostic.is_some_and(|diagnostic| diagnostic.message.contains(limit.code)));
        }
    }

    #[test]
    fn codes_are_distinct_and_name_a_limit() {
        let mut codes: Vec<&str> =
            ALL.iter().map(|limit| limit.code).chain(ALL_COUNTS.iter().map(|limit| limit.code)).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ALL.len() + ALL_COUNTS.len());
    }

    #[test]
    fn a_count_limit_passes_its_count_and_refuses_one_more() {
        for limit in ALL_COUNTS {
            assert!(limit.check(limit.count, "f").is_none());
            let diagnostic = limit.check(limit.count + 1, "f");
            assert!(diagnostic.is_some_and(|diagnostic| diagnostic.code == limit.code && diagnostic.is_error()));
        }
    }

    #[test]
    fn files_get_the_limit_of_their_kind() {
        assert_eq!(for_file(".agents/roles.kdl", false), Some(ROLES_KDL));
        assert_eq!(for_file(".agents/skills/a/SKILL.md", false), Some(SKILL_DOCUMENT));
        assert_eq!(for_file(".agents/skills/a/notes.kdl", false), None);
        assert_eq!(for_file("roles/01-builder.kdl", true), Some(KDL_PACKAGE_FILE));
        assert_eq!(for_file("person.kdl", true), Some(KDL_PACKAGE_FILE));
        assert_eq!(for_file("definitions/INVARIANT.md", true), None);
    }

    #[test]
    fn sizes_read_as_units() {
        assert_eq!(human_size(MIB), "1 MiB");
        assert_eq!(human_size(64 * KIB), "64 KiB");
        assert_eq!(human_size(6_118_014), "6118014 bytes (5.8 MiB)");
        assert_eq!(human_size(100), "100 bytes");
        // The People reader's message says 64 KiB; this keeps it true.
        assert_eq!(human_size(PEOPLE_FILE.bytes), "64 KiB");
    }
}
