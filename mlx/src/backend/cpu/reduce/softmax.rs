//! Fused kernels over the last axis: softmax (max, exp and sum, scale in one
//! pass per row) and logsumexp. Rows run in parallel above the threshold.

use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::backend::cpu::copy::make_contiguous;
use crate::buffer::Buffer;
use crate::Element;
use half::{bf16, f16};
use num_traits::{Float, One, Zero};
use rayon::prelude::*;

/// `exp` used by the fused kernels. Kept behind one function so MLX's exact
/// CPU `exp` (Cephes-style polynomial, `backend::cpu::math`) can replace the
/// libm call in one place.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    x.exp()
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
    #[inline(always)]
    fn fexp(self) -> f64 {
        self.exp()
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
    f16 => f32, true, f16::to_f32, f16::from_f32;
    bf16 => f32, true, bf16::to_f32, bf16::from_f32
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
#[inline]
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

/// Sum of `exp(x - max)` over a row; `store(i, e)` sees every term.
#[inline]
fn row_exp_sum<T: SoftmaxElem>(x: &[T], max: T::F, mut store: impl FnMut(usize, T::F)) -> T::F {
    let mut lanes = [T::F::zero(); 8];
    let n8 = x.len() / 8 * 8;
    for (c, chunk) in x[..n8].chunks_exact(8).enumerate() {
        for (l, (&v, acc)) in chunk.iter().zip(lanes.iter_mut()).enumerate() {
            let e = (v.to_f() - max).fexp();
            store(c * 8 + l, e);
            *acc = *acc + e;
        }
    }
    let mut s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (i, &v) in x.iter().enumerate().skip(n8) {
        let e = (v.to_f() - max).fexp();
        store(i, e);
        s = s + e;
    }
    s
}

/// Softmax of one row in the compute type, written to `o`. Half types
/// recompute the exponentials in the scaling pass rather than round them.
fn softmax_row<T: SoftmaxElem>(x: &[T], o: &mut [T]) {
    let max = row_max(x);
    if T::HALF {
        let norm = T::F::one() / row_exp_sum(x, max, |_, _| {});
        for (o, &v) in o.iter_mut().zip(x) {
            *o = T::from_f((v.to_f() - max).fexp() * norm);
        }
    } else {
        let s = row_exp_sum(x, max, |i, e| o[i] = T::from_f(e));
        let norm = T::F::one() / s;
        for o in o.iter_mut() {
            *o = T::from_f(o.to_f() * norm);
        }
    }
}

/// Softmax of one half-type row rounding every step to `T`, as MLX does
/// without `precise`.
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

/// Runs `f(row_in, row_out)` over rows of length `m`, in parallel when large.
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
            .for_each(|(o, x)| {
                for (o, x) in o.chunks_mut(per_out).zip(x.chunks(m)) {
                    f(x, o)
                }
            });
    } else {
        for (o, x) in out.chunks_mut(per_out).zip(x.chunks(m)) {
            f(x, o)
        }
    }
}

/// Softmax over the last axis of `data` (shaped `shape`); row-major result.
/// `precise` computes half types in f32 and rounds once.
pub fn softmax_last<T: SoftmaxElem>(data: &Data, shape: &[i32], precise: bool) -> Data {
    let d = make_contiguous::<T>(data, shape);
    let n: usize = shape.iter().map(|&s| s as usize).product();
    let m = shape.last().map_or(1, |&s| s as usize);
    let x = &d.buffer.as_slice::<T>()[d.offset..d.offset + n];
    let mut buf = Buffer::zeroed(n * std::mem::size_of::<T>());
    let out = buf.as_mut_slice::<T>().expect("heap buffer");
    if T::HALF && !precise {
        for_rows(x, out, m, m, softmax_row_rounded::<T>);
    } else {
        for_rows(x, out, m, m, softmax_row::<T>);
    }
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
    let mut buf = Buffer::zeroed(n_out * std::mem::size_of::<T>());
    let out = buf.as_mut_slice::<T>().expect("heap buffer");
    if m == 0 {
        out.fill(T::from_f(T::F::neg_infinity()));
    } else {
        for_rows(x, out, m, 1, |x, o| {
            let max = row_max(x);
            let s = row_exp_sum(x, max, |_, _| {});
            o[0] = T::from_f(if max.is_infinite() { max } else { s.ln() + max });
        });
    }
    Data::contiguous(buf, &out_shape)
}
