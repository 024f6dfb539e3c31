//! [`LayerNorm`] and [`RMSNorm`] over the last axis, through `mlx::fast`.

use super::Module;
use crate::ops::{ones, zeros};
use crate::{fast, Array, Dtype, Error, Result};

fn check_eps(op: &str, eps: f32) -> Result<()> {
    if eps > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("eps must be positive, found {eps}"),
        ))
    }
}

/// Layer normalisation over the last axis with optional learned scale
/// (`weight`, ones) and shift (`bias`, zeros), as MLX's `nn.LayerNorm`.
#[derive(Clone, Debug)]
pub struct LayerNorm {
    /// (dims,), present when affine.
    pub weight: Option<Array>,
    /// (dims,), present when affine with bias.
    pub bias: Option<Array>,
    /// Added to the variance.
    pub eps: f32,
}

impl LayerNorm {
    /// MLX's defaults are `eps = 1e-5`, `affine = true`, `bias = true`.
    pub fn new(dims: i32, eps: f32, affine: bool, bias: bool) -> Result<LayerNorm> {
        check_eps("LayerNorm", eps)?;
        let (weight, bias) = if affine {
            let w = ones(&[dims], Dtype::Float32)?;
            let b = if bias {
                Some(zeros(&[dims], Dtype::Float32)?)
            } else {
                None
            };
            (Some(w), b)
        } else {
            (None, None)
        };
        Ok(LayerNorm { weight, bias, eps })
    }
}

impl Module for LayerNorm {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        if let Some(w) = &self.weight {
            f("weight", w);
        }
        if let Some(b) = &self.bias {
            f("bias", b);
        }
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        if let Some(w) = &mut self.weight {
            f("weight", w);
        }
        if let Some(b) = &mut self.bias {
            f("bias", b);
        }
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        fast::layer_norm(x, self.weight.as_ref(), self.bias.as_ref(), self.eps)
    }
}

/// Root-mean-square normalisation over the last axis with a learned scale
/// (`weight`, ones), as MLX's `nn.RMSNorm`.
#[derive(Clone, Debug)]
pub struct RMSNorm {
    /// (dims,).
    pub weight: Array,
    /// Added to the mean square.
    pub eps: f32,
}

impl RMSNorm {
    /// MLX's default is `eps = 1e-5`.
    pub fn new(dims: i32, eps: f32) -> Result<RMSNorm> {
        check_eps("RMSNorm", eps)?;
        Ok(RMSNorm {
            weight: ones(&[dims], Dtype::Float32)?,
            eps,
        })
    }
}

impl Module for RMSNorm {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        f("weight", &self.weight);
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        f("weight", &mut self.weight);
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        fast::rms_norm(x, Some(&self.weight), self.eps)
    }
}
