//! `ops::searchsorted` (the SearchSorted primitive) against a naive count,
//! MLX's documented examples, and its errors.

use mlx::{ops, Array, Dtype};
use proptest::prelude::*;

fn u32s(a: &Array) -> Vec<u32> {
    a.to_vec::<u32>().unwrap()
}

#[test]
fn mlx_doc_example() {
    let a = Array::from_slice(&[1i32, 2, 2, 4], &[4]).unwrap();
    let v = Array::from_slice(&[0i32, 2, 3, 5], &[4]).unwrap();
    assert_eq!(
        u32s(&ops::searchsorted(&a, &v, "left").unwrap()),
        [0, 1, 3, 4]
    );
    assert_eq!(
        u32s(&ops::searchsorted(&a, &v, "right").unwrap()),
        [0, 3, 3, 4]
    );
}

#[test]
fn nans_sort_last_and_dtypes_promote() {
    let a = Array::from_slice(&[1.0f32, 2.0, f32::NAN], &[3]).unwrap();
    let v = Array::from_slice(&[f32::NAN, 1.5, 3.0], &[3]).unwrap();
    assert_eq!(u32s(&ops::searchsorted(&a, &v, "left").unwrap()), [2, 1, 2]);
    assert_eq!(
        u32s(&ops::searchsorted(&a, &v, "right").unwrap()),
        [3, 1, 2]
    );
    let ints = Array::from_slice(&[1i32, 3], &[2]).unwrap();
    let halves = Array::from_slice(&[2.5f32, 0.5], &[2]).unwrap();
    let r = ops::searchsorted(&ints, &halves, "left").unwrap();
    assert_eq!(r.dtype(), Dtype::Uint32);
    assert_eq!(u32s(&r), [1, 0]);
}

#[test]
fn errors_name_the_problem() {
    let a = Array::from_slice(&[1.0f32; 4], &[2, 2]).unwrap();
    let v = Array::scalar(1.0f32);
    let e = ops::searchsorted(&a, &v, "left").unwrap_err().to_string();
    assert!(e.contains("1-D"), "{e}");
    let a = Array::from_slice(&[1.0f32; 4], &[4]).unwrap();
    let e = ops::searchsorted(&a, &v, "middle").unwrap_err().to_string();
    assert!(e.contains("left"), "{e}");
}

proptest! {
    /// Counts of elements below (left) or at most (right) each value, on
    /// sorted integer sequences and transposed (non-contiguous) value arrays.
    #[test]
    fn matches_a_naive_count(mut seq in prop::collection::vec(-20i32..20, 0..30),
                             vals in prop::collection::vec(-25i32..25, 6)) {
        seq.sort();
        let a = Array::from_slice(&seq, &[seq.len() as i32]).unwrap();
        let v = ops::transpose(&Array::from_slice(&vals, &[2, 3]).unwrap(), &[1, 0]).unwrap();
        let vt: Vec<i32> = v.to_vec::<i32>().unwrap();
        for side in ["left", "right"] {
            let got = u32s(&ops::searchsorted(&a, &v, side).unwrap());
            let want: Vec<u32> = vt
                .iter()
                .map(|&x| seq.iter().filter(|&&s| if side == "left" { s < x } else { s <= x }).count() as u32)
                .collect();
            prop_assert_eq!(got, want, "side {}", side);
        }
    }
}
