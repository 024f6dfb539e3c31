// A union has no named state fields to serialise: the derive refuses it at `union`.
use mlx::{Array, Data, Result, Spec};

#[derive(Clone, Copy)]
#[derive(mlx::Primitive)]
union Scale {
    factor: f32,
    bits: u32,
}

impl std::fmt::Debug for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scale")
    }
}

impl PartialEq for Scale {
    fn eq(&self, _: &Self) -> bool {
        true
    }
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
