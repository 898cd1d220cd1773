//! Root package: owns the workspace-level integration tests in `tests/` and the benchmarks in `benches/`.
