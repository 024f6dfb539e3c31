//! Element-wise unary primitives and dtype conversion.

use super::expect_inputs;
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::elementwise::unary;
use crate::primitive::Spec;
use crate::{dispatch_dtype, Array, Data, Dtype, Primitive, Result};

/// Converts elements to another dtype (float to int truncates toward zero).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct AsType {
    #[state]
    pub dtype: Dtype,
}

impl Primitive for AsType {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("AsType", inputs, 1)?;
        Ok(vec![Spec::new(inputs[0].shape.clone(), self.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = dispatch_dtype!(a.dtype(), S => dispatch_dtype!(self.dtype, D => unary::<S, D>(a, &out[0], |x: S| x.cast::<D>())?));
        Ok(vec![d])
    }
}
