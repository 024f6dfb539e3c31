//! math kernels.
