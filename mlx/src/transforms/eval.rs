//! Evaluation: a topological walk of the pending graph, run node by node.

use super::trace::is_tracing;
use crate::array::{lock, Node, State};
use crate::{Array, Error, Result};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Hashes a node's address with one multiply: the walk's set of visited
/// nodes is on the per-op path, where SipHash showed in profiles.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        // Addresses are 16-byte aligned: fold the high bits down.
        let h = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type NodeSet = HashSet<*const Node, BuildHasherDefault<AddressHasher>>;

/// Computes every array in `outputs` and what they depend on.
///
/// The walk is iterative (a chain of a million nodes is fine). Each node
/// drops its inputs once it has run, so an intermediate is freed as soon as
/// its last consumer has run, and a kernel may reuse an input's buffer for its
/// output when nothing else holds it.
pub fn eval(outputs: &[Array]) -> Result<()> {
    let order = topological_order(outputs)?;
    if order.is_empty() {
        return Ok(());
    }
    if is_tracing() {
        return Err(Error::EvalInTrace);
    }
    for node in &order {
        run(node)?;
    }
    Ok(())
}

fn pending_node(a: &Array) -> Result<Option<Arc<Node>>> {
    match &*lock(&a.0.state) {
        State::Pending { node, .. } => Ok(Some(node.clone())),
        State::Placeholder => Err(if is_tracing() {
            Error::EvalInTrace
        } else {
            Error::Placeholder
        }),
        _ => Ok(None),
    }
}

/// Nodes that must run, inputs before consumers.
fn topological_order(outputs: &[Array]) -> Result<Vec<Arc<Node>>> {
    let mut order = Vec::new();
    let mut seen = NodeSet::default();
    let mut stack: Vec<(Arc<Node>, bool)> = Vec::new();
    for a in outputs {
        if let Some(n) = pending_node(a)? {
            stack.push((n, false));
        }
    }
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
            continue;
        }
        if !seen.insert(Arc::as_ptr(&node)) {
            continue;
        }
        // Walk the inputs under their lock instead of cloning the list (hot path).
        let inputs = lock(&node.inputs);
        stack.push((node.clone(), true));
        for input in inputs.iter() {
            if let Some(n) = pending_node(input)? {
                if !seen.contains(&Arc::as_ptr(&n)) {
                    stack.push((n, false));
                }
            }
        }
    }
    Ok(order)
}

fn run(node: &Arc<Node>) -> Result<()> {
    let inputs = std::mem::take(&mut *lock(&node.inputs));
    match node.primitive.eval(&inputs, &node.specs) {
        Ok(datas) => {
            drop(inputs);
            if datas.len() != node.specs.len() {
                return Err(Error::unsupported(
                    node.primitive.name(),
                    format!(
                        "kernel returned {} outputs, expected {}",
                        datas.len(),
                        node.specs.len()
                    ),
                ));
            }
            if let Some(outs) = node.outputs.get() {
                for (w, d) in outs.iter().zip(datas) {
                    if let Some(inner) = w.upgrade() {
                        Array(inner).set_data(d);
                    }
                }
            }
            Ok(())
        }
        Err(e) => {
            *lock(&node.inputs) = inputs;
            Err(e)
        }
    }
}

impl Array {
    /// Computes the array (and everything it depends on). Defined with the
    /// evaluator so the array type does not depend on it.
    pub fn eval(&self) -> Result<()> {
        eval(std::slice::from_ref(self))
    }
}
