//! Graph transforms: evaluation, tracing (shared by compile and export),
//! and later compile and autodiff.

mod autodiff;
mod compile;
mod eval;
pub mod fuse;
pub mod fused;
pub mod hoist;
pub mod recognize;
pub mod recognized;
pub mod shared_input;
pub mod simplify;
pub mod tape;
pub mod tape_call;
pub mod tracing;

/// The tracing flags, at their former path.
pub use crate::trace_flag as trace;

pub(crate) use autodiff::{fallback_jvp, fallback_vjp};
pub use autodiff::{grad, jvp, value_and_grad, vjp};
pub use compile::{compile, compile_shapeless};
pub use eval::eval;
