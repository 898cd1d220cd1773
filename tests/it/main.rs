//! The integration tests of the whole product, in one binary (as ripgrep and jj keep
//! theirs): one module per topic, sharing the helpers in `common`. Many run the real
//! `acompose` binary in temporary folders; the fixture corpora of `roster`, `catalogue`
//! and `compose` run those commands in-process through the cli, and the in-memory ones
//! call the driver and engine.

mod common;

mod audit;
mod bounded;
mod budgets;
mod bundle_names;
mod catalogue;
mod compatibility;
mod compose;
mod conventions;
mod converge;
mod delivery;
mod describe;
mod did_you_mean;
mod docs_delivery;
mod docs_runnable;
mod doctor;
mod estate;
mod faults;
mod git_delivery;
mod go_commands;
mod host_delivery;
mod hosted;
mod incremental;
mod isolation;
mod launch;
mod mcp;
mod no_panic;
mod one_role_per_tree;
mod one_run;
mod overlays;
mod parted;
mod people;
mod people_roles;
mod registry;
mod registry_hostile;
mod right_errors;
mod roster;
mod serve;
mod sessions;
mod settings;
mod signatures;
mod store;
