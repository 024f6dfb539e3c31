//! A second program: imports a function file written by another program
//! (by default the quickstart's `mlp.mlxfn`, or any path given) and runs
//! it on ones of each signature's first input shape.
//!
//! `cargo run --example quickstart && cargo run --example run_exported`

use mlx::{ops, Array};

fn main() -> mlx::Result<()> {
    let path = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir()
                .join("mlx-quickstart")
                .join("mlp.mlxfn")
        });
    let f = mlx::import_function(&path)?;
    println!(
        "{}: {:?} format, metadata {:?}",
        path.display(),
        f.format(),
        f.metadata()
    );
    for (i, sig) in f.signatures().iter().enumerate() {
        let args = sig
            .positional
            .iter()
            .map(|s| ops::broadcast_to(&Array::scalar_of(1.0, s.dtype), &s.shape))
            .collect::<mlx::Result<Vec<_>>>()?;
        let kwargs = sig
            .keyword
            .iter()
            .map(|(k, s)| {
                Ok((
                    k.clone(),
                    ops::broadcast_to(&Array::scalar_of(1.0, s.dtype), &s.shape)?,
                ))
            })
            .collect::<mlx::Result<mlx::Kwargs>>()?;
        let outs = f.call_kwargs(&args, &kwargs)?;
        mlx::eval(&outs)?;
        let shapes: Vec<String> = outs
            .iter()
            .map(|o| format!("{} {:?}", o.dtype(), o.shape()))
            .collect();
        println!("  signature {i} {sig} on ones -> {}", shapes.join(", "));
    }
    Ok(())
}
