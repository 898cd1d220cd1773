//! Delivery: a bundle into the folders a harness reads. Projections and their register,
//! managed instruction blocks, what git sees of them (the exclude file and the clean
//! filter), harness MCP files, mounts of user skills, runtime homes, launch, the identity
//! a harness shows, one role per work tree, and `compose -- COMMAND`. (Launch itself
//! converges first, so it lives in `crate::convergence`.)
//!
//! May call the home (`crate::home`) and composition (`crate::compose`) for bundles, their
//! names and the store; never composes a bundle itself.

pub mod git_exclude;
pub mod git_filter;
pub mod identity;
mod instruction_block;
mod mcp_config;
pub mod mounts;
pub mod projection;
pub mod projection_git;
pub mod projections;
pub mod run_with;
pub mod runtime_home;
pub mod tree_sight;
