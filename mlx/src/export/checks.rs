//! What import checks before anything runs: the caps of [`ImportOptions`]
//! (a server's bounds on what a stranger's file may make it hold or do) and
//! the output specs each tape entry records, which fusion would otherwise
//! hide inside a fused step.

use super::import::ImportOptions;
use super::tape::{FunctionTable, Tape};
use crate::array::Node;
use crate::primitive::Spec;
use crate::transforms::tracing::specs_text;
use crate::{Array, Error, Result};
use std::collections::HashSet;
use std::sync::Arc;

fn exceeded(cap: &str, what: String, found: u64, limit: u64) -> Error {
    Error::LimitExceeded {
        cap: format!("ImportOptions::{cap}"),
        what,
        found,
        limit,
    }
}

/// Checks the constants and the size of the graphs against the caps.
pub(crate) fn check_table(table: &FunctionTable, opts: &ImportOptions) -> Result<()> {
    let mut total = 0u64;
    for (i, c) in table.constants.iter().enumerate() {
        let n = c.spec().checked_nbytes().unwrap_or(usize::MAX) as u64;
        if n > opts.max_constant_bytes {
            return Err(exceeded(
                "max_constant_bytes",
                format!("constant {i} ({} {:?})", c.dtype(), c.shape()),
                n,
                opts.max_constant_bytes,
            ));
        }
        total = total.saturating_add(n);
    }
    if total > opts.max_total_constant_bytes {
        return Err(exceeded(
            "max_total_constant_bytes",
            format!("the file's {} constants", table.constants.len()),
            total,
            opts.max_total_constant_bytes,
        ));
    }
    let nodes = table
        .functions
        .iter()
        .fold(0u64, |n, t| n.saturating_add(t.entries.len() as u64));
    if nodes > opts.max_nodes {
        return Err(exceeded(
            "max_nodes",
            format!("the file's {} function(s)", table.functions.len()),
            nodes,
            opts.max_nodes,
        ));
    }
    Ok(())
}

/// What one call of a trace allocates and computes, from its entries' specs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cost {
    /// Bytes of the largest output of any entry, and which entry.
    largest: u64,
    largest_what: String,
    /// Sum of the entries' [`Primitive::work`](crate::Primitive::work).
    work: u64,
}

impl Cost {
    fn add(&mut self, what: impl Fn() -> String, work: u64, outputs: &[Spec]) {
        self.work = self.work.saturating_add(work);
        for s in outputs {
            let n = s.checked_nbytes().unwrap_or(usize::MAX) as u64;
            if n > self.largest {
                self.largest = n;
                self.largest_what = format!("{} ({} {:?})", what(), s.dtype, s.shape);
            }
        }
    }

    /// The cost of a tape from the specs its entries record (which a
    /// fixed-shape call reproduces exactly, or fails to replay).
    pub(crate) fn of_tape(tape: &Tape, constants: &[Array]) -> Cost {
        let mut cost = Cost::default();
        for (k, e) in tape.entries.iter().enumerate() {
            let ins: Vec<Spec> = e
                .inputs
                .iter()
                .map(|r| super::spec_of_ref(tape, constants, r))
                .collect();
            let work = e.primitive.work(&ins, &e.outputs);
            cost.add(
                || format!("entry {k} {}", e.primitive.name()),
                work,
                &e.outputs,
            );
        }
        cost
    }

    /// The cost of the graph a (shapeless) call built: every pending node
    /// behind `outputs`, each once.
    pub(crate) fn of_graph(outputs: &[Array]) -> Cost {
        let mut cost = Cost::default();
        let mut seen: HashSet<*const Node> = HashSet::new();
        let mut stack: Vec<Arc<Node>> = outputs
            .iter()
            .filter_map(|a| a.node())
            .map(|(n, _)| n)
            .collect();
        while let Some(node) = stack.pop() {
            if !seen.insert(Arc::as_ptr(&node)) {
                continue;
            }
            let inputs = node.inputs();
            let ins: Vec<Spec> = inputs.iter().map(|a| a.spec().clone()).collect();
            let work = node.primitive().work(&ins, node.specs());
            cost.add(|| node.primitive().name().to_string(), work, node.specs());
            stack.extend(inputs.iter().filter_map(|a| a.node()).map(|(n, _)| n));
        }
        cost
    }

    /// Errs naming the cap a call of this cost would pass.
    pub(crate) fn check(&self, opts: &ImportOptions) -> Result<()> {
        if self.largest > opts.max_intermediate_bytes {
            return Err(exceeded(
                "max_intermediate_bytes",
                self.largest_what.clone(),
                self.largest,
                opts.max_intermediate_bytes,
            ));
        }
        if self.work > opts.max_work {
            return Err(exceeded(
                "max_work",
                "the call".into(),
                self.work,
                opts.max_work,
            ));
        }
        Ok(())
    }
}

/// Checks that every entry's recorded outputs are what its primitive
/// infers from the recorded inputs (the check replay makes on each call,
/// made once here so that fusion, which keeps only a fused chain's last
/// output spec, cannot skip it).
pub(crate) fn check_recorded_specs(tape: &Tape, constants: &[Array]) -> Result<()> {
    for (k, e) in tape.entries.iter().enumerate() {
        let ins: Vec<Spec> = e
            .inputs
            .iter()
            .map(|r| super::spec_of_ref(tape, constants, r))
            .collect();
        let name = e.primitive.name();
        let got = e
            .primitive
            .output_specs(&ins)
            .map_err(|err| Error::Export(format!("replaying entry {k} ({name}): {err}")))?;
        if got != e.outputs {
            return Err(Error::Export(format!(
                "entry {k} ({name}): the file records outputs {} but the inputs give {}",
                specs_text(&e.outputs),
                specs_text(&got)
            )));
        }
    }
    Ok(())
}
