//! `mlx::nn` (layers, losses, optimizers) against MLX, and the train_mlp
//! example run in-process.

#[path = "../common/mod.rs"]
mod common;

/// The example itself, so the test runs exactly what users run.
#[allow(dead_code)]
#[path = "../../examples/train_mlp.rs"]
mod train_mlp_example;

mod layers;
mod train_mlp;
