//! Sorting and scan ops: sort, argsort, partition, argpartition, topk,
//! cumsum, cumprod, cummax, cummin, logcumsumexp. `axis: None` works on the
//! flattened array (Reshape or Flatten, as MLX's Python API does); axes are
//! stored non-negative.

use super::cast_to;
use crate::ops::{astype, flatten, reshape, slice};
use crate::primitives::sort_scan::{ArgPartition, ArgSort, Partition, Scan, ScanType, Sort};
use crate::shape::normalize_axis;
use crate::{Array, Dtype, Error, Result};

/// `a` reshaped to one dimension of `a.size()` elements (MLX's sort-family flattening).
fn flat(a: &Array) -> Result<Array> {
    reshape(a, &[a.size() as i32])
}

/// `a` sorted along `axis` (default in MLX: -1), ascending, stable, NaNs
/// last. `None` sorts the flattened array.
pub fn sort(a: &Array, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return sort(&flat(a)?, Some(0));
    };
    let ax = normalize_axis("sort", axis, a.ndim())?;
    Array::from_primitive(Sort { axis: ax as i32 }, vec![a.clone()])
}

/// The uint32 indices that sort `a` along `axis` (stable, NaNs last).
pub fn argsort(a: &Array, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return argsort(&flat(a)?, Some(0));
    };
    let ax = normalize_axis("argsort", axis, a.ndim())?;
    Array::from_primitive(ArgSort { axis: ax as i32 }, vec![a.clone()])
}

/// `kth` normalised against the axis, or an error naming both.
fn check_kth(op: &str, a: &Array, kth: i32, ax: usize) -> Result<i32> {
    let n = a.shape()[ax];
    let k = if kth < 0 { kth + n } else { kth };
    if k < 0 || k >= n {
        return Err(Error::invalid(
            op,
            format!(
                "kth {kth} is out of range for axis {ax} of an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    Ok(k)
}

/// `a` partitioned along `axis` so that element `kth` (negative counts from
/// the end) is where a sort would put it, with no larger element before it
/// and no smaller one after it.
pub fn partition(a: &Array, kth: i32, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return partition(&flat(a)?, kth, Some(0));
    };
    let ax = normalize_axis("partition", axis, a.ndim())?;
    let kth = check_kth("partition", a, kth, ax)?;
    Array::from_primitive(
        Partition {
            kth,
            axis: ax as i32,
        },
        vec![a.clone()],
    )
}

/// The uint32 indices that partition `a` along `axis` around element `kth`.
pub fn argpartition(a: &Array, kth: i32, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return argpartition(&flat(a)?, kth, Some(0));
    };
    let ax = normalize_axis("argpartition", axis, a.ndim())?;
    let kth = check_kth("argpartition", a, kth, ax)?;
    Array::from_primitive(
        ArgPartition {
            kth,
            axis: ax as i32,
        },
        vec![a.clone()],
    )
}

/// The `k` largest elements of `a` along `axis`, in unspecified order
/// (MLX: a Partition around `-k` and a Slice of the last `k`).
pub fn topk(a: &Array, k: i32, axis: Option<i32>) -> Result<Array> {
    let Some(axis) = axis else {
        return topk(&flat(a)?, k, Some(0));
    };
    let ax = normalize_axis("topk", axis, a.ndim())?;
    let n = a.shape()[ax];
    if k < 0 || k > n {
        return Err(Error::invalid(
            "topk",
            format!(
                "k = {k} is out of range for axis {ax} of an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    if k == n {
        return Ok(a.clone());
    }
    let part = partition(a, -k, Some(ax as i32))?;
    let mut start = vec![0; a.ndim()];
    start[ax] = n - k;
    slice(&part, &start, a.shape(), &[])
}

/// One Scan node along `axis`; `None` first flattens with `flatten_op`.
fn scan_op(
    op: &str,
    a: &Array,
    axis: Option<i32>,
    kind: ScanType,
    reverse: bool,
    inclusive: bool,
    use_flatten: bool,
) -> Result<Array> {
    let Some(axis) = axis else {
        let f = if use_flatten {
            flatten(a, 0, -1)?
        } else {
            reshape(a, &[-1])?
        };
        return scan_op(op, &f, Some(0), kind, reverse, inclusive, use_flatten);
    };
    let ax = normalize_axis(op, axis, a.ndim())?;
    Array::from_primitive(
        Scan {
            reduce_type: kind,
            axis: ax as i32,
            reverse,
            inclusive,
        },
        vec![a.clone()],
    )
}

/// Cumulative sum along `axis` (flattened when `None`), from the end when
/// `reverse`, excluding the current element unless `inclusive`. Bool input
/// gives int32; other dtypes keep theirs (integers wrap).
pub fn cumsum(a: &Array, axis: Option<i32>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op("cumsum", a, axis, ScanType::Sum, reverse, inclusive, true)
}

/// [`cumsum`] computed in `dtype` (an AsType first).
pub fn cumsum_dtype(
    a: &Array,
    axis: Option<i32>,
    reverse: bool,
    inclusive: bool,
    dtype: Dtype,
) -> Result<Array> {
    cumsum(&cast_to(a, dtype)?, axis, reverse, inclusive)
}

/// Cumulative product (see [`cumsum`] for the arguments).
pub fn cumprod(a: &Array, axis: Option<i32>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op("cumprod", a, axis, ScanType::Prod, reverse, inclusive, true)
}

/// [`cumprod`] computed in `dtype` (an AsType first).
pub fn cumprod_dtype(
    a: &Array,
    axis: Option<i32>,
    reverse: bool,
    inclusive: bool,
    dtype: Dtype,
) -> Result<Array> {
    cumprod(&cast_to(a, dtype)?, axis, reverse, inclusive)
}

/// Cumulative maximum. A NaN makes the rest NaN for float32/float64 and 0
/// for float16/bfloat16 (MLX's CPU behaviour).
pub fn cummax(a: &Array, axis: Option<i32>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op("cummax", a, axis, ScanType::Max, reverse, inclusive, false)
}

/// Cumulative minimum (NaNs as in [`cummax`]).
pub fn cummin(a: &Array, axis: Option<i32>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op("cummin", a, axis, ScanType::Min, reverse, inclusive, false)
}

/// Cumulative `log(sum(exp(a)))`. Integer and bool inputs are cast to
/// float32 first.
pub fn logcumsumexp(a: &Array, axis: Option<i32>, reverse: bool, inclusive: bool) -> Result<Array> {
    let a = if a.dtype().is_inexact() {
        a.clone()
    } else {
        astype(a, Dtype::Float32)?
    };
    scan_op(
        "logcumsumexp",
        &a,
        axis,
        ScanType::LogAddExp,
        reverse,
        inclusive,
        false,
    )
}

/// Indices (uint32, shape of `values`) that keep the 1-D ascending
/// `sorted_sequence` sorted when each value is inserted: `side` "left" gives
/// the count of elements < value, "right" the count ≤ value (MLX's
/// `mx.searchsorted`). Both inputs are cast to their promoted dtype.
pub fn searchsorted(sorted_sequence: &Array, values: &Array, side: &str) -> Result<Array> {
    let right = match side {
        "left" => false,
        "right" => true,
        _ => {
            return Err(Error::invalid(
                "searchsorted",
                format!("side must be \"left\" or \"right\", found {side:?}"),
            ))
        }
    };
    if sorted_sequence.ndim() != 1 {
        return Err(Error::invalid(
            "searchsorted",
            format!(
                "the sorted sequence must be 1-D, found shape {:?}",
                sorted_sequence.shape()
            ),
        ));
    }
    let t = crate::promote_types(sorted_sequence.dtype(), values.dtype());
    Array::from_primitive(
        crate::primitives::sort_scan::SearchSorted { right },
        vec![cast_to(sorted_sequence, t)?, cast_to(values, t)?],
    )
}
