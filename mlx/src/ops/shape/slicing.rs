//! Static and dynamic slices and slice updates.

use crate::ops::{astype, broadcast_to};
use crate::primitives::shape::{self, SliceUpdateType};
use crate::shape::{normalize_axes, normalize_axis};
use crate::{Array, Error, Result};

/// MLX's slice normalisation: starts are moved inside the axis, ends are
/// kept as given (a negative end counts from the end), and axes that keep
/// one element get stride 1 (their end is then rewritten to `start + 1`
/// so the stored state still describes the same slice). Returns the
/// output shape and whether some stride is negative.
fn normalize_slice(
    op: &str,
    shape: &[i32],
    start: &mut [i32],
    stop: &mut [i32],
    strides: &mut [i32],
) -> Result<(Vec<i32>, bool)> {
    if start.len() != shape.len() || stop.len() != shape.len() || strides.len() != shape.len() {
        return Err(Error::invalid(
            op,
            format!(
                "expected {} start indices, stop indices and strides for an array of shape {shape:?}, found {}, {} and {}",
                shape.len(),
                start.len(),
                stop.len(),
                strides.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(shape.len());
    let mut negative = false;
    for i in 0..shape.len() {
        let (n, k) = (shape[i] as i64, strides[i] as i64);
        let s = start[i] as i64;
        let s = if s < 0 { s + n } else { s };
        let e = stop[i] as i64;
        let e = if e < 0 { e + n } else { e };
        let len = if k > 0 {
            let st = s.clamp(0, n);
            let ed = e.clamp(0, n).max(st);
            start[i] = st as i32;
            (ed - st + k - 1) / k
        } else if k < 0 {
            negative = true;
            let st = s.min(n - 1);
            let ed = e.max(-1).min(st);
            start[i] = st as i32;
            (st - ed - k - 1) / -k
        } else {
            return Err(Error::invalid(
                op,
                format!("slice strides must be non-zero, found {strides:?}"),
            ));
        };
        if len == 1 {
            strides[i] = 1;
            stop[i] = start[i] + 1;
        }
        out.push(len as i32);
    }
    Ok((out, negative))
}

/// `a[start:stop:strides]` with one entry per axis (numpy semantics:
/// negative indices count from the end, bounds are clamped, negative
/// strides walk backwards). An empty `strides` means stride 1 everywhere.
/// The result is a view.
pub fn slice(a: &Array, start: &[i32], stop: &[i32], strides: &[i32]) -> Result<Array> {
    let (mut start, mut stop) = (start.to_vec(), stop.to_vec());
    let mut strides = if strides.is_empty() {
        vec![1; a.ndim()]
    } else {
        strides.to_vec()
    };
    let (shape, negative) =
        normalize_slice("slice", a.shape(), &mut start, &mut stop, &mut strides)?;
    if !negative && shape == a.shape() {
        return Ok(a.clone());
    }
    Array::from_primitive(
        shape::Slice {
            start_indices: start,
            end_indices: stop,
            strides,
        },
        vec![a.clone()],
    )
}

/// `a[..., start:stop:step, ...]` on one axis (the others whole).
pub fn slice_axis(a: &Array, axis: i32, start: i32, stop: i32, step: i32) -> Result<Array> {
    let ax = normalize_axis("slice_axis", axis, a.ndim())?;
    let mut st = vec![0; a.ndim()];
    let mut sp = a.shape().to_vec();
    let mut k = vec![1; a.ndim()];
    st[ax] = start;
    sp[ax] = stop;
    k[ax] = step;
    slice(a, &st, &sp, &k)
}

/// `a` reversed along `axes` (every axis when empty): a negative-stride slice view.
pub fn flip(a: &Array, axes: &[i32]) -> Result<Array> {
    let axes = if axes.is_empty() {
        (0..a.ndim()).collect()
    } else {
        normalize_axes("flip", axes, a.ndim())?
    };
    let mut start = vec![0; a.ndim()];
    let mut stop = a.shape().to_vec();
    let mut strides = vec![1; a.ndim()];
    for ax in axes {
        start[ax] = a.shape()[ax] - 1;
        stop[ax] = -a.shape()[ax] - 1;
        strides[ax] = -1;
    }
    slice(a, &start, &stop, &strides)
}

fn slice_update_impl(
    src: &Array,
    update: &Array,
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
    kind: SliceUpdateType,
) -> Result<Array> {
    let op = "slice_update";
    let (mut start, mut stop) = (start.to_vec(), stop.to_vec());
    let mut strides = if strides.is_empty() {
        vec![1; src.ndim()]
    } else {
        strides.to_vec()
    };
    let (shape, negative) = normalize_slice(op, src.shape(), &mut start, &mut stop, &mut strides)?;
    let upd = broadcast_to(&cast_like(update, src)?, &shape)?;
    if !negative && shape == src.shape() {
        return match kind {
            SliceUpdateType::None => Ok(upd),
            SliceUpdateType::Sum => crate::ops::add(src, &upd),
            SliceUpdateType::Prod => crate::ops::multiply(src, &upd),
            SliceUpdateType::Max => crate::ops::maximum(src, &upd),
            SliceUpdateType::Min => crate::ops::minimum(src, &upd),
        };
    }
    Array::from_primitive(
        shape::SliceUpdate {
            reduce_type: kind,
            start_indices: start,
            end_indices: stop,
            strides,
        },
        vec![src.clone(), upd],
    )
}

fn cast_like(update: &Array, src: &Array) -> Result<Array> {
    if update.dtype() == src.dtype() {
        Ok(update.clone())
    } else {
        astype(update, src.dtype())
    }
}

/// `src` with `src[start:stop:strides]` replaced by `update` (cast to
/// `src`'s dtype and broadcast to the slice's shape). Empty `strides` = 1.
pub fn slice_update(
    src: &Array,
    update: &Array,
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Result<Array> {
    slice_update_impl(src, update, start, stop, strides, SliceUpdateType::None)
}

/// Like [`slice_update`], adding `update` to the slice.
pub fn slice_update_add(
    src: &Array,
    update: &Array,
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Result<Array> {
    slice_update_impl(src, update, start, stop, strides, SliceUpdateType::Sum)
}

/// Like [`slice_update`], multiplying the slice by `update`.
pub fn slice_update_prod(
    src: &Array,
    update: &Array,
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Result<Array> {
    slice_update_impl(src, update, start, stop, strides, SliceUpdateType::Prod)
}

/// Like [`slice_update`], keeping the maximum of the slice and `update`.
pub fn slice_update_max(
    src: &Array,
    update: &Array,
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Result<Array> {
    slice_update_impl(src, update, start, stop, strides, SliceUpdateType::Max)
}

/// Like [`slice_update`], keeping the minimum of the slice and `update`.
pub fn slice_update_min(
    src: &Array,
    update: &Array,
    start: &[i32],
    stop: &[i32],
    strides: &[i32],
) -> Result<Array> {
    slice_update_impl(src, update, start, stop, strides, SliceUpdateType::Min)
}

/// Checks MLX's rules for dynamic start indices and normalises the axes.
fn dynamic_axes(op: &str, a: &Array, start: &Array, axes: &[i32]) -> Result<Vec<i32>> {
    if !start.dtype().is_integer() {
        return Err(Error::invalid(
            op,
            format!("start indices must be integers, found {}", start.dtype()),
        ));
    }
    if start.ndim() > 1 || start.size() != axes.len() || axes.len() > a.ndim() {
        return Err(Error::invalid(
            op,
            format!(
                "expected {} start indices in a 0-d or 1-d array for axes {axes:?} of an array of shape {:?}, found shape {:?}",
                axes.len(),
                a.shape(),
                start.shape()
            ),
        ));
    }
    Ok(normalize_axes(op, axes, a.ndim())?
        .into_iter()
        .map(|x| x as i32)
        .collect())
}

/// A slice of size `slice_size` (one entry per axis) of `a`, starting on
/// `axes` at the positions held by `start` (an integer array, 0-d or 1-d)
/// and at 0 on the other axes. Starts are clamped so the slice fits (MLX
/// leaves out-of-range starts undefined). MLX's `mx.slice`.
pub fn slice_dynamic(a: &Array, start: &Array, axes: &[i32], slice_size: &[i32]) -> Result<Array> {
    let axes = dynamic_axes("slice_dynamic", a, start, axes)?;
    let ok = slice_size.len() == a.ndim()
        && slice_size
            .iter()
            .zip(a.shape())
            .all(|(&s, &d)| (0..=d).contains(&s));
    if !ok {
        return Err(Error::invalid(
            "slice_dynamic",
            format!(
                "slice size {slice_size:?} must have one entry per axis, each between 0 and the size, for shape {:?}",
                a.shape()
            ),
        ));
    }
    Array::from_primitive(
        shape::DynamicSlice {
            axes,
            slice_size: slice_size.to_vec(),
        },
        vec![a.clone(), start.clone()],
    )
}

/// `src` with the region starting, on `axes`, at the positions held by
/// `start` replaced by `update` (cast to `src`'s dtype; missing leading
/// axes are broadcast). Starts are clamped so the update fits. MLX's
/// `mx.slice_update`.
pub fn slice_update_dynamic(
    src: &Array,
    update: &Array,
    start: &Array,
    axes: &[i32],
) -> Result<Array> {
    let axes = dynamic_axes("slice_update_dynamic", src, start, axes)?;
    if update.ndim() > src.ndim() {
        return Err(Error::invalid(
            "slice_update_dynamic",
            format!(
                "an update of shape {:?} has more dimensions than the array {:?}",
                update.shape(),
                src.shape()
            ),
        ));
    }
    let lead = src.ndim() - update.ndim();
    let mut up_shape: Vec<i32> = src.shape()[..lead].to_vec();
    for (d, &u) in update.shape().iter().enumerate() {
        up_shape.push(u.min(src.shape()[lead + d]));
    }
    for &ax in &axes {
        if (ax as usize) < lead {
            up_shape[ax as usize] = 1;
        }
    }
    let upd = broadcast_to(&cast_like(update, src)?, &up_shape)?;
    Array::from_primitive(
        shape::DynamicSliceUpdate { axes },
        vec![src.clone(), upd, start.clone()],
    )
}
