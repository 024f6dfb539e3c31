//! Convolutions with MLX's names and argument order: `conv1d/2d/3d`,
//! `conv_transpose1d/2d/3d` and `conv_general`, all channels last
//! (input (N, spatial…, C_in), weight (C_out, kernel…, C_in / groups)).

use super::cast_to;
use crate::primitives::conv::Convolution;
use crate::{promote_types, Array, Error, Result};

/// MLX's input checks: float dtype, ranks, channel and group counts.
fn conv_checks(x: &Array, w: &Array, nd: usize, groups: i32) -> Result<()> {
    let err = |m: String| Err(Error::invalid("conv", m));
    if !x.dtype().is_float() {
        return err(format!(
            "input dtype {} is not supported, convolution needs floating point",
            x.dtype()
        ));
    }
    if x.ndim() != nd + 2 {
        return err(format!(
            "input with shape {:?} has {} dimensions; {nd}-D convolution expects {} \
             as [N, ..., C_in]",
            x.shape(),
            x.ndim(),
            nd + 2
        ));
    }
    if w.ndim() != nd + 2 {
        return err(format!(
            "weight with shape {:?} has {} dimensions; {nd}-D convolution expects {} \
             as [C_out, ..., C_in]",
            w.shape(),
            w.ndim(),
            nd + 2
        ));
    }
    if groups <= 0 {
        return err(format!("groups must be positive, found {groups}"));
    }
    let c_in = x.shape()[nd + 1];
    if c_in % groups != 0 {
        return err(format!(
            "the input channels must be divisible by the number of groups, found input \
             {:?} and {groups} groups",
            x.shape()
        ));
    }
    if groups > 1 && w.shape()[0] % groups != 0 {
        return err(format!(
            "the output channels must be divisible by the number of groups, found {} \
             output channels and {groups} groups",
            w.shape()[0]
        ));
    }
    if c_in != groups * w.shape()[nd + 1] {
        return err(format!(
            "with {groups} groups the weight {:?} expects {} input channels, but the \
             input {:?} has {c_in}",
            w.shape(),
            groups * w.shape()[nd + 1],
            x.shape()
        ));
    }
    Ok(())
}

/// A per-axis parameter: empty → `default`, one value → repeated.
fn per_axis(v: &[i32], nd: usize, default: i32) -> Vec<i32> {
    match v.len() {
        0 => vec![default; nd],
        1 => vec![v[0]; nd],
        _ => v.to_vec(),
    }
}

/// The general convolution: every parameter per spatial axis (an empty
/// slice takes the default, one value applies to every axis). Negative
/// padding is not supported yet (MLX slices the input for it).
#[allow(clippy::too_many_arguments)]
pub fn conv_general(
    input: &Array,
    weight: &Array,
    stride: &[i32],
    padding_lo: &[i32],
    padding_hi: &[i32],
    kernel_dilation: &[i32],
    input_dilation: &[i32],
    groups: i32,
    flip: bool,
) -> Result<Array> {
    if groups != 1 && input.ndim() != 3 && input.ndim() != 4 {
        return Err(Error::invalid(
            "conv",
            format!(
                "groups != 1 is only supported for 1-D and 2-D convolutions, found input {:?}",
                input.shape()
            ),
        ));
    }
    let nd = input.ndim().wrapping_sub(2);
    if !(1..=3).contains(&nd) {
        return Err(Error::invalid(
            "conv",
            format!(
                "only 1 to 3 spatial dimensions are supported; input {:?} must be [N, ..., C_in]",
                input.shape()
            ),
        ));
    }
    conv_checks(input, weight, nd, groups)?;
    let dtype = promote_types(input.dtype(), weight.dtype());
    let x = cast_to(input, dtype)?;
    let w = cast_to(weight, dtype)?;
    let p = Convolution {
        kernel_strides: per_axis(stride, nd, 1),
        padding_lo: per_axis(padding_lo, nd, 0),
        padding_hi: per_axis(padding_hi, nd, 0),
        kernel_dilation: per_axis(kernel_dilation, nd, 1),
        input_dilation: per_axis(input_dilation, nd, 1),
        groups,
        flip,
    };
    if p.padding_lo.iter().chain(&p.padding_hi).any(|&v| v < 0) {
        return Err(Error::invalid(
            "conv",
            format!(
                "negative padding {:?} | {:?} is not supported yet",
                p.padding_lo, p.padding_hi
            ),
        ));
    }
    Array::from_primitive(p, vec![x, w])
}

/// 1-D convolution: input (N, L, C_in), weight (C_out, K, C_in / groups).
pub fn conv1d(
    input: &Array,
    weight: &Array,
    stride: i32,
    padding: i32,
    dilation: i32,
    groups: i32,
) -> Result<Array> {
    conv_general(
        input,
        weight,
        &[stride],
        &[padding],
        &[padding],
        &[dilation],
        &[1],
        groups,
        false,
    )
}

/// 2-D convolution: input (N, H, W, C_in), weight (C_out, KH, KW, C_in / groups).
pub fn conv2d(
    input: &Array,
    weight: &Array,
    stride: (i32, i32),
    padding: (i32, i32),
    dilation: (i32, i32),
    groups: i32,
) -> Result<Array> {
    conv_general(
        input,
        weight,
        &[stride.0, stride.1],
        &[padding.0, padding.1],
        &[padding.0, padding.1],
        &[dilation.0, dilation.1],
        &[1, 1],
        groups,
        false,
    )
}

/// 3-D convolution: input (N, D, H, W, C_in), weight (C_out, KD, KH, KW, C_in).
pub fn conv3d(
    input: &Array,
    weight: &Array,
    stride: (i32, i32, i32),
    padding: (i32, i32, i32),
    dilation: (i32, i32, i32),
    groups: i32,
) -> Result<Array> {
    let t = |v: (i32, i32, i32)| [v.0, v.1, v.2];
    conv_general(
        input,
        weight,
        &t(stride),
        &t(padding),
        &t(padding),
        &t(dilation),
        &[1, 1, 1],
        groups,
        false,
    )
}

/// Transposed convolution as MLX builds it: a flipped convolution of the
/// input dilated by `stride`, padded to give the transposed output size.
fn conv_transpose_general(
    input: &Array,
    weight: &Array,
    stride: &[i32],
    padding: &[i32],
    dilation: &[i32],
    output_padding: &[i32],
    groups: i32,
) -> Result<Array> {
    let nd = stride.len();
    conv_checks(input, weight, nd, groups)?;
    let mut lo = Vec::with_capacity(nd);
    let mut hi = Vec::with_capacity(nd);
    for i in 0..nd {
        let k = weight.shape()[1 + i] as i64;
        let wt_size = 1 + dilation[i] as i64 * (k - 1);
        lo.push(to_i32(wt_size - padding[i] as i64 - 1)?);
        let n_in = input.shape()[1 + i] as i64;
        let conv_out = (n_in - 1) * stride[i] as i64 - 2 * padding[i] as i64
            + dilation[i] as i64 * (k - 1)
            + 1;
        let out_size = 1 + stride[i] as i64 * (n_in - 1);
        hi.push(to_i32(
            conv_out - out_size + padding[i] as i64 + output_padding[i] as i64,
        )?);
    }
    conv_general(
        input,
        weight,
        &vec![1; nd],
        &lo,
        &hi,
        dilation,
        stride,
        groups,
        true,
    )
}

fn to_i32(v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::invalid("conv", format!("size {v} overflows int32")))
}

/// 1-D transposed convolution.
pub fn conv_transpose1d(
    input: &Array,
    weight: &Array,
    stride: i32,
    padding: i32,
    dilation: i32,
    output_padding: i32,
    groups: i32,
) -> Result<Array> {
    conv_transpose_general(
        input,
        weight,
        &[stride],
        &[padding],
        &[dilation],
        &[output_padding],
        groups,
    )
}

/// 2-D transposed convolution.
pub fn conv_transpose2d(
    input: &Array,
    weight: &Array,
    stride: (i32, i32),
    padding: (i32, i32),
    dilation: (i32, i32),
    output_padding: (i32, i32),
    groups: i32,
) -> Result<Array> {
    let t = |v: (i32, i32)| [v.0, v.1];
    conv_transpose_general(
        input,
        weight,
        &t(stride),
        &t(padding),
        &t(dilation),
        &t(output_padding),
        groups,
    )
}

/// 3-D transposed convolution.
pub fn conv_transpose3d(
    input: &Array,
    weight: &Array,
    stride: (i32, i32, i32),
    padding: (i32, i32, i32),
    dilation: (i32, i32, i32),
    output_padding: (i32, i32, i32),
    groups: i32,
) -> Result<Array> {
    let t = |v: (i32, i32, i32)| [v.0, v.1, v.2];
    conv_transpose_general(
        input,
        weight,
        &t(stride),
        &t(padding),
        &t(dilation),
        &t(output_padding),
        groups,
    )
}
