//! Where a home's private overlays are and how they are read into salsa inputs
//! (`acompose_engine::overlay` says what they mean). Overlays live outside every
//! repository: the files `agent-compose.yaml` names under `overlays:` (in that order), or
//! else every `*.kdl` file of `<home>/overlays/` in name order.

use acompose_engine::host_config::HostConfig;
use acompose_engine::{Database, Diagnostic, SourceFile};

use crate::compose::load::Loader;
use crate::home::Home;

pub use crate::home::OVERLAYS_DIR;

pub use crate::home::overlay_paths;

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
