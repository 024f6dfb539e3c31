//! [`RoPE`]: rotary positional encoding, through `mlx::fast::rope`.

use super::Module;
use crate::fast::{self, RopeOffset};
use crate::{Array, Result};

/// Rotary positional encoding of the first `dims` features (no
/// parameters), as MLX's `nn.RoPE`.
#[derive(Clone, Debug)]
pub struct RoPE {
    /// Number of features rotated; the rest pass through.
    pub dims: i32,
    /// Rotate interleaved pairs instead of the two halves.
    pub traditional: bool,
    /// Base of the frequencies `base^(−2i/dims)`.
    pub base: f32,
    /// Scale applied to the positions.
    pub scale: f32,
}

impl RoPE {
    /// MLX's defaults are `traditional = false`, `base = 10000`, `scale = 1`.
    pub fn new(dims: i32, traditional: bool, base: f32, scale: f32) -> RoPE {
        RoPE {
            dims,
            traditional,
            base,
            scale,
        }
    }

    /// The encoding with positions (axis −2) starting at `offset`.
    pub fn forward_offset(&self, x: &Array, offset: impl Into<RopeOffset>) -> Result<Array> {
        fast::rope(
            x,
            self.dims,
            self.traditional,
            Some(self.base),
            self.scale,
            offset,
            None,
        )
    }
}

impl Module for RoPE {
    fn visit_parameters(&self, _f: &mut dyn FnMut(&str, &Array)) {}

    fn visit_parameters_mut(&mut self, _f: &mut dyn FnMut(&str, &mut Array)) {}

    /// The encoding with positions starting at 0.
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_offset(x, 0)
    }
}
