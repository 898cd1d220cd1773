//! Where a home's private overlays are and how they are read into salsa inputs
//! (`acompose_engine::overlay` says what they mean). Overlays live outside every
//! repository: the files `agent-compose.yaml` names under `overlays:` (in that order), or
//! else every `*.kdl` file of `<home>/overlays/` in name order.

use std::path::PathBuf;

use acompose_engine::host_config::HostConfig;
use acompose_engine::{Database, Diagnostic, SourceFile};

use crate::compose::load::Loader;
use crate::home::Home;

/// The folder of a home whose `*.kdl` files are its overlays when the configuration
/// names none.
pub const OVERLAYS_DIR: &str = "overlays";

/// The overlay files of a home, in the order they apply; the folder listed when the
/// configuration names none (`None` for it then, so the caller can watch it).
pub fn overlay_paths(home: &Home, config: &HostConfig) -> (Vec<PathBuf>, Option<PathBuf>) {
    if !config.overlays.is_empty() {
        let paths = config.overlays.iter().map(|(text, _)| crate::home::config_path(text, home)).collect();
        return (paths, None);
    }
    let folder = home.join(OVERLAYS_DIR);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    !name.starts_with('.') && name.ends_with(".kdl")
                })
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    (paths, Some(folder))
}

/// Reads a home's overlays into the loader's inputs: the same inputs again for an
/// unchanged file, so nothing that depends on it runs again.
pub fn read_overlays(
    loader: &mut Loader,
    db: &mut Database,
    home: &Home,
    config: &HostConfig,
) -> Result<Vec<SourceFile>, Vec<Diagnostic>> {
    let (paths, folder) = overlay_paths(home, config);
    loader.overlays(db, &paths, folder.as_deref())
}
