//! A primitive defined outside `mlx` (crate `user-primitive`): it evaluates
//! inside a graph with mlx's own ops, matches its closed form for every float
//! dtype and for strided inputs, is registered, and round-trips through both
//! state codecs, and a node rebuilt from decoded state computes the same.

use crate::common;

use common::{as_f64, assert_close};
use mlx::primitive::{lookup, registered, registry_problems, MlxReader, MlxWriter};
use mlx::{ops, Array, Dtype, Primitive, PrimitiveState, StateValue};
use user_primitive::{soft_shrink, SoftShrink};

/// The closed form, in f64.
fn shrink(x: f64, l: f64) -> f64 {
    if x > l {
        x - l
    } else if x < -l {
        x + l
    } else if x.is_nan() {
        x
    } else {
        0.0
    }
}

fn grid(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32 - n as f32 / 2.0) * 0.37).collect()
}

#[test]
fn evaluates_in_a_graph_with_mlx_ops() {
    // y = 2 * soft_shrink(x + b, 0.75), with b broadcast along rows.
    let x = Array::from_slice(&grid(12), &[3, 4]).unwrap();
    let b = Array::from_slice(&[0.5f32, -0.5, 1.0, 0.0], &[4]).unwrap();
    let s = soft_shrink(&ops::add(&x, &b).unwrap(), 0.75).unwrap();
    let y = ops::multiply(&s, &Array::scalar(2.0f32)).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[3, 4][..], Dtype::Float32));
    // Before evaluation, the graph node is the user's primitive, with its state.
    let (node, _) = s.node().expect("lazy until evaluated");
    assert_eq!(node.primitive().name(), "SoftShrink");
    assert_eq!(
        node.primitive().state(),
        vec![StateValue::Float(0.75), StateValue::Optional(None)]
    );

    let (xv, bv) = (grid(12), [0.5f32, -0.5, 1.0, 0.0]);
    let want: Vec<f32> = (0..12)
        .map(|i| 2.0 * shrink(f64::from(xv[i] + bv[i % 4]), 0.75) as f32)
        .collect();
    let got = y.to_vec::<f32>().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-6 * w.abs().max(1.0),
            "element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn every_float_dtype_matches_the_closed_form() {
    let base = Array::from_slice(&grid(40), &[40]).unwrap();
    for (dtype, rtol) in [
        (Dtype::Float32, 1e-7),
        (Dtype::Float64, 1e-15),
        (Dtype::Float16, 1e-3),
        (Dtype::Bfloat16, 8e-3),
    ] {
        let x = ops::astype(&base, dtype).unwrap();
        let y = soft_shrink(&x, 1.25).unwrap();
        assert_eq!(y.dtype(), dtype);
        // The closed form on the values the dtype actually holds.
        let want: Vec<f64> = as_f64(&x).iter().map(|&v| shrink(v, 1.25)).collect();
        let want = Array::from_slice(&want, &[40]).unwrap();
        assert_close(&y, &want, rtol, 0.0);
    }
}

#[test]
fn strided_inputs() {
    let x = Array::from_slice(&grid(24), &[4, 6]).unwrap();
    // Transposed view.
    let t = ops::transpose(&x, &[1, 0]).unwrap();
    let y = soft_shrink(&t, 0.5).unwrap();
    let xv = grid(24);
    let want: Vec<f64> = (0..24)
        .map(|k| shrink(f64::from(xv[(k % 4) * 6 + k / 4]), 0.5))
        .collect();
    assert_close(&y, &Array::from_slice(&want, &[6, 4]).unwrap(), 1e-7, 0.0);
    // Broadcast view (stride 0).
    let row = Array::from_slice(&[-3.0f32, -0.1, 0.2, 4.0], &[4]).unwrap();
    let bc = ops::broadcast_to(&row, &[3, 4]).unwrap();
    let y = soft_shrink(&bc, 1.0).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [-2.0, 0.0, 0.0, 3.0].repeat(3));
}

#[test]
fn special_values() {
    let x = Array::from_slice(
        &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 5.0],
        &[5],
    )
    .unwrap();
    let y = soft_shrink(&x, 1.0).unwrap().to_vec::<f32>().unwrap();
    assert!(y[0].is_nan());
    assert_eq!(&y[1..], &[f32::INFINITY, f32::NEG_INFINITY, 0.0, 4.0]);
    // λ = 0 is the identity on non-zero values; λ = ∞ zeroes finite values.
    let y = soft_shrink(&x, 0.0).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(y[4], 5.0);
    let y = soft_shrink(&x, f32::INFINITY)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(&y[3..], &[0.0, 0.0]);
}

#[test]
fn bad_arguments_are_errors() {
    let x = Array::from_slice(&[1.0f32], &[1]).unwrap();
    for l in [-0.5, f32::NAN] {
        let err = soft_shrink(&x, l).unwrap_err().to_string();
        assert!(
            err.contains("soft_shrink: lambda must be a non-negative number"),
            "{err}"
        );
    }
    let i = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    let err = soft_shrink(&i, 0.5).unwrap_err().to_string();
    assert!(err.contains("expected a floating-point array"), "{err}");
    assert!(err.contains("int32"), "{err}");
    // The shape rule checks too: a node built from a file goes through it.
    let p = SoftShrink {
        lambda: 1.0,
        lower: None,
    };
    assert!(p.output_specs(&[]).is_err());
    assert!(p.output_specs(&[i.spec().clone()]).is_err());
}

#[test]
fn is_registered() {
    assert!(registered().iter().any(|e| e.name == "SoftShrink"));
    assert_eq!(lookup("SoftShrink").unwrap().name, "SoftShrink");
    assert!(registry_problems().is_empty(), "{:?}", registry_problems());
}

#[test]
fn state_round_trips_through_both_codecs() {
    let p = SoftShrink {
        lambda: 0.3,
        lower: Some(0.25),
    };
    assert_eq!(p.state_names(), ["lambda", "lower"]);
    let entry = lookup(p.name()).unwrap();

    let back = (entry.decode_cbor)(&p.encode_cbor()).unwrap();
    assert_eq!(back.as_any().downcast_ref::<SoftShrink>(), Some(&p));

    let mut w = MlxWriter::new();
    p.write_mlx(&mut w);
    // MLX's layout: the f32, then an optional as a presence flag and its value.
    let mut want = 0.3f32.to_le_bytes().to_vec();
    want.push(1);
    want.extend_from_slice(&0.25f32.to_le_bytes());
    assert_eq!(w.bytes, want);
    let mut r = MlxReader::new(&w.bytes, "soft_shrink");
    let back = (entry.decode_mlx)(&mut r).unwrap();
    assert_eq!(r.remaining(), 0);
    assert!(back.is_equivalent(&p));
    for other in [(0.4, Some(0.25)), (0.3, None), (0.3, Some(0.5))] {
        let q = SoftShrink {
            lambda: other.0,
            lower: other.1,
        };
        assert!(!back.is_equivalent(&q), "{q:?}");
    }

    // A node rebuilt from the decoded primitive computes the same values,
    // which is what import does.
    let x = Array::from_slice(&grid(8), &[8]).unwrap();
    let rebuilt = Array::from_primitive_multi(back, vec![x.clone()]).unwrap();
    let want: Vec<f32> = grid(8)
        .iter()
        .map(|&v| {
            if v > 0.3 {
                v - 0.3
            } else if v < -0.25 {
                v + 0.25
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(rebuilt[0].to_vec::<f32>().unwrap(), want);
}

#[test]
fn user_primitive_round_trips_through_a_native_file() {
    let path = std::env::temp_dir().join(format!("user-prim-{}.mlxfn", std::process::id()));
    mlx::export_function(
        &path,
        |a| Ok(vec![user_primitive::soft_shrink(&a[0], 0.5)?]),
        &[Array::from_slice(&[0.0f32; 4], &[4]).unwrap()],
        &mlx::ExportOptions::default(),
    )
    .unwrap();
    let f = mlx::import_function(&path).unwrap();
    let out = f
        .call(&[Array::from_slice(&[-2.0f32, -0.25, 0.25, 1.5], &[4]).unwrap()])
        .unwrap();
    // soft-shrink with lambda 0.5: x - 0.5 above 0.5, x + 0.5 below -0.5, else 0.
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![-1.5, 0.0, 0.0, 1.0]);
    // MLX cannot import a primitive it does not know: exporting in its format says so.
    let e = mlx::export_function(
        &path,
        |a| Ok(vec![user_primitive::soft_shrink(&a[0], 0.5)?]),
        &[Array::from_slice(&[0.0f32; 4], &[4]).unwrap()],
        &mlx::ExportOptions {
            format: mlx::Format::Mlx,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("SoftShrink") && e.contains("not in MLX"), "{e}");
}
