//! Files written by Python MLX 0.32.4 (tests/fixtures/mlx/, see its README)
//! run here with MLX's results. Each case is also converted to the native
//! format and re-written in MLX's format by us, and must give the same
//! results from those files.

mod common;

use mlx::export::write_table;
use mlx::{Array, Data, Dtype, Format, Kwargs, Spec};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn case_dir(name: &str) -> PathBuf {
    common::fixture("mlx").join(name)
}

/// Loads an array described by a case.json descriptor (bf16 stored as uint16 bits).
fn load(dir: &Path, desc: &Value) -> Array {
    let a = mlx::io::load_npy(dir.join(desc["file"].as_str().unwrap())).unwrap();
    let dtype = Dtype::from_name(desc["dtype"].as_str().unwrap()).unwrap();
    if dtype == Dtype::Bfloat16 && a.dtype() == Dtype::Uint16 {
        let d: Data = a.data().unwrap();
        return Array::from_data(d, Spec::new(a.shape(), Dtype::Bfloat16));
    }
    assert_eq!(a.dtype(), dtype, "{desc}");
    a
}

fn check_output(got: &Array, want: &Array, desc: &Value, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    if desc["exact"].as_bool().unwrap_or(false) {
        common::assert_bits_eq(got, want);
    } else {
        let rtol = desc["rtol"].as_f64().unwrap_or(1e-5);
        let atol = desc["atol"].as_f64().unwrap_or(1e-6);
        common::assert_close(got, want, rtol, atol);
    }
}

fn run_calls(dir: &Path, case: &Value, file: &str, f: &mlx::ImportedFunction, label: &str) {
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

fn check_signatures(f: &mlx::ImportedFunction, meta: &Value, file: &str) {
    assert_eq!(f.format(), Format::Mlx);
    assert_eq!(
        f.signatures().len() as u64,
        meta["function_count"].as_u64().unwrap(),
        "{file}"
    );
    assert_eq!(f.shapeless(), meta["shapeless"].as_bool().unwrap());
    assert_eq!(f.metadata(), meta["metadata"].as_str().unwrap());
    assert_eq!(f.writer_version(), "0.32.4");
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

/// Runs every call of a case on the MLX file, the converted native file and our MLX rewrite.
fn run_case(name: &str) {
    let dir = case_dir(name);
    let case: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
    let tmp = std::env::temp_dir().join(format!("mlx-fixtures-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for (file, meta) in case["files"].as_object().unwrap() {
        let f =
            mlx::import_function(dir.join(file)).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
        check_signatures(&f, meta, file);
        run_calls(&dir, &case, file, &f, &format!("{name}/{file} (MLX)"));

        let native = tmp.join("native.mlxfn");
        write_table(&native, f.table(), Format::Native).unwrap();
        let g = mlx::import_function(&native).unwrap();
        assert_eq!(g.format(), Format::Native);
        run_calls(&dir, &case, file, &g, &format!("{name}/{file} (native)"));

        let again = tmp.join("again.mlxfn");
        write_table(&again, g.table(), Format::Mlx).unwrap();
        let h = mlx::import_function(&again).unwrap();
        run_calls(
            &dir,
            &case,
            file,
            &h,
            &format!("{name}/{file} (MLX rewritten)"),
        );
    }
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            run_case(stringify!($name));
        }
    )*};
}

cases!(
    scalar_add,
    kwargs,
    multi_trace,
    eval_mlp,
    multi_output,
    no_inputs,
    shapeless,
    elementwise_zoo,
    gather_scatter,
    cumsum,
    shape_zoo,
    sort_argmax
);

/// Every MLX fixture cut at every byte is an error (never a panic); whole, it parses.
#[test]
fn truncation_sweep_over_every_mlx_fixture() {
    let mut files = 0;
    for case in std::fs::read_dir(common::fixture("mlx")).unwrap() {
        let dir = case.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let path = f.unwrap().path();
            if path.extension().is_none_or(|e| e != "mlxfn") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            assert!(
                mlx::export::mlx::decode(&bytes, &name, true).is_ok()
                    || has_unknown_primitive(&bytes, &name)
            );
            for len in 0..bytes.len() {
                assert!(
                    mlx::export::mlx::decode(&bytes[..len], &name, true).is_err(),
                    "{name} truncated to {len} bytes parsed"
                );
            }
            files += 1;
        }
    }
    assert!(files >= 12, "only {files} fixture files found");
}

/// Fixtures whose primitives are not implemented yet fail with UnknownPrimitive, nothing else.
fn has_unknown_primitive(bytes: &[u8], name: &str) -> bool {
    matches!(
        mlx::export::mlx::decode(bytes, name, true),
        Err(mlx::Error::UnknownPrimitive { .. })
    )
}
