//! `acompose bundle materialize --role R --harness H`: composes the role's bundle from the
//! home's configuration (estate, overlays) at the tier of the role's seat for that harness,
//! and writes it, verified, in one step. Nothing is projected.

use std::path::{Path, PathBuf};

use acompose_engine::harness_layout;

use crate::convergence::Converger;
use crate::convergence::RoleRequest;
use crate::error::HostError;
use crate::home::Home;
use crate::progress::Progress;

/// The tier a role composes at when its seat for the harness names none.
const DEFAULT_TIER: &str = "frontier";

/// One materialized bundle: where it is, its id, and the tier and seat it was made for.
#[derive(Debug, Clone)]
pub struct Materialized {
    pub path: PathBuf,
    pub id: String,
    pub role: String,
    pub harness: String,
    pub tier: String,
    /// The seat of the role for the harness, when it has one.
    pub seat: Option<String>,
}

/// Composes `role` for `harness` and writes the bundle into `out`.
pub fn materialize(
    home: &Home,
    projects: &Path,
    role: &str,
    harness: &str,
    out: &Path,
    progress: &dyn Progress,
) -> Result<Materialized, HostError> {
    let Some(layout) = harness_layout::layout(harness) else {
        let known: Vec<&str> = harness_layout::layouts().iter().map(|layout| layout.harness).collect();
        return Err(HostError::invalid(
            "",
            format!(
                "`{}` is not a harness; harnesses: {}",
                acompose_engine::diagnostic::sanitize(harness),
                known.join(", ")
            ),
        ));
    };
    let config = crate::home::read_config(home, progress)?;
    let mut converger = Converger::default();
    let model = converger.person_model(home, &config, progress)?;
    let (tier, seat) = match model.role(role) {
        Some(known) => {
            let seat = known.seats.iter().find(|seat| seat.harness == layout.harness || seat.key == layout.harness);
            let tier = seat
                .and_then(|seat| seat.tier.clone())
                .or_else(|| known.model_tiers.iter().find(|tier| *tier == DEFAULT_TIER).cloned())
                .or_else(|| known.model_tiers.first().cloned())
                .unwrap_or_else(|| DEFAULT_TIER.to_owned());
            (tier, seat.map(|seat| seat.key.clone()))
        }
        // An unknown role is refused by the composition, with the valid slugs.
        None => (DEFAULT_TIER.to_owned(), None),
    };
    let (path, _) =
        converger.compose_role(home, projects, &config, &RoleRequest { role, tier: &tier, bundles: out }, progress)?;
    let id = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Materialized { path, id, role: role.to_owned(), harness: layout.harness.to_owned(), tier, seat })
}
