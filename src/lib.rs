//! The workspace root package: it owns the integration tests, benchmarks and examples.
