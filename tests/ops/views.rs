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

fn same_buffer(a: &Array, b: &Array) -> bool {
    a.eval().unwrap();
    b.eval().unwrap();
    std::sync::Arc::ptr_eq(&a.data().unwrap().buffer, &b.data().unwrap().buffer)
}

#[test]
fn views_share_the_input_buffer() {
    let a = iota(&[4, 6]);
    a.eval().unwrap();
    let s = ops::slice(&a, &[3, 5], &[0, 0], &[-2, -3]).unwrap();
    assert!(same_buffer(&a, &s));
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![23., 20., 11., 8.]);
    let parts = ops::split_at(&a, &[1, 4], 1).unwrap();
    assert!(parts.iter().all(|p| same_buffer(&a, p)));
    assert_eq!(
        parts[2].to_vec::<f32>().unwrap(),
        vec![4., 5., 10., 11., 16., 17., 22., 23.]
    );
    let d = ops::slice_dynamic(&a, &Array::scalar(2u8), &[1], &[4, 2]).unwrap();
    assert!(same_buffer(&a, &d));
    let f = ops::flatten(&ops::slice_axis(&a, 0, 1, 3, 1).unwrap(), 0, -1).unwrap();
    assert!(same_buffer(&a, &f), "a row slice flattens without a copy");
    let v = ops::view(&a, mlx::Dtype::Uint32).unwrap();
    assert!(same_buffer(&a, &v));
    let c = ops::copy(&a).unwrap();
    assert!(!same_buffer(&a, &c));
    assert_eq!(c.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    let g = ops::stop_gradient(&a).unwrap();
    assert!(same_buffer(&a, &g));
}

#[test]
fn ops_that_change_nothing_return_their_input() {
    let a = iota(&[2, 3]);
    assert!(ops::reshape(&a, &[2, 3]).unwrap().same(&a));
    assert!(ops::slice(&a, &[0, 0], &[2, 3], &[]).unwrap().same(&a));
    assert!(ops::broadcast_to(&a, &[2, 3]).unwrap().same(&a));
    assert!(ops::expand_dims(&a, &[]).unwrap().same(&a));
    assert!(ops::flatten(&a, 1, 1).unwrap().same(&a));
    assert!(ops::view(&a, mlx::Dtype::Float32).unwrap().same(&a));
    assert!(ops::concatenate(std::slice::from_ref(&a), 0)
        .unwrap()
        .same(&a));
}

#[test]
fn dynamic_starts_are_clamped_so_the_slice_fits() {
    // MLX reads out of bounds for these; here the start is clamped to [0, n - size].
    let a = iota(&[10]);
    for (start, want) in [(8i32, 7.), (100, 7.), (-1, 0.), (-30, 0.), (4, 4.)] {
        let s = ops::slice_dynamic(&a, &Array::scalar(start), &[0], &[3]).unwrap();
        assert_eq!(
            s.to_vec::<f32>().unwrap(),
            vec![want, want + 1., want + 2.],
            "start {start}"
        );
    }
    let big = Array::scalar(u64::MAX);
    let s = ops::slice_dynamic(&a, &big, &[0], &[2]).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![8., 9.]);
    let upd = Array::from_slice(&[-1f32, -2.], &[2]).unwrap();
    let u = ops::slice_update_dynamic(&a, &upd, &Array::scalar(9i64), &[0]).unwrap();
    assert_eq!(&u.to_vec::<f32>().unwrap()[7..], &[7., -1., -2.]);
    let u = ops::slice_update_dynamic(&a, &upd, &Array::scalar(-5i8), &[0]).unwrap();
    assert_eq!(&u.to_vec::<f32>().unwrap()[..3], &[-1., -2., 2.]);
}

#[test]
fn depends_passes_its_inputs_through() {
    let a = iota(&[2]);
    let b = iota(&[3]);
    let dep = ops::astype(&b, mlx::Dtype::Int32).unwrap();
    let outs = ops::depends(&[a.clone(), b.clone()], std::slice::from_ref(&dep)).unwrap();
    assert_eq!(outs.len(), 2);
    let (node, _) = outs[0].node().unwrap();
    assert_eq!(node.primitive().name(), "Depends");
    assert_eq!(node.inputs().len(), 3);
    assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![0., 1., 2.]);
    assert!(dep.is_ready(), "the dependency was computed");
    // MLX files do not record the count: the state skips MLX's wire.
    let mut w = mlx::primitive::MlxWriter::default();
    node.primitive().write_mlx(&mut w);
    assert!(w.bytes.is_empty());
}

#[test]
fn number_of_elements_follows_the_shape() {
    let a = iota(&[3, 4, 5]);
    let n = ops::number_of_elements(&a, &[0, -1], false, mlx::Dtype::Int32).unwrap();
    assert_eq!(n.shape(), &[] as &[i32]);
    assert_eq!(n.item::<i32>().unwrap(), 15);
    let inv = ops::number_of_elements(&a, &[1], true, mlx::Dtype::Float32).unwrap();
    assert_eq!(inv.item::<f32>().unwrap(), 0.25);
}

#[test]
fn view_as_bool_normalises_bytes() {
    let a = Array::from_slice(&[0u8, 1, 2, 255], &[4]).unwrap();
    let b = ops::view(&a, mlx::Dtype::Bool).unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![false, true, true, true]);
    let back = ops::view(&b, mlx::Dtype::Uint8).unwrap();
    assert_eq!(back.to_vec::<u8>().unwrap(), vec![0, 1, 1, 1]);
}

#[test]
fn slice_state_is_mlx_normalised() {
    // Starts inside the axis, ends as given, stride 1 on one-element axes.
    let a = iota(&[10, 4]);
    let s = ops::slice(&a, &[-1, 1], &[-11, 3], &[-1, 5]).unwrap();
    assert_eq!(s.shape(), &[10, 1]);
    let (node, _) = s.node().unwrap();
    let st: Vec<String> = node
        .primitive()
        .state()
        .iter()
        .map(|v| v.to_string())
        .collect();
    assert_eq!(st, vec!["[9, 1]", "[-11, 2]", "[-1, 1]"]);
}

#[test]
fn every_shape_primitive_round_trips_through_both_codecs() {
    use mlx::primitive::{lookup, MlxReader, MlxWriter};
    use mlx::primitives::shape as p;
    use mlx::{Primitive, PrimitiveState};
    let all: Vec<Box<dyn Primitive>> = vec![
        Box::new(p::Broadcast { shape: vec![2, 3] }),
        Box::new(p::BroadcastAxes {
            ignore_axes: vec![-2, -1],
        }),
        Box::new(p::Reshape { shape: vec![4, -1] }),
        Box::new(p::Flatten {
            start_axis: 0,
            end_axis: 1,
        }),
        Box::new(p::Unflatten {
            axis: 1,
            shape: vec![2, 3],
        }),
        Box::new(p::Transpose { axes: vec![1, 0] }),
        Box::new(p::Squeeze { axes: vec![0] }),
        Box::new(p::ExpandDims { axes: vec![0, 2] }),
        Box::new(p::Slice {
            start_indices: vec![9, 0],
            end_indices: vec![-11, 4],
            strides: vec![-1, 1],
        }),
        Box::new(p::SliceUpdate {
            reduce_type: p::SliceUpdateType::Prod,
            start_indices: vec![1],
            end_indices: vec![3],
            strides: vec![2],
        }),
        Box::new(p::DynamicSlice {
            axes: vec![0],
            slice_size: vec![1, 6],
        }),
        Box::new(p::DynamicSliceUpdate { axes: vec![0] }),
        Box::new(p::AsStrided {
            shape: vec![3, 2],
            strides: vec![2, -1],
            offset: 1,
        }),
        Box::new(p::Concatenate { axis: 1 }),
        Box::new(p::Split {
            indices: vec![1, 3],
            axis: 0,
        }),
        Box::new(p::Pad {
            axes: vec![0, 1],
            low_pad_size: vec![1, 2],
            high_pad_size: vec![0, 1],
        }),
        Box::new(p::Copy {}),
        Box::new(p::StopGradient {}),
        Box::new(p::NumberOfElements {
            axes: vec![0],
            inverted: true,
            dtype: mlx::Dtype::Float16,
        }),
        Box::new(p::View {
            dtype: mlx::Dtype::Uint32,
        }),
    ];
    for prim in &all {
        let entry = lookup(prim.name()).unwrap();
        let mut w = MlxWriter::new();
        prim.write_mlx(&mut w);
        let back = (entry.decode_mlx)(&mut MlxReader::new(&w.bytes, "test")).unwrap();
        assert!(back.is_equivalent(&**prim), "{} (MLX wire)", prim.name());
        let back = (entry.decode_cbor)(&prim.encode_cbor()).unwrap();
        assert!(back.is_equivalent(&**prim), "{} (CBOR)", prim.name());
    }
    // Depends keeps its output count in native files only.
    let d = p::Depends { outputs: 2 };
    let back = (lookup("Depends").unwrap().decode_cbor)(&d.encode_cbor()).unwrap();
    assert!(back.is_equivalent(&d));
    // MLX's layout of SliceUpdate: enum code (i32), then three shapes.
    let mut w = MlxWriter::new();
    p::SliceUpdate {
        reduce_type: p::SliceUpdateType::Sum,
        start_indices: vec![1],
        end_indices: vec![3],
        strides: vec![1],
    }
    .write_mlx(&mut w);
    let mut want = vec![2u8, 0, 0, 0];
    for v in [1i32, 3, 1] {
        want.extend(1u64.to_le_bytes());
        want.extend(v.to_le_bytes());
    }
    assert_eq!(w.bytes, want);
}
