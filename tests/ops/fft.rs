//! `mlx::fft` against MLX fixtures (tests/fixtures/fft/generate.py), a
//! naive DFT for random lengths, strided inputs, MLX's graph shape and
//! errors.

use crate::common;

use common::{assert_close, fixture, npy};
use mlx::fft::{self, FftNorm};
use mlx::{ops, Array, Complex64, Dtype};

const B: FftNorm = FftNorm::Backward;

/// allclose for complex64 or float32 results.
fn close(got: &Array, want: &Array, tol: f32) {
    assert_eq!(got.shape(), want.shape());
    assert_eq!(got.dtype(), want.dtype());
    if want.dtype() == Dtype::Complex64 {
        let (g, w) = (
            got.to_vec::<Complex64>().unwrap(),
            want.to_vec::<Complex64>().unwrap(),
        );
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert!(
                (a - b).norm() <= tol * (1.0 + b.norm()),
                "element {i}: {a} vs {b}"
            );
        }
    } else {
        assert_close(got, want, tol as f64, tol as f64);
    }
}

fn case(name: &str, f: impl Fn(&Array) -> mlx::Result<Array>) {
    let a = npy(&format!("fft/{name}_in.npy"));
    let want = npy(&format!("fft/{name}_out.npy"));
    let got = f(&a).unwrap_or_else(|e| panic!("{name}: {e}"));
    close(&got, &want, 2e-5);
}

#[test]
fn one_dimensional_every_length() {
    for n in [1, 2, 3, 5, 8, 12, 17, 64, 100] {
        case(&format!("fft_{n}"), |a| fft::fft(a, None, -1, B));
    }
    case("fft_axis0_n", |a| fft::fft(a, Some(9), 0, B));
    case("fft_cut", |a| fft::fft(a, Some(5), -1, B));
    case("fft_real_in", |a| fft::fft(a, None, -1, B));
    case("ifft_7", |a| fft::ifft(a, None, -1, B));
    case("ifft_16_n", |a| fft::ifft(a, Some(20), -1, B));
}

#[test]
fn real_transforms() {
    case("rfft_8", |a| fft::rfft(a, None, -1, B));
    case("rfft_13", |a| fft::rfft(a, None, -1, B));
    case("rfft_n", |a| fft::rfft(a, Some(9), -1, B));
    case("rfft_axis0", |a| fft::rfft(a, None, 0, B));
    case("irfft_5", |a| fft::irfft(a, None, -1, B));
    case("irfft_n7", |a| fft::irfft(a, Some(7), -1, B));
    case("irfft_n12", |a| fft::irfft(a, Some(12), -1, B));
}

#[test]
fn multi_axis_transforms() {
    case("fft2", |a| fft::fft2(a, None, &[-2, -1], B));
    case("ifft2_s", |a| fft::ifft2(a, Some(&[4, 7]), &[-2, -1], B));
    case("rfft2", |a| fft::rfft2(a, None, &[-2, -1], B));
    case("irfft2", |a| fft::irfft2(a, None, &[-2, -1], B));
    case("fftn", |a| fft::fftn(a, None, None, B));
    case("fftn_axes", |a| {
        fft::fftn(a, Some(&[6, 3]), Some(&[0, 2]), B)
    });
    case("ifftn", |a| fft::ifftn(a, None, Some(&[1, 2]), B));
    case("rfftn", |a| fft::rfftn(a, None, None, B));
    case("irfftn", |a| {
        fft::irfftn(a, Some(&[3, 4, 9]), Some(&[0, 1, 2]), B)
    });
}

#[test]
fn normalisation_modes() {
    case("norm_ortho", |a| fft::fft(a, None, -1, FftNorm::Ortho));
    case("norm_forward", |a| {
        fft::irfft(a, None, -1, FftNorm::Forward)
    });
    case("norm_ortho_ifft2", |a| {
        fft::ifft2(a, None, &[-2, -1], FftNorm::Ortho)
    });
}

/// Σ x_j e^(−2πijk/n) in f64.
fn naive_dft(x: &[Complex64]) -> Vec<Complex64> {
    let n = x.len();
    (0..n)
        .map(|k| {
            let (mut re, mut im) = (0f64, 0f64);
            for (j, v) in x.iter().enumerate() {
                let t = -2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                re += v.re as f64 * t.cos() - v.im as f64 * t.sin();
                im += v.re as f64 * t.sin() + v.im as f64 * t.cos();
            }
            Complex64::new(re as f32, im as f32)
        })
        .collect()
}

#[test]
fn matches_naive_dft_for_many_lengths_and_round_trips() {
    for n in (1..40).chain([97, 128, 210, 243, 1000]) {
        let x: Vec<Complex64> = (0..n)
            .map(|i| {
                Complex64::new(
                    ((i * 7 % 13) as f32 - 6.0) / 3.0,
                    ((i * 5 % 11) as f32 - 5.0) / 4.0,
                )
            })
            .collect();
        let a = Array::from_slice(&x, &[n]).unwrap();
        let got = fft::fft(&a, None, 0, B).unwrap();
        let want = Array::from_slice(&naive_dft(&x), &[n]).unwrap();
        close(&got, &want, 1e-4);
        let back = fft::ifft(&got, None, 0, B).unwrap();
        close(&back, &a, 1e-5);
    }
}

#[test]
fn large_batched_transform_uses_threads_and_agrees() {
    // 256 lines of length 300 (Bluestein), transformed along axis 0 of the transpose.
    let v: Vec<f32> = (0..256 * 300)
        .map(|i| ((i * 31 % 97) as f32 - 48.0) / 50.0)
        .collect();
    let a = Array::from_slice(&v, &[256, 300]).unwrap();
    let at = ops::transpose(&a, &[]).unwrap();
    let r1 = fft::rfft(&a, None, -1, B).unwrap();
    let r2 = ops::transpose(&fft::rfft(&at, None, 0, B).unwrap(), &[]).unwrap();
    close(&r1, &r2, 1e-6);
    let back = fft::irfft(&r1, Some(300), -1, B).unwrap();
    close(&back, &a, 1e-5);
}

#[test]
fn mlx_exported_file_imports_and_runs() {
    let f = mlx::import_function(fixture("fft/irfft.mlxfn")).unwrap();
    let out = f.call(&[npy("fft/file_in.npy")]).unwrap();
    close(&out[0], &npy("fft/file_out.npy"), 2e-5);
}

#[test]
fn graph_matches_mlx() {
    // irfft with n = 7: Slice to 4 entries, then FFT with odd_out.
    let x = Array::placeholder(&[2, 6], Dtype::Complex64);
    let y = fft::irfft(&x, Some(7), -1, B).unwrap();
    let (node, _) = y.node().unwrap();
    assert_eq!(node.primitive().name(), "FFT");
    let state = format!("{:?}", node.primitive());
    assert!(
        state.contains("odd_out: true") && state.contains("axes: [1]"),
        "{state}"
    );
    assert_eq!(node.inputs()[0].shape(), &[2, 4]);
    assert_eq!(
        node.inputs()[0].node().unwrap().0.primitive().name(),
        "Slice"
    );
    // Padding goes through SliceUpdate.
    let y = fft::fft(&x, Some(9), -1, B).unwrap();
    let (node, _) = y.node().unwrap();
    assert_eq!(
        node.inputs()[0].node().unwrap().0.primitive().name(),
        "SliceUpdate"
    );
}

#[test]
fn errors_name_the_problem() {
    let a = Array::from_slice(&[1f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let e = |r: mlx::Result<Array>| r.expect_err("an error").to_string();
    assert!(e(fft::fft(&a, Some(0), -1, B)).contains("size"));
    assert!(e(fft::fft(&a, None, 2, B)).contains("out of bounds"));
    assert!(e(fft::fftn(&a, None, Some(&[0, 0]), B)).contains("duplicate"));
    assert!(e(fft::fftn(&a, Some(&[2]), None, B)).contains("axes"));
    assert!(e(fft::fft2(&a, Some(&[2]), &[0, 1], B)).contains("different lengths"));
    assert!(e(fft::fft(&Array::scalar(1f32), None, 0, B)).contains("at least one dimension"));
    let c = ops::astype(&a, Dtype::Complex64).unwrap();
    assert!(e(fft::rfft(&c, None, -1, B)).contains("real input"));
}
