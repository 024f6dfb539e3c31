//! Small helpers shared by the derivative rules of the primitive families:
//! refusing non-differentiable inputs with the primitive's name, reducing a
//! cotangent back to a broadcast parameter's shape, and the forward-mode
//! rule of a primitive that is linear in some of its inputs.

use crate::ops;
use crate::{Array, Error, Primitive, Result};

/// An error naming the primitive and the input that has no derivative.
pub(crate) fn not_differentiable(name: &str, what: &str) -> Error {
    Error::NotDifferentiable(format!("{name} with respect to {what}"))
}

/// Fails unless every index in `argnums` is in `allowed`; `what` names the
/// other inputs (e.g. "its indices").
pub(crate) fn only_args(
    name: &str,
    argnums: &[usize],
    allowed: &[usize],
    what: &str,
) -> Result<()> {
    match argnums.iter().find(|a| !allowed.contains(a)) {
        Some(&i) => Err(not_differentiable(name, &format!("{what} (input {i})"))),
        None => Ok(()),
    }
}

/// `g` summed down to `shape`, the shape of a parameter that was broadcast
/// against `g` (leading axes removed, size-1 axes kept).
pub(crate) fn sum_to_shape(g: &Array, shape: &[i32]) -> Result<Array> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim() - shape.len();
    let mut axes: Vec<i32> = (0..lead as i32).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[lead + i] != 1 {
            axes.push((lead + i) as i32);
        }
    }
    let s = ops::sum(g, &axes, true)?;
    ops::reshape(&s, shape)
}

/// Tangents for every input of `primals`: the given ones at `argnums`,
/// zeros elsewhere among `linear`, the primal itself for the other inputs.
fn substitute(
    primals: &[Array],
    tangents: &[Array],
    argnums: &[usize],
    linear: &[usize],
) -> Result<Vec<Array>> {
    primals
        .iter()
        .enumerate()
        .map(|(i, p)| match argnums.iter().position(|&a| a == i) {
            Some(j) => Ok(tangents[j].clone()),
            None if linear.contains(&i) => ops::zeros_like(p),
            None => Ok(p.clone()),
        })
        .collect()
}

/// Forward-mode rule of a primitive jointly linear in the inputs `linear`
/// (the others, e.g. indices, are constants): the primitive applied to the
/// tangents. `what` names the non-differentiable inputs.
pub(crate) fn linear_jvp(
    p: &dyn Primitive,
    primals: &[Array],
    tangents: &[Array],
    argnums: &[usize],
    linear: &[usize],
    what: &str,
) -> Result<Vec<Array>> {
    only_args(p.name(), argnums, linear, what)?;
    let inputs = substitute(primals, tangents, argnums, linear)?;
    Array::from_primitive_multi(p.clone_boxed(), inputs)
}

/// Forward-mode rule of a primitive linear in each input separately (a
/// product such as a convolution): the sum over the differentiated inputs
/// of the primitive with that input replaced by its tangent.
pub(crate) fn multilinear_jvp(
    p: &dyn Primitive,
    primals: &[Array],
    tangents: &[Array],
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let mut total: Option<Array> = None;
    for (j, &a) in argnums.iter().enumerate() {
        let inputs = substitute(primals, &tangents[j..=j], &[a], &[])?;
        let mut out = Array::from_primitive_multi(p.clone_boxed(), inputs)?;
        let t = out.remove(0);
        total = Some(match total {
            Some(s) => ops::add(&s, &t)?,
            None => t,
        });
    }
    total
        .map(|t| vec![t])
        .ok_or_else(|| Error::invalid(p.name(), "jvp called with no tangents"))
}
