//! Reductions.
