//! fft primitives.
