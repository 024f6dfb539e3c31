//! Graph transforms: evaluation, tracing (shared by compile and export),
//! and later compile and autodiff.

mod eval;
pub mod simplify;
pub mod trace;
pub mod tracing;

pub use eval::eval;
