//! Evaluation: a topological walk of the pending graph, run node by node.

use crate::array::{lock, Node, State};
use crate::buffer::{check_allocatable, OutOfMemory};
use crate::primitive::{Primitive, Spec};
use crate::trace_flag::is_tracing;
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
    run_all(&order)
}

/// Graphs with at least this many nodes run on a thread of the worker
/// pool (see [`run_all`]).
const POOL_NODES: usize = 8;

/// Runs the nodes in order. A kernel's parallel loop started from a thread
/// outside rayon's pool puts that thread to sleep until the pool has done
/// the work and wakes it: 17-25 µs a kernel on a 2-core machine, longer
/// than many kernels of a decode step take. A graph of some size is
/// therefore run on a pool thread, which takes part in each loop itself:
/// one hand-over a graph instead of one a kernel. (So no kernel may hold a
/// lock while it waits for parallel tasks: the waiting thread may take up
/// another evaluation meanwhile; see `buffer::deferred`.)
fn run_all(order: &[Arc<Node>]) -> Result<()> {
    if order.len() >= POOL_NODES {
        return on_pool(|| run_nodes(order));
    }
    run_nodes(order)
}

/// Runs `work` (on a pool thread) with the pool's other threads kept
/// awake: each takes up parallel tasks as they come instead of going to
/// sleep between kernels and being woken for the next one. On a virtual
/// machine the sleeps and wake-ups of a decode step's ~200 parallel
/// kernels cost more than some of the kernels (a fifth of a profile was
/// the scheduler). The threads spin only while `work` runs.
pub(crate) fn with_pool_awake<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    use std::sync::atomic::{AtomicBool, Ordering};
    let others = rayon::current_num_threads().saturating_sub(1);
    let Some(me) = rayon::current_thread_index().filter(|_| others > 0) else {
        return work();
    };
    /// Ends the spinning however `work` ends.
    struct Done<'a>(&'a AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let done = AtomicBool::new(false);
    rayon::scope(|s| {
        for _ in 0..others {
            s.spawn(|_| {
                // This thread may take its own spinner up while it waits
                // inside `work`: that one returns at once, or `work`
                // could never finish.
                if rayon::current_thread_index() == Some(me) {
                    return;
                }
                while !done.load(Ordering::Acquire) {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::hint::spin_loop();
                    }
                }
            });
        }
        let _done = Done(&done);
        work()
    })
}

/// Runs `work` on a thread of the worker pool: handed over when called
/// from outside it (see [`run_all`]), in place when already on it.
pub(crate) fn on_pool<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_none() {
        rayon::scope(|_| work())
    } else {
        work()
    }
}

fn run_nodes(order: &[Arc<Node>]) -> Result<()> {
    for node in order {
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

/// Outputs at least this large are checked against the allocator before
/// their kernel runs (see [`check_allocatable`]).
const CHECKED_OUTPUT_BYTES: usize = 1 << 26;

/// Whether `node`'s outputs can exist: sizes that overflow or that the
/// allocator cannot provide are errors before the kernel starts.
fn check_outputs(primitive: &dyn Primitive, specs: &[Spec]) -> Result<()> {
    let mut total = 0usize;
    for s in specs {
        let n = s
            .checked_nbytes()
            .and_then(|n| total.checked_add(n))
            .ok_or_else(|| {
                Error::invalid(
                    primitive.name(),
                    format!(
                        "an output of {} {:?} has more bytes than memory can address",
                        s.dtype, s.shape
                    ),
                )
            })?;
        total = n;
    }
    if total >= CHECKED_OUTPUT_BYTES {
        check_allocatable(total).map_err(|_| Error::OutOfMemory {
            what: format!(
                "{} ({})",
                primitive.name(),
                super::tracing::specs_text(specs)
            ),
            bytes: total as u64,
        })?;
    }
    Ok(())
}

/// Runs the kernel; a panic inside it (a failed allocation, or a bug a
/// hostile file reached) is returned as an error instead of unwinding
/// through the caller.
fn eval_kernel(
    primitive: &dyn Primitive,
    specs: &[Spec],
    inputs: &[Array],
) -> Result<Vec<crate::Data>> {
    let run = std::panic::AssertUnwindSafe(|| primitive.eval(inputs, specs));
    std::panic::catch_unwind(run).unwrap_or_else(|payload| {
        let name = primitive.name();
        Err(
            if let Some(OutOfMemory(bytes)) = payload.downcast_ref::<OutOfMemory>() {
                Error::OutOfMemory {
                    what: format!("{name} ({})", super::tracing::specs_text(specs)),
                    bytes: *bytes as u64,
                }
            } else {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Error::unsupported(name, format!("internal error: the kernel panicked: {msg}"))
            },
        )
    })
}

fn run(node: &Arc<Node>) -> Result<()> {
    let inputs = std::mem::take(&mut *lock(&node.inputs));
    match run_kernel(&*node.primitive, &node.specs, &inputs) {
        Ok(datas) => {
            drop(inputs);
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

/// Runs `primitive`'s kernel on `inputs` for outputs `specs`, with the
/// checks every evaluation makes: outputs that cannot exist are refused
/// before it starts, a panic is an error, and the kernel must return one
/// data per output that fits it (a user primitive's kernel is safe code
/// that could return any strides or bytes).
pub(crate) fn run_kernel(
    primitive: &dyn Primitive,
    specs: &[Spec],
    inputs: &[Array],
) -> Result<Vec<crate::Data>> {
    // A planned call's outputs are made, and checked, by the entries it
    // runs: an error names the primitive that needs the memory.
    if !primitive.as_any().is::<super::tape_call::TapeCall>() {
        check_outputs(primitive, specs)?;
    }
    let datas = eval_kernel(primitive, specs, inputs)?;
    for (d, spec) in datas.iter().zip(specs) {
        if let Err(e) = d.check_fits(&spec.shape, spec.dtype) {
            return Err(Error::unsupported(
                primitive.name(),
                format!("the kernel returned data that does not fit its output: {e}"),
            ));
        }
    }
    if datas.len() != specs.len() {
        return Err(Error::unsupported(
            primitive.name(),
            format!(
                "kernel returned {} outputs, expected {}",
                datas.len(),
                specs.len()
            ),
        ));
    }
    Ok(datas)
}

impl Array {
    /// Computes the array (and everything it depends on). Defined with the
    /// evaluator so the array type does not depend on it.
    pub fn eval(&self) -> Result<()> {
        eval(std::slice::from_ref(self))
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    /// Work under kept-awake threads, nested in parallel tasks that are
    /// themselves kept awake (a thread may take its own spinner, or
    /// another's), finishes with the sums' closed forms.
    #[test]
    fn work_with_the_pool_awake_finishes_nested() {
        let sums: Vec<u64> = (0..64u64)
            .into_par_iter()
            .map(|i| {
                super::on_pool(|| {
                    super::with_pool_awake(|| (0..1000u64).into_par_iter().map(|j| i * j).sum())
                })
            })
            .collect();
        let want: Vec<u64> = (0..64).map(|i| i * 999 * 1000 / 2).collect();
        assert_eq!(sums, want);
        // From outside the pool: handed over, then kept awake.
        let total: u64 =
            super::on_pool(|| super::with_pool_awake(|| (1..=100u64).into_par_iter().sum()));
        assert_eq!(total, 5050);
    }
}
