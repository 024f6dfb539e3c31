//! Rewriting the fused `mx.fast` primitives (`RMSNorm`, `LayerNorm`, `RoPE`,
//! `ScaledDotProductAttention`) as the graphs of basic primitives MLX's CPU
//! build records for them.
//!
//! MLX's CPU build can import a file holding the fused primitives (a Metal
//! export holds them) but cannot evaluate them: their fallback is not
//! serialised. A file meant for Python MLX on CPU must therefore contain the
//! decomposition, which is what [`ExportOptions::decompose_fast`] and
//! [`decompose_fast`] produce. The graphs follow MLX's fallbacks op for op,
//! so MLX computes the same values from them as from `mx.fast` on CPU.
//!
//! [`ExportOptions::decompose_fast`]: super::ExportOptions::decompose_fast

use super::tape::{FunctionTable, Tape, ValueRef};
use crate::ops;
use crate::primitive::{Primitive, Spec};
use crate::primitives::fast::{LayerNorm, RMSNorm, RoPE, ScaledDotProductAttention};
use crate::transforms::trace::ShapelessGuard;
use crate::transforms::tracing::{trace, ConstantPool};
use crate::{Array, Dtype, Error, Kwargs, Result};

/// Whether `p` is one of the fused fast primitives that have a decomposition.
pub fn is_fused_fast(p: &dyn Primitive) -> bool {
    let any = p.as_any();
    any.is::<RMSNorm>()
        || any.is::<LayerNorm>()
        || any.is::<RoPE>()
        || any.is::<ScaledDotProductAttention>()
}

/// The graph MLX's CPU build builds instead of `p` on `inputs`, or `None`
/// when `p` is not a fused fast primitive.
pub fn decomposition(p: &dyn Primitive, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
    let any = p.as_any();
    if let Some(p) = any.downcast_ref::<RMSNorm>() {
        return Some(rms_norm(p, inputs).map(|a| vec![a]));
    }
    if let Some(p) = any.downcast_ref::<LayerNorm>() {
        return Some(layer_norm(p, inputs).map(|a| vec![a]));
    }
    if let Some(p) = any.downcast_ref::<RoPE>() {
        return Some(rope(p, inputs).map(|a| vec![a]));
    }
    if let Some(p) = any.downcast_ref::<ScaledDotProductAttention>() {
        return Some(sdpa(p, inputs));
    }
    None
}

fn arity(name: &str, inputs: &[Array], n: usize) -> Result<()> {
    if inputs.len() < n {
        return Err(Error::invalid(
            name,
            format!("expected at least {n} inputs, found {}", inputs.len()),
        ));
    }
    Ok(())
}

/// `x · rsqrt(mean(x², -1) + eps)` in float32, cast back, times the weight.
fn rms_norm(p: &RMSNorm, inputs: &[Array]) -> Result<Array> {
    arity("RMSNorm", inputs, 2)?;
    let (x, w) = (&inputs[0], &inputs[1]);
    let x32 = ops::astype(x, Dtype::Float32)?;
    let ms = ops::mean(&ops::square(&x32)?, &[-1], true)?;
    let n = ops::rsqrt(&ops::add(&ms, &Array::scalar(p.eps))?)?;
    let y = ops::astype(&ops::multiply(&x32, &n)?, x.dtype())?;
    // A 0-d weight is the `1` MLX passes when no weight was given.
    if w.ndim() == 0 {
        Ok(y)
    } else {
        ops::multiply(&y, w)
    }
}

/// `(x − mean) · rsqrt(var + eps)` in float32, cast back, then `· w + b`.
fn layer_norm(p: &LayerNorm, inputs: &[Array]) -> Result<Array> {
    arity("LayerNorm", inputs, 3)?;
    let (x, w, b) = (&inputs[0], &inputs[1], &inputs[2]);
    let x32 = ops::astype(x, Dtype::Float32)?;
    let mu = ops::mean(&x32, &[-1], true)?;
    let xc = ops::subtract(&x32, &mu)?;
    let v = ops::mean(&ops::square(&xc)?, &[-1], true)?;
    let n = ops::rsqrt(&ops::add(&v, &Array::scalar(p.eps))?)?;
    let mut y = ops::astype(&ops::multiply(&xc, &n)?, x.dtype())?;
    // 0-d weight and bias are the `1` and `0` MLX passes when absent.
    if w.ndim() != 0 {
        y = ops::multiply(&y, w)?;
    }
    if b.ndim() != 0 {
        y = ops::add(&y, b)?;
    }
    Ok(y)
}

/// Rotary embedding: positions (arange(T) + offset)·scale times inverse
/// frequencies, rotating pairs of the first `dims` features.
fn rope(p: &RoPE, inputs: &[Array]) -> Result<Array> {
    arity("RoPE", inputs, 2)?;
    let shape = inputs[0].shape().to_vec();
    let mut x = inputs[0].clone();
    if x.ndim() == 3 {
        x = ops::expand_dims(&x, &[1])?;
    } else if x.ndim() > 4 {
        x = ops::flatten(&x, 1, x.ndim() as i32 - 3)?;
    }
    if x.ndim() != 4 {
        return Err(Error::invalid(
            "RoPE",
            format!("input of shape {shape:?} must have at least 3 dimensions"),
        ));
    }
    let s = x.shape().to_vec();
    let (b, n, t, last) = (s[0], s[1], s[2], s[3]);
    let dims = p.dims;
    let half = dims / 2;
    let dtype = x.dtype();
    let mut offset = inputs[1].clone();
    if offset.size() > 1 {
        offset = ops::expand_dims(&offset, &[-1, -2])?;
    }
    let positions = ops::multiply(
        &ops::add(&ops::arange(0.0, t as f64, 1.0, Dtype::Float32)?, &offset)?,
        &Array::scalar(p.scale),
    )?;
    let inv_freqs = match inputs.get(2) {
        Some(freqs) => ops::reciprocal(freqs)?,
        None => ops::exp(&ops::multiply(
            &ops::arange(0.0, -(half as f64), -1.0, Dtype::Float32)?,
            &Array::scalar(p.base.ln() / half as f32),
        )?)?,
    };
    let theta = ops::multiply(&ops::expand_dims(&positions, &[-1])?, &inv_freqs)?;
    let coss = ops::astype(&ops::cos(&theta)?, dtype)?;
    let sins = ops::astype(&ops::sin(&theta)?, dtype)?;
    let rotate = |x1: &Array, x2: &Array| -> Result<[Array; 2]> {
        let (a, c) = (ops::multiply(x1, &coss)?, ops::multiply(x1, &sins)?);
        let (d, e) = (ops::multiply(x2, &sins)?, ops::multiply(x2, &coss)?);
        Ok(if p.forward {
            [ops::subtract(&a, &d)?, ops::add(&c, &e)?]
        } else {
            [ops::add(&d, &a)?, ops::subtract(&e, &c)?]
        })
    };
    let rest = |x: &Array| ops::slice(x, &[0, 0, 0, dims], &[b, n, t, last], &[1, 1, 1, 1]);
    let out = if p.traditional {
        let x1 = ops::slice(&x, &[0, 0, 0, 0], &[b, n, t, dims], &[1, 1, 1, 2])?;
        let x2 = ops::slice(&x, &[0, 0, 0, 1], &[b, n, t, dims], &[1, 1, 1, 2])?;
        let [o1, o2] = rotate(&x1, &x2)?;
        let pair = ops::concatenate(
            &[ops::expand_dims(&o1, &[-1])?, ops::expand_dims(&o2, &[-1])?],
            -1,
        )?;
        let mut out = ops::reshape(&pair, &[b, n, t, dims])?;
        if dims < last {
            out = ops::concatenate(&[out, rest(&x)?], -1)?;
        }
        out
    } else {
        let x1 = ops::slice(&x, &[0, 0, 0, 0], &[b, n, t, half], &[1, 1, 1, 1])?;
        let x2 = ops::slice(&x, &[0, 0, 0, half], &[b, n, t, dims], &[1, 1, 1, 1])?;
        let [o1, o2] = rotate(&x1, &x2)?;
        let mut parts = vec![o1, o2];
        if dims < last {
            parts.push(rest(&x)?);
        }
        ops::concatenate(&parts, -1)?
    };
    ops::reshape(&out, &shape)
}

/// The most negative finite value of a float dtype (MLX's `finfo.min`).
fn finfo_min(d: Dtype) -> f64 {
    match d {
        Dtype::Float16 => -65504.0,
        Dtype::Bfloat16 => -3.3895313892515355e38,
        Dtype::Float64 => f64::MIN,
        _ => f32::MIN as f64,
    }
}

/// `softmax(scale·q kᵀ + mask) v`, grouped-query heads unflattened, causal
/// masks built from aranges, sinks as an extra logit column.
fn sdpa(p: &ScaledDotProductAttention, inputs: &[Array]) -> Result<Vec<Array>> {
    arity("ScaledDotProductAttention", inputs, 3)?;
    if p.output_logsumexp {
        return Err(Error::Export(
            "ScaledDotProductAttention with output_logsumexp has no CPU decomposition in MLX"
                .into(),
        ));
    }
    let (q0, mut k, mut v) = (&inputs[0], inputs[1].clone(), inputs[2].clone());
    let (hq, hkv) = (q0.shape()[1], k.shape()[1]);
    if hkv == 0 || hq % hkv != 0 {
        return Err(Error::invalid(
            "ScaledDotProductAttention",
            format!("{hq} query heads are not a multiple of {hkv} key/value heads"),
        ));
    }
    let reps = hq / hkv;
    let mut q = ops::multiply(&Array::scalar_of(p.scale as f64, q0.dtype()), q0)?;
    if reps > 1 {
        q = ops::unflatten(&q, 1, &[hkv, reps])?;
        k = ops::expand_dims(&k, &[2])?;
        v = ops::expand_dims(&v, &[2])?;
    }
    let mut scores = ops::matmul(&q, &ops::swapaxes(&k, -1, -2)?)?;
    let has_mask = inputs.len() > 3 + p.has_sinks as usize;
    if has_mask || p.do_causal {
        let mut mask = if p.do_causal {
            let kl = k.shape()[k.ndim() - 2];
            let ql = q.shape()[q.ndim() - 2];
            let off = (kl - ql) as f64;
            let qi = ops::arange(off, ql as f64 + off, 1.0, Dtype::Int32)?;
            let ki = ops::arange(0.0, kl as f64, 1.0, Dtype::Int32)?;
            ops::greater_equal(&ops::expand_dims(&qi, &[1])?, &ops::expand_dims(&ki, &[0])?)?
        } else {
            inputs[3].clone()
        };
        if reps > 1 && mask.ndim() >= 3 {
            mask = if mask.shape()[mask.ndim() - 3] == 1 {
                ops::expand_dims(&mask, &[-3])?
            } else {
                ops::unflatten(&mask, -3, &[hkv, reps])?
            };
        }
        scores = if mask.dtype() == Dtype::Bool {
            let min = Array::scalar_of(finfo_min(scores.dtype()), scores.dtype());
            ops::where_(&mask, &scores, &min)?
        } else {
            ops::add(&scores, &mask)?
        };
    }
    if p.has_sinks {
        let mut sinks = ops::expand_dims(inputs.last().expect("arity checked"), &[0, 2, 3])?;
        if scores.ndim() == 5 {
            sinks = ops::unflatten(&sinks, 1, &[hkv, reps])?;
        }
        let mut shape = scores.shape().to_vec();
        *shape.last_mut().expect("rank 4 or 5") = 1;
        scores = ops::concatenate(&[ops::broadcast_to(&sinks, &shape)?, scores], -1)?;
    }
    scores = ops::softmax_precise(&scores, &[-1])?;
    if p.has_sinks {
        let mut start = vec![0; scores.ndim()];
        *start.last_mut().expect("rank 4 or 5") = 1;
        let stop = scores.shape().to_vec();
        let strides = vec![1; scores.ndim()];
        scores = ops::slice(&scores, &start, &stop, &strides)?;
    }
    let mut out = ops::matmul(&scores, &v)?;
    if reps > 1 {
        out = ops::flatten(&out, 1, 2)?;
    }
    Ok(vec![out])
}

/// Replays `tape` on `inputs`, building each fused fast entry's decomposition
/// instead of the entry.
fn replay_decomposed(tape: &Tape, constants: &[Array], inputs: &[Array]) -> Result<Vec<Array>> {
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
        let outs = match decomposition(&*e.primitive, &ins) {
            Some(r) => r,
            None => Array::from_primitive_multi(e.primitive.clone(), ins),
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

/// `tape` re-traced with every fused fast primitive decomposed; constants
/// go to `pool` (the file's constant table).
pub(crate) fn decompose_tape(
    tape: &Tape,
    constants: &[Array],
    pool: &mut ConstantPool,
    shapeless: bool,
) -> Result<Tape> {
    if !tape.entries.iter().any(|e| is_fused_fast(&*e.primitive)) {
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
            replay_decomposed(tape, constants, &flat)
        },
        &args,
        &kwargs,
        pool,
    )
}

/// A copy of `table` in which every fused fast primitive (RMSNorm,
/// LayerNorm, RoPE, ScaledDotProductAttention) is replaced by the graph MLX's
/// CPU build records for it, so that MLX's CPU build can run the file (for
/// example a Metal export, or a Rust export using [`crate::fast`]).
pub fn decompose_fast(table: &FunctionTable) -> Result<FunctionTable> {
    let mut pool = ConstantPool::default();
    for c in &table.constants {
        pool.intern(c);
    }
    let mut functions = Vec::with_capacity(table.functions.len());
    for t in &table.functions {
        let mut tape = decompose_tape(t, &table.constants, &mut pool, table.shapeless)?;
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
