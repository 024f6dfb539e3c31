//! Indexing ops: gather/take/take_along_axis, scatter and its reducing
//! forms, put_along_axis, masked_scatter, and the helpers behind Python's
//! `a[idx]`, `a[i, j]`, `a[idx] = v` and `a.at[idx].add(v)`. Graphs are
//! built as MLX 0.32 builds them (explicit Broadcast/AsType nodes, Gather
//! followed by Transpose/Squeeze), so exported files match MLX's.

use super::cast_to;
use super::shape::broadcast_together;
use crate::backend::cpu::indexing::is_index_dtype;
use crate::ops::{expand_dims, flatten, reshape, slice, squeeze, transpose};
use crate::primitives::indexing::{
    Gather, GatherAxis, MaskedScatter, Scatter, ScatterAxis, ScatterAxisType, ScatterType,
};
use crate::shape::normalize_axis;
use crate::{Array, Dtype, Error, Result};

/// Checks index arrays (integers only) and gives their common dtype.
fn index_dtype(op: &str, indices: &[Array]) -> Result<Option<Dtype>> {
    let mut dtype: Option<Dtype> = None;
    for ix in indices {
        if !is_index_dtype(ix.dtype()) {
            return Err(Error::invalid(
                op,
                format!(
                    "indices must have an integer dtype, found {} (shape {:?})",
                    ix.dtype(),
                    ix.shape()
                ),
            ));
        }
        dtype = Some(match dtype {
            Some(d) => crate::promote_types(d, ix.dtype()),
            None => ix.dtype(),
        });
    }
    Ok(dtype)
}

/// Axes for `k` index arrays: normalised, distinct.
fn index_axes(op: &str, axes: &[i32], k: usize, ndim: usize) -> Result<Vec<i32>> {
    if k > ndim {
        return Err(Error::invalid(
            op,
            format!("got {k} index arrays for an array with {ndim} dimensions"),
        ));
    }
    if axes.len() != k {
        return Err(Error::invalid(
            op,
            format!("got {k} index arrays but {} axes {axes:?}", axes.len()),
        ));
    }
    Ok(super::normalize_axes(op, axes, ndim)?
        .into_iter()
        .map(|a| a as i32)
        .collect())
}

/// The index arrays broadcast to one shape and cast to one integer dtype.
fn prepare_indices(op: &str, indices: &[Array]) -> Result<Vec<Array>> {
    let dtype = index_dtype(op, indices)?;
    let mut out = broadcast_together(op, indices, &[])?;
    if let Some(d) = dtype {
        for ix in &mut out {
            *ix = cast_to(ix, d)?;
        }
    }
    Ok(out)
}

/// MLX's `gather`: for every position of the broadcast `indices`, the slice
/// of `a` of size `slice_sizes` starting at `indices[j]` on `axes[j]`.
/// The result has shape `broadcast(indices) ++ slice_sizes`.
pub fn gather(a: &Array, indices: &[Array], axes: &[i32], slice_sizes: &[i32]) -> Result<Array> {
    let op = "gather";
    let axes = index_axes(op, axes, indices.len(), a.ndim())?;
    if slice_sizes.len() != a.ndim() {
        return Err(Error::invalid(
            op,
            format!(
                "got slice sizes {slice_sizes:?} for an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    let idx = prepare_indices(op, indices)?;
    let total: i64 = slice_sizes.iter().map(|&s| s as i64).product();
    if a.size() == 0 {
        let n = idx.first().map_or(1, |i| i.size());
        if n != 0 && total != 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "the array of shape {:?} is empty, so the indices or the slice ({slice_sizes:?}) \
                     must be empty",
                    a.shape()
                ),
            ));
        }
    } else if slice_sizes
        .iter()
        .zip(a.shape())
        .any(|(&s, &d)| s < 0 || s > d)
    {
        return Err(Error::invalid(
            op,
            format!(
                "slice sizes {slice_sizes:?} must lie in [0, dim] for an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    let mut inputs = vec![a.clone()];
    inputs.extend(idx);
    Array::from_primitive(
        Gather {
            axes,
            slice_sizes: slice_sizes.to_vec(),
        },
        inputs,
    )
}

/// Elements of `a` at `indices` along `axis` (numpy's `take`); with no axis,
/// `a` is flattened first. The result replaces that axis by the indices' axes.
pub fn take(a: &Array, indices: &Array, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return take(&flatten(a, 0, -1)?, indices, Some(0));
    };
    let ax = normalize_axis("take", axis, a.ndim())?;
    if a.shape()[ax] == 0 && indices.size() != 0 {
        return Err(Error::invalid(
            "take",
            format!(
                "cannot take {} elements from the empty axis {ax} of shape {:?}",
                indices.size(),
                a.shape()
            ),
        ));
    }
    let mut sizes = a.shape().to_vec();
    sizes[ax] = 1;
    let mut out = gather(a, std::slice::from_ref(indices), &[ax as i32], &sizes)?;
    let k = indices.ndim() as i32;
    let ax = ax as i32;
    if ax != 0 {
        let n = out.ndim() as i32;
        let perm: Vec<i32> = (k..k + ax).chain(0..k).chain(k + ax..n).collect();
        out = transpose(&out, &perm)?;
    }
    squeeze(&out, &[k + ax])
}

/// `a[..., index, ...]` on `axis` for one integer (negative counts from the
/// end): a Slice and a Squeeze, as MLX's `take(a, int, axis)`.
pub fn take_int(a: &Array, index: i32, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return take_int(&flatten(a, 0, -1)?, index, Some(0));
    };
    let ax = normalize_axis("take", axis, a.ndim())?;
    let dim = a.shape()[ax];
    let i = if index < 0 { index + dim } else { index };
    if i < 0 || i >= dim {
        return Err(Error::invalid(
            "take",
            format!(
                "index {index} is out of bounds for axis {ax} of shape {:?}",
                a.shape()
            ),
        ));
    }
    let mut start = vec![0; a.ndim()];
    let mut stop = a.shape().to_vec();
    start[ax] = i;
    stop[ax] = i + 1;
    squeeze(&slice(a, &start, &stop, &[])?, &[ax as i32])
}

/// Checks `indices` for the along-axis ops and normalises `axis`.
fn along_axis(op: &str, a: &Array, indices: &Array, axis: i32) -> Result<usize> {
    let ax = normalize_axis(op, axis, a.ndim())?;
    index_dtype(op, std::slice::from_ref(indices))?;
    if indices.ndim() != a.ndim() {
        return Err(Error::invalid(
            op,
            format!(
                "indices of shape {:?} must have as many dimensions as the array {:?}",
                indices.shape(),
                a.shape()
            ),
        ));
    }
    Ok(ax)
}

/// `out[m] = a[m with m[axis] = indices[m]]` (numpy's `take_along_axis`);
/// `indices` broadcasts against `a` on the other axes. With no axis, `a` is
/// flattened first.
pub fn take_along_axis(a: &Array, indices: &Array, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return take_along_axis(&reshape(a, &[-1])?, indices, Some(0));
    };
    let ax = along_axis("take_along_axis", a, indices, axis)?;
    let rel = ax as i32 - a.ndim() as i32;
    let inputs = broadcast_together("take_along_axis", &[a.clone(), indices.clone()], &[rel])?;
    Array::from_primitive(GatherAxis { axis: ax as i32 }, inputs)
}

fn scatter_axis(
    op: &str,
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: i32,
    kind: ScatterAxisType,
) -> Result<Array> {
    let ax = along_axis(op, a, indices, axis)?;
    if a.size() == 0 {
        return Ok(a.clone());
    }
    let mut upd = cast_to(values, a.dtype())?;
    if upd.ndim() > indices.ndim() {
        let lead: Vec<i32> = (0..(upd.ndim() - indices.ndim()) as i32).collect();
        upd = squeeze(&upd, &lead)?;
    }
    let pair = broadcast_together(op, &[indices.clone(), upd], &[])?;
    let rel = ax as i32 - a.ndim() as i32;
    let inputs = broadcast_together(op, &[a.clone(), pair[0].clone(), pair[1].clone()], &[rel])?;
    Array::from_primitive(
        ScatterAxis {
            reduce_type: kind,
            axis: ax as i32,
        },
        inputs,
    )
}

/// `a` with `values` written at `indices` along `axis` (numpy's
/// `put_along_axis`); with no axis, on the flattened array.
pub fn put_along_axis(
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: Option<i32>,
) -> Result<Array> {
    let op = "put_along_axis";
    match axis {
        Some(ax) => scatter_axis(op, a, indices, values, ax, ScatterAxisType::None),
        None => {
            let flat = reshape(a, &[-1])?;
            let out = scatter_axis(op, &flat, indices, values, 0, ScatterAxisType::None)?;
            reshape(&out, a.shape())
        }
    }
}

/// `a` with `values` added at `indices` along `axis` (duplicates accumulate).
pub fn scatter_add_axis(a: &Array, indices: &Array, values: &Array, axis: i32) -> Result<Array> {
    scatter_axis(
        "scatter_add_axis",
        a,
        indices,
        values,
        axis,
        ScatterAxisType::Sum,
    )
}

fn scatter_impl(
    op: &str,
    a: &Array,
    indices: &[Array],
    updates: &Array,
    axes: &[i32],
    kind: ScatterType,
) -> Result<Array> {
    let axes = index_axes(op, axes, indices.len(), a.ndim())?;
    let idx = prepare_indices(op, indices)?;
    let ishape: Vec<i32> = idx.first().map(|i| i.shape().to_vec()).unwrap_or_default();
    let k = ishape.len();
    let fits = updates.ndim() == a.ndim() + k
        && updates.shape()[..k] == ishape[..]
        && updates.shape()[k..]
            .iter()
            .zip(a.shape())
            .all(|(&u, &d)| u <= d);
    if !fits {
        return Err(Error::invalid(
            op,
            format!(
                "updates of shape {:?} must be the index shape {ishape:?} followed by a slice no \
                 larger than the array {:?}",
                updates.shape(),
                a.shape()
            ),
        ));
    }
    let mut inputs = vec![a.clone()];
    inputs.extend(idx);
    inputs.push(cast_to(updates, a.dtype())?);
    Array::from_primitive(
        Scatter {
            reduce_type: kind,
            axes,
        },
        inputs,
    )
}

/// MLX's `scatter`: `a` with the slices of `updates` written at the
/// broadcast `indices` on `axes`; `updates` is shaped
/// `broadcast(indices) ++ slice` with one slice entry per axis of `a`.
/// Which of several updates to one position wins is unspecified.
pub fn scatter(a: &Array, indices: &[Array], updates: &Array, axes: &[i32]) -> Result<Array> {
    scatter_impl("scatter", a, indices, updates, axes, ScatterType::None)
}

/// [`scatter`] that adds the updates (duplicates accumulate).
pub fn scatter_add(a: &Array, indices: &[Array], updates: &Array, axes: &[i32]) -> Result<Array> {
    scatter_impl("scatter_add", a, indices, updates, axes, ScatterType::Sum)
}

/// [`scatter`] that multiplies by the updates.
pub fn scatter_prod(a: &Array, indices: &[Array], updates: &Array, axes: &[i32]) -> Result<Array> {
    scatter_impl("scatter_prod", a, indices, updates, axes, ScatterType::Prod)
}

/// [`scatter`] that keeps the maximum.
pub fn scatter_max(a: &Array, indices: &[Array], updates: &Array, axes: &[i32]) -> Result<Array> {
    scatter_impl("scatter_max", a, indices, updates, axes, ScatterType::Max)
}

/// [`scatter`] that keeps the minimum.
pub fn scatter_min(a: &Array, indices: &[Array], updates: &Array, axes: &[i32]) -> Result<Array> {
    scatter_impl("scatter_min", a, indices, updates, axes, ScatterType::Min)
}

/// `a[mask] = values`: the positions where the boolean `mask` (a prefix of
/// `a`'s shape) is true take consecutive values (rows of `values` when the
/// mask covers fewer axes than `a`); a 0-d value is broadcast.
pub fn masked_scatter(a: &Array, mask: &Array, values: &Array) -> Result<Array> {
    let op = "masked_scatter";
    if mask.dtype() != Dtype::Bool {
        return Err(Error::invalid(
            op,
            format!("the mask must be bool, found {}", mask.dtype()),
        ));
    }
    let (nd, md) = (a.ndim(), mask.ndim());
    if md > nd || mask.shape() != &a.shape()[..md] {
        return Err(Error::invalid(
            op,
            format!(
                "the mask of shape {:?} must match the start of the array's shape {:?}",
                mask.shape(),
                a.shape()
            ),
        ));
    }
    let unmasked = nd - md;
    if values.ndim() > unmasked + 1 {
        return Err(Error::invalid(
            op,
            format!(
                "values of shape {:?} must broadcast against the last {unmasked} axes of {:?} \
                 (at most {} dimensions)",
                values.shape(),
                a.shape(),
                unmasked + 1
            ),
        ));
    }
    let mut m = mask.clone();
    if unmasked > 0 {
        let mut s = mask.shape().to_vec();
        s.resize(nd, 1);
        m = crate::ops::broadcast_to(&reshape(mask, &s)?, a.shape())?;
    }
    let tail = &a.shape()[md..];
    let mut v = cast_to(values, a.dtype())?;
    if values.ndim() < unmasked + 1 {
        let mut s = vec![1; unmasked + 1 - values.ndim()];
        s.extend_from_slice(values.shape());
        v = reshape(&v, &s)?;
        s[0] = mask.size() as i32;
        s[1..].copy_from_slice(tail);
        v = crate::ops::broadcast_to(&v, &s)?;
    } else if &values.shape()[1..] != tail {
        let mut s = values.shape().to_vec();
        s[1..].copy_from_slice(tail);
        v = crate::ops::broadcast_to(&v, &s)?;
    }
    let inputs = vec![
        expand_dims(a, &[0])?,
        expand_dims(&m, &[0])?,
        expand_dims(&v, &[0])?,
    ];
    squeeze(&Array::from_primitive(MaskedScatter {}, inputs)?, &[0])
}

/// Python's `a[indices]` for an integer array: [`take`] on axis 0.
pub fn index(a: &Array, indices: &Array) -> Result<Array> {
    if a.ndim() == 0 {
        return Err(Error::invalid(
            "index",
            "a 0-dimensional array cannot be indexed",
        ));
    }
    take(a, indices, Some(0))
}

/// Python's `a[i]` for an integer (negative counts from the end): a Gather
/// with a uint32 scalar index and a Squeeze, as MLX's Python indexing does.
pub fn index_int(a: &Array, i: i32) -> Result<Array> {
    if a.ndim() == 0 {
        return Err(Error::invalid(
            "index",
            "a 0-dimensional array cannot be indexed",
        ));
    }
    let dim = a.shape()[0];
    let j = if i < 0 { i + dim } else { i };
    if j < 0 || j >= dim {
        return Err(Error::invalid(
            "index",
            format!(
                "index {i} is out of bounds for axis 0 of shape {:?}",
                a.shape()
            ),
        ));
    }
    take(a, &Array::scalar(j as u32), Some(0))
}

/// Python's `a[i0, i1, ...]` for integer arrays on the leading axes: one
/// Gather over the broadcast indices, then a Squeeze of the indexed axes.
pub fn index_arrays(a: &Array, indices: &[Array]) -> Result<Array> {
    let k = indices.len();
    if k == 0 {
        return Ok(a.clone());
    }
    if k > a.ndim() {
        return Err(Error::invalid(
            "index",
            format!("{k} indices for an array of shape {:?}", a.shape()),
        ));
    }
    let max_dims = indices.iter().map(|i| i.ndim()).max().unwrap_or(0) as i32;
    let axes: Vec<i32> = (0..k as i32).collect();
    let mut sizes = a.shape().to_vec();
    sizes[..k].fill(1);
    let out = gather(a, indices, &axes, &sizes)?;
    let sq: Vec<i32> = (0..k as i32).map(|x| x + max_dims).collect();
    squeeze(&out, &sq)
}

/// `values` with leading size-1 axes removed, broadcast to the slices
/// `a[indices]` selects and given the Scatter layout (MLX's Python
/// `a[indices] = values` for an integer array).
fn scatter_updates(a: &Array, indices: &Array, values: &Array) -> Result<Array> {
    if a.ndim() == 0 {
        return Err(Error::invalid(
            "index",
            "a 0-dimensional array cannot be indexed",
        ));
    }
    let lead = values.shape().iter().take_while(|&&d| d == 1).count() as i32;
    let up = if lead > 0 {
        squeeze(values, &(0..lead).collect::<Vec<_>>())?
    } else {
        values.clone()
    };
    let mut shape = indices.shape().to_vec();
    shape.extend_from_slice(&a.shape()[1..]);
    let up = crate::ops::broadcast_to(&up, &shape)?;
    shape.insert(indices.ndim(), 1);
    reshape(&up, &shape)
}

/// Python's `a[indices] = values` for an integer array on axis 0.
pub fn index_put(a: &Array, indices: &Array, values: &Array) -> Result<Array> {
    let up = scatter_updates(a, indices, values)?;
    scatter(a, std::slice::from_ref(indices), &up, &[0])
}

/// Python's `a.at[indices].add(values)` (duplicates accumulate).
pub fn index_add(a: &Array, indices: &Array, values: &Array) -> Result<Array> {
    let up = scatter_updates(a, indices, values)?;
    scatter_add(a, std::slice::from_ref(indices), &up, &[0])
}

/// Python's `a.at[indices].multiply(values)`.
pub fn index_multiply(a: &Array, indices: &Array, values: &Array) -> Result<Array> {
    let up = scatter_updates(a, indices, values)?;
    scatter_prod(a, std::slice::from_ref(indices), &up, &[0])
}

/// Python's `a.at[indices].maximum(values)`.
pub fn index_maximum(a: &Array, indices: &Array, values: &Array) -> Result<Array> {
    let up = scatter_updates(a, indices, values)?;
    scatter_max(a, std::slice::from_ref(indices), &up, &[0])
}

/// Python's `a.at[indices].minimum(values)`.
pub fn index_minimum(a: &Array, indices: &Array, values: &Array) -> Result<Array> {
    let up = scatter_updates(a, indices, values)?;
    scatter_min(a, std::slice::from_ref(indices), &up, &[0])
}
