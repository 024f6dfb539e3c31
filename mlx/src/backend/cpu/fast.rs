//! Fused kernels behind `mlx::fast` (RMS norm, layer norm, rotary
//! embedding, attention), plus the f32 staging helpers the quantized and
//! FFT kernels share. Every kernel computes in f32; `round_t` rounds an
//! intermediate to the array's dtype where MLX's decomposition would, so
//! half-precision results follow MLX's rounding steps.

use crate::array::Data;
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::buffer::Buffer;
use crate::{dispatch_dtype, Array, Dtype, Result};
use gemm::Parallelism;
use half::{bf16, f16};
use rayon::prelude::*;

/// `e^x` in f32. MLX's CPU `Exp` is a Cephes-style polynomial; this is the
/// one place to swap it in (`backend::cpu::math`) once that lands on main.
#[inline]
pub fn mlx_exp(x: f32) -> f32 {
    x.exp()
}

/// C's `rint` in the default rounding mode: round half to even.
#[inline]
pub fn mlx_round(x: f32) -> f32 {
    x.round_ties_even()
}

/// The elements of an evaluated array as f32, row-major (any real dtype).
pub fn read_f32(a: &Array) -> Result<Vec<f32>> {
    let d = a.data()?;
    Ok(dispatch_dtype!(a.dtype(), T => {
        let v = to_contiguous_vec::<T>(&d, a.shape());
        v.into_iter().map(|x| x.cast::<f32>()).collect()
    }))
}

/// Row-major data of `dtype` from f32 values (one rounding per element).
pub fn write_f32(v: &[f32], dtype: Dtype, shape: &[i32]) -> Data {
    let buf = dispatch_dtype!(dtype, T => {
        let conv: Vec<T> = if v.len() >= super::PAR_THRESHOLD {
            v.par_iter().map(|&x| x.cast::<T>()).collect()
        } else {
            v.iter().map(|&x| x.cast::<T>()).collect()
        };
        Buffer::from_slice(&conv)
    });
    Data::contiguous(buf, shape)
}

/// Rounds an f32 to `dtype`'s precision and back (identity for f32/f64).
pub fn round_fn(dtype: Dtype) -> fn(f32) -> f32 {
    match dtype {
        Dtype::Float16 => |x| f16::from_f32(x).to_f32(),
        Dtype::Bfloat16 => |x| bf16::from_f32(x).to_f32(),
        _ => |x| x,
    }
}

/// The most negative finite value of a float dtype, as f32 (MLX masks
/// attention scores with `finfo(dtype).min`).
pub fn finfo_min(dtype: Dtype) -> f32 {
    match dtype {
        Dtype::Float16 => f16::MIN.to_f32(),
        Dtype::Bfloat16 => bf16::MIN.to_f32(),
        _ => f32::MIN,
    }
}

/// A row-major f32 output that parallel tasks write disjoint blocks of.
pub struct Tile {
    ptr: *mut f32,
    len: usize,
}
// SAFETY: users write disjoint blocks (documented on `gemm_block`).
unsafe impl Send for Tile {}
unsafe impl Sync for Tile {}

impl Tile {
    /// Wraps `out` for the duration of a parallel loop.
    pub fn new(out: &mut [f32]) -> Tile {
        Tile {
            ptr: out.as_mut_ptr(),
            len: out.len(),
        }
    }

    /// `out[i, col0 + j] = Σ_l lhs[i, l] · rhs[l, j]` for i < m, j < nb,
    /// where out has leading dimension `ld`, lhs is row-major with row
    /// stride `lhs_rs`, and rhs has strides (`rhs_rs`, `rhs_cs`).
    ///
    /// # Safety
    /// No other thread may touch the block (rows 0..m, columns
    /// col0..col0+nb) at the same time; the block must lie inside the output
    /// and lhs/rhs must hold every element the strides reach.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_block(
        &self,
        m: usize,
        nb: usize,
        k: usize,
        col0: usize,
        ld: usize,
        lhs: &[f32],
        lhs_rs: isize,
        rhs: &[f32],
        rhs_rs: isize,
        rhs_cs: isize,
    ) {
        debug_assert!((m - 1) * ld + col0 + nb <= self.len);
        gemm::gemm(
            m,
            nb,
            k,
            self.ptr.add(col0),
            1,
            ld as isize,
            false,
            lhs.as_ptr(),
            1,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// Rows of `d` values: `round(round(x · rsqrt(mean(x²) + eps)) · w)`.
/// `weight` has `d` values or one.
pub fn rms_norm(
    x: &[f32],
    d: usize,
    weight: &[f32],
    eps: f32,
    round_t: fn(f32) -> f32,
) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    let row = |(xr, or): (&[f32], &mut [f32])| {
        let ss: f32 = xr.iter().map(|v| v * v).sum();
        let r = 1.0 / (ss / d as f32 + eps).sqrt();
        for (j, (o, &v)) in or.iter_mut().zip(xr).enumerate() {
            let w = weight[if weight.len() == 1 { 0 } else { j }];
            *o = round_t(round_t(v * r) * w);
        }
    };
    rows_par(x, &mut out, d, row);
    out
}

/// Rows of `d` values: `((x - mean) · rsqrt(var + eps)) · w + b`, rounding
/// after each step as MLX's decomposition does.
pub fn layer_norm(
    x: &[f32],
    d: usize,
    weight: &[f32],
    bias: &[f32],
    eps: f32,
    round_t: fn(f32) -> f32,
) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    let row = |(xr, or): (&[f32], &mut [f32])| {
        let mu = xr.iter().sum::<f32>() / d as f32;
        let var = xr.iter().map(|v| (v - mu) * (v - mu)).sum::<f32>() / d as f32;
        let r = 1.0 / (var + eps).sqrt();
        for (j, (o, &v)) in or.iter_mut().zip(xr).enumerate() {
            let w = weight[if weight.len() == 1 { 0 } else { j }];
            let b = bias[if bias.len() == 1 { 0 } else { j }];
            *o = round_t(round_t(round_t((v - mu) * r) * w) + b);
        }
    };
    rows_par(x, &mut out, d, row);
    out
}

/// Applies `f` to every (input row, output row) pair of width `d`.
fn rows_par(x: &[f32], out: &mut [f32], d: usize, f: impl Fn((&[f32], &mut [f32])) + Sync + Send) {
    if d == 0 {
        return;
    }
    if x.len() >= super::PAR_THRESHOLD {
        x.par_chunks(d).zip(out.par_chunks_mut(d)).for_each(f);
    } else {
        x.chunks(d).zip(out.chunks_mut(d)).for_each(f);
    }
}

/// Parameters of a rotary embedding over x viewed as (B, N, T, D).
pub struct RopeParams<'a> {
    /// (B, N, T, D).
    pub shape: [usize; 4],
    /// Feature count rotated (even, ≤ D).
    pub dims: usize,
    /// Rotate interleaved pairs (2i, 2i+1) instead of the halves.
    pub traditional: bool,
    /// Position multiplier.
    pub scale: f32,
    /// Rotation direction: forward, or its inverse.
    pub forward: bool,
    /// One offset, or one per batch entry.
    pub offsets: &'a [i32],
    /// Inverse frequencies, `dims / 2` of them.
    pub inv_freqs: &'a [f32],
}

/// The rotary embedding; features past `dims` are copied.
pub fn rope(x: &[f32], p: &RopeParams<'_>, round_t: fn(f32) -> f32) -> Vec<f32> {
    let [_, n, t, d] = p.shape;
    let half = p.dims / 2;
    let mut out = x.to_vec();
    let row = |(r, or): (usize, &mut [f32])| {
        let b = r / (n * t);
        let pos_t = (r % t) as f32;
        let off = p.offsets[if p.offsets.len() == 1 { 0 } else { b }] as f32;
        let pos = (pos_t + off) * p.scale;
        for i in 0..half {
            let theta = pos * p.inv_freqs[i];
            let (c, s) = (round_t(theta.cos()), round_t(theta.sin()));
            let (i1, i2) = if p.traditional {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + half)
            };
            let (x1, x2) = (or[i1], or[i2]);
            let (m1c, m2s, m1s, m2c) = (
                round_t(x1 * c),
                round_t(x2 * s),
                round_t(x1 * s),
                round_t(x2 * c),
            );
            if p.forward {
                or[i1] = round_t(m1c - m2s);
                or[i2] = round_t(m1s + m2c);
            } else {
                or[i1] = round_t(m2s + m1c);
                or[i2] = round_t(m2c - m1s);
            }
        }
    };
    if d == 0 {
        return out;
    }
    if x.len() >= super::PAR_THRESHOLD {
        out.par_chunks_mut(d).enumerate().for_each(row);
    } else {
        out.chunks_mut(d).enumerate().for_each(row);
    }
    out
}

/// MLX's default inverse frequencies: `exp(-i · ln(base) / (dims/2))`.
pub fn rope_inv_freqs(base: f32, dims: usize) -> Vec<f32> {
    let half = dims / 2;
    let c = base.ln() / half as f32;
    (0..half).map(|i| mlx_exp(-(i as f32) * c)).collect()
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
    if s.b * s.hq * s.lq * s.lk * s.d >= super::PAR_THRESHOLD {
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
