//! Element-wise binary primitives. Inputs share one dtype; shapes are
//! broadcast (ops insert explicit Broadcast nodes, as MLX does, but files
//! written by hand may rely on the kernel broadcasting).

use super::expect_inputs;
use crate::backend::cpu::elementwise::binary;
use crate::backend::cpu::num::Num;
use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{dispatch_dtype, Array, Data, Dtype, Error, Primitive, Result};

/// Output spec of a binary op: broadcast shape; `out` dtype or the input's.
pub(crate) fn binary_spec(name: &str, inputs: &[Spec], out: Option<Dtype>) -> Result<Vec<Spec>> {
    expect_inputs(name, inputs, 2)?;
    if inputs[0].dtype != inputs[1].dtype {
        return Err(Error::invalid(
            name,
            format!(
                "inputs must share a dtype, found {} and {}",
                inputs[0].dtype, inputs[1].dtype
            ),
        ));
    }
    let shape = crate::ops::broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
    Ok(vec![Spec::new(shape, out.unwrap_or(inputs[0].dtype))])
}

/// The two inputs as views of the output's shape.
pub(crate) fn broadcast_inputs(inputs: &[Array], out: &Spec) -> Result<(Array, Array)> {
    Ok((
        broadcast_view(&inputs[0], &out.shape)?,
        broadcast_view(&inputs[1], &out.shape)?,
    ))
}

/// Defines a binary primitive whose kernel is `|x, y| expr` for every dtype with [`Num`].
macro_rules! num_binary {
    ($(#[$doc:meta])* $name:ident, $f:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
        pub struct $name {}

        impl Primitive for $name {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                binary_spec(stringify!($name), inputs, None)
            }
            fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
                let (a, b) = broadcast_inputs(inputs, &out[0])?;
                Ok(vec![dispatch_dtype!(out[0].dtype, T => binary::<T, T>(&a, &b, &out[0], <T as Num>::$f)?)])
            }
        }
    };
}

num_binary!(
    /// `a + b`.
    Add, add
);
num_binary!(
    /// `a - b`.
    Subtract, sub
);
num_binary!(
    /// `a * b`.
    Multiply, mul
);
num_binary!(
    /// `a / b` (true division; ops cast integers to float first).
    Divide, div
);
num_binary!(
    /// Element-wise maximum; NaN propagates.
    Maximum, max
);
num_binary!(
    /// Element-wise minimum; NaN propagates.
    Minimum, min
);
