//! Affine quantization ops: [`quantize`], [`dequantize`],
//! [`quantized_matmul`], with MLX's names, argument order and checks.

use super::{broadcast_as, cast_to};
use crate::primitives::quantized::{check_params, QuantizationMode, Quantize, QuantizedMatmul};
use crate::{promote_types, Array, Error, Result};

/// Quantizes `w` along its last axis in groups of `group_size` values with
/// `bits` bits each (affine mode): returns `(w_q, scales, biases)` where
/// `w_q` packs the integers into uint32 words exactly as MLX does.
pub fn quantize(w: &Array, group_size: i32, bits: i32) -> Result<(Array, Array, Array)> {
    check_params("quantize", QuantizationMode::Affine, group_size, bits)?;
    if !w.dtype().is_float() {
        return Err(Error::invalid(
            "quantize",
            format!(
                "only real floating types can be quantized, but w has type {}",
                w.dtype()
            ),
        ));
    }
    let p = Quantize {
        group_size,
        bits,
        mode: QuantizationMode::Affine,
        dequantize: false,
    };
    let mut outs = Array::from_primitive_multi(Box::new(p), vec![w.clone()])?.into_iter();
    match (outs.next(), outs.next(), outs.next()) {
        (Some(q), Some(s), Some(b)) => Ok((q, s, b)),
        _ => Err(Error::invalid("quantize", "expected three outputs")),
    }
}

/// The weights `scales · q + biases` from a quantized `w` (output dtype:
/// the promoted dtype of scales and biases).
pub fn dequantize(
    w: &Array,
    scales: &Array,
    biases: &Array,
    group_size: i32,
    bits: i32,
) -> Result<Array> {
    check_params("dequantize", QuantizationMode::Affine, group_size, bits)?;
    let dtype = promote_types(scales.dtype(), biases.dtype());
    let p = Quantize {
        group_size,
        bits,
        mode: QuantizationMode::Affine,
        dequantize: true,
    };
    Array::from_primitive(
        p,
        vec![w.clone(), cast_to(scales, dtype)?, cast_to(biases, dtype)?],
    )
}

/// `x @ dequantize(w).T` when `transpose` (the layout of a quantized
/// linear layer's weight, `(out, in)`), else `x @ dequantize(w)`. x, scales
/// and biases are promoted to one floating point dtype; batch axes of x
/// and w broadcast when both have them.
pub fn quantized_matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    transpose: bool,
    group_size: i32,
    bits: i32,
) -> Result<Array> {
    check_params(
        "quantized_matmul",
        QuantizationMode::Affine,
        group_size,
        bits,
    )?;
    let dtype = promote_types(x.dtype(), promote_types(scales.dtype(), biases.dtype()));
    if !dtype.is_float() {
        return Err(Error::invalid(
            "quantized_matmul",
            format!("only real floating types are supported, found x of type {dtype}"),
        ));
    }
    let mut inputs = vec![
        cast_to(x, dtype)?,
        w.clone(),
        cast_to(scales, dtype)?,
        cast_to(biases, dtype)?,
    ];
    if x.ndim() > 2 && w.ndim() > 2 {
        let (xn, wn) = (x.ndim(), w.ndim());
        let batch = super::broadcast_shapes(
            "quantized_matmul",
            &x.shape()[..xn - 2],
            &w.shape()[..wn - 2],
        )?;
        for a in inputs.iter_mut() {
            let mut shape = batch.clone();
            shape.extend_from_slice(&a.shape()[a.ndim().max(2) - 2..]);
            *a = broadcast_as(a, &shape)?;
        }
    }
    let p = QuantizedMatmul {
        group_size,
        bits,
        mode: QuantizationMode::Affine,
        transpose,
    };
    Array::from_primitive(p, inputs)
}

/// Integer indices as uint32, or every batch entry of `a` (MLX's default):
/// `arange(prod(batch)).reshape(batch)`, recorded as a constant.
fn indices_or_default(idx: Option<&Array>, a: &Array) -> Result<Array> {
    match idx {
        Some(i) if !i.dtype().is_integer() => Err(Error::invalid(
            "gather_qmm",
            format!("indices must be integral, found {}", i.dtype()),
        )),
        Some(i) => cast_to(i, crate::Dtype::Uint32),
        None => {
            if a.ndim() < 2 {
                return Err(Error::invalid(
                    "gather_qmm",
                    format!(
                        "input must have at least two dimensions, found shape {:?}",
                        a.shape()
                    ),
                ));
            }
            let batch = &a.shape()[..a.ndim() - 2];
            let n: i32 = batch.iter().product();
            Array::from_slice(&(0..n as u32).collect::<Vec<u32>>(), batch)
        }
    }
}

/// [`quantized_matmul`] of gathered operands: for every position of the
/// (broadcast) index arrays, `x[lhs] @ dequantize(w[rhs])(.T)`, indexing
/// the batch axes (flattened) of x and w. Missing indices default to every
/// batch entry in order; with neither this is `quantized_matmul`.
#[allow(clippy::too_many_arguments)]
pub fn gather_qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    transpose: bool,
    group_size: i32,
    bits: i32,
    sorted_indices: bool,
) -> Result<Array> {
    if lhs_indices.is_none() && rhs_indices.is_none() {
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits);
    }
    check_params("gather_qmm", QuantizationMode::Affine, group_size, bits)?;
    let dtype = promote_types(x.dtype(), promote_types(scales.dtype(), biases.dtype()));
    if !dtype.is_float() {
        return Err(Error::invalid(
            "gather_qmm",
            format!("only real floating types are supported, found x of type {dtype}"),
        ));
    }
    let lhs = indices_or_default(lhs_indices, x)?;
    let rhs = indices_or_default(rhs_indices, w)?;
    let shape = super::broadcast_shapes("gather_qmm", lhs.shape(), rhs.shape())?;
    let p = crate::primitives::quantized::GatherQMM {
        group_size,
        bits,
        mode: QuantizationMode::Affine,
        transpose,
        left_sorted: sorted_indices && rhs_indices.is_none(),
        right_sorted: sorted_indices && lhs_indices.is_none(),
    };
    let inputs = vec![
        cast_to(x, dtype)?,
        w.clone(),
        cast_to(scales, dtype)?,
        cast_to(biases, dtype)?,
        broadcast_as(&lhs, &shape)?,
        broadcast_as(&rhs, &shape)?,
    ];
    Array::from_primitive(p, inputs)
}
