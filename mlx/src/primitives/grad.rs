//! Shared pieces of the derivative rules (`Primitive::vjp` / `jvp`).
//!
//! Rules build their results with the ops, so a gradient is an ordinary
//! lazy graph: it can be evaluated, traced, compiled and exported.
//!
//! - Element-wise primitives describe one [`Partial`] per input (the local
//!   derivative); [`elementwise_rules!`] turns that into both `vjp` (with
//!   the cotangent summed back over broadcast axes) and `jvp`.
//! - Primitives that are linear in some inputs (shape ops, casts, sums)
//!   get their `jvp` from [`linear_jvp`]: the primitive applied to the
//!   tangents.

use crate::primitive::{Primitive, Spec};
use crate::{ops, Array, Result};

/// Zeros shaped and typed by `spec` (a broadcast 0-d constant, no buffer).
pub(crate) fn zeros(spec: &Spec) -> Result<Array> {
    ops::broadcast_to(&Array::scalar_of(0.0, spec.dtype), &spec.shape)
}

/// Zeros shaped and typed like `a`.
pub(crate) fn zeros_like(a: &Array) -> Result<Array> {
    zeros(a.spec())
}

/// A 0-d constant of `a`'s dtype (so arithmetic with `a` keeps its dtype).
pub(crate) fn constant(v: f64, a: &Array) -> Array {
    Array::scalar_of(v, a.dtype())
}

/// `g` summed down to `shape` and cast to `dtype`: undoes numpy
/// broadcasting (leading axes added, size-1 axes stretched). Built as a
/// keepdims sum and a squeeze, as MLX does, so shapeless traces stay valid.
pub(crate) fn unbroadcast(g: Array, shape: &[i32], dtype: crate::Dtype) -> Result<Array> {
    let g = if g.shape() == shape {
        g
    } else if g.ndim() < shape.len() {
        ops::broadcast_to(&g, shape)?
    } else {
        let lead = g.ndim() - shape.len();
        let axes: Vec<i32> = (0..g.ndim())
            .filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1))
            .map(|i| i as i32)
            .collect();
        let summed = if axes.is_empty() {
            g
        } else {
            ops::sum(&g, &axes, true)?
        };
        let lead_axes: Vec<i32> = (0..lead as i32).collect();
        if lead_axes.is_empty() {
            summed
        } else {
            ops::squeeze(&summed, &lead_axes)?
        }
    };
    ops::cast_to(&g, dtype)
}

/// `a` conjugated when complex (vjps of complex functions pull back
/// through the conjugate of the local derivative, as MLX's rules do).
fn conj(a: &Array) -> Result<Array> {
    ops::conjugate(a)
}

/// How an element-wise output changes with one of its inputs.
pub(crate) enum Partial {
    /// The derivative is 1.
    One,
    /// The derivative is -1.
    MinusOne,
    /// The derivative is 0 (piecewise constant, or not differentiable and
    /// treated as constant, as MLX does for comparisons and rounding).
    Zero,
    /// The derivative is this array (it broadcasts against the output).
    Times(Array),
    /// The derivative is the reciprocal of this array (divides, which is
    /// how MLX writes rules like `d log x = dx / x`).
    Over(Array),
}

impl Partial {
    /// The tangent `t` pushed through (`None` when the derivative is 0).
    fn push(&self, t: &Array) -> Result<Option<Array>> {
        Ok(Some(match self {
            Partial::One => t.clone(),
            Partial::MinusOne => ops::negative(t)?,
            Partial::Zero => return Ok(None),
            Partial::Times(d) => ops::multiply(t, d)?,
            Partial::Over(d) => ops::divide(t, d)?,
        }))
    }

    /// The cotangent `c` pulled back (through the conjugate derivative).
    fn pull(&self, c: &Array) -> Result<Option<Array>> {
        match self {
            Partial::Times(d) => Partial::Times(conj(d)?).push(c),
            Partial::Over(d) => Partial::Over(conj(d)?).push(c),
            other => other.push(c),
        }
    }
}

/// The signature of an element-wise primitive's derivative: input index,
/// primals and the output give the [`Partial`] of that input.
pub(crate) type PartialFn<P> = fn(&P, usize, &[Array], &Array) -> Result<Partial>;

/// vjp of an element-wise primitive from its partial derivatives: each
/// requested input gets the pulled-back cotangent, summed over the axes it
/// was broadcast along, in its own dtype.
pub(crate) fn elementwise_vjp(
    primals: &[Array],
    cot: &Array,
    argnums: &[usize],
    partial: impl Fn(usize) -> Result<Partial>,
) -> Result<Vec<Array>> {
    argnums
        .iter()
        .map(|&i| {
            let p = &primals[i];
            match partial(i)?.pull(cot)? {
                Some(g) => unbroadcast(g, p.shape(), p.dtype()),
                None => zeros_like(p),
            }
        })
        .collect()
}

/// jvp of an element-wise primitive from its partial derivatives: the sum
/// of the pushed tangents, broadcast and cast to the output's spec.
pub(crate) fn elementwise_jvp(
    tangents: &[Array],
    argnums: &[usize],
    out: &Spec,
    partial: impl Fn(usize) -> Result<Partial>,
) -> Result<Vec<Array>> {
    let mut acc: Option<Array> = None;
    for (t, &i) in tangents.iter().zip(argnums) {
        if let Some(term) = partial(i)?.push(t)? {
            acc = Some(match acc {
                Some(a) => ops::add(&a, &term)?,
                None => term,
            });
        }
    }
    let t = match acc {
        Some(t) => ops::broadcast_to(&t, &out.shape)?,
        None => return Ok(vec![zeros(out)?]),
    };
    Ok(vec![ops::cast_to(&t, out.dtype)?])
}

/// The outputs of `p` applied again to `primals` (a jvp rule that needs
/// the primal output builds it; an unused node is never evaluated).
pub(crate) fn reapply(p: &dyn Primitive, primals: &[Array]) -> Result<Vec<Array>> {
    Array::from_primitive_multi(p.clone_boxed(), primals.to_vec())
}

/// jvp of a primitive that is linear in the inputs for which `linear`
/// holds (the others, such as start indices, stay fixed): the primitive
/// applied to the tangents, with zeros for linear inputs without one.
pub(crate) fn linear_jvp(
    p: &dyn Primitive,
    primals: &[Array],
    tangents: &[Array],
    argnums: &[usize],
    linear: impl Fn(usize) -> bool,
) -> Result<Vec<Array>> {
    let inputs = primals
        .iter()
        .enumerate()
        .map(|(i, x)| {
            if !linear(i) {
                return Ok(x.clone());
            }
            match argnums.iter().position(|&a| a == i) {
                Some(k) => ops::cast_to(&tangents[k], x.dtype()),
                None => zeros_like(x),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    reapply(p, &inputs)
}

/// Zeros for every requested input: the vjp of a piecewise-constant
/// primitive (MLX's rule for comparisons, rounding, arg-reductions).
pub(crate) fn zero_vjp(primals: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
    argnums.iter().map(|&i| zeros_like(&primals[i])).collect()
}

/// Zeros for every output of `p` at `primals`: the matching jvp.
pub(crate) fn zero_jvp(p: &dyn Primitive, primals: &[Array]) -> Result<Vec<Array>> {
    let specs: Vec<Spec> = primals.iter().map(|a| a.spec().clone()).collect();
    p.output_specs(&specs)?.iter().map(zeros).collect()
}

/// Implements `vjp` and `jvp` inside an `impl Primitive` block, from the
/// element-wise partial derivative `|prim, input, primals, output| ..`
/// (a [`PartialFn`]); `zero` for a piecewise-constant primitive.
macro_rules! elementwise_rules {
    (zero) => {
        fn vjp(
            &self,
            primals: &[Array],
            _cotangents: &[Array],
            argnums: &[usize],
            _outputs: &[Array],
        ) -> Result<Vec<Array>> {
            $crate::primitives::grad::zero_vjp(primals, argnums)
        }
        fn jvp(
            &self,
            primals: &[Array],
            _tangents: &[Array],
            _argnums: &[usize],
        ) -> Result<Vec<Array>> {
            $crate::primitives::grad::zero_jvp(self, primals)
        }
    };
    ($partial:expr) => {
        fn vjp(
            &self,
            primals: &[Array],
            cotangents: &[Array],
            argnums: &[usize],
            outputs: &[Array],
        ) -> Result<Vec<Array>> {
            let partial: $crate::primitives::grad::PartialFn<Self> = $partial;
            $crate::primitives::grad::elementwise_vjp(primals, &cotangents[0], argnums, |i| {
                partial(self, i, primals, &outputs[0])
            })
        }
        fn jvp(
            &self,
            primals: &[Array],
            tangents: &[Array],
            argnums: &[usize],
        ) -> Result<Vec<Array>> {
            let partial: $crate::primitives::grad::PartialFn<Self> = $partial;
            let out = $crate::primitives::grad::reapply(self, primals)?;
            $crate::primitives::grad::elementwise_jvp(tangents, argnums, out[0].spec(), |i| {
                partial(self, i, primals, &out[0])
            })
        }
    };
}
pub(crate) use elementwise_rules;

/// Implements `jvp` inside an `impl Primitive` block for a primitive linear
/// in every input (or in those for which the given predicate holds).
macro_rules! linear_jvp_rule {
    () => {
        $crate::primitives::grad::linear_jvp_rule!(|_| true);
    };
    ($linear:expr) => {
        fn jvp(
            &self,
            primals: &[Array],
            tangents: &[Array],
            argnums: &[usize],
        ) -> Result<Vec<Array>> {
            $crate::primitives::grad::linear_jvp(self, primals, tangents, argnums, $linear)
        }
    };
}
pub(crate) use linear_jvp_rule;

/// Implements `vjp` and `jvp` inside an `impl Primitive` block for a
/// one-input primitive that is linear in its input: the pullback
/// `|prim, primal, cotangent| ..` gives the input's cotangent, and the jvp
/// applies the primitive to the tangent.
macro_rules! linear_rules {
    ($pullback:expr) => {
        fn vjp(
            &self,
            primals: &[Array],
            cotangents: &[Array],
            _argnums: &[usize],
            _outputs: &[Array],
        ) -> Result<Vec<Array>> {
            let pullback: fn(&Self, &Array, &Array) -> Result<Array> = $pullback;
            Ok(vec![pullback(self, &primals[0], &cotangents[0])?])
        }
        $crate::primitives::grad::linear_jvp_rule!();
    };
}
pub(crate) use linear_rules;
