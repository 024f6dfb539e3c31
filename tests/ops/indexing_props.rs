//! Property tests for gather/scatter shapes and values and for sort
//! stability, against naive scalar loops written independently of the
//! kernels.

use mlx::{ops, Array};
use proptest::prelude::*;

fn iota(shape: &[i32]) -> Array {
    let n: i32 = shape.iter().product();
    Array::from_slice(&(0..n).map(|i| i * 3 + 1).collect::<Vec<i32>>(), shape).unwrap()
}

/// Row-major multi-index of flat position `p` in `shape`.
fn unravel(mut p: usize, shape: &[i32]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for i in (0..shape.len()).rev() {
        idx[i] = p % shape[i] as usize;
        p /= shape[i] as usize;
    }
    idx
}

fn ravel(idx: &[usize], shape: &[i32]) -> usize {
    idx.iter()
        .zip(shape)
        .fold(0, |acc, (&i, &d)| acc * d as usize + i)
}

/// A source shape, a subset of its axes to index, an index shape, raw
/// index draws and raw slice-size draws.
type GatherCase = (Vec<i32>, Vec<usize>, Vec<i32>, Vec<i64>, Vec<u8>);

fn gather_case() -> impl Strategy<Value = GatherCase> {
    prop::collection::vec(1i32..=4, 1..=3).prop_flat_map(|shape| {
        let n = shape.len();
        (
            Just(shape),
            prop::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n),
            prop::collection::vec(1i32..=3, 0..=2),
            prop::collection::vec(any::<i64>(), 64),
            prop::collection::vec(any::<u8>(), 4),
        )
    })
}

proptest! {
    #[test]
    fn gather_matches_naive((shape, axes, ishape, draws, sizes) in gather_case()) {
        let src = iota(&shape);
        // With no index arrays the index shape is empty.
        let ishape = if axes.is_empty() { Vec::new() } else { ishape };
        let isz: usize = ishape.iter().map(|&d| d as usize).product();
        let mut idx_vals = Vec::new();
        let mut indices = Vec::new();
        for (j, &ax) in axes.iter().enumerate() {
            let d = shape[ax] as i64;
            // Values in [-d, d): negative ones wrap.
            let v: Vec<i32> = (0..isz).map(|p| (draws[(p + 7 * j) % 64].rem_euclid(2 * d) - d) as i32).collect();
            indices.push(Array::from_slice(&v, &ishape).unwrap());
            idx_vals.push(v);
        }
        let slice: Vec<i32> = shape.iter().enumerate().map(|(i, &d)| {
            if axes.contains(&i) { 1 } else { sizes[i] as i32 % (d + 1) }
        }).collect();
        let axes_i: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
        let out = ops::gather(&src, &indices, &axes_i, &slice).unwrap();
        let mut want_shape = ishape.clone();
        want_shape.extend(&slice);
        prop_assert_eq!(out.shape(), want_shape.as_slice());
        let got = out.to_vec::<i32>().unwrap();
        let s = src.to_vec::<i32>().unwrap();
        let ssz: usize = slice.iter().map(|&d| d as usize).product();
        for p in 0..isz {
            for q in 0..ssz {
                let mut at = unravel(q, &slice);
                for (j, &ax) in axes.iter().enumerate() {
                    let v = idx_vals[j][p] as i64;
                    at[ax] += (if v < 0 { v + shape[ax] as i64 } else { v }) as usize;
                }
                prop_assert_eq!(got[p * ssz + q], s[ravel(&at, &shape)]);
            }
        }
    }

    #[test]
    fn scatter_add_accumulates_duplicates(
        rows in 1i32..=5, cols in 1i32..=4, picks in prop::collection::vec(0i32..10, 1..=8),
    ) {
        let dst = iota(&[rows, cols]);
        let idx: Vec<i32> = picks.iter().map(|&p| p % (2 * rows) - rows).collect();
        let n = idx.len() as i32;
        let upd: Vec<i32> = (0..n * cols).map(|i| i * 5 - 7).collect();
        let out = ops::scatter_add(
            &dst,
            &[Array::from_slice(&idx, &[n]).unwrap()],
            &Array::from_slice(&upd, &[n, 1, cols]).unwrap(),
            &[0],
        ).unwrap();
        let mut want = dst.to_vec::<i32>().unwrap();
        for (k, &i) in idx.iter().enumerate() {
            let r = if i < 0 { i + rows } else { i } as usize;
            for c in 0..cols as usize {
                want[r * cols as usize + c] += upd[k * cols as usize + c];
            }
        }
        prop_assert_eq!(out.to_vec::<i32>().unwrap(), want);
    }

    #[test]
    fn along_axis_round_trip(
        shape in prop::collection::vec(1i32..=4, 1..=3), axis_pick in 0usize..3, draws in prop::collection::vec(any::<u16>(), 64),
    ) {
        let ax = axis_pick % shape.len();
        let src = iota(&shape);
        let d = shape[ax];
        let n: usize = shape.iter().map(|&x| x as usize).product();
        let idx: Vec<i64> = (0..n).map(|p| (draws[p % 64] as i64 % (2 * d as i64)) - d as i64).collect();
        let idx_a = Array::from_slice(&idx, &shape).unwrap();
        let got = ops::take_along_axis(&src, &idx_a, Some(ax as i32)).unwrap().to_vec::<i32>().unwrap();
        let s = src.to_vec::<i32>().unwrap();
        for p in 0..n {
            let mut at = unravel(p, &shape);
            let v = idx[p];
            at[ax] = (if v < 0 { v + d as i64 } else { v }) as usize;
            prop_assert_eq!(got[p], s[ravel(&at, &shape)]);
        }
        // scatter_add_axis of ones counts how often each position was picked.
        let ones = Array::from_slice(&vec![1i32; n], &shape).unwrap();
        let zeros = Array::from_slice(&vec![0i32; n], &shape).unwrap();
        let counts = ops::scatter_add_axis(&zeros, &idx_a, &ones, ax as i32).unwrap().to_vec::<i32>().unwrap();
        let mut want = vec![0i32; n];
        for (p, &v) in idx.iter().enumerate() {
            let mut at = unravel(p, &shape);
            at[ax] = (if v < 0 { v + d as i64 } else { v }) as usize;
            want[ravel(&at, &shape)] += 1;
        }
        prop_assert_eq!(counts, want);
    }

    #[test]
    fn argsort_is_stable(vals in prop::collection::vec(-3i32..3, 1..40)) {
        let a = Array::from_slice(&vals, &[vals.len() as i32]).unwrap();
        let idx = ops::argsort(&a, Some(0)).unwrap().to_vec::<u32>().unwrap();
        let mut want: Vec<u32> = (0..vals.len() as u32).collect();
        want.sort_by_key(|&i| vals[i as usize]);
        prop_assert_eq!(idx, want);
    }

    #[test]
    fn float_sort_puts_nans_last_and_keeps_order(
        vals in prop::collection::vec(prop_oneof![Just(f32::NAN), Just(-0.0f32), Just(0.0f32), -4.0f32..4.0], 1..30),
        rows in 1i32..=3,
    ) {
        // Rows of a 2-d array sorted along axis 1, from a transposed view.
        let n = vals.len() as i32;
        let mut data = Vec::new();
        for r in 0..rows { data.extend(vals.iter().map(|v| v * (r + 1) as f32)); }
        let a = ops::transpose(&Array::from_slice(&data, &[rows, n]).unwrap(), &[]).unwrap();
        let got = ops::sort(&a, Some(0)).unwrap();
        let got = ops::transpose(&got, &[]).unwrap().to_vec::<f32>().unwrap();
        for r in 0..rows as usize {
            let row = &data[r * n as usize..(r + 1) * n as usize];
            let mut want: Vec<f32> = row.to_vec();
            want.sort_by(|x, y| match (x.is_nan(), y.is_nan()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => x.partial_cmp(y).unwrap(),
            });
            let g: Vec<u32> = got[r * n as usize..(r + 1) * n as usize].iter().map(|v| v.to_bits()).collect();
            let w: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
            prop_assert_eq!(g, w);
        }
    }

    #[test]
    fn partition_property(vals in prop::collection::vec(-5i32..5, 1..30), k in any::<u16>()) {
        let n = vals.len();
        let kth = (k as usize % n) as i32;
        let a = Array::from_slice(&vals, &[n as i32]).unwrap();
        let p = ops::partition(&a, kth, Some(0)).unwrap().to_vec::<i32>().unwrap();
        let ip = ops::argpartition(&a, kth - n as i32, Some(0)).unwrap().to_vec::<u32>().unwrap();
        let mut sorted = vals.clone();
        sorted.sort();
        let k = kth as usize;
        prop_assert_eq!(p[k], sorted[k]);
        prop_assert!(p[..k].iter().all(|&x| x <= p[k]) && p[k + 1..].iter().all(|&x| x >= p[k]));
        let mut ps = p.clone();
        ps.sort();
        prop_assert_eq!(&ps, &sorted);
        let vi: Vec<i32> = ip.iter().map(|&i| vals[i as usize]).collect();
        prop_assert_eq!(vi[k], sorted[k]);
        prop_assert!(vi[..k].iter().all(|&x| x <= vi[k]) && vi[k + 1..].iter().all(|&x| x >= vi[k]));
        let mut seen = ip.clone();
        seen.sort();
        prop_assert_eq!(seen, (0..n as u32).collect::<Vec<_>>());
    }
}
