//! creation primitives.
