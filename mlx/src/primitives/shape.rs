//! Shape and layout primitives. Views (broadcast, transpose, reshape when
//! possible, slices) share the input's buffer.

use super::expect_inputs;
use crate::primitive::Spec;
use crate::{Array, Data, Error, Primitive, Result};

/// `a` as a view with shape `shape` (numpy broadcasting: new leading axes and
/// size-1 axes get stride 0). `a` must be evaluated.
pub(crate) fn broadcast_view(a: &Array, shape: &[i32]) -> Result<Array> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    let d = a.data()?;
    let strides = broadcast_strides("Broadcast", a.shape(), &d.strides, shape)?;
    Ok(Array::from_data(
        Data { buffer: d.buffer, strides, offset: d.offset },
        Spec::new(shape, a.dtype()),
    ))
}

/// Strides of a broadcast view of (`from`, `strides`) with shape `to`.
pub(crate) fn broadcast_strides(op: &str, from: &[i32], strides: &[isize], to: &[i32]) -> Result<Vec<isize>> {
    if from.len() > to.len() {
        return Err(Error::invalid(op, format!("cannot broadcast shape {from:?} to {to:?}")));
    }
    let lead = to.len() - from.len();
    let mut out = vec![0isize; to.len()];
    for i in 0..from.len() {
        let (f, t) = (from[i], to[lead + i]);
        out[lead + i] = if f == t {
            strides[i]
        } else if f == 1 {
            0
        } else {
            return Err(Error::invalid(op, format!("cannot broadcast shape {from:?} to {to:?}")));
        };
    }
    Ok(out)
}

/// Broadcasts input 0 to `shape` (a view). With more inputs (shapeless
/// traces), the output is the broadcast of all input shapes.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Broadcast {
    #[state]
    pub shape: Vec<i32>,
}

impl Primitive for Broadcast {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if inputs.is_empty() {
            return Err(Error::invalid("Broadcast", "expected at least 1 input"));
        }
        let shape = if inputs.len() == 1 {
            crate::array::check_shape("Broadcast", &self.shape)?;
            let b = crate::ops::broadcast_shapes("Broadcast", &inputs[0].shape, &self.shape)?;
            if b != self.shape {
                return Err(Error::invalid(
                    "Broadcast",
                    format!("cannot broadcast shape {:?} to {:?}", inputs[0].shape, self.shape),
                ));
            }
            b
        } else {
            let mut s = inputs[0].shape.clone();
            for i in &inputs[1..] {
                s = crate::ops::broadcast_shapes("Broadcast", &s, &i.shape)?;
            }
            s
        };
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![broadcast_view(&inputs[0], &out[0].shape)?.data()?])
    }
}

#[allow(unused_imports)]
use expect_inputs as _;
