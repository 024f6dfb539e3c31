//! FFT, quantized matmul, errors, dtypes, layouts, export and whole-op graphs.

use super::conv::conv;
use super::helpers::*;
use crate::common::{self, as_f64, npy};
use mlx::primitives::sort_scan::{Scan, ScanType};
use mlx::{fast, fft, ops, transforms, Array, Dtype, Primitive, Result};

#[test]
fn fft_matches_mlx() {
    let b = fft::FftNorm::Backward;
    check_mlx(
        "rfft",
        &|v: &[Array]| fft::rfft(&v[0], None, 1, b),
        1,
        &[0],
        1e-4,
        1e-4,
    );
    check_mlx(
        "irfft",
        &|v: &[Array]| fft::irfft(&v[0], None, 1, b),
        1,
        &[0],
        1e-4,
        1e-4,
    );
    check_mlx(
        "fft2",
        &|v: &[Array]| fft::fft2(&v[0], None, &[-2, -1], b),
        1,
        &[0],
        1e-4,
        1e-4,
    );
    check_mlx(
        "ifft",
        &|v: &[Array]| fft::ifft(&v[0], None, 0, b),
        1,
        &[0],
        1e-4,
        1e-4,
    );
}

#[test]
fn quantized_matmul_matches_mlx() {
    let q = |v: &[Array]| ops::quantized_matmul(&v[0], &v[1], &v[2], &v[3], true, 32, 4);
    check_mlx("qmm", &q, 4, &[0, 2, 3], 1e-4, 1e-3);
    let inputs: Vec<Array> = (0..4)
        .map(|i| npy(&format!("autodiff_ops/qmm_in{i}.npy")))
        .collect();
    check_dual(&q, &inputs, &[0], 1e-4);
}

#[test]
fn non_differentiable_inputs_error() {
    let take = |v: &[Array]| ops::gather(&v[0], std::slice::from_ref(&v[1]), &[0], &[1, 2]);
    assert_not_differentiable(&take, &[f32s(&[3, 2], 1), ints(&[0, 2], &[2])], "Gather");
    let tal = |v: &[Array]| ops::take_along_axis(&v[0], &v[1], Some(0));
    assert_not_differentiable(
        &tal,
        &[f32s(&[3, 2], 1), ints(&[0, 2], &[1, 2])],
        "GatherAxis",
    );
    let rope = |v: &[Array]| fast::rope(&v[0], 2, false, Some(10.0), 1.0, &v[1], None);
    assert_not_differentiable(&rope, &[f32s(&[1, 2, 2], 1), Array::scalar(1i32)], "RoPE");
    let w = f32s(&[4, 32], 2);
    let (wq, s, b) = ops::quantize(&w, 32, 4).unwrap();
    let qmm = |v: &[Array]| ops::quantized_matmul(&v[0], &v[1], &v[2], &v[3], true, 32, 4);
    assert_not_differentiable(&qmm, &[f32s(&[2, 32], 3), wq, s, b], "QuantizedMatmul");
    let quant = |v: &[Array]| Ok(ops::quantize(&v[0], 32, 4)?.1);
    assert_not_differentiable(&quant, &[w], "Quantize");
}

/// Cotangents of the float inputs of `f` at `inputs` cast to `dtype`, as float64.
fn grads_in(f: Fun, inputs: &[Array], diff: &[usize], dtype: Dtype) -> Vec<Vec<f64>> {
    let cast: Vec<Array> = inputs
        .iter()
        .map(|a| {
            if a.dtype().is_float() {
                ops::astype(a, dtype).unwrap()
            } else {
                a.clone()
            }
        })
        .collect();
    let out = f(&cast).unwrap();
    let cot = rand(out.shape(), out.dtype(), 3);
    vjp(f, &cast, diff, &cot)
        .unwrap()
        .iter()
        .map(as_f64)
        .collect()
}

#[test]
fn half_precision_gradients_follow_float32() {
    let conv2 = apply(conv(&[1, 2], &[1, 0], &[0, 1], &[1, 1], &[1, 1], 1, false));
    let take = |v: &[Array]| ops::take_along_axis(&v[0], &v[1], Some(1));
    let ln = |v: &[Array]| fast::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5);
    let sort = |v: &[Array]| ops::sort(&v[0], Some(1));
    let cases: [(Fun, Vec<Array>, Vec<usize>); 4] = [
        (
            &conv2,
            vec![f32s(&[1, 4, 5, 2], 1), f32s(&[3, 2, 2, 2], 2)],
            vec![0, 1],
        ),
        (
            &take,
            vec![f32s(&[2, 3], 3), ints(&[2, 2, 0, 1], &[2, 2])],
            vec![0],
        ),
        (
            &ln,
            vec![f32s(&[2, 8], 4), f32s(&[8], 5), f32s(&[8], 6)],
            vec![0, 1, 2],
        ),
        (&sort, vec![f32s(&[2, 5], 7)], vec![0]),
    ];
    for (f, inputs, diff) in &cases {
        let want = grads_in(*f, inputs, diff, Dtype::Float32);
        for (dtype, tol) in [(Dtype::Float16, 2e-2), (Dtype::Bfloat16, 1e-1)] {
            for (g, w) in grads_in(*f, inputs, diff, dtype).iter().zip(&want) {
                for (a, b) in g.iter().zip(w) {
                    assert!(
                        (a - b).abs() <= tol * (1.0 + b.abs()),
                        "{dtype}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

#[test]
fn strided_primals() {
    // A transposed input and a broadcast weight give the same cotangents as
    // their contiguous copies.
    let f = apply(conv(&[2], &[1], &[1], &[1], &[1], 1, false));
    let x = ops::transpose(&f64s(&[3, 7, 1], 1), &[2, 1, 0]).unwrap();
    let w = ops::broadcast_to(&f64s(&[1, 3, 3], 2), &[2, 3, 3]).unwrap();
    mlx::eval(&[x.clone(), w.clone()]).unwrap();
    let copies = [ops::copy(&x).unwrap(), ops::copy(&w).unwrap()];
    let cot = f64s(&[1, 4, 2], 3);
    let strided = vjp(&f, &[x, w], &[0, 1], &cot).unwrap();
    let contiguous = vjp(&f, &copies, &[0, 1], &cot).unwrap();
    for (a, b) in strided.iter().zip(&contiguous) {
        common::assert_close(a, b, 1e-12, 1e-12);
    }
}

#[test]
fn backward_graphs_export_and_import() {
    // A rule builds a lazy graph, so a traced function returning a rule's
    // cotangents exports (native and MLX formats) and replays after import.
    let dir = std::env::temp_dir().join(format!("mlx-autodiff-ops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let backward = |p: &dyn Primitive, n_in: usize, diff: &'static [usize]| {
        let p = p.clone_boxed();
        move |v: &[Array]| -> Result<Vec<Array>> {
            let outs = Array::from_primitive_multi(p.clone(), v[..n_in].to_vec())?;
            p.vjp(&v[..n_in], &v[n_in..], diff, &outs)
        }
    };
    let ln = mlx::primitives::fast::LayerNorm { eps: 1e-5 };
    type Traced = Box<dyn Fn(&[Array]) -> Result<Vec<Array>>>;
    let cases: Vec<(&str, Traced, Vec<Array>)> = vec![
        (
            "conv",
            Box::new(backward(
                &conv(&[2], &[1], &[0], &[2], &[1], 2, true),
                2,
                &[0, 1],
            )),
            vec![
                f32s(&[1, 8, 4], 1),
                f32s(&[2, 2, 2], 2),
                f32s(&[1, 3, 2], 3),
            ],
        ),
        (
            "layer_norm",
            Box::new(backward(&ln, 3, &[0, 1, 2])),
            vec![
                f32s(&[2, 4], 4),
                f32s(&[4], 5),
                f32s(&[4], 6),
                f32s(&[2, 4], 7),
            ],
        ),
        (
            "cumprod",
            Box::new(backward(
                &Scan {
                    reduce_type: ScanType::Prod,
                    axis: 0,
                    reverse: true,
                    inclusive: false,
                },
                1,
                &[0],
            )),
            vec![f32s(&[5, 2], 8), f32s(&[5, 2], 9)],
        ),
    ];
    for (name, f, args) in &cases {
        let want = f(args).unwrap();
        for format in [mlx::Format::Native, mlx::Format::Mlx] {
            let path = dir.join(format!("{name}_{format:?}.mlxfn"));
            let opts = mlx::ExportOptions {
                format,
                ..Default::default()
            };
            mlx::export_function(&path, f.as_ref(), args, &opts).unwrap();
            let got = mlx::export::import_function(&path)
                .unwrap()
                .call(args)
                .unwrap();
            for (g, w) in got.iter().zip(&want) {
                common::assert_close(g, w, 1e-6, 1e-6);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The model of the `model` fixture: conv → layer norm → rms norm → rope →
/// causal attention → cumsum → scale → sort → top 3 squared, summed.
fn model(v: &[Array]) -> Result<Array> {
    let h = ops::conv2d(&v[0], &v[1], (2, 2), (1, 1), (1, 1), 1)?;
    let h = fast::layer_norm(
        &ops::reshape(&h, &[1, 16, 8])?,
        Some(&v[2]),
        Some(&v[3]),
        1e-5,
    )?;
    let h = fast::rms_norm(&h, None, 1e-5)?;
    let k = ops::transpose(&ops::reshape(&h, &[1, 16, 2, 4])?, &[0, 2, 1, 3])?;
    let q = fast::rope(&k, 4, false, Some(100.0), 1.0, 0, None)?;
    let a = fast::scaled_dot_product_attention(&q, &k, &k, 0.5, Some(fast::Mask::Causal))?;
    let a = ops::reshape(&ops::transpose(&a, &[0, 2, 1, 3])?, &[1, 16, 8])?;
    let a = ops::multiply(&ops::cumsum(&a, Some(1), false, true)?, &v[4])?;
    let top = ops::slice(&ops::sort(&a, Some(-1))?, &[0, 0, 5], &[1, 16, 8], &[])?;
    ops::sum(&ops::square(&top)?, &[], false)
}

#[test]
fn whole_ops_match_mlx() {
    let take1 = |v: &[Array]| ops::take(&v[0], &v[1], Some(1));
    check_mlx("take1", &take1, 2, &[0], 1e-6, 1e-6);
    let topk = |v: &[Array]| ops::sum(&ops::topk(&v[0], 2, Some(-1))?, &[-1], false);
    check_mlx("topk", &topk, 1, &[0], 1e-6, 1e-6);
    check_mlx("model", &model, 5, &[0, 1, 2, 3, 4], 2e-3, 2e-3);
    // transforms::grad gives the same as the vjp with a unit cotangent.
    let inputs: Vec<Array> = (0..5)
        .map(|i| npy(&format!("autodiff_ops/model_in{i}.npy")))
        .collect();
    let g = transforms::grad(|v: &[Array]| Ok(vec![model(v)?]), &[1])(&inputs).unwrap();
    let one = ops::ones(&[], Dtype::Float32).unwrap();
    let want = vjp(&model, &inputs, &[1], &one).unwrap();
    common::assert_close(&g[0], &want[0], 1e-6, 1e-6);
}

#[test]
fn masked_scatter_op() {
    // `a[mask] = v` with a mask over the leading axes (rows of v).
    let f = |v: &[Array]| {
        let mask = Array::from_slice(&[true, false, true], &[3]).unwrap();
        ops::masked_scatter(&v[0], &mask, &v[1])
    };
    check_fd(
        &f,
        &[f64s(&[3, 2], 1), f64s(&[2, 2], 2)],
        &[0, 1],
        1e-6,
        1e-6,
        1e-9,
    );
}
