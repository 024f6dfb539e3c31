//! Graph transforms: evaluation, tracing (shared by compile and export),
//! and later compile and autodiff.

mod autodiff;
mod compile;
mod eval;
pub mod fuse;
pub mod simplify;
pub mod trace;
pub mod tracing;

pub use autodiff::{grad, jvp, value_and_grad, vjp};
pub use compile::{compile, compile_shapeless};
pub use eval::eval;
