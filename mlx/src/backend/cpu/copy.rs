//! Walking strided data and making row-major copies: the functions live in
//! [`crate::layout`] with the strides they walk; kernels name them here too.

pub use crate::layout::{for_each_row, make_contiguous, to_contiguous_vec};
