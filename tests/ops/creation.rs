//! Creation ops (arange, eye, zeros, ones, full, *_like) against MLX
//! fixtures and closed forms, and the Full / Arange primitives.

use crate::common;

use half::{bf16, f16};
use mlx::primitives::creation::Arange;
use mlx::{ops, Array, Dtype, Primitive, Spec};
use serde_json::Value;

fn manifest() -> Value {
    let text = std::fs::read_to_string(common::fixture("reduce/manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Loads a fixture; bfloat16 files hold uint16 bits and are reinterpreted.
fn load(file: &str, dtype: &str) -> Array {
    let a = common::npy(&format!("reduce/{file}"));
    if dtype == "bfloat16" {
        let v: Vec<bf16> = a
            .to_vec::<u16>()
            .unwrap()
            .into_iter()
            .map(bf16::from_bits)
            .collect();
        return Array::from_slice(&v, a.shape()).unwrap();
    }
    a
}

#[test]
fn arange_matches_mlx_bit_for_bit() {
    let m = manifest();
    for case in m["arange"].as_array().unwrap() {
        let (start, stop, step) = (
            case["start"].as_f64().unwrap(),
            case["stop"].as_f64().unwrap(),
            case["step"].as_f64().unwrap(),
        );
        let dtype = Dtype::from_name(case["dtype"].as_str().unwrap()).unwrap();
        let got = ops::arange(start, stop, step, dtype).unwrap();
        let want = load(case["file"].as_str().unwrap(), dtype.name());
        common::assert_bits_eq(&got, &want);
    }
}

#[test]
fn eye_matches_mlx() {
    if mlx::primitive::lookup("Scatter").is_err() {
        eprintln!("skipped: the Scatter primitive is not in this build");
        return;
    }
    for case in manifest()["eye"].as_array().unwrap() {
        let dtype = Dtype::from_name(case["dtype"].as_str().unwrap()).unwrap();
        let n = case["n"].as_i64().unwrap() as i32;
        let m = case["m"].as_i64().unwrap() as i32;
        let k = case["k"].as_i64().unwrap() as i32;
        let got = ops::eye(n, Some(m), k, dtype).unwrap();
        common::assert_bits_eq(&got, &load(case["file"].as_str().unwrap(), dtype.name()));
    }
}

#[test]
fn eye_outside_the_matrix_is_zeros_without_scatter() {
    let z = ops::eye(3, None, 5, Dtype::Float32).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 9]);
    let z = ops::eye(2, Some(3), -2, Dtype::Int32).unwrap();
    assert_eq!(z.shape(), &[2, 3]);
    assert_eq!(z.to_vec::<i32>().unwrap(), vec![0; 6]);
    assert!(ops::eye(-1, None, 0, Dtype::Float32).is_err());
}

#[test]
fn fills_and_likes() {
    let z = ops::zeros(&[2, 3], Dtype::Float16).unwrap();
    assert_eq!(z.to_vec::<f16>().unwrap(), vec![f16::ZERO; 6]);
    let o = ops::ones(&[4], Dtype::Int64).unwrap();
    assert_eq!(o.to_vec::<i64>().unwrap(), vec![1; 4]);
    let b = ops::ones(&[2], Dtype::Bool).unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, true]);
    // full broadcasts a row and casts it.
    let row = Array::from_slice(&[1.5f32, -2.5, 3.0], &[3]).unwrap();
    let f = ops::full(&[2, 3], &row, Some(Dtype::Int32)).unwrap();
    assert_eq!(f.to_vec::<i32>().unwrap(), vec![1, -2, 3, 1, -2, 3]);
    let f = ops::full(&[2, 2], &Array::scalar(7u8), None).unwrap();
    assert_eq!(f.dtype(), Dtype::Uint8);
    assert_eq!(f.to_vec::<u8>().unwrap(), vec![7; 4]);
    let big = ops::full(&[300, 300], &Array::scalar(0.25f32), None).unwrap();
    assert!(big.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.25));
    let zl = ops::zeros_like(&row).unwrap();
    assert_eq!((zl.shape(), zl.dtype()), (&[3][..], Dtype::Float32));
    assert_eq!(
        ops::ones_like(&row).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0; 3]
    );
    let id = ops::identity(0, Dtype::Float32).unwrap();
    assert_eq!(id.shape(), &[0, 0]);
    assert!(ops::full(&[2, -1], &row, None).is_err());
    assert!(ops::full(&[2, 4], &row, None).is_err());
}

#[test]
fn fill_graph_is_constant_broadcast_full() {
    let z = ops::zeros(&[2, 3], Dtype::Float32).unwrap();
    let (node, _) = z.node().unwrap();
    assert_eq!(node.primitive().name(), "Full");
    let b = &node.inputs()[0];
    assert_eq!(b.node().unwrap().0.primitive().name(), "Broadcast");
    // A value already of the shape goes straight into Full.
    let v = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let f = ops::full(&[2], &v, None).unwrap();
    assert!(f.node().unwrap().0.inputs()[0].same(&v));
    assert_eq!(f.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
}

#[test]
fn arange_edge_cases_and_errors() {
    let e = ops::arange(10.0, 0.0, 1.0, Dtype::Int32).unwrap();
    assert_eq!(e.shape(), &[0]);
    assert_eq!(e.to_vec::<i32>().unwrap(), Vec::<i32>::new());
    let neg = ops::arange(3.0, 0.0, -1.0, Dtype::Int16).unwrap();
    assert_eq!(neg.to_vec::<i16>().unwrap(), vec![3, 2, 1]);
    let inf = ops::arange(2.0, 5.0, f64::INFINITY, Dtype::Float32).unwrap();
    assert_eq!(inf.to_vec::<f32>().unwrap(), vec![2.0]);
    let msg = |r: mlx::Result<Array>| r.unwrap_err().to_string();
    assert!(msg(ops::arange(0.0, 5.0, 0.0, Dtype::Float32)).contains("nonzero"));
    assert!(msg(ops::arange(0.0, 5.0, 1.0, Dtype::Bool)).contains("bool"));
    assert!(msg(ops::arange(0.0, f64::NAN, 1.0, Dtype::Float32)).contains("length"));
    assert!(msg(ops::arange(0.0, 1e10, 1.0, Dtype::Float32)).contains("more than"));
}

#[test]
fn arange_evaluates_with_the_recorded_dtype() {
    // An MLX file gives the dtype through the recorded output spec; the
    // state's dtype field (not in MLX's state) then does not matter.
    let p = Arange {
        start: 0.0,
        stop: 4.0,
        step: 1.5,
        dtype: Dtype::Float32,
    };
    assert_eq!(
        p.output_specs(&[]).unwrap(),
        vec![Spec::new([3], Dtype::Float32)]
    );
    let out = Array::with_specs(Box::new(p), vec![], vec![Spec::new([3], Dtype::Float64)]);
    assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![0.0, 1.5, 3.0]);
}
