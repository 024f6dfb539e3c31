//! Scans (cumulative sum, product, max, min, logaddexp) along one axis,
//! with MLX's CPU arithmetic: each step is one operation in the output
//! dtype (integers wrap, half types round after every step), a running
//! max/min that meets a NaN gives NaN for f32/f64 but **0** for
//! float16/bfloat16 (MLX asks `numeric_limits` of its half types for a
//! quiet NaN and gets a zero), and logaddexp uses MLX's fast `exp`.

use super::num::{bf16_to_f32, Num};
use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::buffer::Buffer;
use crate::{Complex64, Element};
use half::{bf16, f16};
use rayon::prelude::*;

/// A half-precision arithmetic result as MLX stores it: MLX's float16
/// conversion writes every NaN as `sign | 0x7D00`, its bfloat16 conversion
/// as `0x7FC0` (no sign). Other types pass through.
#[inline]
pub fn mlx_half_result<T: Element>(mut v: T) -> T {
    let any = &mut v as &mut dyn std::any::Any;
    if let Some(h) = any.downcast_mut::<f16>() {
        if h.is_nan() {
            *h = f16::from_bits((h.to_bits() & 0x8000) | 0x7D00);
        }
    } else if let Some(h) = any.downcast_mut::<bf16>() {
        if h.is_nan() {
            *h = bf16::from_bits(0x7FC0);
        }
    }
    v
}

/// Running max/min with MLX's NaN rule and the identity an exclusive scan starts from.
pub trait ScanElem: Num {
    /// Running maximum: `op(acc, x)`.
    fn max_op(acc: Self, x: Self) -> Self;
    /// Running minimum.
    fn min_op(acc: Self, x: Self) -> Self;
    /// First element of an exclusive cummax.
    fn max_init() -> Self;
    /// First element of an exclusive cummin.
    fn min_init() -> Self;
}

macro_rules! int_scan {
    ($($t:ty),*) => {$(
        impl ScanElem for $t {
            fn max_op(acc: Self, x: Self) -> Self { if x < acc { acc } else { x } }
            fn min_op(acc: Self, x: Self) -> Self { if x < acc { x } else { acc } }
            fn max_init() -> Self { <$t>::MIN }
            fn min_init() -> Self { <$t>::MAX }
        }
    )*};
}
int_scan!(u8, u16, u32, u64, i8, i16, i32, i64);

impl ScanElem for bool {
    fn max_op(acc: Self, x: Self) -> Self {
        acc | x
    }
    fn min_op(acc: Self, x: Self) -> Self {
        acc & x
    }
    fn max_init() -> Self {
        false
    }
    fn min_init() -> Self {
        true
    }
}

macro_rules! float_scan {
    ($($t:ty => $nan:expr, $inf:expr);*) => {$(
        impl ScanElem for $t {
            fn max_op(acc: Self, x: Self) -> Self {
                if acc.is_nan() || x.is_nan() { $nan } else if x < acc { acc } else { x }
            }
            fn min_op(acc: Self, x: Self) -> Self {
                if acc.is_nan() || x.is_nan() { $nan } else if x < acc { x } else { acc }
            }
            fn max_init() -> Self { -$inf }
            fn min_init() -> Self { $inf }
        }
    )*};
}
float_scan!(
    f32 => f32::NAN, f32::INFINITY;
    f64 => f64::NAN, f64::INFINITY;
    f16 => f16::ZERO, f16::INFINITY;
    bf16 => bf16::ZERO, bf16::INFINITY
);

impl ScanElem for Complex64 {
    fn max_op(acc: Self, x: Self) -> Self {
        if x.lt(acc) {
            acc
        } else {
            x
        }
    }
    fn min_op(acc: Self, x: Self) -> Self {
        if x.lt(acc) {
            x
        } else {
            acc
        }
    }
    fn max_init() -> Self {
        Complex64::new(f32::NEG_INFINITY, f32::NEG_INFINITY)
    }
    fn min_init() -> Self {
        Complex64::new(f32::INFINITY, f32::INFINITY)
    }
}

/// MLX's CPU `exp` for float32 (Cephes-style 2^x polynomial with fma,
/// clamped to 0 below -88 and to infinity above 88).
#[allow(clippy::approx_constant, clippy::excessive_precision)] // MLX's literals, as written
pub fn mlx_exp(x0: f32) -> f32 {
    let x = x0 * 1.442695_f32;
    let ipart = (x + 0.5).floor();
    let f = x - ipart;
    let mut p = 1.535336188319500e-4_f32;
    for c in [
        1.339887440266574e-3_f32,
        9.618437357674640e-3,
        5.550332471162809e-2,
        2.402264791363012e-1,
        6.931472028550421e-1,
        1.0,
    ] {
        p = p.mul_add(f, c);
    }
    let r = if x0.is_nan() {
        x0
    } else {
        super::simd::pow2i(ipart) * p
    };
    if x0 > 88.0 {
        f32::INFINITY
    } else if x0 < -88.0 {
        0.0
    } else {
        r
    }
}

/// `log(exp(acc) + exp(x))` as MLX's CPU computes it.
pub trait LogAddExpElem: Element {
    /// One step of the scan.
    fn log_add_exp(acc: Self, x: Self) -> Self;
    /// First element of an exclusive scan (-inf; complex: -inf + 0i).
    fn init() -> Self;
}

macro_rules! lae_real {
    ($($t:ty => $to:expr, $from:expr, $log1p:expr);*) => {$(
        impl LogAddExpElem for $t {
            fn log_add_exp(a: Self, b: Self) -> Self {
                let (mx, mn) = if a.is_nan() { (a, a) } else { (if a > b { a } else { b }, if a < b { a } else { b }) };
                if mn == <$t>::NEG_INFINITY || mx == <$t>::INFINITY {
                    return mx;
                }
                let e: $t = mlx_half_result($from(mlx_exp($to(mlx_half_result(mn - mx))) as f64));
                let l: $t = mlx_half_result($log1p(e));
                mlx_half_result(mx + l)
            }
            fn init() -> Self { <$t>::NEG_INFINITY }
        }
    )*};
}
lae_real!(
    f32 => |v: f32| v, |v: f64| v as f32, |e: f32| e.ln_1p();
    f64 => |v: f64| v as f32, |v: f64| v, |e: f64| e.ln_1p();
    f16 => |v: f16| v.to_f32(), f16::from_f64, |e: f16| f16::from_f32(e.to_f32().ln_1p());
    bf16 => bf16_to_f32, bf16::from_f64, |e: bf16| bf16::from_f32(bf16_to_f32(e).ln_1p())
);

impl LogAddExpElem for Complex64 {
    fn init() -> Self {
        Complex64::new(f32::NEG_INFINITY, 0.0)
    }
    fn log_add_exp(a: Self, b: Self) -> Self {
        let (mx, mn) = if a.re.is_nan() {
            (a, a)
        } else {
            (if b.lt(a) { a } else { b }, if a.lt(b) { a } else { b })
        };
        let inf = |v: f32| Complex64::new(v, 0.0);
        if mn == inf(f32::NEG_INFINITY) || mx == inf(f32::INFINITY) {
            return mx;
        }
        let e = (mn - mx).exp();
        // MLX's complex log1p.
        let (x, y) = (e.re, e.im);
        let theta = y.atan2(x + 1.0);
        let l = if e.norm() < 0.5 {
            let r = x * (2.0 + x) + y * y;
            if r == 0.0 {
                Complex64::new(x, theta)
            } else {
                Complex64::new(0.5 * r.ln_1p(), theta)
            }
        } else {
            Complex64::new((x + 1.0).hypot(y).ln(), theta)
        };
        mx + l
    }
}

/// Where the scan goes and what it starts from.
#[derive(Clone, Copy, Debug)]
pub struct ScanSpec {
    /// Axis the scan runs along.
    pub axis: usize,
    /// Run from the end of the axis to its start.
    pub reverse: bool,
    /// Whether output k includes input k (else it stops at k - 1).
    pub inclusive: bool,
}

/// The scan of the row-major elements `x` (shaped `shape`) with `op(acc, x)`;
/// exclusive scans start from `init`.
pub fn scan<U: Element>(
    x: &[U],
    shape: &[i32],
    s: ScanSpec,
    init: U,
    op: impl Fn(U, U) -> U + Sync,
) -> Data {
    let n = shape[s.axis] as usize;
    let inner: usize = shape[s.axis + 1..].iter().map(|&d| d as usize).product();
    let block = n * inner;
    let mut out = vec![U::default(); x.len()];
    let run = |(xb, ob): (&[U], &mut [U])| {
        let row = |k: usize| k * inner..(k + 1) * inner;
        let (first, steps): (usize, Vec<(usize, usize)>) = if s.reverse {
            (n - 1, (0..n - 1).rev().map(|k| (k, k + 1)).collect())
        } else {
            (0, (1..n).map(|k| (k, k - 1)).collect())
        };
        if s.inclusive {
            ob[row(first)].copy_from_slice(&xb[row(first)]);
        } else {
            ob[row(first)].fill(init);
        }
        for (k, prev) in steps {
            // Inclusive: out[k] = op(out[prev], x[k]); exclusive: op(out[prev], x[prev]).
            let src = if s.inclusive { k } else { prev };
            for i in 0..inner {
                ob[k * inner + i] = op(ob[prev * inner + i], xb[src * inner + i]);
            }
        }
    };
    if block > 0 {
        if x.len() >= PAR_THRESHOLD {
            x.par_chunks(block)
                .zip(out.par_chunks_mut(block))
                .for_each(run);
        } else {
            x.chunks(block).zip(out.chunks_mut(block)).for_each(run);
        }
    }
    Data::contiguous(Buffer::from_slice(&out), shape)
}
