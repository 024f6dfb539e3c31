//! [`Linear`]: an affine layer `y = x Wᵀ + b`.

use super::Module;
use crate::ops::{addmm, matmul, transpose};
use crate::{random, Array, Dtype, Error, Result};

/// `y = x Wᵀ + b` with `W` of shape (output_dims, input_dims) and `b` of
/// shape (output_dims,), as MLX's `nn.Linear`.
#[derive(Clone, Debug)]
pub struct Linear {
    /// (output_dims, input_dims).
    pub weight: Array,
    /// (output_dims,), absent for a layer without bias.
    pub bias: Option<Array>,
}

/// `uniform(-scale, scale)` float32 samples of `shape` from the global key.
pub(crate) fn uniform_init(op: &str, scale: f64, shape: &[i32]) -> Result<Array> {
    if shape.iter().any(|&d| d <= 0) {
        return Err(Error::invalid(
            op,
            format!("dimensions must be positive, found {shape:?}"),
        ));
    }
    let low = Array::scalar(-scale as f32);
    let high = Array::scalar(scale as f32);
    random::uniform(&low, &high, shape, Dtype::Float32, None)
}

impl Linear {
    /// A layer with MLX's initialisation: weight then bias drawn from
    /// `U(-k, k)`, `k = 1/√input_dims`, with the global random key (seed it
    /// with [`random::seed`] for reproducible weights).
    pub fn new(input_dims: i32, output_dims: i32, bias: bool) -> Result<Linear> {
        let scale = (1.0 / input_dims as f64).sqrt();
        let weight = uniform_init("Linear", scale, &[output_dims, input_dims])?;
        let bias = if bias {
            Some(uniform_init("Linear", scale, &[output_dims])?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }
}

impl Module for Linear {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        f("weight", &self.weight);
        if let Some(b) = &self.bias {
            f("bias", b);
        }
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        f("weight", &mut self.weight);
        if let Some(b) = &mut self.bias {
            f("bias", b);
        }
    }

    /// `addmm(b, x, Wᵀ)`, or `x @ Wᵀ` without bias (MLX's graph).
    fn forward(&self, x: &Array) -> Result<Array> {
        let wt = transpose(&self.weight, &[])?;
        match &self.bias {
            Some(b) => addmm(b, x, &wt, 1.0, 1.0),
            None => matmul(x, &wt),
        }
    }
}
