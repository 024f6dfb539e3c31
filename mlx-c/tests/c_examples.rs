//! The C example (examples/c/run.c), compiled with the system C compiler
//! against the headers and libmlxc built by cargo, imports files written
//! by Python MLX and by this library's Rust API and matches their stored
//! or closed-form outputs.

mod support;

use mlx::{Array, ExportOptions, Kwargs};
use support::{
    assert_close, assert_success, check_fixture, compile, root, run, run_c, scratch, Link,
};

fn fixture(rel: &str) -> std::path::PathBuf {
    root().join("tests/fixtures").join(rel)
}

#[test]
fn mlx_kwargs_fixture() {
    check_fixture(&fixture("mlx/kwargs"), &[]);
}

#[test]
fn mlx_multi_trace_fixture() {
    check_fixture(&fixture("mlx/multi_trace"), &[]);
}

#[test]
fn mlx_shapeless_fixture() {
    check_fixture(&fixture("mlx/shapeless"), &[]);
}

#[test]
fn mlx_transformer_block() {
    check_fixture(&fixture("mlx_models/transformer_float32"), &[]);
}

#[test]
fn mlx_fixture_imported_from_memory() {
    check_fixture(&fixture("mlx/kwargs"), &["--from-bytes"]);
}

/// `y = x * scale + shift`, `z = x - shift`, exported from Rust in the
/// native format with one keyword input.
fn export_affine(path: &std::path::Path) {
    let x = Array::from_slice(&[0.0f32; 6], &[2, 3]).unwrap();
    let shift = Array::from_slice(&[0.0f32; 3], &[3]).unwrap();
    let mut kwargs = Kwargs::new();
    kwargs.insert("shift".into(), shift);
    let opts = ExportOptions {
        metadata: "affine from Rust".into(),
        ..Default::default()
    };
    mlx::export_function_kwargs(
        path,
        |args: &[Array], kw: &Kwargs| {
            let scale = Array::scalar(2.5f32);
            let y = mlx::ops::add(&mlx::ops::multiply(&args[0], &scale)?, &kw["shift"])?;
            let z = mlx::ops::subtract(&args[0], &kw["shift"])?;
            Ok(vec![y, z])
        },
        &[x],
        &kwargs,
        &opts,
    )
    .unwrap();
}

fn rust_exported(extra: &[&str]) {
    let dir = scratch(&format!("rust_exported{}", extra.join("")));
    let file = dir.join("affine.bin");
    export_affine(&file);
    let xs = [1.0f32, -2.0, 3.5, 0.25, 4.0, -0.5];
    let shift = [10.0f32, 20.0, 30.0];
    mlx::io::save_npy(dir.join("x.npy"), &Array::from_slice(&xs, &[2, 3]).unwrap()).unwrap();
    mlx::io::save_npy(
        dir.join("shift.npy"),
        &Array::from_slice(&shift, &[3]).unwrap(),
    )
    .unwrap();
    let p = |name: &str| dir.join(name).display().to_string();
    let mut args = vec![
        p("affine.bin"),
        p("x.npy"),
        "--kw".into(),
        format!("shift={}", p("shift.npy")),
    ];
    args.extend(["--out".into(), dir.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = run(run_c(), &args);
    assert_success("run.c on a Rust-exported file", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("metadata: \"affine from Rust\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("trace 0: (float32[2, 3], shift=float32[3])"),
        "{stdout}"
    );
    // Closed forms, computed here element by element.
    let y: Vec<f32> = (0..6).map(|i| xs[i] * 2.5 + shift[i % 3]).collect();
    let z: Vec<f32> = (0..6).map(|i| xs[i] - shift[i % 3]).collect();
    for (i, want) in [y, z].iter().enumerate() {
        let got = mlx::io::load_npy(dir.join(format!("out{i}.npy"))).unwrap();
        let want = Array::from_slice(want, &[2, 3]).unwrap();
        assert_close(&format!("output {i}"), &got, &want, 0.0, 0.0);
    }
}

#[test]
fn rust_exported_native_file() {
    rust_exported(&[]);
}

#[test]
fn rust_exported_from_memory_trusted() {
    rust_exported(&["--from-bytes", "--trust"]);
}

#[test]
fn inputs_made_in_c_and_printed() {
    // With no .npy inputs, run.c builds the first trace's inputs itself:
    // x = [0, 0.1, ..., 0.5] (2x3) and shift = [0, 0.1, 0.2].
    let dir = scratch("made_in_c");
    let file = dir.join("affine.bin");
    export_affine(&file);
    let out = run(run_c(), &[file.display().to_string()]);
    assert_success("run.c with inputs made in C", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // y = 2.5 x + shift by hand: [[0, .35, .7], [.75, 1.1, 1.45]], printed
    // as MLX prints (6 significant digits).
    let want = "output 0 =\narray([[0, 0.35, 0.7],\n       [0.75, 1.1, 1.45]], dtype=float32)";
    assert!(stdout.contains(want), "expected\n{want}\nin\n{stdout}");
}

#[test]
fn static_library_links() {
    let exe = scratch("bin").join("run_static");
    compile(
        &[root().join("examples/c/run.c")],
        &exe,
        false,
        Link::Static,
    );
    let dir = fixture("mlx/multi_trace");
    let out_dir = scratch("static_multi_trace");
    let out = run(
        &exe,
        &[
            dir.join("fn.mlxfn").display().to_string(),
            dir.join("t1_arg0.npy").display().to_string(),
            "--out".into(),
            out_dir.display().to_string(),
        ],
    );
    assert_success("run.c linked statically", &out);
    let got = mlx::io::load_npy(out_dir.join("out0.npy")).unwrap();
    let want = mlx::io::load_npy(dir.join("t1_out0.npy")).unwrap();
    assert_close("static multi_trace t1", &got, &want, 1e-5, 1e-6);
}
