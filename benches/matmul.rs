//! 2048³ matrix products in GFLOP/s, side by side with numpy's `np.matmul`
//! measured in the same run (skipped when no python with numpy is found).
//!
//! `cargo bench --bench matmul` (set `MATMUL_N` for another size).

use mlx::{ops, Array, Dtype};
use std::process::Command;
use std::time::Instant;

const REPEATS: usize = 3;

/// Best time of `REPEATS` runs of `a @ b`, in seconds.
fn time_ours(n: i32, dtype: Dtype) -> f64 {
    let vals: Vec<f32> = (0..(n * n) as usize)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let x = Array::from_slice(&vals, &[n, n]).unwrap();
    let a = ops::astype(&x, dtype).unwrap();
    let b = ops::astype(&ops::transpose(&x, &[]).unwrap(), dtype).unwrap();
    mlx::eval(&[a.clone(), b.clone()]).unwrap();
    ops::matmul(&a, &b).unwrap().eval().unwrap(); // warm up (thread pool, pages)
    (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            ops::matmul(&a, &b).unwrap().eval().unwrap();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

const NUMPY_SCRIPT: &str = r#"
import sys, time
import numpy as np
n = int(sys.argv[1])
for name in ("float32", "float64"):
    a = np.random.rand(n, n).astype(name)
    b = np.random.rand(n, n).astype(name)
    np.matmul(a, b)
    best = min(
        (lambda t: (np.matmul(a, b), time.perf_counter() - t)[1])(time.perf_counter())
        for _ in range(3)
    )
    print(name, best)
"#;

/// numpy's best times per dtype name, or `None` without python + numpy.
fn time_numpy(n: i32) -> Option<Vec<(String, f64)>> {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    let candidates = [venv, "/work/main/.venv/bin/python", "python3"];
    for py in candidates {
        let Ok(out) = Command::new(py)
            .args(["-c", NUMPY_SCRIPT, &n.to_string()])
            .output()
        else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<(String, f64)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((it.next()?.to_string(), it.next()?.parse().ok()?))
            })
            .collect();
        if !rows.is_empty() {
            return Some(rows);
        }
    }
    None
}

fn main() {
    let n: i32 = std::env::var("MATMUL_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2048);
    let flops = 2.0 * (n as f64).powi(3);
    let gflops = |secs: f64| flops / secs / 1e9;
    let numpy = time_numpy(n);
    if numpy.is_none() {
        println!("numpy not found: reporting our numbers only");
    }
    println!("matmul {n}x{n} @ {n}x{n}, best of {REPEATS}, GFLOP/s");
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>12}",
        "dtype", "ours", "numpy", "ratio", "vs our f32"
    );
    let ours_f32 = gflops(time_ours(n, Dtype::Float32));
    for (dtype, name) in [
        (Dtype::Float32, "float32"),
        (Dtype::Float16, "float16"),
        (Dtype::Bfloat16, "bfloat16"),
        (Dtype::Float64, "float64"),
    ] {
        let ours = if dtype == Dtype::Float32 {
            ours_f32
        } else {
            gflops(time_ours(n, dtype))
        };
        let np = numpy
            .as_ref()
            .and_then(|rows| rows.iter().find(|(k, _)| k == name))
            .map(|(_, t)| gflops(*t));
        let (np_s, ratio) = match np {
            Some(g) => (format!("{g:.1}"), format!("{:.2}x", ours / g)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{name:<10} {ours:>10.1} {np_s:>10} {ratio:>10} {:>11.2}x",
            ours / ours_f32
        );
    }
}
