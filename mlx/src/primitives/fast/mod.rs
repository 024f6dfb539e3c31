//! The fused primitives of `mlx::fast`, one file each with their state,
//! CPU kernel, fallback graph, derivatives and op: [`RMSNorm`] (and its
//! backward [`RMSNormVJP`]), [`LayerNorm`] (and [`LayerNormVJP`]),
//! [`RoPE`] and [`ScaledDotProductAttention`]. MLX's leading
//! fallback-function member writes no bytes, so it has no field; the
//! fallback is [`Primitive::fallback`](crate::Primitive::fallback). MLX's
//! CPU build never creates these primitives (it records the fallbacks);
//! files from its GPU build do, and so do our ops.
//!
//! This module holds what the four share: input checks, the dtype rules of
//! the ops and the helpers of the derivatives (statistics in float32, or
//! float64 for float64 inputs, as the forward kernels do).

mod layer_norm;
mod rms_norm;
mod rope;
mod sdpa;

pub use layer_norm::{layer_norm, LayerNorm, LayerNormVJP};
pub use rms_norm::{rms_norm, RMSNorm, RMSNormVJP};
pub use rope::{rope, rope_inverse, RoPE, RopeOffset};
pub use sdpa::{
    scaled_dot_product_attention, scaled_dot_product_attention_sinks, Mask,
    ScaledDotProductAttention,
};

use crate::ops::{self as o, cast_to};
use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{dispatch_dtype, promote_types, Array, Buffer, Data, Dtype, Element, Error, Result};

// ---- input checks of the primitives

/// A float input plus a parameter that is 0-d or a vector of the last axis.
fn check_param(name: &str, what: &str, x: &Spec, p: &Spec) -> Result<()> {
    let d = x.shape.last().copied().unwrap_or(0);
    let ok_shape = p.shape.is_empty() || p.shape == [d] || p.shape == [1];
    if p.dtype != x.dtype || !ok_shape {
        return Err(Error::invalid(
            name,
            format!(
                "{what} must be 0-d or have shape [{d}] and dtype {}, found shape {:?} and dtype {}",
                x.dtype, p.shape, p.dtype
            ),
        ));
    }
    Ok(())
}

fn check_float_rows(name: &str, x: &Spec) -> Result<()> {
    if x.shape.is_empty() || !x.dtype.is_float() {
        return Err(Error::invalid(
            name,
            format!(
                "input must be a floating point array with at least 1 dimension, found shape {:?} and dtype {}",
                x.shape, x.dtype
            ),
        ));
    }
    Ok(())
}

fn last_dim(x: &Array) -> usize {
    x.shape().last().map_or(1, |&d| d as usize)
}

fn arity(name: &str, inputs: &[Array], n: usize) -> Result<()> {
    if inputs.len() < n {
        return Err(Error::invalid(
            name,
            format!("expected at least {n} inputs, found {}", inputs.len()),
        ));
    }
    Ok(())
}

// ---- dtype rules of the ops

/// The dtype of the result: `x`'s, promoted with the parameters given.
fn norm_type(op: &str, x: &Array, params: &[Option<&Array>]) -> Result<Dtype> {
    if x.ndim() == 0 {
        return Err(Error::invalid(
            op,
            "input must have at least 1 dimension, found a 0-d array",
        ));
    }
    let d = x.shape()[x.ndim() - 1];
    let mut t = x.dtype();
    for (p, what) in params.iter().zip(["weight", "bias"]) {
        if let Some(p) = p {
            if p.ndim() != 1 || p.shape()[0] != d {
                return Err(Error::invalid(
                    op,
                    format!(
                        "{what} must have 1 dimension of size {d} (the last dimension of x), found shape {:?}",
                        p.shape()
                    ),
                ));
            }
            t = promote_types(t, p.dtype());
        }
    }
    if !t.is_float() {
        return Err(Error::invalid(
            op,
            format!("unsupported dtype {t}; expected a floating point type"),
        ));
    }
    Ok(t)
}

/// A parameter cast to `t`, or a 0-d `default` of `t` when absent.
fn param_or(p: Option<&Array>, t: Dtype, default: f64) -> Result<Array> {
    match p {
        Some(p) => cast_to(p, t),
        None => Ok(Array::scalar_of(default, t)),
    }
}

// ---- helpers of the derivatives

/// The dtype the backward works in.
fn work_dtype(d: Dtype) -> Dtype {
    if d == Dtype::Float64 {
        d
    } else {
        Dtype::Float32
    }
}

/// `a` in the working dtype.
fn up(a: &Array) -> Result<Array> {
    o::cast_to(a, work_dtype(a.dtype()))
}

fn scalar(v: f64, like: &Array) -> Array {
    Array::scalar_of(v, like.dtype())
}

/// Picks the requested cotangents out of all of them, cast back to the
/// primals' dtypes.
fn select(all: Vec<Array>, primals: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
    argnums
        .iter()
        .map(|&i| o::cast_to(&all[i], primals[i].dtype()))
        .collect()
}

/// Mean over the last axis, kept.
fn row_mean(a: &Array) -> Result<Array> {
    o::mean(a, &[-1], true)
}

/// The tangent of input `i` (zeros when it has none), in the working dtype.
fn tangent(primals: &[Array], tangents: &[Array], argnums: &[usize], i: usize) -> Result<Array> {
    match argnums.iter().position(|&a| a == i) {
        Some(j) => up(&tangents[j]),
        None => o::zeros_like(&up(&primals[i])?),
    }
}

// ---- helpers of the backward kernels (RMSNormVJP, LayerNormVJP)

/// Checks x, the parameters (0-d or (d,)) and the cotangent (x's shape).
fn vjp_check(op: &str, inputs: &[Spec], params: usize) -> Result<()> {
    if inputs.len() != params + 2 {
        return Err(Error::invalid(
            op,
            format!("expected {} inputs, found {}", params + 2, inputs.len()),
        ));
    }
    let x = &inputs[0];
    let g = &inputs[params + 1];
    if x.shape.is_empty() || !x.dtype.is_float() {
        return Err(Error::invalid(
            op,
            format!(
                "x must be a floating point array with at least 1 dimension, found {} {:?}",
                x.dtype, x.shape
            ),
        ));
    }
    if g.shape != x.shape {
        return Err(Error::invalid(
            op,
            format!(
                "the cotangent's shape {:?} must equal x's {:?}",
                g.shape, x.shape
            ),
        ));
    }
    let d = *x.shape.last().unwrap_or(&1);
    for p in &inputs[1..=params] {
        if !(p.shape.is_empty() || p.shape == [d]) || !p.dtype.is_float() {
            return Err(Error::invalid(
                op,
                format!(
                    "parameters must be floating point, 0-d or of shape [{d}], found {} {:?}",
                    p.dtype, p.shape
                ),
            ));
        }
    }
    Ok(())
}

/// An input's elements (broadcast to `shape`) as f64, row-major.
fn values(a: &Array, shape: &[i32]) -> Result<Vec<f64>> {
    let v = broadcast_view(a, shape)?;
    let d = v.data()?;
    Ok(dispatch_dtype!(a.dtype(), T => {
        crate::backend::cpu::copy::to_contiguous_vec::<T>(&d, shape)
            .into_iter()
            .map(Element::to_f64)
            .collect()
    }))
}

/// Row-major data of `spec` from f64 values.
fn vjp_output(v: &[f64], spec: &Spec) -> Data {
    let buf = dispatch_dtype!(spec.dtype, T => {
        Buffer::from_slice(&v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>())
    });
    Data::contiguous(buf, &spec.shape)
}

/// Sum over rows of per-element terms, or zeros for a 0-d parameter.
fn param_grad(param: &Spec, d: usize, terms: &[f64]) -> Vec<f64> {
    if param.shape.is_empty() {
        return vec![0.0];
    }
    let mut acc = vec![0.0; d];
    for row in terms.chunks(d) {
        for (a, t) in acc.iter_mut().zip(row) {
            *a += t;
        }
    }
    acc
}
