//! The in-memory form of an exported file, shared by both formats: a
//! [`FunctionTable`] of traced functions, each a [`Tape`] of primitive
//! entries in topological order, plus one constant table for the file.
//!
//! Tracing produces it, the native and MLX codecs read and write it, and
//! replay turns it back into a graph on real inputs.

use crate::primitive::{Primitive, Spec};
use crate::Array;

/// Where a tape entry (or a function output) takes a value from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueRef {
    /// The function's flattened input `i` (positional, then keywords by name).
    Input(usize),
    /// Constant `i` of the file-wide constant table.
    Constant(usize),
    /// Output `output` of tape entry `entry`.
    Entry { entry: usize, output: usize },
}

/// One primitive application.
#[derive(Clone, Debug)]
pub struct TapeEntry {
    pub primitive: Box<dyn Primitive>,
    pub inputs: Vec<ValueRef>,
    /// Shapes and dtypes of every output, as traced.
    pub outputs: Vec<Spec>,
}

/// One traced function (one signature).
#[derive(Clone, Debug, Default)]
pub struct Tape {
    /// Number of positional inputs; the rest of `inputs` are keyword inputs.
    pub positional: usize,
    /// Keyword names, sorted, for `inputs[positional..]`.
    pub kwarg_names: Vec<String>,
    /// Every input's traced shape and dtype.
    pub inputs: Vec<Spec>,
    pub entries: Vec<TapeEntry>,
    pub outputs: Vec<ValueRef>,
}

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
