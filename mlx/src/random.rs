//! `mlx::random`.
