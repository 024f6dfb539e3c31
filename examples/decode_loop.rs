//! Calls an exported decode step of `benches/llm/generate.py` in a loop (a
//! driver for profilers: `perf record` sees only the decode calls).
//!
//!     cargo run --release --example decode_loop -- target/llm/q4g64_decode.mlxfn [CALLS]

use mlx::{ops, Array, Dtype};
use std::time::Instant;

/// mimalloc, as the `mlxfn` CLI uses (see mlxfn/Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let file = argv.get(1).expect("usage: decode_loop FILE [CALLS]");
    let calls: usize = argv.get(2).map_or(20, |s| s.parse().expect("CALLS"));
    let dtype = if file.contains("bf16") {
        Dtype::Bfloat16
    } else if file.contains("f16") {
        Dtype::Float16
    } else {
        Dtype::Float32
    };
    let f = mlx::import_function(file).unwrap();
    // token 17, offset 128, the mask hiding slots > 128, then 30 layers'
    // key and value caches [1, 3, 256, 64].
    let mut args = vec![
        Array::from_slice(&[17i32], &[1, 1]).unwrap(),
        Array::from_slice(&[128i32], &[1]).unwrap(),
    ];
    let mask: Vec<f32> = (0..256)
        .map(|i| if i <= 128 { 0.0 } else { f32::NEG_INFINITY })
        .collect();
    args.push(Array::from_slice(&mask, &[1, 1, 1, 256]).unwrap());
    for l in 0..60usize {
        let vals: Vec<f32> = (0..3 * 256 * 64)
            .map(|i| ((i * 7919 + l * 31) % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        args.push(Array::from_slice(&vals, &[1, 3, 256, 64]).unwrap());
    }
    let mut args: Vec<Array> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if i < 2 {
                a.clone()
            } else {
                ops::astype(a, dtype).unwrap()
            }
        })
        .collect();
    mlx::eval(&args).unwrap();
    let mut times = Vec::new();
    // As a generator calls it: each call's caches are moved into the next
    // call (with FIXED=1 the same inputs every call, which copies the caches).
    let chained = std::env::var("FIXED").is_err();
    for _ in 0..calls {
        let t = Instant::now();
        let mut outs = f.call(&args).unwrap();
        if chained {
            args.truncate(3);
        }
        mlx::eval(&outs).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        if chained {
            args.extend(outs.drain(1..));
        }
    }
    let first = times[0];
    times.sort_by(f64::total_cmp);
    println!(
        "first {first:.2} ms, min {:.2} ms, median {:.2} ms",
        times[0],
        times[times.len() / 2]
    );
}
