//! indexing ops.
