//! Runs an MLP exported by Python MLX (`examples/eval_mlp.py`, or the
//! committed fixture made by MLX's own eval_mlp example) in Rust.
//!
//! `cargo run --example eval_mlp [-- FILE]`

use mlx::Array;

fn main() -> mlx::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlx/eval_mlp");
    let path = std::env::args()
        .nth(1)
        .map(Into::into)
        .unwrap_or_else(|| dir.join("eval_mlp.mlxfn"));
    let f = mlx::import_function(&path)?;
    let sig = f.signatures()[0].clone();
    println!(
        "{} (written by MLX {}): {sig}",
        path.display(),
        f.writer_version()
    );
    // Python's input and output: beside the file (eval_mlp.py), or the fixture's.
    let beside = |ext: &str| std::path::PathBuf::from(format!("{}.{ext}.npy", path.display()));
    let (x, want) = match (
        mlx::io::load_npy(beside("x")),
        mlx::io::load_npy(beside("y")),
    ) {
        (Ok(x), Ok(y)) => (x, Some(y)),
        _ if path == dir.join("eval_mlp.mlxfn") => (
            mlx::io::load_npy(dir.join("c0_arg0.npy"))?,
            Some(mlx::io::load_npy(dir.join("c0_out0.npy"))?),
        ),
        _ => {
            let n: i32 = sig.positional[0].shape.iter().product();
            let ramp: Vec<f32> = (0..n).map(|i| (i % 7) as f32 / 7.0).collect();
            (Array::from_slice(&ramp, &sig.positional[0].shape)?, None)
        }
    };
    let y = &f.call(&[x])?[0];
    let v = y.to_vec::<f32>()?;
    println!(
        "output {:?}: first values {:?}",
        y.shape(),
        &v[..v.len().min(4)]
    );
    if let Some(want) = want {
        let w = want.to_vec::<f32>()?;
        let diff = v
            .iter()
            .zip(&w)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!("max |Rust - Python MLX| = {diff:e}");
    }
    Ok(())
}
