//! [`Hadamard`]: the Walsh–Hadamard transform of the last axis.

use super::expect_inputs;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::primitive::Spec;
use crate::{Array, Buffer, Data, Dtype, Element, Error, Primitive, Result};
use half::{bf16, f16};

/// Walsh–Hadamard transform of the last axis, multiplied by `scale`
/// (MLX's default is 1/√n, which makes it orthonormal).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Hadamard {
    /// Factor applied after the last butterfly stage.
    #[state]
    pub scale: f32,
}

/// Splits `n` as 2^k · m; MLX also knows m ∈ {12, 20, 28}.
fn hadamard_factor(n: i32) -> (i32, i32) {
    let mut p = 1;
    while n % (p * 2) == 0 {
        p *= 2;
    }
    (p, n / p)
}

/// In-place transform of every row of `len` elements. Each butterfly
/// stage computes in f32 (f64 for f64) and stores in `T`, and the last
/// stage stores `(x ± y)` then multiplies the stored value by `scale`, as
/// MLX's CPU kernel does, so half types round the same way.
fn transform<T: Element>(data: &mut [T], len: usize, scale: f32, wide: bool) {
    let to = T::to_f64;
    let from = T::from_f64;
    // f32 arithmetic for every dtype but f64.
    let add = |x: f64, y: f64| {
        if wide {
            x + y
        } else {
            (x as f32 + y as f32) as f64
        }
    };
    let sub = |x: f64, y: f64| {
        if wide {
            x - y
        } else {
            (x as f32 - y as f32) as f64
        }
    };
    let mul = |x: f64| {
        if wide {
            x * scale as f64
        } else {
            (x as f32 * scale) as f64
        }
    };
    for row in data.chunks_mut(len) {
        let mut h = 1;
        while h < len {
            let last = h * 2 == len;
            for start in (0..len).step_by(2 * h) {
                for j in start..start + h {
                    let (x, y) = (to(row[j]), to(row[j + h]));
                    let (mut s, mut d) = (from(add(x, y)), from(sub(x, y)));
                    if last {
                        s = from(mul(to(s)));
                        d = from(mul(to(d)));
                    }
                    row[j] = s;
                    row[j + h] = d;
                }
            }
            h *= 2;
        }
    }
}

impl Primitive for Hadamard {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Hadamard", inputs, 1)?;
        let a = &inputs[0];
        if !a.dtype.is_float() {
            return Err(Error::invalid(
                "Hadamard",
                format!("expected a floating point input, found {}", a.dtype),
            ));
        }
        let n = a.shape.last().copied().unwrap_or(1);
        let (_, m) = hadamard_factor(n.max(1));
        if n < 1 || m != 1 {
            return Err(Error::invalid(
                "Hadamard",
                format!(
                    "the last axis must have a power-of-two size (MLX's extra factors \
                     12, 20 and 28 are not supported here), found shape {:?}",
                    a.shape
                ),
            ));
        }
        Ok(vec![a.clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let len = a.shape().last().copied().unwrap_or(1) as usize;
        let d = a.data()?;
        let scale = self.scale;
        let buf = match a.dtype() {
            Dtype::Float16 => run::<f16>(&d, a.shape(), len, scale, false),
            Dtype::Bfloat16 => run::<bf16>(&d, a.shape(), len, scale, false),
            Dtype::Float64 => run::<f64>(&d, a.shape(), len, scale, true),
            _ => run::<f32>(&d, a.shape(), len, scale, false),
        };
        Ok(vec![Data::contiguous(buf, &out[0].shape)])
    }
}

/// The transform of a whole array as a new row-major buffer.
fn run<T: Element>(d: &Data, shape: &[i32], len: usize, scale: f32, wide: bool) -> Buffer {
    let mut v = to_contiguous_vec::<T>(d, shape);
    if len > 0 {
        transform(&mut v, len, scale, wide);
    }
    Buffer::from_slice(&v)
}
