//! Array creation: zeros, ones, full, arange, eye, identity, zeros_like,
//! ones_like. Constant fills are MLX's graph: a 0-d constant, a `Broadcast`
//! to the shape, then a `Full` node that materialises it.

use super::reduce::nodes;
use super::{broadcast_as, cast_to};
use crate::primitives::creation::{arange_len, Arange, Full};
use crate::{Array, Dtype, Error, Result};

/// An array of `shape` filled with `value` (broadcast to `shape`), cast to
/// `dtype` when given.
pub fn full(shape: &[i32], value: &Array, dtype: Option<Dtype>) -> Result<Array> {
    if shape.iter().any(|&d| d < 0) {
        return Err(Error::invalid(
            "full",
            format!("negative dimensions are not allowed, found shape {shape:?}"),
        ));
    }
    let vals = broadcast_as(value, shape)?;
    let vals = cast_to(&vals, dtype.unwrap_or(value.dtype()))?;
    Array::from_primitive(Full {}, vec![vals])
}

/// An array of `shape` and `dtype` filled with zeros.
pub fn zeros(shape: &[i32], dtype: Dtype) -> Result<Array> {
    full(shape, &Array::scalar_of(0.0, dtype), None)
}

/// An array of `shape` and `dtype` filled with ones.
pub fn ones(shape: &[i32], dtype: Dtype) -> Result<Array> {
    full(shape, &Array::scalar_of(1.0, dtype), None)
}

/// Zeros with the shape and dtype of `a`.
pub fn zeros_like(a: &Array) -> Result<Array> {
    zeros(a.shape(), a.dtype())
}

/// Ones with the shape and dtype of `a`.
pub fn ones_like(a: &Array) -> Result<Array> {
    ones(a.shape(), a.dtype())
}

/// `start, start + step, ...` up to but excluding `stop`, in `dtype` (not
/// bool). Values are computed in `dtype` as MLX does: `T(start)` then
/// repeated additions of `T(start + step) - T(start)`.
pub fn arange(start: f64, stop: f64, step: f64, dtype: Dtype) -> Result<Array> {
    if dtype == Dtype::Bool {
        return Err(Error::invalid("arange", "bool is not supported for arange"));
    }
    // An infinite step in the right direction gives just `start`.
    if step.is_infinite()
        && !start.is_nan()
        && !stop.is_nan()
        && ((step > 0.0 && start < stop) || (step < 0.0 && start > stop))
    {
        return cast_to(&Array::from_slice(&[start], &[1])?, dtype);
    }
    arange_len(start, stop, step)?;
    Array::from_primitive(
        Arange {
            start,
            stop,
            step,
            dtype,
        },
        vec![],
    )
}

/// An `n x m` matrix (`m` defaults to `n`) with ones on diagonal `k` (0 the
/// main one, positive above it) and zeros elsewhere. Built as MLX builds
/// it: zeros, then a scatter of ones at two arange index vectors.
pub fn eye(n: i32, m: Option<i32>, k: i32, dtype: Dtype) -> Result<Array> {
    let m = m.unwrap_or(n);
    if n < 0 || m < 0 {
        return Err(Error::invalid(
            "eye",
            format!("n and m must be non-negative, found n = {n}, m = {m}"),
        ));
    }
    let result = zeros(&[n, m], dtype)?;
    if n == 0 || m == 0 || k >= m || -k >= n {
        return Ok(result);
    }
    let len = if k >= 0 { n.min(m - k) } else { (n + k).min(m) };
    let (r0, c0) = ((-k).max(0), k.max(0));
    let rows = arange(r0 as f64, (len + r0) as f64, 1.0, Dtype::Int32)?;
    let cols = arange(c0 as f64, (len + c0) as f64, 1.0, Dtype::Int32)?;
    let ones_ = ones(&[len, 1, 1], dtype)?;
    nodes::scatter(&result, &[rows, cols], &ones_, &[0, 1])
}

/// The `n x n` identity matrix.
pub fn identity(n: i32, dtype: Dtype) -> Result<Array> {
    eye(n, None, 0, dtype)
}
