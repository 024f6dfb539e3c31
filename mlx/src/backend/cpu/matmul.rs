//! matmul kernels.
