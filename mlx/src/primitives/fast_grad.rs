//! Derivatives of the fused `fast` primitives, built from ordinary ops so
//! the backward graph can be traced and exported: closed forms for the two
//! norms, the inverse rotation for RoPE, and the softmax-attention
//! backward for ScaledDotProductAttention. Statistics are computed in
//! float32 (float64 for float64 inputs), as the forward kernels do.

use super::fast::{LayerNorm, RMSNorm, RoPE, ScaledDotProductAttention};
use super::grad::unbroadcast;
use super::grad_util::{linear_jvp, not_differentiable, only_args};
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
        let dw = unbroadcast(
            o::multiply(&g, &o::multiply(&x, &n)?)?,
            w.shape(),
            w.dtype(),
        )?;
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
        let dw = unbroadcast(
            o::multiply(&g, &o::multiply(&xc, &n)?)?,
            w.shape(),
            w.dtype(),
        )?;
        let db = unbroadcast(g.clone(), b.shape(), g.dtype())?;
        select(vec![dx, dw, db], primals, argnums)
    }
}

/// The tangent of input `i` (zeros when it has none), in the working dtype.
fn tangent(primals: &[Array], tangents: &[Array], argnums: &[usize], i: usize) -> Result<Array> {
    match argnums.iter().position(|&a| a == i) {
        Some(j) => up(&tangents[j]),
        None => o::zeros_like(&up(&primals[i])?),
    }
}

impl RMSNorm {
    /// Forward mode: with n = rsqrt(mean(x²) + eps), dn = −n³ mean(x dx)
    /// and dy = w (dx n + x dn) + x n dw.
    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w) = (up(&primals[0])?, up(&primals[1])?);
        let t = |i| tangent(primals, tangents, argnums, i);
        let (dx, dw) = (t(0)?, t(1)?);
        let n = o::rsqrt(&o::add(
            &row_mean(&o::square(&x)?)?,
            &scalar(self.eps as f64, &x),
        )?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let dn = o::negative(&o::multiply(&n3, &row_mean(&o::multiply(&x, &dx)?)?)?)?;
        let inner = o::add(&o::multiply(&dx, &n)?, &o::multiply(&x, &dn)?)?;
        let dy = o::add(
            &o::multiply(&w, &inner)?,
            &o::multiply(&o::multiply(&x, &n)?, &dw)?,
        )?;
        Ok(vec![o::cast_to(&dy, primals[0].dtype())?])
    }
}

impl LayerNorm {
    /// Forward mode: with xc = x − mean(x), dxc = dx − mean(dx) and
    /// dn = −n³ mean(xc dxc), dy = w (dxc n + xc dn) + xc n dw + db.
    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w) = (up(&primals[0])?, up(&primals[1])?);
        let t = |i| tangent(primals, tangents, argnums, i);
        let (dx, dw, db) = (t(0)?, t(1)?, t(2)?);
        let xc = o::subtract(&x, &row_mean(&x)?)?;
        let dxc = o::subtract(&dx, &row_mean(&dx)?)?;
        let n = o::rsqrt(&o::add(
            &row_mean(&o::square(&xc)?)?,
            &scalar(self.eps as f64, &x),
        )?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let dn = o::negative(&o::multiply(&n3, &row_mean(&o::multiply(&xc, &dxc)?)?)?)?;
        let inner = o::add(&o::multiply(&dxc, &n)?, &o::multiply(&xc, &dn)?)?;
        let dy = o::add(
            &o::multiply(&w, &inner)?,
            &o::multiply(&o::multiply(&xc, &n)?, &dw)?,
        )?;
        Ok(vec![o::cast_to(&o::add(&dy, &db)?, primals[0].dtype())?])
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
