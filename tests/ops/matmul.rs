//! Matrix products against MLX fixtures (tests/fixtures/linalg) and against
//! a naive triple loop for random shapes, layouts and dtypes.

use crate::common;

use common::{as_f64, assert_close, npy};
use mlx::{ops, Array, Data, Dtype, Spec};
use proptest::prelude::*;

fn load(name: &str) -> Array {
    npy(&format!("linalg/{name}.npy"))
}

/// Tolerances for a product of length-k dot products in `dtype`.
fn tol(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::Float64 => (1e-12, 1e-12),
        Dtype::Float32 | Dtype::Complex64 => (1e-5, 1e-5),
        Dtype::Float16 => (2e-3, 2e-3),
        _ => (1.6e-2, 1.6e-2),
    }
}

const CASES: &[&str] = &[
    "mm_2d",
    "mm_vec_mat",
    "mm_mat_vec",
    "mm_vec_vec",
    "mm_batched",
    "mm_bcast",
    "mm_batch_mat",
    "mm_vec_batch",
];

#[test]
fn matmul_fixtures_all_float_dtypes() {
    for case in CASES {
        for (tag, dtype) in [
            ("f32", Dtype::Float32),
            ("f16", Dtype::Float16),
            ("bf16", Dtype::Bfloat16),
        ] {
            let a = ops::astype(&load(&format!("{case}_{tag}_a")), dtype).unwrap();
            let b = ops::astype(&load(&format!("{case}_{tag}_b")), dtype).unwrap();
            let want = ops::astype(&load(&format!("{case}_{tag}_out")), dtype).unwrap();
            let got = ops::matmul(&a, &b).unwrap();
            assert_eq!(got.dtype(), dtype, "{case} {tag}");
            // MLX accumulates half types in f32 and rounds once, as we do;
            // allow one rounding step of the output dtype.
            let (r, t) = tol(dtype);
            assert_close(&got, &want, r, t);
        }
    }
}

#[test]
fn matmul_transposed_views() {
    let a = ops::transpose(&load("mm_t_a"), &[]).unwrap();
    let b = ops::transpose(&load("mm_t_b"), &[]).unwrap();
    assert_close(&ops::matmul(&a, &b).unwrap(), &load("mm_t_out"), 1e-5, 1e-5);
}

#[test]
fn matmul_complex64() {
    let got = ops::matmul(&load("mm_c64_a"), &load("mm_c64_b")).unwrap();
    assert_eq!(got.dtype(), Dtype::Complex64);
    let want = load("mm_c64_out").to_vec::<mlx::Complex64>().unwrap();
    for (g, w) in got.to_vec::<mlx::Complex64>().unwrap().iter().zip(&want) {
        assert!((g - w).norm() <= 1e-5 * (1.0 + w.norm()), "{g} vs {w}");
    }
}

#[test]
fn addmm_fixtures() {
    for case in [
        "addmm_2d",
        "addmm_full",
        "addmm_batched",
        "addmm_vec",
        "addmm_batch_vec_c",
    ] {
        let c = load(&format!("{case}_c"));
        let a = load(&format!("{case}_a"));
        let b = load(&format!("{case}_b"));
        let got = ops::addmm(&c, &a, &b, 1.5, -0.25).unwrap();
        assert_close(&got, &load(&format!("{case}_out")), 1e-5, 1e-5);
    }
}

#[test]
fn addmm_half_types_and_complex() {
    let c = load("addmm_2d_c");
    let a = load("addmm_2d_a");
    let b = load("addmm_2d_b");
    let want = load("addmm_2d_out");
    for dtype in [Dtype::Float16, Dtype::Bfloat16, Dtype::Float64] {
        let cast = |x: &Array| ops::astype(x, dtype).unwrap();
        let got = ops::addmm(&cast(&c), &cast(&a), &cast(&b), 1.5, -0.25).unwrap();
        assert_eq!(got.dtype(), dtype);
        // Inputs were rounded to the dtype, so compare loosely with the f32 result.
        let (r, t) = tol(dtype);
        assert_close(&got, &want, r * 4.0 + 1e-5, t * 4.0 + 1e-5);
    }
    let cc = ops::astype(&c, Dtype::Complex64).unwrap();
    let got = ops::addmm(&cc, &a, &b, 1.5, -0.25).unwrap();
    assert_eq!(got.dtype(), Dtype::Complex64);
    let re: Vec<f64> = got
        .to_vec::<mlx::Complex64>()
        .unwrap()
        .iter()
        .map(|z| z.re as f64)
        .collect();
    for (g, w) in re.iter().zip(as_f64(&want)) {
        assert!((g - w).abs() < 1e-5);
    }
}

#[test]
fn inner_outer_tensordot_fixtures() {
    let got = ops::inner(&load("inner_a"), &load("inner_b")).unwrap();
    assert_close(&got, &load("inner_out"), 1e-5, 1e-5);
    let got = ops::outer(&load("outer_a"), &load("outer_b")).unwrap();
    assert_close(&got, &load("outer_out"), 1e-6, 1e-6);
    let got = ops::tensordot(&load("tensordot_a"), &load("tensordot_b"), 2).unwrap();
    assert_close(&got, &load("tensordot_out"), 1e-5, 1e-5);
}

/// Names of the primitives from `a` back to the inputs, depth first.
fn graph_names(a: &Array) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![a.clone()];
    while let Some(x) = stack.pop() {
        if let Some((node, _)) = x.node() {
            out.push(node.primitive().name().to_string());
            stack.extend(node.inputs());
        }
    }
    out
}

#[test]
fn graphs_follow_mlx() {
    // Same nodes as MLX's export of matmul((3,), (2, 3, 4)).
    let a = Array::from_slice(&[1.0f32; 3], &[3]).unwrap();
    let b = Array::from_slice(&[1.0f32; 24], &[2, 3, 4]).unwrap();
    let out = ops::matmul(&a, &b).unwrap();
    assert_eq!(out.shape(), &[2, 4]);
    assert_eq!(
        graph_names(&out),
        ["Squeeze", "Matmul", "Broadcast", "ExpandDims"]
    );
    // Mixed dtypes get an AsType.
    let h = ops::astype(
        &Array::from_slice(&[1.0f32; 6], &[2, 3]).unwrap(),
        Dtype::Float16,
    )
    .unwrap();
    h.eval().unwrap();
    let out = ops::matmul(&h, &a).unwrap();
    assert_eq!(out.dtype(), Dtype::Float32);
    assert_eq!(
        graph_names(&out),
        ["Squeeze", "Matmul", "ExpandDims", "AsType"]
    );
    // addmm with a 1-D `a`: c is reshaped, the result squeezed.
    let c = Array::from_slice(&[1.0f32; 4], &[4]).unwrap();
    let m = Array::from_slice(&[1.0f32; 12], &[3, 4]).unwrap();
    let out = ops::addmm(&c, &a, &m, 2.0, 0.5).unwrap();
    assert_eq!(out.shape(), &[4]);
    assert_eq!(
        graph_names(&out),
        ["Squeeze", "AddMM", "Reshape", "ExpandDims"]
    );
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![6.5; 4]);
}

#[test]
fn errors_name_the_shapes() {
    let a = Array::from_slice(&[1.0f32; 6], &[2, 3]).unwrap();
    let b = Array::from_slice(&[1.0f32; 20], &[4, 5]).unwrap();
    let e = ops::matmul(&a, &b).unwrap_err().to_string();
    assert!(e.contains("[2, 3]") && e.contains("[4, 5]"), "{e}");
    let e = ops::matmul(&Array::scalar(1.0f32), &b)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least one dimension"), "{e}");
    let i = Array::from_slice(&[1i32; 6], &[2, 3]).unwrap();
    let e = ops::matmul(&i, &ops::transpose(&i, &[]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("inexact"), "{e}");
    let c = Array::from_slice(&[1.0f32; 3], &[3]).unwrap();
    let sq = Array::from_slice(&[1.0f32; 4], &[2, 2]).unwrap();
    let e = ops::addmm(&c, &sq, &sq, 1.0, 1.0).unwrap_err().to_string();
    assert!(e.contains("[3]"), "{e}");
    let x = Array::from_slice(&[1.0f32; 24], &[2, 3, 4]).unwrap();
    let y = Array::from_slice(&[1.0f32; 60], &[3, 4, 5]).unwrap();
    let batch = Array::from_slice(&[1.0f32; 24], &[3, 2, 4]).unwrap();
    let e = ops::matmul(&x, &ops::transpose(&batch, &[0, 2, 1]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("broadcast"), "{e}");
    assert!(ops::tensordot(&x, &y, 3).is_err());
    assert!(ops::inner(&x, &b).is_err());
}

/// Row-major f64 reference: `alpha * a @ b + beta * c` for (batch, m, k) @ (batch, k, n).
#[allow(clippy::too_many_arguments)]
fn naive(
    a: &[f64],
    b: &[f64],
    c: Option<&[f64]>,
    nb: usize,
    m: usize,
    k: usize,
    n: usize,
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; nb * m * n];
    for p in 0..nb {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for l in 0..k {
                    s += a[(p * m + i) * k + l] * b[(p * k + l) * n + j];
                }
                let o = (p * m + i) * n + j;
                out[o] = alpha * s + c.map_or(0.0, |c| beta * c[o]);
            }
        }
    }
    out
}

/// An array of `shape` whose storage is transposed in its last two axes
/// (a column-major matrix per batch entry), holding the same values.
fn col_major(x: &Array) -> Array {
    let nd = x.ndim();
    let mut perm: Vec<i32> = (0..nd as i32).collect();
    perm.swap(nd - 1, nd - 2);
    let t = ops::transpose(x, &perm).unwrap();
    // Materialise the transposed layout, then view it back.
    let vals = as_f64(&t);
    let tt = ops::astype(&Array::from_slice(&vals, t.shape()).unwrap(), x.dtype()).unwrap();
    tt.eval().unwrap();
    ops::transpose(&tt, &perm).unwrap()
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    // Small integers and halves: exact in every float dtype.
    let mut g = common::Lcg::new(seed);
    (0..n)
        .map(|_| ((g.next_u64() >> 33) % 9) as f64 / 2.0 - 2.0)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn matches_naive_loop(
        nb in 1usize..4, m in 0usize..9, k in 0usize..9, n in 0usize..9,
        bcast_b in any::<bool>(), ta in any::<bool>(), tb in any::<bool>(),
        with_c in any::<bool>(), dtype_i in 0usize..4, seed in any::<u64>(),
    ) {
        let dtype = [Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::Bfloat16][dtype_i];
        let av = values(nb * m * k, seed);
        let bv = values(if bcast_b { k * n } else { nb * k * n }, seed ^ 1);
        let cv = values(m * n, seed ^ 2);
        let mk = |v: &[f64], shape: &[i32]| {
            ops::astype(&Array::from_slice(v, shape).unwrap(), dtype).unwrap()
        };
        let mut a = mk(&av, &[nb as i32, m as i32, k as i32]);
        let mut b = if bcast_b {
            mk(&bv, &[k as i32, n as i32])
        } else {
            mk(&bv, &[nb as i32, k as i32, n as i32])
        };
        if ta { a = col_major(&a); }
        if tb { b = col_major(&b); }
        let bfull: Vec<f64> = if bcast_b {
            (0..nb).flat_map(|_| bv.iter().copied()).collect()
        } else {
            bv.clone()
        };
        let (alpha, beta) = (1.5, -0.5);
        let (got, want) = if with_c {
            let c = mk(&cv, &[m as i32, n as i32]);
            let cfull: Vec<f64> = (0..nb).flat_map(|_| cv.iter().copied()).collect();
            (
                ops::addmm(&c, &a, &b, alpha as f32, beta as f32).unwrap(),
                naive(&av, &bfull, Some(&cfull), nb, m, k, n, alpha, beta),
            )
        } else {
            (ops::matmul(&a, &b).unwrap(), naive(&av, &bfull, None, nb, m, k, n, 1.0, 0.0))
        };
        prop_assert_eq!(got.shape(), &[nb as i32, m as i32, n as i32]);
        prop_assert_eq!(got.dtype(), dtype);
        let (r, t) = tol(dtype);
        for (i, (g, w)) in as_f64(&got).iter().zip(&want).enumerate() {
            prop_assert!((g - w).abs() <= t * 8.0 + r * w.abs(), "element {}: {} vs {}", i, g, w);
        }
    }
}

#[test]
fn strided_and_broadcast_operands() {
    // a is every other column of a wider buffer; b is a stride-0 row broadcast.
    let buf: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let base = Array::from_slice(&buf, &[3, 8]).unwrap();
    let d = base.data().unwrap();
    let a = Array::from_data(
        Data {
            buffer: d.buffer.clone(),
            strides: vec![8, 2],
            offset: 1,
        },
        Spec::new([3, 4], Dtype::Float32),
    );
    let row = Array::from_slice(&[1.0f32, 2.0], &[1, 2]).unwrap();
    let b = ops::broadcast_to(&row, &[4, 2]).unwrap();
    let got = ops::matmul(&a, &b).unwrap().to_vec::<f32>().unwrap();
    let mut want = Vec::new();
    for i in 0..3 {
        let s: f32 = (0..4).map(|j| (i * 8 + 1 + 2 * j) as f32).sum();
        want.extend([s, 2.0 * s]);
    }
    assert_eq!(got, want);
}

#[test]
fn large_and_many_small_products_use_the_parallel_paths() {
    // One product above the threading threshold, a tall merged product,
    // and a batch of many small ones.
    for (sa, sb) in [
        (vec![70, 90], vec![90, 80]),
        (vec![6, 40, 30], vec![30, 50]),
        (vec![600, 4, 5], vec![600, 5, 3]),
    ] {
        let na: usize = sa.iter().product::<i32>() as usize;
        let nb: usize = sb.iter().product::<i32>() as usize;
        let av = values(na, 3);
        let bv = values(nb, 4);
        let a = Array::from_slice(&av, &sa).unwrap();
        let b = Array::from_slice(&bv, &sb).unwrap();
        let got = as_f64(&ops::matmul(&a, &b).unwrap());
        let k = *sa.last().unwrap() as usize;
        let m = sa[sa.len() - 2] as usize;
        let n = *sb.last().unwrap() as usize;
        let batch = na / (m * k);
        let bfull: Vec<f64> = if sb.len() == 2 {
            (0..batch).flat_map(|_| bv.iter().copied()).collect()
        } else {
            bv.clone()
        };
        let want = naive(&av, &bfull, None, batch, m, k, n, 1.0, 0.0);
        assert_eq!(got, want, "{sa:?} @ {sb:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// One row times a matrix (a batch-1 linear layer) takes its own
    /// memory-bound path, threaded above 2^18 multiply-adds; both weight
    /// layouts (`x @ W` and `x @ W.T`) and a strided row. Small halves sum
    /// exactly in f32, so the result must equal the f64 loop exactly.
    #[test]
    fn one_row_products_match_naive_loop(
        k in 1usize..1500, n in 1usize..600, tb in any::<bool>(),
        strided_x in any::<bool>(), seed in any::<u64>(),
    ) {
        let av = values(k, seed);
        let bv = values(k * n, seed ^ 1);
        let a = if strided_x {
            // Column 0 of a [k, 2] matrix, seen as a [1, k] row with stride 2.
            let wide: Vec<f64> = av.iter().flat_map(|&v| [v, 9.0]).collect();
            let m = ops::astype(&Array::from_slice(&wide, &[k as i32, 2]).unwrap(), Dtype::Float32).unwrap();
            let col = ops::slice(&m, &[0, 0], &[k as i32, 1], &[1, 1]).unwrap();
            ops::transpose(&col, &[1, 0]).unwrap()
        } else {
            ops::astype(&Array::from_slice(&av, &[1, k as i32]).unwrap(), Dtype::Float32).unwrap()
        };
        let mut b = ops::astype(&Array::from_slice(&bv, &[k as i32, n as i32]).unwrap(), Dtype::Float32).unwrap();
        if tb { b = col_major(&b); }
        let got = as_f64(&ops::matmul(&a, &b).unwrap());
        prop_assert_eq!(got, naive(&av, &bv, None, 1, 1, k, n, 1.0, 0.0));
    }
}

/// One row per batch entry (a decode step's attention: each head's query
/// against its key/value cache, the caches broadcast over the query heads
/// that share them) takes the one-row path per entry, in both layouts and
/// above and below the threading threshold; small halves sum exactly.
#[test]
fn batched_one_row_products_with_broadcast_caches_match_naive_loop() {
    for (kv, rep, k, n) in [
        (3, 3, 64, 256),
        (3, 3, 256, 64),
        (2, 4, 600, 70),
        (1, 2, 5, 3),
        // Groups of more than four entries, widths past one 64-column
        // block, and stretches that are not whole blocks of 16.
        (1, 9, 33, 130),
        (2, 5, 129, 17),
    ] {
        let (heads, nb) = (kv * rep, kv * rep);
        let qv = values(heads * k, 11);
        let cv = values(kv * k * n, 12);
        let f32_array = |v: &[f64], shape: &[i32]| {
            ops::astype(&Array::from_slice(v, shape).unwrap(), Dtype::Float32).unwrap()
        };
        let q = f32_array(&qv, &[kv as i32, rep as i32, 1, k as i32]);
        let cache = f32_array(&cv, &[kv as i32, 1, k as i32, n as i32]);
        let shape = [kv as i32, rep as i32, k as i32, n as i32];
        let full: Vec<f64> = (0..nb)
            .flat_map(|h| cv[h / rep * k * n..][..k * n].to_vec())
            .collect();
        let want = naive(&qv, &full, None, nb, 1, k, n, 1.0, 0.0);
        for transposed in [false, true] {
            // Stored n-major (`q @ K.T` of a row-major key cache) or k-major.
            let stored = if transposed {
                col_major(&cache)
            } else {
                cache.clone()
            };
            let b = ops::broadcast_to(&stored, &shape).unwrap();
            let got = as_f64(&ops::matmul(&q, &b).unwrap());
            assert_eq!(
                got, want,
                "kv {kv} rep {rep} k {k} n {n} transposed {transposed}"
            );
        }
    }
}

/// bfloat16 and float16 products sum in MLX's order (f32, one accumulator per
/// output in k order, products rounded before they are added, one rounding
/// to the half type), bit for bit: tests/fixtures/half_matmul/generate.py
/// exports a batch-1 linear layer, batched and broadcast products, addmm
/// with alpha and beta, a 9-row product, and rows that cancel so that any
/// other summation order gives other numbers, from MLX 0.32.4 on CPU.
#[test]
fn half_precision_products_match_mlx_bit_for_bit() {
    let f = mlx::import_function(common::fixture("half_matmul/matmul.mlxfn")).unwrap();
    let arr = |name: &str| common::npy_or_bf16bits(&format!("half_matmul/{name}"));
    let args: Vec<Array> = (0..8).map(|i| arr(&format!("in{i}"))).collect();
    let out = f.call(&args).unwrap();
    assert_eq!(out.len(), 10);
    for (i, got) in out.iter().enumerate() {
        common::assert_bits_eq(got, &arr(&format!("out{i}")));
    }
}

/// A half-precision batch-1 product with k = 0 is `beta * c` (or zeros),
/// as MLX gives, and reads nothing of the empty operands.
#[test]
fn half_precision_products_with_empty_k() {
    for dtype in [Dtype::Bfloat16, Dtype::Float16] {
        let x = ops::astype(&Array::from_slice::<f32>(&[], &[1, 0]).unwrap(), dtype).unwrap();
        let w = ops::astype(&Array::from_slice::<f32>(&[], &[20, 0]).unwrap(), dtype).unwrap();
        let wt = w.transpose(&[1, 0]).unwrap();
        let got = ops::matmul(&x, &wt).unwrap();
        assert_eq!(got.shape(), &[1, 20]);
        assert_eq!(as_f64(&got), vec![0.0; 20]);
        let c = ops::astype(&Array::from_slice(&[2f32; 20], &[1, 20]).unwrap(), dtype).unwrap();
        let got = ops::addmm(&c, &x, &wt, 1.0, 0.5).unwrap();
        assert_eq!(as_f64(&got), vec![1.0; 20]);
    }
}

/// `x @ W.T` for one row in MLX's half-precision order, written out: f32
/// products rounded before each is added, in k order, one rounding at the end.
fn half_row_reference(x: &[f32], w: &[f32], n: usize, to_half: impl Fn(f32) -> f32) -> Vec<f32> {
    let k = x.len();
    (0..n)
        .map(|j| {
            let mut acc = 0f32;
            for (a, b) in x.iter().zip(&w[j * k..(j + 1) * k]) {
                let p = a * b;
                acc += p;
            }
            to_half(acc)
        })
        .collect()
}

/// `x @ W.T` for `x` of rows of `k > 0`, each row as [`half_row_reference`].
fn half_reference(x: &[f32], k: usize, w: &[f32], n: usize, to_half: fn(f32) -> f32) -> Vec<f32> {
    x.chunks(k)
        .flat_map(|row| half_row_reference(row, w, n, to_half))
        .collect()
}

/// One row times a k-major half-precision matrix (a decode step's
/// `scores @ V`, the cache broadcast over grouped heads) sums each column
/// in k order: `big - big + small` keeps `small`, where any other order
/// loses it to rounding (`small` is below half an f32 ulp of `big`).
#[test]
fn half_one_row_times_k_major_columns_sums_in_k_order() {
    let (k, n) = (3usize, 32usize);
    for (dtype, big, unit) in [
        (Dtype::Bfloat16, 2f32.powi(30), 1f32),
        (Dtype::Float16, 2f32.powi(15), 2f32.powi(-16)),
    ] {
        let small = |j: usize| (j + 1) as f32 * unit;
        let w: Vec<f32> = (0..k * n)
            .map(|i| match i / n {
                0 => big,
                1 => -big,
                _ => small(i % n),
            })
            .collect();
        let w = ops::astype(
            &Array::from_slice(&w, &[1, 1, k as i32, n as i32]).unwrap(),
            dtype,
        )
        .unwrap();
        let w = ops::broadcast_to(&w, &[2, 3, k as i32, n as i32]).unwrap();
        let x = ops::astype(
            &Array::from_slice(&[1f32; 18], &[2, 3, 1, k as i32]).unwrap(),
            dtype,
        )
        .unwrap();
        let got = ops::astype(&ops::matmul(&x, &w).unwrap(), Dtype::Float32).unwrap();
        let want: Vec<f32> = (0..6 * n).map(|i| small(i % n)).collect();
        assert_eq!(got.to_vec::<f32>().unwrap(), want, "{dtype}");
    }
}

/// Products whose f32 result depends on rounding each product before it
/// is added: a bfloat16 product of 2^64 and 2^64 overflows to infinity,
/// and infinity minus the largest finite product stays infinite, where a
/// fused multiply-add would give 2^120. Twelve rows and sixteen columns
/// reach the widest kernels, which must not fuse here.
#[test]
fn half_products_that_overflow_are_rounded_before_the_sum() {
    let (m, n) = (12, 16);
    let big = 2f32.powi(64);
    let x: Vec<f32> = (0..m).flat_map(|_| [-1.992_187_5 * big, big]).collect();
    let w: Vec<f32> = (0..n).flat_map(|_| [big / 2.0, big]).collect();
    let bf = |v: &[f32], shape: &[i32]| {
        ops::astype(&Array::from_slice(v, shape).unwrap(), Dtype::Bfloat16).unwrap()
    };
    let wt = bf(&w, &[n as i32, 2]).transpose(&[1, 0]).unwrap();
    let got = ops::astype(
        &ops::matmul(&bf(&x, &[m as i32, 2]), &wt).unwrap(),
        Dtype::Float32,
    )
    .unwrap();
    // -1.9921875 * 2^127 is finite; 2^128 is not; their sum is infinite.
    assert_eq!(got.to_vec::<f32>().unwrap(), vec![f32::INFINITY; m * n]);
}

/// Products of many rows: the 12-row kernels, k past one cache step (256),
/// and a left operand past one L2 chunk (250 x 1100 f32 > 1 MiB, so rows
/// are taken 228 at a time). f32 against the f64 loop; bfloat16 bit for
/// bit against MLX's order written out.
#[test]
fn products_of_many_rows_in_cache_sized_steps() {
    for (m, k, n, tb) in [
        (37, 300, 33, false),
        (40, 513, 48, true),
        (250, 1100, 20, true),
    ] {
        let av = values(m * k, 5);
        let bv = values(k * n, 6);
        let a = Array::from_slice(&av, &[m as i32, k as i32]).unwrap();
        let b = Array::from_slice(&bv, &[k as i32, n as i32]).unwrap();
        let b = if tb { col_major(&b) } else { b };
        let want = naive(&av, &bv, None, 1, m, k, n, 1.0, 0.0);
        let want = Array::from_slice(&want, &[m as i32, n as i32]).unwrap();
        assert_close(&ops::matmul(&a, &b).unwrap(), &want, 1e-5, 1e-5);
        // alpha and beta with c.
        let cv = values(m * n, 7);
        let c = Array::from_slice(&cv, &[m as i32, n as i32]).unwrap();
        let want = naive(&av, &bv, Some(&cv), 1, m, k, n, 2.0, 0.5);
        let want = Array::from_slice(&want, &[m as i32, n as i32]).unwrap();
        assert_close(
            &ops::addmm(&c, &a, &b, 2.0, 0.5).unwrap(),
            &want,
            1e-5,
            1e-5,
        );

        let round = |v: f32| half::bf16::from_f32(v).to_f32();
        let xv: Vec<f32> = av.iter().map(|&v| round(v as f32)).collect();
        // W (n x k) holds b's values, so that x @ W.T = a @ b.
        let wv: Vec<f32> = (0..n * k)
            .map(|i| round(bv[(i % k) * n + i / k] as f32))
            .collect();
        let bf = |v: &[f32], shape: &[i32]| {
            ops::astype(&Array::from_slice(v, shape).unwrap(), Dtype::Bfloat16).unwrap()
        };
        let w = bf(&wv, &[n as i32, k as i32]).transpose(&[1, 0]).unwrap();
        let got = ops::astype(
            &ops::matmul(&bf(&xv, &[m as i32, k as i32]), &w).unwrap(),
            Dtype::Float32,
        )
        .unwrap();
        let got: Vec<u32> = got
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u32> = half_reference(&xv, k, &wv, n, round)
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "bf16 {m} x {k} x {n}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The batch-1 half-precision paths (rows along k: blocks of 16 rows,
    /// k taken 16, 8, then 1 at a time; columns contiguous: panels widened
    /// row by row) against the written-out loop, bit for bit, with values
    /// whose sums round (not exactly summable ones).
    #[test]
    fn half_one_row_products_sum_in_mlx_order(
        k in 0usize..300, n in 1usize..70, bf in any::<bool>(), w_t in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut g = common::Lcg::new(seed);
        let (dtype, round): (Dtype, fn(f32) -> f32) = if bf {
            (Dtype::Bfloat16, |v| half::bf16::from_f32(v).to_f32())
        } else {
            (Dtype::Float16, |v| half::f16::from_f32(v).to_f32())
        };
        let xv: Vec<f32> = g.uniform(-2.0, 2.0, k).into_iter().map(|v| round(v as f32)).collect();
        let wv: Vec<f32> = g.uniform(-1.0, 1.0, n * k).into_iter().map(|v| round(v as f32)).collect();
        let x = ops::astype(&Array::from_slice(&xv, &[1, k as i32]).unwrap(), dtype).unwrap();
        let w = ops::astype(&Array::from_slice(&wv, &[n as i32, k as i32]).unwrap(), dtype).unwrap();
        // `x @ W.T` of a row-major `W` (rows along k), or the same values
        // stored k-major (`x @ W`, columns contiguous).
        let w = if w_t {
            w.transpose(&[1, 0]).unwrap()
        } else {
            let kn: Vec<f32> = (0..k * n).map(|i| wv[(i % n) * k + i / n]).collect();
            ops::astype(&Array::from_slice(&kn, &[k as i32, n as i32]).unwrap(), dtype).unwrap()
        };
        let got = ops::astype(&ops::matmul(&x, &w).unwrap(), Dtype::Float32).unwrap();
        let got: Vec<u32> = got.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
        let want: Vec<u32> = half_row_reference(&xv, &wv, n, round).iter().map(|v| v.to_bits()).collect();
        prop_assert_eq!(got, want);
    }

    /// Products of many rows (prefill-shaped: the 12-, 6-, 4- and 1-row
    /// kernels, the 12-row kernel over two panels with k past its cache
    /// step of 128, and the fused multiply-add where every product is exact)
    /// against the written-out loop, bit for bit. bfloat16 values are
    /// scaled by up to 2^±72 so that some products overflow or fall below
    /// f32's normal range, where only the product-then-sum order is right.
    #[test]
    fn half_products_of_many_rows_sum_in_mlx_order(
        m in 1usize..40, k in 0usize..300, n in 1usize..40, bf in any::<bool>(),
        w_t in any::<bool>(), scales in (0usize..5, 0usize..5), seed in any::<u64>(),
    ) {
        let mut g = common::Lcg::new(seed);
        let (dtype, round, (sx, sw)): (Dtype, fn(f32) -> f32, _) = if bf {
            const SCALES: [i32; 5] = [-72, -60, 0, 60, 72];
            // (MLX writes every bfloat16 NaN as 0x7FC0, the positive quiet NaN.)
            let round = |v: f32| if v.is_nan() { f32::NAN } else { half::bf16::from_f32(v).to_f32() };
            (Dtype::Bfloat16, round, (SCALES[scales.0], SCALES[scales.1]))
        } else {
            (Dtype::Float16, |v| half::f16::from_f32(v).to_f32(), (0, 0))
        };
        let values = |g: &mut common::Lcg, len, scale: i32| -> Vec<f32> {
            let s = 2f32.powi(scale);
            g.uniform(-2.0, 2.0, len).into_iter().map(|v| round(v as f32 * s)).collect()
        };
        let xv = values(&mut g, m * k, sx);
        let wv = values(&mut g, n * k, sw);
        let arr = |v: &[f32], shape: &[i32]| {
            ops::astype(&Array::from_slice(v, shape).unwrap(), dtype).unwrap()
        };
        let x = arr(&xv, &[m as i32, k as i32]);
        let w = if w_t {
            arr(&wv, &[n as i32, k as i32]).transpose(&[1, 0]).unwrap()
        } else {
            let kn: Vec<f32> = (0..k * n).map(|i| wv[(i % n) * k + i / n]).collect();
            arr(&kn, &[k as i32, n as i32])
        };
        let got = ops::astype(&ops::matmul(&x, &w).unwrap(), Dtype::Float32).unwrap();
        let got: Vec<u32> = got.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
        let want = if k == 0 { vec![0.0; m * n] } else { half_reference(&xv, k, &wv, n, round) };
        let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
        prop_assert_eq!(got, want);
    }
}

/// Batched one-row half-precision products as a decode step makes them
/// (grouped heads over a broadcast cache), large enough to be split over
/// threads, with a last block of 6 columns: every output is MLX's sum in k
/// order, for `W` stored with rows along k (`q @ K.T`) and k-major
/// (`scores @ V`).
#[test]
fn batched_one_row_half_products_match_the_k_order_sums() {
    let (k, n) = (600usize, 70usize);
    let w: Vec<f32> = (0..3 * n * k)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
        .collect();
    let x: Vec<f32> = (0..2 * 3 * k)
        .map(|i| ((i * 53 % 97) as f32 - 48.0) / 32.0)
        .collect();
    for dtype in [Dtype::Bfloat16, Dtype::Float16] {
        let to_half: fn(f32) -> f32 = if dtype == Dtype::Bfloat16 {
            |v| half::bf16::from_f32(v).to_f32()
        } else {
            |v| half::f16::from_f32(v).to_f32()
        };
        let half = |v: &[f32], shape: &[i32]| {
            ops::astype(&Array::from_slice(v, shape).unwrap(), dtype).unwrap()
        };
        // x: 2 entries x 3 heads sharing one of 3 matrices (n x k each).
        let xs = half(&x, &[2, 3, 1, 1, k as i32]);
        let rows = half(&w, &[1, 3, 1, n as i32, k as i32]);
        let rows = ops::broadcast_to(&rows, &[2, 3, 1, n as i32, k as i32]).unwrap();
        let wk: Vec<f32> = (0..3 * k * n)
            .map(|i| {
                let (m, kk, j) = (i / (k * n), i / n % k, i % n);
                w[(m * n + j) * k + kk]
            })
            .collect();
        let k_major = half(&wk, &[1, 3, 1, k as i32, n as i32]);
        let k_major = ops::broadcast_to(&k_major, &[2, 3, 1, k as i32, n as i32]).unwrap();
        let xw: Vec<f32> = x.iter().map(|&v| to_half(v)).collect();
        let ww: Vec<f32> = w.iter().map(|&v| to_half(v)).collect();
        let want: Vec<f32> = (0..6)
            .flat_map(|e| {
                let m = e % 3;
                half_row_reference(
                    &xw[e * k..(e + 1) * k],
                    &ww[m * n * k..(m + 1) * n * k],
                    n,
                    to_half,
                )
            })
            .collect();
        for (name, b) in [
            ("rows along k", rows.transpose(&[0, 1, 2, 4, 3]).unwrap()),
            ("k-major", k_major),
        ] {
            let got = ops::astype(&ops::matmul(&xs, &b).unwrap(), Dtype::Float32).unwrap();
            assert_eq!(got.shape(), &[2, 3, 1, 1, n as i32]);
            assert_eq!(got.to_vec::<f32>().unwrap(), want, "{dtype} {name}");
        }
    }
}
