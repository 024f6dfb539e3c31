//! Reinterpretation and identities: view, as_strided, copy, stop_gradient,
//! depends, number_of_elements.

use super::flatten;
use crate::primitives::shape;
use crate::{Array, Dtype, Error, Result};

/// The bytes of `a` read as `dtype`; the last axis is rescaled when the item
/// sizes differ (it must hold a whole number of new items). Viewing as bool
/// maps every non-zero byte to `true`.
pub fn view(a: &Array, dtype: Dtype) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    Array::from_primitive(shape::View { dtype }, vec![a.clone()])
}

/// A view of the elements of `a` in row-major order with the given shape,
/// element strides and element offset (numpy's `as_strided`, in elements).
/// Unlike MLX, a view that would reach outside `a` is an error.
pub fn as_strided(a: &Array, shape: &[i32], strides: &[i64], offset: u64) -> Result<Array> {
    if let Some(&d) = shape.iter().find(|&&d| d < 0) {
        return Err(Error::invalid(
            "as_strided",
            format!("negative dimension {d} in shape {shape:?}"),
        ));
    }
    let flat = flatten(a, 0, -1)?;
    Array::from_primitive(
        shape::AsStrided {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        },
        vec![flat],
    )
}

/// A copy of `a` (same values, its own row-major buffer).
pub fn copy(a: &Array) -> Result<Array> {
    Array::from_primitive(shape::Copy {}, vec![a.clone()])
}

/// `a` unchanged, but gradients do not flow back through it.
pub fn stop_gradient(a: &Array) -> Result<Array> {
    Array::from_primitive(shape::StopGradient {}, vec![a.clone()])
}

/// `inputs` unchanged, computed only after `dependencies` (MLX's `mx.depends`):
/// one Depends node whose outputs are the inputs.
pub fn depends(inputs: &[Array], dependencies: &[Array]) -> Result<Vec<Array>> {
    if inputs.is_empty() {
        return Err(Error::invalid("depends", "expected at least one input"));
    }
    if dependencies.is_empty() {
        return Ok(inputs.to_vec());
    }
    let all: Vec<Array> = inputs.iter().chain(dependencies).cloned().collect();
    Array::from_primitive_multi(
        Box::new(shape::Depends {
            outputs: inputs.len() as u64,
        }),
        all,
    )
}

/// The number of elements of `a` along `axes` (its reciprocal when
/// `inverted`) as a 0-d array of `dtype` that follows `a`'s shape: a
/// NumberOfElements node under StopGradient, as MLX builds it in shapeless
/// traces. (Outside those, MLX folds it into a constant; callers that want
/// that can use [`Array::scalar_of`].)
pub fn number_of_elements(a: &Array, axes: &[i32], inverted: bool, dtype: Dtype) -> Result<Array> {
    let axes: Vec<i32> = crate::shape::normalize_axes("number_of_elements", axes, a.ndim())?
        .into_iter()
        .map(|x| x as i32)
        .collect();
    let n = Array::from_primitive(
        shape::NumberOfElements {
            axes,
            inverted,
            dtype,
        },
        vec![a.clone()],
    )?;
    stop_gradient(&n)
}
