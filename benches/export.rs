//! Export and import, side by side with MLX (CPU) measured in the same run by
//! a python child process (skipped when no python with mlx is found), and
//! against the plain I/O limit (`std::fs::write` of the same bytes).
//!
//! The model is `y = x @ W` with `W` a float32 constant of 128 or 512 MiB and
//! `x` one row, so the output is tiny and the constant dominates:
//! - export: time to write the file, as throughput of constant bytes;
//! - import + first call: `import_function`, one call, evaluated (best of
//!   three fresh imports; also with checksums off, as MLX checks none);
//! - peak RSS of a fresh process that imports and calls once, over the
//!   constant's size (this binary re-runs itself as that process);
//! - per-call overhead of an imported chain of 1000 tiny element-wise ops.
//!
//! `cargo bench --bench export`. Files go to the system temp directory.

mod common;

use mlx::{ops, Array, ExportOptions, Format, ImportOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const COLS: i32 = 1024;

/// The constant for `mib` MiB: a `[rows, COLS]` float32 matrix.
fn weight(mib: usize) -> Array {
    let rows = (mib << 20) / 4 / COLS as usize;
    let v: Vec<f32> = (0..rows * COLS as usize)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let w = Array::from_slice(&v, &[rows as i32, COLS]).unwrap();
    w.eval().unwrap();
    w
}

fn input(rows: i32) -> Array {
    let v: Vec<f32> = (0..rows).map(|i| (i % 7) as f32 * 0.1).collect();
    Array::from_slice(&v, &[1, rows]).unwrap()
}

fn path_for(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mlx-bench-{}-{name}", std::process::id()))
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Child mode: import `path`, call once with a row of `rows`, print VmHWM.
fn child(path: &str, rows: i32) {
    let f = mlx::import_function(path).unwrap();
    let y = f.call(&[input(rows)]).unwrap();
    y[0].eval().unwrap();
    println!("{}", common::memory::peak_rss());
}

const PY_SCRIPT: &str = r#"
import sys, time, os, resource, subprocess
import mlx.core as mx
mode = sys.argv[1]
if mode == "child":
    f = mx.import_function(sys.argv[2])
    rows = int(sys.argv[3])
    y = f(mx.zeros((1, rows)))[0]
    mx.eval(y)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    sys.exit(0)
cols = 1024
for mib in (128, 512):
    rows = (mib << 20) // 4 // cols
    w = mx.random.uniform(-0.5, 0.5, (rows, cols))
    mx.eval(w)
    x = mx.zeros((1, rows))
    path = sys.argv[2] + f"-mlx-{mib}.mlxfn"
    t = time.perf_counter()
    mx.export_function(path, lambda x: x @ w, x)
    print(f"export_{mib}", (time.perf_counter() - t) * 1e3)
    firsts = []
    for _ in range(3):
        t = time.perf_counter()
        f = mx.import_function(path)
        mx.eval(f(x)[0])
        firsts.append((time.perf_counter() - t) * 1e3)
    print(f"import_{mib}", min(firsts))
    out = subprocess.run([sys.executable, "-c", SCRIPT, "child", path, str(rows)],
                         capture_output=True, text=True)
    print(f"rss_{mib}", out.stdout.strip() or "nan")
    os.remove(path)
    del w, f
def chain(x):
    for i in range(1000):
        x = x + 1e-3 if i % 2 == 0 else x * 1.001
    return x
x = mx.ones((4,))
path = sys.argv[2] + "-mlx-chain.mlxfn"
mx.export_function(path, chain, x)
f = mx.import_function(path)
mx.eval(f(x)[0])
best = min((lambda t: (mx.eval(f(x)[0]), time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(20))
print("chain", best * 1e6 / 1000)
os.remove(path)
"#;

/// MLX's figures by key, when python with mlx runs.
fn mlx_reference(prefix: &Path) -> std::collections::HashMap<String, f64> {
    let script = format!("SCRIPT = {PY_SCRIPT:?}\n{PY_SCRIPT}");
    common::python_figures("MLX", &script, &["main", &prefix.display().to_string()])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "--child" {
        child(&args[2], args[3].parse().unwrap());
        return;
    }
    println!("mlx export/import benchmarks\n");
    let reference = mlx_reference(&path_for("ref"));
    let get = |k: &str| reference.get(k).copied();
    let row = |case: &str, ours: f64, unit: &str, refname: &str, r: Option<f64>, better: &str| {
        let ratio = r.map_or("n/a".into(), |r| format!("{:.2}", r / ours));
        let r = r.map_or("n/a".into(), |r| format!("{r:.2}"));
        println!("{case:<34} {ours:>10.2} {unit:<4} {refname:<12} {r:>10} {ratio:>8}  {better}");
    };
    println!(
        "{:<34} {:>10} {:<4} {:<12} {:>10} {:>8}  (ratio = reference / ours, higher is better)",
        "case", "ours", "", "reference", "ref", "ratio"
    );

    for mib in [128usize, 512] {
        let w = weight(mib);
        let rows = w.shape()[0];
        let as_bytes: Vec<u8> = w
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let raw = path_for(&format!("raw-{mib}"));
        let t = Instant::now();
        std::fs::write(&raw, &as_bytes).unwrap();
        let write_ms = ms(t);
        let t = Instant::now();
        {
            use std::io::Write;
            let mut file = std::fs::File::create(&raw).unwrap();
            file.write_all(&as_bytes).unwrap();
            file.sync_all().unwrap();
        }
        let write_sync_ms = ms(t);
        drop(as_bytes);
        std::fs::remove_file(&raw).ok();

        let path = path_for(&format!("{mib}.mlxfn"));
        let x = input(rows);
        let wc = w.clone();
        let t = Instant::now();
        mlx::export_function(
            &path,
            move |a: &[Array]| Ok(vec![ops::matmul(&a[0], &wc)?]),
            std::slice::from_ref(&x),
            &ExportOptions::default(),
        )
        .unwrap();
        let export_ms = ms(t);
        drop(w);
        let gbs = (mib as f64 / 1024.0) / (export_ms / 1e3);
        let case = format!("export {mib} MiB ({gbs:.2} GB/s)");
        row(&case, export_ms, "ms", "write", Some(write_ms), "no fsync");
        row(
            &case,
            export_ms,
            "ms",
            "write+fsync",
            Some(write_sync_ms),
            "as we do",
        );
        row(
            &case,
            export_ms,
            "ms",
            "MLX",
            get(&format!("export_{mib}")),
            "target >= 2",
        );
        // Best of three fresh imports (each verifies its constants again).
        let first_call = |opts: &ImportOptions| {
            (0..3)
                .map(|_| {
                    let t = Instant::now();
                    let f = mlx::import_function_with(&path, opts).unwrap();
                    f.call(std::slice::from_ref(&x)).unwrap()[0].eval().unwrap();
                    ms(t)
                })
                .fold(f64::INFINITY, f64::min)
        };
        let mlx_first = get(&format!("import_{mib}"));
        row(
            &format!("import + first call {mib} MiB"),
            first_call(&ImportOptions::default()),
            "ms",
            "MLX",
            mlx_first,
            "target >= 5",
        );
        let trusted = ImportOptions {
            verify_checksums: false,
            ..ImportOptions::default()
        };
        row(
            "  the same, checksums not verified",
            first_call(&trusted),
            "ms",
            "MLX",
            mlx_first,
            "MLX verifies none",
        );

        let exe = std::env::current_exe().unwrap();
        let out = Command::new(exe)
            .args(["--child", path.to_str().unwrap(), &rows.to_string()])
            .output()
            .unwrap();
        let rss: f64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(f64::NAN);
        let constant = (mib << 20) as f64;
        println!(
            "{:<34} {:>10.3} x constant (target <= 1.05); MLX {}",
            format!("peak RSS, import + call {mib} MiB"),
            rss / constant,
            get(&format!("rss_{mib}")).map_or("n/a".into(), |r| format!("{:.3} x", r / constant)),
        );
        std::fs::remove_file(&path).ok();
    }

    // Per-call overhead of an imported 1000-op chain on 4 elements.
    let path = path_for("chain.mlxfn");
    let chain = |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let mut y = a[0].clone();
        for i in 0..1000 {
            y = if i % 2 == 0 {
                ops::add(&y, &Array::scalar(1e-3f32))?
            } else {
                ops::multiply(&y, &Array::scalar(1.001f32))?
            };
        }
        Ok(vec![y])
    };
    let x = Array::from_slice(&[1.0f32; 4], &[4]).unwrap();
    let opts = ExportOptions {
        format: Format::Native,
        ..ExportOptions::default()
    };
    mlx::export_function(&path, chain, std::slice::from_ref(&x), &opts).unwrap();
    let f = mlx::import_function(&path).unwrap();
    let per_op = (0..20)
        .map(|_| {
            let t = Instant::now();
            f.call(std::slice::from_ref(&x)).unwrap()[0].eval().unwrap();
            t.elapsed().as_secs_f64() * 1e6 / 1000.0
        })
        .fold(f64::INFINITY, f64::min);
    row(
        "imported 1000-op chain, per op",
        per_op,
        "us",
        "MLX",
        get("chain"),
        "target <= 0.5 us",
    );
    std::fs::remove_file(&path).ok();
}
