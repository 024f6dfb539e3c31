// A key repeated inside #[state(..)]: reported at the repeat.
use mlx::{Array, Data, Result, Spec};

#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
struct Scale {
    #[state(default, skip_mlx, default)]
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
