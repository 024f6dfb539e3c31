//! The fused `mlx::fast` kernels against MLX's results (MLX's CPU build
//! computes them by decomposition; tests/fixtures/fast/generate.py), the
//! hand-built `fast_synthetic.mlxfn` holding the four fused primitives,
//! strided inputs, and errors.

use crate::common;

use common::{assert_close, fixture};
use mlx::fast::{self, Mask};
use mlx::{ops, Array, Dtype, ExportOptions, Format};

fn load(name: &str) -> Array {
    let plain = fixture(&format!("fast/{name}.npy"));
    if plain.exists() {
        return mlx::io::load_npy(plain).unwrap();
    }
    let bits = mlx::io::load_npy(fixture(&format!("fast/{name}_bf16bits.npy"))).unwrap();
    ops::view(&bits, Dtype::Bfloat16).unwrap()
}

/// Tolerance for results rounded to `dtype` (a few ulps of it).
fn tol(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::Float16 => 4e-3,
        Dtype::Bfloat16 => 3e-2,
        _ => 2e-5,
    }
}

fn check(got: &Array, want: &Array) {
    assert_eq!(got.dtype(), want.dtype());
    let t = tol(want.dtype());
    assert_close(got, want, t, t);
}

#[test]
fn rms_norm_and_layer_norm_every_float_dtype() {
    for tag in ["f32", "f16", "bf16"] {
        let f = |t: &str| load(&format!("norm_{tag}_{t}"));
        let (x, w, b) = (f("x"), f("w"), f("b"));
        check(
            &fast::rms_norm(&x, Some(&w), 1e-5).unwrap(),
            &load(&format!("rms_{tag}_out")),
        );
        check(
            &fast::rms_norm(&x, None, 1e-4).unwrap(),
            &load(&format!("rms_{tag}_now_out")),
        );
        check(
            &fast::layer_norm(&x, Some(&w), Some(&b), 1e-5).unwrap(),
            &load(&format!("ln_{tag}_out")),
        );
        check(
            &fast::layer_norm(&x, None, None, 1e-5).unwrap(),
            &load(&format!("ln_{tag}_now_out")),
        );
        check(
            &fast::layer_norm(&x, Some(&w), None, 1e-5).unwrap(),
            &load(&format!("ln_{tag}_wonly_out")),
        );
    }
}

#[test]
fn norms_of_strided_inputs() {
    let x = load("norm_f32_x");
    // Same values through a transposed copy, read back transposed.
    let xt = ops::transpose(&ops::copy(&ops::transpose(&x, &[]).unwrap()).unwrap(), &[]).unwrap();
    let w = load("norm_f32_w");
    check(
        &fast::rms_norm(&xt, Some(&w), 1e-5).unwrap(),
        &load("rms_f32_out"),
    );
    // A broadcast row normalises to the same row everywhere.
    let row = ops::slice(&x, &[0, 0, 0], &[1, 1, 24], &[]).unwrap();
    let xb = ops::broadcast_to(&row, &[3, 5, 24]).unwrap();
    let y = fast::layer_norm(&xb, None, None, 1e-5)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let want = load("ln_f32_now_out").to_vec::<f32>().unwrap();
    for r in 0..15 {
        for j in 0..24 {
            assert!((y[r * 24 + j] - want[j]).abs() < 2e-5);
        }
    }
}

#[test]
fn rope_variants() {
    let x = load("rope_x");
    let r = |dims, trad, base, scale, off: i32| {
        fast::rope(&x, dims, trad, Some(base), scale, off, None).unwrap()
    };
    check(&r(16, false, 10000.0, 1.0, 0), &load("rope_plain"));
    check(&r(16, true, 10000.0, 1.0, 5), &load("rope_trad"));
    check(&r(8, false, 500.0, 0.5, 2), &load("rope_partial"));
    check(&r(12, true, 10000.0, 2.0, 1), &load("rope_partial_trad"));
    let offs = load("rope_offs");
    check(
        &fast::rope(&x, 16, false, Some(10000.0), 1.0, &offs, None).unwrap(),
        &load("rope_offs_out"),
    );
    let freqs = load("rope_freqs");
    check(
        &fast::rope(&x, 12, false, None, 1.0, 4, Some(&freqs)).unwrap(),
        &load("rope_freqs_out"),
    );
    let x3 = load("rope3_x");
    check(
        &fast::rope(&x3, 8, true, Some(10000.0), 1.0, 7, None).unwrap(),
        &load("rope3_out"),
    );
    for tag in ["f16", "bf16"] {
        let xh = load(&format!("rope_{tag}_x"));
        check(
            &fast::rope(&xh, 16, false, Some(10000.0), 1.0, 3, None).unwrap(),
            &load(&format!("rope_{tag}_out")),
        );
    }
    // The inverse rotation undoes the forward one.
    let y = r(16, false, 10000.0, 1.0, 6);
    let back = fast::rope_inverse(&y, 16, false, Some(10000.0), 1.0, 6, None).unwrap();
    assert_close(&back, &x, 1e-5, 1e-5);
    // An int64 offset array is cast to int32.
    let off64 = ops::astype(&offs, Dtype::Int64).unwrap();
    check(
        &fast::rope(&x, 16, false, Some(10000.0), 1.0, &off64, None).unwrap(),
        &load("rope_offs_out"),
    );
}

fn sdpa(name: &str, scale: f32, mask: Option<&str>, sinks: bool) -> Array {
    let f = |t: &str| load(&format!("{name}_{t}"));
    let m = (mask == Some("array")).then(|| f("mask"));
    let mask = match mask {
        Some("causal") => Some(Mask::Causal),
        Some(_) => Some(Mask::Array(m.as_ref().unwrap())),
        None => None,
    };
    let s = sinks.then(|| f("sinks"));
    fast::scaled_dot_product_attention_sinks(&f("q"), &f("k"), &f("v"), scale, mask, s.as_ref())
        .unwrap()
}

#[test]
fn attention_variants() {
    let inv = |d: f32| 1.0 / d.sqrt();
    check(
        &sdpa("sdpa_plain", inv(16.0), None, false),
        &load("sdpa_plain_out"),
    );
    check(&sdpa("sdpa_gqa", 0.3, None, false), &load("sdpa_gqa_out"));
    check(
        &sdpa("sdpa_causal", inv(8.0), Some("causal"), false),
        &load("sdpa_causal_out"),
    );
    check(
        &sdpa("sdpa_causal_gqa", inv(8.0), Some("causal"), false),
        &load("sdpa_causal_gqa_out"),
    );
    check(
        &sdpa("sdpa_boolmask", inv(8.0), Some("array"), false),
        &load("sdpa_boolmask_out"),
    );
    check(
        &sdpa("sdpa_addmask", inv(8.0), Some("array"), false),
        &load("sdpa_addmask_out"),
    );
    check(
        &sdpa("sdpa_sinks", inv(8.0), None, true),
        &load("sdpa_sinks_out"),
    );
    check(
        &sdpa("sdpa_f16", inv(16.0), Some("causal"), false),
        &load("sdpa_f16_out"),
    );
    check(
        &sdpa("sdpa_bf16", inv(16.0), None, false),
        &load("sdpa_bf16_out"),
    );
}

#[test]
fn attention_with_strided_operands() {
    // k given as a transposed view of a (B, H, D, L) copy.
    let f = |t: &str| load(&format!("sdpa_plain_{t}"));
    let kt = ops::swapaxes(
        &ops::copy(&ops::swapaxes(&f("k"), 2, 3).unwrap()).unwrap(),
        2,
        3,
    )
    .unwrap();
    let got = fast::scaled_dot_product_attention(&f("q"), &kt, &f("v"), 0.25, None).unwrap();
    check(&got, &load("sdpa_plain_out"));
}

#[test]
fn fast_synthetic_file_runs_the_fused_primitives() {
    let f = mlx::import_function(fixture("fast/fast_synthetic.mlxfn")).unwrap();
    let names = ["x", "w", "b", "q", "k", "v", "mask"];
    let args: Vec<Array> = names
        .iter()
        .map(|n| load(&format!("synthetic_in_{n}")))
        .collect();
    let outs = f.call(&args).unwrap();
    assert_eq!(outs.len(), 8);
    for (i, got) in outs.iter().enumerate() {
        let want = load(&format!("synthetic_out{i}"));
        assert_close(got, &want, 2e-5, 2e-5);
    }
    // The graph holds the fused primitives themselves.
    let tape = format!("{:?}", f.table());
    for name in ["RMSNorm", "LayerNorm", "RoPE", "ScaledDotProductAttention"] {
        assert!(tape.contains(name), "{name} missing from the imported tape");
    }
}

#[test]
fn exported_fast_ops_round_trip() {
    let dir = std::env::temp_dir().join(format!("mlx_fast_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = load("rope_x");
    for format in [Format::Native, Format::Mlx] {
        let path = dir.join(format!("fast_{format:?}.mlxfn"));
        mlx::export_function(
            &path,
            |a: &[Array]| {
                let y = fast::rms_norm(&a[0], None, 1e-5)?;
                let y = fast::rope(&y, 16, false, Some(10000.0), 1.0, 2, None)?;
                Ok(vec![fast::scaled_dot_product_attention(
                    &y,
                    &y,
                    &a[0],
                    0.25,
                    Some(Mask::Causal),
                )?])
            },
            std::slice::from_ref(&x),
            &ExportOptions {
                format,
                ..Default::default()
            },
        )
        .unwrap();
        let direct = {
            let y = fast::rms_norm(&x, None, 1e-5).unwrap();
            let y = fast::rope(&y, 16, false, Some(10000.0), 1.0, 2, None).unwrap();
            fast::scaled_dot_product_attention(&y, &y, &x, 0.25, Some(Mask::Causal)).unwrap()
        };
        let got = mlx::import_function(&path)
            .unwrap()
            .call(std::slice::from_ref(&x))
            .unwrap();
        assert_close(&got[0], &direct, 0.0, 0.0);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn errors_name_the_problem() {
    let x = load("norm_f32_x");
    let e = |r: mlx::Result<Array>| r.expect_err("an error").to_string();
    let bad_w = Array::from_slice(&[1f32; 5], &[5]).unwrap();
    assert!(e(fast::rms_norm(&x, Some(&bad_w), 1e-5)).contains("size 24"));
    assert!(e(fast::rms_norm(&Array::scalar(1f32), None, 1e-5)).contains("at least 1 dimension"));
    let ints = ops::astype(&x, Dtype::Int32).unwrap();
    assert!(e(fast::layer_norm(&ints, None, None, 1e-5)).contains("floating point"));

    let rx = load("rope_x");
    assert!(e(fast::rope(&rx, 7, false, Some(1e4), 1.0, 0, None)).contains("even"));
    assert!(e(fast::rope(&rx, 32, false, Some(1e4), 1.0, 0, None)).contains("at most"));
    assert!(e(fast::rope(&rx, 16, false, None, 1.0, 0, None)).contains("neither"));
    let three = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    assert!(e(fast::rope(&rx, 16, false, Some(1e4), 1.0, &three, None)).contains("offset"));
    let v2 = ops::reshape(&rx, &[2, 3, 112]).unwrap();
    assert!(e(fast::rope(
        &ops::reshape(&v2, &[672]).unwrap(),
        8,
        false,
        Some(1e4),
        1.0,
        0,
        None
    ))
    .contains("at least 3 dimensions"));

    let f = |t: &str| load(&format!("sdpa_gqa_{t}"));
    let (q, k, v) = (f("q"), f("k"), f("v"));
    assert!(e(fast::scaled_dot_product_attention(
        &q,
        &k,
        &ops::reshape(&v, &[2, 9, 12]).unwrap(),
        1.0,
        None
    ))
    .contains("rank 4"));
    // 6 query heads over 4 key heads.
    let k4 = ops::concatenate(&[k.clone(), k.clone()], 1).unwrap();
    let v4 = ops::concatenate(&[v.clone(), v.clone()], 1).unwrap();
    assert!(e(fast::scaled_dot_product_attention(&q, &k4, &v4, 1.0, None)).contains("multiple"));
    let bad_mask = Array::from_slice(&[true; 4], &[4]).unwrap();
    assert!(e(fast::scaled_dot_product_attention(
        &q,
        &k,
        &v,
        1.0,
        Some(Mask::Array(&bad_mask))
    ))
    .contains("broadcast"));
}

#[test]
fn attention_logsumexp_output() {
    use mlx::primitives::fast::ScaledDotProductAttention;
    let f = |t: &str| load(&format!("sdpa_plain_{t}"));
    let (q, k, v) = (f("q"), f("k"), f("v"));
    let p = ScaledDotProductAttention {
        scale: 0.25,
        do_causal: false,
        has_sinks: false,
        output_logsumexp: true,
        force_fused: false,
    };
    let outs = Array::from_primitive_multi(Box::new(p), vec![q.clone(), k.clone(), v]).unwrap();
    check(&outs[0], &load("sdpa_plain_out"));
    assert_eq!(outs[1].shape(), &[2, 4, 6, 1]);
    assert_eq!(outs[1].dtype(), Dtype::Float32);
    let (qv, kv) = (q.to_vec::<f32>().unwrap(), k.to_vec::<f32>().unwrap());
    let lse = outs[1].to_vec::<f32>().unwrap();
    for bh in 0..8 {
        for i in 0..6 {
            let mut sum = 0f64;
            for j in 0..6 {
                let dot: f64 = (0..16)
                    .map(|d| qv[(bh * 6 + i) * 16 + d] as f64 * kv[(bh * 6 + j) * 16 + d] as f64)
                    .sum();
                sum += (0.25 * dot).exp();
            }
            assert!((lse[bh * 6 + i] as f64 - sum.ln()).abs() < 1e-5);
        }
    }
}
