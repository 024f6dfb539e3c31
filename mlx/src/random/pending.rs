//! TEMPORARY fallbacks for ops that other branches are adding
//! (`floor`, `less`, `log`, `negative`, `erf`, `erfinv`, `argmax` and the
//! row split of a key pair). They compute MLX's exact CPU values, but as one
//! private primitive, `RandomFallback`, so exported graphs do not yet show
//! MLX's primitive names (Floor, Less, Log, Negative, Erf, ErfInv,
//! ArgReduce+Squeeze, Split+Reshape).
//!
//! To retire: delete this file, drop `mod pending;` in `random/mod.rs` and
//! import the same names from `crate::ops` there (the signatures match).

// The constants are written as MLX writes them; they round to the same f32.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::buffer::Buffer;
use crate::primitive::Spec;
use crate::primitives::expect_inputs;
use crate::{dispatch_dtype, Array, Data, Dtype, Element, Error, Primitive, Result};

/// One of the pending element-wise ops, a last-axis argmax, or a row pick.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct RandomFallback {
    /// Which op (see the `OP_*` constants).
    #[state]
    pub op: i32,
    /// Axis for argmax, row for the key split.
    #[state]
    pub arg: i32,
}

const OP_FLOOR: i32 = 0;
const OP_LOG: i32 = 1;
const OP_NEGATIVE: i32 = 2;
const OP_ERF: i32 = 3;
const OP_ERFINV: i32 = 4;
const OP_LESS: i32 = 5;
const OP_ARGMAX: i32 = 6;
const OP_ROW: i32 = 7;

impl Primitive for RandomFallback {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let x = &inputs[0];
        Ok(vec![match self.op {
            OP_LESS => {
                expect_inputs("RandomFallback", inputs, 2)?;
                Spec::new(x.shape.clone(), Dtype::Bool)
            }
            OP_ARGMAX => {
                let mut s = x.shape.clone();
                s.remove(self.arg as usize);
                Spec::new(s, Dtype::Uint32)
            }
            OP_ROW => Spec::new(x.shape[1..].to_vec(), x.dtype),
            _ => x.clone(),
        }])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let x = &inputs[0];
        let d = x.data()?;
        let o = &out[0];
        let data = match self.op {
            OP_LESS => {
                let y = &inputs[1];
                dispatch_dtype!(x.dtype(), T => {
                    let a = to_contiguous_vec::<T>(&d, x.shape());
                    let b = to_contiguous_vec::<T>(&y.data()?, y.shape());
                    let v: Vec<bool> = a.iter().zip(&b).map(|(p, q)| p.to_f64() < q.to_f64()).collect();
                    Buffer::from_slice(&v)
                })
            }
            OP_ARGMAX => {
                let v: Vec<f64> = dispatch_dtype!(x.dtype(), T => to_contiguous_vec::<T>(&d, x.shape()).iter().map(|e| e.to_f64()).collect());
                let ax = self.arg as usize;
                let n = x.shape()[ax] as usize;
                let inner: usize = x.shape()[ax + 1..].iter().map(|&s| s as usize).product();
                let outer = if n == 0 {
                    0
                } else {
                    v.len() / (n * inner).max(1)
                };
                let mut res = Vec::with_capacity(outer * inner);
                for p in 0..outer {
                    for q in 0..inner {
                        let at = |i: usize| v[(p * n + i) * inner + q];
                        let (mut best, mut bi) = (at(0), 0u32);
                        for i in 1..n {
                            let e = at(i);
                            if e > best || (e.is_nan() && !best.is_nan()) {
                                best = e;
                                bi = i as u32;
                            }
                        }
                        res.push(bi);
                    }
                }
                Buffer::from_slice(&res)
            }
            OP_ROW => {
                let v = to_contiguous_vec::<u32>(&d, x.shape());
                let w = o.size();
                let r = self.arg as usize;
                Buffer::from_slice(&v[r * w..(r + 1) * w])
            }
            op => dispatch_dtype!(x.dtype(), T => {
                let v = to_contiguous_vec::<T>(&d, x.shape());
                let r: Vec<T> = v.iter().map(|&e| unary::<T>(op, e)).collect();
                Buffer::from_slice(&r)
            }),
        };
        Ok(vec![Data::contiguous(data, &o.shape)])
    }
}

/// A float op computed in f32 and rounded to `T` (MLX's CPU rule for half types).
fn unary<T: Element + Cast>(op: i32, e: T) -> T {
    if T::DTYPE == Dtype::Float64 {
        let x = e.to_f64();
        return T::from_f64(match op {
            OP_FLOOR => x.floor(),
            OP_LOG => x.ln(),
            OP_NEGATIVE => -x,
            OP_ERF => erf_f32(x as f32) as f64,
            _ => erfinv_f32(x as f32) as f64,
        });
    }
    let x: f32 = e.cast();
    let y = match op {
        OP_FLOOR => x.floor(),
        OP_LOG => x.ln(),
        OP_NEGATIVE => -x,
        OP_ERF => erf_f32(x),
        _ => erfinv_f32(x),
    };
    y.cast()
}

/// MLX's CPU exp: 2^(x·log2 e) from a Cephes polynomial and exponent bits.
fn mlx_exp(x0: f32) -> f32 {
    let x = x0 * 1.442695f32;
    let ipart = (x + 0.5).floor();
    let f = x - ipart;
    let mut p = 1.535336188319500e-4f32;
    for c in [
        1.339887440266574e-3f32,
        9.618437357674640e-3,
        5.550332471162809e-2,
        2.402264791363012e-1,
        6.931472028550421e-1,
        1.0,
    ] {
        p = p.mul_add(f, c);
    }
    let e = ((ipart as i32).wrapping_add(127)).wrapping_shl(23);
    let r = if x0.is_nan() {
        x0
    } else {
        f32::from_bits(e as u32) * p
    };
    if x0 > 88.0 {
        f32::INFINITY
    } else if x0 < -88.0 {
        0.0
    } else {
        r
    }
}

/// MLX's CPU erf (Abramowitz–Stegun 7.1.26 form with MLX's exp).
fn erf_f32(v: f32) -> f32 {
    let t = 1.0 / 0.3275911f32.mul_add(v.abs(), 1.0);
    let mut r = 1.061405429f32.mul_add(t, -1.453152027);
    r = r.mul_add(t, 1.421413741);
    r = r.mul_add(t, -0.284496736);
    r = r.mul_add(t, 0.254829592);
    let e = -mlx_exp(-v * v);
    let res = (e * t).mul_add(r, 1.0);
    if v > 0.0 {
        res
    } else {
        -res
    }
}

/// MLX's CPU erfinv (format notes §10): log of 1 − a² with libm's logf,
/// then one of two fma polynomials.
fn erfinv_f32(a: f32) -> f32 {
    let t = a.mul_add(0.0 - a, 1.0).ln();
    let coeffs: &[f32] = if t.abs() > 6.125 {
        &[
            3.03697567e-10,
            2.93243101e-8,
            1.22150334e-6,
            2.84108955e-5,
            3.93552968e-4,
            3.02698812e-3,
            4.83185798e-3,
            -2.64646143e-1,
            8.40016484e-1,
        ]
    } else {
        &[
            5.43877832e-9,
            1.43285448e-7,
            1.22774793e-6,
            1.12963626e-7,
            -5.61530760e-5,
            -1.47697632e-4,
            2.31468678e-3,
            1.15392581e-2,
            -2.32015476e-1,
            8.86226892e-1,
        ]
    };
    let mut p = coeffs[0];
    for &c in &coeffs[1..] {
        p = p.mul_add(t, c);
    }
    a * p
}

fn node(op: i32, arg: i32, inputs: Vec<Array>) -> Result<Array> {
    Array::from_primitive(RandomFallback { op, arg }, inputs)
}

/// Element-wise floor.
pub fn floor(a: &Array) -> Result<Array> {
    node(OP_FLOOR, 0, vec![a.clone()])
}
/// Natural logarithm.
pub fn log(a: &Array) -> Result<Array> {
    node(OP_LOG, 0, vec![a.clone()])
}
/// `-a`.
pub fn negative(a: &Array) -> Result<Array> {
    node(OP_NEGATIVE, 0, vec![a.clone()])
}
/// MLX's erf.
pub fn erf(a: &Array) -> Result<Array> {
    node(OP_ERF, 0, vec![a.clone()])
}
/// MLX's erfinv.
pub fn erfinv(a: &Array) -> Result<Array> {
    node(OP_ERFINV, 0, vec![a.clone()])
}
/// `a < b` with promotion and broadcasting.
pub fn less(a: &Array, b: &Array) -> Result<Array> {
    let (a, b) = crate::ops::promote_and_broadcast("less", a, b)?;
    node(OP_LESS, 0, vec![a, b])
}
/// Index of the first maximum along `axis` (keepdims = false).
pub fn argmax(a: &Array, axis: i32, keepdims: bool) -> Result<Array> {
    let ax = crate::ops::normalize_axis("argmax", axis, a.ndim())?;
    let out = node(OP_ARGMAX, ax as i32, vec![a.clone()])?;
    if keepdims {
        crate::ops::expand_dims(&out, &[ax as i32])
    } else {
        Ok(out)
    }
}
/// Row `i` of a 2-D array (the pair split of a key).
pub fn row(a: &Array, i: i32) -> Result<Array> {
    if a.ndim() != 2 || i < 0 || i >= a.shape()[0] {
        return Err(Error::invalid(
            "split",
            format!("no row {i} in shape {:?}", a.shape()),
        ));
    }
    node(OP_ROW, i, vec![a.clone()])
}
