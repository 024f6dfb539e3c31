//! Activation functions, built from the same operations in the same order
//! as MLX's `mlx.nn` versions (so rounding agrees).

use crate::ops::{add, divide, erf, maximum, multiply, power, scalar_like, sigmoid, tanh};
use crate::{Array, Result};

/// `max(x, 0)`.
pub fn relu(x: &Array) -> Result<Array> {
    maximum(x, &scalar_like(x, 0.0))
}

/// The exact GELU, `x · (1 + erf(x / √2)) / 2`.
pub fn gelu(x: &Array) -> Result<Array> {
    let e = erf(&divide(x, &scalar_like(x, std::f64::consts::SQRT_2))?)?;
    let y = multiply(x, &add(&scalar_like(&e, 1.0), &e)?)?;
    divide(&y, &scalar_like(&y, 2.0))
}

/// The tanh approximation of GELU (MLX's `gelu_approx`):
/// `0.5·x · (1 + tanh(√(2/π) · (x + 0.044715·x³)))`.
pub fn gelu_approx(x: &Array) -> Result<Array> {
    let half_x = multiply(&scalar_like(x, 0.5), x)?;
    let cube = power(x, &scalar_like(x, 3.0))?;
    let inner = add(x, &multiply(&scalar_like(&cube, 0.044715), &cube)?)?;
    let k = (2.0 / std::f64::consts::PI).sqrt();
    let t = tanh(&multiply(&scalar_like(&inner, k), &inner)?)?;
    multiply(&half_x, &add(&scalar_like(&t, 1.0), &t)?)
}

/// The sigmoid linear unit (swish), `x · sigmoid(x)`.
pub fn silu(x: &Array) -> Result<Array> {
    multiply(x, &sigmoid(x)?)
}
