//! Files: export and import in both formats (native and MLX's `.mlxfn`),
//! files written by Python MLX, hostile and damaged input, versioning, and
//! the array formats of `mlx::io` (`.npy`, safetensors).
//!
//! The binary runs under a counting global allocator (`alloc_counter`), which
//! the hostile-input tests use to check that nothing is allocated before a
//! length is validated.

mod alloc_counter;
#[path = "../common/mod.rs"]
mod common;

mod decompose_fast;
mod errors;
mod forged;
mod indexing;
mod lazy_mlx;
mod mlx_fixtures;
mod mlx_fuzz;
mod mlx_models;
mod mlx_wire;
mod native;
mod npy;
mod safetensors;
mod scenarios;
mod versioning;
