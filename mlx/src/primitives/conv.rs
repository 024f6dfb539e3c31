//! [`Convolution`]: channels-last N-d convolution (1-D to 3-D), strided,
//! padded, dilated (kernel and input), grouped, optionally flipped.

use super::expect_inputs;
use crate::backend::cpu::conv::{conv, ConvParams};
use crate::primitive::Spec;
use crate::{Array, Data, Error, Primitive, Result};

/// Convolution of x (N, spatial…, C_in) with w (C_out, kernel…, C_in /
/// groups) → (N, out spatial…, C_out). `input_dilation > 1` gives
/// transposed convolutions; `flip` a true convolution rather than a
/// cross-correlation. Fields in MLX's wire order.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Convolution {
    #[state]
    pub kernel_strides: Vec<i32>,
    #[state]
    pub padding_lo: Vec<i32>,
    #[state]
    pub padding_hi: Vec<i32>,
    #[state]
    pub kernel_dilation: Vec<i32>,
    #[state]
    pub input_dilation: Vec<i32>,
    #[state]
    pub groups: i32,
    #[state]
    pub flip: bool,
}

/// Output shape of a convolution, with MLX's checks and messages.
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_out_shape(
    x: &[i32],
    w: &[i32],
    strides: &[i32],
    lo: &[i32],
    hi: &[i32],
    kdil: &[i32],
    idil: &[i32],
) -> Result<Vec<i32>> {
    let nd = x.len().saturating_sub(2);
    let bad = |what: &str, v: &[i32]| {
        Err(Error::invalid(
            "conv",
            format!("invalid {what} {v:?} for {nd}-D convolution"),
        ))
    };
    if strides.len() != nd {
        return bad("strides", strides);
    }
    if lo.len() != nd || hi.len() != nd {
        return bad("padding", &[lo, hi].concat());
    }
    if kdil.len() != nd {
        return bad("kernel dilation", kdil);
    }
    if idil.len() != nd {
        return bad("input dilation", idil);
    }
    let mut out = vec![x[0]];
    for i in 0..nd {
        if kdil[i] <= 0 || idil[i] <= 0 || strides[i] <= 0 {
            return Err(Error::invalid(
                "conv",
                format!(
                    "strides and dilations must be positive, found strides {strides:?}, \
                     kernel dilation {kdil:?}, input dilation {idil:?}"
                ),
            ));
        }
        if lo[i] < 0 || hi[i] < 0 {
            return Err(Error::invalid(
                "conv",
                format!("padding must be non-negative, found {lo:?} | {hi:?}"),
            ));
        }
        let kd = 1 + kdil[i] as i64 * (w[i + 1] as i64 - 1);
        let id = 1 + idil[i] as i64 * (x[i + 1] as i64 - 1);
        let padded = id + lo[i] as i64 + hi[i] as i64;
        let o = if padded < kd {
            0
        } else {
            (padded - kd) / strides[i] as i64 + 1
        };
        if o <= 0 || o > i32::MAX as i64 {
            return Err(Error::invalid(
                "conv",
                format!(
                    "spatial dimensions of the input after padding cannot be smaller than \
                     the weight's: axis {} of input {x:?}, padding {lo:?} | {hi:?}, weight {w:?}",
                    i + 1
                ),
            ));
        }
        out.push(o as i32);
    }
    out.push(w[0]);
    Ok(out)
}

impl Primitive for Convolution {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Convolution", inputs, 2)?;
        let (x, w) = (&inputs[0], &inputs[1]);
        if x.dtype != w.dtype || !x.dtype.is_float() {
            return Err(Error::invalid(
                "Convolution",
                format!(
                    "inputs must share a floating point dtype, found {} and {}",
                    x.dtype, w.dtype
                ),
            ));
        }
        let nd = x.shape.len();
        if !(3..=5).contains(&nd) || w.shape.len() != nd {
            return Err(Error::invalid(
                "Convolution",
                format!(
                    "expected input (N, spatial…, C_in) and weight (C_out, kernel…, C_in) \
                     with 1 to 3 spatial axes, found {:?} and {:?}",
                    x.shape, w.shape
                ),
            ));
        }
        let g = self.groups;
        let (c_in, c_out) = (x.shape[nd - 1], w.shape[0]);
        if g <= 0 || c_in % g != 0 || c_out % g != 0 || c_in != g * w.shape[nd - 1] {
            return Err(Error::invalid(
                "Convolution",
                format!(
                    "{g} groups do not fit input {:?} and weight {:?}",
                    x.shape, w.shape
                ),
            ));
        }
        let shape = conv_out_shape(
            &x.shape,
            &w.shape,
            &self.kernel_strides,
            &self.padding_lo,
            &self.padding_hi,
            &self.kernel_dilation,
            &self.input_dilation,
        )?;
        Ok(vec![Spec::new(shape, x.dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (x, w) = (&inputs[0], &inputs[1]);
        let params = ConvParams {
            strides: &self.kernel_strides,
            padding_lo: &self.padding_lo,
            kernel_dilation: &self.kernel_dilation,
            input_dilation: &self.input_dilation,
            groups: self.groups,
            flip: self.flip,
        };
        Ok(vec![conv(
            &x.data()?,
            x.shape(),
            &w.data()?,
            w.shape(),
            &params,
            out[0].dtype,
            &out[0].shape,
        )?])
    }
}
