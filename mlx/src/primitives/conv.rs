//! [`Convolution`]: channels-last N-d convolution (1-D to 3-D), strided,
//! padded, dilated (kernel and input), grouped, optionally flipped.

use super::expect_inputs;
use super::grad_util::multilinear_jvp;
use crate::backend::cpu::conv::{conv, ConvParams};
use crate::ops;
use crate::primitive::Spec;
use crate::{Array, Data, Error, Primitive, Result};

/// Convolution of x (N, spatial…, C_in) with w (C_out, kernel…, C_in /
/// groups) → (N, out spatial…, C_out). `input_dilation > 1` gives
/// transposed convolutions; `flip` a true convolution rather than a
/// cross-correlation. Fields in MLX's wire order.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
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
    /// Each output element sums over one kernel window of every input
    /// channel in its group: the weight's elements per output channel.
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        let per_output = inputs.get(1).map_or(1, |w| {
            let o = w.shape.first().map_or(1, |&o| o.max(1) as u64);
            (w.size() as u64 / o).max(1)
        });
        let out = outputs.first().map_or(0, |o| o.size() as u64);
        out.saturating_mul(per_output)
    }
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

    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        let (x, w, c) = (&primals[0], &primals[1], &cot[0]);
        argnums
            .iter()
            .map(|&a| match a {
                0 => self.input_grad(x, w, c),
                _ => self.weight_grad(x, w, c),
            })
            .collect()
    }

    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        multilinear_jvp(self, primals, tangents, argnums)
    }
}

/// `1 + dilation · (n − 1)`: the extent of `n` taps `dilation` apart.
fn dilated(n: i32, dilation: i32) -> i64 {
    1 + dilation as i64 * (n as i64 - 1)
}

fn to_i32(v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::invalid("conv", format!("size {v} overflows int32")))
}

/// With `groups > 1`, `x` with axis `group_dim` split into (groups, rest),
/// axes `a` and `b` swapped, and the two group axes merged again (MLX's
/// regrouping of channels); with one group just axes 0 and −1 swapped.
fn group_transpose(x: &Array, groups: i32, group_dim: usize, a: i32, b: i32) -> Result<Array> {
    if groups == 1 {
        return ops::swapaxes(x, 0, -1);
    }
    let mut shape = x.shape().to_vec();
    shape.insert(group_dim, groups);
    shape[group_dim + 1] /= groups;
    let t = ops::swapaxes(&ops::reshape(x, &shape)?, a, b)?;
    ops::flatten(&t, group_dim as i32, group_dim as i32 + 1)
}

impl Convolution {
    /// This convolution's parameters with other operands: padding may be
    /// negative (cropping), and the output is cut to the spatial sizes
    /// `want`. Negative low padding is raised by whole strides and the
    /// surplus outputs sliced off the front; negative high padding is
    /// raised to 0 and the surplus sliced off the back.
    fn conv_cropped(
        &self,
        x: &Array,
        w: &Array,
        lo: &[i32],
        hi: &[i32],
        want: &[i32],
    ) -> Result<Array> {
        let stride = &self.kernel_strides;
        let mut start = vec![0; x.ndim()];
        let mut padding_lo = lo.to_vec();
        for (i, p) in padding_lo.iter_mut().enumerate() {
            if *p < 0 {
                let m = (-*p + stride[i] - 1) / stride[i];
                *p += m * stride[i];
                start[i + 1] = m;
            }
        }
        let p = Convolution {
            padding_lo,
            padding_hi: hi.iter().map(|&h| h.max(0)).collect(),
            ..self.clone()
        };
        let y = Array::from_primitive(p, vec![x.clone(), w.clone()])?;
        let mut stop = y.shape().to_vec();
        for (i, &n) in want.iter().enumerate() {
            stop[i + 1] = start[i + 1] + n;
        }
        if stop == y.shape() && start.iter().all(|&s| s == 0) {
            return Ok(y);
        }
        ops::slice(&y, &start, &stop, &[])
    }

    /// Cotangent of the input: the cotangent convolved with the regrouped,
    /// flipped weight, strides and input dilation exchanged.
    fn input_grad(&self, x: &Array, w: &Array, cot: &Array) -> Result<Array> {
        let nd = x.ndim() - 2;
        let (mut lo, mut hi) = (Vec::with_capacity(nd), Vec::with_capacity(nd));
        for i in 0..nd {
            let k = dilated(w.shape()[i + 1], self.kernel_dilation[i]);
            let n_in = dilated(x.shape()[i + 1], self.input_dilation[i]);
            let n_cot = dilated(cot.shape()[i + 1], self.kernel_strides[i]);
            let l = self.padding_lo[i] as i64;
            lo.push(to_i32(k - 1 - l)?);
            hi.push(to_i32(n_in + l - n_cot)?);
        }
        let wt = group_transpose(w, self.groups, 0, 1, -1)?;
        let p = Convolution {
            kernel_strides: self.input_dilation.clone(),
            input_dilation: self.kernel_strides.clone(),
            flip: !self.flip,
            ..self.clone()
        };
        p.conv_cropped(cot, &wt, &lo, &hi, &x.shape()[1..=nd])
    }

    /// Cotangent of the weight: the regrouped input (channels as batch)
    /// convolved with the cotangent (batch as channels), strides and kernel
    /// dilation exchanged; flipped back for a flipped convolution.
    fn weight_grad(&self, x: &Array, w: &Array, cot: &Array) -> Result<Array> {
        let nd = x.ndim() - 2;
        let mut hi = Vec::with_capacity(nd);
        for i in 0..nd {
            let k = dilated(w.shape()[i + 1], self.kernel_dilation[i]);
            let n_in = dilated(x.shape()[i + 1], self.input_dilation[i]);
            let n_cot = dilated(cot.shape()[i + 1], self.kernel_strides[i]);
            hi.push(to_i32(k - 1 + n_cot - n_in - self.padding_lo[i] as i64)?);
        }
        let xt = group_transpose(x, self.groups, nd + 1, 0, -1)?;
        let ct = ops::swapaxes(cot, 0, -1)?;
        let p = Convolution {
            kernel_strides: self.kernel_dilation.clone(),
            kernel_dilation: self.kernel_strides.clone(),
            flip: false,
            ..self.clone()
        };
        let mut g = p.conv_cropped(&xt, &ct, &self.padding_lo, &hi, &w.shape()[1..=nd])?;
        if self.flip {
            g = ops::flip(&g, &(1..=nd as i32).collect::<Vec<_>>())?;
        }
        ops::swapaxes(&g, 0, -1)
    }
}
