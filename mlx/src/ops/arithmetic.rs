//! Binary arithmetic and comparison ops.

use super::promote_and_broadcast;
use crate::primitives::binary;
use crate::{Array, Primitive, Result};

/// Promotes, broadcasts, then applies the binary primitive.
pub(crate) fn binary_op(op: &str, a: &Array, b: &Array, p: impl Primitive) -> Result<Array> {
    let (a, b) = promote_and_broadcast(op, a, b)?;
    Array::from_primitive(p, vec![a, b])
}

/// `a + b` with broadcasting and type promotion.
pub fn add(a: &Array, b: &Array) -> Result<Array> {
    binary_op("add", a, b, binary::Add {})
}

/// `a - b`.
pub fn subtract(a: &Array, b: &Array) -> Result<Array> {
    binary_op("subtract", a, b, binary::Subtract {})
}

/// `a * b`.
pub fn multiply(a: &Array, b: &Array) -> Result<Array> {
    binary_op("multiply", a, b, binary::Multiply {})
}

/// `a / b`, true division: integer inputs are cast to float32 first.
pub fn divide(a: &Array, b: &Array) -> Result<Array> {
    let dtype = crate::promote_types(a.dtype(), b.dtype());
    if !dtype.is_inexact() {
        let a = super::cast_to(a, crate::Dtype::Float32)?;
        let b = super::cast_to(b, crate::Dtype::Float32)?;
        return binary_op("divide", &a, &b, binary::Divide {});
    }
    binary_op("divide", a, b, binary::Divide {})
}

/// Element-wise maximum.
pub fn maximum(a: &Array, b: &Array) -> Result<Array> {
    binary_op("maximum", a, b, binary::Maximum {})
}

/// Element-wise minimum.
pub fn minimum(a: &Array, b: &Array) -> Result<Array> {
    binary_op("minimum", a, b, binary::Minimum {})
}
