//! indexing primitives.
