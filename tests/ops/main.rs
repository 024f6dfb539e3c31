//! The operations (`mlx::ops`, `mlx::fft`, `mlx::linalg`, `mlx::random`,
//! `mlx::fast`): results against MLX fixtures and naive loops, layouts
//! (strided, broadcast, views), graph shapes and error messages.
//! One module per family; `*_fixtures` compare with real MLX, `*_props` are
//! property tests, `*_errors` check messages.

#[path = "../common/mod.rs"]
mod common;

mod conv;
mod creation;
mod elementwise;
mod elementwise_layout;
mod factorizations;
mod fast;
mod fft;
mod half_blocks;
mod indexing_errors;
mod indexing_fixtures;
mod indexing_props;
mod matmul;
mod quantized;
mod random;
mod reduce;
mod reduce_props;
mod rust_api;
mod searchsorted;
mod shape_errors;
mod shape_fixtures;
mod shape_props;
mod sort_scan_fixtures;
mod views;
