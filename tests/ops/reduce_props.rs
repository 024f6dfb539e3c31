//! Reductions against a naive scalar loop: random shapes, axes, and
//! layouts (transposed, broadcast), plus large inputs that take the parallel
//! row, column, general and few-outputs paths.

use mlx::{ops, Array};
use proptest::prelude::*;

/// Row-major multi-index of linear index `i` in `shape`.
fn unravel(mut i: usize, shape: &[i32]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        idx[k] = i % d as usize;
        i /= d as usize;
    }
    idx
}

/// Naive reduction of row-major `x` (shaped `shape`) over `axes`, keepdims.
fn naive<T: Copy, A: Copy>(
    x: &[T],
    shape: &[i32],
    axes: &[usize],
    init: A,
    f: impl Fn(A, T) -> A,
) -> Vec<A> {
    let out_shape: Vec<i32> = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    let n_out: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut out = vec![init; n_out];
    for (i, &v) in x.iter().enumerate() {
        let idx = unravel(i, shape);
        let mut o = 0;
        for (k, &d) in out_shape.iter().enumerate() {
            o = o * d as usize + if axes.contains(&k) { 0 } else { idx[k] };
        }
        out[o] = f(out[o], v);
    }
    out
}

/// A random layout case: shape, data, axes, and a permutation to apply.
fn case() -> impl Strategy<Value = (Vec<i32>, Vec<i32>, Vec<usize>, Vec<usize>, bool)> {
    prop::collection::vec(1i32..5, 1..5).prop_flat_map(|shape| {
        let n: i32 = shape.iter().product();
        let nd = shape.len();
        (
            Just(shape),
            prop::collection::vec(-50i32..50, n as usize),
            prop::sample::subsequence((0..nd).collect::<Vec<_>>(), 0..=nd),
            Just((0..nd).collect::<Vec<usize>>()).prop_shuffle(),
            any::<bool>(),
        )
    })
}

/// The input as an array laid out per the case: permuted (a transposed
/// view) and, when `bcast`, with a broadcast leading axis of size 2.
fn build(shape: &[i32], data: &[i32], perm: &[usize], bcast: bool) -> Array {
    let a = Array::from_slice(data, shape).unwrap();
    let perm: Vec<i32> = perm.iter().map(|&p| p as i32).collect();
    let a = ops::transpose(&a, &perm).unwrap();
    if bcast {
        let mut s = vec![2];
        s.extend_from_slice(a.shape());
        let b = ops::broadcast_to(&a, &s).unwrap();
        b.eval().unwrap();
        b
    } else {
        a.eval().unwrap();
        a
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sum_max_prod_match_naive((shape, data, axes, perm, bcast) in case()) {
        let a = build(&shape, &data, &perm, bcast);
        let logical = a.to_vec::<i32>().unwrap();
        let mut axes = axes;
        if bcast {
            axes = axes.into_iter().map(|x| x + 1).collect();
            axes.push(0);
        }
        let ax: Vec<i32> = axes.iter().map(|&x| x as i32).collect();
        let all: Vec<usize> = if ax.is_empty() { (0..a.ndim()).collect() } else { axes.clone() };

        let s = ops::sum(&a, &ax, true).unwrap().to_vec::<i32>().unwrap();
        prop_assert_eq!(s, naive(&logical, a.shape(), &all, 0i32, |x, y| x.wrapping_add(y)));
        let m = ops::max(&a, &ax, true).unwrap().to_vec::<i32>().unwrap();
        prop_assert_eq!(m, naive(&logical, a.shape(), &all, i32::MIN, |x, y| x.max(y)));
        let p = ops::prod(&a, &ax, true).unwrap().to_vec::<i32>().unwrap();
        prop_assert_eq!(p, naive(&logical, a.shape(), &all, 1i32, |x, y| x.wrapping_mul(y)));

        let f = ops::astype(&a, mlx::Dtype::Float64).unwrap();
        let fs = ops::sum(&f, &ax, true).unwrap().to_vec::<f64>().unwrap();
        let want = naive(&logical, a.shape(), &all, 0.0f64, |x, y| x + y as f64);
        prop_assert_eq!(fs, want);
    }

    #[test]
    fn argmax_matches_naive((shape, data, _axes, perm, _b) in case(), axis in 0usize..4) {
        let a = build(&shape, &data, &perm, false);
        let axis = axis % a.ndim();
        let logical = a.to_vec::<i32>().unwrap();
        let got = ops::argmax(&a, Some(axis as i32), true).unwrap().to_vec::<u32>().unwrap();
        // Naive: (best value, index) folded with a running position counter.
        let dims = a.shape().to_vec();
        let mut want = naive(&logical, &dims, &[axis], (i32::MIN, u32::MAX, 0u32), |(b, at, k), v| {
            if at == u32::MAX || v > b { (v, k, k + 1) } else { (b, at, k + 1) }
        });
        // `k` counts visits per output in row-major order, which is the axis index.
        let want: Vec<u32> = want.drain(..).map(|(_, at, _)| at).collect();
        prop_assert_eq!(got, want);
    }
}

fn naive_f32_sum(x: &[f32], shape: &[i32], axes: &[usize]) -> Vec<f64> {
    naive(x, shape, axes, 0.0f64, |a, v| a + v as f64)
}

fn check_close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
            "element {i}: got {g}, want {w}"
        );
    }
}

#[test]
fn large_inputs_take_every_parallel_path() {
    let (r, c) = (300usize, 310usize);
    let x: Vec<f32> = (0..r * c)
        .map(|i| ((i * 7919) % 1000) as f32 * 0.01 - 3.0)
        .collect();
    let a = Array::from_slice(&x, &[r as i32, c as i32]).unwrap();
    let shape = [r as i32, c as i32];
    // Row (last axis), column (first axis), everything (few outputs).
    for axes in [vec![1usize], vec![0], vec![0, 1]] {
        let ax: Vec<i32> = axes.iter().map(|&v| v as i32).collect();
        let got = ops::sum(&a, &ax, true).unwrap().to_vec::<f32>().unwrap();
        check_close(&got, &naive_f32_sum(&x, &shape, &axes));
    }
    // Transposed: reducing the logical last axis is a column loop in memory.
    let t = ops::transpose(&a, &[1, 0]).unwrap();
    let tl = t.to_vec::<f32>().unwrap();
    let got = ops::sum(&t, &[1], false).unwrap().to_vec::<f32>().unwrap();
    check_close(&got, &naive_f32_sum(&tl, &[c as i32, r as i32], &[1]));
    // General: a 3-d permutation whose innermost kept and reduced runs are strided.
    let b = ops::reshape(&a, &[30, 10, 310]).unwrap();
    let p = ops::transpose(&b, &[2, 0, 1]).unwrap();
    let pl = p.to_vec::<f32>().unwrap();
    let got = ops::sum(&p, &[1], false).unwrap().to_vec::<f32>().unwrap();
    check_close(&got, &naive_f32_sum(&pl, p.shape(), &[1]));
    // Few long rows: each reduction is split across threads.
    let long: Vec<f32> = (0..3 * 70_000).map(|i| (i % 13) as f32 - 6.0).collect();
    let l = Array::from_slice(&long, &[3, 70_000]).unwrap();
    let got = ops::sum(&l, &[1], false).unwrap().to_vec::<f32>().unwrap();
    check_close(&got, &naive_f32_sum(&long, &[3, 70_000], &[1]));
    let got = ops::max(&l, &[], false).unwrap().item::<f32>().unwrap();
    assert_eq!(got, 6.0);
    // Argmax and softmax over many rows.
    let am = ops::argmax(&a, Some(1), false)
        .unwrap()
        .to_vec::<u32>()
        .unwrap();
    for (i, &j) in am.iter().enumerate() {
        let row = &x[i * c..(i + 1) * c];
        let m = row.iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(j as usize, row.iter().position(|&v| v == m).unwrap());
    }
    let sm = ops::softmax(&a, &[-1]).unwrap().to_vec::<f32>().unwrap();
    for row in sm.chunks(c) {
        assert!((row.iter().map(|&v| v as f64).sum::<f64>() - 1.0).abs() < 1e-5);
    }
}

#[test]
fn f32_sums_round_as_mlx() {
    // MLX's CPU sum is one running f32 total, so a sum of 2^24 + 64 ones
    // stalls at 2^24: `mx.sum(mx.ones(2**24 + 64))` is 16777216.0 in MLX
    // 0.32.4, and matching MLX's rounding bit for bit wins over accuracy
    // (the bf16 RMSNorm decomposition of qwen3 depends on it).
    let n = (1 << 24) + 64;
    let a = Array::from_slice(&vec![1.0f32; n], &[n as i32]).unwrap();
    let s = ops::sum(&a, &[], false).unwrap().item::<f32>().unwrap();
    assert_eq!(s, 16777216.0);
    // Summing a leading axis (MLX: 262145 in every column).
    let b = ops::reshape(&a, &[(n / 64) as i32, 64]).unwrap();
    let s0 = ops::sum(&b, &[0], false).unwrap().to_vec::<f32>().unwrap();
    assert!(s0.iter().all(|&v| v == (n / 64) as f32));
}
