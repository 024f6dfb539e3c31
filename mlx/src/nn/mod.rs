//! `mlx::nn`: a small, MLX-like neural network library on top of [`crate::ops`].
//!
//! - [`Parameters`]: a flat, ordered `name → Array` map (`"layers.0.weight"`),
//!   so a model's weights can be passed to or captured by an exported function
//!   as a plain list of arrays and rebuilt by name on the other side.
//! - [`Module`]: the layer trait (`parameters`, `update`, `forward`).
//! - Layers: [`Linear`], [`Embedding`], [`LayerNorm`], [`RMSNorm`], [`RoPE`],
//!   [`MultiHeadAttention`], [`Conv1d`], [`Conv2d`]; activations [`relu`],
//!   [`gelu`], [`gelu_approx`], [`silu`].
//! - [`losses`]: cross entropy, mean squared error, binary cross entropy.
//! - [`optimizers`]: SGD, Adam, AdamW. Their state is a [`Parameters`] map of
//!   arrays too, so a whole training step can be exported.
//!
//! Initialisations and formulas follow MLX 0.32 (`mlx.nn`,
//! `mlx.optimizers`) operation by operation, so results agree with MLX.

mod activations;
mod attention;
mod conv;
mod embedding;
mod linear;
pub mod losses;
mod module;
mod norm;
pub mod optimizers;
mod parameters;
mod rope;

pub use activations::{gelu, gelu_approx, relu, silu};
pub use attention::{AttentionDims, MultiHeadAttention};
pub use conv::{Conv1d, Conv2d, ConvOptions};
pub use embedding::Embedding;
pub use linear::Linear;
pub use module::{visit_child, visit_child_mut, Module};
pub use norm::{LayerNorm, RMSNorm};
pub use parameters::Parameters;
pub use rope::RoPE;
