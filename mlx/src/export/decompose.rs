//! Rewriting a tape's primitives as their fallback graphs
//! ([`Primitive::fallback`]): the graphs of plain primitives they stand for.
//! The rewrite names no primitive; it serves any primitive with a fallback,
//! a user crate's too.
//!
//! Two uses. The fused `mx.fast` primitives (RMSNorm, LayerNorm, RoPE,
//! ScaledDotProductAttention): MLX's CPU build can import a file holding
//! them (a Metal export holds them) but cannot evaluate them, since their
//! fallback is not serialised; a file meant for Python MLX on CPU must hold
//! the fallback graphs, which is what [`ExportOptions::decompose_fast`] and
//! [`decompose_fast`] produce (their fallbacks follow MLX's op for op, so
//! MLX computes the same values from them as from `mx.fast` on CPU). And
//! nodes a file cannot hold at all (no registry entry, such as the fused
//! element-wise chain an imported function runs): every export records
//! their fallbacks instead.
//!
//! [`ExportOptions::decompose_fast`]: super::ExportOptions::decompose_fast

use super::tape::{FunctionTable, Tape, ValueRef};
use crate::primitive::{lookup, Primitive, Spec};
use crate::trace_flag::ShapelessGuard;
use crate::transforms::tracing::{trace, ConstantPool};
use crate::{Array, Error, Kwargs, Result};

/// Whether `p` stands for a graph of plain primitives (has a fallback):
/// the fused `mlx::fast` primitives, fused chains, a user's fused kernels.
pub fn is_fused_fast(p: &dyn Primitive) -> bool {
    // Fallbacks check their inputs first, so no graph is built here.
    p.fallback(&[]).is_some()
}

/// Whether a file can record `p`: its name decodes to a registered primitive.
fn is_writable(p: &dyn Primitive) -> bool {
    lookup(p.name()).is_ok()
}

/// Which entries a rewrite replaces by their fallback graphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expand {
    /// Only those a file cannot record.
    Unwritable,
    /// Those too, and every other primitive that has a fallback.
    AllFallbacks,
}

impl Expand {
    pub(crate) fn applies(self, p: &dyn Primitive) -> bool {
        !is_writable(p) || (self == Expand::AllFallbacks && is_fused_fast(p))
    }
}

/// Replays `tape` on `inputs`, building the fallback graph of each entry
/// `expand` applies to instead of the entry.
fn replay_decomposed(
    tape: &Tape,
    constants: &[Array],
    inputs: &[Array],
    expand: Expand,
) -> Result<Vec<Array>> {
    let mut values: Vec<Vec<Array>> = Vec::with_capacity(tape.entries.len());
    let resolve = |r: &ValueRef, values: &Vec<Vec<Array>>| -> Result<Array> {
        let v = match *r {
            ValueRef::Input(i) => inputs.get(i),
            ValueRef::Constant(i) => constants.get(i),
            ValueRef::Entry { entry, output } => values.get(entry).and_then(|v| v.get(output)),
        };
        v.cloned()
            .ok_or_else(|| Error::Export(format!("tape refers to a missing value {r:?}")))
    };
    for (k, e) in tape.entries.iter().enumerate() {
        let ins = e
            .inputs
            .iter()
            .map(|r| resolve(r, &values))
            .collect::<Result<Vec<_>>>()?;
        let p = &*e.primitive;
        let outs = if expand.applies(p) {
            p.fallback(&ins).unwrap_or_else(|| {
                Err(Error::Export(format!(
                    "a file cannot record {} (no registered primitive has this name) and it has no fallback graph to record instead",
                    p.name()
                )))
            })
        } else {
            Array::from_primitive_multi(e.primitive.clone(), ins)
        }
        .map_err(|err| {
            Error::Export(format!(
                "decomposing entry {k} ({}): {err}",
                e.primitive.name()
            ))
        })?;
        values.push(outs);
    }
    tape.outputs.iter().map(|r| resolve(r, &values)).collect()
}

/// `tape` re-traced with the entries `expand` applies to replaced by their
/// fallback graphs; constants go to `pool` (the file's constant table).
pub(crate) fn decompose_tape(
    tape: &Tape,
    constants: &[Array],
    pool: &mut ConstantPool,
    shapeless: bool,
    expand: Expand,
) -> Result<Tape> {
    if !tape.entries.iter().any(|e| expand.applies(&*e.primitive)) {
        return Ok(tape.clone());
    }
    let args: Vec<Spec> = tape.inputs[..tape.positional].to_vec();
    let kwargs: Vec<(String, Spec)> = tape
        .kwarg_names
        .iter()
        .cloned()
        .zip(tape.inputs[tape.positional..].iter().cloned())
        .collect();
    let _shapeless = shapeless.then(ShapelessGuard::enter);
    trace(
        |a: &[Array], k: &Kwargs| {
            let mut flat = a.to_vec();
            // Kwargs iterate in sorted order, the order of the tape's keyword inputs.
            flat.extend(k.values().cloned());
            replay_decomposed(tape, constants, &flat, expand)
        },
        &args,
        &kwargs,
        pool,
    )
}

/// A copy of `table` in which every primitive with a fallback (the fused
/// `mlx::fast` primitives RMSNorm, LayerNorm, RoPE and
/// ScaledDotProductAttention, and any user primitive that has one) is
/// replaced by its fallback graph, the one MLX's CPU build records, so that
/// MLX's CPU build can run the file (for example a Metal export, or a Rust
/// export using [`crate::fast`]).
pub fn decompose_fast(table: &FunctionTable) -> Result<FunctionTable> {
    let mut pool = ConstantPool::default();
    for c in &table.constants {
        pool.intern(c);
    }
    let mut functions = Vec::with_capacity(table.functions.len());
    for t in &table.functions {
        let mut tape = decompose_tape(
            t,
            &table.constants,
            &mut pool,
            table.shapeless,
            Expand::AllFallbacks,
        )?;
        crate::transforms::simplify::simplify(&mut tape, &pool.arrays);
        functions.push(tape);
    }
    Ok(FunctionTable {
        functions,
        constants: pool.arrays,
        shapeless: table.shapeless,
        metadata: table.metadata.clone(),
        writer_version: table.writer_version.clone(),
    })
}
