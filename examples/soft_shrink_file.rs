//! Writes `f(x) = 2 * soft_shrink(x, 0.5) + 1` (the user-crate primitive of
//! `user-primitive`) to a native `.mlxfn` file.
//!
//! It made `tests/fixtures/versioning/soft_shrink_v1.mlxfn` while
//! `SoftShrink` had one state field (`lambda`); the field `lower` was added
//! afterwards with `#[state(default)]`, and `tests/export/versioning.rs` checks that
//! the old file still loads and computes the same numbers.
//!
//! ```text
//! cargo run --example soft_shrink_file -- out.mlxfn
//! ```

use mlx::{ops, Array, ExportOptions};

fn main() -> mlx::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "soft_shrink.mlxfn".to_string());
    let example = Array::from_slice(&[0.0f32; 6], &[6])?;
    mlx::export_function(
        &path,
        |a| {
            let s = user_primitive::soft_shrink(&a[0], 0.5)?;
            let y = ops::add(
                &ops::multiply(&s, &Array::scalar(2.0f32))?,
                &Array::scalar(1.0f32),
            )?;
            Ok(vec![y])
        },
        &[example],
        &ExportOptions {
            shapeless: true,
            ..Default::default()
        },
    )?;
    let f = mlx::import_function(&path)?;
    let x = Array::from_slice(&[-2.0f32, -0.5, 0.0, 0.25, 0.75, 3.0], &[6])?;
    println!(
        "wrote {path}; f({:?}) = {:?}",
        x.to_vec::<f32>()?,
        f.call(&[x])?[0].to_vec::<f32>()?
    );
    Ok(())
}
