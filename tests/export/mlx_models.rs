//! Models exported by Python MLX 0.32.4 (tests/fixtures/mlx_models/, made by
//! its generate.py) run here with MLX's results: transformer blocks in
//! f32/f16/bf16 (decomposed as MLX's CPU build writes them, and with the fused
//! fast primitives as a Metal export holds them), conv nets, quantized layers,
//! sampling from a key input, FFTs, and MLX's examples/export train_mlp
//! trained for 100 steps.

use crate::common::mlx_cases;

use mlx::{Array, Dtype};

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            mlx_cases::run_case("mlx_models", stringify!($name));
        }
    )*};
}

cases!(
    transformer_float32,
    transformer_float16,
    transformer_bfloat16,
    transformer_fast_float32,
    transformer_fast_float16,
    conv_plain,
    conv_grouped,
    conv_strided,
    conv_dilated,
    conv_transposed,
    conv_net,
    quantized_linear_4bit,
    quantized_linear_8bit,
    quantize_4bit,
    quantize_8bit,
    random_sampling,
    fft,
    train_mlp,
);

/// Every case folder on disk is listed above (a new fixture cannot be missed).
#[test]
fn every_model_fixture_has_a_test() {
    let src = include_str!("mlx_models.rs");
    let root = mlx_cases::case_dir("mlx_models", "");
    for entry in std::fs::read_dir(root).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            assert!(
                src.contains(&format!("    {name},\n")),
                "fixture {name} has no test"
            );
        }
    }
}

/// MLX's examples/export: state = init_mlp(); 100 times
/// `*state, loss = train_mlp(*state, X, y)`; the losses match Python's.
#[test]
fn train_mlp_100_steps_match_python_losses() {
    let dir = mlx_cases::case_dir("mlx_models", "train_mlp");
    let init = mlx::import_function(dir.join("init_mlp.mlxfn")).unwrap();
    let step = mlx::import_function(dir.join("train_mlp.mlxfn")).unwrap();
    let x = mlx::io::load_npy(dir.join("X.npy")).unwrap();
    let y = mlx::io::load_npy(dir.join("y.npy")).unwrap();
    let want = mlx::io::load_npy(dir.join("losses.npy"))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(want.len(), 100);

    let mut state = init.call(&[]).unwrap();
    assert_eq!(
        state.len(),
        18,
        "8 parameters, 8 SGD buffers, step, learning rate"
    );
    let mut losses = Vec::new();
    for it in 0..100 {
        let mut args: Vec<Array> = state.clone();
        args.push(x.clone());
        args.push(y.clone());
        let mut outs = step
            .call(&args)
            .unwrap_or_else(|e| panic!("step {it}: {e}"));
        mlx::eval(&outs).unwrap();
        let loss = outs.pop().unwrap();
        assert_eq!(loss.dtype(), Dtype::Float32);
        losses.push(loss.to_vec::<f32>().unwrap()[0]);
        state = outs;
    }
    let (mut max_rel, mut at) = (0.0f64, 0);
    for (i, (&g, &w)) in losses.iter().zip(&want).enumerate() {
        let rel = ((g - w) as f64).abs() / (w as f64).abs();
        if rel > max_rel {
            (max_rel, at) = (rel, i);
        }
    }
    println!(
        "train_mlp: loss {} -> {}, max relative error {max_rel:e} at step {at}",
        losses[0], losses[99]
    );
    assert!(
        max_rel <= 1e-4,
        "max relative loss error {max_rel:e} at step {at}: got {}, want {}",
        losses[at],
        want[at]
    );
    assert!(
        losses[99] < losses[0] / 10.0,
        "training did not reduce the loss"
    );
}

/// The fused fast primitives of a Metal-style file, rewritten as MLX's CPU
/// decompositions (`decompose_fast`), give MLX's `mx.fast` results, and the
/// rewritten file holds no fused primitive.
#[test]
fn transformer_fast_decomposed_for_mlx_cpu() {
    for name in ["transformer_fast_float32", "transformer_fast_float16"] {
        let dir = mlx_cases::case_dir("mlx_models", name);
        let case = mlx_cases::read_case(&dir);
        let f = mlx::import_function(dir.join("gpu.mlxfn")).unwrap();
        let table = mlx::export::decompose_fast(f.table()).unwrap();
        for t in &table.functions {
            for e in &t.entries {
                assert!(
                    !mlx::export::is_fused_fast(&*e.primitive),
                    "{name}: {} left in the decomposed table",
                    e.primitive.name()
                );
            }
        }
        let path =
            std::env::temp_dir().join(format!("decomposed-{}-{name}.mlxfn", std::process::id()));
        mlx::export::write_table(&path, &table, mlx::Format::Mlx).unwrap();
        let g = mlx::import_function(&path).unwrap();
        for (ci, call) in case["calls"].as_array().unwrap().iter().enumerate() {
            let args: Vec<Array> = call["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| mlx_cases::load(&dir, d))
                .collect();
            let got = g.call(&args).unwrap();
            let d = &call["outputs"][0];
            let want = mlx_cases::load(&dir, d);
            let (rtol, atol) = (d["rtol"].as_f64().unwrap(), d["atol"].as_f64().unwrap());
            if let Err(e) = mlx_cases::compare(&got[0], &want, false, rtol, atol) {
                panic!("{name} call {ci} (decomposed): {e}");
            }
        }
        std::fs::remove_file(&path).ok();
    }
}

/// A mismatch names how many elements differ, the first one, and the
/// largest absolute and relative errors with their multi-index.
#[test]
fn mismatch_messages_show_max_errors_and_where() {
    let want = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let got = Array::from_slice(&[1.0f32, 2.5, 3.0, 4.0, 5.0, 9.0], &[2, 3]).unwrap();
    let e = mlx_cases::compare(&got, &want, false, 1e-5, 1e-5).unwrap_err();
    assert!(e.contains("2 of 6 elements differ"), "{e}");
    assert!(e.contains("first at [0, 1]"), "{e}");
    assert!(e.contains("max abs error 3e0 at [1, 2]"), "{e}");
    assert!(e.contains("max rel error 5e-1 at [1, 2]"), "{e}");
    let e = mlx_cases::compare(&got, &want, true, 0.0, 0.0).unwrap_err();
    assert!(e.contains("(exact)"), "{e}");
    assert!(mlx_cases::compare(&want, &want, true, 0.0, 0.0).is_ok());
    let z = mlx::ops::view(
        &mlx::ops::reshape(&want, &[3, 2]).unwrap(),
        Dtype::Complex64,
    )
    .unwrap();
    let z2 = mlx::ops::view(&mlx::ops::reshape(&got, &[3, 2]).unwrap(), Dtype::Complex64).unwrap();
    let e = mlx_cases::compare(&z2, &z, false, 1e-5, 1e-5).unwrap_err();
    assert!(e.contains("first at [0, 0].im"), "{e}");
}

/// `random::categorical` from one distribution takes MLX's inverse-CDF path
/// (cumsum + searchsorted) and draws MLX's samples bit for bit (the
/// random_sampling fixture's 6th output: categorical(log p, num_samples=6,
/// key=split(key)[0])).
#[test]
fn categorical_from_one_distribution_matches_mlx() {
    let dir = mlx_cases::case_dir("mlx_models", "random_sampling");
    let case = mlx_cases::read_case(&dir);
    for call in case["calls"].as_array().unwrap() {
        let key = mlx_cases::load(&dir, &call["args"][0]);
        let want = mlx_cases::load(&dir, &call["outputs"][5]);
        let (k1, _) = mlx::random::split_pair(&key).unwrap();
        let p = Array::from_slice(&[0.1f32, 0.2, 0.3, 0.4], &[4]).unwrap();
        let logits = mlx::ops::log(&p).unwrap();
        let got = mlx::random::categorical(&logits, -1, None, Some(6), Some(&k1)).unwrap();
        if let Err(e) = mlx_cases::compare(&got, &want, true, 0.0, 0.0) {
            panic!("categorical: {e}");
        }
    }
}
