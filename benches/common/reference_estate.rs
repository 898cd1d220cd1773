//! The reference estate of SPEC 9, written once for every benchmark: 200 repositories ×
//! 50 skills of about 1.5 KB, and one trusted root whose `.agents/roles.kdl` gives each of
//! the seven roles a selector-bounded slice of the repositories.

use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;

pub const REPOSITORIES: usize = 200;
pub const SKILLS_PER_REPOSITORY: usize = 50;
pub const ROLES: [&str; 7] = ["platform", "sysadmin", "eval", "frontend", "gamedev", "tpm", "devrel"];

/// The text of one skill; `salt` makes an edited version of it.
pub fn skill_text(repository: usize, skill: usize, salt: &str) -> String {
    let mut body = String::new();
    while body.len() < 1400 {
        let _ = write!(
            body,
            "Skill {skill} of repository {repository} explains one practice in enough words to weigh about one and a half kilobytes. {salt}\n\n"
        );
    }
    format!(
        "---\nname: skill-{repository:03}-{skill:02}\ndescription: Reference skill {skill} of repository {repository}.\n---\n\n# Skill {repository}-{skill}\n\n{body}"
    )
}

/// The trusted root's `roles.kdl`: every repository with two selector slices, and each
/// role using every seventh repository.
fn roles_kdl(repositories: usize) -> String {
    let mut roles_kdl = String::from("repositories {\n");
    for repository in 0..repositories {
        let _ = writeln!(
            roles_kdl,
            "    repository repo-{repository:03} path=\"estate/repo-{repository:03}\" {{ skill \"skill-{repository:03}-0*\"; skill \"skill-{repository:03}-1*\"; }}"
        );
    }
    roles_kdl.push_str("}\nroles {\n");
    for (index, role) in ROLES.iter().enumerate() {
        let _ = write!(roles_kdl, "    role {role} {{");
        for repository in (0..repositories).filter(|repository| repository % ROLES.len() == index) {
            let _ = write!(roles_kdl, " use-repository repo-{repository:03};");
        }
        roles_kdl.push_str(" }\n");
    }
    roles_kdl.push_str("}\n");
    roles_kdl
}

/// Writes the estate under `projects`: `estate/root/.agents/roles.kdl` and
/// `estate/repo-NNN/.agents/skills/skill-NNN-MM/SKILL.md`.
pub fn write(projects: &Path) {
    write_sized(projects, REPOSITORIES);
}

/// [`write`] with `repositories` repositories of the same shape (the names keep three
/// digits up to 999 and grow past it).
pub fn write_sized(projects: &Path, repositories: usize) {
    let trusted = projects.join("estate/root/.agents");
    std::fs::create_dir_all(&trusted).expect("mkdir");
    std::fs::write(trusted.join("roles.kdl"), roles_kdl(repositories)).expect("roles.kdl");
    (0..repositories).into_par_iter().for_each(|repository| {
        for skill in 0..SKILLS_PER_REPOSITORY {
            let folder =
                projects.join(format!("estate/repo-{repository:03}/.agents/skills/skill-{repository:03}-{skill:02}"));
            std::fs::create_dir_all(&folder).expect("mkdir");
            std::fs::write(folder.join("SKILL.md"), skill_text(repository, skill, "")).expect("skill");
        }
    });
}
