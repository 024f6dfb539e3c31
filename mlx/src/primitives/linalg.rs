//! linalg primitives.
