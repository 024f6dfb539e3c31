//! Tracing: run a function on placeholder inputs and record the lazy graph
//! it builds as a [`Tape`]. Shared by export and compile.

use super::tape::{Tape, TapeEntry, ValueRef};
use crate::array::Node;
use crate::primitive::Spec;
use crate::trace_flag::TraceGuard;
use crate::{Array, Error, Kwargs, Result};
use std::collections::HashMap;
use std::sync::Arc;

/// Constants captured by traced functions, each stored once (by identity).
#[derive(Default, Debug)]
pub struct ConstantPool {
    pub arrays: Vec<Array>,
    index: HashMap<usize, usize>,
}

impl ConstantPool {
    /// The index of `a` in the pool, adding it if new. The pool keeps `a`
    /// alive, so its identity cannot be reused by another array.
    pub fn intern(&mut self, a: &Array) -> usize {
        if let Some(&i) = self.index.get(&a.id()) {
            return i;
        }
        self.arrays.push(a.clone());
        self.index.insert(a.id(), self.arrays.len() - 1);
        self.arrays.len() - 1
    }
}

/// Placeholders for `specs`.
pub fn placeholders(specs: &[Spec]) -> Vec<Array> {
    specs
        .iter()
        .map(|s| Array::placeholder(&s.shape, s.dtype))
        .collect()
}

/// Calls `f` on placeholders shaped like `args` and `kwargs` and records
/// the graph of its outputs. Evaluating inside `f` is an error.
pub fn trace<F>(
    f: F,
    args: &[Spec],
    kwargs: &[(String, Spec)],
    pool: &mut ConstantPool,
) -> Result<Tape>
where
    F: FnOnce(&[Array], &Kwargs) -> Result<Vec<Array>>,
{
    let pos = placeholders(args);
    let kw: Kwargs = kwargs
        .iter()
        .map(|(k, s)| (k.clone(), Array::placeholder(&s.shape, s.dtype)))
        .collect();
    let outputs = {
        let _guard = TraceGuard::enter();
        f(&pos, &kw)?
    };
    let mut inputs: Vec<Array> = pos;
    let mut kwarg_names = Vec::new();
    for (k, a) in kw {
        kwarg_names.push(k);
        inputs.push(a);
    }
    record(&inputs, args.len(), kwarg_names, &outputs, pool)
}

/// Records the graph from `inputs` (placeholders) to `outputs` as a tape.
pub fn record(
    inputs: &[Array],
    positional: usize,
    kwarg_names: Vec<String>,
    outputs: &[Array],
    pool: &mut ConstantPool,
) -> Result<Tape> {
    let input_index: HashMap<usize, usize> = inputs
        .iter()
        .enumerate()
        .map(|(i, a)| (a.id(), i))
        .collect();
    let mut node_entry: HashMap<*const Node, usize> = HashMap::new();
    let mut tape = Tape {
        positional,
        kwarg_names,
        inputs: inputs.iter().map(|a| a.spec().clone()).collect(),
        entries: Vec::new(),
        outputs: Vec::new(),
    };

    // Iterative post-order walk: a node is emitted after all its inputs.
    let mut stack: Vec<(Arc<Node>, bool)> = Vec::new();
    let push_pending = |a: &Array, stack: &mut Vec<(Arc<Node>, bool)>| {
        if let Some((n, _)) = a.node() {
            stack.push((n, false));
        }
    };
    for o in outputs {
        push_pending(o, &mut stack);
    }
    while let Some((node, expanded)) = stack.pop() {
        let key = Arc::as_ptr(&node);
        if node_entry.contains_key(&key) {
            continue;
        }
        let node_inputs = node.inputs();
        if !expanded {
            stack.push((node.clone(), true));
            for a in &node_inputs {
                if let Some((n, _)) = a.node() {
                    if !node_entry.contains_key(&Arc::as_ptr(&n)) {
                        stack.push((n, false));
                    }
                }
            }
            continue;
        }
        let refs = node_inputs
            .iter()
            .map(|a| value_ref(a, &input_index, &node_entry, pool))
            .collect::<Result<Vec<_>>>()?;
        tape.entries.push(TapeEntry {
            primitive: node.primitive().clone_boxed(),
            inputs: refs,
            outputs: node.specs().to_vec(),
        });
        node_entry.insert(key, tape.entries.len() - 1);
    }
    tape.outputs = outputs
        .iter()
        .map(|a| value_ref(a, &input_index, &node_entry, pool))
        .collect::<Result<_>>()?;
    Ok(tape)
}

fn value_ref(
    a: &Array,
    inputs: &HashMap<usize, usize>,
    nodes: &HashMap<*const Node, usize>,
    pool: &mut ConstantPool,
) -> Result<ValueRef> {
    if let Some(&i) = inputs.get(&a.id()) {
        return Ok(ValueRef::Input(i));
    }
    if let Some((n, output)) = a.node() {
        let entry = *nodes
            .get(&Arc::as_ptr(&n))
            .ok_or_else(|| Error::Export("internal: node recorded out of order".into()))?;
        return Ok(ValueRef::Entry { entry, output });
    }
    if a.is_placeholder() {
        return Err(Error::Export(format!(
            "the traced function uses {a:?}, a placeholder that is not one of this trace's inputs \
             (an input captured from another trace?)"
        )));
    }
    if a.is_ready() {
        return Ok(ValueRef::Constant(pool.intern(a)));
    }
    Err(Error::Export(format!(
        "the traced function uses {a:?}, which has no data and no producer"
    )))
}

/// Rebuilds the graph of `tape` on `inputs`. Output shapes are inferred by
/// each primitive; unless `shapeless`, they must equal the recorded ones.
pub fn replay(
    tape: &Tape,
    constants: &[Array],
    inputs: &[Array],
    shapeless: bool,
) -> Result<Vec<Array>> {
    replay_with(tape, constants, inputs, |k, e, ins| {
        let outs = Array::from_primitive_multi(e.primitive.clone(), ins).map_err(|err| {
            Error::Export(format!(
                "replaying entry {k} ({}): {err}",
                e.primitive.name()
            ))
        })?;
        if !shapeless {
            let got: Vec<&Spec> = outs.iter().map(|a| a.spec()).collect();
            let want: Vec<&Spec> = e.outputs.iter().collect();
            if got != want {
                return Err(Error::Export(format!(
                    "entry {k} ({}): the file records outputs {} but the inputs give {}",
                    e.primitive.name(),
                    specs_text(&e.outputs),
                    specs_text(&outs.iter().map(|a| a.spec().clone()).collect::<Vec<_>>())
                )));
            }
        }
        Ok(outs)
    })
}

/// [`replay`] of a tape whose recorded output specs are known to follow
/// from its recorded input specs (`export::checks::check_recorded_specs`
/// passed), on inputs of exactly those specs: each node takes its recorded
/// specs instead of inferring them again. An imported function replays
/// its tape on every call; inferring ~1,700 nodes' specs was a third of
/// that.
pub fn replay_recorded(tape: &Tape, constants: &[Array], inputs: &[Array]) -> Result<Vec<Array>> {
    super::tape_call::check_inputs(tape, inputs)?;
    replay_with(tape, constants, inputs, |_, e, ins| {
        Ok(Array::with_specs(
            e.primitive.clone(),
            ins,
            e.outputs.clone(),
        ))
    })
}

/// Rebuilds the graph of `tape` on `inputs`, making each entry's node with
/// `node(index, entry, its inputs)`.
fn replay_with(
    tape: &Tape,
    constants: &[Array],
    inputs: &[Array],
    node: impl Fn(usize, &TapeEntry, Vec<Array>) -> Result<Vec<Array>>,
) -> Result<Vec<Array>> {
    check_input_count(tape, inputs)?;
    let mut values: Vec<Vec<Array>> = Vec::with_capacity(tape.entries.len());
    let resolve = |r: &ValueRef, values: &Vec<Vec<Array>>| -> Result<Array> {
        let missing = || Error::Export(format!("tape refers to a missing value {r:?}"));
        match *r {
            ValueRef::Input(i) => inputs.get(i).cloned().ok_or_else(missing),
            ValueRef::Constant(i) => constants.get(i).cloned().ok_or_else(missing),
            ValueRef::Entry { entry, output } => values
                .get(entry)
                .and_then(|v| v.get(output))
                .cloned()
                .ok_or_else(missing),
        }
    };
    for (k, e) in tape.entries.iter().enumerate() {
        let ins = e
            .inputs
            .iter()
            .map(|r| resolve(r, &values))
            .collect::<Result<Vec<_>>>()?;
        values.push(node(k, e, ins)?);
    }
    tape.outputs.iter().map(|r| resolve(r, &values)).collect()
}

/// Errors unless `inputs` has one array per input of `tape`.
pub(crate) fn check_input_count(tape: &Tape, inputs: &[Array]) -> Result<()> {
    if inputs.len() == tape.inputs.len() {
        return Ok(());
    }
    Err(Error::invalid(
        "replay",
        format!(
            "expected {} inputs, found {}",
            tape.inputs.len(),
            inputs.len()
        ),
    ))
}

/// `[float32 [2, 3], int32 []]`-style text for messages.
pub fn specs_text(specs: &[Spec]) -> String {
    let parts: Vec<String> = specs
        .iter()
        .map(|s| format!("{} {:?}", s.dtype, s.shape))
        .collect();
    format!("[{}]", parts.join(", "))
}
