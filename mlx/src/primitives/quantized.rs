//! quantized primitives.
