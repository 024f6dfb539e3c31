//! Derivatives of the fused `fast` primitives, built from ordinary ops so
//! the backward graph can be traced and exported: closed forms for the two
//! norms, the inverse rotation for RoPE, and the softmax-attention
//! backward for ScaledDotProductAttention. Statistics are computed in
//! float32 (float64 for float64 inputs), as the forward kernels do.

use super::fast::{LayerNorm, RMSNorm, RoPE, ScaledDotProductAttention};
use super::grad_util::{linear_jvp, only_args, sum_to_shape};
use crate::ops as o;
use crate::{Array, Dtype, Result};

/// The dtype the backward works in.
fn work_dtype(d: Dtype) -> Dtype {
    if d == Dtype::Float64 {
        d
    } else {
        Dtype::Float32
    }
}

/// `a` in the working dtype.
fn up(a: &Array) -> Result<Array> {
    o::cast_to(a, work_dtype(a.dtype()))
}

fn scalar(v: f64, like: &Array) -> Array {
    Array::scalar_of(v, like.dtype())
}

/// Picks the requested cotangents out of all of them, cast back to the
/// primals' dtypes.
fn select(all: Vec<Array>, primals: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
    argnums
        .iter()
        .map(|&i| o::cast_to(&all[i], primals[i].dtype()))
        .collect()
}

/// Mean over the last axis, kept.
fn row_mean(a: &Array) -> Result<Array> {
    o::mean(a, &[-1], true)
}

impl RMSNorm {
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w, g) = (up(&primals[0])?, up(&primals[1])?, up(&cot[0])?);
        let eps = scalar(self.eps as f64, &x);
        let n = o::rsqrt(&o::add(&row_mean(&o::square(&x)?)?, &eps)?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let gw = o::multiply(&g, &w)?;
        let t = o::multiply(&o::multiply(&x, &row_mean(&o::multiply(&gw, &x)?)?)?, &n3)?;
        let dx = o::subtract(&o::multiply(&gw, &n)?, &t)?;
        let dw = sum_to_shape(&o::multiply(&g, &o::multiply(&x, &n)?)?, w.shape())?;
        select(vec![dx, dw], primals, argnums)
    }
}

impl LayerNorm {
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w, b, g) = (
            up(&primals[0])?,
            up(&primals[1])?,
            &primals[2],
            up(&cot[0])?,
        );
        let eps = scalar(self.eps as f64, &x);
        let xc = o::subtract(&x, &row_mean(&x)?)?;
        let n = o::rsqrt(&o::add(&row_mean(&o::square(&xc)?)?, &eps)?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let wg = o::multiply(&w, &g)?;
        let t1 = o::multiply(&o::multiply(&xc, &row_mean(&o::multiply(&wg, &xc)?)?)?, &n3)?;
        let t2 = o::multiply(&o::subtract(&wg, &row_mean(&wg)?)?, &n)?;
        let dx = o::subtract(&t2, &t1)?;
        let dw = sum_to_shape(&o::multiply(&g, &o::multiply(&xc, &n)?)?, w.shape())?;
        let db = sum_to_shape(&g, b.shape())?;
        select(vec![dx, dw, db], primals, argnums)
    }
}

impl RoPE {
    /// The rotation is orthogonal: its transpose is the inverse rotation.
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        only_args("RoPE", argnums, &[0], "its offset or frequencies")?;
        let mut inputs = primals.to_vec();
        inputs[0] = cot[0].clone();
        let p = RoPE {
            forward: !self.forward,
            ..self.clone()
        };
        Ok(vec![Array::from_primitive(p, inputs)?])
    }

    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        linear_jvp(
            self,
            primals,
            tangents,
            argnums,
            &[0],
            "its offset or frequencies",
        )
    }
}

impl ScaledDotProductAttention {
    /// Recomputes the attention probabilities P (queries grouped as
    /// (B, Hkv, rep, Lq, ·) so that each key/value head serves `rep` query
    /// heads) and applies the softmax-attention backward:
    /// dV = Pᵀ dO, dS = P ⊙ (dO Vᵀ − rowsum(dO Vᵀ ⊙ P) + dlse),
    /// dQ = scale · dS K, dK = dSᵀ (scale · Q); an additive mask gets dS,
    /// the sinks −Σ P_sink ⊙ (rowsum − dlse).
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (q, k, v) = (up(&primals[0])?, up(&primals[1])?, up(&primals[2])?);
        let (b, hq, lq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
        let (hkv, lk, dv) = (k.shape()[1], k.shape()[2], v.shape()[3]);
        let rep = hq / hkv;
        let grouped = |a: &Array, last: i32| o::reshape(a, &[b, hkv, rep, lq, last]);
        let qs = grouped(&o::multiply(&q, &scalar(self.scale as f64, &q))?, d)?;
        let kk = o::expand_dims(&k, &[2])?;
        let vv = o::expand_dims(&v, &[2])?;
        let mut s = o::matmul(&qs, &o::swapaxes(&kk, -1, -2)?)?;
        let lowest = scalar(-f32::MAX as f64, &s);
        let mask = self.mask_index(primals.len()).map(|i| &primals[i]);
        if let Some(m) = mask {
            let full = o::reshape(
                &o::broadcast_to(m, &[b, hq, lq, lk])?,
                &[b, hkv, rep, lq, lk],
            )?;
            s = if m.dtype() == Dtype::Bool {
                o::where_(&full, &s, &lowest)?
            } else {
                o::add(&s, &up(&full)?)?
            };
        }
        if self.do_causal {
            let qi = o::reshape(
                &o::arange((lk - lq) as f64, lk as f64, 1.0, Dtype::Int32)?,
                &[lq, 1],
            )?;
            let ki = o::reshape(&o::arange(0.0, lk as f64, 1.0, Dtype::Int32)?, &[1, lk])?;
            s = o::where_(&o::greater_equal(&qi, &ki)?, &s, &lowest)?;
        }
        if self.has_sinks {
            let sinks = up(primals.last().expect("sinks"))?;
            let col = o::broadcast_to(
                &o::reshape(&sinks, &[1, hkv, rep, 1, 1])?,
                &[b, hkv, rep, lq, 1],
            )?;
            s = o::concatenate(&[col, s], -1)?;
        }
        let mut p = o::softmax(&s, &[-1], true)?;
        let mut p_sink = None;
        if self.has_sinks {
            let at =
                |lo: i32, hi: i32| o::slice(&p, &[0, 0, 0, 0, lo], &[b, hkv, rep, lq, hi], &[]);
            let (sink, rest) = (at(0, 1)?, at(1, lk + 1)?);
            (p_sink, p) = (Some(sink), rest);
        }
        let d_o = grouped(&up(&cot[0])?, dv)?;
        let dv_ = o::sum(&o::matmul(&o::swapaxes(&p, -1, -2)?, &d_o)?, &[2], false)?;
        let dp = o::matmul(&d_o, &o::swapaxes(&vv, -1, -2)?)?;
        let mut r = o::sum(&o::multiply(&dp, &p)?, &[-1], true)?;
        if let Some(dl) = cot.get(1) {
            r = o::subtract(&r, &grouped(&up(dl)?, 1)?)?;
        }
        let ds = o::multiply(&p, &o::subtract(&dp, &r)?)?;
        let dq = o::multiply(&o::matmul(&ds, &kk)?, &scalar(self.scale as f64, &ds))?;
        let dk = o::sum(&o::matmul(&o::swapaxes(&ds, -1, -2)?, &qs)?, &[2], false)?;
        let mut all = vec![o::reshape(&dq, &[b, hq, lq, d])?, dk, dv_];
        if let Some(m) = mask {
            all.push(if m.dtype() == Dtype::Bool {
                o::zeros_like(m)?
            } else {
                sum_to_shape(&o::reshape(&ds, &[b, hq, lq, lk])?, m.shape())?
            });
        }
        if let Some(ps) = p_sink {
            let g = o::sum(&o::multiply(&ps, &r)?, &[0, 3, 4], false)?;
            all.push(o::negative(&o::reshape(&g, &[hq])?)?);
        }
        select(all, primals, argnums)
    }
}
