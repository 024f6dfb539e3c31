//! The factorisation primitives (Cholesky, Inverse, QRF, SVD, Eigh, Eig)
//! and SearchSorted, GatherMM, BlockMaskedMM, Hadamard, RMSNormVJP,
//! LayerNormVJP and CustomKernel, against fixtures made with MLX 0.32.4
//! (tests/fixtures/factorizations/generate.py). Where LAPACK's sign/order
//! conventions are free (eigenvectors, singular vectors, eig's order),
//! outputs are checked by reconstruction and the values (sorted) against
//! MLX.

use crate::common;

use common::{as_f64, assert_bits_eq, assert_close, npy};
use mlx::{linalg, ops, Array, Complex64, Dtype, Format};

fn fx(name: &str) -> Array {
    npy(&format!("factorizations/{name}.npy"))
}

/// Row-major product of (m×k) and (k×n) f64 matrices.
fn mm(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

fn assert_vec_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

fn dims(a: &Array) -> (usize, usize, usize) {
    let n = a.ndim();
    let (r, c) = (a.shape()[n - 2] as usize, a.shape()[n - 1] as usize);
    (a.size() / (r * c).max(1), r, c)
}

// ---- Cholesky / Inverse ---------------------------------------------------

#[test]
fn cholesky_matches_mlx() {
    for tag in ["f32", "f64"] {
        let a = fx(&format!("chol_{tag}_in"));
        let tol = if tag == "f32" { 1e-5 } else { 1e-12 };
        for (upper, want) in [(false, "lower"), (true, "upper")] {
            let got = linalg::cholesky(&a, upper).unwrap();
            assert_eq!(got.dtype(), a.dtype());
            assert_close(&got, &fx(&format!("chol_{tag}_{want}")), tol, tol);
        }
    }
    let a = fx("chol_batch_in");
    assert_close(
        &linalg::cholesky(&a, false).unwrap(),
        &fx("chol_batch_out"),
        1e-5,
        1e-5,
    );
}

#[test]
fn cholesky_of_non_positive_definite_is_lapacks_partial_factor() {
    let got = linalg::cholesky(&fx("chol_notpd_in"), false).unwrap();
    assert_close(&got, &fx("chol_notpd_out"), 1e-6, 1e-6);
}

#[test]
fn cholesky_reads_strided_input() {
    // Aᵀ of a symmetric matrix is A, read through transposed strides.
    let a = fx("chol_f32_in");
    let t = ops::transpose(&a, &[1, 0]).unwrap();
    assert_close(
        &linalg::cholesky(&t, false).unwrap(),
        &fx("chol_f32_lower"),
        1e-5,
        1e-5,
    );
}

#[test]
fn inverse_matches_mlx() {
    for tag in ["f32", "f64"] {
        let tol = if tag == "f32" { 1e-5 } else { 1e-12 };
        let got = linalg::inv(&fx(&format!("inv_{tag}_in"))).unwrap();
        assert_close(&got, &fx(&format!("inv_{tag}_out")), tol, tol);
    }
    let a = fx("triinv_in");
    assert_close(
        &linalg::tri_inv(&a, false).unwrap(),
        &fx("triinv_lower"),
        1e-5,
        1e-6,
    );
    assert_close(
        &linalg::tri_inv(&a, true).unwrap(),
        &fx("triinv_upper"),
        1e-5,
        1e-6,
    );
}

#[test]
fn cholesky_inv_inverts_the_original_matrix() {
    let a = fx("chol_f64_in");
    let l = linalg::cholesky(&a, false).unwrap();
    let got = linalg::cholesky_inv(&l, false).unwrap();
    assert_close(&got, &linalg::inv(&a).unwrap(), 1e-10, 1e-12);
}

#[test]
fn singular_inverse_is_an_error() {
    let a = Array::from_slice(&[1.0f32, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
    let err = linalg::inv(&a).unwrap().eval().unwrap_err().to_string();
    assert!(err.contains("singular"), "{err}");
    let t = Array::from_slice(&[1.0f32, 0.0, 2.0, 0.0], &[2, 2]).unwrap();
    let err = linalg::tri_inv(&t, false)
        .unwrap()
        .eval()
        .unwrap_err()
        .to_string();
    assert!(err.contains("diagonal entry 2"), "{err}");
}

// ---- QR / SVD -------------------------------------------------------------

#[test]
fn qr_matches_mlx_values_and_reconstructs() {
    for name in ["qr_tall", "qr_wide", "qr_batch", "qr_f64"] {
        let a = fx(&format!("{name}_in"));
        let (q, r) = linalg::qr(&a).unwrap();
        let tol = if a.dtype() == Dtype::Float64 {
            1e-12
        } else {
            2e-5
        };
        // Same reflectors as LAPACK, so the signs agree too.
        assert_close(&q, &fx(&format!("{name}_q")), tol, tol);
        assert_close(&r, &fx(&format!("{name}_r")), tol, tol);
        let (b, m, n) = dims(&a);
        let k = m.min(n);
        let (qv, rv, av) = (as_f64(&q), as_f64(&r), as_f64(&a));
        for i in 0..b {
            let qr = mm(&qv[i * m * k..], &rv[i * k * n..], m, k, n);
            assert_vec_close(&qr, &av[i * m * n..(i + 1) * m * n], tol * 10.0, name);
        }
    }
}

/// U diag(S) Vt, with U m×m and Vt n×n.
fn usv(u: &[f64], s: &[f64], vt: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut us = vec![0.0; m * n];
    for i in 0..m {
        for (j, sj) in s.iter().enumerate() {
            us[i * n + j] = u[i * m + j] * sj;
        }
    }
    mm(&us, vt, m, n, n)
}

fn assert_orthonormal(q: &[f64], n: usize, tol: f64, what: &str) {
    let qt: Vec<f64> = (0..n * n).map(|i| q[(i % n) * n + i / n]).collect();
    let eye: Vec<f64> = (0..n * n).map(|i| (i / n == i % n) as u8 as f64).collect();
    assert_vec_close(&mm(&qt, q, n, n, n), &eye, tol, what);
}

#[test]
fn svd_values_match_mlx_and_vectors_reconstruct() {
    for name in ["svd_tall", "svd_wide", "svd_batch", "svd_f64"] {
        let a = fx(&format!("{name}_in"));
        let out = linalg::svd(&a, true).unwrap();
        let tol = if a.dtype() == Dtype::Float64 {
            1e-12
        } else {
            2e-5
        };
        assert_close(&out[1], &fx(&format!("{name}_s")), tol, tol);
        let want_u = fx(&format!("{name}_u"));
        let want_vt = fx(&format!("{name}_vt"));
        assert_eq!(out[0].shape(), want_u.shape());
        assert_eq!(out[2].shape(), want_vt.shape());
        let (b, m, n) = dims(&a);
        let k = m.min(n);
        let (u, s, vt, av) = (
            as_f64(&out[0]),
            as_f64(&out[1]),
            as_f64(&out[2]),
            as_f64(&a),
        );
        for i in 0..b {
            let (u, vt) = (
                &u[i * m * m..(i + 1) * m * m],
                &vt[i * n * n..(i + 1) * n * n],
            );
            let rec = usv(u, &s[i * k..(i + 1) * k], vt, m, n);
            assert_vec_close(&rec, &av[i * m * n..(i + 1) * m * n], tol * 10.0, name);
            assert_orthonormal(u, m, tol * 10.0, "U");
            assert_orthonormal(vt, n, tol * 10.0, "Vt");
        }
    }
    let s = linalg::svd(&fx("svd_rank1_in"), false).unwrap();
    assert_eq!(s.len(), 1);
    assert_close(&s[0], &fx("svd_rank1_s"), 1e-5, 1e-5);
}

// ---- Eigh / Eig -----------------------------------------------------------

#[test]
fn eigh_values_match_mlx_and_vectors_reconstruct() {
    for tag in ["f32", "f64"] {
        let a = fx(&format!("eigh_{tag}_in"));
        let tol = if tag == "f32" { 2e-5 } else { 1e-12 };
        for uplo in ["L", "U"] {
            let (w, v) = linalg::eigh(&a, uplo).unwrap();
            assert_close(&w, &fx(&format!("eigh_{tag}_{uplo}_w")), tol, tol);
            assert_close(&linalg::eigvalsh(&a, uplo).unwrap(), &w, 0.0, 0.0);
            let (b, n, _) = dims(&a);
            let (av, wv, vv) = (as_f64(&a), as_f64(&w), as_f64(&v));
            for i in 0..b {
                // The symmetric matrix the chosen triangle describes.
                let m = &av[i * n * n..(i + 1) * n * n];
                let s: Vec<f64> = (0..n * n)
                    .map(|p| {
                        let (r, c) = (p / n, p % n);
                        let lower = (r >= c) == (uplo == "L");
                        if lower {
                            m[p]
                        } else {
                            m[c * n + r]
                        }
                    })
                    .collect();
                let vm = &vv[i * n * n..(i + 1) * n * n];
                let sv = mm(&s, vm, n, n, n);
                for r in 0..n {
                    for c in 0..n {
                        let want = vm[r * n + c] * wv[i * n + c];
                        assert!((sv[r * n + c] - want).abs() < tol * 20.0, "A v = w v");
                    }
                }
                assert_orthonormal(vm, n, tol * 10.0, "eigh vectors");
            }
        }
    }
}

fn complex_vec(a: &Array) -> Vec<Complex64> {
    assert_eq!(a.dtype(), Dtype::Complex64);
    a.to_vec::<Complex64>().unwrap()
}

/// Eigenvalues sorted by (real, imaginary), rounded to absorb noise.
fn sorted(mut w: Vec<Complex64>) -> Vec<Complex64> {
    let key = |z: &Complex64| ((z.re * 1e3).round() as i64, (z.im * 1e3).round() as i64);
    w.sort_by_key(key);
    w
}

#[test]
fn eig_values_match_mlx_sorted_and_vectors_satisfy_av_eq_lv() {
    for tag in ["f32", "f64"] {
        let a = fx(&format!("eig_{tag}_in"));
        let (w, v) = linalg::eig(&a).unwrap();
        assert_eq!(w.shape(), &[2, 5]);
        assert_eq!(v.shape(), &[2, 5, 5]);
        let (wg, wm) = (complex_vec(&w), complex_vec(&fx(&format!("eig_{tag}_w"))));
        let (vg, av) = (complex_vec(&v), as_f64(&a));
        let n = 5;
        for i in 0..2 {
            let (g, m) = (
                sorted(wg[i * n..(i + 1) * n].to_vec()),
                sorted(wm[i * n..(i + 1) * n].to_vec()),
            );
            for (x, y) in g.iter().zip(&m) {
                assert!((x - y).norm() < 1e-4, "{tag}: eigenvalue {x} vs MLX {y}");
                if y.im == 0.0 {
                    assert_eq!(x.im, 0.0, "a real eigenvalue stays real");
                }
            }
            for c in 0..n {
                let lam = wg[i * n + c];
                let col: Vec<Complex64> = (0..n).map(|r| vg[i * n * n + r * n + c]).collect();
                let norm: f32 = col.iter().map(|z| z.norm_sqr()).sum::<f32>().sqrt();
                assert!((norm - 1.0).abs() < 1e-5, "unit eigenvectors");
                for r in 0..n {
                    let av_r: Complex64 = (0..n)
                        .map(|k| col[k] * av[i * n * n + r * n + k] as f32)
                        .sum();
                    assert!((av_r - lam * col[r]).norm() < 1e-4, "{tag}: A v = λ v");
                }
            }
        }
        let vals = linalg::eigvals(&a).unwrap();
        assert_eq!(vals.dtype(), Dtype::Complex64);
        assert_eq!(complex_vec(&vals), wg);
    }
}

#[test]
fn eig_of_a_rotation_is_plus_minus_i() {
    let a = Array::from_slice(&[0.0f32, 1.0, -1.0, 0.0], &[2, 2]).unwrap();
    let w = sorted(complex_vec(&linalg::eigvals(&a).unwrap()));
    assert!((w[0] - Complex64::new(0.0, -1.0)).norm() < 1e-6);
    assert!((w[1] - Complex64::new(0.0, 1.0)).norm() < 1e-6);
}

// ---- SearchSorted / GatherMM / BlockMaskedMM / Hadamard ---------------------

#[test]
fn searchsorted_matches_mlx() {
    let (seq, vals) = (fx("ss_seq"), fx("ss_vals"));
    for side in ["left", "right"] {
        let got = ops::searchsorted(&seq, &vals, side).unwrap();
        assert_bits_eq(&got, &fx(&format!("ss_{side}")));
        // Transposed values: same answers, transposed.
        let t = ops::transpose(&vals, &[1, 0]).unwrap();
        let got_t = ops::searchsorted(&seq, &t, side).unwrap();
        let want_t = ops::transpose(&fx(&format!("ss_{side}")), &[1, 0]).unwrap();
        assert_eq!(
            got_t.to_vec::<u32>().unwrap(),
            ops::copy(&want_t).unwrap().to_vec::<u32>().unwrap()
        );
    }
    let (iseq, ivals) = (fx("ss_iseq"), fx("ss_ivals"));
    assert_bits_eq(
        &ops::searchsorted(&iseq, &ivals, "left").unwrap(),
        &fx("ss_int_left"),
    );
    assert_bits_eq(
        &ops::searchsorted(&iseq, &ivals, "right").unwrap(),
        &fx("ss_int_right"),
    );
}

#[test]
fn gather_mm_matches_mlx() {
    let (a, b) = (fx("gmm_a"), fx("gmm_b"));
    let (li, ri) = (fx("gmm_li"), fx("gmm_ri"));
    let got = ops::gather_mm(&a, &b, Some(&li), Some(&ri), false).unwrap();
    assert_close(&got, &fx("gmm_out"), 1e-5, 1e-6);
    let a3 = ops::slice(&a, &[0, 0, 0], &[3, 2, 3], &[1, 1, 1]).unwrap();
    let r0 = ops::slice(&ri, &[0, 0], &[1, 3], &[1, 1]).unwrap();
    let r0 = ops::reshape(&r0, &[3]).unwrap();
    let got = ops::gather_mm(&a3, &b, None, Some(&r0), false).unwrap();
    assert_close(&got, &fx("gmm_rhs_only"), 1e-5, 1e-6);
    // Transposed operand (a strided view) gives the same product.
    let bt = ops::swapaxes(
        &ops::copy(&ops::swapaxes(&b, -1, -2).unwrap()).unwrap(),
        -1,
        -2,
    )
    .unwrap();
    let got = ops::gather_mm(&a, &bt, Some(&li), Some(&ri), false).unwrap();
    assert_close(&got, &fx("gmm_out"), 1e-5, 1e-6);
}

#[test]
fn gather_mm_index_out_of_range_is_an_error() {
    let (a, b) = (fx("gmm_a"), fx("gmm_b"));
    let bad = Array::from_slice(&[7u32], &[1]).unwrap();
    let ok = Array::from_slice(&[0u32], &[1]).unwrap();
    let err = ops::gather_mm(&a, &b, Some(&bad), Some(&ok), false)
        .unwrap()
        .eval()
        .unwrap_err()
        .to_string();
    assert!(err.contains("index 7 is out of range"), "{err}");
}

#[test]
fn block_masked_mm_matches_mlx() {
    let (a, b) = (fx("bmm_a"), fx("bmm_b"));
    let (mo, ml, mr, mrb) = (fx("bmm_mo"), fx("bmm_ml"), fx("bmm_mr"), fx("bmm_mr_bool"));
    let got = ops::block_masked_mm(&a, &b, 32, Some(&mo), None, None).unwrap();
    assert_close(&got, &fx("bmm_out_only"), 1e-5, 1e-5);
    let got = ops::block_masked_mm(&a, &b, 32, None, Some(&ml), Some(&mrb)).unwrap();
    assert_close(&got, &fx("bmm_ops_only"), 1e-5, 1e-5);
    let got = ops::block_masked_mm(&a, &b, 32, Some(&mo), Some(&ml), Some(&mr)).unwrap();
    assert_close(&got, &fx("bmm_all"), 1e-5, 1e-5);
}

#[test]
fn hadamard_matches_mlx_bit_for_bit() {
    let x = fx("had_x");
    assert_bits_eq(&ops::hadamard_transform(&x, None).unwrap(), &fx("had_f32"));
    assert_bits_eq(
        &ops::hadamard_transform(&x, Some(0.5)).unwrap(),
        &fx("had_f32_scale"),
    );
    let h = ops::hadamard_transform(&ops::astype(&x, Dtype::Float16).unwrap(), None).unwrap();
    assert_eq!(h.dtype(), Dtype::Float16);
    assert_bits_eq(&h, &fx("had_f16"));
    let h = ops::hadamard_transform(&ops::astype(&x, Dtype::Bfloat16).unwrap(), None).unwrap();
    assert_eq!(h.dtype(), Dtype::Bfloat16);
    let want = ops::astype(&fx("had_bf16"), Dtype::Bfloat16).unwrap();
    assert_bits_eq(&h, &want);
    let hi = ops::hadamard_transform(&fx("had_int_x"), None).unwrap();
    assert_eq!(hi.dtype(), Dtype::Float32);
    assert_bits_eq(&hi, &fx("had_int"));
    // A transposed input is read through its strides.
    let xt = ops::transpose(
        &ops::copy(&ops::transpose(&x, &[1, 0]).unwrap()).unwrap(),
        &[1, 0],
    )
    .unwrap();
    assert_bits_eq(&ops::hadamard_transform(&xt, None).unwrap(), &fx("had_f32"));
}

// ---- Norm VJPs --------------------------------------------------------------

#[test]
fn rms_norm_vjp_matches_mlx_gradient() {
    use mlx::primitives::norm_vjp::RMSNormVJP;
    let (x, w, g) = (fx("nv_x"), fx("nv_w"), fx("nv_g"));
    let out = Array::from_primitive_multi(
        Box::new(RMSNormVJP { eps: 1e-5 }),
        vec![x.clone(), w, g.clone()],
    )
    .unwrap();
    assert_close(&out[0], &fx("rms_dx"), 1e-5, 1e-5);
    assert_close(&out[1], &fx("rms_dw"), 1e-5, 1e-5);
    let one = Array::scalar(1.0f32);
    let out =
        Array::from_primitive_multi(Box::new(RMSNormVJP { eps: 1e-5 }), vec![x, one, g]).unwrap();
    assert_close(&out[0], &fx("rms_now_dx"), 1e-5, 1e-5);
    assert_eq!(out[1].shape(), &[] as &[i32]);
    assert_eq!(out[1].item::<f32>().unwrap(), 0.0);
}

#[test]
fn layer_norm_vjp_matches_mlx_gradient() {
    use mlx::primitives::norm_vjp::LayerNormVJP;
    let (x, w, b, g) = (fx("nv_x"), fx("nv_w"), fx("nv_b"), fx("nv_g"));
    let out = Array::from_primitive_multi(Box::new(LayerNormVJP { eps: 1e-5 }), vec![x, w, b, g])
        .unwrap();
    assert_eq!(out.len(), 3);
    assert_close(&out[0], &fx("ln_dx"), 1e-4, 1e-5);
    assert_close(&out[1], &fx("ln_dw"), 1e-5, 1e-5);
    assert_close(&out[2], &fx("ln_db"), 1e-5, 1e-5);
}

// ---- Files exported by MLX ----------------------------------------------------

fn mlx_file(name: &str) -> mlx::ImportedFunction {
    let f = mlx::import_function(common::fixture(&format!("factorizations/{name}.mlxfn"))).unwrap();
    assert_eq!(f.format(), Format::Mlx);
    f
}

#[test]
fn mlx_exported_searchsorted_and_gather_mm_run() {
    let out = mlx_file("searchsorted")
        .call(&[fx("ss_seq"), fx("ss_vals")])
        .unwrap();
    assert_bits_eq(&out[0], &fx("ss_left"));
    assert_bits_eq(&out[1], &fx("ss_right"));
    let out = mlx_file("gather_mm")
        .call(&[fx("gmm_a"), fx("gmm_b"), fx("gmm_li"), fx("gmm_ri")])
        .unwrap();
    assert_close(&out[0], &fx("gmm_out"), 1e-5, 1e-6);
}

#[test]
fn mlx_exported_svd_and_cholesky_run() {
    let a = ops::slice(&fx("svd_tall_in"), &[0, 0], &[4, 3], &[1, 1]).unwrap();
    let out = mlx_file("svd").call(std::slice::from_ref(&a)).unwrap();
    assert_eq!(out.len(), 3);
    let (u, s, vt) = (as_f64(&out[0]), as_f64(&out[1]), as_f64(&out[2]));
    assert_vec_close(&usv(&u, &s, &vt, 4, 3), &as_f64(&a), 1e-5, "svd file");
    let chol_in = ops::slice(&fx("chol_batch_in"), &[0, 0, 0], &[1, 3, 3], &[1, 1, 1]).unwrap();
    let chol_in = ops::reshape(&chol_in, &[3, 3]).unwrap();
    let out = mlx_file("cholesky")
        .call(std::slice::from_ref(&chol_in))
        .unwrap();
    let want = ops::reshape(
        &ops::slice(&fx("chol_batch_out"), &[0, 0, 0], &[1, 3, 3], &[1, 1, 1]).unwrap(),
        &[3, 3],
    )
    .unwrap();
    assert_close(&out[0], &want, 1e-5, 1e-6);
    assert_close(
        &out[1],
        &ops::transpose(&want, &[1, 0]).unwrap(),
        1e-5,
        1e-6,
    );
}

#[test]
fn mlx_exported_qr_eigh_inv_eigvals_run() {
    let a = ops::reshape(
        &ops::slice(&fx("chol_batch_in"), &[1, 0, 0], &[2, 3, 3], &[1, 1, 1]).unwrap(),
        &[3, 3],
    )
    .unwrap();
    let out = mlx_file("decomp").call(std::slice::from_ref(&a)).unwrap();
    assert_eq!(out.len(), 6);
    let (q, r) = linalg::qr(&a).unwrap();
    assert_close(&out[0], &q, 1e-6, 1e-6);
    assert_close(&out[1], &r, 1e-6, 1e-6);
    let (w, _) = linalg::eigh(&a, "L").unwrap();
    assert_close(&out[2], &w, 1e-6, 1e-6);
    assert_close(&out[4], &linalg::inv(&a).unwrap(), 1e-6, 1e-6);
    assert_eq!(out[5].dtype(), Dtype::Complex64);
}

// ---- Export round trip of every new primitive ---------------------------------

fn all_ops(args: &[Array]) -> mlx::Result<Vec<Array>> {
    let (sq, seq, vals, a, b) = (&args[0], &args[1], &args[2], &args[3], &args[4]);
    let mut out = vec![
        linalg::cholesky(sq, false)?,
        linalg::inv(sq)?,
        linalg::tri_inv(sq, true)?,
        linalg::eigvalsh(sq, "U")?,
        ops::searchsorted(seq, vals, "right")?,
        ops::hadamard_transform(b, Some(0.25))?,
    ];
    let (q, r) = linalg::qr(sq)?;
    out.extend([q, r]);
    out.extend(linalg::svd(sq, true)?);
    let (w, v) = linalg::eigh(sq, "L")?;
    out.extend([w, v]);
    let idx = Array::from_slice(&[1u32, 0], &[2])?;
    out.push(ops::gather_mm(a, b, Some(&idx), Some(&idx), true)?);
    let mask = Array::from_slice(&[true, false, true, true], &[2, 2])?;
    out.push(ops::block_masked_mm(a, b, 32, Some(&mask), None, None)?);
    out.push(ops::real(&linalg::eigvals(sq)?)?);
    Ok(out)
}

#[test]
fn round_trip_in_both_formats() {
    let sq = ops::add(&fx("chol_f32_in"), &Array::scalar(0.0f32)).unwrap();
    let a = ops::reshape(
        &ops::arange(0.0, 2.0 * 40.0 * 4.0, 1.0, Dtype::Float32).unwrap(),
        &[2, 40, 4],
    )
    .unwrap();
    let a = ops::multiply(&a, &Array::scalar(0.01f32)).unwrap();
    let b = ops::reshape(
        &ops::arange(0.0, 2.0 * 4.0 * 64.0, 1.0, Dtype::Float32).unwrap(),
        &[2, 4, 64],
    )
    .unwrap();
    let b = ops::multiply(&b, &Array::scalar(-0.02f32)).unwrap();
    let args = vec![sq, fx("ss_seq"), fx("ss_vals"), a, b];
    mlx::eval(&args).unwrap();
    let want = all_ops(&args).unwrap();
    for format in [Format::Mlx, Format::Native] {
        let path = std::env::temp_dir().join(format!(
            "mlx-factorizations-{}-{format:?}.mlxfn",
            std::process::id()
        ));
        let opts = mlx::ExportOptions {
            format,
            ..Default::default()
        };
        mlx::export_function(&path, all_ops, &args, &opts).unwrap();
        let got = mlx::import_function(&path).unwrap().call(&args).unwrap();
        assert_eq!(got.len(), want.len());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.dtype(), w.dtype(), "output {k} ({format:?})");
            assert_eq!(as_f64(g), as_f64(w), "output {k} ({format:?})");
        }
        let _ = std::fs::remove_file(&path);
    }
}

// ---- CustomKernel ---------------------------------------------------------------

fn kernel() -> mlx::primitives::custom_kernel::CustomKernel {
    use mlx::primitives::custom_kernel::{CustomKernel, ScalarArg};
    CustomKernel {
        name: "myexp".into(),
        source: "uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);".into(),
        grid: (4, 1, 1),
        threadgroup: (256, 1, 1),
        shape_infos: vec![(false, false, false)],
        ensure_row_contiguous: true,
        init_value: Some(0.5),
        scalar_arguments: vec![
            ScalarArg::Int(3),
            ScalarArg::Float(1.5),
            ScalarArg::Bool(true),
        ],
        is_precompiled: false,
        shared_memory: 0,
        compile_options: 2,
        output_shapes: vec![vec![4]],
        output_dtypes: vec![Dtype::Float32],
    }
}

#[test]
fn custom_kernel_state_round_trips_in_both_codecs() {
    use mlx::primitive::{lookup, MlxReader, MlxWriter};
    use mlx::PrimitiveState;
    let k = kernel();
    let entry = lookup("CustomKernel").unwrap();
    let back = (entry.decode_cbor)(&k.encode_cbor()).unwrap();
    assert!(back.is_equivalent(&k));
    let mut w = MlxWriter::new();
    k.write_mlx(&mut w);
    let bytes = w.bytes;
    // name (8+5) source (8+len) grid 12 threadgroup 12 shape_infos 8+3 bool 1
    // init 1+4 scalars 8+(8+8+5) precompiled 1 shared 4 options 4
    assert_eq!(
        bytes.len(),
        13 + 8 + k.source.len() + 12 + 12 + 11 + 1 + 5 + 29 + 1 + 4 + 4
    );
    let mut r = MlxReader::new(&bytes, "test");
    let back = (entry.decode_mlx)(&mut r).unwrap();
    assert_eq!(r.remaining(), 0);
    let mut m = k.clone();
    m.output_shapes.clear();
    m.output_dtypes.clear();
    assert!(back.is_equivalent(&m), "{back:?}");
}

#[test]
fn custom_kernel_in_a_file_imports_and_eval_names_the_kernel() {
    let f = |args: &[Array]| -> mlx::Result<Vec<Array>> {
        let x = ops::exp(&args[0])?;
        let mut k = mlx::Array::from_primitive_multi(Box::new(kernel()), vec![x])?;
        Ok(vec![k.remove(0)])
    };
    let x = Array::from_slice(&[0.0f32, 1.0, 2.0, 3.0], &[4]).unwrap();
    for format in [Format::Mlx, Format::Native] {
        let path = std::env::temp_dir().join(format!(
            "mlx-factorizations-kernel-{}-{format:?}.mlxfn",
            std::process::id()
        ));
        let opts = mlx::ExportOptions {
            format,
            ..Default::default()
        };
        mlx::export_function(&path, f, std::slice::from_ref(&x), &opts).unwrap();
        let g = mlx::import_function(&path).unwrap();
        let out = g.call(std::slice::from_ref(&x)).unwrap();
        assert_eq!(out[0].shape(), &[4]);
        let err = out[0].eval().unwrap_err().to_string();
        assert!(err.contains("myexp") && err.contains("CPU"), "{err}");
        let _ = std::fs::remove_file(&path);
    }
}

// ---- Errors -------------------------------------------------------------------

fn err_of(r: mlx::Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn bad_inputs_are_errors_with_clear_messages() {
    let rect = Array::from_slice(&[1.0f32; 6], &[2, 3]).unwrap();
    let ints = Array::from_slice(&[1i32; 4], &[2, 2]).unwrap();
    let halfs = ops::astype(
        &Array::from_slice(&[1.0f32; 4], &[2, 2]).unwrap(),
        Dtype::Float16,
    )
    .unwrap();
    let vec3 = Array::from_slice(&[1.0f32; 3], &[3]).unwrap();
    let e = err_of(linalg::cholesky(&rect, false));
    assert!(e.contains("square") && e.contains("[2, 3]"), "{e}");
    assert!(err_of(linalg::inv(&rect)).contains("square"));
    assert!(err_of(linalg::eigh(&rect, "L")).contains("square"));
    assert!(err_of(linalg::eig(&rect)).contains("square"));
    let e = err_of(linalg::qr(&ints));
    assert!(
        e.contains("float32 or float64") && e.contains("int32"),
        "{e}"
    );
    assert!(err_of(linalg::svd(&halfs, true)).contains("float16"));
    assert!(err_of(linalg::cholesky(&vec3, false)).contains("at least 2 dimensions"));
    assert!(err_of(linalg::eigh(&halfs, "X")).contains("float16"));
    let sym = Array::from_slice(&[1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    assert!(err_of(linalg::eigh(&sym, "X")).contains("UPLO"));
    // searchsorted
    assert!(err_of(ops::searchsorted(&rect, &vec3, "left")).contains("1-D"));
    assert!(err_of(ops::searchsorted(&vec3, &vec3, "middle")).contains("side"));
    // gather_mm
    let a = Array::from_slice(&[1.0f32; 12], &[2, 2, 3]).unwrap();
    let fidx = Array::from_slice(&[0.0f32], &[1]).unwrap();
    let b32 = Array::from_slice(&[1.0f32; 12], &[2, 3, 2]).unwrap();
    assert!(err_of(ops::gather_mm(&a, &b32, Some(&fidx), None, false)).contains("integral"));
    let e = err_of(ops::gather_mm(&a, &a, Some(&ints), None, false));
    assert!(e.contains("[2, 2, 3]"), "{e}");
    // block_masked_mm: batch mismatch, bad block size
    let b = Array::from_slice(&[1.0f32; 27], &[3, 3, 3]).unwrap();
    let m = Array::from_slice(&[true], &[1, 1]).unwrap();
    let e = err_of(ops::block_masked_mm(&a, &b, 32, Some(&m), None, None));
    assert!(e.contains("[2]") && e.contains("[3]"), "{e}");
    assert!(err_of(ops::block_masked_mm(&a, &a, 16, Some(&m), None, None)).contains("block sizes"));
    // hadamard: a size MLX builds from its 12/20/28 tables
    let x12 = Array::from_slice(&[1.0f32; 12], &[12]).unwrap();
    assert!(err_of(ops::hadamard_transform(&x12, None)).contains("power-of-two"));
}

// ---- Properties ----------------------------------------------------------------

mod props {
    use super::*;
    use proptest::prelude::*;

    fn matrix(max: usize) -> impl Strategy<Value = (usize, usize, Vec<f64>)> {
        (1..=max, 1..=max).prop_flat_map(|(m, n)| {
            proptest::collection::vec(-3.0f64..3.0, m * n).prop_map(move |v| (m, n, v))
        })
    }

    fn arr(v: &[f64], shape: &[i32]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn qr_and_svd_reconstruct((m, n, v) in matrix(6)) {
            let a = arr(&v, &[m as i32, n as i32]);
            let k = m.min(n);
            let (q, r) = linalg::qr(&a).unwrap();
            assert_vec_close(&mm(&as_f64(&q), &as_f64(&r), m, k, n), &v, 1e-10, "QR = A");
            let out = linalg::svd(&a, true).unwrap();
            let (u, s, vt) = (as_f64(&out[0]), as_f64(&out[1]), as_f64(&out[2]));
            assert_vec_close(&usv(&u, &s, &vt, m, n), &v, 1e-10, "U S Vt = A");
            assert_orthonormal(&u, m, 1e-10, "U");
            assert_orthonormal(&vt, n, 1e-10, "Vt");
            prop_assert!(s.windows(2).all(|w| w[0] >= w[1]) && s.iter().all(|&x| x >= 0.0));
        }

        #[test]
        fn cholesky_inv_and_eigh_reconstruct((n, _, v) in matrix(6).prop_filter("square", |(m, n, _)| m == n)) {
            // S = X Xᵀ + n I is symmetric positive definite.
            let xt: Vec<f64> = (0..n * n).map(|i| v[(i % n) * n + i / n]).collect();
            let mut s = mm(&v, &xt, n, n, n);
            for i in 0..n { s[i * n + i] += n as f64; }
            let a = arr(&s, &[n as i32, n as i32]);
            let l = as_f64(&linalg::cholesky(&a, false).unwrap());
            let lt: Vec<f64> = (0..n * n).map(|i| l[(i % n) * n + i / n]).collect();
            assert_vec_close(&mm(&l, &lt, n, n, n), &s, 1e-10, "L Lᵀ = A");
            let inv = as_f64(&linalg::inv(&a).unwrap());
            let eye: Vec<f64> = (0..n * n).map(|i| (i / n == i % n) as u8 as f64).collect();
            assert_vec_close(&mm(&s, &inv, n, n, n), &eye, 1e-10, "A A⁻¹ = I");
            let (w, vec) = linalg::eigh(&a, "L").unwrap();
            let (w, vec) = (as_f64(&w), as_f64(&vec));
            let av = mm(&s, &vec, n, n, n);
            for r in 0..n { for c in 0..n {
                prop_assert!((av[r * n + c] - vec[r * n + c] * w[c]).abs() < 1e-9);
            } }
            prop_assert!(w.windows(2).all(|p| p[0] <= p[1]));
        }

        #[test]
        fn eig_satisfies_av_eq_lv((n, _, v) in matrix(6).prop_filter("square", |(m, n, _)| m == n)) {
            let a = arr(&v, &[n as i32, n as i32]);
            let (w, vec) = linalg::eig(&a).unwrap();
            let (w, vec) = (w.to_vec::<Complex64>().unwrap(), vec.to_vec::<Complex64>().unwrap());
            for c in 0..n {
                for r in 0..n {
                    let av: Complex64 = (0..n).map(|k| vec[k * n + c] * v[r * n + k] as f32).sum();
                    prop_assert!((av - w[c] * vec[r * n + c]).norm() < 1e-4, "A v = λ v");
                }
            }
        }
    }
}
