//! Options structs for the fused `mlx::fast` ops with many arguments
//! (RoPE, attention): thin wrappers over [`crate::fast::rope`] and
//! [`crate::fast::scaled_dot_product_attention_sinks`], which stay MLX's
//! positional signatures.
//!
//! ```
//! use mlx::ops::{self, rope_with, RopeOptions};
//! let x = ops::ones(&[1, 2, 4, 8], mlx::Dtype::Float32).unwrap();
//! let y = rope_with(&x, &RopeOptions { offset: 3, ..RopeOptions::new(8) }).unwrap();
//! assert_eq!(y.shape(), &[1, 2, 4, 8]);
//! ```

use crate::fast::{self, Mask};
use crate::{Array, Result};

/// The arguments of [`crate::fast::rope`] after `x`. [`RopeOptions::new`]
/// gives MLX's defaults for a `dims` (base 10000, scale 1, offset 0).
#[derive(Clone, Copy, Debug)]
pub struct RopeOptions<'a> {
    /// Leading features of each position that are rotated.
    pub dims: i32,
    /// Rotate adjacent pairs (MLX's `traditional=True`) instead of halves.
    pub traditional: bool,
    /// Frequencies `base^(−2i/dims)`; `None` when `freqs` is given.
    pub base: Option<f32>,
    /// Positions are multiplied by `scale`.
    pub scale: f32,
    /// Position of the first row (axis −2).
    pub offset: i32,
    /// Given frequencies instead of `base` (shape `(dims / 2,)`).
    pub freqs: Option<&'a Array>,
    /// Rotate backwards (the inverse transform, [`crate::fast::rope_inverse`]).
    pub inverse: bool,
}

impl RopeOptions<'_> {
    /// MLX's defaults for rotating `dims` features.
    pub fn new(dims: i32) -> Self {
        RopeOptions {
            dims,
            traditional: false,
            base: Some(10000.0),
            scale: 1.0,
            offset: 0,
            freqs: None,
            inverse: false,
        }
    }
}

/// [`crate::fast::rope`] (or `rope_inverse`) with its arguments in a struct.
pub fn rope_with(x: &Array, o: &RopeOptions<'_>) -> Result<Array> {
    let base = if o.freqs.is_some() { None } else { o.base };
    if o.inverse {
        fast::rope_inverse(x, o.dims, o.traditional, base, o.scale, o.offset, o.freqs)
    } else {
        fast::rope(x, o.dims, o.traditional, base, o.scale, o.offset, o.freqs)
    }
}

/// The arguments of [`crate::fast::scaled_dot_product_attention`] after
/// q, k, v. `Default`: scale `1/sqrt(D)` from q's last axis, no mask, no sinks.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttentionOptions<'a> {
    /// Multiplies `q kᵀ`; `None` for `1/sqrt(D)`.
    pub scale: Option<f32>,
    pub mask: Option<Mask<'a>>,
    /// Per-head attention sinks (shape `(Hq,)`).
    pub sinks: Option<&'a Array>,
}

/// [`crate::fast::scaled_dot_product_attention`] with its optional
/// arguments in a struct.
pub fn attention_with(q: &Array, k: &Array, v: &Array, o: &AttentionOptions<'_>) -> Result<Array> {
    let d = q.shape().last().copied().unwrap_or(1).max(1);
    let scale = o.scale.unwrap_or(1.0 / (d as f32).sqrt());
    fast::scaled_dot_product_attention_sinks(q, k, v, scale, o.mask, o.sinks)
}
