//! A SmolLM-135M-shaped llama exported by Python MLX (issue 17): decode and
//! prefill per call, beside the limits measured in the same run, Python MLX
//! and llama.cpp.
//!
//! The files are large, so they are generated into target/llm/ first:
//!
//!     /work/main/.venv/bin/python benches/llm/generate.py   # ~1 minute
//!     cargo bench --bench llm
//!
//! Environment: `LLM_DIR` (default target/llm), `LLM_VARIANTS` (default
//! f32,bf16,f16,q8g64,q4g64; any `generate.py` wrote), `LLM_PREFILL` (variants
//! whose prefill is timed, default f32,bf16,q4g64), `LLM_MLX=0` skips Python
//! MLX, `LLM_MLX_PREFILL=N` times MLX's prefill N times (~17 s a call),
//! `LLM_LLAMACPP=0` skips llama.cpp.
//!
//! llama.cpp (`benches/llm/llamacpp_times.py`, a GGUF of the same shape with
//! random weights, written into `LLM_DIR` on the first run) needs
//! llama-cpp-python and gguf, which build llama.cpp from source (~5 minutes):
//!
//!     CMAKE_ARGS="-DGGML_NATIVE=ON" .venv/bin/pip install llama-cpp-python gguf
//!
//! Its types stand in for ours: f32 for f32; f16 for both f16 and bf16 (the
//! script writes no bf16 file; f16 moves the same 2 bytes a weight); q8_0 for
//! q8g64 and q4_0 for q4g64, llama.cpp's nearest types but not the same bits:
//! a symmetric f16 scale per 32 weights (8.5 and 4.5 bits a weight) where
//! ours keep an affine f32 scale and bias per 64 (9 and 5 bits).
//!
//! Printed per call: min and median (decode: also "gen min", the calls
//! chained as a generator makes them, caches moved from one call to the
//! next so their updates write in place); the bandwidth limit (bytes of the file,
//! nearly all weights, over the read bandwidth of a 512 MiB sum split between
//! two threads); prefill GFLOP/s against numpy/OpenBLAS's sgemm; Python
//! MLX's and llama.cpp's min with their ratio to ours (theirs / ours, so >1
//! means we are faster); and a fresh process's import, first call and peak
//! RSS for the MLX file and its native conversion, with the time to first
//! token (import + first call) against its bound: two steady calls plus the
//! page-in of the weights, measured as a fresh process reading the file
//! into memory.

mod common;

use common::memory::peak_rss;
use common::{python, python_figures};
use mlx::{ops, Array, Dtype};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// mimalloc, as the `mlxfn` CLI uses (see mlxfn/Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SEQ: i32 = 128;
const SLOTS: i32 = 256;
const LAYERS: usize = 30;
const KV_HEADS: i32 = 3;
const HEAD_DIM: i32 = 64;
const VOCAB: f64 = 49152.0;
const HIDDEN: f64 = 576.0;
const DECODE_REPS: usize = 10;
const PREFILL_REPS: usize = 3;

/// Multiply-adds per token: the linear layers (q, k, v, o, MLP) and the tied
/// logits projection.
fn linear_params() -> f64 {
    let per_layer = HIDDEN * HIDDEN * 2.0 + HIDDEN * 192.0 * 2.0 + 3.0 * HIDDEN * 1536.0;
    per_layer * LAYERS as f64 + VOCAB * HIDDEN
}

/// FLOPs of one 128-token prefill: linear layers plus QK^T and PV (full, not
/// halved for the causal mask).
fn prefill_flops() -> f64 {
    let t = SEQ as f64;
    2.0 * t * linear_params() + LAYERS as f64 * 9.0 * 2.0 * 2.0 * t * t * HEAD_DIM as f64
}

fn variant_dtype(v: &str) -> Dtype {
    match v {
        "bf16" => Dtype::Bfloat16,
        "f16" => Dtype::Float16,
        _ => Dtype::Float32,
    }
}

/// The decode call's inputs: token, offset 128, mask (slots <= 128 visible),
/// then each layer's key and value caches.
fn decode_inputs(dtype: Dtype) -> Vec<Array> {
    let token = Array::from_slice(&[17i32], &[1, 1]).unwrap();
    let offset = Array::from_slice(&[SEQ], &[1]).unwrap();
    let mask: Vec<f32> = (0..SLOTS)
        .map(|i| if i <= SEQ { 0.0 } else { f32::NEG_INFINITY })
        .collect();
    let mask = Array::from_slice(&mask, &[1, 1, 1, SLOTS]).unwrap();
    let n = (KV_HEADS * SLOTS * HEAD_DIM) as usize;
    let mut out = vec![token, offset, ops::astype(&mask, dtype).unwrap()];
    for l in 0..2 * LAYERS {
        let vals: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 + l * 31) % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        let a = Array::from_slice(&vals, &[1, KV_HEADS, SLOTS, HEAD_DIM]).unwrap();
        out.push(ops::astype(&a, dtype).unwrap());
    }
    mlx::eval(&out).unwrap();
    out
}

fn prefill_inputs() -> Vec<Array> {
    let t: Vec<i32> = (0..SEQ).map(|i| i * 7919 % 49152).collect();
    vec![Array::from_slice(&t, &[1, SEQ]).unwrap()]
}

/// Seconds of each of `reps` calls after a first one (also returned).
fn time_calls(f: &mlx::ImportedFunction, args: &[Array], reps: usize) -> (f64, Vec<f64>) {
    let one = || {
        let t = Instant::now();
        let outs = f.call(args).unwrap();
        mlx::eval(&outs).unwrap();
        t.elapsed().as_secs_f64()
    };
    let first = one();
    let mut times: Vec<f64> = (0..reps).map(|_| one()).collect();
    times.sort_by(f64::total_cmp);
    (first, times)
}

/// Seconds of each of `reps` decode calls made as a generator makes them:
/// every call's cache outputs are moved into the next call's inputs, so
/// nothing but the graph holds them and the cache updates write in place.
fn time_decode_chained(f: &mlx::ImportedFunction, mut args: Vec<Array>, reps: usize) -> Vec<f64> {
    let fixed = args.len() - 2 * LAYERS;
    let mut times = Vec::with_capacity(reps + 1);
    for _ in 0..=reps {
        let t = Instant::now();
        let mut outs = f.call(&args).unwrap();
        args.truncate(fixed);
        mlx::eval(&outs).unwrap();
        times.push(t.elapsed().as_secs_f64());
        args.extend(outs.drain(1..));
    }
    times.remove(0);
    times.sort_by(f64::total_cmp);
    times
}

fn min_median(t: &[f64]) -> (f64, f64) {
    (t[0], t[t.len() / 2])
}

/// Read bandwidth in bytes/s: best of five sums over 512 MiB, two threads.
fn bandwidth() -> f64 {
    let words = 512usize << 20 >> 3;
    let data: Vec<u64> = (0..words as u64).collect();
    let sum = |part: &[u64]| {
        let mut acc = [0u64; 8];
        for c in part.chunks_exact(8) {
            for j in 0..8 {
                acc[j] = acc[j].wrapping_add(c[j]);
            }
        }
        acc.iter().fold(0u64, |a, &b| a.wrapping_add(b))
    };
    let best = (0..5)
        .map(|_| {
            let t = Instant::now();
            let (a, b) = data.split_at(words / 2);
            let s = std::thread::scope(|s| {
                let h = s.spawn(|| sum(a));
                sum(b).wrapping_add(h.join().unwrap())
            });
            std::hint::black_box(s);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    (words * 8) as f64 / best
}

const SGEMM_SCRIPT: &str = r#"
import time
import numpy as np
n = 2048
a = np.random.rand(n, n).astype("float32")
b = np.random.rand(n, n).astype("float32")
np.matmul(a, b)
best = min((lambda t: (np.matmul(a, b), time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(5))
print("sgemm_gflops", 2 * n**3 / best / 1e9)
"#;

/// Child mode: import `file`, call it once, print times and peak RSS.
fn child(file: &str, variant: &str) {
    if variant == "read" {
        // The page-in reference: the file's bytes read into fresh memory.
        let t = Instant::now();
        let bytes = std::fs::read(file).unwrap();
        println!("read {}\nbytes {}", t.elapsed().as_secs_f64(), bytes.len());
        return;
    }
    let args = decode_inputs(variant_dtype(variant));
    let base = peak_rss();
    let t = Instant::now();
    let f = mlx::import_function(file).unwrap();
    let import = t.elapsed().as_secs_f64();
    let rss_import = peak_rss();
    let t = Instant::now();
    let outs = f.call(&args).unwrap();
    mlx::eval(&outs).unwrap();
    let first = t.elapsed().as_secs_f64();
    // The call's results (a decode step's new KV caches): memory the
    // caller asked for, beside the constants.
    let outputs: usize = outs.iter().map(Array::nbytes).sum();
    drop(outs);
    let t = Instant::now();
    mlx::eval(&f.call(&args).unwrap()).unwrap();
    let second = t.elapsed().as_secs_f64();
    println!("import {import}\nfirst {first}\nsecond {second}\noutputs {outputs}");
    println!(
        "rss_inputs {base}\nrss_import {rss_import}\nrss_call {}",
        peak_rss()
    );
}

/// Runs the child mode in a fresh process and parses its lines.
fn fresh_process(file: &Path, variant: &str) -> Option<HashMap<String, f64>> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe)
        .args(["--child", file.to_str()?, variant])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("child failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((it.next()?.to_string(), it.next()?.parse().ok()?))
            })
            .collect(),
    )
}

/// The native conversion of an MLX file, written beside it once.
fn native_copy(mlx_file: &Path) -> PathBuf {
    let native = mlx_file.with_extension("native");
    if !native.exists() {
        let f = mlx::import_function(mlx_file).unwrap();
        mlx::export::write_table(&native, f.table(), mlx::Format::Native).unwrap();
    }
    native
}

/// llama.cpp's type standing in for our variant `v` (see the module doc).
fn llama_type(v: &str) -> Option<&'static str> {
    match v {
        "f32" => Some("f32"),
        "bf16" | "f16" => Some("f16"),
        "q8g64" => Some("q8_0"),
        "q4g64" => Some("q4_0"),
        _ => None,
    }
}

/// Runs `benches/llm/<name> DIR DECODE_REPS PREFILL_REPS VARIANT...` (see
/// `python_figures`); None, not run, when the env var `skip` is 0 or `args`
/// name no variant.
fn script_figures(
    what: &str,
    skip: &str,
    name: &str,
    args: &[&str],
) -> Option<HashMap<String, f64>> {
    if std::env::var(skip).as_deref() == Ok("0") || args.len() <= 3 {
        return None;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/llm");
    let script = std::fs::read_to_string(Path::new(dir).join(name)).unwrap_or_default();
    // With -c, Python does not put the script's folder (generate.py) on sys.path.
    let script = format!("import sys; sys.path.insert(0, {dir:?})\n{script}");
    Some(python_figures(what, &script, args))
}

/// `x` with `prec` decimals, or "-".
fn cell(x: Option<f64>, prec: usize) -> String {
    x.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.len() >= 4 && argv[1] == "--child" {
        return child(&argv[2], &argv[3]);
    }
    let dir = std::env::var("LLM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/llm"));
    let variants = list("LLM_VARIANTS", "f32,bf16,f16,q8g64,q4g64");
    let prefill = list("LLM_PREFILL", "f32,bf16,q4g64");
    let missing: Vec<&String> = variants
        .iter()
        .filter(|v| !dir.join(format!("{v}_decode.mlxfn")).exists())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "llm bench: no files for {missing:?} in {}; run\n  {} benches/llm/generate.py {} {}",
            dir.display(),
            python(),
            dir.display(),
            missing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        );
        return;
    }
    let bw = bandwidth();
    let sgemm = python_figures("numpy sgemm", SGEMM_SCRIPT, &[]);
    let sgemm = sgemm.get("sgemm_gflops").copied();
    let dir_str = dir.to_str().unwrap();
    let prefill_reps = std::env::var("LLM_MLX_PREFILL").unwrap_or_else(|_| "0".into());
    let mut args = vec![dir_str, "5", &prefill_reps];
    args.extend(variants.iter().map(|s| s.as_str()));
    let mlx_times =
        script_figures("Python MLX", "LLM_MLX", "mlx_times.py", &args).unwrap_or_default();
    // The prefill table shows only variants also in LLM_VARIANTS.
    let mut args = vec![dir_str, "10", "3"];
    for t in variants.iter().filter_map(|v| llama_type(v)) {
        if !args.contains(&t) {
            args.push(t);
        }
    }
    let llama_times = script_figures("llama.cpp", "LLM_LLAMACPP", "llamacpp_times.py", &args);
    let llama_missing = llama_times.as_ref().is_some_and(|m| m.is_empty());
    let llama_times = llama_times.unwrap_or_default();
    let llama_min = |v: &str, call: &str| {
        let t = llama_type(v)?;
        llama_times.get(&format!("{t}_{call}_min")).copied()
    };
    println!("read bandwidth (512 MiB, 2 threads): {:.1} GB/s", bw / 1e9);
    match sgemm {
        Some(g) => println!("numpy/OpenBLAS sgemm 2048^3: {g:.1} GFLOP/s"),
        None => println!("numpy/OpenBLAS sgemm: not measured (no numpy)"),
    }
    if llama_missing {
        println!(
            "llama.cpp: not measured; to install (builds from source, ~5 minutes): CMAKE_ARGS=\"-DGGML_NATIVE=ON\" {} -m pip install llama-cpp-python gguf",
            python()
        );
    }
    println!(
        "\n{:<7} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7}",
        "decode",
        "min ms",
        "median",
        "gen min",
        "limit ms",
        "lim/us",
        "MLX ms",
        "MLX/us",
        "llama ms",
        "ll/us"
    );
    for v in &variants {
        let file = dir.join(format!("{v}_decode.mlxfn"));
        let bytes = std::fs::metadata(&file).unwrap().len() as f64;
        let f = mlx::import_function(&file).unwrap();
        let args = decode_inputs(variant_dtype(v));
        let (_, times) = time_calls(&f, &args, DECODE_REPS);
        let (lo, med) = min_median(&times);
        // "gen min": calls chained as in generation (caches moved along).
        let chained = time_decode_chained(&f, args, DECODE_REPS)[0];
        let limit = bytes / bw;
        let mlx_min = mlx_times.get(&format!("{v}_decode_min"));
        let ll = llama_min(v, "decode");
        println!(
            "{v:<7} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7.2} {:>9} {:>7} {:>9} {:>7}",
            lo * 1e3,
            med * 1e3,
            chained * 1e3,
            limit * 1e3,
            limit / lo,
            cell(mlx_min.map(|m| m * 1e3), 1),
            cell(mlx_min.map(|m| m / lo), 1),
            cell(ll.map(|m| m * 1e3), 2),
            cell(ll.map(|m| m / lo), 2),
        );
    }
    println!(
        "\n{:<7} {:>9} {:>9} {:>8} {:>9} {:>8} {:>9} {:>7}",
        "prefill", "min ms", "median", "GFLOP/s", "/sgemm", "/f32", "llama ms", "ll/us"
    );
    let mut f32_prefill = None;
    for v in prefill.iter().filter(|v| variants.contains(v)) {
        let file = dir.join(format!("{v}_prefill.mlxfn"));
        let Ok(f) = mlx::import_function(&file) else {
            println!("{v:<7} (no {})", file.display());
            continue;
        };
        let (_, times) = time_calls(&f, &prefill_inputs(), PREFILL_REPS);
        let (lo, med) = min_median(&times);
        if v == "f32" {
            f32_prefill = Some(lo);
        }
        let gflops = prefill_flops() / lo / 1e9;
        let ll = llama_min(v, "prefill");
        println!(
            "{v:<7} {:>9.1} {:>9.1} {:>8.1} {:>9} {:>8} {:>9} {:>7}",
            lo * 1e3,
            med * 1e3,
            gflops,
            cell(sgemm.map(|g| gflops / g), 2),
            cell(f32_prefill.map(|f| lo / f), 2),
            cell(ll.map(|m| m * 1e3), 1),
            cell(ll.map(|m| m / lo), 2),
        );
        if let Some(m) = mlx_times.get(&format!("{v}_prefill_min")) {
            println!("        Python MLX prefill: {:.0} ms", m * 1e3);
        }
    }
    println!(
        "\nfresh process: import, first and second decode call, peak RSS (GB) after import / after the call"
    );
    for v in variants
        .iter()
        .filter(|v| ["f32", "q4g64"].contains(&v.as_str()))
    {
        let mlx_file = dir.join(format!("{v}_decode.mlxfn"));
        let native = native_copy(&mlx_file);
        let bytes = std::fs::metadata(&mlx_file).unwrap().len() as f64;
        // Time to first token against its bound: two steady calls plus
        // the page-in of the weights (a fresh process reading the MLX file
        // into memory). Fresh memory costs vary a lot on a shared machine,
        // so each figure is the median of five fresh processes.
        let runs = |mode: &str| -> Vec<HashMap<String, f64>> {
            (0..5)
                .filter_map(|_| fresh_process(&mlx_file, mode))
                .collect()
        };
        let median = |runs: &[HashMap<String, f64>], keys: &[&str]| {
            let mut sums: Vec<f64> = runs
                .iter()
                .map(|r| {
                    keys.iter()
                        .map(|k| r.get(*k).copied().unwrap_or(f64::NAN))
                        .sum()
                })
                .collect();
            sums.sort_by(f64::total_cmp);
            sums.get(sums.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let (calls, reads) = (runs(v), runs("read"));
        for (kind, file) in [("mlx", &mlx_file), ("native", &native)] {
            // The MLX file's row is the first of its five runs above.
            let r = match kind {
                "mlx" => calls.first().cloned(),
                _ => fresh_process(file, v),
            };
            let Some(r) = r else {
                continue;
            };
            let g = |k: &str| r.get(k).copied().unwrap_or(f64::NAN);
            let inputs = g("rss_inputs");
            println!(
                "{v:<6} {kind:<7} import {:>8.1} ms  first {:>8.1} ms  second {:>7.1} ms  RSS {:.3} / {:.3} GB (+{:.2}x the file; {:.2}x without the call's {:.1} MB of outputs)",
                g("import") * 1e3,
                g("first") * 1e3,
                g("second") * 1e3,
                g("rss_import") / 1e9,
                g("rss_call") / 1e9,
                (g("rss_call") - inputs) / bytes,
                (g("rss_call") - inputs - g("outputs")) / bytes,
                g("outputs") / 1e6,
            );
        }
        let ttft = median(&calls, &["import", "first"]);
        let second = median(&calls, &["second"]);
        let read = median(&reads, &["read"]);
        let bound = 2.0 * second + read;
        println!(
            "{v:<6} mlx     import + first {:.1} ms; bound 2 x second {:.1} ms + page-in {:.1} ms = {:.1} ms ({:.2} of it; medians of 5 processes)",
            ttft * 1e3,
            second * 1e3,
            read * 1e3,
            bound * 1e3,
            ttft / bound
        );
        if let Some(m) = mlx_times.get(&format!("{v}_import")) {
            println!("{v:<6} Python MLX import {:.1} ms", m * 1e3);
        }
    }
}
