//! [`MultiHeadAttention`]: MLX's `nn.MultiHeadAttention` (query, key, value
//! and output projections around `fast::scaled_dot_product_attention`).

use super::module::{visit_child, visit_child_mut};
use super::{Linear, Module};
use crate::fast::{scaled_dot_product_attention, Mask};
use crate::ops::{arange, astype, expand_dims, flatten, less, multiply, transpose, unflatten};
use crate::{Array, Dtype, Error, Result};

/// Scaled dot-product attention over `num_heads` heads with linear
/// projections of queries, keys, values and output (no biases by default).
#[derive(Clone, Debug)]
pub struct MultiHeadAttention {
    /// Number of heads the projected features are split into.
    pub num_heads: i32,
    /// query_input_dims → dims.
    pub query_proj: Linear,
    /// key_input_dims → dims.
    pub key_proj: Linear,
    /// value_input_dims → value_dims.
    pub value_proj: Linear,
    /// value_dims → value_output_dims.
    pub out_proj: Linear,
}

/// The optional sizes of [`MultiHeadAttention::with_dims`]; `None` takes
/// MLX's default (`dims`, or `key_input_dims` for the value input).
#[derive(Clone, Copy, Debug, Default)]
pub struct AttentionDims {
    /// Input size of the queries.
    pub query_input_dims: Option<i32>,
    /// Input size of the keys.
    pub key_input_dims: Option<i32>,
    /// Input size of the values.
    pub value_input_dims: Option<i32>,
    /// Size of the projected values.
    pub value_dims: Option<i32>,
    /// Size of the output.
    pub value_output_dims: Option<i32>,
}

impl MultiHeadAttention {
    /// Every input and output of size `dims`; projections drawn in MLX's
    /// order (query, key, value, out) from the global random key.
    pub fn new(dims: i32, num_heads: i32, bias: bool) -> Result<MultiHeadAttention> {
        Self::with_dims(dims, num_heads, AttentionDims::default(), bias)
    }

    /// Like [`new`](Self::new) with other input/output sizes.
    pub fn with_dims(
        dims: i32,
        num_heads: i32,
        sizes: AttentionDims,
        bias: bool,
    ) -> Result<MultiHeadAttention> {
        if num_heads <= 0 || dims % num_heads != 0 {
            return Err(Error::invalid(
                "MultiHeadAttention",
                format!(
                    "the feature dimensions should be divisible by the number of heads ({dims} % {num_heads} != 0)"
                ),
            ));
        }
        let q_in = sizes.query_input_dims.unwrap_or(dims);
        let k_in = sizes.key_input_dims.unwrap_or(dims);
        let v_in = sizes.value_input_dims.unwrap_or(k_in);
        let v_dims = sizes.value_dims.unwrap_or(dims);
        let v_out = sizes.value_output_dims.unwrap_or(dims);
        Ok(MultiHeadAttention {
            num_heads,
            query_proj: Linear::new(q_in, dims, bias)?,
            key_proj: Linear::new(k_in, dims, bias)?,
            value_proj: Linear::new(v_in, v_dims, bias)?,
            out_proj: Linear::new(v_dims, v_out, bias)?,
        })
    }

    /// Attention of `queries` (B, Lq, ·) over `keys`/`values` (B, Lk, ·);
    /// `mask` is additive or boolean, broadcastable to (B, heads, Lq, Lk).
    pub fn attend(
        &self,
        queries: &Array,
        keys: &Array,
        values: &Array,
        mask: Option<Mask<'_>>,
    ) -> Result<Array> {
        for (a, what) in [(queries, "queries"), (keys, "keys"), (values, "values")] {
            if a.ndim() != 3 {
                return Err(Error::invalid(
                    "MultiHeadAttention",
                    format!(
                        "{what} must have shape (batch, length, features), found {:?}",
                        a.shape()
                    ),
                ));
            }
        }
        let heads = |a: &Array| -> Result<Array> {
            transpose(&unflatten(a, -1, &[self.num_heads, -1])?, &[0, 2, 1, 3])
        };
        let q = heads(&self.query_proj.forward(queries)?)?;
        let k = heads(&self.key_proj.forward(keys)?)?;
        let v = heads(&self.value_proj.forward(values)?)?;
        let scale = (1.0 / q.shape()[3] as f64).sqrt() as f32;
        let out = scaled_dot_product_attention(&q, &k, &v, scale, mask)?;
        let out = flatten(&transpose(&out, &[0, 2, 1, 3])?, -2, -1)?;
        self.out_proj.forward(&out)
    }

    /// An (n, n) additive mask hiding future positions: 0 on and below the
    /// diagonal, the dtype's lowest finite value above (MLX's
    /// `create_additive_causal_mask`).
    pub fn create_additive_causal_mask(n: i32, dtype: Dtype) -> Result<Array> {
        let lowest = match dtype {
            Dtype::Float32 => f32::MIN as f64,
            Dtype::Float64 => f64::MIN,
            Dtype::Float16 => half::f16::MIN.to_f64(),
            Dtype::Bfloat16 => half::bf16::MIN.to_f64(),
            other => {
                return Err(Error::invalid(
                    "create_additive_causal_mask",
                    format!("expected a floating point dtype, found {other}"),
                ))
            }
        };
        let idx = arange(0.0, n as f64, 1.0, Dtype::Int32)?;
        let above = less(&expand_dims(&idx, &[1])?, &expand_dims(&idx, &[0])?)?;
        multiply(&astype(&above, dtype)?, &Array::scalar_of(lowest, dtype))
    }
}

impl Module for MultiHeadAttention {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        visit_child("query_proj", &self.query_proj, f);
        visit_child("key_proj", &self.key_proj, f);
        visit_child("value_proj", &self.value_proj, f);
        visit_child("out_proj", &self.out_proj, f);
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        visit_child_mut("query_proj", &mut self.query_proj, f);
        visit_child_mut("key_proj", &mut self.key_proj, f);
        visit_child_mut("value_proj", &mut self.value_proj, f);
        visit_child_mut("out_proj", &mut self.out_proj, f);
    }

    /// Self-attention without a mask: `attend(x, x, x, None)`.
    fn forward(&self, x: &Array) -> Result<Array> {
        self.attend(x, x, x, None)
    }
}
