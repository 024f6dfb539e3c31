//! Convolutions against MLX fixtures (tests/fixtures/conv/generate.py).

use crate::common;

use common::{assert_close, npy};
use mlx::{ops, Array, Dtype};

fn load(case: &str) -> (Array, Array, Array) {
    let f = |s: &str| npy(&format!("conv/{case}_{s}.npy"));
    (f("x"), f("w"), f("out"))
}

fn check(case: &str, f: impl Fn(&Array, &Array) -> mlx::Result<Array>) {
    let (x, w, want) = load(case);
    let got = f(&x, &w).unwrap();
    assert_close(&got, &want, 1e-5, 1e-5);
    // Every float dtype, with the inputs rounded to it first.
    for (dtype, tol) in [
        (Dtype::Float64, 1e-5),
        (Dtype::Float16, 2e-2),
        (Dtype::Bfloat16, 1.5e-1),
    ] {
        let (xd, wd) = (
            ops::astype(&x, dtype).unwrap(),
            ops::astype(&w, dtype).unwrap(),
        );
        let got = f(&xd, &wd).unwrap();
        assert_eq!(got.dtype(), dtype, "{case}");
        assert_close(&got, &want, tol, tol);
    }
}

#[test]
fn conv1d_fixtures() {
    check("c1_plain", |x, w| ops::conv1d(x, w, 1, 0, 1, 1));
    check("c1_stride_pad_dil", |x, w| ops::conv1d(x, w, 2, 2, 2, 1));
    check("c1_groups", |x, w| ops::conv1d(x, w, 1, 1, 1, 2));
}

#[test]
fn conv2d_fixtures() {
    check("c2_plain", |x, w| {
        ops::conv2d(x, w, (1, 1), (0, 0), (1, 1), 1)
    });
    check("c2_all", |x, w| {
        ops::conv2d(x, w, (2, 1), (1, 2), (1, 2), 1)
    });
    check("c2_groups", |x, w| {
        ops::conv2d(x, w, (1, 1), (1, 1), (1, 1), 3)
    });
}

#[test]
fn conv3d_fixture() {
    check("c3_plain", |x, w| {
        ops::conv3d(x, w, (1, 2, 1), (1, 0, 1), (1, 1, 1), 1)
    });
}

#[test]
fn transposed_fixtures() {
    check("ct1", |x, w| ops::conv_transpose1d(x, w, 2, 1, 1, 1, 1));
    check("ct2", |x, w| {
        ops::conv_transpose2d(x, w, (2, 3), (1, 0), (1, 2), (0, 0), 1)
    });
    check("ct3", |x, w| {
        ops::conv_transpose3d(x, w, (2, 2, 2), (0, 0, 0), (1, 1, 1), (0, 0, 0), 1)
    });
}

#[test]
fn general_with_flip_and_input_dilation() {
    check("cg_flip_idil", |x, w| {
        ops::conv_general(x, w, &[1, 2], &[2, 0], &[1, 3], &[2, 1], &[2, 3], 1, true)
    });
}

#[test]
fn strided_inputs() {
    // A transposed view of the input gives the same result as a copy.
    let (x, w, want) = load("c2_plain");
    let xt = ops::transpose(&x, &[0, 2, 1, 3]).unwrap();
    let t = Array::from_slice(&common::as_f64(&xt), xt.shape()).unwrap();
    let t = ops::astype(&t, Dtype::Float32).unwrap();
    t.eval().unwrap();
    let back = ops::transpose(&t, &[0, 2, 1, 3]).unwrap();
    let got = ops::conv2d(&back, &w, (1, 1), (0, 0), (1, 1), 1).unwrap();
    assert_close(&got, &want, 1e-5, 1e-5);
}

#[test]
fn primitive_state_in_wire_order() {
    let (x, w, _) = load("c1_stride_pad_dil");
    let out = ops::conv1d(&x, &w, 2, 2, 2, 1).unwrap();
    let (node, _) = out.node().unwrap();
    let p = node.primitive();
    assert_eq!(p.name(), "Convolution");
    assert_eq!(
        p.state_names(),
        [
            "kernel_strides",
            "padding_lo",
            "padding_hi",
            "kernel_dilation",
            "input_dilation",
            "groups",
            "flip"
        ]
    );
}

#[test]
fn errors() {
    let x = Array::from_slice(&[0.0f32; 2 * 9 * 3], &[2, 9, 3]).unwrap();
    let w = Array::from_slice(&[0.0f32; 4 * 3 * 3], &[4, 3, 3]).unwrap();
    // Channels not divisible by groups.
    let e = ops::conv1d(&x, &w, 1, 0, 1, 2).unwrap_err().to_string();
    assert!(e.contains("groups"), "{e}");
    // Wrong rank.
    assert!(ops::conv2d(&x, &w, (1, 1), (0, 0), (1, 1), 1).is_err());
    // Kernel larger than the padded input.
    let big = Array::from_slice(&[0.0f32; 4 * 12 * 3], &[4, 12, 3]).unwrap();
    let e = ops::conv1d(&x, &big, 1, 0, 1, 1).unwrap_err().to_string();
    assert!(e.contains("smaller"), "{e}");
    // Integer input, bad stride, channel mismatch.
    let xi = Array::from_slice(&[0i32; 2 * 9 * 3], &[2, 9, 3]).unwrap();
    assert!(ops::conv1d(&xi, &w, 1, 0, 1, 1).is_err());
    assert!(ops::conv1d(&x, &w, 0, 0, 1, 1).is_err());
    let w2 = Array::from_slice(&[0.0f32; 4 * 3 * 2], &[4, 3, 2]).unwrap();
    let e = ops::conv1d(&x, &w2, 1, 0, 1, 1).unwrap_err().to_string();
    assert!(e.contains("[4, 3, 2]"), "{e}");
}
