//! Options structs with `Default` for the ops with many arguments
//! (convolutions, quantized ops), so a call names only what differs from
//! MLX's defaults:
//!
//! ```
//! use mlx::ops::{self, ConvOptions};
//! let x = ops::ones(&[1, 8, 8, 3], mlx::Dtype::Float32).unwrap();
//! let w = ops::ones(&[4, 3, 3, 3], mlx::Dtype::Float32).unwrap();
//! let y = ops::conv_nd(&x, &w, &ConvOptions { padding: 1, ..Default::default() }).unwrap();
//! assert_eq!(y.shape(), &[1, 8, 8, 4]);
//! ```
//!
//! Each `*_with` function is the positional op of the same family called
//! with the struct's fields; the positional ops stay (they are MLX's
//! signatures).

use super::{
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, dequantize,
    gather_qmm, quantize, quantized_matmul,
};
use crate::{Array, Error, Result};

/// Convolution options, the same for every spatial axis (MLX's integer
/// form of each keyword; use [`super::conv_general`] for per-axis values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvOptions {
    /// Step of the kernel over the input (MLX `stride`, default 1).
    pub stride: i32,
    /// Zeros added on both sides of each spatial axis (default 0).
    pub padding: i32,
    /// Spacing of the kernel's taps (MLX `dilation`, default 1).
    pub dilation: i32,
    /// Extra size on one side of a transposed convolution's output (default 0;
    /// ignored by the forward convolution).
    pub output_padding: i32,
    /// Channel groups (default 1).
    pub groups: i32,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: 1,
            padding: 0,
            dilation: 1,
            output_padding: 0,
            groups: 1,
        }
    }
}

/// The number of spatial axes of a channels-last `input` (1, 2 or 3).
fn spatial_dims(op: &str, input: &Array) -> Result<usize> {
    match input.ndim() {
        3..=5 => Ok(input.ndim() - 2),
        n => Err(Error::invalid(
            op,
            format!(
                "expected a 3-, 4- or 5-dimensional input (batch, spatial..., channels), found {n} dimensions (shape {:?})",
                input.shape()
            ),
        )),
    }
}

/// [`conv1d`], [`conv2d`] or [`conv3d`], chosen by `input`'s rank.
pub fn conv_nd(input: &Array, weight: &Array, o: &ConvOptions) -> Result<Array> {
    let (s, p, d, g) = (o.stride, o.padding, o.dilation, o.groups);
    match spatial_dims("conv_nd", input)? {
        1 => conv1d(input, weight, s, p, d, g),
        2 => conv2d(input, weight, (s, s), (p, p), (d, d), g),
        _ => conv3d(input, weight, (s, s, s), (p, p, p), (d, d, d), g),
    }
}

/// [`conv_transpose1d`], [`conv_transpose2d`] or [`conv_transpose3d`], chosen
/// by `input`'s rank.
pub fn conv_transpose_nd(input: &Array, weight: &Array, o: &ConvOptions) -> Result<Array> {
    let (s, p, d, op, g) = (o.stride, o.padding, o.dilation, o.output_padding, o.groups);
    match spatial_dims("conv_transpose_nd", input)? {
        1 => conv_transpose1d(input, weight, s, p, d, op, g),
        2 => conv_transpose2d(input, weight, (s, s), (p, p), (d, d), (op, op), g),
        _ => conv_transpose3d(
            input,
            weight,
            (s, s, s),
            (p, p, p),
            (d, d, d),
            (op, op, op),
            g,
        ),
    }
}

/// Affine quantization options (MLX's defaults: groups of 64, 4 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantizeOptions {
    /// Elements sharing one scale and bias along the last axis.
    pub group_size: i32,
    /// Bits per quantized element.
    pub bits: i32,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        QuantizeOptions {
            group_size: 64,
            bits: 4,
        }
    }
}

/// [`quantize`] with `o`'s group size and bits: `(w_q, scales, biases)`.
pub fn quantize_with(w: &Array, o: &QuantizeOptions) -> Result<(Array, Array, Array)> {
    quantize(w, o.group_size, o.bits)
}

/// [`dequantize`] with `o`'s group size and bits.
pub fn dequantize_with(
    w: &Array,
    scales: &Array,
    biases: &Array,
    o: &QuantizeOptions,
) -> Result<Array> {
    dequantize(w, scales, biases, o.group_size, o.bits)
}

/// [`quantized_matmul`] with `w` transposed (MLX's default, as a linear
/// layer stores it) and `o`'s group size and bits.
pub fn quantized_matmul_with(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    o: &QuantizeOptions,
) -> Result<Array> {
    quantized_matmul(x, w, scales, biases, true, o.group_size, o.bits)
}

/// The optional arguments of [`gather_qmm`] (MLX's defaults).
#[derive(Clone, Copy, Debug, Default)]
pub struct GatherQmmOptions<'a> {
    pub lhs_indices: Option<&'a Array>,
    pub rhs_indices: Option<&'a Array>,
    /// Multiply by `w` untransposed (MLX's default is `transpose=True`).
    pub no_transpose: bool,
    pub quantization: QuantizeOptions,
    pub sorted_indices: bool,
}

/// [`gather_qmm`] with its optional arguments in a struct.
pub fn gather_qmm_with(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: &Array,
    o: &GatherQmmOptions<'_>,
) -> Result<Array> {
    gather_qmm(
        x,
        w,
        scales,
        biases,
        o.lhs_indices,
        o.rhs_indices,
        !o.no_transpose,
        o.quantization.group_size,
        o.quantization.bits,
        o.sorted_indices,
    )
}
