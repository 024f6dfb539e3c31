//! The trace IR: a [`Tape`] of primitive entries in topological order,
//! each reading the function's inputs, constants or earlier entries
//! ([`ValueRef`]). Tracing produces it, `compile` simplifies, fuses and
//! replays it, and `export` encodes it (one [`Tape`] per traced signature).

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

/// The shape and dtype a value reference stands for.
pub(crate) fn spec_of_ref(t: &Tape, constants: &[Array], r: &ValueRef) -> Spec {
    match *r {
        ValueRef::Input(i) => t.inputs[i].clone(),
        ValueRef::Constant(i) => constants[i].spec().clone(),
        ValueRef::Entry { entry, output } => t.entries[entry].outputs[output].clone(),
    }
}

/// How many times each entry's outputs are read, by later entries and as
/// function outputs (the passes that merge entries leave one that others
/// read, or that is an output, where it is).
pub(crate) fn reader_counts(t: &Tape) -> Vec<usize> {
    let mut readers = vec![0usize; t.entries.len()];
    for r in t.entries.iter().flat_map(|e| &e.inputs).chain(&t.outputs) {
        if let ValueRef::Entry { entry, .. } = *r {
            readers[entry] += 1;
        }
    }
    readers
}

/// The index of `r` in `ext`, appended first if it is not there: the
/// inputs of an entry that stands for several, in order of first use.
pub(crate) fn input_index(ext: &mut Vec<ValueRef>, r: ValueRef) -> usize {
    ext.iter().position(|x| *x == r).unwrap_or_else(|| {
        ext.push(r);
        ext.len() - 1
    })
}
