//! Exporting traced functions to a file and importing them back.

pub mod tape;

pub use tape::{FunctionTable, Tape, TapeEntry, ValueRef};
