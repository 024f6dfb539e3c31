//! Fusion of element-wise chains for `compile` and imported traces: a tree
//! of element-wise entries whose intermediates nobody else reads becomes
//! one [`Fused`] entry (its executor lives in `transforms::fused`).

use super::fused::{Fused, Operand, Step};
use super::tape::{input_index, reader_counts, spec_of_ref, Tape, TapeEntry, ValueRef};
use crate::Array;
use std::collections::HashMap;

/// Rewrites `tape` so that element-wise trees become [`Fused`] entries.
pub fn fuse(tape: &mut Tape, constants: &[Array]) {
    let n = tape.entries.len();
    // An entry read once, by one entry and not as an output, can be absorbed.
    let readers = reader_counts(tape);
    let is_ew = |e: &TapeEntry| e.primitive.is_elementwise() && e.outputs.len() == 1;
    let spec_of = |t: &Tape, r: &ValueRef| spec_of_ref(t, constants, r);
    // absorbed[k]: entry k is computed inside a later fused entry.
    let mut absorbed = vec![false; n];
    let mut new_entries: Vec<Option<TapeEntry>> = vec![None; n];
    for k in (0..n).rev() {
        if absorbed[k] || !is_ew(&tape.entries[k]) {
            continue;
        }
        let shape = tape.entries[k].outputs[0].shape.clone();
        // Collect the tree rooted at k: steps in evaluation order.
        let mut steps: Vec<Step> = Vec::new();
        let mut ext: Vec<ValueRef> = Vec::new();
        let mut build = |root: usize, steps: &mut Vec<Step>| -> usize {
            // Iterative post-order over the absorbable tree.
            enum Item {
                Visit(usize),
                Emit(usize),
            }
            let mut stack = vec![Item::Visit(root)];
            let mut step_of: HashMap<usize, usize> = HashMap::new();
            while let Some(it) = stack.pop() {
                match it {
                    Item::Visit(e) => {
                        stack.push(Item::Emit(e));
                        for r in tape.entries[e].inputs.iter().rev() {
                            if let ValueRef::Entry { entry, .. } = *r {
                                let c = &tape.entries[entry];
                                if is_ew(c)
                                    && readers[entry] == 1
                                    && c.outputs[0].shape == shape
                                    && !absorbed[entry]
                                {
                                    absorbed[entry] = true;
                                    stack.push(Item::Visit(entry));
                                }
                            }
                        }
                    }
                    Item::Emit(e) => {
                        let ops = tape.entries[e]
                            .inputs
                            .iter()
                            .map(|r| match *r {
                                ValueRef::Entry { entry, .. }
                                    if step_of.contains_key(&entry) && entry != e =>
                                {
                                    Operand::Step(step_of[&entry])
                                }
                                other => Operand::Input(input_index(&mut ext, other)),
                            })
                            .collect();
                        steps.push((tape.entries[e].primitive.clone(), ops));
                        step_of.insert(e, steps.len() - 1);
                    }
                }
            }
            steps.len()
        };
        let count = build(k, &mut steps);
        if count < 2 || ext.iter().any(|r| spec_of(tape, r).shape != shape) {
            // Nothing to fuse, or an input is not at the output shape: undo.
            reset_absorbed(tape, k, &mut absorbed);
            continue;
        }
        new_entries[k] = Some(TapeEntry {
            primitive: Box::new(Fused::new(steps)),
            inputs: ext,
            outputs: tape.entries[k].outputs.clone(),
        });
    }
    for (k, e) in new_entries.into_iter().enumerate() {
        if let Some(e) = e {
            tape.entries[k] = e;
        }
    }
    // Absorbed entries are now unused.
    crate::transforms::simplify::remove_dead(tape);
}

/// Clears the absorbed marks of the tree under `root` (a fusion that was abandoned).
fn reset_absorbed(tape: &Tape, root: usize, absorbed: &mut [bool]) {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        for r in &tape.entries[e].inputs {
            if let ValueRef::Entry { entry, .. } = *r {
                if absorbed[entry] {
                    absorbed[entry] = false;
                    stack.push(entry);
                }
            }
        }
    }
}
