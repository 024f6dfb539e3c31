//! quantized ops.
