//! Quickstart: build a small computation lazily and evaluate it.
//! (Grows into export -> import -> run as those land.)

use mlx::{ops, Array};

fn main() -> mlx::Result<()> {
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let b = Array::from_slice(&[0.5f32, -0.5, 1.0], &[3])?;
    let y = ops::maximum(
        &ops::add(&ops::multiply(&x, &x)?, &b)?,
        &Array::scalar(5.0f32),
    )?;
    println!("x      = {:?} {:?}", x.shape(), x.to_vec::<f32>()?);
    println!("max(x*x + b, 5) = {:?}", y.to_vec::<f32>()?);
    Ok(())
}
