//! Affine quantization against MLX fixtures (tests/fixtures/quantized):
//! packing, scales and biases bit for bit, dequantize bit for bit, the
//! quantized product within tolerance, MLX-exported files, and errors.

use crate::common;

use common::{assert_bits_eq, assert_close, fixture};
use mlx::{ops, Array, Dtype, ExportOptions, Format};

/// `quantized/<name>.npy`, or `<name>_bf16bits.npy` viewed as bfloat16.
fn load(name: &str) -> Array {
    let plain = fixture(&format!("quantized/{name}.npy"));
    if plain.exists() {
        return mlx::io::load_npy(plain).unwrap();
    }
    let bits = mlx::io::load_npy(fixture(&format!("quantized/{name}_bf16bits.npy"))).unwrap();
    ops::view(&bits, Dtype::Bfloat16).unwrap()
}

#[test]
fn quantize_every_width_and_group_size_bit_exact() {
    for bits in [1, 2, 3, 4, 5, 6, 8] {
        for gs in [32, 64, 128] {
            let name = format!("q_b{bits}_g{gs}");
            let w = load(&format!("{name}_w"));
            let (wq, s, b) = ops::quantize(&w, gs, bits).unwrap();
            assert_bits_eq(&wq, &load(&format!("{name}_wq")));
            assert_bits_eq(&s, &load(&format!("{name}_s")));
            assert_bits_eq(&b, &load(&format!("{name}_b")));
            let dq = ops::dequantize(&wq, &s, &b, gs, bits).unwrap();
            assert_bits_eq(&dq, &load(&format!("{name}_dq")));
        }
    }
}

#[test]
fn quantize_half_types_bit_exact() {
    for tag in ["f16", "bf16"] {
        for bits in [3, 4] {
            let name = format!("qh_{tag}_b{bits}");
            let w = load(&format!("{name}_w"));
            let (wq, s, b) = ops::quantize(&w, 32, bits).unwrap();
            assert_eq!(s.dtype(), w.dtype());
            assert_bits_eq(&wq, &load(&format!("{name}_wq")));
            assert_bits_eq(&s, &load(&format!("{name}_s")));
            assert_bits_eq(&b, &load(&format!("{name}_b")));
            let dq = ops::dequantize(&wq, &s, &b, 32, bits).unwrap();
            assert_bits_eq(&dq, &load(&format!("{name}_dq")));
        }
    }
}

#[test]
fn quantize_strided_input() {
    // The transpose of a transpose: same values, non-contiguous layout.
    let w = load("q_b4_g32_w");
    let wt = ops::transpose(&ops::copy(&ops::transpose(&w, &[]).unwrap()).unwrap(), &[]).unwrap();
    let (wq, s, _) = ops::quantize(&wt, 32, 4).unwrap();
    assert_bits_eq(&wq, &load("q_b4_g32_wq"));
    assert_bits_eq(&s, &load("q_b4_g32_s"));
    // A broadcast weight quantizes every copy the same way.
    let row = ops::slice(&w, &[0, 0], &[1, 128], &[]).unwrap();
    let wb = ops::broadcast_to(&row, &[3, 128]).unwrap();
    let (wq, _, _) = ops::quantize(&wb, 32, 4).unwrap();
    let v = wq.to_vec::<u32>().unwrap();
    assert_eq!(v[..16], v[16..32]);
    assert_eq!(v[..16], load("q_b4_g32_wq").to_vec::<u32>().unwrap()[..16]);
}

fn qmm_case(name: &str, gs: i32, bits: i32, transpose: bool, tol: f64) {
    let f = |t: &str| load(&format!("{name}_{t}"));
    let got =
        ops::quantized_matmul(&f("x"), &f("wq"), &f("s"), &f("b"), transpose, gs, bits).unwrap();
    let want = f("out");
    assert_eq!(got.dtype(), want.dtype(), "{name}");
    assert_close(&got, &want, tol, tol);
}

#[test]
fn quantized_matmul_fixtures() {
    qmm_case("mm_t_b4", 64, 4, true, 1e-4);
    qmm_case("mm_t_b4_vec", 32, 4, true, 1e-4);
    qmm_case("mm_t_b3", 32, 3, true, 1e-4);
    qmm_case("mm_t_b6", 128, 6, true, 1e-4);
    qmm_case("mm_t_b8_batched", 32, 8, true, 1e-4);
    qmm_case("mm_n_b4", 64, 4, false, 1e-4);
    qmm_case("mm_n_b5", 32, 5, false, 1e-4);
    // One row: the blocked 3/5/6-bit kernels, each grouping.
    qmm_case("mm_t_b3_vec", 32, 3, true, 1e-4);
    qmm_case("mm_t_b5_vec", 64, 5, true, 1e-4);
    qmm_case("mm_t_b5_g32_vec", 32, 5, true, 1e-4);
    qmm_case("mm_t_b6_vec", 128, 6, true, 1e-4);
    qmm_case("mm_t_b6_g32_vec", 32, 6, true, 1e-4);
    // MLX accumulates half types in the half type; we accumulate in f32.
    qmm_case("mm_t_f16", 32, 4, true, 3e-2);
    qmm_case("mm_t_bf16", 64, 2, true, 1e-1);
}

#[test]
fn quantized_matmul_strided_x_and_promotion() {
    let f = |t: &str| load(&format!("mm_t_b4_{t}"));
    // x as a transposed view of its transpose.
    let xt = ops::transpose(
        &ops::copy(&ops::transpose(&f("x"), &[]).unwrap()).unwrap(),
        &[],
    )
    .unwrap();
    let got = ops::quantized_matmul(&xt, &f("wq"), &f("s"), &f("b"), true, 64, 4).unwrap();
    assert_close(&got, &f("out"), 1e-4, 1e-4);
    // float16 scales with a float32 x promote to float32.
    let s16 = ops::astype(&f("s"), Dtype::Float16).unwrap();
    let b16 = ops::astype(&f("b"), Dtype::Float16).unwrap();
    let got = ops::quantized_matmul(&f("x"), &f("wq"), &s16, &b16, true, 64, 4).unwrap();
    assert_eq!(got.dtype(), Dtype::Float32);
    assert_close(&got, &f("out"), 2e-2, 2e-2);
}

#[test]
fn matches_dequantize_then_matmul() {
    // Large enough for the tiled gemm path (more than 4 rows) and threads.
    let x = Array::from_slice(
        &(0..40 * 256)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 40.0)
            .collect::<Vec<_>>(),
        &[40, 256],
    )
    .unwrap();
    // 200 output columns: three 64-column tiles and one of 8 (less than
    // one 16-column block of the AVX-512 path).
    let w = Array::from_slice(
        &(0..200 * 256)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 30.0)
            .collect::<Vec<_>>(),
        &[200, 256],
    )
    .unwrap();
    for (bits, gs) in [(4, 64), (3, 128), (8, 32)] {
        let (wq, s, b) = ops::quantize(&w, gs, bits).unwrap();
        let dq = ops::dequantize(&wq, &s, &b, gs, bits).unwrap();
        let want = ops::matmul(&x, &ops::transpose(&dq, &[]).unwrap()).unwrap();
        let got = ops::quantized_matmul(&x, &wq, &s, &b, true, gs, bits).unwrap();
        assert_close(&got, &want, 1e-4, 1e-3);
        // Direct path (one row).
        let x1 = ops::slice(&x, &[0, 0], &[1, 256], &[]).unwrap();
        let got = ops::quantized_matmul(&x1, &wq, &s, &b, true, gs, bits).unwrap();
        let want = ops::matmul(&x1, &ops::transpose(&dq, &[]).unwrap()).unwrap();
        assert_close(&got, &want, 1e-4, 1e-3);
    }
}

#[test]
fn mlx_exported_files_import_and_run() {
    let q = mlx::import_function(fixture("quantized/quantize.mlxfn")).unwrap();
    let w = load("file_w");
    let outs = q.call(std::slice::from_ref(&w)).unwrap();
    let (wq, s, b) = ops::quantize(&w, 32, 5).unwrap();
    assert_eq!(outs.len(), 3);
    assert_bits_eq(&outs[0], &wq);
    assert_bits_eq(&outs[1], &s);
    assert_bits_eq(&outs[2], &b);

    let f = mlx::import_function(fixture("quantized/qmm.mlxfn")).unwrap();
    let args: Vec<Array> = ["x", "wq", "s", "b"]
        .iter()
        .map(|t| load(&format!("file_{t}")))
        .collect();
    let out = f.call(&args).unwrap();
    assert_close(&out[0], &load("file_out"), 1e-4, 1e-4);
}

#[test]
fn export_round_trip_in_both_formats() {
    let dir = std::env::temp_dir().join(format!("mlx_quantized_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w = load("q_b6_g64_w");
    for format in [Format::Native, Format::Mlx] {
        let path = dir.join(format!("q_{format:?}.mlxfn"));
        let opts = ExportOptions {
            format,
            ..Default::default()
        };
        mlx::export_function(
            &path,
            |a: &[Array]| {
                let (q, s, b) = ops::quantize(&a[0], 64, 6)?;
                let dq = ops::dequantize(&q, &s, &b, 64, 6)?;
                let y = ops::quantized_matmul(&a[0], &q, &s, &b, true, 64, 6)?;
                Ok(vec![q, dq, y])
            },
            std::slice::from_ref(&w),
            &opts,
        )
        .unwrap();
        let f = mlx::import_function(&path).unwrap();
        let outs = f.call(std::slice::from_ref(&w)).unwrap();
        assert_bits_eq(&outs[0], &load("q_b6_g64_wq"));
        assert_bits_eq(&outs[1], &load("q_b6_g64_dq"));
        assert_eq!(outs[2].shape(), &[2, 2]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn errors_name_the_problem() {
    let w = load("q_b4_g32_w");
    let msg = |r: mlx::Result<(Array, Array, Array)>| r.expect_err("an error").to_string();
    assert!(msg(ops::quantize(&w, 32, 7)).contains("bits"));
    assert!(msg(ops::quantize(&w, 16, 4)).contains("group size"));
    let v = ops::reshape(&w, &[256]).unwrap();
    assert!(msg(ops::quantize(&v, 32, 4)).contains("at least 2 dimensions"));
    let odd = ops::slice(&w, &[0, 0], &[2, 100], &[]).unwrap();
    assert!(msg(ops::quantize(&odd, 32, 4)).contains("divisible"));
    let ints = ops::astype(&w, Dtype::Int32).unwrap();
    assert!(msg(ops::quantize(&ints, 32, 4)).contains("floating"));

    let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
    // x's last dimension must match the unpacked weight's.
    let x = Array::from_slice(&[0f32; 3 * 64], &[3, 64]).unwrap();
    let e = ops::quantized_matmul(&x, &wq, &s, &b, true, 32, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match"), "{e}");
    // Scales that do not fit the group size.
    let e = ops::quantized_matmul(&x, &wq, &s, &b, true, 64, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("scales"), "{e}");
    // Packed weights must be uint32.
    let wf = ops::astype(&wq, Dtype::Float32).unwrap();
    let e = ops::dequantize(&wf, &s, &b, 32, 4).unwrap_err().to_string();
    assert!(e.contains("uint32"), "{e}");
    let e = ops::dequantize(&wq, &s, &ops::reshape(&b, &[8]).unwrap(), 32, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("same shape"), "{e}");
}

#[test]
fn this_family_is_registered_under_mlx_names() {
    // Quantization, the fused fast primitives and FFT (mlxfn-format.md §9).
    for name in [
        "Quantize",
        "QuantizedMatmul",
        "RMSNorm",
        "LayerNorm",
        "RoPE",
        "ScaledDotProductAttention",
        "FFT",
    ] {
        assert!(
            mlx::primitive::lookup(name).is_ok(),
            "{name} is not registered"
        );
    }
}

#[test]
fn gather_qmm_fixtures() {
    let f = |t: &str| load(&format!("gqmm_{t}"));
    let (x, wq, s, b) = (f("x"), f("wq"), f("s"), f("b"));
    let got = ops::gather_qmm(&x, &wq, &s, &b, None, Some(&f("rhs")), true, 32, 4, false).unwrap();
    assert_close(&got, &f("out"), 1e-4, 1e-4);
    let got = ops::gather_qmm(
        &x,
        &wq,
        &s,
        &b,
        Some(&f("lhs")),
        Some(&f("rhs2")),
        true,
        32,
        4,
        false,
    )
    .unwrap();
    assert_eq!(got.shape(), &[2, 2, 1, 24]);
    assert_close(&got, &f("both_out"), 1e-4, 1e-4);
    // An index past the last expert is an error, not a crash.
    let bad = Array::from_slice(&[7u32], &[1]).unwrap();
    let e = ops::gather_qmm(&x, &wq, &s, &b, None, Some(&bad), true, 32, 4, false)
        .and_then(|a| a.eval().map(|_| a));
    assert!(e.is_err());
}

/// Files MLX writes with weights in its microscaling float modes (mxfp4,
/// mxfp8, nvfp4; `generate_fp.py`), both layouts: MLX's sums step for
/// step, so MLX's bits; with bfloat16 activations too.
#[test]
fn microscaling_float_modes_run_as_mlx_runs_them() {
    use mlx::primitives::quantized::{QuantizationMode, QuantizedMatmul};
    for (mode, m) in [
        ("mxfp4", QuantizationMode::Mxfp4),
        ("mxfp8", QuantizationMode::Mxfp8),
        ("nvfp4", QuantizationMode::Nvfp4),
    ] {
        let (wq, s) = (
            load(&format!("fp_{mode}_wq")),
            load(&format!("fp_{mode}_s")),
        );
        for layout in ["t", "n"] {
            let name = format!("fp_{mode}_{layout}");
            let f = mlx::import_function(fixture(&format!("quantized/{name}.mlxfn"))).unwrap();
            let x = load(&format!("{name}_x"));
            let out = f.call(&[x, wq.clone(), s.clone()]).unwrap();
            assert_bits_eq(&out[0], &load(&format!("{name}_out")));
        }
        let (group_size, bits) = if mode == "nvfp4" {
            (16, 4)
        } else {
            (32, if mode == "mxfp8" { 8 } else { 4 })
        };
        let p = QuantizedMatmul {
            group_size,
            bits,
            mode: m,
            transpose: true,
        };
        let x = load(&format!("fp_{mode}_bf16_x"));
        let out = Array::from_primitive(p, vec![x, wq.clone(), s.clone()]).unwrap();
        assert_bits_eq(&out, &load(&format!("fp_{mode}_bf16_out")));
    }
}

/// gather_qmm files in the float modes (experts picked per token), with
/// MLX's bits.
#[test]
fn microscaling_float_modes_gather_as_mlx_does() {
    for mode in ["mxfp4", "mxfp8", "nvfp4"] {
        let name = format!("fp_gqmm_{mode}");
        let f = mlx::import_function(fixture(&format!("quantized/{name}.mlxfn"))).unwrap();
        let args: Vec<Array> = ["x", "wq", "s", "rhs"]
            .iter()
            .map(|t| load(&format!("{name}_{t}")))
            .collect();
        let out = f.call(&args).unwrap();
        assert_bits_eq(&out[0], &load(&format!("{name}_out")));
    }
}

/// A float mode with another group size or bit width, or scales that are
/// not bytes, is refused with the mode's own pair named.
#[test]
fn microscaling_float_modes_refuse_other_layouts() {
    use mlx::primitives::quantized::{QuantizationMode, QuantizedMatmul};
    let x = load("fp_mxfp4_t_x");
    let (wq, s) = (load("fp_mxfp4_wq"), load("fp_mxfp4_s"));
    let p = QuantizedMatmul {
        group_size: 64,
        bits: 4,
        mode: QuantizationMode::Mxfp4,
        transpose: true,
    };
    let e = Array::from_primitive(p, vec![x.clone(), wq.clone(), s.clone()]).unwrap_err();
    assert!(e.to_string().contains("group_size=32 and bits=4"), "{e}");
    let p = QuantizedMatmul {
        group_size: 32,
        bits: 4,
        mode: QuantizationMode::Mxfp4,
        transpose: true,
    };
    let sf = ops::astype(&s, Dtype::Float32).unwrap();
    let e = Array::from_primitive(p, vec![x, wq, sf]).unwrap_err();
    assert!(e.to_string().contains("uint8 scales"), "{e}");
}
