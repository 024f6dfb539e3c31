//! Fused attention, 4-bit quantized products and conv2d, side by side with
//! MLX (CPU) and numpy measured in the same run by a python child process
//! (skipped when no python with mlx is found).
//!
//! `cargo bench --bench ops`. Times are the best of a few runs, in ms.

use mlx::fast::{self, Mask};
use mlx::{ops, Array};
use std::process::Command;
use std::time::Instant;

const REPEATS: usize = 5;

/// Deterministic values in [-0.5, 0.5).
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 + seed * 104729) % 1000) as f32 / 1000.0 - 0.5)
        .collect()
}

fn array(shape: &[i32], seed: usize) -> Array {
    let n = shape.iter().map(|&d| d as usize).product();
    let a = Array::from_slice(&values(n, seed), shape).unwrap();
    a.eval().unwrap();
    a
}

/// Best time of `REPEATS` runs of `f` (after one warm-up), in ms.
fn best(f: impl Fn() -> Array) -> f64 {
    f().eval().unwrap();
    (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            f().eval().unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

const PY_SCRIPT: &str = r#"
import time
import numpy as np
import mlx.core as mx

def best(f, n=5):
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts) * 1e3

def run(f):
    return lambda: mx.eval(f())

B, H, L, D = 1, 8, 256, 64
q, k, v = (mx.random.uniform(-0.5, 0.5, (B, H, L, D)) for _ in range(3))
mx.eval(q, k, v)
print("sdpa mlx", best(run(lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125))))
print("sdpa_causal mlx", best(run(lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal"))))
qn, kn, vn = np.array(q), np.array(k), np.array(v)
def np_sdpa():
    s = (qn * 0.125) @ kn.swapaxes(-1, -2)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return s @ vn
print("sdpa numpy", best(np_sdpa))

w = mx.random.uniform(-0.5, 0.5, (4096, 4096))
wq, sc, bi = mx.quantize(w, group_size=64, bits=4)
mx.eval(wq, sc, bi)
for m in (1, 32):
    x = mx.random.uniform(-0.5, 0.5, (m, 4096)); mx.eval(x)
    print(f"qmm{m} mlx", best(run(lambda: mx.quantized_matmul(x, wq, sc, bi, transpose=True, group_size=64, bits=4))))

x = mx.random.uniform(-0.5, 0.5, (8, 64, 64, 32))
wc = mx.random.uniform(-0.5, 0.5, (64, 3, 3, 32))
mx.eval(x, wc)
print("conv2d mlx", best(run(lambda: mx.conv2d(x, wc, padding=1)), n=3))
"#;

/// (name, backend) → ms from the python child, if it runs.
fn time_python() -> Option<Vec<(String, String, f64)>> {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    for py in [venv, "/work/main/.venv/bin/python", "python3"] {
        let Ok(out) = Command::new(py).args(["-c", PY_SCRIPT]).output() else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let rows: Vec<(String, String, f64)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((
                    it.next()?.to_string(),
                    it.next()?.to_string(),
                    it.next()?.parse().ok()?,
                ))
            })
            .collect();
        if !rows.is_empty() {
            return Some(rows);
        }
    }
    None
}

fn main() {
    let mut ours: Vec<(&str, f64)> = Vec::new();

    let (b, h, l, d) = (1, 8, 256, 64);
    let (q, k, v) = (
        array(&[b, h, l, d], 1),
        array(&[b, h, l, d], 2),
        array(&[b, h, l, d], 3),
    );
    ours.push((
        "sdpa",
        best(|| fast::scaled_dot_product_attention(&q, &k, &v, 0.125, None).unwrap()),
    ));
    ours.push((
        "sdpa_causal",
        best(|| fast::scaled_dot_product_attention(&q, &k, &v, 0.125, Some(Mask::Causal)).unwrap()),
    ));

    let w = array(&[4096, 4096], 4);
    let (wq, sc, bi) = ops::quantize(&w, 64, 4).unwrap();
    mlx::eval(&[wq.clone(), sc.clone(), bi.clone()]).unwrap();
    for (m, name) in [(1, "qmm1"), (32, "qmm32")] {
        let x = array(&[m, 4096], 5);
        ours.push((
            name,
            best(|| ops::quantized_matmul(&x, &wq, &sc, &bi, true, 64, 4).unwrap()),
        ));
    }

    let x = array(&[8, 64, 64, 32], 6);
    let wc = array(&[64, 3, 3, 32], 7);
    ours.push((
        "conv2d",
        best(|| ops::conv2d(&x, &wc, (1, 1), (1, 1), (1, 1), 1).unwrap()),
    ));

    let py = time_python();
    if py.is_none() {
        println!("(no python with mlx found: reference timings skipped)");
    }
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>9}",
        "case", "ours ms", "mlx ms", "numpy ms", "mlx/ours"
    );
    for (name, t) in ours {
        let find = |backend: &str| {
            py.as_ref()
                .and_then(|rows| rows.iter().find(|r| r.0 == name && r.1 == backend))
                .map(|r| r.2)
        };
        let (m, n) = (find("mlx"), find("numpy"));
        let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        let ratio = m.map_or("-".to_string(), |m| format!("{:.2}x", m / t));
        println!(
            "{name:<12} {t:>10.3} {:>10} {:>10} {ratio:>9}",
            fmt(m),
            fmt(n)
        );
    }
    println!("(mlx/ours > 1 means we are faster)");
}
