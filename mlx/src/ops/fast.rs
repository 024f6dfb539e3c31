//! `mlx::fast`: fused normalisations, rotary embeddings and attention.
//!
//! Unlike MLX's CPU build (which records these as their decompositions),
//! each call here builds one fused primitive (`RMSNorm`, `LayerNorm`,
//! `RoPE`, `ScaledDotProductAttention`) with MLX's state, so exported
//! graphs look like those of MLX's GPU build, and the CPU runs one kernel.
//! Each op lives with its primitive in `primitives::fast`.

pub use crate::primitives::fast::{
    layer_norm, rms_norm, rope, rope_inverse, scaled_dot_product_attention,
    scaled_dot_product_attention_sinks, Mask, RopeOffset,
};
