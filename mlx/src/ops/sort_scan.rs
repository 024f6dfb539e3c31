//! sort_scan ops.
