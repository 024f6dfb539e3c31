//! Shape and layout ops with MLX's names and argument order. Like MLX,
//! an op that would not change anything returns its input (no node).
//!
//! - this file: reshape, flatten, unflatten, transpose, swapaxes, moveaxis,
//!   expand_dims, squeeze, atleast_1d/2d/3d;
//! - broadcast: broadcast_to, broadcast_arrays, broadcast_arrays_ignoring;
//! - slicing: slice, slice_axis, flip, slice_update (+ reductions),
//!   slice_dynamic, slice_update_dynamic;
//! - joins: concatenate, stack, split, split_at, pad, tile, repeat;
//! - misc: view, as_strided, copy, stop_gradient, depends, number_of_elements.

mod broadcast;
mod join;
mod misc;
mod slicing;

pub use broadcast::*;
pub use join::*;
pub use misc::*;
pub use slicing::*;

use crate::primitives::shape;
use crate::shape::{normalize_axes, normalize_axis};
use crate::{Array, Error, Result};

/// `a` with a new shape of the same size; one dimension may be `-1`.
pub fn reshape(a: &Array, shape: &[i32]) -> Result<Array> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    Array::from_primitive(
        shape::Reshape {
            shape: shape.to_vec(),
        },
        vec![a.clone()],
    )
}

/// Merges the axes `start_axis..=end_axis` (negative counts from the end;
/// out-of-range ends are clamped, as in MLX) into one. A 0-d array becomes 1-d.
pub fn flatten(a: &Array, start_axis: i32, end_axis: i32) -> Result<Array> {
    let ndim = a.ndim() as i32;
    if ndim == 0 {
        return reshape(a, &[1]);
    }
    let start = (start_axis + if start_axis < 0 { ndim } else { 0 }).max(0);
    let end = (end_axis + if end_axis < 0 { ndim } else { 0 }).min(ndim - 1);
    if start >= ndim || end < 0 || end < start {
        return Err(Error::invalid(
            "flatten",
            format!(
                "axes {start_axis}..={end_axis} are not a valid range for an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    if start == end {
        return Ok(a.clone());
    }
    Array::from_primitive(
        shape::Flatten {
            start_axis: start,
            end_axis: end,
        },
        vec![a.clone()],
    )
}

/// Splits axis `axis` into the axes `shape` (one entry may be `-1`).
pub fn unflatten(a: &Array, axis: i32, shape: &[i32]) -> Result<Array> {
    if shape.is_empty() {
        return Err(Error::invalid(
            "unflatten",
            "the shape to unflatten into is empty",
        ));
    }
    let ax = normalize_axis("unflatten", axis, a.ndim())?;
    let sizes = shape::infer_shape("unflatten", &a.shape()[ax..=ax], shape)?;
    if sizes.len() == 1 {
        return Ok(a.clone());
    }
    Array::from_primitive(
        shape::Unflatten {
            axis: ax as i32,
            shape: sizes,
        },
        vec![a.clone()],
    )
}

/// Permutes the axes of `a`; an empty `axes` reverses them (as MLX's default).
pub fn transpose(a: &Array, axes: &[i32]) -> Result<Array> {
    let axes: Vec<i32> = if axes.is_empty() {
        (0..a.ndim() as i32).rev().collect()
    } else {
        if axes.len() != a.ndim() {
            return Err(Error::invalid(
                "transpose",
                format!(
                    "got {} axes {axes:?} for an array of shape {:?}",
                    axes.len(),
                    a.shape()
                ),
            ));
        }
        normalize_axes("transpose", axes, a.ndim())?
            .into_iter()
            .map(|x| x as i32)
            .collect()
    };
    Array::from_primitive(shape::Transpose { axes }, vec![a.clone()])
}

/// `a` with axes `axis1` and `axis2` exchanged.
pub fn swapaxes(a: &Array, axis1: i32, axis2: i32) -> Result<Array> {
    let i = normalize_axis("swapaxes", axis1, a.ndim())?;
    let j = normalize_axis("swapaxes", axis2, a.ndim())?;
    let mut axes: Vec<i32> = (0..a.ndim() as i32).collect();
    axes.swap(i, j);
    transpose(a, &axes)
}

/// `a` with axis `source` moved to position `destination`.
pub fn moveaxis(a: &Array, source: i32, destination: i32) -> Result<Array> {
    let s = normalize_axis("moveaxis", source, a.ndim())?;
    let d = normalize_axis("moveaxis", destination, a.ndim())?;
    if s == d {
        return Ok(a.clone());
    }
    let mut axes: Vec<i32> = (0..a.ndim() as i32).filter(|&i| i as usize != s).collect();
    axes.insert(d, s as i32);
    transpose(a, &axes)
}

/// Removes the size-1 axes listed (all size-1 axes when `axes` is empty,
/// like Python's `mx.squeeze(a)`).
pub fn squeeze(a: &Array, axes: &[i32]) -> Result<Array> {
    let mut axes: Vec<i32> = if axes.is_empty() {
        (0..a.ndim() as i32)
            .filter(|&i| a.shape()[i as usize] == 1)
            .collect()
    } else {
        normalize_axes("squeeze", axes, a.ndim())?
            .into_iter()
            .map(|x| x as i32)
            .collect()
    };
    axes.sort_unstable();
    if let Some(&bad) = axes.iter().find(|&&x| a.shape()[x as usize] != 1) {
        return Err(Error::invalid(
            "squeeze",
            format!(
                "cannot squeeze axis {bad} of size {} in shape {:?}",
                a.shape()[bad as usize],
                a.shape()
            ),
        ));
    }
    if axes.is_empty() {
        return Ok(a.clone());
    }
    Array::from_primitive(shape::Squeeze { axes }, vec![a.clone()])
}

/// Inserts size-1 axes at the listed positions of the result.
pub fn expand_dims(a: &Array, axes: &[i32]) -> Result<Array> {
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let mut axes: Vec<i32> = normalize_axes("expand_dims", axes, a.ndim() + axes.len())?
        .into_iter()
        .map(|x| x as i32)
        .collect();
    axes.sort_unstable();
    Array::from_primitive(shape::ExpandDims { axes }, vec![a.clone()])
}

/// `a` with at least one dimension (a 0-d array becomes shape `[1]`).
pub fn atleast_1d(a: &Array) -> Result<Array> {
    match a.ndim() {
        0 => reshape(a, &[1]),
        _ => Ok(a.clone()),
    }
}

/// `a` with at least two dimensions (`[n]` becomes `[1, n]`).
pub fn atleast_2d(a: &Array) -> Result<Array> {
    match a.ndim() {
        0 => reshape(a, &[1, 1]),
        1 => reshape(a, &[1, a.shape()[0]]),
        _ => Ok(a.clone()),
    }
}

/// `a` with at least three dimensions (`[n]` becomes `[1, n, 1]`, `[m, n]` becomes `[m, n, 1]`).
pub fn atleast_3d(a: &Array) -> Result<Array> {
    match a.ndim() {
        0 => reshape(a, &[1, 1, 1]),
        1 => reshape(a, &[1, a.shape()[0], 1]),
        2 => reshape(a, &[a.shape()[0], a.shape()[1], 1]),
        _ => Ok(a.clone()),
    }
}
