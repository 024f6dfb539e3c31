//! `mlx::fast`: fused normalisations, rotary embeddings and attention.
//!
//! Unlike MLX's CPU build (which records these as their decompositions),
//! each call here builds one fused primitive (`RMSNorm`, `LayerNorm`,
//! `RoPE`, `ScaledDotProductAttention`) with MLX's state, so exported
//! graphs look like those of MLX's GPU build, and the CPU runs one kernel.

use crate::ops::{astype, broadcast_to, cast_to};
use crate::primitives::fast::{LayerNorm, RMSNorm, RoPE, ScaledDotProductAttention};
use crate::{promote_types, Array, Dtype, Error, Result};

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

/// Root-mean-square normalisation over the last axis:
/// `x / sqrt(mean(x²) + eps) · weight` (statistics in float32).
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let t = norm_type("rms_norm", x, &[weight])?;
    let inputs = vec![cast_to(x, t)?, param_or(weight, t, 1.0)?];
    Array::from_primitive(RMSNorm { eps }, inputs)
}

/// Layer normalisation over the last axis:
/// `(x − mean) / sqrt(var + eps) · weight + bias` (statistics in float32).
pub fn layer_norm(
    x: &Array,
    weight: Option<&Array>,
    bias: Option<&Array>,
    eps: f32,
) -> Result<Array> {
    let t = norm_type("layer_norm", x, &[weight, bias])?;
    let inputs = vec![
        cast_to(x, t)?,
        param_or(weight, t, 1.0)?,
        param_or(bias, t, 0.0)?,
    ];
    Array::from_primitive(LayerNorm { eps }, inputs)
}

/// The position offset of [`rope`]: one integer, or an integer array that
/// is 0-d or has one entry per batch element (axis 0 of x).
#[derive(Clone, Debug)]
pub enum RopeOffset {
    /// The same offset for every batch element.
    Int(i32),
    /// An integer array (0-d or (B,)).
    Array(Array),
}

impl From<i32> for RopeOffset {
    fn from(v: i32) -> Self {
        RopeOffset::Int(v)
    }
}

impl From<&Array> for RopeOffset {
    fn from(a: &Array) -> Self {
        RopeOffset::Array(a.clone())
    }
}

impl From<Array> for RopeOffset {
    fn from(a: Array) -> Self {
        RopeOffset::Array(a)
    }
}

/// Rotary position embedding of the first `dims` features of `x` (at least
/// 3-D; positions along axis −2 start at `offset`). Exactly one of `base`
/// (frequencies `base^(−2i/dims)`) and `freqs` (given frequencies) is set.
/// `traditional` rotates interleaved pairs instead of the two halves.
pub fn rope(
    x: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: impl Into<RopeOffset>,
    freqs: Option<&Array>,
) -> Result<Array> {
    rope_impl(
        x,
        dims,
        traditional,
        base,
        scale,
        offset.into(),
        freqs,
        true,
    )
}

/// The inverse rotation of [`rope`] (MLX's `forward = false`, used by its gradient).
pub fn rope_inverse(
    x: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: impl Into<RopeOffset>,
    freqs: Option<&Array>,
) -> Result<Array> {
    rope_impl(
        x,
        dims,
        traditional,
        base,
        scale,
        offset.into(),
        freqs,
        false,
    )
}

#[allow(clippy::too_many_arguments)]
fn rope_impl(
    x: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: RopeOffset,
    freqs: Option<&Array>,
    forward: bool,
) -> Result<Array> {
    let offset = match offset {
        RopeOffset::Int(v) => Array::scalar(v),
        RopeOffset::Array(a) => {
            if !a.dtype().is_integer() {
                return Err(Error::invalid(
                    "rope",
                    format!("offset must be an integer, found dtype {}", a.dtype()),
                ));
            }
            if a.dtype().size() != 4 {
                astype(&a, Dtype::Int32)?
            } else {
                a
            }
        }
    };
    let mut inputs = vec![x.clone(), offset];
    let base = match (base, freqs) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "rope",
                "only one of base or freqs can have a value",
            ))
        }
        (None, None) => return Err(Error::invalid("rope", "neither base nor freqs has a value")),
        (Some(b), None) => b,
        (None, Some(f)) => {
            inputs.push(cast_to(f, Dtype::Float32)?);
            1.0
        }
    };
    let p = RoPE {
        dims,
        traditional,
        base,
        scale,
        forward,
    };
    Array::from_primitive(p, inputs)
}

/// The mask of [`scaled_dot_product_attention`].
#[derive(Clone, Copy, Debug)]
pub enum Mask<'a> {
    /// Query i attends to keys j ≤ i + (Lk − Lq) (aligned at the end).
    Causal,
    /// A bool mask (keep where true) or an additive mask, broadcastable to
    /// (B, Hq, Lq, Lk).
    Array(&'a Array),
}

/// Multi-head attention `softmax(scale · q kᵀ + mask) v` with q
/// (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv); grouped-query
/// attention when Hkv divides Hq. Softmax runs in float32.
pub fn scaled_dot_product_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: Option<Mask<'_>>,
) -> Result<Array> {
    scaled_dot_product_attention_sinks(q, k, v, scale, mask, None)
}

/// [`scaled_dot_product_attention`] with attention sinks: one logit per
/// query head (shape (Hq,)) that joins each softmax but carries no value.
pub fn scaled_dot_product_attention_sinks(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: Option<Mask<'_>>,
    sinks: Option<&Array>,
) -> Result<Array> {
    let op = "scaled_dot_product_attention";
    for (a, what) in [(q, "q"), (k, "k"), (v, "v")] {
        if a.ndim() != 4 {
            return Err(Error::invalid(
                op,
                format!("{what} with shape {:?} expected to be rank 4", a.shape()),
            ));
        }
    }
    let t = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
    if !t.is_float() {
        return Err(Error::invalid(
            op,
            format!("unsupported dtype {t}; expected a floating point type"),
        ));
    }
    let mut inputs = vec![cast_to(q, t)?, cast_to(k, t)?, cast_to(v, t)?];
    let mut do_causal = false;
    match mask {
        Some(Mask::Causal) => do_causal = true,
        Some(Mask::Array(m)) => {
            if m.ndim() > 4 {
                return Err(Error::invalid(
                    op,
                    format!(
                        "the mask with shape {:?} expected to have at most rank 4",
                        m.shape()
                    ),
                ));
            }
            let m = if m.dtype() == Dtype::Bool {
                m.clone()
            } else if promote_types(m.dtype(), t) != t {
                return Err(Error::invalid(
                    op,
                    format!(
                        "mask type {} must promote to the output type {t}",
                        m.dtype()
                    ),
                ));
            } else {
                cast_to(m, t)?
            };
            let mut shape = q.shape().to_vec();
            shape[3] = k.shape()[2];
            inputs.push(broadcast_to(&m, &shape)?);
        }
        None => {}
    }
    if let Some(s) = sinks {
        if promote_types(s.dtype(), t) != t {
            return Err(Error::invalid(
                op,
                format!(
                    "type of sinks {} must promote to the output type {t}",
                    s.dtype()
                ),
            ));
        }
        inputs.push(cast_to(s, t)?);
    }
    let p = ScaledDotProductAttention {
        scale,
        do_causal,
        has_sinks: sinks.is_some(),
        output_logsumexp: false,
        force_fused: false,
    };
    Array::from_primitive(p, inputs)
}
