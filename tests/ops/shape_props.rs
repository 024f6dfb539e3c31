//! Property tests: the no-copy reshape rule and static slices against a
//! naive index computation.

use mlx::primitives::shape::reshape_strides;
use mlx::{ops, Array};
use proptest::prelude::*;

fn iota(shape: &[i32]) -> Array {
    let n: i32 = shape.iter().product();
    Array::from_slice(&(0..n).collect::<Vec<i32>>(), shape).unwrap()
}

/// A shape of 1..=4 axes of sizes 1..=4 and a permutation of its axes.
fn shape_and_perm() -> impl Strategy<Value = (Vec<i32>, Vec<i32>)> {
    prop::collection::vec(1i32..=4, 1..=4).prop_flat_map(|shape| {
        let n = shape.len();
        (
            Just(shape),
            Just((0..n as i32).collect::<Vec<_>>()).prop_shuffle(),
        )
    })
}

/// A random factorisation of `n` into 1..=4 factors (some may be 1).
fn factorise(mut n: i32, picks: &[u8]) -> Vec<i32> {
    let mut out = Vec::new();
    for &p in picks {
        let divisors: Vec<i32> = (1..=n).filter(|d| n % d == 0).collect();
        let d = divisors[p as usize % divisors.len()];
        out.push(d);
        n /= d;
    }
    out.push(n);
    out
}

/// Python's `slice(start, stop, step).indices(n)` then `range`, written independently.
fn py_slice(n: i32, start: i32, stop: i32, step: i32) -> Vec<i32> {
    let clamp = |i: i32, lo: i32, hi: i32| {
        let i = if i < 0 { i + n } else { i };
        i.clamp(lo, hi)
    };
    let mut out = Vec::new();
    if step > 0 {
        let (mut i, e) = (clamp(start, 0, n), clamp(stop, 0, n));
        while i < e {
            out.push(i);
            i += step;
        }
    } else {
        let (mut i, e) = (clamp(start, -1, n - 1), clamp(stop, -1, n - 1));
        while i > e {
            out.push(i);
            i += step;
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn reshape_view_equals_copy_then_reshape(
        (shape, perm) in shape_and_perm(),
        picks in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let a = iota(&shape);
        let t = ops::transpose(&a, &perm).unwrap();
        t.eval().unwrap();
        let logical = t.to_vec::<i32>().unwrap();
        let n: i32 = shape.iter().product();
        let to = factorise(n, &picks);
        let d = t.data().unwrap();
        if let Some(strides) = reshape_strides(t.shape(), &d.strides, &to) {
            // Reading the buffer with the proposed strides gives the logical order.
            let buf = a.to_vec::<i32>().unwrap();
            let mut got = Vec::new();
            let total: usize = to.iter().map(|&x| x as usize).product();
            for flat in 0..total {
                let (mut rem, mut off) = (flat, d.offset as isize);
                for ax in (0..to.len()).rev() {
                    let i = rem % to[ax] as usize;
                    rem /= to[ax] as usize;
                    off += i as isize * strides[ax];
                }
                got.push(buf[off as usize]);
            }
            prop_assert_eq!(&got, &logical);
        }
        // A row-major input never needs a copy.
        let c = a.data().unwrap();
        prop_assert!(reshape_strides(a.shape(), &c.strides, &to).is_some());
        let r = ops::reshape(&t, &to).unwrap();
        prop_assert_eq!(r.to_vec::<i32>().unwrap(), logical);
    }

    #[test]
    fn slices_match_naive_indexing(
        (shape, perm) in shape_and_perm(),
        bounds in prop::collection::vec((-7i32..7, -7i32..7, prop_oneof![-3i32..=-1, 1i32..=3]), 4),
        transposed in any::<bool>(),
    ) {
        let base = iota(&shape);
        let a = if transposed { ops::transpose(&base, &perm).unwrap() } else { base };
        let dims = a.shape().to_vec();
        let nd = dims.len();
        let start: Vec<i32> = bounds[..nd].iter().map(|b| b.0).collect();
        let stop: Vec<i32> = bounds[..nd].iter().map(|b| b.1).collect();
        let step: Vec<i32> = bounds[..nd].iter().map(|b| b.2).collect();
        let got = ops::slice(&a, &start, &stop, &step).unwrap();
        let picks: Vec<Vec<i32>> = (0..nd).map(|i| py_slice(dims[i], start[i], stop[i], step[i])).collect();
        let want_shape: Vec<i32> = picks.iter().map(|p| p.len() as i32).collect();
        prop_assert_eq!(got.shape(), &want_shape[..]);
        let values = a.to_vec::<i32>().unwrap();
        let mut want = Vec::new();
        let total: usize = want_shape.iter().map(|&x| x as usize).product();
        for flat in 0..total {
            let (mut rem, mut off) = (flat, 0usize);
            let mut idx = vec![0usize; nd];
            for ax in (0..nd).rev() {
                idx[ax] = rem % want_shape[ax] as usize;
                rem /= want_shape[ax] as usize;
            }
            let mut mul = 1usize;
            for ax in (0..nd).rev() {
                off += picks[ax][idx[ax]] as usize * mul;
                mul *= dims[ax] as usize;
            }
            want.push(values[off]);
        }
        prop_assert_eq!(got.to_vec::<i32>().unwrap(), want.clone());
        // A slice update with the slice itself plus 1000 changes exactly those elements.
        let upd = ops::add(&got, &Array::scalar(1000i32)).unwrap();
        let updated = ops::slice_update(&a, &upd, &start, &stop, &step).unwrap().to_vec::<i32>().unwrap();
        let changed = updated.iter().zip(&values).filter(|(u, v)| u != v).count();
        prop_assert_eq!(changed, total);
    }
}
