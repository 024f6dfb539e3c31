//! Unary math and dtype conversion.

use crate::primitives::unary;
use crate::{Array, Dtype, Result};

/// Converts the elements of `a` to `dtype`.
pub fn astype(a: &Array, dtype: Dtype) -> Result<Array> {
    Array::from_primitive(unary::AsType { dtype }, vec![a.clone()])
}
