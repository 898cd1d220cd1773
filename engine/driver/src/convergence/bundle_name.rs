//! Naming a bundle the way a person does: the path of its folder, a role slug (the home's
//! current bundle of that role, from `<home>/bundles/index.json`), `ROLE@{N}` (the role's
//! Nth earlier bundle, newest first, as the index keeps them; `ROLE@{0}` is the current
//! one), or a prefix of at least four hex digits of its id among the home's bundles
//! (`<home>/bundles` and the launches' `<home>/runtime/bundles`); and the home's bundles
//! listed for `bundle list`. Reads only; a name that fits nothing, or several bundles,
//! is an error that says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use acompose_engine::diagnostic::sanitize;

use crate::error::HostError;
use crate::home::Home;

/// The fewest hex digits an id prefix must have.
pub const MIN_PREFIX: usize = 4;
/// How many candidates an ambiguous prefix lists.
const LISTED: usize = 10;

/// Where the home keeps bundles, and what each folder is called in a listing.
fn folders(home: &Home) -> [(PathBuf, &'static str); 2] {
    [(home.bundles(), "bundles"), (home.runtime_bundles(), "runtime")]
}

pub use crate::home::{read_history, read_index};

fn is_bundle_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// Every bundle folder of the home: `(id, folder, place)`, ids in order, an id in both
/// places given once (the estate's folder first).
fn bundle_folders(home: &Home) -> Vec<(String, PathBuf, &'static str)> {
    let mut found: BTreeMap<String, (PathBuf, &'static str)> = BTreeMap::new();
    for (folder, place) in folders(home) {
        let Ok(entries) = std::fs::read_dir(folder) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_bundle_id(&name) && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                found.entry(name).or_insert((entry.path(), place));
            }
        }
    }
    found.into_iter().map(|(id, (folder, place))| (id, folder, place)).collect()
}

/// The bundle folder `name` means: an existing path as it is; else, in `home`, the
/// current bundle of the role `name`, or the one bundle whose id starts with `name` (at
/// least [`MIN_PREFIX`] hex digits).
pub fn resolve(home: Option<&Home>, name: &Path) -> Result<PathBuf, HostError> {
    if std::fs::symlink_metadata(name).is_ok() {
        return Ok(name.to_path_buf());
    }
    let text = name.to_string_lossy();
    let shown = sanitize(&text);
    let Some(home) = home else {
        return Err(HostError::invalid(name, format!("`{shown}` is not a bundle directory")));
    };
    let index = read_index(home);
    if let Some((role, back)) = earlier_name(&text) {
        return earlier(home, &index, role, back, &shown);
    }
    if let Some(id) = index.get(text.as_ref()) {
        let folder = home.bundles().join(id);
        return if folder.is_dir() {
            Ok(folder)
        } else {
            Err(HostError::invalid(
                &folder,
                format!("the home's index names bundle {id} for `{shown}`, but it is gone; run `acompose` to converge"),
            ))
        };
    }
    let prefix = text.len() >= MIN_PREFIX && text.bytes().all(|byte| byte.is_ascii_hexdigit());
    if prefix {
        let lowered = text.to_lowercase();
        let matches: Vec<(String, PathBuf, &str)> =
            bundle_folders(home).into_iter().filter(|(id, _, _)| id.starts_with(&lowered)).collect();
        return match matches.as_slice() {
            [(_, folder, _)] => Ok(folder.clone()),
            [] => Err(HostError::invalid(
                name,
                format!(
                    "no bundle of the home `{}` has an id starting with `{shown}`; {}",
                    home.display(),
                    earlier_hint(&read_history(home))
                ),
            )),
            several => Err(ambiguous(name, &shown, several, &index)),
        };
    }
    let roles = index.keys().map(String::as_str);
    let suggestion = acompose_engine::suggest::did_you_mean(&text, roles).map(|hint| format!(": {hint}"));
    let known: Vec<&str> = index.keys().map(String::as_str).collect();
    let listed = if known.is_empty() {
        "the home's index names no role yet".to_owned()
    } else {
        format!("roles of the home's index: {}", known.join(", "))
    };
    Err(HostError::invalid(
        name,
        format!(
            "`{shown}` is not a bundle directory, a role of the home's index or a bundle id prefix ({MIN_PREFIX}+ hex digits){}; {listed}",
            suggestion.unwrap_or_default()
        ),
    ))
}

/// `ROLE@{N}` read as the role and N; `None` for anything else.
pub fn earlier_name(text: &str) -> Option<(&str, usize)> {
    let (role, rest) = text.split_once("@{")?;
    let back = rest.strip_suffix('}')?;
    if role.is_empty() || back.is_empty() || !back.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some((role, back.parse().ok()?))
}

/// What the home keeps of earlier bundles, for an error about a name that fits none: the
/// names to use, or why there are none.
fn earlier_hint(history: &BTreeMap<String, Vec<String>>) -> String {
    let names: Vec<String> = history
        .iter()
        .take(LISTED)
        .map(|(role, ids)| match ids.len() {
            1 => format!("{role}@{{1}}"),
            count => format!("{role}@{{1}}…{role}@{{{count}}}"),
        })
        .collect();
    if names.is_empty() {
        "convergence keeps a role's earlier bundles as `ROLE@{1}`, `ROLE@{2}`… (`bundle_history` in agent-compose.yaml), and keeps none yet; `acompose bundle list` shows the home's bundles".to_owned()
    } else {
        format!(
            "a role's earlier bundles are named `ROLE@{{N}}`: {}; `acompose bundle list` shows them",
            sanitize(&names.join(", "))
        )
    }
}

/// The bundle `ROLE@{back}` names: the role's current bundle for 0, else its earlier
/// bundle `back` steps back, newest first, as the home's index keeps them.
fn earlier(
    home: &Home,
    index: &BTreeMap<String, String>,
    role: &str,
    back: usize,
    shown: &str,
) -> Result<PathBuf, HostError> {
    let history = read_history(home);
    let kept = history.get(role).map_or(&[][..], Vec::as_slice);
    let id = match back {
        0 => index.get(role),
        _ => kept.get(back - 1),
    };
    let Some(id) = id else {
        let role_shown = sanitize(role);
        let known = index.contains_key(role) || history.contains_key(role);
        let message = match (known, kept.len()) {
            (false, _) => {
                let roles = index.keys().chain(history.keys()).map(String::as_str);
                let suggestion = acompose_engine::suggest::did_you_mean(role, roles).map(|hint| format!(" ({hint})"));
                format!("`{shown}`: the home's index knows no role `{role_shown}`{}", suggestion.unwrap_or_default())
            }
            (true, 0) => {
                format!("`{shown}`: the home keeps no earlier bundle of `{role_shown}` yet; {}", earlier_hint(&history))
            }
            (true, count) => format!(
                "`{shown}`: the home keeps {count} earlier bundle(s) of `{role_shown}`, `{role_shown}@{{1}}` to `{role_shown}@{{{count}}}`"
            ),
        };
        return Err(HostError::invalid(home.index_file(), message));
    };
    let folder = home.bundles().join(id);
    if folder.is_dir() {
        Ok(folder)
    } else {
        Err(HostError::invalid(&folder, format!("the home's index names bundle {id} for `{shown}`, but it is gone")))
    }
}

/// The error of a prefix several bundles start with, listing them.
fn ambiguous(
    name: &Path,
    shown: &str,
    several: &[(String, PathBuf, &str)],
    index: &BTreeMap<String, String>,
) -> HostError {
    let role_of = |id: &str| index.iter().find(|(_, indexed)| *indexed == id).map(|(role, _)| role.as_str());
    let mut candidates: Vec<String> = several
        .iter()
        .take(LISTED)
        .map(|(id, _, place)| match role_of(id) {
            Some(role) => format!("{id} ({role})"),
            None => format!("{id} ({place})"),
        })
        .collect();
    if several.len() > LISTED {
        candidates.push(format!("and {} more", several.len() - LISTED));
    }
    HostError::invalid(
        name,
        format!("`{shown}` is the start of {} bundle ids: {}; give more digits", several.len(), candidates.join(", ")),
    )
}

/// One bundle of the home, as `bundle list` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub folder: PathBuf,
    /// `bundles` (the estate's and `compose`'s) or `runtime` (a launch's).
    pub place: &'static str,
    /// The role its manifest names (empty when the manifest cannot be read).
    pub role: String,
    /// Whether the home's index names it: the role's current bundle.
    pub current: bool,
    /// What names it besides its id: `ROLE` for a role's current bundle, `ROLE@{N}` for
    /// one the index keeps as a role's Nth earlier bundle.
    pub name: Option<String>,
    pub modified: Option<SystemTime>,
    /// Bytes of every file it shows (its own and the store entries it links).
    pub bytes: u64,
    /// The registered projections showing it: their target folders.
    pub projections: Vec<PathBuf>,
}

/// Every bundle of the home: current ones first (by role), then the roles' earlier ones
/// (by role, newest first), then the others by id.
pub fn list(home: &Home) -> Vec<Listed> {
    let index = read_index(home);
    let history = read_history(home);
    let back_of = |id: &str| {
        history.iter().find_map(|(role, ids)| Some((role.clone(), ids.iter().position(|kept| kept == id)? + 1)))
    };
    let registered = crate::delivery::projections::list(home);
    let mut listed: Vec<((u8, usize), Listed)> = bundle_folders(home)
        .into_iter()
        .map(|(id, folder, place)| {
            let role =
                crate::compose::bundle::read_manifest(&folder).map(|manifest| manifest.role.slug).unwrap_or_default();
            let current = place == "bundles" && index.get(&role) == Some(&id);
            let back = (place == "bundles" && !current).then(|| back_of(&id)).flatten();
            let (order, name) = match back {
                Some((role, back)) => ((1, back), Some(format!("{role}@{{{back}}}"))),
                None if current => ((0, 0), Some(role.clone())),
                None => ((2, 0), None),
            };
            let projections = registered
                .iter()
                .filter(|projection| projection.bundle == id)
                .map(|projection| projection.target.clone())
                .collect();
            let modified = std::fs::metadata(&folder).and_then(|metadata| metadata.modified()).ok();
            let bytes = shown_bytes(&folder);
            (order, Listed { id, folder, place, role, current, name, modified, bytes, projections })
        })
        .collect();
    listed.sort_by(|(a_order, a), (b_order, b)| {
        (a_order.0, &a.role, a_order.1, &a.id).cmp(&(b_order.0, &b.role, b_order.1, &b.id))
    });
    listed.into_iter().map(|(_, listed)| listed).collect()
}

/// The bytes of every regular file a bundle shows, its links into the store followed
/// (each file once, however many links reach it).
fn shown_bytes(folder: &Path) -> u64 {
    walkdir::WalkDir::new(folder)
        .follow_links(true)
        .into_iter()
        .flatten()
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(home: &Path, place: &str, id: &str) {
        std::fs::create_dir_all(home.join(place).join(id)).expect("bundle");
    }

    #[test]
    fn a_role_or_a_unique_prefix_names_a_bundle_and_an_ambiguous_one_lists_the_candidates() {
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = &Home::at(temporary.path());
        bundle(home, "bundles", "73c60467df2fb2dc");
        bundle(home, "bundles", "73c6aaaaaaaaaaaa");
        bundle(home, "runtime/bundles", "0123456789abcdef");
        std::fs::write(
            home.join("bundles/index.json"),
            "{\"format\":\"acompose.bundle-index.v1\",\"bundles\":{\"builder\":\"73c60467df2fb2dc\"}}",
        )
        .expect("index");
        let index = read_index(home);
        assert_eq!(index.get("builder").map(String::as_str), Some("73c60467df2fb2dc"), "{index:?}");
        assert_eq!(resolve(Some(home), Path::new("builder")).expect("role"), home.join("bundles/73c60467df2fb2dc"));
        assert_eq!(
            resolve(Some(home), Path::new("0123")).expect("prefix"),
            home.join("runtime/bundles/0123456789abcdef")
        );
        let Err(error) = resolve(Some(home), Path::new("73c6")) else { panic!("ambiguous") };
        let message = error.to_string();
        assert!(
            message.contains("73c60467df2fb2dc (builder)") && message.contains("73c6aaaaaaaaaaaa (bundles)"),
            "{message}"
        );
        let Err(error) = resolve(Some(home), Path::new("buildr")) else { panic!("unknown") };
        assert!(error.to_string().contains("did you mean `builder`?"), "{error}");
        assert!(resolve(Some(home), Path::new("abc")).is_err(), "three digits are too few");
    }

    #[test]
    fn role_at_n_names_the_roles_earlier_bundles_newest_first() {
        assert_eq!(earlier_name("platform@{2}"), Some(("platform", 2)));
        for not_one in ["platform", "platform@{}", "@{1}", "platform@{x}", "platform@{1", "platform@{-1}"] {
            assert_eq!(earlier_name(not_one), None, "{not_one}");
        }
        let temporary = tempfile::tempdir().expect("tempdir");
        let home = &Home::at(temporary.path());
        for id in ["1111111111111111", "2222222222222222", "3333333333333333"] {
            bundle(home, "bundles", id);
        }
        std::fs::write(
            home.join("bundles/index.json"),
            "{\"format\":\"acompose.bundle-index.v1\",\"bundles\":{\"platform\":\"1111111111111111\"},\"history\":{\"platform\":[\"2222222222222222\",\"3333333333333333\"]}}",
        )
        .expect("index");
        let named = |name: &str| resolve(Some(home), Path::new(name));
        assert_eq!(named("platform@{0}").expect("current"), home.join("bundles/1111111111111111"));
        assert_eq!(named("platform@{1}").expect("previous"), home.join("bundles/2222222222222222"));
        assert_eq!(named("platform@{2}").expect("before that"), home.join("bundles/3333333333333333"));
        let Err(error) = named("platform@{3}") else { panic!("too far back") };
        assert!(error.to_string().contains("keeps 2 earlier bundle(s)"), "{error}");
        let Err(error) = named("platfrom@{1}") else { panic!("unknown role") };
        assert!(error.to_string().contains("did you mean `platform`?"), "{error}");
        let Err(error) = named("abcd") else { panic!("no such id") };
        assert!(error.to_string().contains("platform@{1}…platform@{2}"), "{error}");
        let listed = list(home);
        let names: Vec<Option<&str>> = listed.iter().map(|listed| listed.name.as_deref()).collect();
        // The manifests are missing here, so the roles are unknown: none is current.
        assert_eq!(names, [Some("platform@{1}"), Some("platform@{2}"), None]);
    }
}
