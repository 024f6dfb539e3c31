//! Constant hoisting: entries of a fixed-shape trace that read constants
//! alone give the same values on every call, so they are computed once and
//! kept. An exported llama recomputes ~300 such nodes per decode step (the
//! norm weights broadcast to the activation's shape, the shift tables of
//! its quantized embedding, the rope frequencies); each costs a replay, a
//! place in the walk and a kernel launch on every call.
//!
//! Only what is cheap to keep is kept: results of at most [`KEEP_BYTES`],
//! and views of the constants themselves (which share their buffers). The
//! values are the kernels' own, computed from the same inputs, so a hoisted
//! trace gives the same bits.

use super::tape::{Tape, ValueRef};
use super::tracing::replay_recorded;
use crate::{Array, Result};
use std::sync::Arc;

/// Bytes a hoisted value may hold beyond the constants' own buffers.
const KEEP_BYTES: usize = 1 << 20;

/// Primitives whose result is (usually) a view of their first input: kept
/// at any size when it is one.
const VIEWS: &[&str] = &[
    "AsStrided",
    "Broadcast",
    "BroadcastAxes",
    "ExpandDims",
    "Flatten",
    "Reshape",
    "Slice",
    "Squeeze",
    "Transpose",
    "Unflatten",
];

/// A trace with its constant-only values computed: the remaining entries
/// read them as constants appended to the table.
pub struct Hoisted {
    pub tape: Tape,
    pub constants: Vec<Array>,
}

/// Computes the values of `tape` that depend on `constants` alone and are
/// read by the rest of it (or are outputs), and returns the tape that reads
/// them instead. `tape` must replay with its recorded specs
/// ([`replay_recorded`]). `None` when nothing is worth hoisting. An error
/// while computing is returned as is: the caller keeps the whole tape,
/// whose call then fails where it would have.
pub fn hoist(tape: &Tape, constants: &[Array]) -> Result<Option<Hoisted>> {
    let fixed = constant_only(tape);
    let is_fixed = |r: &ValueRef| match *r {
        ValueRef::Entry { entry, .. } => fixed[entry],
        _ => false,
    };
    // The frontier: constant-only values the rest of the tape reads.
    let mut wanted: Vec<(usize, usize)> = tape
        .entries
        .iter()
        .enumerate()
        .filter(|&(k, _)| !fixed[k])
        .flat_map(|(_, e)| e.inputs.iter())
        .chain(&tape.outputs)
        .filter(|r| is_fixed(r))
        .map(|r| match *r {
            ValueRef::Entry { entry, output } => (entry, output),
            _ => unreachable!("is_fixed holds only for entries"),
        })
        .filter(|&(k, o)| {
            let e = &tape.entries[k];
            let small = e.outputs[o]
                .checked_nbytes()
                .is_some_and(|n| n <= KEEP_BYTES);
            small || VIEWS.contains(&e.primitive.name())
        })
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(None);
    }
    // The part of the tape the wanted values need reads no inputs: replay
    // it alone and compute them in one walk.
    let mut part = Tape {
        entries: tape.entries.clone(),
        outputs: wanted
            .iter()
            .map(|&(entry, output)| ValueRef::Entry { entry, output })
            .collect(),
        ..Tape::default()
    };
    super::simplify::remove_dead(&mut part);
    let values = replay_recorded(&part, constants, &[])?;
    super::eval(&values)?;
    let mut table = constants.to_vec();
    let mut new_ref = std::collections::HashMap::new();
    for (&(entry, output), v) in wanted.iter().zip(values) {
        if v.nbytes() <= KEEP_BYTES || views_a_constant(&v, constants)? {
            new_ref.insert(
                ValueRef::Entry { entry, output },
                ValueRef::Constant(table.len()),
            );
            table.push(v);
        }
    }
    if new_ref.is_empty() {
        return Ok(None);
    }
    let mut out = tape.clone();
    let swap = |r: &mut ValueRef| {
        if let Some(&n) = new_ref.get(r) {
            *r = n;
        }
    };
    for e in &mut out.entries {
        e.inputs.iter_mut().for_each(swap);
    }
    out.outputs.iter_mut().for_each(swap);
    super::simplify::remove_dead(&mut out);
    Ok(Some(Hoisted {
        tape: out,
        constants: table,
    }))
}

/// For each entry, whether it reads constants (and constant-only entries)
/// alone.
fn constant_only(tape: &Tape) -> Vec<bool> {
    let mut fixed = vec![false; tape.entries.len()];
    for (k, e) in tape.entries.iter().enumerate() {
        fixed[k] = e.inputs.iter().all(|r| match *r {
            ValueRef::Input(_) => false,
            ValueRef::Constant(_) => true,
            ValueRef::Entry { entry, .. } => fixed[entry],
        });
    }
    fixed
}

/// Whether `v`'s data is (a view of) one of `constants`' buffers.
fn views_a_constant(v: &Array, constants: &[Array]) -> Result<bool> {
    let buffer = v.data()?.buffer;
    for c in constants.iter().filter(|c| c.is_ready()) {
        if Arc::ptr_eq(&c.data()?.buffer, &buffer) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::tracing::{replay, trace, ConstantPool};
    use crate::{ops, Dtype, Spec};

    /// Traces `f` on one float32 input of `n` values.
    fn traced(n: i32, f: impl FnOnce(&Array) -> Result<Array>) -> (Tape, Vec<Array>) {
        let mut pool = ConstantPool::default();
        let spec = Spec::new([n], Dtype::Float32);
        let tape = trace(|xs, _| Ok(vec![f(&xs[0])?]), &[spec], &[], &mut pool).unwrap();
        (tape, pool.arrays)
    }

    fn bits(a: &Array) -> Vec<u32> {
        a.to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    }

    /// `x + exp(c)`: the exponential is computed once and read as a
    /// constant; the result is the whole tape's, to the bit.
    #[test]
    fn constant_only_values_become_constants() {
        let c = Array::from_slice(&[0.5f32, -1.0, 2.0], &[3]).unwrap();
        let (tape, constants) = traced(3, |x| ops::add(x, &ops::exp(&c)?));
        assert_eq!(tape.entries.len(), 2);
        let h = hoist(&tape, &constants).unwrap().expect("exp hoisted");
        assert_eq!(h.tape.entries.len(), 1);
        assert_eq!(h.tape.entries[0].primitive.name(), "Add");
        assert_eq!(h.constants.len(), constants.len() + 1);
        let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        let hoisted = replay_recorded(&h.tape, &h.constants, std::slice::from_ref(&x)).unwrap();
        let whole = replay(&tape, &constants, &[x], false).unwrap();
        assert_eq!(bits(&hoisted[0]), bits(&whole[0]));
        let want = [
            1.0 + 0.5f32.exp(),
            2.0 + (-1.0f32).exp(),
            3.0 + 2.0f32.exp(),
        ];
        for (g, w) in hoisted[0].to_vec::<f32>().unwrap().iter().zip(want) {
            assert!((g - w).abs() <= 1e-6 * w.abs(), "{g} vs {w}");
        }
    }

    /// A large computed value is not kept (it would hold its bytes for the
    /// function's life); a view of a large constant is, at no cost.
    #[test]
    fn large_values_are_kept_only_as_views_of_constants() {
        let n = (KEEP_BYTES / 4 + 1) as i32;
        let big = ops::zeros(&[n], Dtype::Float32).unwrap();
        big.eval().unwrap();
        let (tape, constants) = traced(n, |x| ops::add(x, &ops::exp(&big)?));
        assert!(hoist(&tape, &constants).unwrap().is_none());
        let (tape, constants) = traced(1, |x| ops::add(x, &ops::reshape(&big, &[1, n])?));
        let h = hoist(&tape, &constants).unwrap().expect("reshape hoisted");
        let names: Vec<&str> = h.tape.entries.iter().map(|e| e.primitive.name()).collect();
        assert!(!names.contains(&"Reshape"), "{names:?}");
        let view = h.constants.last().unwrap();
        assert!(Arc::ptr_eq(
            &view.data().unwrap().buffer,
            &big.data().unwrap().buffer
        ));
    }

    /// A tape whose every entry reads an input has nothing to hoist.
    #[test]
    fn input_dependent_tapes_are_left_alone() {
        let (tape, constants) = traced(4, |x| ops::multiply(&ops::exp(x)?, x));
        assert!(hoist(&tape, &constants).unwrap().is_none());
    }

    /// A constant-only entry that fails is the caller's error to report.
    #[test]
    fn a_failing_constant_only_entry_is_an_error() {
        let (mut tape, constants) = traced(2, |x| {
            ops::add(x, &ops::exp(&Array::from_slice(&[1.0f32, 2.0], &[2])?)?)
        });
        // The recorded spec lies about nothing, but the constant is gone.
        tape.entries[0].inputs[0] = ValueRef::Constant(constants.len());
        assert!(hoist(&tape, &constants).is_err());
    }
}
