//! Views: transpose, reshape, squeeze, expand_dims share memory or copy correctly.

use mlx::{ops, Array};

fn iota(shape: &[i32]) -> Array {
    let n: i32 = shape.iter().product();
    Array::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), shape).unwrap()
}

#[test]
fn transpose_then_reshape_copies_in_logical_order() {
    let a = iota(&[2, 3]);
    let t = ops::transpose(&a, &[]).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
    let r = ops::reshape(&t, &[-1]).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
    let r2 = ops::reshape(&t, &[3, 1, 2]).unwrap();
    assert_eq!(r2.to_vec::<f32>().unwrap(), vec![0., 3., 1., 4., 2., 5.]);
}

#[test]
fn reshape_of_a_split_axis_is_a_view_with_the_right_values() {
    let a = iota(&[4, 6]);
    let t = ops::transpose(&a, &[1, 0]).unwrap(); // (6, 4), strides (1, 6)
    let r = ops::reshape(&t, &[2, 3, 4]).unwrap(); // splits the first axis: still a view
    let want: Vec<f32> = (0..6)
        .flat_map(|i| (0..4).map(move |j| (j * 6 + i) as f32))
        .collect();
    assert_eq!(r.to_vec::<f32>().unwrap(), want);
}

#[test]
fn squeeze_and_expand_dims() {
    let a = iota(&[1, 3, 1]);
    let s = ops::squeeze(&a, &[]).unwrap();
    assert_eq!(s.shape(), &[3]);
    let e = ops::expand_dims(&s, &[0, -1]).unwrap();
    assert_eq!(e.shape(), &[1, 3, 1]);
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![0., 1., 2.]);
    assert!(ops::squeeze(&a, &[1]).is_err());
    assert!(ops::reshape(&a, &[2, -1]).is_err());
    assert!(ops::transpose(&a, &[0, 0, 1]).is_err());
}
