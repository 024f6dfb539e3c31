// #[state(default)] decodes a missing field as `Default::default()`, so the
// field's type must implement `Default`; the error points at that type.
use mlx::{Array, Data, Result, Spec};

mlx::state_enum! {
    /// No `Default`: there is no natural choice.
    pub enum Rounding { Down = 0, Up = 1 }
}

#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
struct Round {
    #[state]
    digits: i32,
    #[state(default)]
    rounding: Rounding,
}

impl mlx::Primitive for Round {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        Ok(inputs.to_vec())
    }
    fn eval(&self, _: &[Array], _: &[Spec]) -> Result<Vec<Data>> {
        Ok(Vec::new())
    }
}

fn main() {}
