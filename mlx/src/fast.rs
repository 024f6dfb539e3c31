//! `mlx::fast`.
