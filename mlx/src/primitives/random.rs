//! random primitives.
