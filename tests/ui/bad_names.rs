// Registry names cannot hold whitespace (MLX cuts names at the first space)
// and an alias cannot repeat a name.
use mlx::{Array, Data, Result, Spec};

#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "Soft Shrink", aliases("SoftShrink2", "SoftShrink2"))]
struct SoftShrink {
    #[state]
    lambda: f32,
}

impl mlx::Primitive for SoftShrink {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        Ok(inputs.to_vec())
    }
    fn eval(&self, _: &[Array], _: &[Spec]) -> Result<Vec<Data>> {
        Ok(Vec::new())
    }
}

fn main() {}
