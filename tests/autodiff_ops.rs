//! Derivative rules of convolution, indexing, sort/scan, the fused `fast`
//! primitives, FFT and quantized matmul, checked three ways: against
//! central finite differences (float64 where the kernel has it), against
//! gradients made by real MLX 0.32.4 (`tests/fixtures/autodiff_ops`), and
//! forward against reverse mode (`<J t, c> = <t, Jᵀ c>`). Each function
//! under test is a single primitive, so only that primitive's rule runs.

mod common;

use common::{as_f64, npy};
use mlx::primitives::conv::Convolution;
use mlx::primitives::indexing::{
    MaskedScatter, Scatter, ScatterAxis, ScatterAxisType, ScatterType,
};
use mlx::primitives::sort_scan::{Partition, Scan, ScanType};
use mlx::{fast, fft, ops, transforms, Array, Dtype, Error, Result};

type Fun<'a> = &'a dyn Fn(&[Array]) -> Result<Array>;

/// Deterministic values in [-1, 1) (a small LCG), so tests need no RNG crate.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// An array of `shape` and `dtype` from `vals`.
fn arr(vals: &[f64], shape: &[i32], dtype: Dtype) -> Array {
    let a = Array::from_slice(vals, shape).unwrap();
    if dtype == Dtype::Float64 {
        a
    } else {
        ops::astype(&a, dtype).unwrap()
    }
}

fn rand(shape: &[i32], dtype: Dtype, seed: u64) -> Array {
    let n = shape.iter().product::<i32>() as usize;
    arr(&values(n, seed), shape, dtype)
}

/// `f` with only the inputs at `diff` as function arguments (the others,
/// e.g. indices, are captured constants).
fn restrict<'a>(
    f: Fun<'a>,
    inputs: &'a [Array],
    diff: &'a [usize],
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + 'a {
    move |d: &[Array]| {
        let mut full = inputs.to_vec();
        for (&i, a) in diff.iter().zip(d) {
            full[i] = a.clone();
        }
        Ok(vec![f(&full)?])
    }
}

fn pick(inputs: &[Array], diff: &[usize]) -> Vec<Array> {
    diff.iter().map(|&i| inputs[i].clone()).collect()
}

/// Reverse-mode cotangents of the inputs at `diff`.
fn vjp(f: Fun, inputs: &[Array], diff: &[usize], cot: &Array) -> Result<Vec<Array>> {
    let (_, g) = transforms::vjp(
        restrict(f, inputs, diff),
        &pick(inputs, diff),
        std::slice::from_ref(cot),
    )?;
    Ok(g)
}

/// `<a, b>` over the finite entries of `a` (an exclusive max/min/logaddexp
/// scan starts with an infinite identity, which no input moves).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .filter(|(x, _)| x.is_finite())
        .map(|(x, y)| x * y)
        .sum()
}

/// Compares the vjp of `f` with central differences of `<f(x), c>`
/// for a fixed random cotangent `c`.
fn check_fd(f: Fun, inputs: &[Array], diff: &[usize], eps: f64, rtol: f64, atol: f64) {
    let out = f(inputs).unwrap();
    let cot = rand(out.shape(), out.dtype(), 99);
    let c = as_f64(&cot);
    let grads = vjp(f, inputs, diff, &cot).unwrap();
    for (&i, g) in diff.iter().zip(&grads) {
        assert_eq!(g.shape(), inputs[i].shape(), "gradient shape of input {i}");
        let (g, x) = (as_f64(g), as_f64(&inputs[i]));
        for j in 0..x.len() {
            let at = |d: f64| {
                let mut v = x.clone();
                v[j] += d;
                let mut full = inputs.to_vec();
                full[i] = arr(&v, inputs[i].shape(), inputs[i].dtype());
                dot(&as_f64(&f(&full).unwrap()), &c)
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!(
                (g[j] - fd).abs() <= atol + rtol * fd.abs(),
                "input {i} element {j}: vjp {} but finite difference {fd}",
                g[j]
            );
        }
    }
}

/// Checks `<jvp(t), c> = Σ <t_i, vjp(c)_i>` for random t and c.
fn check_dual(f: Fun, inputs: &[Array], diff: &[usize], tol: f64) {
    let primals = pick(inputs, diff);
    let tangents: Vec<Array> = primals
        .iter()
        .enumerate()
        .map(|(k, p)| rand(p.shape(), p.dtype(), 7 + k as u64))
        .collect();
    let (outs, jv) = transforms::jvp(restrict(f, inputs, diff), &primals, &tangents).unwrap();
    let cot = rand(outs[0].shape(), outs[0].dtype(), 5);
    let lhs = dot(&as_f64(&jv[0]), &as_f64(&cot));
    let grads = vjp(f, inputs, diff, &cot).unwrap();
    let rhs: f64 = grads
        .iter()
        .zip(&tangents)
        .map(|(g, t)| dot(&as_f64(g), &as_f64(t)))
        .sum();
    assert!(
        (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()),
        "<J t, c> = {lhs} but <t, J^T c> = {rhs}"
    );
}

fn f64s(shape: &[i32], seed: u64) -> Array {
    rand(shape, Dtype::Float64, seed)
}

fn f32s(shape: &[i32], seed: u64) -> Array {
    rand(shape, Dtype::Float32, seed)
}

fn ints(v: &[i32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

// ----- convolution ---------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn conv(
    stride: &[i32],
    lo: &[i32],
    hi: &[i32],
    kdil: &[i32],
    idil: &[i32],
    groups: i32,
    flip: bool,
) -> impl Fn(&[Array]) -> Result<Array> {
    let p = Convolution {
        kernel_strides: stride.to_vec(),
        padding_lo: lo.to_vec(),
        padding_hi: hi.to_vec(),
        kernel_dilation: kdil.to_vec(),
        input_dilation: idil.to_vec(),
        groups,
        flip,
    };
    move |v: &[Array]| Array::from_primitive(p.clone(), v.to_vec())
}

#[test]
fn conv_finite_differences() {
    let cases: Vec<(Box<dyn Fn(&[Array]) -> Result<Array>>, [i32; 3], [i32; 3])> = vec![
        // 1-D: stride, asymmetric padding, kernel dilation, groups.
        (
            Box::new(conv(&[2], &[1], &[2], &[2], &[1], 2, false)),
            [2, 9, 4],
            [4, 3, 2],
        ),
        // 1-D: input dilation (transposed conv), flip, stride remainder.
        (
            Box::new(conv(&[2], &[2], &[0], &[1], &[3], 1, true)),
            [1, 4, 2],
            [3, 3, 2],
        ),
        // 1-D: padding beyond the kernel extent (negative backward padding).
        (
            Box::new(conv(&[3], &[4], &[0], &[1], &[2], 1, false)),
            [1, 5, 1],
            [2, 2, 1],
        ),
        // 1-D: three groups, dilations on both sides and flip.
        (
            Box::new(conv(&[1], &[0], &[3], &[2], &[2], 3, true)),
            [1, 5, 6],
            [6, 2, 2],
        ),
    ];
    for (f, xs, ws) in &cases {
        let inputs = [f64s(xs, 1), f64s(ws, 2)];
        check_fd(f.as_ref(), &inputs, &[0, 1], 1e-6, 1e-6, 1e-8);
        check_dual(f.as_ref(), &inputs, &[0, 1], 1e-9);
    }
    // 2-D with everything at once, and 3-D.
    let f2 = conv(&[2, 1], &[0, 3], &[2, 0], &[1, 2], &[2, 1], 2, true);
    check_fd(
        &f2,
        &[f64s(&[1, 4, 5, 4], 3), f64s(&[4, 2, 3, 2], 4)],
        &[0, 1],
        1e-6,
        1e-6,
        1e-8,
    );
    let f3 = conv(
        &[2, 1, 2],
        &[1, 0, 1],
        &[0, 1, 1],
        &[1, 1, 2],
        &[1, 2, 1],
        1,
        false,
    );
    check_fd(
        &f3,
        &[f64s(&[1, 4, 3, 5, 2], 5), f64s(&[2, 2, 2, 2, 2], 6)],
        &[0, 1],
        1e-6,
        1e-6,
        1e-8,
    );
}

/// MLX fixture case: inputs, cotangent (reshaped to our output when MLX's
/// op squeezes differently) and MLX's gradients of the inputs at `diff`.
fn check_mlx(name: &str, f: Fun, n_inputs: usize, diff: &[usize], rtol: f64, atol: f64) {
    let load = |part: String| npy(&format!("autodiff_ops/{name}_{part}.npy"));
    let inputs: Vec<Array> = (0..n_inputs).map(|i| load(format!("in{i}"))).collect();
    let out = f(&inputs).unwrap();
    let cot = ops::reshape(&load("cot".into()), out.shape()).unwrap();
    let grads = vjp(f, &inputs, diff, &cot).unwrap();
    for (&i, g) in diff.iter().zip(&grads) {
        let want = load(format!("grad{i}"));
        for part in [ops::real, ops::imag] {
            let (g, w) = if want.dtype() == Dtype::Complex64 {
                (part(g).unwrap(), part(&want).unwrap())
            } else {
                (g.clone(), want.clone())
            };
            common::assert_close(&g, &w, rtol, atol);
        }
    }
}

#[test]
fn conv_matches_mlx() {
    let c2 = |v: &[Array]| ops::conv2d(&v[0], &v[1], (2, 1), (1, 2), (1, 2), 2);
    check_mlx("conv2d_groups", &c2, 2, &[0, 1], 1e-4, 1e-4);
    let c1 = |v: &[Array]| ops::conv1d(&v[0], &v[1], 3, 2, 2, 3);
    check_mlx("conv1d_all", &c1, 2, &[0, 1], 1e-4, 1e-4);
    let c3 = |v: &[Array]| ops::conv3d(&v[0], &v[1], (1, 2, 1), (1, 0, 1), (1, 1, 1), 1);
    check_mlx("conv3d", &c3, 2, &[0, 1], 1e-4, 1e-4);
    let ct = |v: &[Array]| ops::conv_transpose2d(&v[0], &v[1], (2, 3), (1, 0), (1, 2), (1, 0), 1);
    check_mlx("conv_t2d", &ct, 2, &[0, 1], 1e-4, 1e-4);
    let cg = |v: &[Array]| {
        ops::conv_general(
            &v[0],
            &v[1],
            &[1, 2],
            &[2, 0],
            &[1, 3],
            &[2, 1],
            &[2, 3],
            1,
            true,
        )
    };
    check_mlx("conv_general", &cg, 2, &[0, 1], 1e-4, 1e-4);
}

// ----- indexing ------------------------------------------------------------

#[test]
fn gathers_with_repeated_indices() {
    // Gather over two axes; index pairs repeat, so gradients accumulate.
    let g = |v: &[Array]| ops::gather(&v[0], &[v[1].clone(), v[2].clone()], &[0, 2], &[1, 2, 1]);
    let inputs = [
        f64s(&[3, 2, 4], 1),
        ints(&[2, 0, 2, 2], &[4]),
        ints(&[1, 3, 1, -1], &[4]),
    ];
    check_fd(&g, &inputs, &[0], 1e-6, 1e-6, 1e-9);
    check_dual(&g, &inputs, &[0], 1e-9);
    let ga = |v: &[Array]| ops::take_along_axis(&v[0], &v[1], Some(0));
    let inputs = [f64s(&[3, 4], 2), ints(&[0, 0, 2, 2, 2, 1, 0, 0], &[2, 4])];
    check_fd(&ga, &inputs, &[0], 1e-6, 1e-6, 1e-9);
    check_dual(&ga, &inputs, &[0], 1e-9);
    // MLX: take on axis 0 squeezes the slice axis; we feed the cotangent
    // of the Gather node itself.
    let take = |v: &[Array]| ops::gather(&v[0], std::slice::from_ref(&v[1]), &[0], &[1, 3]);
    check_mlx("take0", &take, 2, &[0], 1e-6, 1e-6);
    let tal = |v: &[Array]| ops::take_along_axis(&v[0], &v[1], Some(1));
    check_mlx("take_along", &tal, 2, &[0], 1e-6, 1e-6);
}

fn scatter(kind: ScatterType, axes: &[i32]) -> impl Fn(&[Array]) -> Result<Array> {
    let p = Scatter {
        reduce_type: kind,
        axes: axes.to_vec(),
    };
    move |v: &[Array]| Array::from_primitive(p.clone(), v.to_vec())
}

#[test]
fn scatters() {
    let dst = f64s(&[4, 3], 1);
    // Assignment needs distinct positions to be a function of the inputs.
    let distinct = [dst.clone(), ints(&[2, 0], &[2]), f64s(&[2, 1, 3], 2)];
    let repeated = [dst.clone(), ints(&[1, 3, 1], &[3]), f64s(&[3, 1, 2], 3)];
    for kind in [ScatterType::None, ScatterType::Sum] {
        let f = scatter(kind, &[0]);
        check_fd(&f, &distinct, &[0, 2], 1e-6, 1e-6, 1e-9);
        check_dual(&f, &distinct, &[0, 2], 1e-9);
    }
    let sum = scatter(ScatterType::Sum, &[0]);
    check_fd(&sum, &repeated, &[0, 2], 1e-6, 1e-6, 1e-9);
    // Max/min: the cotangent goes to whichever side produced the result.
    for kind in [ScatterType::Max, ScatterType::Min] {
        check_fd(&scatter(kind, &[0]), &distinct, &[0, 2], 1e-6, 1e-6, 1e-9);
    }
    let err = vjp(
        &scatter(ScatterType::Prod, &[0]),
        &distinct,
        &[0],
        &f64s(&[4, 3], 4),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::NotDifferentiable(ref m) if m.contains("Scatter")),
        "{err}"
    );

    for kind in [ScatterAxisType::None, ScatterAxisType::Sum] {
        let p = ScatterAxis {
            reduce_type: kind,
            axis: 1,
        };
        let f = move |v: &[Array]| Array::from_primitive(p.clone(), v.to_vec());
        let inputs = [
            f64s(&[2, 4], 5),
            ints(&[3, 0, 2, 1], &[2, 2]),
            f64s(&[2, 2], 6),
        ];
        check_fd(&f, &inputs, &[0, 2], 1e-6, 1e-6, 1e-9);
        check_dual(&f, &inputs, &[0, 2], 1e-9);
    }
}

#[test]
fn masked_scatter() {
    let f = |v: &[Array]| Array::from_primitive(MaskedScatter {}, v.to_vec());
    let mask = Array::from_slice(
        &[true, false, true, true, false, false, true, false],
        &[2, 4],
    )
    .unwrap();
    let inputs = [f64s(&[2, 4], 1), mask, f64s(&[2, 3], 2)];
    check_fd(&f, &inputs, &[0, 2], 1e-6, 1e-6, 1e-9);
    check_dual(&f, &inputs, &[0, 2], 1e-9);
}

// ----- sort and scan -------------------------------------------------------

#[test]
fn sort_and_partition() {
    let s = |v: &[Array]| ops::sort(&v[0], Some(0));
    check_fd(&s, &[f64s(&[5, 2], 1)], &[0], 1e-6, 1e-6, 1e-9);
    check_dual(&s, &[f64s(&[5, 2], 1)], &[0], 1e-9);
    let p = |v: &[Array]| Array::from_primitive(Partition { kth: 2, axis: 1 }, v.to_vec());
    check_fd(&p, &[f64s(&[2, 6], 2)], &[0], 1e-6, 1e-6, 1e-9);
    // Ties: MLX's stable order decides which tied element gets which cotangent.
    let s1 = |v: &[Array]| ops::sort(&v[0], Some(1));
    check_mlx("sort", &s1, 1, &[0], 1e-6, 1e-6);
    // Index outputs pass no gradient (MLX's rule).
    let am = |v: &[Array]| ops::argsort(&v[0], Some(0));
    let cot = ops::ones(&[4], Dtype::Uint32).unwrap();
    let g = vjp(&am, &[f64s(&[4], 3)], &[0], &cot).unwrap();
    assert_eq!(as_f64(&g[0]), [0.0; 4]);
}

fn scan(kind: ScanType, reverse: bool, inclusive: bool) -> impl Fn(&[Array]) -> Result<Array> {
    let p = Scan {
        reduce_type: kind,
        axis: 1,
        reverse,
        inclusive,
    };
    move |v: &[Array]| Array::from_primitive(p.clone(), v.to_vec())
}

#[test]
fn scans_finite_differences() {
    // A zero (and a second zero) in the rows exercises cumprod's special case.
    let with_zeros = arr(
        &[
            0.5, 0.0, 2.0, -1.5, 0.0, 1.2, -0.7, 0.9, 1.1, 0.3, -2.0, 0.8,
        ],
        &[2, 6],
        Dtype::Float64,
    );
    for (reverse, inclusive) in [(false, true), (true, true), (false, false), (true, false)] {
        for kind in [
            ScanType::Sum,
            ScanType::Prod,
            ScanType::Max,
            ScanType::Min,
            ScanType::LogAddExp,
        ] {
            let f = scan(kind, reverse, inclusive);
            // The float64 log-add-exp kernel is accurate to ~1e-8 only.
            let (eps, tol) = if kind == ScanType::LogAddExp {
                (1e-3, 1e-3)
            } else {
                (1e-6, 1e-6)
            };
            check_fd(&f, &[f64s(&[3, 5], 1)], &[0], eps, tol, 1e-8);
            if kind == ScanType::Prod {
                check_fd(&f, &[with_zeros.clone()], &[0], 1e-6, 1e-6, 1e-8);
            }
        }
        check_dual(
            &scan(ScanType::Sum, reverse, inclusive),
            &[f64s(&[3, 5], 2)],
            &[0],
            1e-9,
        );
    }
}

#[test]
fn scans_match_mlx() {
    let cs = |v: &[Array]| ops::cumsum(&v[0], Some(1), true, false);
    check_mlx("cumsum", &cs, 1, &[0], 1e-5, 1e-5);
    let cp = |v: &[Array]| ops::cumprod(&v[0], Some(0), false, true);
    check_mlx("cumprod", &cp, 1, &[0], 1e-5, 1e-5);
    let cm = |v: &[Array]| ops::cummax(&v[0], Some(1), false, true);
    check_mlx("cummax", &cm, 1, &[0], 1e-5, 1e-5);
    let lc = |v: &[Array]| ops::logcumsumexp(&v[0], Some(1), true, true);
    check_mlx("logcumsumexp", &lc, 1, &[0], 1e-5, 1e-5);
}

// ----- fast ops ------------------------------------------------------------

#[test]
fn fast_ops_finite_differences() {
    let (eps, rtol, atol) = (1e-2, 2e-2, 2e-3);
    let ln = |v: &[Array]| fast::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5);
    check_fd(
        &ln,
        &[f32s(&[3, 6], 1), f32s(&[6], 2), f32s(&[6], 3)],
        &[0, 1, 2],
        eps,
        rtol,
        atol,
    );
    let rms = |v: &[Array]| fast::rms_norm(&v[0], Some(&v[1]), 1e-5);
    check_fd(
        &rms,
        &[f32s(&[3, 6], 4), f32s(&[6], 5)],
        &[0, 1],
        eps,
        rtol,
        atol,
    );
    let rope = |v: &[Array]| fast::rope(&v[0], 4, false, Some(100.0), 1.0, 3, None);
    check_fd(&rope, &[f32s(&[1, 2, 3, 6], 6)], &[0], eps, rtol, atol);
    check_dual(&rope, &[f32s(&[1, 2, 3, 6], 6)], &[0], 1e-4);
    let mask = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.7, Some(fast::Mask::Array(&v[3])))
    };
    let qkvm = [
        f32s(&[1, 4, 2, 3], 7),
        f32s(&[1, 2, 3, 3], 8),
        f32s(&[1, 2, 3, 2], 9),
        f32s(&[1, 4, 2, 3], 10),
    ];
    check_fd(&mask, &qkvm, &[0, 1, 2, 3], eps, rtol, atol);
    let causal = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.5, Some(fast::Mask::Causal))
    };
    check_fd(&causal, &qkvm[..3], &[0, 1, 2], eps, rtol, atol);
    let sinks = |v: &[Array]| {
        fast::scaled_dot_product_attention_sinks(&v[0], &v[1], &v[2], 0.5, None, Some(&v[3]))
    };
    check_fd(
        &sinks,
        &[
            qkvm[0].clone(),
            qkvm[1].clone(),
            qkvm[2].clone(),
            f32s(&[4], 11),
        ],
        &[0, 1, 2, 3],
        eps,
        rtol,
        atol,
    );
}

#[test]
fn fast_ops_match_mlx() {
    let ln = |v: &[Array]| fast::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5);
    check_mlx("layer_norm", &ln, 3, &[0, 1, 2], 1e-4, 1e-4);
    let rms = |v: &[Array]| fast::rms_norm(&v[0], Some(&v[1]), 1e-5);
    check_mlx("rms_norm", &rms, 2, &[0, 1], 1e-4, 1e-4);
    let rope = |v: &[Array]| fast::rope(&v[0], 6, false, Some(10000.0), 1.0, 2, None);
    check_mlx("rope", &rope, 1, &[0], 1e-4, 1e-4);
    let rope_t = |v: &[Array]| fast::rope(&v[0], 8, true, Some(500.0), 0.5, 1, None);
    check_mlx("rope_trad", &rope_t, 1, &[0], 1e-4, 1e-4);
    let sm = |v: &[Array]| {
        fast::scaled_dot_product_attention(
            &v[0],
            &v[1],
            &v[2],
            0.35,
            Some(fast::Mask::Array(&v[3])),
        )
    };
    check_mlx("sdpa_mask", &sm, 4, &[0, 1, 2, 3], 1e-4, 1e-4);
    let sc = |v: &[Array]| {
        fast::scaled_dot_product_attention(&v[0], &v[1], &v[2], 0.5, Some(fast::Mask::Causal))
    };
    check_mlx("sdpa_causal", &sc, 3, &[0, 1, 2], 1e-4, 1e-4);
    let ss = |v: &[Array]| {
        fast::scaled_dot_product_attention_sinks(&v[0], &v[1], &v[2], 0.4, None, Some(&v[3]))
    };
    check_mlx("sdpa_sinks", &ss, 4, &[0, 1, 2, 3], 1e-4, 1e-4);
}

// ----- FFT and quantized matmul ---------------------------------------------

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

// ----- non-differentiable inputs ---------------------------------------------

/// The vjp of `f` with respect to every input fails naming `primitive`.
fn assert_not_differentiable(f: Fun, inputs: &[Array], primitive: &str) {
    let out = f(inputs).unwrap();
    let all: Vec<usize> = (0..inputs.len()).collect();
    let cot = ops::zeros_like(&out).unwrap();
    match vjp(f, inputs, &all, &cot) {
        Err(Error::NotDifferentiable(m)) => assert!(m.contains(primitive), "{m}"),
        other => panic!("expected NotDifferentiable naming {primitive}, found {other:?}"),
    }
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
