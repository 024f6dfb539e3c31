//! conv primitives.
