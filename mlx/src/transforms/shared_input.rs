//! Quantized products of one input row with several constant matrices (a
//! decode step's query, key and value projections; the gate and up
//! projections of its MLP) run as one entry. Each product on its own
//! prepares the row, hands its rows over to the other threads and waits
//! for the slowest task; at batch 1 the key and value projections are a
//! few microseconds of work each, so that overhead is a good part of them.
//! Together they prepare the row once and share one set of parallel tasks
//! (see [`qgemv_many`](crate::backend::cpu::qgemv::qgemv_many)). Each
//! output is computed exactly as its own product would compute it.
//!
//! Like a recognised subgraph, the entry has no registry entry: exports
//! and transforms use its fallback, the products one by one.

use super::simplify::remove_dead;
use super::tape::{spec_of_ref, Tape, TapeEntry, ValueRef};
use crate::array::Data;
use crate::primitive::{Primitive, Spec};
use crate::primitives::quantized::QuantizedMatmul;
use crate::{Array, Result};

/// Merges the one-row [`QuantizedMatmul`] entries of `tape` that read the
/// same input with the same parameters, and constant weights, into one
/// [`SharedInputQmm`] entry at the first one's place (their other inputs
/// are constants, so the later ones can run there too).
pub fn merge_shared_input(tape: &mut Tape, constants: &[Array]) {
    let mut groups: Vec<(ValueRef, &QuantizedMatmul, Vec<usize>)> = Vec::new();
    for (k, e) in tape.entries.iter().enumerate() {
        let Some(q) = e.primitive.as_any().downcast_ref::<QuantizedMatmul>() else {
            continue;
        };
        if e.inputs.len() != 4 || e.outputs.len() != 1 {
            continue;
        }
        if !e.inputs[1..]
            .iter()
            .all(|r| matches!(r, ValueRef::Constant(_)))
        {
            continue;
        }
        let x = e.inputs[0];
        let xs = spec_of_ref(tape, constants, &x);
        if xs.shape.last().is_none_or(|&k| xs.size() != k as usize) {
            continue;
        }
        match groups.iter_mut().find(|(gx, gq, _)| *gx == x && *gq == q) {
            Some(g) => g.2.push(k),
            None => groups.push((x, q, vec![k])),
        }
    }
    let merged: Vec<(usize, TapeEntry, Vec<usize>)> = groups
        .into_iter()
        .filter(|g| g.2.len() > 1)
        .map(|(x, q, members)| {
            let mut inputs = vec![x];
            let mut outputs = Vec::with_capacity(members.len());
            for &m in &members {
                inputs.extend_from_slice(&tape.entries[m].inputs[1..]);
                outputs.push(tape.entries[m].outputs[0].clone());
            }
            let entry = TapeEntry {
                primitive: Box::new(SharedInputQmm { qmm: q.clone() }),
                inputs,
                outputs,
            };
            (members[0], entry, members)
        })
        .collect();
    if merged.is_empty() {
        return;
    }
    for (first, entry, members) in merged {
        // Readers of each member's output read the merged entry's instead.
        let moved = |r: &mut ValueRef| {
            if let ValueRef::Entry { entry, output: 0 } = *r {
                if let Some(j) = members.iter().position(|&m| m == entry) {
                    *r = ValueRef::Entry {
                        entry: first,
                        output: j,
                    };
                }
            }
        };
        for e in &mut tape.entries {
            e.inputs.iter_mut().for_each(moved);
        }
        tape.outputs.iter_mut().for_each(moved);
        tape.entries[first] = entry;
    }
    remove_dead(tape);
}

/// Quantized products of one `x` with several matrices: inputs `x`, then
/// (weight, scales, biases) per product; one output per product.
#[derive(Clone, Debug)]
pub struct SharedInputQmm {
    qmm: QuantizedMatmul,
}

impl SharedInputQmm {
    /// The (weight, scales, biases) of each product.
    fn mats(inputs: &[Array]) -> Vec<[Array; 3]> {
        inputs[1..]
            .chunks_exact(3)
            .map(|m| [m[0].clone(), m[1].clone(), m[2].clone()])
            .collect()
    }
}

run_time_node_state!(SharedInputQmm, "merged quantized products", |_q| {
    "QuantizedMatmuls"
});

impl Primitive for SharedInputQmm {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let mut specs = Vec::with_capacity(inputs.len() / 3);
        for m in inputs[1..].chunks(3) {
            let one = [inputs[0].clone(), m[0].clone(), m[1].clone(), m[2].clone()];
            specs.extend(self.qmm.output_specs(&one)?);
        }
        Ok(specs)
    }

    fn eval(&self, inputs: &[Array], outputs: &[Spec]) -> Result<Vec<Data>> {
        self.qmm
            .eval_shared_x(&inputs[0], &Self::mats(inputs), outputs)
    }

    /// The products one by one.
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        Some(
            Self::mats(inputs)
                .into_iter()
                .map(|[w, s, b]| {
                    Array::from_primitive(self.qmm.clone(), vec![inputs[0].clone(), w, s, b])
                })
                .collect(),
        )
    }

    fn is_equivalent(&self, _other: &dyn Primitive) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;
    use crate::primitives::quantized::QuantizationMode;

    /// The merged products, run together and through the fallback, give
    /// the bits of each product on its own; a batch of two rows (no
    /// one-row kernel) runs them one by one with the same result.
    #[test]
    fn merged_products_and_fallback_give_each_products_bits() {
        let qmm = QuantizedMatmul {
            group_size: 64,
            bits: 4,
            mode: QuantizationMode::Affine,
            transpose: true,
        };
        let merged = SharedInputQmm { qmm: qmm.clone() };
        let mats: Vec<[Array; 3]> = [(96, 1), (40, 2), (300, 3)]
            .iter()
            .map(|&(n, seed)| {
                let key = ops::random::key(seed);
                let w = ops::random::uniform_unit(&[n, 128], crate::Dtype::Float32, Some(&key))
                    .unwrap();
                let (q, s, b) = ops::quantize(&w, 64, 4).unwrap();
                [q, s, b]
            })
            .collect();
        for rows in [1, 2] {
            let key = ops::random::key(7);
            let x =
                ops::random::uniform_unit(&[rows, 128], crate::Dtype::Float32, Some(&key)).unwrap();
            let mut inputs = vec![x.clone()];
            inputs.extend(mats.iter().flatten().cloned());
            crate::eval(&inputs).unwrap();
            let specs: Vec<Spec> = inputs.iter().map(|a| a.spec().clone()).collect();
            let outs = merged.output_specs(&specs).unwrap();
            let got = merged.eval(&inputs, &outs).unwrap();
            let fallback = merged.fallback(&inputs).unwrap().unwrap();
            for (([w, s, b], g), f) in mats.iter().zip(&got).zip(&fallback) {
                let want = ops::quantized_matmul(&x, w, s, b, true, 64, 4).unwrap();
                let want = want.to_vec::<f32>().unwrap();
                let g = Array::from_data_unchecked(g.clone(), want_spec(&x, w));
                assert_eq!(g.to_vec::<f32>().unwrap(), want, "rows {rows}");
                assert_eq!(f.to_vec::<f32>().unwrap(), want, "rows {rows}");
            }
        }
    }

    /// Only products of one row with the same parameters and constant
    /// weights merge, and readers (outputs included) follow the merged
    /// outputs: of four products of input 0, the two 4-bit ones with
    /// constant weights become one entry; the 8-bit one and the one whose
    /// weight is input 1 stay; the same product of a two-row input stays.
    #[test]
    fn merges_only_one_row_products_with_the_same_parameters_and_constant_weights() {
        let qmm = |bits| QuantizedMatmul {
            group_size: 64,
            bits,
            mode: QuantizationMode::Affine,
            transpose: true,
        };
        let f32s = |shape: &[i32]| Spec::new(shape.to_vec(), crate::Dtype::Float32);
        let entry = |bits, x, w| TapeEntry {
            primitive: Box::new(qmm(bits)),
            inputs: vec![x, w, ValueRef::Constant(9), ValueRef::Constant(9)],
            outputs: vec![f32s(&[1, 8])],
        };
        let c = ValueRef::Constant;
        let mut tape = Tape {
            inputs: vec![f32s(&[1, 128]), f32s(&[8, 16]), f32s(&[2, 128])],
            entries: vec![
                entry(4, ValueRef::Input(0), c(0)),
                entry(8, ValueRef::Input(0), c(1)),
                entry(4, ValueRef::Input(0), ValueRef::Input(1)),
                entry(4, ValueRef::Input(0), c(2)),
                entry(4, ValueRef::Input(2), c(3)),
                entry(4, ValueRef::Input(2), c(4)),
            ],
            outputs: (0..6)
                .map(|entry| ValueRef::Entry { entry, output: 0 })
                .collect(),
            ..Tape::default()
        };
        merge_shared_input(&mut tape, &[]);
        let names: Vec<&str> = tape.entries.iter().map(|e| e.primitive.name()).collect();
        assert_eq!(
            names,
            [
                "QuantizedMatmuls",
                "QuantizedMatmul",
                "QuantizedMatmul",
                "QuantizedMatmul",
                "QuantizedMatmul"
            ]
        );
        assert_eq!(
            tape.entries[0].inputs[..4],
            [ValueRef::Input(0), c(0), c(9), c(9)]
        );
        assert_eq!(tape.entries[0].inputs[4], c(2));
        let at = |entry, output| ValueRef::Entry { entry, output };
        assert_eq!(
            tape.outputs,
            [at(0, 0), at(1, 0), at(2, 0), at(0, 1), at(3, 0), at(4, 0)]
        );
    }

    /// The spec of `x @ dequantize(w).T` for 4-bit `w`.
    fn want_spec(x: &Array, w: &Array) -> Spec {
        Spec::new([x.shape()[0], w.shape()[0]], crate::Dtype::Float32)
    }
}
