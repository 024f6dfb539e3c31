//! A C ABI over `mlx` in mlx-c's names: the import-and-run subset of
//! ml-explore/mlx-c at commit fba4470 ("regenerate bindings for MLX 0.31.2").
//!
//! The headers are in `include/mlx/c/`; they are hand-written to mirror
//! mlx-c's layout (one header per concept, opaque `{ void* ctx; }` handles
//! passed by value, `int` status codes with 0 for success, errors reported
//! through the handler set with `mlx_set_error_handler`).
//!
//! - [`handle`]: how a C handle maps to a Rust object (live-handle registry,
//!   so null, freed and mistyped handles are errors, not undefined behaviour).
//! - [`boundary`]: the error handler and the wrapper every entry point runs
//!   in (no panic crosses into C).
//! - [`array`], [`string`], [`vector`], [`map`], [`export`]: the C functions.

// The entry points are `extern "C"` functions whose pointer arguments follow
// the contracts the C headers state; marking each `unsafe` would change
// nothing for C callers, so the lint that asks for it is off here.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod array;
pub mod boundary;
pub mod export;
mod format;
pub mod handle;
pub mod map;
pub mod string;
pub mod vector;
