// Two `name`s (one file name per primitive): reported at the second.
use mlx::{Array, Data, Result, Spec};

#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "Scale", name = "Rescale")]
struct Scale {
    #[state]
    factor: f32,
}

impl mlx::Primitive for Scale {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        Ok(inputs.to_vec())
    }
    fn eval(&self, _: &[Array], _: &[Spec]) -> Result<Vec<Data>> {
        Ok(Vec::new())
    }
}

fn main() {}
