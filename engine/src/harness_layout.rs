//! Harness layouts as data: one row per harness saying where its instructions file and
//! its skills folder live at repository scope and at home scope, which environment
//! variable moves its configuration folder, which of its own files a runtime home may
//! link, and the name of its binary. Adding a harness is adding a row. Knows nothing of
//! any real home or repository: every path here is relative to a scope's root.
//!
//! The rows follow each harness's public documentation (docs/delivery.md cites them).

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

/// One harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The name on the command line (`--layout claude`, `acompose setup claude`).
    pub harness: &'static str,
    /// The name people know it by.
    pub display_name: &'static str,
    /// The executable a launch looks for on `PATH`.
    pub binary: &'static str,
    pub repository: Places,
    pub home: Places,
    /// The variable that moves the harness's configuration folder, if it has one.
    pub config_variable: Option<ConfigVariable>,
    /// The harness's own configuration, credential and trust files an assigned launch
    /// carries into its runtime home: each one that exists in the real home is linked,
    /// never copied or read.
    pub carried: &'static [Carried],
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

/// A file in the configuration folder: `<folder>/<file>` in a home, `<file>` in the folder
/// the variable names.
const fn in_config(runtime: &'static str, config: &'static str) -> Carried {
    Carried { runtime, home: runtime, config: Some(config) }
}

impl Layout {
    pub fn places(&self, scope: Scope) -> Places {
        match scope {
            Scope::Repository => self.repository,
            Scope::Home => self.home,
        }
    }
}

/// Every harness acompose delivers into, sorted by name.
pub const LAYOUTS: &[Layout] = &[
    // https://code.claude.com/docs/en/skills (project `.claude/skills/`, personal
    // `~/.claude/skills/`) and https://code.claude.com/docs/en/memory (`CLAUDE.md`,
    // `~/.claude/CLAUDE.md`); `CLAUDE_CONFIG_DIR` moves `~/.claude`.
    Layout {
        harness: "claude",
        display_name: "Claude Code",
        binary: "claude",
        repository: Places { instructions: "CLAUDE.md", skills: ".claude/skills", also_reads: &[] },
        home: Places { instructions: ".claude/CLAUDE.md", skills: ".claude/skills", also_reads: &[] },
        config_variable: Some(ConfigVariable { name: "CLAUDE_CONFIG_DIR", relative_to_home: ".claude" }),
        // With `CLAUDE_CONFIG_DIR` set, Claude Code reads `.claude.json` (user-scope MCP
        // servers, onboarding, per-project state) inside that folder, not at the home.
        carried: &[
            in_config(".claude/.credentials.json", ".credentials.json"),
            in_config(".claude/settings.json", "settings.json"),
            Carried { runtime: ".claude/.claude.json", home: ".claude.json", config: Some(".claude.json") },
        ],
    },
    // https://developers.openai.com/codex/skills (repository `.agents/skills/`, user
    // `$HOME/.agents/skills/`) and https://developers.openai.com/codex/guides/agents-md
    // (`AGENTS.md`, `$CODEX_HOME/AGENTS.md`, `CODEX_HOME` defaulting to `~/.codex`).
    Layout {
        harness: "codex",
        display_name: "Codex",
        binary: "codex",
        repository: Places { instructions: "AGENTS.md", skills: ".agents/skills", also_reads: &[] },
        home: Places { instructions: ".codex/AGENTS.md", skills: ".agents/skills", also_reads: &[".codex/skills"] },
        config_variable: Some(ConfigVariable { name: "CODEX_HOME", relative_to_home: ".codex" }),
        carried: &[in_config(".codex/auth.json", "auth.json"), in_config(".codex/config.toml", "config.toml")],
    },
    // https://geminicli.com/docs/cli/using-agent-skills/ (workspace `.gemini/skills/`,
    // user `~/.gemini/skills/`) and https://geminicli.com/docs/cli/gemini-md/
    // (`GEMINI.md`, `~/.gemini/GEMINI.md`); https://geminicli.com/docs/reference/configuration
    // (`GEMINI_CLI_HOME`, the folder a `.gemini` folder is created in).
    Layout {
        harness: "gemini",
        display_name: "Gemini CLI",
        binary: "gemini",
        repository: Places { instructions: "GEMINI.md", skills: ".gemini/skills", also_reads: &[".agents/skills"] },
        home: Places { instructions: ".gemini/GEMINI.md", skills: ".gemini/skills", also_reads: &[".agents/skills"] },
        // The variable names the folder that holds `.gemini`, not `.gemini` itself.
        config_variable: Some(ConfigVariable { name: "GEMINI_CLI_HOME", relative_to_home: "" }),
        carried: &[
            in_config(".gemini/settings.json", ".gemini/settings.json"),
            in_config(".gemini/oauth_creds.json", ".gemini/oauth_creds.json"),
            in_config(".gemini/google_accounts.json", ".gemini/google_accounts.json"),
            in_config(".gemini/trustedFolders.json", ".gemini/trustedFolders.json"),
        ],
    },
    // https://block.github.io/goose/docs/guides/context-engineering/using-skills
    // (`./.goose/skills/`, `~/.config/goose/skills/`) and
    // https://block.github.io/goose/docs/guides/context-engineering/using-goosehints
    // (`.goosehints`, `~/.config/goose/.goosehints`).
    Layout {
        harness: "goose",
        display_name: "Goose",
        binary: "goose",
        repository: Places {
            instructions: ".goosehints",
            skills: ".goose/skills",
            also_reads: &[".claude/skills", ".agents/skills"],
        },
        home: Places {
            instructions: ".config/goose/.goosehints",
            skills: ".config/goose/skills",
            also_reads: &[".claude/skills", ".config/agents/skills"],
        },
        config_variable: Some(ConfigVariable { name: "XDG_CONFIG_HOME", relative_to_home: ".config" }),
        carried: &[
            in_config(".config/goose/config.yaml", "goose/config.yaml"),
            in_config(".config/goose/secrets.yaml", "goose/secrets.yaml"),
        ],
    },
    // https://opencode.ai/docs/skills/ (`.opencode/skills/`, `~/.config/opencode/skills/`)
    // and https://opencode.ai/docs/rules/ (`AGENTS.md`, `~/.config/opencode/AGENTS.md`).
    Layout {
        harness: "opencode",
        display_name: "OpenCode",
        binary: "opencode",
        repository: Places {
            instructions: "AGENTS.md",
            skills: ".opencode/skills",
            also_reads: &[".claude/skills", ".agents/skills"],
        },
        home: Places {
            instructions: ".config/opencode/AGENTS.md",
            skills: ".config/opencode/skills",
            also_reads: &[".claude/skills", ".agents/skills"],
        },
        config_variable: Some(ConfigVariable { name: "XDG_CONFIG_HOME", relative_to_home: ".config" }),
        carried: &[
            in_config(".config/opencode/opencode.json", "opencode/opencode.json"),
            in_config(".config/opencode/opencode.jsonc", "opencode/opencode.jsonc"),
            in_config(".config/opencode/config.json", "opencode/config.json"),
            Carried {
                runtime: ".local/share/opencode/auth.json",
                home: ".local/share/opencode/auth.json",
                config: None,
            },
        ],
    },
];

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
    LAYOUTS.iter().find(|layout| layout.harness == harness)
}

/// The harness names, for hints.
pub fn harness_names() -> Vec<&'static str> {
    LAYOUTS.iter().map(|layout| layout.harness).collect()
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
    fn every_row_names_plain_relative_paths() {
        for layout in LAYOUTS {
            for scope in [Scope::Repository, Scope::Home] {
                let places = layout.places(scope);
                assert!(is_plain_relative(places.instructions), "{} {scope:?}", layout.harness);
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
