//! A crate outside `mlx` that adds its own primitive, to show (and test) that
//! `#[derive(Primitive)]` needs nothing but `mlx` as a dependency.
//!
//! [`SoftShrink`] is the soft-thresholding operator
//! `y = x - λ` if `x > λ`, `y = x + λ` if `x < -λ`, else `0`,
//! used by sparse coding and wavelet denoising. [`soft_shrink`] builds the
//! node; the graph evaluates it with the kernel here, and because the derive
//! registered it, an exported graph containing it can be imported again.
//!
//! ```
//! use mlx::Array;
//! let x = Array::from_slice(&[-2.0f32, -0.25, 0.0, 0.5, 3.0], &[5]).unwrap();
//! let y = user_primitive::soft_shrink(&x, 0.5).unwrap();
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1.5, 0.0, 0.0, 0.0, 2.5]);
//! ```

use mlx::backend::cpu::elementwise::unary;
use mlx::{Array, Data, Dtype, Element, Error, Primitive, Result, Spec};

/// Soft thresholding by `lambda` (λ ≥ 0), element-wise on a float array.
///
/// The one `#[state]` field is written into exported files and read back on
/// import; the registry name is `SoftShrink`.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
pub struct SoftShrink {
    /// The threshold λ: inputs in `[-λ, λ]` become zero.
    #[state]
    pub lambda: f32,
}

impl SoftShrink {
    /// The checks shared by the op and the shape rule (a file may hold any λ).
    fn check(&self, dtype: Dtype) -> Result<()> {
        if self.lambda.is_nan() || self.lambda < 0.0 {
            return Err(Error::invalid(
                "soft_shrink",
                format!(
                    "lambda must be a non-negative number, found {}",
                    self.lambda
                ),
            ));
        }
        if !matches!(
            dtype,
            Dtype::Float16 | Dtype::Bfloat16 | Dtype::Float32 | Dtype::Float64
        ) {
            return Err(Error::invalid(
                "soft_shrink",
                format!(
                    "expected a floating-point array (float16, bfloat16, float32 or float64), found {dtype}"
                ),
            ));
        }
        Ok(())
    }
}

impl Primitive for SoftShrink {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let [x] = inputs else {
            return Err(Error::invalid(
                "SoftShrink",
                format!("expected 1 input, found {}", inputs.len()),
            ));
        };
        self.check(x.dtype)?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, inputs: &[Array], outputs: &[Spec]) -> Result<Vec<Data>> {
        let (x, out) = (&inputs[0], &outputs[0]);
        let data = match x.dtype() {
            Dtype::Float64 => kernel_f64(x, out, f64::from(self.lambda))?,
            Dtype::Float32 => kernel_via_f32::<f32>(x, out, self.lambda)?,
            Dtype::Float16 => kernel_via_f32::<mlx::half::f16>(x, out, self.lambda)?,
            Dtype::Bfloat16 => kernel_via_f32::<mlx::half::bf16>(x, out, self.lambda)?,
            other => {
                return Err(Error::Unsupported {
                    primitive: "SoftShrink".into(),
                    msg: format!("no kernel for {other}"),
                })
            }
        };
        Ok(vec![data])
    }
}

/// The scalar rule; NaN stays NaN (both comparisons are false).
fn shrink_f32(x: f32, lambda: f32) -> f32 {
    if x > lambda {
        x - lambda
    } else if x < -lambda {
        x + lambda
    } else if x.is_nan() {
        x
    } else {
        0.0
    }
}

fn shrink_f64(x: f64, lambda: f64) -> f64 {
    if x > lambda {
        x - lambda
    } else if x < -lambda {
        x + lambda
    } else if x.is_nan() {
        x
    } else {
        0.0
    }
}

/// float32, and the half types computed in float32 and rounded once, as MLX
/// does. `to_f64`/`from_f64` are exact for these widths, so going through
/// `f64` to reach `f32` changes nothing.
fn kernel_via_f32<T: Element>(x: &Array, out: &Spec, lambda: f32) -> Result<Data> {
    unary::<T, T>(x, out, move |v: T| {
        T::from_f64(f64::from(shrink_f32(v.to_f64() as f32, lambda)))
    })
}

fn kernel_f64(x: &Array, out: &Spec, lambda: f64) -> Result<Data> {
    unary::<f64, f64>(x, out, move |v| shrink_f64(v, lambda))
}

/// `x - λ` above `λ`, `x + λ` below `-λ`, zero in between; the output has
/// `x`'s shape and dtype. `x` must be a float array and `lambda ≥ 0`.
pub fn soft_shrink(x: &Array, lambda: f32) -> Result<Array> {
    let p = SoftShrink { lambda };
    p.check(x.dtype())?;
    Array::from_primitive(p, vec![x.clone()])
}
