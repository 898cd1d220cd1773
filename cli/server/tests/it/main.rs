//! The server's integration tests in one binary: the JSON API (`api`), bounded
//! connections against slow, idle and oversized clients (`bounded`), People sessions over
//! HTTP and WebSocket (`sessions_api`), the World (`world`) and the page in a real
//! Chromium (`browser`).

mod support;

mod api;
mod authoring;
mod bounded;
mod browser;
mod sessions_api;
mod versions;
mod world;
