//! Graph transforms: evaluation, tracing (shared by compile and export),
//! and later compile and autodiff.

mod eval;
pub mod trace;

pub use eval::eval;
