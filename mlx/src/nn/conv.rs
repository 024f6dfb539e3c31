//! [`Conv1d`] and [`Conv2d`]: channels-last convolutions (NLC / NHWC) as
//! MLX's `nn.Conv1d` / `nn.Conv2d`.

use super::linear::uniform_init;
use super::Module;
use crate::ops::{add, conv1d, conv2d, zeros};
use crate::{Array, Dtype, Error, Result};

/// Stride, padding, dilation (one value per spatial axis, of type `S`),
/// groups and bias of a convolution layer. The defaults are MLX's: stride
/// 1, padding 0, dilation 1, one group, with bias.
#[derive(Clone, Copy, Debug)]
pub struct ConvOptions<S> {
    /// Step between applications of the filter.
    pub stride: S,
    /// Zeros added on both sides of each spatial axis.
    pub padding: S,
    /// Spacing between kernel taps.
    pub dilation: S,
    /// Number of channel groups (input and output channels divisible by it).
    pub groups: i32,
    /// Whether the layer adds a learned bias (initialised to zeros).
    pub bias: bool,
}

impl Default for ConvOptions<i32> {
    fn default() -> Self {
        ConvOptions {
            stride: 1,
            padding: 0,
            dilation: 1,
            groups: 1,
            bias: true,
        }
    }
}

impl Default for ConvOptions<(i32, i32)> {
    fn default() -> Self {
        ConvOptions {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
            bias: true,
        }
    }
}

/// The weight (drawn as MLX does: `U(-k, k)`, `k = 1/√(C_in/groups · kernel
/// size)`) and the optional zero bias.
fn init(
    op: &str,
    in_channels: i32,
    out_channels: i32,
    kernel: &[i32],
    groups: i32,
    bias: bool,
) -> Result<(Array, Option<Array>)> {
    if groups <= 0 || in_channels % groups != 0 {
        return Err(Error::invalid(
            op,
            format!(
                "the number of input channels ({in_channels}) must be divisible by the number of groups ({groups})"
            ),
        ));
    }
    let fan_in = (in_channels / groups) as f64 * kernel.iter().map(|&k| k as f64).product::<f64>();
    let mut shape = vec![out_channels];
    shape.extend_from_slice(kernel);
    shape.push(in_channels / groups);
    let weight = uniform_init(op, (1.0 / fan_in).sqrt(), &shape)?;
    let bias = if bias {
        Some(zeros(&[out_channels], Dtype::Float32)?)
    } else {
        None
    };
    Ok((weight, bias))
}

fn visit(w: &Array, b: &Option<Array>, f: &mut dyn FnMut(&str, &Array)) {
    f("weight", w);
    if let Some(b) = b {
        f("bias", b);
    }
}

fn visit_mut(w: &mut Array, b: &mut Option<Array>, f: &mut dyn FnMut(&str, &mut Array)) {
    f("weight", w);
    if let Some(b) = b {
        f("bias", b);
    }
}

fn add_bias(y: Array, b: &Option<Array>) -> Result<Array> {
    match b {
        Some(b) => add(&y, b),
        None => Ok(y),
    }
}

/// 1-D convolution over (N, L, C_in) inputs.
#[derive(Clone, Debug)]
pub struct Conv1d {
    /// (C_out, kernel_size, C_in / groups).
    pub weight: Array,
    /// (C_out,), when the layer has a bias.
    pub bias: Option<Array>,
    /// Stride, padding, dilation and groups (`bias` is ignored after construction).
    pub options: ConvOptions<i32>,
}

impl Conv1d {
    /// A layer with MLX's initialisation from the global random key.
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: i32,
        options: ConvOptions<i32>,
    ) -> Result<Conv1d> {
        let (weight, bias) = init(
            "Conv1d",
            in_channels,
            out_channels,
            &[kernel_size],
            options.groups,
            options.bias,
        )?;
        Ok(Conv1d {
            weight,
            bias,
            options,
        })
    }
}

impl Module for Conv1d {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        visit(&self.weight, &self.bias, f);
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        visit_mut(&mut self.weight, &mut self.bias, f);
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        let o = &self.options;
        let y = conv1d(x, &self.weight, o.stride, o.padding, o.dilation, o.groups)?;
        add_bias(y, &self.bias)
    }
}

/// 2-D convolution over (N, H, W, C_in) inputs.
#[derive(Clone, Debug)]
pub struct Conv2d {
    /// (C_out, KH, KW, C_in / groups).
    pub weight: Array,
    /// (C_out,), when the layer has a bias.
    pub bias: Option<Array>,
    /// Stride, padding, dilation and groups (`bias` is ignored after construction).
    pub options: ConvOptions<(i32, i32)>,
}

impl Conv2d {
    /// A layer with MLX's initialisation from the global random key.
    pub fn new(
        in_channels: i32,
        out_channels: i32,
        kernel_size: (i32, i32),
        options: ConvOptions<(i32, i32)>,
    ) -> Result<Conv2d> {
        let (weight, bias) = init(
            "Conv2d",
            in_channels,
            out_channels,
            &[kernel_size.0, kernel_size.1],
            options.groups,
            options.bias,
        )?;
        Ok(Conv2d {
            weight,
            bias,
            options,
        })
    }
}

impl Module for Conv2d {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        visit(&self.weight, &self.bias, f);
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        visit_mut(&mut self.weight, &mut self.bias, f);
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        let o = &self.options;
        let y = conv2d(x, &self.weight, o.stride, o.padding, o.dilation, o.groups)?;
        add_bias(y, &self.bias)
    }
}
