//! Bad indices, axes and shapes give errors with clear messages, at graph
//! construction where the shapes tell, at evaluation where the values do
//! (an out-of-range index, a mask with too few values): never a panic.

use mlx::{ops, Array, Error, Primitive};

fn f32s(n: i32) -> Array {
    Array::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), &[n]).unwrap()
}

fn m(n: i32, cols: i32) -> Array {
    ops::reshape(&f32s(n * cols), &[n, cols]).unwrap()
}

fn i32s(v: &[i32]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

fn msg(r: mlx::Result<Array>) -> String {
    match r {
        Ok(a) => match a.eval() {
            Ok(()) => panic!("expected an error, got {a:?}"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

#[test]
fn float_and_bool_indices_are_rejected() {
    let x = m(3, 4);
    let fi = Array::from_slice(&[0.0f32, 1.0], &[2]).unwrap();
    let bi = Array::from_slice(&[true, false], &[2]).unwrap();
    for e in [
        msg(ops::take(&x, &fi, Some(0))),
        msg(ops::take(&x, &bi, None)),
        msg(ops::gather(&x, std::slice::from_ref(&fi), &[0], &[1, 4])),
        msg(ops::scatter(
            &x,
            std::slice::from_ref(&fi),
            &m(2, 4).reshape_to(&[2, 1, 4]),
            &[0],
        )),
        msg(ops::take_along_axis(
            &x,
            &ops::reshape(&fi, &[2, 1]).unwrap(),
            Some(0),
        )),
    ] {
        assert!(e.contains("integer dtype"), "{e}");
    }
}

trait ReshapeTo {
    fn reshape_to(&self, s: &[i32]) -> Array;
}
impl ReshapeTo for Array {
    fn reshape_to(&self, s: &[i32]) -> Array {
        ops::reshape(self, s).unwrap()
    }
}

#[test]
fn bad_axes_are_rejected() {
    let x = m(3, 4);
    let i = i32s(&[0, 1]);
    assert!(msg(ops::take(&x, &i, Some(2))).contains("out of bounds"));
    assert!(msg(ops::gather(&x, &[i.clone(), i.clone()], &[0, 0], &[1, 1])).contains("duplicate"));
    assert!(msg(ops::gather(&x, std::slice::from_ref(&i), &[0, 1], &[1, 4])).contains("axes"));
    assert!(msg(ops::gather(&x, std::slice::from_ref(&i), &[0], &[1, 5])).contains("slice sizes"));
    assert!(msg(ops::sort(&x, Some(-3))).contains("out of bounds"));
    assert!(msg(ops::cumsum(&x, Some(2), false, true)).contains("out of bounds"));
    assert!(msg(ops::sort(&Array::scalar(1.0f32), Some(0))).contains("out of bounds"));
    assert!(msg(ops::take_along_axis(&x, &i, Some(0))).contains("dimensions"));
}

#[test]
fn update_shape_mismatch_is_rejected() {
    let x = m(3, 4);
    let i = i32s(&[0, 2]);
    // Missing the slice axis of size 1.
    let e = msg(ops::scatter_add(
        &x,
        std::slice::from_ref(&i),
        &m(2, 4),
        &[0],
    ));
    assert!(e.contains("updates of shape [2, 4]"), "{e}");
    // Slice larger than the array.
    let e = msg(ops::scatter(
        &x,
        std::slice::from_ref(&i),
        &m(2, 5).reshape_to(&[2, 1, 5]),
        &[0],
    ));
    assert!(e.contains("no larger than"), "{e}");
    // Index count does not match the updates' leading dims.
    let e = msg(ops::scatter(
        &x,
        &[i32s(&[0, 1, 2])],
        &m(2, 4).reshape_to(&[2, 1, 4]),
        &[0],
    ));
    assert!(e.contains("updates"), "{e}");
    let e = msg(ops::put_along_axis(
        &x,
        &i32s(&[0, 1, 2]).reshape_to(&[3, 1]),
        &m(2, 2),
        Some(1),
    ));
    assert!(e.contains("broadcast"), "{e}");
    let mask = Array::from_slice(&[true, false], &[2]).unwrap();
    assert!(msg(ops::masked_scatter(&x, &mask, &f32s(1))).contains("mask"));
}

#[test]
fn out_of_range_indices_fail_at_evaluation() {
    let x = m(3, 4);
    for (r, what) in [
        (ops::take(&x, &i32s(&[0, 3]), Some(0)), "index 3"),
        (ops::take(&x, &i32s(&[-5]), Some(1)), "index -5"),
        (
            ops::take_along_axis(&x, &i32s(&[4]).reshape_to(&[1, 1]), Some(1)),
            "index 4",
        ),
        (
            ops::scatter_add(&x, &[i32s(&[7])], &m(1, 4).reshape_to(&[1, 1, 4]), &[0]),
            "index 7",
        ),
        (
            ops::put_along_axis(&x, &i32s(&[-4]).reshape_to(&[1, 1]), &f32s(1), Some(0)),
            "index -4",
        ),
        (
            ops::gather(&x, &[i32s(&[3])], &[1], &[3, 2]),
            "slice of 2 elements",
        ),
    ] {
        let e = msg(r);
        assert!(e.contains(what) && e.contains("out of bounds"), "{e}");
    }
    let u64_big = Array::from_slice(&[u64::MAX], &[1]).unwrap();
    assert!(msg(ops::take(&x, &u64_big, Some(0))).contains("out of bounds"));
}

#[test]
fn mask_with_too_few_values_fails_at_evaluation() {
    let x = m(2, 3);
    let mask = Array::from_slice(&[true, false, true, true, true, false], &[2, 3]).unwrap();
    let e = msg(ops::masked_scatter(&x, &mask, &f32s(3)));
    assert!(e.contains("selects more than"), "{e}");
    let ok = ops::masked_scatter(&x, &mask, &f32s(6)).unwrap();
    assert_eq!(ok.to_vec::<f32>().unwrap(), [0.0, 1.0, 1.0, 2.0, 3.0, 5.0]);
}

#[test]
fn kth_and_k_are_checked() {
    let x = m(2, 4);
    assert!(msg(ops::partition(&x, 4, Some(1))).contains("kth 4"));
    assert!(msg(ops::argpartition(&x, -5, Some(1))).contains("kth -5"));
    assert!(msg(ops::topk(&x, 5, Some(-1))).contains("k = 5"));
    assert_eq!(ops::topk(&x, 4, Some(1)).unwrap().shape(), [2, 4]);
}

#[test]
fn primitives_check_their_inputs() {
    use mlx::primitives::sort_scan::{Scan, ScanType};
    let p = Scan {
        reduce_type: ScanType::LogAddExp,
        axis: 0,
        reverse: false,
        inclusive: true,
    };
    let e = p.output_specs(&[i32s(&[1]).spec().clone()]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("floating"));
    // logcumsumexp casts integers to float32 first.
    let y = ops::logcumsumexp(&i32s(&[0, 0]), None, false, true).unwrap();
    assert_eq!(y.dtype(), mlx::Dtype::Float32);
    // A bool cumsum is int32.
    let b = Array::from_slice(&[true, true, false], &[3]).unwrap();
    assert_eq!(
        ops::cumsum(&b, Some(0), false, true)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        [1, 2, 2]
    );
}
