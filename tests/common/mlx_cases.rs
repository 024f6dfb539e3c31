//! Runs fixture cases written by Python MLX (a folder with `.mlxfn` files,
//! inputs, MLX's outputs and a `case.json` describing them; layout in
//! tests/fixtures/mlx/README.md). Used by tests/export/mlx_fixtures.rs and mlx_models.rs.

use mlx::export::write_table;
use mlx::{ops, Array, Data, Dtype, Format, Kwargs, Spec};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The folder of fixture case `name` under tests/fixtures/`root`.
pub fn case_dir(root: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(root)
        .join(name)
}

/// Reads a case's case.json.
pub fn read_case(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("case.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    serde_json::from_str(&text).unwrap()
}

/// Loads an array described by a case.json descriptor (bf16 stored as uint16 bits).
pub fn load(dir: &Path, desc: &Value) -> Array {
    let a = mlx::io::load_npy(dir.join(desc["file"].as_str().unwrap())).unwrap();
    let dtype = Dtype::from_name(desc["dtype"].as_str().unwrap()).unwrap();
    if dtype == Dtype::Bfloat16 && a.dtype() == Dtype::Uint16 {
        let d: Data = a.data().unwrap();
        return Array::from_data(d, Spec::new(a.shape(), Dtype::Bfloat16));
    }
    assert_eq!(a.dtype(), dtype, "{desc}");
    a
}

/// Elements as f64, complex numbers as (re, im) pairs.
fn flat_f64(a: &Array) -> Vec<f64> {
    let a = if a.dtype() == Dtype::Complex64 {
        ops::view(a, Dtype::Float32).unwrap()
    } else {
        a.clone()
    };
    let a = ops::astype(&a, Dtype::Float64).unwrap();
    a.to_vec::<f64>().unwrap()
}

/// `flat` index of an array of `shape` as a multi-index (complex: which part too).
fn where_is(flat: usize, shape: &[i32], complex: bool) -> String {
    let (mut i, part) = if complex {
        (flat / 2, if flat.is_multiple_of(2) { ".re" } else { ".im" })
    } else {
        (flat, "")
    };
    let mut idx = vec![0usize; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        let d = d.max(1) as usize;
        idx[k] = i % d;
        i /= d;
    }
    format!("{idx:?}{part}")
}

/// Compares `got` with `want`: bit for bit if `exact`, else numpy `allclose`
/// (NaNs equal). The error names the worst element, the max abs and relative
/// errors and where they occur.
pub fn compare(got: &Array, want: &Array, exact: bool, rtol: f64, atol: f64) -> Result<(), String> {
    if got.shape() != want.shape() || got.dtype() != want.dtype() {
        return Err(format!(
            "got {:?} {}, want {:?} {}",
            got.shape(),
            got.dtype().name(),
            want.shape(),
            want.dtype().name()
        ));
    }
    let complex = got.dtype() == Dtype::Complex64;
    let (g, w) = (flat_f64(got), flat_f64(want));
    let bits_equal =
        || mlx::io::save_npy_bytes(got).unwrap() == mlx::io::save_npy_bytes(want).unwrap();
    let (mut max_abs, mut abs_at, mut max_rel, mut rel_at) = (0.0f64, 0, 0.0f64, 0);
    let (mut bad, mut first_bad) = (0usize, None);
    for (i, (&x, &y)) in g.iter().zip(&w).enumerate() {
        let both_nan = x.is_nan() && y.is_nan();
        let d = if both_nan || x == y {
            0.0
        } else {
            (x - y).abs()
        };
        let r = if d == 0.0 { 0.0 } else { d / y.abs() };
        if d > max_abs || d.is_nan() && !max_abs.is_nan() {
            (max_abs, abs_at) = (d, i);
        }
        if r > max_rel {
            (max_rel, rel_at) = (r, i);
        }
        let ok = if exact {
            both_nan || x.to_bits() == y.to_bits()
        } else {
            d <= atol + rtol * y.abs()
        };
        if !ok {
            bad += 1;
            first_bad.get_or_insert(i);
        }
    }
    if bad == 0 && (!exact || bits_equal()) {
        return Ok(());
    }
    let shape = got.shape();
    let at = |i: usize| where_is(i, shape, complex);
    let mode = if exact {
        "exact".to_string()
    } else {
        format!("rtol {rtol}, atol {atol}")
    };
    Err(match first_bad {
        Some(f) => format!(
            "{bad} of {} elements differ ({mode}); first at {}: got {}, want {}; \
             max abs error {max_abs:e} at {}; max rel error {max_rel:e} at {}",
            g.len(),
            at(f),
            g[f],
            w[f],
            at(abs_at),
            at(rel_at)
        ),
        None => "values equal as f64 but the bytes differ (signed zero or NaN payload)".into(),
    })
}

fn check_output(got: &Array, want: &Array, desc: &Value, what: &str) {
    let exact = desc["exact"].as_bool().unwrap_or(false);
    let rtol = desc["rtol"].as_f64().unwrap_or(1e-5);
    let atol = desc["atol"].as_f64().unwrap_or(1e-6);
    if let Err(e) = compare(got, want, exact, rtol, atol) {
        panic!("{what}: {e}");
    }
}

/// Runs each call of `file` in the case on `f` and checks MLX's outputs;
/// with `compiled`, also through `mlx::transforms::compile`.
fn run_calls(
    dir: &Path,
    case: &Value,
    file: &str,
    f: &mlx::ImportedFunction,
    label: &str,
    compiled: bool,
) {
    for (ci, call) in case["calls"].as_array().unwrap().iter().enumerate() {
        if call["file"].as_str().unwrap() != file {
            continue;
        }
        let args: Vec<Array> = call["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| load(dir, d))
            .collect();
        let mut kwargs = Kwargs::new();
        if let Some(kw) = call["kwargs"].as_object() {
            for (k, d) in kw {
                kwargs.insert(k.clone(), load(dir, d));
            }
        }
        let outs = f
            .call_kwargs(&args, &kwargs)
            .unwrap_or_else(|e| panic!("{label} call {ci}: {e}"));
        let want = call["outputs"].as_array().unwrap();
        assert_eq!(outs.len(), want.len(), "{label} call {ci}: output count");
        mlx::eval(&outs).unwrap_or_else(|e| panic!("{label} call {ci}: {e}"));
        if compiled {
            check_compiled(f, &args, &kwargs, &outs, &format!("{label} call {ci}"));
        }
        for (oi, (g, d)) in outs.iter().zip(want).enumerate() {
            check_output(
                g,
                &load(dir, d),
                d,
                &format!("{label} call {ci} output {oi}"),
            );
        }
    }
}

/// `compile` of the imported function gives the eager outputs bit for bit,
/// on the call that traces it and on the one that replays the cached trace.
fn check_compiled(
    f: &mlx::ImportedFunction,
    args: &[Array],
    kwargs: &Kwargs,
    eager: &[Array],
    label: &str,
) {
    let (n, names): (usize, Vec<String>) = (args.len(), kwargs.keys().cloned().collect());
    let g = mlx::transforms::compile(|a: &[Array]| {
        let kw: Kwargs = names.iter().cloned().zip(a[n..].iter().cloned()).collect();
        f.call_kwargs(&a[..n], &kw)
    });
    let all: Vec<Array> = args.iter().chain(kwargs.values()).cloned().collect();
    for pass in ["traced", "cached"] {
        let outs = g(&all).unwrap_or_else(|e| panic!("{label} compiled ({pass}): {e}"));
        mlx::eval(&outs).unwrap_or_else(|e| panic!("{label} compiled ({pass}): {e}"));
        assert_eq!(outs.len(), eager.len(), "{label} compiled ({pass})");
        for (oi, (c, e)) in outs.iter().zip(eager).enumerate() {
            if let Err(m) = compare(c, e, true, 0.0, 0.0) {
                panic!("{label} output {oi} compiled ({pass}) vs eager: {m}");
            }
        }
    }
}

fn check_signatures(
    f: &mlx::ImportedFunction,
    meta: &Value,
    file: &str,
    case_version: Option<&str>,
) {
    assert_eq!(f.format(), Format::Mlx);
    assert_eq!(
        f.signatures().len() as u64,
        meta["function_count"].as_u64().unwrap(),
        "{file}"
    );
    assert_eq!(f.shapeless(), meta["shapeless"].as_bool().unwrap());
    assert_eq!(f.metadata(), meta["metadata"].as_str().unwrap());
    let written_by = case_version.unwrap_or("0.32.4");
    assert_eq!(f.writer_version(), written_by, "{file}");
    for (sig, want) in f
        .signatures()
        .iter()
        .zip(meta["signatures"].as_array().unwrap())
    {
        let pos: Vec<(Vec<i64>, String)> = want["positional"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    serde_json::from_value(d["shape"].clone()).unwrap(),
                    d["dtype"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let got: Vec<(Vec<i64>, String)> = sig
            .positional
            .iter()
            .map(|s| {
                (
                    s.shape.iter().map(|&d| d as i64).collect(),
                    s.dtype.name().to_string(),
                )
            })
            .collect();
        assert_eq!(got, pos, "{file}: positional signature");
        let kw: Vec<&String> = want["keyword"]
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        let got_kw: Vec<&String> = sig.keyword.iter().map(|(k, _)| k).collect();
        assert_eq!(got_kw, kw, "{file}: keyword names");
    }
}

/// Runs every call of case `name` under tests/fixtures/`root` on the MLX
/// file (eager and compiled), the converted native file and our MLX
/// rewrite of it.
pub fn run_case(root: &str, name: &str) {
    let dir = case_dir(root, name);
    let case = read_case(&dir);
    let tmp = std::env::temp_dir().join(format!("mlx-cases-{}-{root}-{name}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for (file, meta) in case["files"].as_object().unwrap() {
        let f =
            mlx::import_function(dir.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
        check_signatures(&f, meta, file, case["mlx_version"].as_str());
        run_calls(&dir, &case, file, &f, &format!("{name}/{file} (MLX)"), true);

        let native = tmp.join("native.mlxfn");
        write_table(&native, f.table(), Format::Native).unwrap();
        let g = mlx::import_function(&native).unwrap();
        assert_eq!(g.format(), Format::Native);
        run_calls(
            &dir,
            &case,
            file,
            &g,
            &format!("{name}/{file} (native)"),
            false,
        );

        let again = tmp.join("again.mlxfn");
        write_table(&again, g.table(), Format::Mlx).unwrap();
        let h = mlx::import_function(&again).unwrap();
        run_calls(
            &dir,
            &case,
            file,
            &h,
            &format!("{name}/{file} (MLX rewritten)"),
            false,
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Every `.mlxfn` file under tests/fixtures/`root`/*/.
pub fn mlxfn_files(root: &str) -> Vec<PathBuf> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(root);
    let mut out = Vec::new();
    for case in std::fs::read_dir(base).unwrap() {
        let dir = case.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let path = f.unwrap().path();
            if path.extension().is_some_and(|e| e == "mlxfn") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
