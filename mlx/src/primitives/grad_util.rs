//! Helpers for the rules of the non-element-wise families (convolution,
//! indexing, sort/scan, fast, FFT, quantized), on top of [`super::grad`]:
//! refusing non-differentiable inputs with the primitive's name, and the
//! forward-mode rules of primitives linear in some inputs (jointly, as a
//! scatter, or one at a time, as a convolution).

use super::grad;
use crate::{ops, Array, Error, Primitive, Result};

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
    grad::linear_jvp(p, primals, tangents, argnums, |i| linear.contains(&i))
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
    for (t, &a) in tangents.iter().zip(argnums) {
        let mut out = grad::linear_jvp(p, primals, std::slice::from_ref(t), &[a], |i| i == a)?;
        let y = out.remove(0);
        total = Some(match total {
            Some(s) => ops::add(&s, &y)?,
            None => y,
        });
    }
    total
        .map(|t| vec![t])
        .ok_or_else(|| Error::invalid(p.name(), "jvp called with no tangents"))
}
