//! fast primitives.
