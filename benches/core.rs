//! Core benchmarks, each reported as a ratio against a reference measured in
//! the same run: a plain memcpy of the same bytes (memory bandwidth), and
//! numpy when a Python with numpy is available.
//!
//! Run with `cargo bench --bench core`. Prints one table; a case whose
//! reference is missing (no numpy, primitive not built) says so.

mod common;

use common::{best, ms};
use mlx::primitive::{lookup, MlxReader};
use mlx::{ops, Array};
use std::time::{Duration, Instant};

/// Deterministic pseudo-random f32 values in [-4, 4).
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
        })
        .collect()
}

/// An `Exp` node built through the registry (the element-wise family may not
/// be linked into this build yet).
fn exp_node(x: &Array) -> Option<Array> {
    let entry = lookup("Exp").ok()?;
    let p = (entry.decode_mlx)(&mut MlxReader::new(&[], "bench")).ok()?;
    Array::from_primitive_multi(p, vec![x.clone()]).ok()?.pop()
}

const NUMPY_SCRIPT: &str = r#"
import sys, time
import numpy as np
def best(f, reps):
    f()
    t = []
    for _ in range(reps):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t) * 1e3
rng = np.random.default_rng(0)
n = 1 << 24
a, b, c = (rng.uniform(-4, 4, n).astype(np.float32) for _ in range(3))
x = rng.uniform(-4, 4, (4096, 4096)).astype(np.float32)
def softmax():
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
print("fma", best(lambda: a * b + c, 5))
print("exp", best(lambda: np.exp(x), 5))
print("sum", best(lambda: x.sum(axis=-1), 5))
print("softmax", best(softmax, 3))
"#;

struct Row {
    case: &'static str,
    ours_ms: Option<f64>,
    reference: String,
    ref_ms: Option<f64>,
    /// ratio = reference time / our time (higher is better), target minimum.
    target: f64,
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("mlx core benchmarks ({threads} cores)\n");
    let np = common::python_figures("numpy", NUMPY_SCRIPT, &[]);
    let mut rows = Vec::new();

    // a*b + c over 2^24 f32, against memcpy bandwidth (same useful bytes:
    // 3 reads + 1 write, vs memcpy's 1 read + 1 write of one array).
    let n = 1usize << 24;
    let (va, vb, vc) = (data(n, 1), data(n, 2), data(n, 3));
    let a = Array::from_slice(&va, &[n as i32]).unwrap();
    let b = Array::from_slice(&vb, &[n as i32]).unwrap();
    let c = Array::from_slice(&vc, &[n as i32]).unwrap();
    let fma = best(5, || {
        let y = ops::add(&ops::multiply(&a, &b).unwrap(), &c).unwrap();
        y.eval().unwrap();
    });
    let mut dst = vec![0f32; n];
    let copy = best(5, || {
        dst.copy_from_slice(&va);
        std::hint::black_box(&mut dst);
    });
    // Copy moves 2 arrays' worth of bytes, a*b+c at least 4.
    rows.push(Row {
        case: "a*b+c, 2^24 f32 (bandwidth vs memcpy)",
        ours_ms: Some(ms(fma)),
        reference: "memcpy x2".into(),
        ref_ms: Some(ms(copy) * 2.0),
        target: 0.8,
    });
    rows.push(Row {
        case: "a*b+c, 2^24 f32",
        ours_ms: Some(ms(fma)),
        reference: "numpy".into(),
        ref_ms: np.get("fma").copied(),
        target: 1.0,
    });
    drop((va, vb, vc, a, b, c, dst));

    let side = 4096;
    let x = Array::from_slice(&data(side * side, 4), &[side as i32, side as i32]).unwrap();
    let exp_ms = exp_node(&x).map(|_| {
        ms(best(5, || {
            exp_node(&x).unwrap().eval().unwrap();
        }))
    });
    rows.push(Row {
        case: "exp, 4096^2 f32",
        ours_ms: exp_ms,
        reference: "numpy".into(),
        ref_ms: np.get("exp").copied(),
        target: 1.0,
    });
    let sum = best(5, || {
        ops::sum(&x, &[-1], false).unwrap().eval().unwrap();
    });
    rows.push(Row {
        case: "sum(axis=-1), 4096^2 f32",
        ours_ms: Some(ms(sum)),
        reference: "numpy".into(),
        ref_ms: np.get("sum").copied(),
        target: 0.8,
    });
    let sum0 = best(5, || {
        ops::sum(&x, &[0], false).unwrap().eval().unwrap();
    });
    rows.push(Row {
        case: "sum(axis=0), 4096^2 f32 (vs axis=-1)",
        ours_ms: Some(ms(sum0)),
        reference: "ours, axis=-1".into(),
        ref_ms: Some(ms(sum)),
        target: 0.8,
    });
    let sm = best(3, || {
        ops::softmax(&x, &[-1]).unwrap().eval().unwrap();
    });
    rows.push(Row {
        case: "softmax(axis=-1), 4096^2 f32",
        ours_ms: Some(ms(sm)),
        reference: "numpy".into(),
        ref_ms: np.get("softmax").copied(),
        target: 2.0,
    });
    drop(x);

    // A chain of 1000 tiny element-wise ops: graph evaluation overhead.
    let t0 = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let one = Array::from_slice(&[1e-3f32; 4], &[4]).unwrap();
    let (mut build_t, mut eval_t) = (Duration::MAX, Duration::MAX);
    for _ in 0..20 {
        let s = Instant::now();
        let mut y = t0.clone();
        for i in 0..1000 {
            y = if i % 2 == 0 {
                ops::add(&y, &one).unwrap()
            } else {
                ops::multiply(&y, &one).unwrap()
            };
        }
        let built = Instant::now();
        y.eval().unwrap();
        build_t = build_t.min(built - s);
        eval_t = eval_t.min(built.elapsed());
    }

    println!(
        "{:<40} {:>10} {:>16} {:>10} {:>8} {:>8}  ok",
        "case", "ours ms", "reference", "ref ms", "ratio", "target"
    );
    for r in &rows {
        let ratio = match (r.ours_ms, r.ref_ms) {
            (Some(o), Some(f)) if o > 0.0 => Some(f / o),
            _ => None,
        };
        let fmt = |v: Option<f64>, p: usize| v.map_or("n/a".to_string(), |v| format!("{v:.p$}"));
        let ok = ratio.map_or("skip", |q| if q >= r.target { "yes" } else { "NO" });
        println!(
            "{:<40} {:>10} {:>16} {:>10} {:>8} {:>8.2}  {ok}",
            r.case,
            fmt(r.ours_ms, 2),
            r.reference,
            fmt(r.ref_ms, 2),
            fmt(ratio, 2),
            r.target,
        );
    }
    let per_op = eval_t.as_secs_f64() * 1e6 / 1000.0;
    println!(
        "\n1000-op chain on 4 elements: eval {:.3} us/op (target <= 0.5: {}), graph build {:.3} us/op",
        per_op,
        if per_op <= 0.5 { "yes" } else { "NO" },
        build_t.as_secs_f64() * 1e6 / 1000.0
    );
    println!("ratio = reference time / our time; higher is better.");
}
