//! Evaluation of the lazy graph: deep chains, freeing, multi-dtype basics.

use mlx::{ops, Array, Dtype};

#[test]
fn add_broadcasts_and_promotes() {
    let a = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let b = Array::from_slice(&[0.5f32, 1.5], &[2, 1]).unwrap();
    let c = ops::add(&a, &b).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(c.dtype(), Dtype::Float32);
    assert_eq!(
        c.to_vec::<f32>().unwrap(),
        vec![1.5, 2.5, 3.5, 2.5, 3.5, 4.5]
    );
}

#[test]
fn million_node_chain_evaluates_and_drops_without_overflow() {
    let one = Array::scalar(1.0f32);
    let mut x = Array::scalar(0.0f32);
    for _ in 0..1_000_000 {
        x = ops::add(&x, &one).unwrap();
    }
    assert_eq!(x.item::<f32>().unwrap(), 1_000_000.0);

    // Dropping an unevaluated chain must not recurse either.
    let mut y = Array::scalar(0.0f32);
    for _ in 0..1_000_000 {
        y = ops::add(&y, &one).unwrap();
    }
    drop(y);
}

#[test]
fn to_vec_with_wrong_type_is_an_error() {
    let a = Array::from_slice(&[1.0f32], &[1]).unwrap();
    assert!(a.to_vec::<i32>().is_err());
}

#[test]
fn from_slice_checks_size() {
    let e = Array::from_slice(&[1.0f32, 2.0], &[3]).unwrap_err();
    assert!(e.to_string().contains("holds 3 elements"), "{e}");
}

#[test]
fn operators_on_references_and_scalars() {
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let b = (&a * 2.0 + &a) / 3.0 - 1.0;
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![0.0, 1.0]);
    let n = -&a;
    assert_eq!(n.to_vec::<f32>().unwrap(), vec![-1.0, -2.0]);
}
