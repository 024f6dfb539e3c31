// The derive supplies state and codecs; the shape rule and kernel are the
// author's `impl Primitive`, and forgetting it is reported at the struct.

#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
struct Scale {
    #[state]
    factor: f32,
}

fn main() {}
