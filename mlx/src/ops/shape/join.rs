//! Joining, cutting, padding and repeating.

use super::{broadcast_to, expand_dims, flatten, reshape, slice};
use crate::ops::astype;
use crate::primitives::shape;
use crate::shape::{normalize_axes, normalize_axis};
use crate::{promote_types, Array, Error, Result};

/// The arrays joined along `axis`; dtypes are promoted to a common one.
pub fn concatenate(arrays: &[Array], axis: i32) -> Result<Array> {
    let Some(first) = arrays.first() else {
        return Err(Error::invalid("concatenate", "no arrays to concatenate"));
    };
    if arrays.len() == 1 {
        return Ok(first.clone());
    }
    let ax = normalize_axis("concatenate", axis, first.ndim())?;
    for a in arrays {
        let same = a.ndim() == first.ndim()
            && (0..a.ndim()).all(|i| i == ax || a.shape()[i] == first.shape()[i]);
        if !same {
            let shapes: Vec<String> = arrays.iter().map(|a| format!("{:?}", a.shape())).collect();
            return Err(Error::invalid(
                "concatenate",
                format!(
                    "all dimensions except axis {axis} must match, found shapes {}",
                    shapes.join(", ")
                ),
            ));
        }
    }
    let dtype = arrays
        .iter()
        .skip(1)
        .fold(first.dtype(), |d, a| promote_types(d, a.dtype()));
    let inputs = arrays
        .iter()
        .map(|a| {
            if a.dtype() == dtype {
                Ok(a.clone())
            } else {
                astype(a, dtype)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Array::from_primitive(shape::Concatenate { axis: ax as i32 }, inputs)
}

/// The arrays (all of one shape) stacked along a new axis `axis`.
pub fn stack(arrays: &[Array], axis: i32) -> Result<Array> {
    let Some(first) = arrays.first() else {
        return Err(Error::invalid("stack", "no arrays to stack"));
    };
    if let Some(a) = arrays.iter().find(|a| a.shape() != first.shape()) {
        return Err(Error::invalid(
            "stack",
            format!(
                "all arrays must have the same shape, found {:?} and {:?}",
                first.shape(),
                a.shape()
            ),
        ));
    }
    let ax = normalize_axis("stack", axis, first.ndim() + 1)? as i32;
    let expanded = arrays
        .iter()
        .map(|a| expand_dims(a, &[ax]))
        .collect::<Result<Vec<_>>>()?;
    concatenate(&expanded, ax)
}

/// `a` cut along `axis` into `sections` pieces of equal size (MLX's
/// `split(a, n, axis)`); the size of the axis must be divisible by `sections`.
pub fn split(a: &Array, sections: i32, axis: i32) -> Result<Vec<Array>> {
    let ax = normalize_axis("split", axis, a.ndim())?;
    let n = a.shape()[ax];
    if sections <= 0 {
        return Err(Error::invalid(
            "split",
            format!("the number of sections must be positive, found {sections}"),
        ));
    }
    if n % sections != 0 {
        return Err(Error::invalid(
            "split",
            format!(
                "axis {axis} of size {n} (shape {:?}) cannot be cut into {sections} equal sections",
                a.shape()
            ),
        ));
    }
    let step = n / sections;
    let indices: Vec<i32> = (1..sections).map(|i| i * step).collect();
    split_at(a, &indices, ax as i32)
}

/// `a` cut along `axis` before each of `indices` (MLX's `split(a, [i, j, ...], axis)`):
/// pieces `[..i]`, `[i..j]`, ..., `[last..]`. Like MLX, sorted in-range
/// indices (fewer than 10) make one Split node whose outputs are views;
/// other indices are cut with slices (numpy semantics: negative indices
/// count from the end, out-of-order ones give empty pieces).
pub fn split_at(a: &Array, indices: &[i32], axis: i32) -> Result<Vec<Array>> {
    let ax = normalize_axis("split_at", axis, a.ndim())?;
    if indices.is_empty() {
        return Ok(vec![a.clone()]);
    }
    let n = a.shape()[ax];
    let sorted = indices.windows(2).all(|w| w[0] < w[1]);
    if indices.len() < 10 && sorted && indices[0] > 0 && indices[indices.len() - 1] < n {
        return Array::from_primitive_multi(
            Box::new(shape::Split {
                indices: indices.to_vec(),
                axis: ax as i32,
            }),
            vec![a.clone()],
        );
    }
    let mut start = vec![0; a.ndim()];
    let mut stop = a.shape().to_vec();
    let mut out = Vec::with_capacity(indices.len() + 1);
    for i in 0..=indices.len() {
        stop[ax] = indices.get(i).copied().unwrap_or(n);
        out.push(slice(a, &start, &stop, &[])?);
        start[ax] = stop[ax];
    }
    Ok(out)
}

/// `a` padded with `pad_value` (cast to `a`'s dtype): `pad_width[i] = (before, after)`
/// for axis i; a single pair applies to every axis (numpy's broadcasting of `pad_width`).
pub fn pad(a: &Array, pad_width: &[(i32, i32)], pad_value: &Array) -> Result<Array> {
    let widths: Vec<(i32, i32)> = match pad_width.len() {
        1 => vec![pad_width[0]; a.ndim()],
        n if n == a.ndim() => pad_width.to_vec(),
        n => {
            return Err(Error::invalid(
                "pad",
                format!(
                    "expected 1 or {} (before, after) pairs for an array of shape {:?}, found {n}",
                    a.ndim(),
                    a.shape()
                ),
            ))
        }
    };
    let axes: Vec<i32> = (0..a.ndim() as i32).collect();
    let (lo, hi): (Vec<i32>, Vec<i32>) = widths.into_iter().unzip();
    pad_axes(a, &axes, &lo, &hi, pad_value)
}

/// Constant padding of the listed axes (MLX's C++ `pad(a, axes, low, high, value)`).
pub fn pad_axes(
    a: &Array,
    axes: &[i32],
    low_pad_size: &[i32],
    high_pad_size: &[i32],
    pad_value: &Array,
) -> Result<Array> {
    if axes.len() != low_pad_size.len() || axes.len() != high_pad_size.len() {
        return Err(Error::invalid(
            "pad",
            format!(
                "expected one low and one high size per axis {axes:?}, found {low_pad_size:?} and {high_pad_size:?}"
            ),
        ));
    }
    if let Some(i) = (0..axes.len()).find(|&i| low_pad_size[i] < 0 || high_pad_size[i] < 0) {
        return Err(Error::invalid(
            "pad",
            format!(
                "padding sizes must be non-negative, found ({}, {}) for axis {}",
                low_pad_size[i], high_pad_size[i], axes[i]
            ),
        ));
    }
    normalize_axes("pad", axes, a.ndim())?;
    if pad_value.size() != 1 {
        return Err(Error::invalid(
            "pad",
            format!(
                "the pad value must hold one element, found shape {:?}",
                pad_value.shape()
            ),
        ));
    }
    let value = if pad_value.dtype() == a.dtype() {
        pad_value.clone()
    } else {
        astype(pad_value, a.dtype())?
    };
    Array::from_primitive(
        shape::Pad {
            axes: axes.to_vec(),
            low_pad_size: low_pad_size.to_vec(),
            high_pad_size: high_pad_size.to_vec(),
        },
        vec![a.clone(), value],
    )
}

/// `a` repeated `reps[i]` times along axis i (numpy's `tile`; missing
/// leading entries of either side count as 1). Built as MLX builds it:
/// Reshape, Broadcast, Reshape.
pub fn tile(a: &Array, reps: &[i32]) -> Result<Array> {
    if let Some(&r) = reps.iter().find(|&&r| r < 0) {
        return Err(Error::invalid(
            "tile",
            format!("repetitions must be non-negative, found {r}"),
        ));
    }
    let n = a.ndim().max(reps.len());
    let shape: Vec<i32> = std::iter::repeat_n(1, n - a.ndim())
        .chain(a.shape().iter().copied())
        .collect();
    let reps: Vec<i32> = std::iter::repeat_n(1, n - reps.len())
        .chain(reps.iter().copied())
        .collect();
    let (mut expand, mut broad, mut fin) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        if reps[i] != 1 {
            expand.push(1);
            broad.push(reps[i]);
        }
        expand.push(shape[i]);
        broad.push(shape[i]);
        fin.push(reps[i].checked_mul(shape[i]).ok_or_else(|| {
            Error::invalid(
                "tile",
                format!("tiling {:?} by {reps:?} overflows a dimension", a.shape()),
            )
        })?);
    }
    let x = reshape(a, &expand)?;
    let x = broadcast_to(&x, &broad)?;
    reshape(&x, &fin)
}

/// Each element of `a` repeated `repeats` times along `axis` (`None`:
/// of the flattened array), as numpy's `repeat` with a scalar count.
pub fn repeat(a: &Array, repeats: i32, axis: Option<i32>) -> Result<Array> {
    let (a, axis) = match axis {
        Some(ax) => (a.clone(), ax),
        None => (flatten(a, 0, -1)?, 0),
    };
    let ax = normalize_axis("repeat", axis, a.ndim())?;
    if repeats < 0 {
        return Err(Error::invalid(
            "repeat",
            format!("the number of repeats must be non-negative, found {repeats}"),
        ));
    }
    if repeats == 1 {
        return Ok(a);
    }
    let mut shape = a.shape().to_vec();
    if repeats == 0 {
        shape[ax] = 0;
        return Ok(crate::Array::from_data(
            crate::Data::contiguous(crate::Buffer::zeroed(0), &shape),
            crate::Spec::new(shape, a.dtype()),
        ));
    }
    shape.insert(ax + 1, repeats);
    let x = broadcast_to(&expand_dims(&a, &[ax as i32 + 1])?, &shape)?;
    shape.remove(ax + 1);
    shape[ax] = shape[ax].checked_mul(repeats).ok_or_else(|| {
        Error::invalid(
            "repeat",
            format!(
                "repeating {:?} {repeats} times overflows axis {ax}",
                a.shape()
            ),
        )
    })?;
    reshape(&x, &shape)
}
