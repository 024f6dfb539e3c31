//! Derivative rules of convolution, indexing, sort/scan, the fused `fast`
//! primitives, FFT and quantized matmul, checked three ways: against
//! central finite differences (float64 where the kernel has it), against
//! gradients made by real MLX 0.32.4 (`tests/fixtures/autodiff_ops`), and
//! forward against reverse mode (`<J t, c> = <t, Jᵀ c>`). Most functions
//! under test are a single primitive, so only that primitive's rule runs;
//! `misc` also differentiates whole ops and a small model against MLX.

mod helpers;

mod conv;
mod fast;
mod indexing;
mod misc;
mod sort_scan;
