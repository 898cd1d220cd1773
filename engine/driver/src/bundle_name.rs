//! Naming a bundle the way a person does: the path of its folder, a role slug (the home's
//! current bundle of that role, from `<home>/bundles/index.json`), or a prefix of at
//! least four hex digits of its id among the home's bundles (`<home>/bundles` and the
//! launches' `<home>/runtime/bundles`); and the home's bundles listed for `bundle list`.
//! Reads only; a name that fits nothing, or several bundles, is an error that says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use acompose_engine::diagnostic::sanitize;

use crate::error::HostError;
use crate::home::BUNDLES_DIR;

/// The fewest hex digits an id prefix must have.
pub const MIN_PREFIX: usize = 4;
/// How many candidates an ambiguous prefix lists.
const LISTED: usize = 10;

/// Where the home keeps bundles, and what each folder is called in a listing.
const FOLDERS: [(&str, &str); 2] = [(BUNDLES_DIR, "bundles"), (crate::launch::RUNTIME_BUNDLES_DIR, "runtime")];

pub use crate::home::read_index;

fn is_bundle_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// Every bundle folder of the home: `(id, folder, place)`, ids in order, an id in both
/// places given once (the estate's folder first).
fn bundle_folders(home: &Path) -> Vec<(String, PathBuf, &'static str)> {
    let mut found: BTreeMap<String, (PathBuf, &'static str)> = BTreeMap::new();
    for (relative, place) in FOLDERS {
        let Ok(entries) = std::fs::read_dir(home.join(relative)) else { continue };
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
pub fn resolve(home: Option<&Path>, name: &Path) -> Result<PathBuf, HostError> {
    if std::fs::symlink_metadata(name).is_ok() {
        return Ok(name.to_path_buf());
    }
    let text = name.to_string_lossy();
    let shown = sanitize(&text);
    let Some(home) = home else {
        return Err(HostError::invalid(name, format!("`{shown}` is not a bundle directory")));
    };
    let index = read_index(home);
    if let Some(id) = index.get(text.as_ref()) {
        let folder = home.join(BUNDLES_DIR).join(id);
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
                format!("no bundle of the home `{}` has an id starting with `{shown}`", home.display()),
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
    pub modified: Option<SystemTime>,
    /// Bytes of every file it shows (its own and the store entries it links).
    pub bytes: u64,
    /// The registered projections showing it: their target folders.
    pub projections: Vec<PathBuf>,
}

/// Every bundle of the home: current ones first (by role), then the others by id.
pub fn list(home: &Path) -> Vec<Listed> {
    let index = read_index(home);
    let registered = crate::projections::list(home);
    let mut listed: Vec<Listed> = bundle_folders(home)
        .into_iter()
        .map(|(id, folder, place)| {
            let role = crate::bundle::read_manifest(&folder).map(|manifest| manifest.role.slug).unwrap_or_default();
            let current = place == "bundles" && index.get(&role) == Some(&id);
            let projections = registered
                .iter()
                .filter(|projection| projection.bundle == id)
                .map(|projection| projection.target.clone())
                .collect();
            let modified = std::fs::metadata(&folder).and_then(|metadata| metadata.modified()).ok();
            let bytes = shown_bytes(&folder);
            Listed { id, folder, place, role, current, modified, bytes, projections }
        })
        .collect();
    listed.sort_by(|a, b| (!a.current, &a.role, &a.id).cmp(&(!b.current, &b.role, &b.id)));
    listed
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
        let home = temporary.path();
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
}
