//! Reductions: sum, prod, max, min, all, any, mean, var, std, argmax,
//! argmin, logsumexp, softmax.
//!
//! Every reduction takes `(a, axes, keepdims)`; an empty `axes` means all
//! axes. The graphs are MLX's: a `Reduce`/`ArgReduce`/`LogSumExp` node that
//! keeps the reduced axes as size 1, then a `Squeeze` when `keepdims` is
//! false; reductions over size-1 axes only are no-ops (at most a cast);
//! mean multiplies by a `1/n` constant; logsumexp and softmax over anything
//! but the last axis are decompositions.

use super::{broadcast_as, cast_to, multiply, squeeze};
use crate::primitives::reduce::{
    sum_dtype, ArgReduce, ArgReduceType, LogSumExp, Reduce, ReduceType, Softmax,
};
use crate::shape::{normalize_axes, normalize_axis};
use crate::{promote_types, Array, Dtype, Error, Result};

/// Sorted, normalised reduction axes; empty `axes` means all of them.
fn reduce_axes(op: &str, a: &Array, axes: &[i32]) -> Result<Vec<i32>> {
    let mut ax = if axes.is_empty() {
        (0..a.ndim()).collect()
    } else {
        normalize_axes(op, axes, a.ndim())?
    };
    ax.sort_unstable();
    Ok(ax.into_iter().map(|x| x as i32).collect())
}

/// `a` with the (sorted, normalised) `axes` removed unless `keepdims`.
fn finish_keepdims(out: Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    if keepdims || axes.is_empty() {
        Ok(out)
    } else {
        squeeze(&out, axes)
    }
}

/// The shared body of the six `Reduce` ops.
fn reduce(op: &str, a: &Array, axes: &[i32], keepdims: bool, rt: ReduceType) -> Result<Array> {
    let axes = reduce_axes(op, a, axes)?;
    let no_identity = matches!(rt, ReduceType::Max | ReduceType::Min);
    for &ax in &axes {
        if no_identity && a.shape()[ax as usize] == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "cannot {op} reduce over axis {ax} of size 0 (shape {:?})",
                    a.shape()
                ),
            ));
        }
    }
    let out_dtype = match rt {
        ReduceType::And | ReduceType::Or => Dtype::Bool,
        ReduceType::Sum | ReduceType::Prod => sum_dtype(a.dtype()),
        ReduceType::Min | ReduceType::Max => a.dtype(),
    };
    if axes.is_empty() {
        // MLX returns the input itself (all/any still cast to bool).
        return match rt {
            ReduceType::And | ReduceType::Or => cast_to(a, Dtype::Bool),
            _ => Ok(a.clone()),
        };
    }
    let noop = axes.iter().all(|&ax| a.shape()[ax as usize] == 1);
    let out = if noop {
        cast_to(a, out_dtype)?
    } else {
        Array::from_primitive(
            Reduce {
                reduce_type: rt,
                axes: axes.clone(),
            },
            vec![a.clone()],
        )?
    };
    finish_keepdims(out, &axes, keepdims)
}

/// Sum over `axes` (all when empty). Small integers and bool sum as int32
/// (uint32 for unsigned ones), as MLX does.
pub fn sum(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    reduce("sum", a, axes, keepdims, ReduceType::Sum)
}

/// Product over `axes` (all when empty), with [`sum`]'s result dtypes.
pub fn prod(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    reduce("prod", a, axes, keepdims, ReduceType::Prod)
}

/// Maximum over `axes` (all when empty); NaN propagates. Errors on an empty axis.
pub fn max(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    reduce("max", a, axes, keepdims, ReduceType::Max)
}

/// Minimum over `axes` (all when empty); NaN propagates. Errors on an empty axis.
pub fn min(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    reduce("min", a, axes, keepdims, ReduceType::Min)
}

/// Whether every element over `axes` is non-zero (bool result).
pub fn all(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    reduce("all", a, axes, keepdims, ReduceType::And)
}

/// Whether any element over `axes` is non-zero (bool result).
pub fn any(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    reduce("any", a, axes, keepdims, ReduceType::Or)
}

/// `d` if it is a float or complex type, else the float type it promotes to
/// with float32 (MLX's `at_least_float`).
pub(crate) fn at_least_float(d: Dtype) -> Dtype {
    if d.is_inexact() {
        d
    } else {
        promote_types(d, Dtype::Float32)
    }
}

/// Number of elements over the (normalised) reduction axes.
fn count(a: &Array, axes: &[i32]) -> f64 {
    axes.iter()
        .map(|&ax| a.shape()[ax as usize] as f64)
        .product()
}

/// Mean over `axes` (all when empty): the sum times a `1/n` constant, in
/// at least float32.
pub fn mean(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    let ax = reduce_axes("mean", a, axes)?;
    let dtype = at_least_float(a.dtype());
    let normalizer = Array::scalar_of(1.0 / count(a, &ax), dtype);
    multiply(&sum(a, &ax, keepdims)?, &normalizer)
}

/// Variance over `axes` (all when empty) with `ddof` delta degrees of
/// freedom: `sum((a - mean)^2) / max(n - ddof, 0)`. Complex inputs give the
/// mean squared magnitude (float32).
pub fn var(a: &Array, axes: &[i32], keepdims: bool, ddof: i32) -> Result<Array> {
    let ax = reduce_axes("var", a, axes)?;
    let mut dtype = at_least_float(a.dtype());
    let mu = mean(a, &ax, true)?;
    let d = super::subtract(a, &mu)?;
    let sq = if dtype.is_complex() {
        dtype = Dtype::Float32;
        pending::real(&multiply(&d, &pending::conjugate(&d)?)?)?
    } else {
        pending::square(&d)?
    };
    let v = sum(&sq, &ax, keepdims)?;
    let n = count(a, &ax);
    if ddof != 0 {
        let normalizer = super::maximum(
            &super::subtract(
                &Array::scalar_of(n, dtype),
                &Array::scalar_of(ddof as f64, dtype),
            )?,
            &Array::scalar_of(0.0, dtype),
        )?;
        super::divide(&v, &normalizer)
    } else {
        multiply(&v, &Array::scalar_of(1.0 / n, dtype))
    }
}

/// Standard deviation: the square root of [`var`].
pub fn std(a: &Array, axes: &[i32], keepdims: bool, ddof: i32) -> Result<Array> {
    pending::sqrt(&var(a, axes, keepdims, ddof)?)
}

/// The shared body of argmax and argmin.
fn arg_reduce(
    op: &str,
    a: &Array,
    axis: Option<i32>,
    keepdims: bool,
    rt: ArgReduceType,
) -> Result<Array> {
    let Some(axis) = axis else {
        // Over the flattened array, then shaped like MLX: all axes kept as 1,
        // or a 0-d result.
        let result = arg_reduce(op, &pending::flatten(a)?, Some(0), true, rt)?;
        return if keepdims && a.ndim() > 1 {
            super::expand_dims(&result, &(0..a.ndim() as i32 - 1).collect::<Vec<_>>())
        } else if keepdims && a.ndim() == 1 {
            Ok(result)
        } else {
            squeeze(&result, &[0])
        };
    };
    if a.size() == 0 {
        return Err(Error::invalid(
            op,
            format!(
                "cannot {op} reduce an array of size 0 (shape {:?})",
                a.shape()
            ),
        ));
    }
    let ax = normalize_axis(op, axis, a.ndim())? as i32;
    let out = if a.shape()[ax as usize] == 1 {
        let mut shape = a.shape().to_vec();
        shape[ax as usize] = 1;
        super::zeros(&shape, Dtype::Uint32)?
    } else {
        Array::from_primitive(
            ArgReduce {
                reduce_type: rt,
                axis: ax,
            },
            vec![a.clone()],
        )?
    };
    finish_keepdims(out, &[ax], keepdims)
}

/// Index (uint32) of the first maximum along `axis`, or over the flattened
/// array when `axis` is `None`.
pub fn argmax(a: &Array, axis: Option<i32>, keepdims: bool) -> Result<Array> {
    arg_reduce("argmax", a, axis, keepdims, ArgReduceType::ArgMax)
}

/// Index (uint32) of the first minimum along `axis`, or over the flattened
/// array when `axis` is `None`.
pub fn argmin(a: &Array, axis: Option<i32>, keepdims: bool) -> Result<Array> {
    arg_reduce("argmin", a, axis, keepdims, ArgReduceType::ArgMin)
}

/// Whether `axes` (as given) name the last axis, possibly after leading
/// size-1 axes in sequence: then the fused last-axis primitive applies
/// (MLX's test, on the axes as the caller wrote them).
fn reduces_last_dim(a: &Array, axes: &[i32]) -> bool {
    let nd = a.ndim() as i32;
    let Some(&last) = axes.last() else {
        return false;
    };
    if last != nd - 1 && last != -1 {
        return false;
    }
    (0..axes.len() - 1).rev().all(|i| {
        let ax = if axes[i] < 0 { axes[i] + nd } else { axes[i] };
        axes[i] + 1 == axes[i + 1] && a.shape()[ax as usize] == 1
    })
}

/// The axes a fused-op caller meant: all when empty, validated.
fn given_axes(op: &str, a: &Array, axes: &[i32]) -> Result<Vec<i32>> {
    if axes.is_empty() {
        return Ok((0..a.ndim() as i32).collect());
    }
    normalize_axes(op, axes, a.ndim())?;
    Ok(axes.to_vec())
}

/// `log(sum(exp(a)))` over `axes` (all when empty), computed stably. Over
/// the last axis it is one `LogSumExp` node; otherwise MLX's decomposition
/// (max, subtract, exp, sum, log, add, and the max where it is infinite).
pub fn logsumexp(a: &Array, axes: &[i32], keepdims: bool) -> Result<Array> {
    if a.size() == 0 {
        return Err(Error::invalid(
            "logsumexp",
            format!("received an empty array (shape {:?})", a.shape()),
        ));
    }
    let given = given_axes("logsumexp", a, axes)?;
    let sorted = reduce_axes("logsumexp", a, &given)?;
    if !a.dtype().is_complex() && reduces_last_dim(a, &given) {
        let x = cast_to(a, at_least_float(a.dtype()))?;
        let out = Array::from_primitive(LogSumExp {}, vec![x])?;
        return finish_keepdims(out, &sorted, keepdims);
    }
    let maxval = max(a, &sorted, true)?;
    let shifted = super::subtract(a, &maxval)?;
    let out = pending::log(&sum(&pending::exp(&shifted)?, &sorted, keepdims)?)?;
    let m = if maxval.shape() == out.shape() {
        maxval.clone()
    } else {
        super::reshape(&maxval, out.shape())?
    };
    let out = super::add(&out, &m)?;
    let maxval = finish_keepdims(maxval, &sorted, keepdims)?;
    pending::where_(&pending::isinf(&maxval)?, &maxval, &out)
}

/// Softmax over `axes` (all when empty), MLX's `softmax(a, axes)` with
/// `precise=False`. Over the last axis it is one `Softmax` node giving a
/// float dtype; otherwise MLX's decomposition
/// `exp(a - max) / sum(exp(a - max))`, cast back to the input's dtype (MLX's
/// rule, odd as it is for integers).
pub fn softmax(a: &Array, axes: &[i32]) -> Result<Array> {
    softmax_with(a, axes, false)
}

/// [`softmax`] with MLX's `precise=True`: half types are computed in float32
/// (the single `Softmax` node keeps its input dtype; the decomposition over
/// other axes runs in float32 and is cast back).
pub fn softmax_precise(a: &Array, axes: &[i32]) -> Result<Array> {
    softmax_with(a, axes, true)
}

/// Both softmax flavours; `precise` is MLX's keyword of the same name.
fn softmax_with(a: &Array, axes: &[i32], precise: bool) -> Result<Array> {
    if a.size() == 0 {
        return Ok(a.clone());
    }
    let given = given_axes("softmax", a, axes)?;
    let complex = a.dtype().is_complex();
    if !complex && reduces_last_dim(a, &given) {
        let x = cast_to(a, at_least_float(a.dtype()))?;
        return Array::from_primitive(Softmax { precise }, vec![x]);
    }
    let sorted = reduce_axes("softmax", a, &given)?;
    let x = if precise && !complex {
        cast_to(a, Dtype::Float32)?
    } else {
        a.clone()
    };
    let a_max = super::stop_gradient(&max(&x, &sorted, true)?)?;
    let ex = pending::exp(&super::subtract(&x, &a_max)?)?;
    let s = sum(&ex, &sorted, true)?;
    // As in MLX, this form gives back the input's dtype: a bool or integer
    // input is shifted by its max in its own dtype and the result cast back.
    cast_to(&super::divide(&ex, &s)?, a.dtype())
}

/// Ops whose primitives belong to other families (element-wise math,
/// comparisons, select, flatten, scatter). They build the node through the
/// primitive registry from MLX's wire state, so this module compiles and
/// works whether or not those families are linked in; once they are, these
/// can become plain calls to their ops.
pub(in crate::ops) mod pending {
    use super::{at_least_float, broadcast_as, cast_to};
    use crate::primitive::{lookup, MlxReader, MlxWriter};
    use crate::{Array, Dtype, Error, Result};

    /// A node of the registered primitive `name` with MLX wire state `state`.
    pub fn node(
        name: &str,
        state: impl FnOnce(&mut MlxWriter),
        inputs: Vec<Array>,
    ) -> Result<Array> {
        let entry = lookup(name).map_err(|_| {
            Error::unsupported(
                name,
                format!("the {name} primitive is not registered in this build"),
            )
        })?;
        let mut w = MlxWriter::new();
        state(&mut w);
        let p = (entry.decode_mlx)(&mut MlxReader::new(&w.bytes, name))?;
        let mut outs = Array::from_primitive_multi(p, inputs)?;
        outs.truncate(1);
        outs.pop()
            .ok_or_else(|| Error::invalid(name, "the primitive has no output"))
    }

    fn float_unary(name: &str, a: &Array, state: impl FnOnce(&mut MlxWriter)) -> Result<Array> {
        node(name, state, vec![cast_to(a, at_least_float(a.dtype()))?])
    }

    pub fn exp(a: &Array) -> Result<Array> {
        float_unary("Exp", a, |_| {})
    }
    pub fn log(a: &Array) -> Result<Array> {
        // Log base: 0 two, 1 ten, 2 e.
        float_unary("Log", a, |w| w.i32(2))
    }
    pub fn sqrt(a: &Array) -> Result<Array> {
        float_unary("Sqrt", a, |w| w.bool(false))
    }
    pub fn square(a: &Array) -> Result<Array> {
        node("Square", |_| {}, vec![a.clone()])
    }
    pub fn real(a: &Array) -> Result<Array> {
        node("Real", |_| {}, vec![a.clone()])
    }
    pub fn conjugate(a: &Array) -> Result<Array> {
        if a.dtype() != Dtype::Complex64 {
            return Ok(a.clone());
        }
        node("Conjugate", |_| {}, vec![a.clone()])
    }
    pub fn equal(a: &Array, b: &Array) -> Result<Array> {
        let (a, b) = crate::ops::promote_and_broadcast("equal", a, b)?;
        node("Equal", |w| w.bool(false), vec![a, b])
    }
    pub fn logical_or(a: &Array, b: &Array) -> Result<Array> {
        let shape = crate::shape::broadcast_shapes("logical_or", a.shape(), b.shape())?;
        let a = broadcast_as(&cast_to(a, Dtype::Bool)?, &shape)?;
        let b = broadcast_as(&cast_to(b, Dtype::Bool)?, &shape)?;
        node("LogicalOr", |_| {}, vec![a, b])
    }
    /// `cond ? x : y` with MLX's casts and broadcasts.
    pub fn where_(cond: &Array, x: &Array, y: &Array) -> Result<Array> {
        let dtype = crate::promote_types(x.dtype(), y.dtype());
        let cond = cast_to(cond, Dtype::Bool)?;
        let (x, y) = (cast_to(x, dtype)?, cast_to(y, dtype)?);
        let s = crate::shape::broadcast_shapes("where", cond.shape(), x.shape())?;
        let s = crate::shape::broadcast_shapes("where", &s, y.shape())?;
        let ins = vec![
            broadcast_as(&cond, &s)?,
            broadcast_as(&x, &s)?,
            broadcast_as(&y, &s)?,
        ];
        node("Select", |_| {}, ins)
    }
    /// Infinite elements (false everywhere for integers and bool).
    pub fn isinf(a: &Array) -> Result<Array> {
        if !a.dtype().is_inexact() {
            return crate::ops::full(a.shape(), &Array::scalar(false), None);
        }
        let pos = equal(a, &Array::scalar_of(f64::INFINITY, a.dtype()))?;
        let neg = equal(a, &Array::scalar_of(f64::NEG_INFINITY, a.dtype()))?;
        logical_or(&pos, &neg)
    }
    /// All axes into one (a 0-d array becomes shape [1]; 1-d is unchanged).
    pub fn flatten(a: &Array) -> Result<Array> {
        match a.ndim() {
            0 => crate::ops::reshape(a, &[1]),
            1 => Ok(a.clone()),
            n => node(
                "Flatten",
                |w| {
                    w.i32(0);
                    w.i32(n as i32 - 1);
                },
                vec![a.clone()],
            ),
        }
    }
    /// Assignment scatter of `updates` into `a` at `indices` along `axes`.
    pub fn scatter(a: &Array, indices: &[Array], updates: &Array, axes: &[i32]) -> Result<Array> {
        let mut ins = vec![a.clone()];
        ins.extend(indices.iter().cloned());
        ins.push(updates.clone());
        node(
            "Scatter",
            |w| {
                // Scatter type 4 = None (plain assignment).
                w.i32(4);
                w.len(axes.len());
                for &ax in axes {
                    w.i32(ax);
                }
            },
            ins,
        )
    }
}
