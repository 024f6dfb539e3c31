//! Bad arguments give errors that name the op and what was wrong; shapeless
//! export checks refuse states that hold absolute sizes.

use mlx::primitives::shape as p;
use mlx::{ops, Array, Dtype, Primitive, Spec};

fn iota(shape: &[i32]) -> Array {
    let n: i32 = shape.iter().product();
    Array::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>(), shape).unwrap()
}

fn err(r: mlx::Result<impl std::fmt::Debug>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn bad_axes() {
    let a = iota(&[2, 3]);
    assert!(err(ops::transpose(&a, &[0, 0])).contains("duplicate axis"));
    assert!(err(ops::transpose(&a, &[0])).contains("1 axes"));
    assert!(err(ops::transpose(&a, &[0, 2])).contains("out of bounds"));
    assert!(err(ops::squeeze(&a, &[1])).contains("cannot squeeze axis 1 of size 3"));
    assert!(err(ops::expand_dims(&a, &[3])).contains("axis 3 is out of bounds"));
    assert!(err(ops::swapaxes(&a, 0, -3)).contains("out of bounds"));
    assert!(err(ops::moveaxis(&a, 2, 0)).contains("out of bounds"));
    assert!(err(ops::flatten(&a, 1, 0)).contains("not a valid range"));
    assert!(err(ops::unflatten(&a, 1, &[2, 2])).contains("cannot reshape"));
    assert!(err(ops::slice_axis(&a, 2, 0, 1, 1)).contains("out of bounds"));
}

#[test]
fn incompatible_shapes() {
    let a = iota(&[2, 3]);
    let msg = err(ops::reshape(&a, &[4, 2]));
    assert!(msg.contains("[2, 3]") && msg.contains("[4, 2]"), "{msg}");
    assert!(err(ops::reshape(&a, &[-1, -1])).contains("only one dimension can be -1"));
    assert!(err(ops::broadcast_to(&a, &[3, 3])).contains("broadcast"));
    assert!(err(ops::broadcast_to(&a, &[-2, 3])).contains("negative dimension"));
    let msg = err(ops::concatenate(&[a.clone(), iota(&[3, 3])], 1));
    assert!(msg.contains("[2, 3], [3, 3]"), "{msg}");
    assert!(err(ops::concatenate(&[], 0)).contains("no arrays"));
    assert!(err(ops::stack(&[a.clone(), iota(&[3, 2])], 0)).contains("same shape"));
    assert!(err(ops::slice(&a, &[0], &[1], &[])).contains("expected 2 start indices"));
    assert!(err(ops::slice(&a, &[0, 0], &[1, 1], &[1, 0])).contains("non-zero"));
    assert!(err(ops::slice_update(&a, &iota(&[3]), &[0, 0], &[1, 2], &[])).contains("broadcast"));
    assert!(err(ops::pad(&a, &[(1, 1), (0, -1)], &Array::scalar(0f32))).contains("non-negative"));
    assert!(err(ops::pad(&a, &[(1, 1); 3], &Array::scalar(0f32))).contains("pairs"));
    assert!(err(ops::view(&Array::scalar(1f32), Dtype::Float16)).contains("0-d"));
    assert!(err(ops::view(&iota(&[2, 3]), Dtype::Float64)).contains("multiple of 8"));
    assert!(err(ops::as_strided(&a, &[3, 3], &[2, 1], 0)).contains("buffer of 6"));
    assert!(err(ops::tile(&a, &[-1])).contains("non-negative"));
}

#[test]
fn bad_split_indices() {
    let a = iota(&[6, 2]);
    assert!(err(ops::split(&a, 4, 0)).contains("cannot be cut into 4 equal sections"));
    assert!(err(ops::split(&a, 0, 0)).contains("must be positive"));
    assert!(err(ops::split_at(&a, &[1], 2)).contains("out of bounds"));
    // The primitive itself (e.g. from a file) checks its indices.
    let bad = p::Split {
        indices: vec![4, 2],
        axis: 0,
    };
    let msg = err(Array::from_primitive_multi(Box::new(bad), vec![a.clone()]));
    assert!(msg.contains("non-decreasing"), "{msg}");
    let bad = p::Split {
        indices: vec![7],
        axis: 0,
    };
    assert!(err(Array::from_primitive_multi(Box::new(bad), vec![a])).contains("within 0..=6"));
}

#[test]
fn bad_dynamic_slices() {
    let a = iota(&[4, 5]);
    let f = Array::from_slice(&[1f32], &[1]).unwrap();
    assert!(err(ops::slice_dynamic(&a, &f, &[0], &[1, 5])).contains("must be integers"));
    let two = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    assert!(err(ops::slice_dynamic(&a, &two, &[0], &[1, 5])).contains("expected 1 start indices"));
    let one = Array::scalar(1i32);
    assert!(err(ops::slice_dynamic(&a, &one, &[0], &[5, 5])).contains("between 0 and the size"));
    assert!(err(ops::slice_dynamic(&a, &two, &[0, 0], &[1, 5])).contains("duplicate"));
    assert!(
        err(ops::slice_update_dynamic(&a, &iota(&[1, 4, 5]), &one, &[0]))
            .contains("more dimensions")
    );
}

#[test]
fn bad_states_from_files_are_errors_not_panics() {
    let a = iota(&[4]);
    // A Slice whose recorded output would leave the axis.
    let s = p::Slice {
        start_indices: vec![3],
        end_indices: vec![4],
        strides: vec![2],
    };
    let out = Array::with_specs(
        Box::new(s),
        vec![a.clone()],
        vec![Spec::new([2], Dtype::Float32)],
    );
    assert!(err(out[0].eval()).contains("leaves axis 0"));
    let s = p::AsStrided {
        shape: vec![2],
        strides: vec![-1],
        offset: 0,
    };
    assert!(err(Array::from_primitive(s, vec![a.clone()])).contains("reaches elements -1"));
    let d = p::Depends::default();
    assert!(err(Array::from_primitive_multi(Box::new(d), vec![a.clone(), a])).contains("unknown"));
}

#[test]
fn shapeless_checks() {
    let x = [Spec::new([4, 6], Dtype::Float32)];
    let refuses = |prim: &dyn Primitive, specs: &[Spec]| {
        let e = prim
            .check_shapeless(specs)
            .expect_err(prim.name())
            .to_string();
        assert!(e.starts_with(prim.name()), "{e}");
    };
    refuses(
        &p::Slice {
            start_indices: vec![0, 1],
            end_indices: vec![4, 6],
            strides: vec![1, 1],
        },
        &x,
    );
    refuses(&p::Reshape { shape: vec![24] }, &x);
    refuses(
        &p::Broadcast {
            shape: vec![2, 4, 6],
        },
        &x,
    );
    refuses(
        &p::Split {
            indices: vec![2],
            axis: 0,
        },
        &x,
    );
    refuses(
        &p::AsStrided {
            shape: vec![2],
            strides: vec![1],
            offset: 0,
        },
        &x,
    );
    refuses(
        &p::DynamicSlice {
            axes: vec![0],
            slice_size: vec![1, 6],
        },
        &x,
    );
    refuses(
        &p::Unflatten {
            axis: 1,
            shape: vec![2, 3],
        },
        &x,
    );
    assert!(p::Reshape { shape: vec![4, -1] }
        .check_shapeless(&x)
        .is_ok());
    assert!(p::Unflatten {
        axis: 1,
        shape: vec![2, -1]
    }
    .check_shapeless(&x)
    .is_ok());
    let two = [x[0].clone(), Spec::new([4, 1], Dtype::Float32)];
    assert!(p::Broadcast { shape: vec![4, 6] }
        .check_shapeless(&two)
        .is_ok());
    // Pad widths are relative to the input's size: the meaning is kept.
    let pad = p::Pad {
        axes: vec![0],
        low_pad_size: vec![1],
        high_pad_size: vec![2],
    };
    assert!(pad.check_shapeless(&x).is_ok());
    assert!(p::Transpose { axes: vec![1, 0] }
        .check_shapeless(&x)
        .is_ok());
    assert!(p::Flatten {
        start_axis: 0,
        end_axis: 1
    }
    .check_shapeless(&x)
    .is_ok());
}
