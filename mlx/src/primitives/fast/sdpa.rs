//! Scaled dot-product attention: the [`ScaledDotProductAttention`]
//! primitive (MLX's state, the fused CPU kernel, MLX's fallback graph, the
//! derivatives) and the [`scaled_dot_product_attention`] ops of `mlx::fast`.

use super::{arity, scalar, select, up};
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::fast::{finfo_min, mlx_exp, read_f32, round_fn, write_f32, Tile};
use crate::backend::cpu::PAR_THRESHOLD;
use crate::ops as o;
use crate::ops::{self, broadcast_to, cast_to};
use crate::primitive::Spec;
use crate::primitives::grad::unbroadcast;
use crate::primitives::grad_util::not_differentiable;
use crate::primitives::shape::broadcast_view;
use crate::{promote_types, Array, Data, Dtype, Error, Primitive, Result};
use rayon::prelude::*;

/// `softmax(scale · q kᵀ [+ mask]) v`; inputs (q, k, v[, mask][, sinks]),
/// q (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv), Hq a multiple
/// of Hkv. The mask is present when there is an input beyond v that is not
/// the sinks; a bool mask keeps where true, another is added.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct ScaledDotProductAttention {
    /// Multiplies the queries.
    #[state]
    pub scale: f32,
    /// Query i attends to keys j ≤ i + (Lk − Lq).
    #[state]
    pub do_causal: bool,
    /// The last input holds one sink logit per query head.
    #[state(mlx_since = "0.29.1")]
    pub has_sinks: bool,
    /// Also output the float32 log-sum-exp of each score row.
    #[state(mlx_since = "0.30.0")]
    pub output_logsumexp: bool,
    /// MLX GPU kernel selection hint; no effect on the CPU.
    #[state(mlx_since = "0.32.2")]
    pub force_fused: bool,
}

/// The mask of [`scaled_dot_product_attention`].
#[derive(Clone, Copy, Debug)]
pub enum Mask<'a> {
    /// Query i attends to keys j ≤ i + (Lk − Lq) (aligned at the end).
    Causal,
    /// A bool mask (keep where true) or an additive mask, broadcastable to
    /// (B, Hq, Lq, Lk).
    Array(&'a Array),
}

/// Multi-head attention `softmax(scale · q kᵀ + mask) v` with q
/// (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv); grouped-query
/// attention when Hkv divides Hq. Softmax runs in float32.
pub fn scaled_dot_product_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: Option<Mask<'_>>,
) -> Result<Array> {
    scaled_dot_product_attention_sinks(q, k, v, scale, mask, None)
}

/// [`scaled_dot_product_attention`] with attention sinks: one logit per
/// query head (shape (Hq,)) that joins each softmax but carries no value.
pub fn scaled_dot_product_attention_sinks(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: Option<Mask<'_>>,
    sinks: Option<&Array>,
) -> Result<Array> {
    let op = "scaled_dot_product_attention";
    for (a, what) in [(q, "q"), (k, "k"), (v, "v")] {
        if a.ndim() != 4 {
            return Err(Error::invalid(
                op,
                format!("{what} with shape {:?} expected to be rank 4", a.shape()),
            ));
        }
    }
    let t = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
    if !t.is_float() {
        return Err(Error::invalid(
            op,
            format!("unsupported dtype {t}; expected a floating point type"),
        ));
    }
    let mut inputs = vec![cast_to(q, t)?, cast_to(k, t)?, cast_to(v, t)?];
    let mut do_causal = false;
    match mask {
        Some(Mask::Causal) => do_causal = true,
        Some(Mask::Array(m)) => {
            if m.ndim() > 4 {
                return Err(Error::invalid(
                    op,
                    format!(
                        "the mask with shape {:?} expected to have at most rank 4",
                        m.shape()
                    ),
                ));
            }
            let m = if m.dtype() == Dtype::Bool {
                m.clone()
            } else if promote_types(m.dtype(), t) != t {
                return Err(Error::invalid(
                    op,
                    format!(
                        "mask type {} must promote to the output type {t}",
                        m.dtype()
                    ),
                ));
            } else {
                cast_to(m, t)?
            };
            let mut shape = q.shape().to_vec();
            shape[3] = k.shape()[2];
            inputs.push(broadcast_to(&m, &shape)?);
        }
        None => {}
    }
    if let Some(s) = sinks {
        if promote_types(s.dtype(), t) != t {
            return Err(Error::invalid(
                op,
                format!(
                    "type of sinks {} must promote to the output type {t}",
                    s.dtype()
                ),
            ));
        }
        inputs.push(cast_to(s, t)?);
    }
    let p = ScaledDotProductAttention {
        scale,
        do_causal,
        has_sinks: sinks.is_some(),
        output_logsumexp: false,
        force_fused: false,
    };
    Array::from_primitive(p, inputs)
}

/// An attention mask, materialised at (B, Hq, Lq, Lk).
pub enum AttnMask {
    /// Keep where true; masked scores become the dtype's `finfo.min`.
    Bool(Vec<bool>),
    /// Added to the scores.
    Additive(Vec<f32>),
}

/// Sizes of an attention call.
#[derive(Clone, Copy)]
pub struct AttnShape {
    /// Batch size.
    pub b: usize,
    /// Query heads.
    pub hq: usize,
    /// Key/value heads (divides `hq`).
    pub hkv: usize,
    /// Queries per head.
    pub lq: usize,
    /// Keys per head.
    pub lk: usize,
    /// Query/key feature size.
    pub d: usize,
    /// Value feature size.
    pub dv: usize,
}

/// Options of an attention call.
pub struct AttnOptions<'a> {
    /// Multiplies the queries.
    pub scale: f32,
    /// Query i sees keys j ≤ i + (Lk − Lq).
    pub causal: bool,
    /// Optional mask.
    pub mask: Option<&'a AttnMask>,
    /// One extra logit per query head that takes softmax mass but no value.
    pub sinks: Option<&'a [f32]>,
    /// Masked score value (`finfo(dtype).min`).
    pub fill: f32,
    /// Rounds to the inputs' dtype.
    pub round_t: fn(f32) -> f32,
}

/// `softmax(scale · q kᵀ + mask) v` per (batch, head), heads of k/v shared
/// by groups of query heads. Returns the output (B, Hq, Lq, Dv) and the
/// log-sum-exp of each score row (B, Hq, Lq).
pub fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: AttnShape,
    o: &AttnOptions<'_>,
) -> (Vec<f32>, Vec<f32>) {
    let mut out = vec![0f32; s.b * s.hq * s.lq * s.dv];
    let mut lse = vec![0f32; s.b * s.hq * s.lq];
    if out.is_empty() {
        return (out, lse);
    }
    let rep = s.hq / s.hkv.max(1);
    let head = |(bh, (ob, lb)): (usize, (&mut [f32], &mut [f32]))| {
        let (b, h) = (bh / s.hq, bh % s.hq);
        let kvh = b * s.hkv + h / rep;
        let qs: Vec<f32> = q[bh * s.lq * s.d..(bh + 1) * s.lq * s.d]
            .iter()
            .map(|&x| (o.round_t)(x * o.scale))
            .collect();
        let kb = &k[kvh * s.lk * s.d..(kvh + 1) * s.lk * s.d];
        let vb = &v[kvh * s.lk * s.dv..(kvh + 1) * s.lk * s.dv];
        let mut scores = vec![0f32; s.lq * s.lk];
        if s.lk > 0 && s.d > 0 {
            let t = Tile::new(&mut scores);
            // SAFETY: `scores` is local and exactly lq × lk.
            unsafe {
                t.gemm_block(
                    s.lq,
                    s.lk,
                    s.d,
                    0,
                    s.lk,
                    &qs,
                    s.d as isize,
                    kb,
                    1,
                    s.d as isize,
                )
            };
        }
        let shift = s.lk as isize - s.lq as isize;
        for i in 0..s.lq {
            let row = &mut scores[i * s.lk..(i + 1) * s.lk];
            let mrow = (bh * s.lq + i) * s.lk;
            for (j, x) in row.iter_mut().enumerate() {
                *x = (o.round_t)(*x);
                match o.mask {
                    Some(AttnMask::Bool(m)) if !m[mrow + j] => *x = o.fill,
                    Some(AttnMask::Additive(m)) => *x = (o.round_t)(*x + m[mrow + j]),
                    _ => {}
                }
                if o.causal && (j as isize) > i as isize + shift {
                    *x = o.fill;
                }
            }
            let sink = o.sinks.map(|sk| sk[h]);
            let mx = row
                .iter()
                .copied()
                .chain(sink)
                .fold(f32::NEG_INFINITY, f32::max);
            let mut sum = sink.map_or(0.0, |z| mlx_exp(z - mx));
            for x in row.iter_mut() {
                *x = mlx_exp(*x - mx);
                sum += *x;
            }
            for x in row.iter_mut() {
                *x = (o.round_t)(*x / sum);
            }
            lb[i] = mx + sum.ln();
        }
        if s.lk > 0 && s.dv > 0 {
            let t = Tile::new(ob);
            // SAFETY: `ob` is this head's own lq × dv block.
            unsafe {
                t.gemm_block(
                    s.lq,
                    s.dv,
                    s.lk,
                    0,
                    s.dv,
                    &scores,
                    s.lk as isize,
                    vb,
                    s.dv as isize,
                    1,
                )
            };
        }
    };
    if s.b * s.hq * s.lq * s.lk * s.d >= PAR_THRESHOLD {
        out.par_chunks_mut(s.lq * s.dv)
            .zip(lse.par_chunks_mut(s.lq))
            .enumerate()
            .for_each(head);
    } else {
        out.chunks_mut(s.lq * s.dv)
            .zip(lse.chunks_mut(s.lq))
            .enumerate()
            .for_each(head);
    }
    (out, lse)
}

impl ScaledDotProductAttention {
    /// Index of the mask input, if there is one.
    pub(crate) fn mask_index(&self, n_inputs: usize) -> Option<usize> {
        (n_inputs == 4 + self.has_sinks as usize).then_some(3)
    }
}

impl Primitive for ScaledDotProductAttention {
    /// Every query meets every key twice (scores, then the weighted values).
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        let keys = inputs
            .get(1)
            .and_then(|k| k.shape.iter().rev().nth(1))
            .map_or(1, |&s| s.max(1) as u64);
        let out = outputs.first().map_or(0, |o| o.size() as u64);
        out.saturating_mul(keys).saturating_mul(2)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let name = "ScaledDotProductAttention";
        let min = 3 + self.has_sinks as usize;
        if inputs.len() != min && inputs.len() != min + 1 {
            return Err(Error::invalid(
                name,
                format!(
                    "expected inputs (q, k, v[, mask][, sinks]), found {} inputs",
                    inputs.len()
                ),
            ));
        }
        let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
        let bad = |msg: String| Err(Error::invalid(name, msg));
        if q.shape.len() != 4 || k.shape.len() != 4 || v.shape.len() != 4 {
            return bad(format!(
                "q, k and v must have rank 4, found shapes {:?}, {:?}, {:?}",
                q.shape, k.shape, v.shape
            ));
        }
        if !q.dtype.is_float() || k.dtype != q.dtype || v.dtype != q.dtype {
            return bad(format!(
                "q, k and v must share a floating point dtype, found {}, {}, {}",
                q.dtype, k.dtype, v.dtype
            ));
        }
        let (b, hq, lq, d) = (q.shape[0], q.shape[1], q.shape[2], q.shape[3]);
        let (hkv, lk) = (k.shape[1], k.shape[2]);
        if k.shape[0] != b
            || v.shape[0] != b
            || k.shape[3] != d
            || v.shape[1] != hkv
            || v.shape[2] != lk
        {
            return bad(format!(
                "q {:?}, k {:?} and v {:?} do not fit (B, H, L, D) attention",
                q.shape, k.shape, v.shape
            ));
        }
        if hkv == 0 || hq % hkv != 0 {
            return bad(format!(
                "query heads {hq} must be a multiple of key/value heads {hkv}"
            ));
        }
        let full = [b, hq, lq, lk];
        if let Some(i) = self.mask_index(inputs.len()) {
            let m = &inputs[i];
            let fits = crate::shape::broadcast_shapes(name, &m.shape, &full).map(|s| s == full);
            if m.shape.len() > 4
                || fits.ok() != Some(true)
                || (m.dtype != Dtype::Bool && m.dtype != q.dtype)
            {
                return bad(format!(
                    "mask must be bool or {} and broadcast to {full:?}, found shape {:?} and dtype {}",
                    q.dtype, m.shape, m.dtype
                ));
            }
        }
        if self.has_sinks {
            let s = inputs.last().expect("sinks");
            if s.shape != [hq] || s.dtype != q.dtype {
                return bad(format!(
                    "sinks must have shape [{hq}] and dtype {}, found {:?} and {}",
                    q.dtype, s.shape, s.dtype
                ));
            }
        }
        let mut outs = vec![Spec::new([b, hq, lq, v.shape[3]], q.dtype)];
        if self.output_logsumexp {
            outs.push(Spec::new([b, hq, lq, 1], Dtype::Float32));
        }
        Ok(outs)
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
        let dims = |a: &Array, i: usize| a.shape()[i] as usize;
        let shape = AttnShape {
            b: dims(q, 0),
            hq: dims(q, 1),
            hkv: dims(k, 1),
            lq: dims(q, 2),
            lk: dims(k, 2),
            d: dims(q, 3),
            dv: dims(v, 3),
        };
        let full = [q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2]];
        let mask = match self.mask_index(inputs.len()) {
            Some(i) => {
                let m = broadcast_view(&inputs[i], &full)?;
                Some(if m.dtype() == Dtype::Bool {
                    AttnMask::Bool(to_contiguous_vec::<bool>(&m.data()?, &full))
                } else {
                    AttnMask::Additive(read_f32(&m)?)
                })
            }
            None => None,
        };
        let sinks = if self.has_sinks {
            Some(read_f32(inputs.last().expect("sinks"))?)
        } else {
            None
        };
        let dtype = out[0].dtype;
        let opts = AttnOptions {
            scale: self.scale,
            causal: self.do_causal,
            mask: mask.as_ref(),
            sinks: sinks.as_deref(),
            fill: finfo_min(dtype),
            round_t: round_fn(dtype),
        };
        let (o, lse) = attention(&read_f32(q)?, &read_f32(k)?, &read_f32(v)?, shape, &opts);
        let mut res = vec![write_f32(&o, dtype, &out[0].shape)];
        if let Some(spec) = out.get(1) {
            res.push(write_f32(&lse, Dtype::Float32, &spec.shape));
        }
        Ok(res)
    }
    /// The graph MLX's CPU build records instead of this primitive.
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        Some(fallback_graph(self, inputs))
    }
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        self.rule(primals, cot, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        self.forward_rule(primals, tangents, argnums)
    }
}

/// The most negative finite value of a float dtype (MLX's `finfo.min`).
fn fallback_fill(d: Dtype) -> f64 {
    match d {
        Dtype::Float16 => -65504.0,
        Dtype::Bfloat16 => -3.3895313892515355e38,
        Dtype::Float64 => f64::MIN,
        _ => f32::MIN as f64,
    }
}

/// `softmax(scale·q kᵀ + mask) v`, grouped-query heads unflattened, causal
/// masks built from aranges, sinks as an extra logit column.
fn fallback_graph(p: &ScaledDotProductAttention, inputs: &[Array]) -> Result<Vec<Array>> {
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
            let min = Array::scalar_of(fallback_fill(scores.dtype()), scores.dtype());
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

/// The recomputed forward of an attention node: scaled queries grouped as
/// (B, Hkv, rep, Lq, D) so that each key/value head (K, V expanded to
/// (B, Hkv, 1, Lk, ·)) serves `rep` query heads, and the probabilities P
/// (without the sink column, which is `p_sink`).
struct Attn {
    qs: Array,
    kk: Array,
    vv: Array,
    p: Array,
    p_sink: Option<Array>,
    /// (B, Hq, Lq, D, Hkv, Lk, Dv).
    dims: [i32; 7],
}

impl Attn {
    /// `a` with the query heads split by key/value head, last axis `last`.
    fn grouped(&self, a: &Array, last: i32) -> Result<Array> {
        let [b, hq, lq, _, hkv, _, _] = self.dims;
        o::reshape(a, &[b, hkv, hq / hkv, lq, last])
    }

    /// A per-(query head) array back to (B, Hq, Lq, last).
    fn ungrouped(&self, a: &Array, last: i32) -> Result<Array> {
        let [b, hq, lq, ..] = self.dims;
        o::reshape(a, &[b, hq, lq, last])
    }
}

impl ScaledDotProductAttention {
    fn recompute(&self, primals: &[Array]) -> Result<Attn> {
        let (q, k, v) = (up(&primals[0])?, up(&primals[1])?, up(&primals[2])?);
        let (b, hq, lq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
        let (hkv, lk, dv) = (k.shape()[1], k.shape()[2], v.shape()[3]);
        let mut at = Attn {
            qs: q.clone(),
            kk: o::expand_dims(&k, &[2])?,
            vv: o::expand_dims(&v, &[2])?,
            p: q.clone(),
            p_sink: None,
            dims: [b, hq, lq, d, hkv, lk, dv],
        };
        at.qs = at.grouped(&o::multiply(&q, &scalar(self.scale as f64, &q))?, d)?;
        let mut s = o::matmul(&at.qs, &o::swapaxes(&at.kk, -1, -2)?)?;
        let lowest = scalar(-f32::MAX as f64, &s);
        if let Some(i) = self.mask_index(primals.len()) {
            let m = &primals[i];
            let full = at.grouped(&o::broadcast_to(m, &[b, hq, lq, lk])?, lk)?;
            s = if m.dtype() == Dtype::Bool {
                o::where_(&full, &s, &lowest)?
            } else {
                o::add(&s, &up(&full)?)?
            };
        }
        if self.do_causal {
            let qi = o::arange((lk - lq) as f64, lk as f64, 1.0, Dtype::Int32)?;
            let ki = o::arange(0.0, lk as f64, 1.0, Dtype::Int32)?;
            let keep = o::greater_equal(&o::reshape(&qi, &[lq, 1])?, &o::reshape(&ki, &[1, lk])?)?;
            s = o::where_(&keep, &s, &lowest)?;
        }
        if self.has_sinks {
            let col = self.sink_column(&at, primals.last().expect("sinks"))?;
            s = o::concatenate(&[col, s], -1)?;
        }
        let p = o::softmax_precise(&s, &[-1])?;
        if self.has_sinks {
            let cut = |lo: i32, hi: i32| {
                o::slice(&p, &[0, 0, 0, 0, lo], &[b, hkv, hq / hkv, lq, hi], &[])
            };
            at.p_sink = Some(cut(0, 1)?);
            at.p = cut(1, lk + 1)?;
        } else {
            at.p = p;
        }
        Ok(at)
    }

    /// Per-head sink values (Hq,) as the extra score column (B, Hkv, rep, Lq, 1).
    fn sink_column(&self, at: &Attn, sinks: &Array) -> Result<Array> {
        let [b, hq, lq, _, hkv, _, _] = at.dims;
        let s = o::reshape(&up(sinks)?, &[1, hkv, hq / hkv, 1, 1])?;
        o::broadcast_to(&s, &[b, hkv, hq / hkv, lq, 1])
    }

    /// The softmax-attention backward on the recomputed P:
    /// dV = Pᵀ dO, dS = P ⊙ (dO Vᵀ − rowsum(dO Vᵀ ⊙ P) + dlse),
    /// dQ = scale · dS K, dK = dSᵀ (scale · Q); an additive mask gets dS,
    /// the sinks −Σ P_sink ⊙ (rowsum − dlse).
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let at = self.recompute(primals)?;
        let [_, hq, _, d, _, lk, dv] = at.dims;
        let p = &at.p;
        let d_o = at.grouped(&up(&cot[0])?, dv)?;
        let dv_ = o::sum(&o::matmul(&o::swapaxes(p, -1, -2)?, &d_o)?, &[2], false)?;
        let dp = o::matmul(&d_o, &o::swapaxes(&at.vv, -1, -2)?)?;
        let mut r = o::sum(&o::multiply(&dp, p)?, &[-1], true)?;
        if let Some(dl) = cot.get(1) {
            r = o::subtract(&r, &at.grouped(&up(dl)?, 1)?)?;
        }
        let ds = o::multiply(p, &o::subtract(&dp, &r)?)?;
        let dq = o::multiply(&o::matmul(&ds, &at.kk)?, &scalar(self.scale as f64, &ds))?;
        let dk = o::sum(&o::matmul(&o::swapaxes(&ds, -1, -2)?, &at.qs)?, &[2], false)?;
        let mut all = vec![at.ungrouped(&dq, d)?, dk, dv_];
        if let Some(i) = self.mask_index(primals.len()) {
            let m = &primals[i];
            all.push(if m.dtype() == Dtype::Bool {
                o::zeros_like(m)?
            } else {
                unbroadcast(at.ungrouped(&ds, lk)?, m.shape(), ds.dtype())?
            });
        }
        if let Some(ps) = &at.p_sink {
            let g = o::sum(&o::multiply(ps, &r)?, &[0, 3, 4], false)?;
            all.push(o::negative(&o::reshape(&g, &[hq])?)?);
        }
        select(all, primals, argnums)
    }

    /// Forward mode: the score tangent dS (from q, k and an additive mask),
    /// dP = P ⊙ (dS − Σ P dS − P_sink dsink), dO = dP V + P dV; the
    /// log-sum-exp output moves by Σ P dS + P_sink dsink.
    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let mask = self.mask_index(primals.len());
        if let Some(i) = mask.filter(|&i| primals[i].dtype() == Dtype::Bool && argnums.contains(&i))
        {
            let what = format!("its bool mask (input {i})");
            return Err(not_differentiable("ScaledDotProductAttention", &what));
        }
        let at = self.recompute(primals)?;
        let [b, hq, lq, d, _, lk, dv] = at.dims;
        let tan = |i: usize| -> Result<Option<Array>> {
            argnums
                .iter()
                .position(|&a| a == i)
                .map(|j| up(&tangents[j]))
                .transpose()
        };
        let mut ds = o::zeros_like(&at.p)?;
        if let Some(tq) = tan(0)? {
            let tq = at.grouped(&o::multiply(&tq, &scalar(self.scale as f64, &tq))?, d)?;
            ds = o::add(&ds, &o::matmul(&tq, &o::swapaxes(&at.kk, -1, -2)?)?)?;
        }
        if let Some(tk) = tan(1)? {
            let tk = o::swapaxes(&o::expand_dims(&tk, &[2])?, -1, -2)?;
            ds = o::add(&ds, &o::matmul(&at.qs, &tk)?)?;
        }
        if let Some(tm) = mask.map(tan).transpose()?.flatten() {
            ds = o::add(
                &ds,
                &at.grouped(&o::broadcast_to(&tm, &[b, hq, lq, lk])?, lk)?,
            )?;
        }
        let mut mean = o::sum(&o::multiply(&at.p, &ds)?, &[-1], true)?;
        if let Some(ps) = &at.p_sink {
            if let Some(ts) = tan(primals.len() - 1)? {
                mean = o::add(&mean, &o::multiply(ps, &self.sink_column(&at, &ts)?)?)?;
            }
        }
        let dp = o::multiply(&at.p, &o::subtract(&ds, &mean)?)?;
        let mut d_o = o::matmul(&dp, &at.vv)?;
        if let Some(tv) = tan(2)? {
            d_o = o::add(&d_o, &o::matmul(&at.p, &o::expand_dims(&tv, &[2])?)?)?;
        }
        let mut outs = vec![o::cast_to(&at.ungrouped(&d_o, dv)?, primals[0].dtype())?];
        if self.output_logsumexp {
            outs.push(o::cast_to(&at.ungrouped(&mean, 1)?, Dtype::Float32)?);
        }
        Ok(outs)
    }
}
