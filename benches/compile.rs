//! `compile` against eager evaluation, memory bandwidth and MLX's own
//! `mx.compile`, all measured in this run (MLX through a Python child, when
//! one with mlx is installed).
//!
//! - a 1000-op chain of tiny element-wise ops: cost per op of one compiled
//!   call (replay + evaluation); target <= 0.3 us/op;
//! - a compiled `a*b+c` over 2^24 f32 against a memcpy of the same bytes;
//!   target >= 0.8x.
//!
//! `cargo bench --bench compile`.

mod common;

use common::{best, ms, python_figures};
use mlx::transforms::compile;
use mlx::{ops, Array};

const MLX_SCRIPT: &str = r#"
import time
import mlx.core as mx
def best(f, reps):
    f()
    t = []
    for _ in range(reps):
        s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    return min(t)
def chain(x, one):
    for i in range(1000):
        x = x + one if i % 2 == 0 else x * one
    return x
x = mx.array([1.0, 2.0, 3.0, 4.0]); one = mx.full((4,), 1e-3)
cc = mx.compile(chain)
print("chain_compiled_us_per_op", best(lambda: mx.eval(cc(x, one)), 50) * 1e6 / 1000)
print("chain_eager_us_per_op", best(lambda: mx.eval(chain(x, one)), 20) * 1e6 / 1000)
n = 1 << 24
a, b, c = (mx.random.uniform(-4, 4, (n,)) for _ in range(3))
fma = mx.compile(lambda a, b, c: a * b + c)
print("fma_compiled_ms", best(lambda: mx.eval(fma(a, b, c)), 5) * 1e3)
"#;

fn ramp(n: usize, k: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 31 % 97) as f32 - 48.0) * k).collect()
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("mlx compile benchmarks ({threads} cores)\n");
    let mlx = python_figures("MLX", MLX_SCRIPT, &[]);
    let show = |k: &str| mlx.get(k).map_or("n/a".to_string(), |v| format!("{v:.3}"));

    // The 1000-op chain, compiled (one fused pass) and eager.
    let chain = |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let mut y = a[0].clone();
        for i in 0..1000 {
            y = if i % 2 == 0 {
                ops::add(&y, &a[1])?
            } else {
                ops::multiply(&y, &a[1])?
            };
        }
        Ok(vec![y])
    };
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let one = Array::from_slice(&[1e-3f32; 4], &[4]).unwrap();
    let args = [x, one];
    let compiled = compile(chain);
    let per_op = |d: std::time::Duration| d.as_secs_f64() * 1e6 / 1000.0;
    let c_us = per_op(best(200, || {
        compiled(&args).unwrap()[0].eval().unwrap();
    }));
    let e_us = per_op(best(50, || {
        chain(&args).unwrap()[0].eval().unwrap();
    }));
    println!("1000-op chain on 4 elements, us per op (build + evaluate):");
    println!(
        "  compiled {c_us:.3} (target <= 0.3: {})   eager {e_us:.3}   MLX compiled {}   MLX eager {}",
        if c_us <= 0.3 { "yes" } else { "NO" },
        show("chain_compiled_us_per_op"),
        show("chain_eager_us_per_op"),
    );

    // a*b+c over 2^24 f32.
    let n = 1usize << 24;
    let (va, vb, vc) = (ramp(n, 0.5), ramp(n, -0.25), ramp(n, 2.0));
    let arrays: Vec<Array> = [&va, &vb, &vc]
        .iter()
        .map(|v| Array::from_slice(v, &[n as i32]).unwrap())
        .collect();
    let fma = compile(|a: &[Array]| Ok(vec![ops::add(&ops::multiply(&a[0], &a[1])?, &a[2])?]));
    let compiled_ms = ms(best(5, || {
        fma(&arrays).unwrap()[0].eval().unwrap();
    }));
    let eager_ms = ms(best(5, || {
        let y = ops::add(&ops::multiply(&arrays[0], &arrays[1]).unwrap(), &arrays[2]).unwrap();
        y.eval().unwrap();
    }));
    let mut dst = vec![0f32; n];
    // memcpy moves two arrays' worth of bytes; a*b+c at least four.
    let copy_ms = 2.0
        * ms(best(5, || {
            dst.copy_from_slice(&va);
            std::hint::black_box(&mut dst);
        }));
    let ratio = copy_ms / compiled_ms;
    println!("\na*b+c over 2^24 f32, ms:");
    println!(
        "  compiled {compiled_ms:.2}   eager {eager_ms:.2}   memcpy x2 {copy_ms:.2}   MLX compiled {}",
        show("fma_compiled_ms")
    );
    println!(
        "  bandwidth ratio (memcpy x2 / compiled) {ratio:.2} (target >= 0.8: {})",
        if ratio >= 0.8 { "yes" } else { "NO" }
    );
}
