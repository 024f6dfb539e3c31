//! User-facing operations with MLX's names (snake_case) and argument order.
//! Each builds graph nodes and returns [`Result`]; nothing is computed until
//! evaluation. Errors name the op, the shapes and what was expected.

pub mod fft;
pub mod linalg;
pub mod random;

mod arithmetic;
mod conv;
mod creation;
mod fast_options;
mod indexing;
mod math;
mod matmul;
mod methods;
mod options;
mod overloads;
mod quantized;
mod reduce;
mod shape;
mod sort_scan;
mod special;

pub use arithmetic::*;
pub use conv::*;
pub use creation::*;
pub use fast_options::*;
pub use indexing::*;
pub use math::*;
pub use matmul::*;
pub use options::*;
pub use quantized::*;
pub use reduce::*;
pub use shape::*;
pub use sort_scan::*;
pub use special::*;

pub(crate) use crate::shape::{broadcast_shapes, normalize_axes, normalize_axis};
use crate::{Array, Dtype, Result};

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
    if crate::transforms::trace::is_shapeless_tracing() {
        // Shape-relative form: broadcast each against the other (MLX's dynamic mode).
        let a2 = broadcast_against(&a, &b, &shape)?;
        let b2 = broadcast_against(&b, &a, &shape)?;
        return Ok((a2, b2));
    }
    Ok((broadcast_as(&a, &shape)?, broadcast_as(&b, &shape)?))
}

/// A 0-d constant for a Rust scalar used with `a`: it takes `a`'s dtype when
/// that can hold it (a float scalar with an integer array gives float32).
pub(crate) fn scalar_like(a: &Array, v: f64) -> Array {
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
