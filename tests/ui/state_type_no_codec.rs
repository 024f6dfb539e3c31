// A #[state] field needs a codec; the error points at the field's type.
use mlx::{Array, Data, Result, Spec};

#[derive(Debug, Clone, PartialEq, Default)]
struct Window {
    size: i32,
}

#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
struct Pool {
    #[state]
    axis: i32,
    #[state]
    window: Window,
}

impl mlx::Primitive for Pool {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        Ok(inputs.to_vec())
    }
    fn eval(&self, _: &[Array], _: &[Spec]) -> Result<Vec<Data>> {
        Ok(Vec::new())
    }
}

fn main() {}
