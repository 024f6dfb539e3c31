//! `mlx::linalg`: matrix factorisations mirroring `mx.linalg` (cholesky,
//! inv, tri_inv, cholesky_inv, qr, svd, eigh, eigvalsh, eig, eigvals).
//!
//! Each builds one primitive (`Cholesky`, `Inverse`, `QRF`, `SVD`, `Eigh`,
//! `Eig`) on the last two axes, as MLX does, so exported graphs match MLX's.
//! float32 and float64 inputs; complex64 (which MLX takes for svd, eigh and
//! eig) is not supported here.
//!
//! ```
//! use mlx::{linalg, Array};
//! let a = Array::from_slice(&[4.0f32, 2.0, 2.0, 3.0], &[2, 2])?;
//! let l = linalg::cholesky(&a, false)?;
//! let v = l.to_vec::<f32>()?;
//! assert!((v[0] - 2.0).abs() < 1e-6 && v[1] == 0.0);
//! # Ok::<(), mlx::Error>(())
//! ```

use crate::ops::{matmul, swapaxes};
use crate::primitives::factor::{Cholesky, Eig, Eigh, Inverse, QRF, SVD};
use crate::{Array, Dtype, Error, Result};

/// Checks dtype (float32/float64, or also complex64) and rank (≥ 2), and
/// squareness when asked, with `op`'s name in the message.
fn check(op: &str, a: &Array, square: bool, complex_ok: bool) -> Result<()> {
    let d = a.dtype();
    let ok = d == Dtype::Float32 || d == Dtype::Float64 || (complex_ok && d == Dtype::Complex64);
    if !ok {
        let want = if complex_ok {
            "float32, float64 or complex64"
        } else {
            "float32 or float64"
        };
        return Err(Error::invalid(
            op,
            format!("arrays must have type {want}, found {d}"),
        ));
    }
    if d == Dtype::Complex64 {
        return Err(Error::invalid(
            op,
            "complex64 input is not supported here yet (float32 and float64 are)",
        ));
    }
    if a.ndim() < 2 {
        return Err(Error::invalid(
            op,
            format!(
                "arrays must have at least 2 dimensions, found shape {:?}",
                a.shape()
            ),
        ));
    }
    let n = a.ndim();
    if square && a.shape()[n - 1] != a.shape()[n - 2] {
        return Err(Error::invalid(
            op,
            format!(
                "only defined for square matrices, found shape {:?}",
                a.shape()
            ),
        ));
    }
    Ok(())
}

/// Cholesky factor L (A = L Lᵀ) of a symmetric positive definite matrix,
/// read from the lower triangle; with `upper`, U (A = Uᵀ U) from the upper
/// one. As in MLX, a matrix that is not positive definite gives a partial
/// factor, not an error.
pub fn cholesky(a: &Array, upper: bool) -> Result<Array> {
    check("linalg::cholesky", a, true, false)?;
    Array::from_primitive(Cholesky { upper }, vec![a.clone()])
}

/// Inverse of square matrices (error on an exactly singular one).
pub fn inv(a: &Array) -> Result<Array> {
    check("linalg::inv", a, true, false)?;
    Array::from_primitive(
        Inverse {
            tri: false,
            upper: true,
        },
        vec![a.clone()],
    )
}

/// Inverse of triangular matrices (lower, or upper when `upper`); the
/// other triangle of the input is ignored.
pub fn tri_inv(a: &Array, upper: bool) -> Result<Array> {
    check("linalg::tri_inv", a, true, false)?;
    Array::from_primitive(Inverse { tri: true, upper }, vec![a.clone()])
}

/// Inverse of A from its Cholesky factor `l` (lower, or upper when `upper`).
pub fn cholesky_inv(l: &Array, upper: bool) -> Result<Array> {
    check("linalg::cholesky_inv", l, true, false)?;
    let li = tri_inv(l, upper)?;
    let lt = swapaxes(&li, -1, -2)?;
    if upper {
        matmul(&li, &lt)
    } else {
        matmul(&lt, &li)
    }
}

/// Reduced QR factorisation: Q (…, m, k) with orthonormal columns and
/// upper triangular R (…, k, n), k = min(m, n), A = Q R. Signs follow
/// LAPACK (R's diagonal is negative where the column's leading entry is
/// positive).
pub fn qr(a: &Array) -> Result<(Array, Array)> {
    check("linalg::qr", a, false, false)?;
    let mut out = Array::from_primitive_multi(Box::new(QRF {}), vec![a.clone()])?;
    let r = out.pop().expect("QRF has two outputs");
    let q = out.pop().expect("QRF has two outputs");
    Ok((q, r))
}

/// Singular value decomposition: `[U, S, Vt]` with A = U diag(S) Vt, U
/// (…, m, m), S (…, min(m, n)) descending, Vt (…, n, n); or `[S]` alone
/// when `compute_uv` is false.
pub fn svd(a: &Array, compute_uv: bool) -> Result<Vec<Array>> {
    check("linalg::svd", a, false, true)?;
    Array::from_primitive_multi(Box::new(SVD { compute_uv }), vec![a.clone()])
}

/// The `uplo` argument checked: "L" or "U".
fn check_uplo(op: &str, uplo: &str) -> Result<()> {
    if uplo != "L" && uplo != "U" {
        return Err(Error::invalid(
            op,
            format!("UPLO must be \"L\" or \"U\", found {uplo:?}"),
        ));
    }
    Ok(())
}

/// Eigenvalues (ascending) and eigenvectors (columns) of symmetric
/// matrices, read from the `uplo` ("L" or "U") triangle.
pub fn eigh(a: &Array, uplo: &str) -> Result<(Array, Array)> {
    check("linalg::eigh", a, true, true)?;
    check_uplo("linalg::eigh", uplo)?;
    let p = Eigh {
        uplo: uplo.to_string(),
        compute_eigenvectors: true,
    };
    let mut out = Array::from_primitive_multi(Box::new(p), vec![a.clone()])?;
    let v = out.pop().expect("Eigh has two outputs");
    let w = out.pop().expect("Eigh has two outputs");
    Ok((w, v))
}

/// Eigenvalues (ascending) of symmetric matrices.
pub fn eigvalsh(a: &Array, uplo: &str) -> Result<Array> {
    check("linalg::eigvalsh", a, true, true)?;
    check_uplo("linalg::eigvalsh", uplo)?;
    let p = Eigh {
        uplo: uplo.to_string(),
        compute_eigenvectors: false,
    };
    Array::from_primitive(p, vec![a.clone()])
}

/// Eigenvalues and eigenvectors (columns, unit norm) of general square
/// matrices, both complex64. The order of the eigenvalues is not
/// specified (it may differ from MLX's, which is LAPACK's).
pub fn eig(a: &Array) -> Result<(Array, Array)> {
    check("linalg::eig", a, true, true)?;
    let p = Eig {
        compute_eigenvectors: true,
    };
    let mut out = Array::from_primitive_multi(Box::new(p), vec![a.clone()])?;
    let v = out.pop().expect("Eig has two outputs");
    let w = out.pop().expect("Eig has two outputs");
    Ok((w, v))
}

/// Eigenvalues (complex64) of general square matrices.
pub fn eigvals(a: &Array) -> Result<Array> {
    check("linalg::eigvals", a, true, true)?;
    Array::from_primitive(
        Eig {
            compute_eigenvectors: false,
        },
        vec![a.clone()],
    )
}
