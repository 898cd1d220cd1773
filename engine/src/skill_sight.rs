//! What a harness does with skills that are not the projected role's: whether it reads
//! the skills folders of the folders above the one it starts in, and which of two skills
//! of one name it uses. Facts per harness, each with its source; a harness not named
//! here is taken to read upwards and to show both skills (nothing is claimed for it).
//! Also the sentences `project`, `launch`, `whoami` and `doctor` say about them. Reads no
//! folder: the driver finds the skills and projections and asks here what they mean.

use crate::diagnostic::sanitize;
use crate::harness_layout;

/// Which of two skills of one name a harness uses, one the role's and one of a
/// repository's own skills folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameName {
    /// It lists both: Codex keeps every `SKILL.md` whose real path differs
    /// (openai/codex at c9d127cf, `codex-rs/core-skills/src/loader.rs`,
    /// `load_skills_from_roots` drops a skill only when its `path_to_skills_md` was seen).
    ListsBoth,
    /// A workspace skill replaces a user skill of its name: Gemini CLI adds user skills,
    /// then workspace skills, each replacing an earlier one of its name with a "Skill
    /// conflict detected" warning (google-gemini/gemini-cli,
    /// `packages/core/src/skills/skillManager.ts`, `discoverSkills` and
    /// `addSkillsWithPrecedence`; 0.61.0 `bundle/chunk-JDPZ4CE3.js:364586`).
    WorkspaceWins,
    /// A user skill wins over a project skill of its name: Claude Code's documented order
    /// is enterprise, then personal, then project (code.claude.com/docs/en/skills).
    UserWins,
    /// Not known.
    Unknown,
}

/// How one harness reads skills beside the folder it starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillReading {
    /// It reads repository skills only in the folder it starts in, none of the folders
    /// above it: Gemini CLI's workspace skills folders are `<start folder>/.gemini/skills`
    /// and `<start folder>/.agents/skills` (google-gemini/gemini-cli,
    /// `packages/cli/src/config/config.ts` `loadCliConfig` passes `targetDir: cwd`, and
    /// `packages/core/src/config/storage.ts` joins both folders to `targetDir`; 0.61.0
    /// `bundle/gemini-3HFX2LNT.js:8274` and `:8541`, `bundle/chunk-JDPZ4CE3.js:253250` and
    /// `:253268`). Qwen Code, a fork of it, does the same: 0.24.4 started in a subfolder of
    /// a projected checkout listed none of the role's skills (the real-harness suite,
    /// `a_nested_package_folder_sees_each_role_skill_once_or_the_start_folder_rule_is_said`).
    /// Only harnesses checked in their source or by that suite are marked.
    pub start_folder_only: bool,
    pub same_name: SameName,
}

/// What `harness` is known to do; see [`SkillReading`] for the sources.
pub fn skill_reading(harness: &str) -> SkillReading {
    let (start_folder_only, same_name) = match harness {
        "codex" => (false, SameName::ListsBoth),
        "gemini" => (true, SameName::WorkspaceWins),
        "qwen" => (true, SameName::Unknown),
        "claude" => (false, SameName::UserWins),
        _ => (false, SameName::Unknown),
    };
    SkillReading { start_folder_only, same_name }
}

/// Where the role's skills are when a harness meets another skill of the same name in a
/// repository's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleSkillsAt {
    /// Projected into the repository too (`project --scope repo`).
    Repository,
    /// In the harness's user folders (a home-scope projection, a launch's runtime home).
    User,
}

/// What the harness does with a role skill and another of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consequence {
    /// Both are listed: the role's skill twice.
    Doubled,
    /// The other is used instead of the role's.
    Shadowed,
    /// The role's is used; the other is out of sight.
    RoleWins,
    /// Both are read; which one is used is not known.
    Unknown,
}

/// What `harness` does with a role skill at `role` and a repository skill of its name.
pub fn consequence(harness: &str, role: RoleSkillsAt) -> Consequence {
    match (skill_reading(harness).same_name, role) {
        (SameName::ListsBoth, _) => Consequence::Doubled,
        (SameName::WorkspaceWins, RoleSkillsAt::User) => Consequence::Shadowed,
        (SameName::UserWins, RoleSkillsAt::User) => Consequence::RoleWins,
        _ => Consequence::Unknown,
    }
}

/// The name people know a harness by.
fn display_name(harness: &str) -> &str {
    harness_layout::layout(harness).map_or(harness, |layout| layout.display_name)
}

/// The warning about `other` (a skill folder, shown as the user sees it), named like the
/// role's skill `skill`, for `harness`; `None` when the role's skill wins and nothing is
/// lost. `started` says where the harness meets both ("started in `packages/pkg2` or
/// below", "launched here").
pub fn same_name_warning(harness: &str, role: RoleSkillsAt, skill: &str, other: &str, started: &str) -> Option<String> {
    let name = display_name(harness);
    let (skill, other) = (sanitize(skill), sanitize(other));
    let what = match consequence(harness, role) {
        Consequence::RoleWins => return None,
        Consequence::Doubled => format!("lists the role skill `{skill}` twice: the role's and `{other}`"),
        Consequence::Shadowed => format!("uses `{other}` instead of the role skill `{skill}`"),
        Consequence::Unknown => {
            format!("reads two skills named `{skill}`, the role's and `{other}`, and may use either")
        }
    };
    Some(format!("{name} {started} {what}"))
}

/// The harnesses of `layouts` (a record's `claude+gemini`) that see a repository-scope
/// projection's skills only when started in its folder itself, by display name.
pub fn start_folder_only(layouts: &str) -> Vec<&'static str> {
    layouts
        .split(crate::projection::LAYOUT_SEPARATOR)
        .filter_map(harness_layout::layout)
        .filter(|layout| skill_reading(layout.harness).start_folder_only)
        .map(|layout| layout.display_name)
        .collect()
}

/// The note about a harness that reads skills only where it starts, for the projection
/// in `target` (shown as the user sees it).
pub fn start_folder_note(harness: &str, target: &str) -> String {
    format!(
        "{} reads a repository's skills only in the folder it starts in: started in a subfolder of `{}` it sees none of the role's skills (it still reads the instructions file above it); start it in `{}`, or project into the subfolder too",
        harness,
        sanitize(target),
        sanitize(target)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_known_harness_says_what_it_does_with_a_second_skill_of_a_name() {
        let launched = |harness| consequence(harness, RoleSkillsAt::User);
        let projected = |harness| consequence(harness, RoleSkillsAt::Repository);
        assert_eq!(launched("codex"), Consequence::Doubled);
        assert_eq!(projected("codex"), Consequence::Doubled);
        assert_eq!(launched("gemini"), Consequence::Shadowed);
        assert_eq!(launched("claude"), Consequence::RoleWins);
        assert_eq!(projected("claude"), Consequence::Unknown);
        assert_eq!(launched("opencode"), Consequence::Unknown);
        assert_eq!(same_name_warning("claude", RoleSkillsAt::User, "deploy", "x", "launched here"), None);
        assert_eq!(
            same_name_warning("gemini", RoleSkillsAt::User, "deploy", "pkg/.agents/skills/deploy", "launched here")
                .as_deref(),
            Some("Gemini CLI launched here uses `pkg/.agents/skills/deploy` instead of the role skill `deploy`")
        );
    }

    #[test]
    fn only_the_start_folder_harnesses_of_a_record_are_named() {
        assert_eq!(start_folder_only("claude+codex+gemini"), ["Gemini CLI"]);
        assert!(start_folder_only("claude+codex").is_empty());
        assert!(start_folder_only("unknown").is_empty());
    }
}
