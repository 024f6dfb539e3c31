//! User-facing operations with MLX's names (snake_case) and argument order.
//! Each builds graph nodes and returns [`Result`]; nothing is computed until
//! evaluation. Errors name the op, the shapes and what was expected.

mod arithmetic;
mod conv;
mod creation;
pub mod fast;
mod indexing;
mod linalg;
mod math;
mod overloads;
mod quantized;
mod reduce;
mod shape;
mod sort_scan;
mod special;

pub use arithmetic::*;
pub use conv::*;
pub use creation::*;
pub use indexing::*;
pub use linalg::*;
pub use math::*;
pub use quantized::*;
pub use reduce::*;
pub use shape::*;
pub use sort_scan::*;
pub use special::*;

use crate::{Array, Dtype, Error, Result};

/// `axis` (negative counts from the end) as an index into `ndim` dimensions.
pub fn normalize_axis(op: &str, axis: i32, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let a = axis as i64;
    if a < -n || a >= n {
        return Err(Error::invalid(
            op,
            format!("axis {axis} is out of bounds for an array with {ndim} dimensions"),
        ));
    }
    Ok(if a < 0 { (a + n) as usize } else { a as usize })
}

/// Normalised, checked axes; duplicates are an error.
pub fn normalize_axes(op: &str, axes: &[i32], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let ax = normalize_axis(op, a, ndim)?;
        if out.contains(&ax) {
            return Err(Error::invalid(
                op,
                format!("duplicate axis {a} in {axes:?}"),
            ));
        }
        out.push(ax);
    }
    Ok(out)
}

/// The broadcast of two shapes (numpy rules), or an error naming both.
pub fn broadcast_shapes(op: &str, a: &[i32], b: &[i32]) -> Result<Vec<i32>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::invalid(
                op,
                format!("shapes {a:?} and {b:?} cannot be broadcast together"),
            ));
        };
    }
    Ok(out)
}

/// `a` cast to `dtype` (no node when it already has it).
pub(crate) fn cast_to(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() == dtype {
        Ok(a.clone())
    } else {
        astype(a, dtype)
    }
}

/// `a` broadcast to `shape` (no node when it already has it).
pub(crate) fn broadcast_as(a: &Array, shape: &[i32]) -> Result<Array> {
    if a.shape() == shape {
        Ok(a.clone())
    } else {
        broadcast_to(a, shape)
    }
}

/// `a` broadcast to the shape it has with `donor`, recorded as a Broadcast
/// whose extra input gives the shape, so a shapeless replay recomputes it.
pub(crate) fn broadcast_against(a: &Array, donor: &Array, shape: &[i32]) -> Result<Array> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    let p = crate::primitives::shape::Broadcast {
        shape: shape.to_vec(),
    };
    Array::from_primitive(p, vec![a.clone(), donor.clone()])
}

/// Casts both to their promoted dtype and broadcasts both to a common shape,
/// with explicit AsType and Broadcast nodes, as MLX's graphs have them.
pub(crate) fn promote_and_broadcast(op: &str, a: &Array, b: &Array) -> Result<(Array, Array)> {
    let dtype = crate::promote_types(a.dtype(), b.dtype());
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let (a, b) = (cast_to(a, dtype)?, cast_to(b, dtype)?);
    if crate::trace_flag::is_shapeless_tracing() {
        // Shape-relative form: broadcast each against the other (MLX's dynamic mode).
        let a2 = broadcast_against(&a, &b, &shape)?;
        let b2 = broadcast_against(&b, &a, &shape)?;
        return Ok((a2, b2));
    }
    Ok((broadcast_as(&a, &shape)?, broadcast_as(&b, &shape)?))
}

/// A 0-d constant for a Rust scalar used with `a`: it takes `a`'s dtype when
/// that can hold it (a float scalar with an integer array gives float32).
pub fn scalar_like(a: &Array, v: f64) -> Array {
    let dtype = if a.dtype().is_inexact() {
        a.dtype()
    } else if v.fract() != 0.0 || !v.is_finite() {
        Dtype::Float32
    } else if a.dtype() == Dtype::Bool {
        Dtype::Int32
    } else {
        a.dtype()
    };
    Array::scalar_of(v, dtype)
}
