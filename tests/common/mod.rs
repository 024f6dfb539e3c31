//! Helpers shared by the integration tests: fixture paths and comparisons.
#![allow(dead_code)]

use mlx::{ops, Array, Dtype};
use std::path::PathBuf;

/// Path of a file under `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Loads `tests/fixtures/<rel>` as an array.
pub fn npy(rel: &str) -> Array {
    mlx::io::load_npy(fixture(rel)).unwrap_or_else(|e| panic!("{e}"))
}

/// The elements as f64 (any real dtype; bf16 stored as uint16 is not converted).
pub fn as_f64(a: &Array) -> Vec<f64> {
    let a = if a.dtype() == Dtype::Float64 {
        a.clone()
    } else {
        ops::astype(a, Dtype::Float64).unwrap()
    };
    a.to_vec::<f64>().unwrap()
}

/// numpy `allclose` semantics, NaNs equal; panics with the first mismatch.
pub fn assert_close(got: &Array, want: &Array, rtol: f64, atol: f64) {
    assert_eq!(got.shape(), want.shape(), "shape");
    let (g, w) = (as_f64(got), as_f64(want));
    for (i, (x, y)) in g.iter().zip(&w).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= atol + rtol * y.abs();
        assert!(
            ok,
            "element {i}: got {x}, want {y} (rtol {rtol}, atol {atol})"
        );
    }
}

/// Bit-for-bit equality of two arrays of the same dtype and shape.
pub fn assert_bits_eq(got: &Array, want: &Array) {
    assert_eq!(got.shape(), want.shape(), "shape");
    assert_eq!(got.dtype(), want.dtype(), "dtype");
    let g = mlx::io::save_npy_bytes(got).unwrap();
    let w = mlx::io::save_npy_bytes(want).unwrap();
    if g != w {
        let (gv, wv) = (as_f64(got), as_f64(want));
        let i = gv
            .iter()
            .zip(&wv)
            .position(|(a, b)| a.to_bits() != b.to_bits())
            .unwrap_or(0);
        panic!(
            "arrays differ; first at element {i}: got {:?}, want {:?}",
            gv.get(i),
            wv.get(i)
        );
    }
}
