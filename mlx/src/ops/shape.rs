//! Shape and layout ops.

use crate::primitives::shape;
use crate::{Array, Result};

/// `a` broadcast to `shape` (numpy rules).
pub fn broadcast_to(a: &Array, shape: &[i32]) -> Result<Array> {
    Array::from_primitive(
        shape::Broadcast {
            shape: shape.to_vec(),
        },
        vec![a.clone()],
    )
}

/// `a` with a new shape of the same size; one dimension may be `-1`.
pub fn reshape(a: &Array, shape: &[i32]) -> Result<Array> {
    Array::from_primitive(
        shape::Reshape {
            shape: shape.to_vec(),
        },
        vec![a.clone()],
    )
}

/// Permutes the axes of `a`; an empty `axes` reverses them (as MLX's default).
pub fn transpose(a: &Array, axes: &[i32]) -> Result<Array> {
    let axes = if axes.is_empty() {
        (0..a.ndim() as i32).rev().collect()
    } else {
        axes.to_vec()
    };
    Array::from_primitive(shape::Transpose { axes }, vec![a.clone()])
}

/// Removes the size-1 axes listed (all size-1 axes when `axes` is empty).
pub fn squeeze(a: &Array, axes: &[i32]) -> Result<Array> {
    let axes: Vec<i32> = if axes.is_empty() {
        (0..a.ndim() as i32)
            .filter(|&i| a.shape()[i as usize] == 1)
            .collect()
    } else {
        axes.to_vec()
    };
    Array::from_primitive(shape::Squeeze { axes }, vec![a.clone()])
}

/// Inserts size-1 axes at the listed positions of the result.
pub fn expand_dims(a: &Array, axes: &[i32]) -> Result<Array> {
    Array::from_primitive(
        shape::ExpandDims {
            axes: axes.to_vec(),
        },
        vec![a.clone()],
    )
}
