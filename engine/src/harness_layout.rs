//! Harness layouts: one row per harness saying where its instructions file and its skills
//! folder live at repository scope and at home scope, which other folders it reads too,
//! which environment variable moves its configuration folder, which of the user's files a
//! launch carries, its listing limits and the name of its binary. The rows are data
//! (`layouts.kdl`, read by [`table`]), each citing its sources; adding a harness is
//! adding a row. Knows nothing of any real home or repository: every path here is
//! relative to a scope's root.

pub mod table;

/// Where a projection lands: a repository checkout, or a (real or runtime) home.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Repository,
    Home,
}

impl Scope {
    /// The name used on the command line and in `projection.json`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Repository => "repo",
            Scope::Home => "home",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "repo" => Some(Scope::Repository),
            "home" => Some(Scope::Home),
            _ => None,
        }
    }
}

/// Where one scope keeps the instructions file and the skills folder, relative to the
/// scope's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Places {
    pub instructions: &'static str,
    pub skills: &'static str,
    /// Other harnesses' skills folders this harness reads too at the same scope (a skill
    /// in two folders it reads is one it sees twice, or warns about).
    pub also_reads: &'static [&'static str],
}

/// An environment variable a launch sets, as a path relative to the runtime home
/// (`""` is the runtime home itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigVariable {
    pub name: &'static str,
    pub relative_to_home: &'static str,
}

/// One harness: a row of `layouts.kdl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The name on the command line (`--layout claude`, `acompose setup claude`).
    pub harness: &'static str,
    /// The name people know it by.
    pub display_name: &'static str,
    /// The executable a launch looks for on `PATH`.
    pub binary: &'static str,
    /// How the harness takes an initial prompt (`claude -p PROMPT`), for people.
    pub prompt: &'static str,
    pub repository: Places,
    pub home: Places,
    /// The variable that moves the harness's configuration folder, if it has one.
    pub config_variable: Option<ConfigVariable>,
    /// The harness's own configuration, credential and trust files an assigned launch
    /// carries into its runtime home: each one that exists in the real home is linked,
    /// never copied or read.
    pub carried: &'static [Carried],
    /// Whether an assigned launch leaves `HOME` alone: the configuration variable alone
    /// moves everything the harness reads of a user's context (skills, instructions),
    /// so the launched harness and every tool it runs see the user's own home. Otherwise
    /// `HOME` is the runtime home, which shows every entry of the real home by link but
    /// the paths the row reserves (docs/delivery.md, "What a launch carries").
    pub keeps_home: bool,
    /// Paths of the user's harness folder a launch hides besides its skills and
    /// instructions (relative to the home, like the `home` places): what would add
    /// context the role did not select (Claude Code's plugins bring skills and servers).
    pub hidden: &'static [&'static str],
    /// What the harness lists of a skill, and how much.
    pub listing: Listing,
    /// Whether repository-scope skill links into the store reach the harness (Kilo drops
    /// links that leave the checkout).
    pub repository_links: bool,
    /// Where the harness reads MCP servers, and in what shape; `None` when acompose does
    /// not deliver servers to it.
    pub mcp: Option<crate::mcp::harness_config::McpPlaces>,
    /// Where the row's facts come from.
    pub sources: &'static [&'static str],
}

/// One file of the user's a launch links into the runtime home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carried {
    /// Where the link goes, relative to the runtime home: where the harness reads it
    /// with its configuration folder moved there.
    pub runtime: &'static str,
    /// The user's file, relative to the real home, when the user has not set the
    /// layout's configuration variable.
    pub home: &'static str,
    /// The user's file relative to the folder the configuration variable names, when the
    /// user has set it; `None` when that variable does not move this file.
    pub config: Option<&'static str>,
}

/// A harness's limits on the skills it lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Listing {
    /// The characters of names and descriptions it lists before it cuts or shortens.
    pub budget: Option<u32>,
    /// The longest description it takes.
    pub description: Option<u32>,
    pub names: NameRule,
}

/// Which skill names a harness takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameRule {
    /// Any name.
    #[default]
    Any,
    /// The Agent Skills rule: 1–64 lowercase letters, digits and single hyphens, not
    /// starting or ending with one.
    AgentSkills,
}

impl Layout {
    pub fn places(&self, scope: Scope) -> Places {
        match scope {
            Scope::Repository => self.repository,
            Scope::Home => self.home,
        }
    }
}

static TABLE: std::sync::OnceLock<Vec<Layout>> = std::sync::OnceLock::new();

/// Every harness acompose delivers into, sorted by name: the embedded table, with the
/// rows a home's `layouts.kdl` added or replaced when [`install`] was called first.
pub fn layouts() -> &'static [Layout] {
    TABLE.get_or_init(|| table::read(table::EMBEDDED, table::EMBEDDED_NAME).0)
}

/// Lays the rows of a home's `layouts.kdl` (`text`, read from `path`) over the embedded
/// table for the rest of the process. Returns the file's problems; with any error the
/// home's table is not used at all. Must come before the table is first used.
pub fn install(text: &str, path: &str) -> Vec<crate::diagnostic::Diagnostic> {
    let (rows, diagnostics) = table::read(text, path);
    if diagnostics.iter().any(crate::diagnostic::Diagnostic::is_error) {
        return diagnostics;
    }
    let embedded = table::read(table::EMBEDDED, table::EMBEDDED_NAME).0;
    if TABLE.set(table::merged(embedded, rows)).is_err() {
        let late =
            crate::diagnostic::Diagnostic::error("layout-invalid", "the harness table was read before the home's rows")
                .in_file(path);
        return vec![late];
    }
    diagnostics
}

/// The skills folders a delivery for all of `layouts` at `scope` writes: each layout
/// reads at least one of them, and as few harness reads as possible see a skill twice
/// (harnesses read each other's folders). Among equally good choices, the fewest folders,
/// then the earliest layouts' own folders. Several layouts' own folders are the only
/// candidates, so every chosen folder is one some harness calls its own.
pub fn skill_folders(layouts: &[&Layout], scope: Scope) -> Vec<&'static str> {
    let mut candidates: Vec<&'static str> = Vec::new();
    for layout in layouts {
        let own = layout.places(scope).skills;
        if !candidates.contains(&own) {
            candidates.push(own);
        }
    }
    let reads = |layout: &Layout, folder: &str| {
        let places = layout.places(scope);
        places.skills == folder || places.also_reads.contains(&folder)
    };
    // (skills seen twice, folders, which candidates) of the best subset so far.
    type Cost = (usize, usize, Vec<usize>);
    let mut best: Option<(Cost, Vec<&'static str>)> = None;
    // At most one candidate per layout: a handful, so every subset can be weighed.
    for subset in 1..(1usize << candidates.len()) {
        let chosen: Vec<usize> = (0..candidates.len()).filter(|index| subset & (1 << index) != 0).collect();
        let counts: Vec<usize> = layouts
            .iter()
            .map(|layout| chosen.iter().filter(|&&index| reads(layout, candidates[index])).count())
            .collect();
        if counts.contains(&0) {
            continue;
        }
        let twice = counts.iter().map(|count| count - 1).sum::<usize>();
        let cost = (twice, chosen.len(), chosen.clone());
        if best.as_ref().is_none_or(|(best_cost, _)| cost < *best_cost) {
            best = Some((cost, chosen.iter().map(|&index| candidates[index]).collect()));
        }
    }
    best.map(|(_, folders)| folders).unwrap_or_default()
}

/// The layout of a harness by its command-line name.
pub fn layout(harness: &str) -> Option<&'static Layout> {
    layouts().iter().find(|layout| layout.harness == harness)
}

/// The harness names, for hints.
pub fn harness_names() -> Vec<&'static str> {
    layouts().iter().map(|layout| layout.harness).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_plain_relative(path: &str) -> bool {
        !path.is_empty()
            && !path.starts_with('/')
            && path.split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
    }

    fn folders(harnesses: &[&str], scope: Scope) -> Vec<&'static str> {
        let layouts: Vec<&Layout> = harnesses.iter().map(|name| layout(name).expect("a layout")).collect();
        skill_folders(&layouts, scope)
    }

    #[test]
    fn layouts_together_write_each_skill_where_no_harness_reads_it_twice() {
        assert_eq!(folders(&["gemini"], Scope::Repository), [".gemini/skills"]);
        assert_eq!(folders(&["codex", "gemini"], Scope::Repository), [".agents/skills"]);
        assert_eq!(folders(&["gemini", "codex"], Scope::Home), [".agents/skills"]);
        assert_eq!(folders(&["claude", "opencode"], Scope::Repository), [".claude/skills"]);
        assert_eq!(folders(&["claude", "gemini"], Scope::Repository), [".claude/skills", ".gemini/skills"]);
        // Claude Code reads only `.claude/skills` and Codex only `.agents/skills`; OpenCode
        // reads both, so once it must see a skill twice — never more.
        assert_eq!(
            folders(&["claude", "codex", "gemini", "opencode"], Scope::Repository),
            [".claude/skills", ".agents/skills"]
        );
    }

    #[test]
    fn the_embedded_table_reads_without_a_problem_and_cites_every_row() {
        let (rows, problems) = table::read(table::EMBEDDED, "layouts.kdl");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(rows.len() >= 12, "{} rows", rows.len());
        for row in &rows {
            assert!(!row.sources.is_empty(), "{} cites no source", row.harness);
        }
        assert!(!layout("kilo").expect("kilo").repository_links);
        assert!(layout("claude").expect("claude").repository_links);
    }

    #[test]
    fn a_broken_row_is_a_diagnostic_with_its_place_and_a_good_row_is_kept() {
        let text = "harness \"mine\" name=\"Mine\" binary=\"mine\" prompt=\"mine PROMPT\" {\n    source \"me\"\n    repository instructions=\"MINE.md\" skills=\".mine/skills\"\n    home instructions=\"\" skills=\".mine/skills\"\n}\nharness \"bad\" name=\"Bad\" binary=\"bad\" prompt=\"bad\" {\n    repository instructions=\"/etc/passwd\" skills=\"x\"\n    home instructions=\"\" skills=\"x\"\n    colour \"red\"\n}\n";
        let (rows, problems) = table::read(text, "layouts.kdl");
        assert_eq!(rows.iter().map(|row| row.harness).collect::<Vec<_>>(), ["mine"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems.iter().all(|problem| problem.file.as_deref() == Some("layouts.kdl") && problem.span.is_some())
        );
        assert!(problems[0].message.contains("/etc/passwd"), "{}", problems[0].message);
        assert!(problems[1].message.contains("unknown node `colour`"), "{}", problems[1].message);
        let merged = table::merged(vec![*layout("codex").expect("codex")], rows);
        assert_eq!(merged.iter().map(|row| row.harness).collect::<Vec<_>>(), ["codex", "mine"]);
    }

    #[test]
    fn every_row_names_plain_relative_paths() {
        for layout in layouts() {
            for scope in [Scope::Repository, Scope::Home] {
                let places = layout.places(scope);
                assert!(
                    places.instructions.is_empty() || is_plain_relative(places.instructions),
                    "{} {scope:?}",
                    layout.harness
                );
                assert!(is_plain_relative(places.skills), "{} {scope:?}", layout.harness);
                assert!(!places.instructions.starts_with(&format!("{}/", places.skills)));
            }
            for carried in layout.carried {
                let config = carried.config.unwrap_or(carried.home);
                for path in [carried.runtime, carried.home, config] {
                    assert!(is_plain_relative(path), "{} {path}", layout.harness);
                }
            }
        }
    }

    #[test]
    fn rows_are_sorted_and_unique() {
        let names = harness_names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        assert_eq!(layout("codex").map(|row| row.home.skills), Some(".agents/skills"));
        assert!(layout("vim").is_none());
        assert_eq!(Scope::parse(Scope::Home.name()), Some(Scope::Home));
        assert_eq!(Scope::parse("everywhere"), None);
    }
}
