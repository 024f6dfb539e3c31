//! The additive Rust API around MLX's signatures: `Array` methods that
//! delegate to the ops, options structs with `Default`, and the typed error
//! variants of the common shape / axis / dtype / arity errors. Values are
//! closed forms or the positional op the wrapper must equal bit for bit.

use crate::common::assert_bits_eq;
use mlx::fast::{self, Mask};
use mlx::ops::{self, AttentionOptions, ConvOptions, QuantizeOptions, RopeOptions};
use mlx::{Array, Dtype, Error};

fn f32s(v: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

/// Deterministic values in [-1, 1) of `shape`.
fn values(shape: &[i32], seed: u64) -> Array {
    let n = shape.iter().product::<i32>() as usize;
    let v: Vec<f32> = crate::common::Lcg::new(seed)
        .uniform(-1.0, 1.0, n)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    f32s(&v, shape)
}

#[test]
fn methods_chain_left_to_right() {
    let x = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let w = f32s(&[1.0, 0.0, 0.0, -1.0], &[2, 2]);
    // x @ w = [[1, -2], [3, -4]]; summed over the last axis: [-1, -1].
    let s = x.matmul(&w).unwrap().sum(&[-1], true).unwrap();
    assert_eq!(s.shape(), &[2, 1]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![-1.0, -1.0]);
    let e = x.subtract(&x).unwrap().exp().unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![1.0; 4]);
    let t = x.transpose(&[]).unwrap().reshape(&[4]).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
    assert_eq!(
        x.argmax(Some(0), false).unwrap().to_vec::<u32>().unwrap(),
        vec![1, 1]
    );
    let sm = f32s(&[0.0, 3f32.ln()], &[2]).softmax(&[-1]).unwrap();
    let got = sm.to_vec::<f32>().unwrap();
    assert!(
        (got[0] - 0.25).abs() < 1e-6 && (got[1] - 0.75).abs() < 1e-6,
        "{got:?}"
    );
    assert_eq!(x.astype(Dtype::Int32).unwrap().dtype(), Dtype::Int32);
    assert_eq!(x.mean(&[], false).unwrap().item::<f32>().unwrap(), 2.5);
}

#[test]
fn conv_options_match_the_positional_ops() {
    let x1 = values(&[2, 9, 3], 1);
    let w1 = values(&[4, 3, 3], 2);
    let o = ConvOptions {
        stride: 2,
        padding: 1,
        ..Default::default()
    };
    assert_bits_eq(
        &ops::conv_nd(&x1, &w1, &o).unwrap(),
        &ops::conv1d(&x1, &w1, 2, 1, 1, 1).unwrap(),
    );
    let x2 = values(&[1, 6, 5, 4], 3);
    let w2 = values(&[2, 3, 3, 2], 4);
    let o = ConvOptions {
        dilation: 2,
        groups: 2,
        ..Default::default()
    };
    assert_bits_eq(
        &ops::conv_nd(&x2, &w2, &o).unwrap(),
        &ops::conv2d(&x2, &w2, (1, 1), (0, 0), (2, 2), 2).unwrap(),
    );
    let wt = values(&[3, 3, 3, 4], 5);
    let o = ConvOptions {
        stride: 2,
        output_padding: 1,
        ..Default::default()
    };
    assert_bits_eq(
        &ops::conv_transpose_nd(&x2, &wt, &o).unwrap(),
        &ops::conv_transpose2d(&x2, &wt, (2, 2), (0, 0), (1, 1), (1, 1), 1).unwrap(),
    );
    let e = ops::conv_nd(&values(&[4, 4], 6), &w1, &ConvOptions::default()).unwrap_err();
    assert!(e.to_string().contains("found 2 dimensions"), "{e}");
}

#[test]
fn quantize_options_default_to_mlx() {
    let o = QuantizeOptions::default();
    assert_eq!((o.group_size, o.bits), (64, 4));
    let w = values(&[8, 128], 7);
    let (q, s, b) = ops::quantize_with(&w, &o).unwrap();
    let (q2, s2, b2) = ops::quantize(&w, 64, 4).unwrap();
    assert_bits_eq(&q, &q2);
    assert_bits_eq(&s, &s2);
    assert_bits_eq(&b, &b2);
    assert_bits_eq(
        &ops::dequantize_with(&q, &s, &b, &o).unwrap(),
        &ops::dequantize(&q, &s, &b, 64, 4).unwrap(),
    );
    let x = values(&[3, 128], 8);
    assert_bits_eq(
        &ops::quantized_matmul_with(&x, &q, &s, &b, &o).unwrap(),
        &ops::quantized_matmul(&x, &q, &s, &b, true, 64, 4).unwrap(),
    );
}

#[test]
fn rope_and_attention_options_match_the_positional_ops() {
    let x = values(&[1, 2, 5, 8], 9);
    let o = RopeOptions {
        offset: 3,
        traditional: true,
        ..RopeOptions::new(8)
    };
    assert_bits_eq(
        &ops::rope_with(&x, &o).unwrap(),
        &fast::rope(&x, 8, true, Some(10000.0), 1.0, 3, None).unwrap(),
    );
    let inv = RopeOptions { inverse: true, ..o };
    assert_bits_eq(
        &ops::rope_with(&x, &inv).unwrap(),
        &fast::rope_inverse(&x, 8, true, Some(10000.0), 1.0, 3, None).unwrap(),
    );

    let (q, k, v) = (
        values(&[1, 2, 3, 16], 10),
        values(&[1, 2, 4, 16], 11),
        values(&[1, 2, 4, 16], 12),
    );
    // The default scale is 1/sqrt(16) = 0.25.
    assert_bits_eq(
        &ops::attention_with(&q, &k, &v, &AttentionOptions::default()).unwrap(),
        &fast::scaled_dot_product_attention(&q, &k, &v, 0.25, None).unwrap(),
    );
    let o = AttentionOptions {
        scale: Some(0.5),
        mask: Some(Mask::Causal),
        ..Default::default()
    };
    assert_bits_eq(
        &ops::attention_with(&q, &k, &v, &o).unwrap(),
        &fast::scaled_dot_product_attention(&q, &k, &v, 0.5, Some(Mask::Causal)).unwrap(),
    );
}

#[test]
fn common_errors_are_typed() {
    let x = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    match ops::sum(&x, &[2], false).unwrap_err() {
        Error::AxisOutOfBounds { op, axis, ndim } => {
            assert_eq!((op.as_str(), axis, ndim), ("sum", 2, 2));
        }
        e => panic!("expected AxisOutOfBounds, got {e:?}"),
    }
    let e = ops::mean(&x, &[1, -1], false).unwrap_err();
    assert!(
        matches!(&e, Error::DuplicateAxis { axis: -1, axes, .. } if axes == &[1, -1]),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "mean: duplicate axis -1 in [1, -1]");
    let e = ops::add(&x, &f32s(&[1.0, 2.0], &[2])).unwrap_err();
    assert!(
        matches!(&e, Error::Broadcast { a, b, .. } if a == &[2, 3] && b == &[2]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "add: shapes [2, 3] and [2] cannot be broadcast together"
    );
    let c = Array::from_slice(&[mlx::Complex64::new(1.0, 0.0)], &[1]).unwrap();
    let e = ops::sigmoid(&c).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::DtypeNotSupported {
                dtype: Dtype::Complex64,
                ..
            }
        ),
        "{e:?}"
    );
    // A primitive given the wrong number of inputs.
    let p = mlx::primitives::binary::Add {};
    let e = Array::from_primitive(p, vec![x.clone()]).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::InputCount {
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn io_errors_convert_with_question_mark() {
    fn read_missing() -> mlx::Result<Vec<u8>> {
        Ok(std::fs::read("/nonexistent/mlx-rust-api-test")?)
    }
    let e = read_missing().unwrap_err();
    assert!(matches!(e, Error::IoError(ref io) if io.kind() == std::io::ErrorKind::NotFound));
    assert!(e.to_string().starts_with("I/O error: "), "{e}");
}

#[test]
fn shape_helpers_have_a_public_home() {
    use mlx::shape::{broadcast_shapes, normalize_axes, normalize_axis};
    assert_eq!(
        broadcast_shapes("t", &[4, 1, 3], &[2, 1]).unwrap(),
        vec![4, 2, 3]
    );
    assert_eq!(normalize_axis("t", -3, 3).unwrap(), 0);
    assert_eq!(normalize_axes("t", &[-1, 0], 2).unwrap(), vec![1, 0]);
}
