//! Tape simplification, as MLX's exporter and compiler do it: identity
//! primitives (`Copy`, `StopGradient`) are dropped, equal 0-d constants are
//! shared, equivalent entries with the same inputs are merged (common
//! subexpression elimination), and entries no output needs are removed.

use super::tape::{Tape, TapeEntry, ValueRef};
use crate::Array;
use std::collections::HashMap;

/// Primitives that return their single input unchanged.
const IDENTITIES: &[&str] = &["Copy", "StopGradient"];

/// Simplifies `tape` in place. `constants` is the constant table it refers to.
pub fn simplify(tape: &mut Tape, constants: &[Array]) {
    let const_alias = scalar_constant_aliases(tape, constants);
    merge(tape, &const_alias);
}

/// [`simplify`] without sharing equal constants, which would read them:
/// an import leaves its constants untouched until a call needs them (a
/// misaligned one is copied on first read).
pub fn merge_repeated(tape: &mut Tape) {
    merge(tape, &HashMap::new());
}

/// Drops identities, merges equivalent entries and removes dead ones, with
/// constant `i` read as `const_alias[i]` where it has one.
fn merge(tape: &mut Tape, const_alias: &HashMap<usize, usize>) {
    let mut alias: HashMap<ValueRef, ValueRef> = HashMap::new();
    let resolve = |r: ValueRef, alias: &HashMap<ValueRef, ValueRef>| -> ValueRef {
        let r = match r {
            ValueRef::Constant(i) => ValueRef::Constant(*const_alias.get(&i).unwrap_or(&i)),
            other => other,
        };
        *alias.get(&r).unwrap_or(&r)
    };
    // Key of an entry for CSE: its name, state and (resolved) inputs.
    let mut seen: HashMap<String, Vec<usize>> = HashMap::new();
    for k in 0..tape.entries.len() {
        let inputs: Vec<ValueRef> = tape.entries[k]
            .inputs
            .iter()
            .map(|&r| resolve(r, &alias))
            .collect();
        tape.entries[k].inputs = inputs.clone();
        let e = &tape.entries[k];
        if IDENTITIES.contains(&e.primitive.name()) && e.inputs.len() == 1 && e.outputs.len() == 1 {
            alias.insert(
                ValueRef::Entry {
                    entry: k,
                    output: 0,
                },
                e.inputs[0],
            );
            continue;
        }
        let key = format!("{}|{:?}", e.primitive.name(), e.inputs);
        let candidates = seen.entry(key).or_default();
        let twin = candidates.iter().copied().find(|&j| {
            let o = &tape.entries[j];
            o.outputs == e.outputs && o.primitive.is_equivalent(&*e.primitive)
        });
        match twin {
            Some(j) => {
                for out in 0..e.outputs.len() {
                    alias.insert(
                        ValueRef::Entry {
                            entry: k,
                            output: out,
                        },
                        ValueRef::Entry {
                            entry: j,
                            output: out,
                        },
                    );
                }
            }
            None => candidates.push(k),
        }
    }
    tape.outputs = tape.outputs.iter().map(|&r| resolve(r, &alias)).collect();
    remove_dead(tape);
}

/// Maps each 0-d constant to the first one with the same dtype and bytes.
fn scalar_constant_aliases(tape: &Tape, constants: &[Array]) -> HashMap<usize, usize> {
    let mut first: HashMap<(crate::Dtype, Vec<u8>), usize> = HashMap::new();
    let mut alias = HashMap::new();
    let used = tape
        .entries
        .iter()
        .flat_map(|e| e.inputs.iter())
        .chain(tape.outputs.iter())
        .filter_map(|r| {
            if let ValueRef::Constant(i) = r {
                Some(*i)
            } else {
                None
            }
        });
    for i in used {
        let Some(c) = constants.get(i) else { continue };
        if c.ndim() != 0 {
            continue;
        }
        let Ok(d) = c.data() else { continue };
        let size = c.dtype().size();
        let start = d.offset * size;
        let Some(bytes) = d.buffer.bytes().get(start..start + size) else {
            continue;
        };
        let j = *first.entry((c.dtype(), bytes.to_vec())).or_insert(i);
        if j != i {
            alias.insert(i, j);
        }
    }
    alias
}

/// Drops entries that no output depends on and renumbers the rest.
pub(crate) fn remove_dead(tape: &mut Tape) {
    let n = tape.entries.len();
    let mut live = vec![false; n];
    let mut stack: Vec<usize> = tape
        .outputs
        .iter()
        .filter_map(|r| {
            if let ValueRef::Entry { entry, .. } = r {
                Some(*entry)
            } else {
                None
            }
        })
        .collect();
    while let Some(k) = stack.pop() {
        if std::mem::replace(&mut live[k], true) {
            continue;
        }
        for r in &tape.entries[k].inputs {
            if let ValueRef::Entry { entry, .. } = r {
                stack.push(*entry);
            }
        }
    }
    let mut new_index = vec![usize::MAX; n];
    let mut kept: Vec<TapeEntry> = Vec::new();
    for (k, e) in std::mem::take(&mut tape.entries).into_iter().enumerate() {
        if live[k] {
            new_index[k] = kept.len();
            kept.push(e);
        }
    }
    let renumber = |r: &mut ValueRef| {
        if let ValueRef::Entry { entry, .. } = r {
            *entry = new_index[*entry];
        }
    };
    for e in &mut kept {
        e.inputs.iter_mut().for_each(renumber);
    }
    tape.outputs.iter_mut().for_each(renumber);
    tape.entries = kept;
}
