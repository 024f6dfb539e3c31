//! The `mlxfn` binary on fixture files: printed signatures, written outputs,
//! conversion round trips, corruption detection and exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mlx")
}

fn mlxfn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mlxfn"))
        .args(args)
        .output()
        .expect("run mlxfn")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mlxfn-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn f32_npy(path: &Path) -> Vec<f32> {
    mlx::io::load_npy(path).unwrap().to_vec::<f32>().unwrap()
}

fn assert_allclose(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "{g} vs {w}");
    }
}

#[test]
fn inspect_prints_the_signatures_mlx_recorded() {
    let f = fixtures().join("kwargs/fn.mlxfn");
    let o = mlxfn(&["inspect", p(&f)]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("format:     mlx"), "{t}");
    assert!(
        t.contains("(float32[2, 3], a_offset=float32[], mid=float32[2, 3], z_scale=float32[3]) -> (float32[2, 3], float32[2, 3])"),
        "{t}"
    );
    assert!(t.contains("Broadcast 3"), "{t}");
}

#[test]
fn inspect_json_lists_every_trace_and_the_metadata() {
    let f = fixtures().join("multi_trace/fn.mlxfn");
    let o = mlxfn(&["inspect", "--json", p(&f)]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let case: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("multi_trace/case.json")).unwrap(),
    )
    .unwrap();
    let meta = &case["files"]["fn.mlxfn"];
    assert_eq!(
        v["functions"].as_array().unwrap().len() as u64,
        meta["function_count"].as_u64().unwrap()
    );
    assert_eq!(v["metadata"], meta["metadata"]);
    assert_eq!(v["format"], "mlx");
}

#[test]
fn run_writes_the_outputs_mlx_computed() {
    let d = fixtures().join("eval_mlp");
    let out = tmp("run_out");
    let o = mlxfn(&[
        "run",
        p(&d.join("eval_mlp.mlxfn")),
        "-i",
        p(&d.join("c0_arg0.npy")),
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("out0: float32"), "{}", text(&o));
    assert_allclose(
        &f32_npy(&out.join("out0.npy")),
        &f32_npy(&d.join("c0_out0.npy")),
    );
}

#[test]
fn run_takes_keyword_and_indexed_inputs() {
    let d = fixtures().join("kwargs");
    let out = tmp("kw_out");
    let o = mlxfn(&[
        "run",
        p(&d.join("fn.mlxfn")),
        "-i",
        &format!("z_scale={}", p(&d.join("c0_kw_z_scale.npy"))),
        "-i",
        &format!("0={}", p(&d.join("c0_arg0.npy"))),
        "-i",
        &format!("a_offset={}", p(&d.join("c0_kw_a_offset.npy"))),
        "-i",
        &format!("mid={}", p(&d.join("c0_kw_mid.npy"))),
        "-o",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_allclose(
        &f32_npy(&out.join("out1.npy")),
        &f32_npy(&d.join("c0_out1.npy")),
    );
}

#[test]
fn convert_round_trips_and_verify_flags_corruption() {
    let src = fixtures().join("eval_mlp/eval_mlp.mlxfn");
    let native = tmp("mlp.native");
    let back = tmp("mlp.back.mlxfn");
    assert!(mlxfn(&["convert", p(&src), p(&native), "--to", "native"])
        .status
        .success());
    assert!(mlxfn(&["convert", p(&native), p(&back), "--to", "mlx"])
        .status
        .success());
    for f in [&native, &back] {
        let o = mlxfn(&["verify", p(f)]);
        assert!(o.status.success(), "{}", text(&o));
        let out = tmp("conv_out");
        let arg = fixtures().join("eval_mlp/c0_arg0.npy");
        assert!(mlxfn(&["run", p(f), "-i", p(&arg), "-o", p(&out)])
            .status
            .success());
        assert_allclose(
            &f32_npy(&out.join("out0.npy")),
            &f32_npy(&fixtures().join("eval_mlp/c0_out0.npy")),
        );
    }
    let mut bytes = std::fs::read(&native).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x10;
    let bad = tmp("mlp.bad");
    std::fs::write(&bad, bytes).unwrap();
    let o = mlxfn(&["verify", p(&bad)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("checksum mismatch for constant"),
        "{}",
        text(&o)
    );
}

#[test]
fn dot_writes_a_graph() {
    let f = fixtures().join("eval_mlp/eval_mlp.mlxfn");
    let out = tmp("g.dot");
    let o = mlxfn(&["dot", p(&f), "-o", p(&out)]);
    assert!(o.status.success(), "{}", text(&o));
    let g = std::fs::read_to_string(&out).unwrap();
    assert!(g.starts_with("digraph") && g.contains("AddMM"), "{g}");
}

#[test]
fn exit_codes_for_bad_usage_and_failures() {
    assert_eq!(mlxfn(&["bogus"]).status.code(), Some(2));
    assert_eq!(mlxfn(&["run"]).status.code(), Some(2));
    let missing = mlxfn(&["inspect", "/nonexistent/x.mlxfn"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing).contains("/nonexistent/x.mlxfn"));
    let d = fixtures().join("kwargs");
    let a = d.join("c0_arg0.npy");
    let dup = mlxfn(&[
        "run",
        p(&d.join("fn.mlxfn")),
        "-i",
        &format!("0={}", p(&a)),
        "-i",
        &format!("0={}", p(&a)),
    ]);
    assert_eq!(dup.status.code(), Some(2), "{}", text(&dup));
    let wrong = mlxfn(&["run", p(&d.join("fn.mlxfn")), "-i", p(&a)]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong).contains("no exported signature"),
        "{}",
        text(&wrong)
    );
    let dot = mlxfn(&["dot", p(&d.join("fn.mlxfn")), "--function", "5"]);
    assert_eq!(dot.status.code(), Some(2));
}

fn versions(release: &str, case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/mlx_versions")
        .join(release)
        .join(case)
        .join("fn.mlxfn")
}

#[test]
fn inspect_prints_which_mlx_releases_read_the_file() {
    // Written by 0.26.5 with a 4-bit quantized linear: `AffineQuantize`
    // and the mode-less state last until 0.29.0.
    let o = mlxfn(&["inspect", p(&versions("0.26.5", "quantized"))]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("mlx reads:  MLX 0.26.5 to 0.28.0"),
        "{}",
        text(&o)
    );
    // The same graph from 0.32.4, converted for 0.28.0, reads the same way.
    let old = tmp("quantized_0.28.0.mlxfn");
    let c = mlxfn(&[
        "convert",
        p(&versions("0.32.4", "quantized")),
        p(&old),
        "--to",
        "mlx",
        "--mlx-version",
        "0.28.0",
    ]);
    assert!(c.status.success(), "{}", text(&c));
    let o = mlxfn(&["inspect", "--json", p(&old)]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["writer_version"], "0.28.0");
    assert_eq!(v["mlx_readers"]["first"], "0.26.5");
    assert_eq!(v["mlx_readers"]["last"], "0.28.0");
    assert_eq!(v["mlx_readers"]["text"], "MLX 0.26.5 to 0.28.0");
    // A 0.32.4 file without version-dependent primitives: from 0.32.1 (the
    // header's metadata) on.
    let o = mlxfn(&["inspect", p(&versions("0.32.4", "transformer"))]);
    assert!(
        text(&o).contains("mlx reads:  MLX 0.32.1 and later"),
        "{}",
        text(&o)
    );
}

#[test]
fn convert_for_an_older_mlx_refuses_what_it_cannot_run() {
    let out = tmp("refused.mlxfn");
    let to = |src: &Path, v: &str, extra: &[&str]| {
        let mut args = vec![
            "convert",
            p(src),
            p(&out),
            "--to",
            "mlx",
            "--mlx-version",
            v,
        ];
        args.extend_from_slice(extra);
        mlxfn(&args)
    };
    // DivMod rounds toward zero before 0.32.2.
    let o = to(&fixtures().join("multi_output/fn.mlxfn"), "0.30.6", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("MLX 0.30.6 could not run this file") && text(&o).contains("DivMod"),
        "{}",
        text(&o)
    );
    // Metadata needs 0.32.1, unless dropped.
    let mt = fixtures().join("multi_trace/fn.mlxfn");
    let o = to(&mt, "0.32.0", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("--drop-metadata"), "{}", text(&o));
    let o = to(&mt, "0.32.0", &["--drop-metadata"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = mlxfn(&["inspect", p(&out)]);
    assert!(text(&o).contains("metadata:   \"\""), "{}", text(&o));
    assert!(text(&o).contains("MLX 0.26.5 to 0.32.0"), "{}", text(&o));
}
