//! Shape and layout ops.

use crate::primitives::shape;
use crate::{Array, Result};

/// `a` broadcast to `shape` (numpy rules).
pub fn broadcast_to(a: &Array, shape: &[i32]) -> Result<Array> {
    Array::from_primitive(shape::Broadcast { shape: shape.to_vec() }, vec![a.clone()])
}
