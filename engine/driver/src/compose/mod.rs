//! Composition: what a bundle is made of and where it is kept. Loading packages and
//! catalogues into salsa inputs (`load`, `sources`, `request`), the host's overlays, MCP
//! inventory and content audit, bundles and their materialization, placement, the
//! content-addressed store, export and import, the OCI
//! registry, signatures, and the `--why` decision trace.
//!
//! May call the home (`crate::home`) for its layout, settings, transactions and atomic
//! writes; never delivers into a harness and never converges.

pub mod artifact;
pub mod audit;
pub mod bundle;
pub mod compose_cache;
pub mod estate;
pub mod export;
pub mod load;
pub mod mcp_inventory;
pub mod overlays;
pub mod parted;
pub mod placement;
pub mod registry;
pub mod request;
pub mod scaffold;
pub mod signature;
mod sources;
pub mod store;
pub mod why;

pub use sources::Sources;
