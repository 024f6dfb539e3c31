//! A crate outside `mlx` that adds its own primitive, to show (and test) that
//! `#[derive(Primitive)]` needs nothing but `mlx` as a dependency.
//!
//! [`SoftShrink`] is the soft-thresholding operator
//! `y = x - λ` if `x > λ`, `y = x + μ` if `x < -μ`, else `0`
//! (`μ = λ` unless a separate lower threshold is given),
//! used by sparse coding and wavelet denoising. [`soft_shrink`] builds the
//! node; the graph evaluates it with the kernel here, and because the derive
//! registered it, an exported graph containing it can be imported again.
//!
//! The `lower` field came after the first release: it is
//! `#[state(default)]`, so files written before it existed still load
//! (`tests/export/versioning.rs` keeps one).
//!
//! ```
//! use mlx::Array;
//! let x = Array::from_slice(&[-2.0f32, -0.25, 0.0, 0.5, 3.0], &[5]).unwrap();
//! let y = user_primitive::soft_shrink(&x, 0.5).unwrap();
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1.5, 0.0, 0.0, 0.0, 2.5]);
//! ```

use mlx::backend::cpu::elementwise::unary;
use mlx::{Array, Data, Dtype, Element, Error, Primitive, Result, Spec};
use std::ops::{Add, Neg, Sub};

/// Soft thresholding by `lambda` (λ ≥ 0) above and `lower` (μ ≥ 0, default
/// λ) below, element-wise on a float array.
///
/// The `#[state]` fields are written into exported files and read back on
/// import; the registry name is `SoftShrink`.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
pub struct SoftShrink {
    /// The upper threshold λ: inputs in `[-μ, λ]` become zero.
    #[state]
    pub lambda: f32,
    /// The lower threshold μ; `None` means λ. Added after files were
    /// written without it, hence `default`.
    #[state(default)]
    pub lower: Option<f32>,
}

impl SoftShrink {
    /// The lower threshold μ.
    fn mu(&self) -> f32 {
        self.lower.unwrap_or(self.lambda)
    }

    /// The checks shared by the op and the shape rule (a file may hold any λ).
    fn check(&self, dtype: Dtype) -> Result<()> {
        for (name, v) in [("lambda", self.lambda), ("lower", self.mu())] {
            if v.is_nan() || v < 0.0 {
                return Err(Error::invalid(
                    "soft_shrink",
                    format!("{name} must be a non-negative number, found {v}"),
                ));
            }
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
            Dtype::Float64 => kernel_f64(x, out, self.lambda.into(), self.mu().into())?,
            Dtype::Float32 => kernel_via_f32::<f32>(x, out, self.lambda, self.mu())?,
            Dtype::Float16 => kernel_via_f32::<mlx::half::f16>(x, out, self.lambda, self.mu())?,
            Dtype::Bfloat16 => kernel_via_f32::<mlx::half::bf16>(x, out, self.lambda, self.mu())?,
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

/// The scalar rule for f32 and f64; NaN (unordered even with itself)
/// stays NaN.
fn shrink<F>(x: F, lambda: F, mu: F) -> F
where
    F: Copy + Default + PartialOrd + Add<Output = F> + Sub<Output = F> + Neg<Output = F>,
{
    if x > lambda {
        x - lambda
    } else if x < -mu {
        x + mu
    } else if x.partial_cmp(&x).is_none() {
        x
    } else {
        F::default()
    }
}

/// float32, and the half types computed in float32 and rounded once, as MLX
/// does. `to_f64`/`from_f64` are exact for these widths, so going through
/// `f64` to reach `f32` changes nothing.
fn kernel_via_f32<T: Element>(x: &Array, out: &Spec, lambda: f32, mu: f32) -> Result<Data> {
    unary::<T, T>(x, out, move |v: T| {
        T::from_f64(f64::from(shrink(v.to_f64() as f32, lambda, mu)))
    })
}

fn kernel_f64(x: &Array, out: &Spec, lambda: f64, mu: f64) -> Result<Data> {
    unary::<f64, f64>(x, out, move |v| shrink(v, lambda, mu))
}

/// `x - λ` above `λ`, `x + λ` below `-λ`, zero in between; the output has
/// `x`'s shape and dtype. `x` must be a float array and `lambda ≥ 0`.
pub fn soft_shrink(x: &Array, lambda: f32) -> Result<Array> {
    shrink_node(
        x,
        SoftShrink {
            lambda,
            lower: None,
        },
    )
}

/// `x - λ` above `λ`, `x + μ` below `-μ` (`μ = lower`), zero in between.
pub fn soft_shrink_asymmetric(x: &Array, lambda: f32, lower: f32) -> Result<Array> {
    shrink_node(
        x,
        SoftShrink {
            lambda,
            lower: Some(lower),
        },
    )
}

fn shrink_node(x: &Array, p: SoftShrink) -> Result<Array> {
    p.check(x.dtype())?;
    Array::from_primitive(p, vec![x.clone()])
}
