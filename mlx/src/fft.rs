//! `mlx::fft`.
