//! CPU kernels, parallel above [`PAR_THRESHOLD`] elements (rayon).

pub mod cast;
pub mod conv;
pub mod copy;
pub mod elementwise;
pub mod f16c;
pub mod factor;
pub mod fast;
pub mod fft;
pub mod fp_quantized;
pub mod gemv;
#[cfg(target_arch = "x86_64")]
mod half_rows512;
pub mod indexing;
pub mod math;
pub mod matmul;
pub mod num;
pub mod panel_gemm;
pub mod qgemv;
#[cfg(target_arch = "x86_64")]
mod qgemv256;
#[cfg(target_arch = "x86_64")]
mod qgemv512;
#[cfg(target_arch = "x86_64")]
mod qgemv_vnni;
pub mod quantized;
pub mod reduce;
pub mod scan;
mod scratch;
#[cfg(target_arch = "x86_64")]
mod sgemm512;
pub mod simd;
pub mod sort;

/// Element count above which kernels split work across threads.
pub const PAR_THRESHOLD: usize = 1 << 15;
