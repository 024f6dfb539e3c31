//! The primitives: one file per family. Each struct derives `Primitive`
//! (state, codecs, registration) and implements the shape rule, the kernel
//! call and the derivatives next to each other.

pub mod binary;
pub mod conv;
pub mod creation;
pub mod custom_kernel;
pub mod factor;
pub mod fast;
mod fast_grad;
pub mod fft;
pub(crate) mod grad;
pub(crate) mod grad_util;
pub mod hadamard;
pub mod indexing;
pub mod linalg;
pub mod masked_mm;
pub mod norm_vjp;
pub mod quantized;
pub mod random;
pub mod reduce;
pub mod shape;
pub mod sort_scan;
pub mod unary;

use crate::primitive::Spec;
use crate::{Error, Result};

/// Checks the input count of a primitive.
pub(crate) fn expect_inputs(name: &str, inputs: &[Spec], n: usize) -> Result<()> {
    if inputs.len() != n {
        return Err(Error::InputCount {
            op: name.to_string(),
            expected: n,
            found: inputs.len(),
        });
    }
    Ok(())
}
