//! `mlxfn run`: call a file's function on arrays from files.

use crate::inputs::{adopt_bf16, collect};
use crate::Failure;
use mlx::{ops, Array, Dtype};
use std::path::Path;
use std::time::Instant;

/// min / max / mean of a real array, for the summary line.
fn summary(a: &Array) -> String {
    if a.dtype().is_complex() || a.size() == 0 {
        return String::new();
    }
    let Ok(v) = ops::astype(a, Dtype::Float64).and_then(|x| x.to_vec::<f64>()) else {
        return String::new();
    };
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    format!("  min {min:.6} max {max:.6} mean {mean:.6}")
}

pub fn run(file: &Path, inputs: &[String], out: Option<&Path>) -> Result<(), Failure> {
    let f = mlx::import_function(file)?;
    let (mut args, mut kwargs) = collect(inputs)?;
    // Reinterpret bf16 bit patterns for the first signature of this arity.
    if let Some(sig) = f
        .signatures()
        .iter()
        .find(|s| s.positional.len() == args.len() && s.keyword.len() == kwargs.len())
    {
        for (a, s) in args.iter_mut().zip(&sig.positional) {
            *a = adopt_bf16(a, s);
        }
        for (k, s) in &sig.keyword {
            if let Some(a) = kwargs.get_mut(k) {
                *a = adopt_bf16(a, s);
            }
        }
    }
    let start = Instant::now();
    let outs = f.call_kwargs(&args, &kwargs)?;
    mlx::eval(&outs)?;
    let took = start.elapsed();
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| Failure {
            code: 1,
            msg: format!("{}: {e}", dir.display()),
        })?;
    }
    for (i, o) in outs.iter().enumerate() {
        let saved = match out {
            Some(dir) => {
                let p = dir.join(format!("out{i}.npy"));
                mlx::io::save_npy(&p, o)?;
                format!(" -> {}", p.display())
            }
            None => String::new(),
        };
        println!("out{i}: {} {:?}{}{saved}", o.dtype(), o.shape(), summary(o));
    }
    println!("ran in {:.3} ms", took.as_secs_f64() * 1e3);
    Ok(())
}
