//! Fused kernels over the last axis: softmax (max, exp and sum, scale in one
//! pass per row) and logsumexp. Rows run in parallel above the threshold.

use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::backend::cpu::copy::make_contiguous;
use crate::backend::cpu::num::{bf16_to_f32, f16_round, f16_to_f32};
use crate::backend::cpu::simd::has_fma;
use crate::buffer::Buffer;
use crate::Element;
use half::{bf16, f16};
use num_traits::{Float, One, Zero};
use rayon::prelude::*;

/// `exp` of the fused kernels: MLX's CPU algorithm (2^(x·log2 e) as a
/// Cephes polynomial of the fractional part, with fma, times 2^integer part
/// built from bits; NaN passes through, x > 88 gives inf, x < -88 gives 0).
/// Written branch-free so that it vectorises. `backend::cpu::math` owns the
/// element-wise `exp`; this one can become a call to it if that one
/// vectorises as well.
#[inline(always)]
#[allow(clippy::approx_constant, clippy::excessive_precision)] // MLX's literals, as written
pub fn exp_f32(x: f32) -> f32 {
    let y = x * 1.442695f32;
    let ipart = (y + 0.5).floor();
    let f = y - ipart;
    let mut p = 1.535336188319500e-4f32;
    p = p.mul_add(f, 1.339887440266574e-3);
    p = p.mul_add(f, 9.618437357674640e-3);
    p = p.mul_add(f, 5.550332471162809e-2);
    p = p.mul_add(f, 2.402264791363012e-1);
    p = p.mul_add(f, 6.931472028550421e-1);
    p = p.mul_add(f, 1.0);
    let e = crate::backend::cpu::simd::pow2i(ipart);
    let r = if x.is_nan() { x } else { e * p };
    let r = if x > 88.0 { f32::INFINITY } else { r };
    if x < -88.0 {
        0.0
    } else {
        r
    }
}

/// The compute type of the fused kernels (f32 or f64).
pub trait Compute: Float + Send + Sync + 'static {
    fn fexp(self) -> Self;
}
impl Compute for f32 {
    #[inline(always)]
    fn fexp(self) -> f32 {
        exp_f32(self)
    }
}
impl Compute for f64 {
    /// MLX computes the exp of doubles in float32 as well.
    #[inline(always)]
    fn fexp(self) -> f64 {
        exp_f32(self as f32) as f64
    }
}

/// A float element type the fused kernels accept, with its compute type.
pub trait SoftmaxElem: Element {
    type F: Compute;
    /// Half types: without `precise`, every step rounds to the element type.
    const HALF: bool;
    fn to_f(self) -> Self::F;
    fn from_f(v: Self::F) -> Self;
}

macro_rules! softmax_elem {
    ($($t:ty => $f:ty, $half:expr, $to:expr, $from:expr);*) => {$(
        impl SoftmaxElem for $t {
            type F = $f;
            const HALF: bool = $half;
            #[inline(always)]
            fn to_f(self) -> $f { $to(self) }
            #[inline(always)]
            fn from_f(v: $f) -> $t { $from(v) }
        }
    )*};
}
softmax_elem!(
    f32 => f32, false, |x: f32| x, |v: f32| v;
    f64 => f64, false, |x: f64| x, |v: f64| v;
    f16 => f32, true, f16_to_f32, f16_round;
    bf16 => f32, true, bf16_to_f32, bf16::from_f32
);

/// NaN-propagating maximum.
#[inline(always)]
fn nan_max<F: Float>(a: F, b: F) -> F {
    if a.is_nan() || a > b {
        a
    } else {
        b
    }
}

/// Maximum of a row, in 8 lanes.
#[inline(always)]
fn row_max<T: SoftmaxElem>(x: &[T]) -> T::F {
    let mut lanes = [T::F::neg_infinity(); 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = nan_max(v.to_f(), *l);
        }
    }
    let mut m = lanes.into_iter().fold(T::F::neg_infinity(), nan_max);
    for &v in rest {
        m = nan_max(v.to_f(), m);
    }
    m
}

/// Sum of `f(x)` over a row, in 8 lanes (element `j` in lane `j % 8`, the
/// lanes added pairwise, then the tail in order). `f` runs in a plain map
/// loop over blocks of the row into a stack buffer, so that it vectorizes
/// (inside the lane loop an `exp` stayed scalar).
#[inline(always)]
fn row_sum_of<T: SoftmaxElem>(x: &[T], f: impl Fn(T::F) -> T::F) -> T::F {
    const BLOCK: usize = 256;
    let mut lanes = [T::F::zero(); 8];
    let mut values = [T::F::zero(); BLOCK];
    let whole = x.len() / 8 * 8;
    for block in x[..whole].chunks(BLOCK) {
        let values = &mut values[..block.len()];
        for (v, &e) in values.iter_mut().zip(block) {
            *v = f(e.to_f());
        }
        for c in values.chunks_exact(8) {
            for (acc, &v) in lanes.iter_mut().zip(c) {
                *acc = *acc + v;
            }
        }
    }
    let mut s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for &v in &x[whole..] {
        s = s + f(v.to_f());
    }
    s
}

/// Sum of `exp(x - max)` over a row.
#[inline(always)]
fn row_exp_sum<T: SoftmaxElem>(x: &[T], max: T::F) -> T::F {
    row_sum_of(x, |v| (v - max).fexp())
}

/// Softmax of one row in the compute type, written to `o`. Half types
/// recompute the exponentials in the scaling pass rather than round them;
/// f32/f64 store them first in a plain map loop (which vectorizes, where
/// exp inside the lane sum did not) and sum the stored values (same bits).
#[inline(always)]
fn softmax_row<T: SoftmaxElem>(x: &[T], o: &mut [T]) {
    let max = row_max(x);
    if T::HALF {
        let norm = T::F::one() / row_exp_sum(x, max);
        for (o, &v) in o.iter_mut().zip(x) {
            *o = T::from_f((v.to_f() - max).fexp() * norm);
        }
    } else {
        for (o, &v) in o.iter_mut().zip(x) {
            *o = T::from_f((v.to_f() - max).fexp());
        }
        let norm = T::F::one() / row_sum_of(o, |e| e);
        for o in o.iter_mut() {
            *o = T::from_f(o.to_f() * norm);
        }
    }
}

/// Softmax of one half-type row rounding every step to `T`, as MLX does
/// without `precise`.
#[inline(always)]
fn softmax_row_rounded<T: SoftmaxElem>(x: &[T], o: &mut [T]) {
    let r = |v: T::F| T::from_f(v).to_f();
    let max = row_max(x);
    let mut s = T::F::zero();
    for (o, &v) in o.iter_mut().zip(x) {
        let e = r(r(v.to_f() - max).fexp());
        *o = T::from_f(e);
        s = r(s + e);
    }
    let norm = r(T::F::one() / s);
    for o in o.iter_mut() {
        *o = T::from_f(o.to_f() * norm);
    }
}

/// Runs `f(rows_in, rows_out)` over chunks of whole rows (`m` inputs and
/// `per_out` outputs each), in parallel when large.
fn for_rows<T: Element, U: Element>(
    x: &[T],
    out: &mut [U],
    m: usize,
    per_out: usize,
    f: impl Fn(&[T], &mut [U]) + Sync,
) {
    if m == 0 {
        return;
    }
    if x.len() >= PAR_THRESHOLD {
        let rows = (PAR_THRESHOLD / m).max(1);
        out.par_chunks_mut(rows * per_out)
            .zip(x.par_chunks(rows * m))
            .for_each(|(o, x)| f(x, o));
    } else {
        f(x, out)
    }
}

/// Softmax of consecutive rows of length `m`.
#[inline(always)]
fn softmax_rows<T: SoftmaxElem>(x: &[T], o: &mut [T], m: usize, precise: bool) {
    for (o, x) in o.chunks_mut(m).zip(x.chunks(m)) {
        if T::HALF && !precise {
            softmax_row_rounded(x, o)
        } else {
            softmax_row(x, o)
        }
    }
}

/// Logsumexp of consecutive rows of length `m`, one output each.
#[inline(always)]
fn logsumexp_rows<T: SoftmaxElem>(x: &[T], o: &mut [T], m: usize) {
    for (o, x) in o.iter_mut().zip(x.chunks(m)) {
        let max = row_max(x);
        let s = row_exp_sum(x, max);
        *o = T::from_f(if max.is_infinite() { max } else { s.ln() + max });
    }
}

/// [`softmax_rows`] compiled for AVX2 + FMA (8-wide exp with hardware fma).
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_rows_fma<T: SoftmaxElem>(x: &[T], o: &mut [T], m: usize, precise: bool) {
    softmax_rows(x, o, m, precise)
}

/// [`logsumexp_rows`] compiled for AVX2 + FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn logsumexp_rows_fma<T: SoftmaxElem>(x: &[T], o: &mut [T], m: usize) {
    logsumexp_rows(x, o, m)
}

/// Softmax over the last axis of `data` (shaped `shape`); row-major result.
/// `precise` computes half types in f32 and rounds once.
pub fn softmax_last<T: SoftmaxElem>(data: &Data, shape: &[i32], precise: bool) -> Data {
    let d = make_contiguous::<T>(data, shape);
    let n: usize = shape.iter().map(|&s| s as usize).product();
    let m = shape.last().map_or(1, |&s| s as usize);
    let x = &d.buffer.as_slice::<T>()[d.offset..d.offset + n];
    let mut buf = Buffer::for_elements::<T>(n);
    let out = buf.as_mut_slice::<T>().expect("heap buffer");
    let fma = has_fma();
    for_rows(x, out, m, m, |x, o| {
        #[cfg(target_arch = "x86_64")]
        if fma {
            // SAFETY: has_fma() checked the CPU features.
            return unsafe { softmax_rows_fma(x, o, m, precise) };
        }
        let _ = fma;
        softmax_rows(x, o, m, precise)
    });
    Data::contiguous(buf, shape)
}

/// log(sum(exp(x))) over the last axis, kept as size 1; half types compute in
/// f32. A row whose maximum is infinite gives that maximum.
pub fn logsumexp_last<T: SoftmaxElem>(data: &Data, shape: &[i32]) -> Data {
    let d = make_contiguous::<T>(data, shape);
    let n: usize = shape.iter().map(|&s| s as usize).product();
    let m = shape.last().map_or(1, |&s| s as usize);
    let mut out_shape = shape.to_vec();
    if let Some(l) = out_shape.last_mut() {
        *l = 1;
    }
    let n_out: usize = out_shape.iter().map(|&s| s as usize).product();
    let x = &d.buffer.as_slice::<T>()[d.offset..d.offset + n];
    let mut buf = Buffer::for_elements::<T>(n_out);
    let out = buf.as_mut_slice::<T>().expect("heap buffer");
    if m == 0 {
        out.fill(T::from_f(T::F::neg_infinity()));
    } else {
        let fma = has_fma();
        for_rows(x, out, m, 1, |x, o| {
            #[cfg(target_arch = "x86_64")]
            if fma {
                // SAFETY: has_fma() checked the CPU features.
                return unsafe { logsumexp_rows_fma(x, o, m) };
            }
            let _ = fma;
            logsumexp_rows(x, o, m)
        });
    }
    Data::contiguous(buf, &out_shape)
}
