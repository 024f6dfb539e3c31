//! The in-memory form of an exported file, shared by both formats: a
//! [`FunctionTable`] of traced functions, each a [`Tape`] (the trace IR of
//! `transforms::tape`), plus one constant table for the file.
//!
//! The native and MLX codecs read and write it, and replay turns it back
//! into a graph on real inputs.

pub use crate::transforms::tape::{Tape, TapeEntry, ValueRef};
use crate::Array;

/// Everything a file holds.
#[derive(Clone, Debug, Default)]
pub struct FunctionTable {
    pub functions: Vec<Tape>,
    /// Evaluated arrays captured by the functions, stored once per file.
    pub constants: Vec<Array>,
    pub shapeless: bool,
    pub metadata: String,
    /// The version string of the library that wrote the file (for messages).
    pub writer_version: String,
}
