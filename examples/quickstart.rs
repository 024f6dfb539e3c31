//! Quickstart: build a small MLP in Rust, export it (native and MLX
//! formats), import it back, run it, and check the imported results
//! against the eager ones.

use mlx::{ops, Array, ExportOptions, Format, Kwargs};

/// Deterministic pseudo-random weights (no RNG needed for a demo).
fn weights(rows: i32, cols: i32, seed: u32) -> mlx::Result<Array> {
    let n = (rows * cols) as u32;
    let v: Vec<f32> = (0..n)
        .map(|i| {
            ((i.wrapping_mul(2654435761)
                .wrapping_add(seed.wrapping_mul(40503))
                >> 16)
                % 1000) as f32
                / 1000.0
                - 0.5
        })
        .collect();
    Array::from_slice(&v, &[rows, cols])
}

fn main() -> mlx::Result<()> {
    let (w1, b1) = (weights(8, 16, 1)?, weights(1, 16, 2)?);
    let (w2, b2) = (weights(16, 4, 3)?, weights(1, 4, 4)?);

    // The model: relu(x @ w1 + b1) @ w2 + b2, capturing its weights.
    let mlp = move |x: &[Array]| -> mlx::Result<Vec<Array>> {
        let h = ops::maximum(
            &ops::addmm(&b1, &x[0], &w1, 1.0, 1.0)?,
            &Array::scalar(0.0f32),
        )?;
        Ok(vec![ops::addmm(&b2, &h, &w2, 1.0, 1.0)?])
    };

    let x = weights(3, 8, 5)?;
    let eager = mlp(std::slice::from_ref(&x))?[0].to_vec::<f32>()?;

    let dir = std::env::temp_dir().join("mlx-quickstart");
    std::fs::create_dir_all(&dir).map_err(|e| mlx::Error::io(&dir, e))?;
    for (format, name) in [
        (Format::Native, "mlp.mlxfn"),
        (Format::Mlx, "mlp_mlx_format.mlxfn"),
    ] {
        let path = dir.join(name);
        let opts = ExportOptions {
            metadata: "quickstart MLP 8-16-4".into(),
            format,
            shapeless: false,
            ..Default::default()
        };
        // Two traces in one file: batch 3 and batch 1.
        let mut ex = mlx::exporter(&path, |a: &[Array], _: &Kwargs| mlp(a), &opts)?;
        ex.export(std::slice::from_ref(&x), &Kwargs::new())?;
        ex.export(&[weights(1, 8, 6)?], &Kwargs::new())?;
        ex.finish()?;
        let size = std::fs::metadata(&path)
            .map_err(|e| mlx::Error::io(&path, e))?
            .len();

        let f = mlx::import_function(&path)?;
        let y = f.call(std::slice::from_ref(&x))?[0].clone();
        let imported = y.to_vec::<f32>()?;
        let max_diff = imported
            .iter()
            .zip(&eager)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!(
            "exported {} ({size} bytes, {:?} format, metadata {:?})",
            path.display(),
            f.format(),
            f.metadata()
        );
        for (i, s) in f.signatures().iter().enumerate() {
            println!("  signature {i}: {s}");
        }
        println!(
            "  imported call -> {:?} {:?}, max |imported - eager| = {max_diff:e}",
            y.shape(),
            y.dtype()
        );
        println!("  first row: {:?}", &imported[..4]);
        assert!(max_diff == 0.0, "imported results differ from eager ones");
    }
    println!("ok: export -> import -> run reproduces the eager results");
    Ok(())
}
