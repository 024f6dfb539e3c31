//! sort_scan primitives.
