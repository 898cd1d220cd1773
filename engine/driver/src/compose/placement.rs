//! Where one bundle outside convergence goes (`compose`, `bundle import`): the output
//! folder, the store its skills link into (`--store`, the home's store for outputs in the
//! home, else `<out>/.store`) or a standalone copy, and the home lock held while the
//! home's store is written (so `gc` never removes an entry a bundle is about to link).

use std::path::{Path, PathBuf};

use acompose_engine::bundle::Bundle;

use crate::compose::bundle::{Materialization, Placement, Verification, materialize_into};
use crate::compose::load::error_kind;
use crate::compose::store::{LOCAL_STORE_DIR, Store};
use crate::error::HostError;
use crate::home::Home;
use crate::home::LOCK_TIMEOUT;
use crate::home::transaction;

/// How a bundle's skills are placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Real copies in the bundle folder.
    Standalone,
    /// Links into a store: the named one, or the default for the output folder.
    Store(Option<PathBuf>),
}

/// The resolved destination of one bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub out: PathBuf,
    /// `None` for a standalone bundle.
    pub store: Option<Store>,
    /// The home whose lock guards the store, when the store is the home's.
    home: Option<Home>,
}

fn canonical_or_self(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Resolves where a bundle goes. Creates the output folder (to resolve it); the store
/// is created when written.
pub fn destination(home: Option<&Home>, out: &Path, target: &Target) -> Result<Destination, HostError> {
    std::fs::create_dir_all(out).map_err(|error| {
        HostError::environment(out, format!("cannot create `{}`: {}", out.display(), error_kind(&error)))
    })?;
    let out_resolved = canonical_or_self(out);
    let home_resolved = home.filter(|home| home.is_dir()).map(|home| Home::at(canonical_or_self(home)));
    let in_home = home_resolved.as_ref().filter(|home| out_resolved.starts_with(home.root()));
    let store = match target {
        Target::Standalone => None,
        Target::Store(Some(store)) => Some(Store::at(store)),
        Target::Store(None) => match in_home {
            Some(home) => Some(Store::of_home(home)),
            None => Some(Store::at(out.join(LOCAL_STORE_DIR))),
        },
    };
    // The home's lock guards its store, whichever flag named it.
    let home = home_resolved.filter(|home| {
        store.as_ref().is_some_and(|store| {
            let root = store
                .root()
                .parent()
                .map(canonical_or_self)
                .map(|parent| parent.join(crate::compose::store::STORE_DIR));
            root.as_deref() == Some(Store::of_home(home).root())
        })
    });
    Ok(Destination { out: out.to_path_buf(), store, home })
}

/// The locks a writer of a destination holds: the home's when the store is the home's,
/// and the output folder's. Held, no other run is live there.
pub struct Locked {
    _home: Option<transaction::Lock>,
    _out: transaction::Lock,
}

/// Takes the destination's locks, then removes what interrupted runs left in the output
/// folder, and the staging folders of a store only this folder's writers use (its own
/// `.store`) or one the home lock guards.
pub fn lock(destination: &Destination) -> Result<Locked, HostError> {
    let home = match &destination.home {
        Some(home) => Some(transaction::lock(home, LOCK_TIMEOUT)?),
        None => None,
    };
    let out = transaction::lock(&destination.out, LOCK_TIMEOUT)?;
    crate::home::debris::remove(&destination.out);
    if let Some(store) = &destination.store
        && (destination.home.is_some() || store.root() == destination.out.join(LOCAL_STORE_DIR))
    {
        store.remove_staging();
    }
    Ok(Locked { _home: home, _out: out })
}

/// Materializes `bundle` at its destination (fully verified), under the home lock when
/// it links into the home's store.
pub fn place(destination: &Destination, bundle: &Bundle) -> Result<Materialization, HostError> {
    let locked = lock(destination)?;
    place_locked(destination, &locked, bundle)
}

/// [`place`] for a caller that holds the destination's locks already.
pub fn place_locked(
    destination: &Destination,
    _locked: &Locked,
    bundle: &Bundle,
) -> Result<Materialization, HostError> {
    let placement = match &destination.store {
        Some(store) => Placement::Linked(store),
        None => Placement::Standalone,
    };
    materialize_into(&destination.out, bundle, placement, Verification::Full, &mut || Ok(()))
}
