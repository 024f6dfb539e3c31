//! Matrix factorisations with MLX's names and state: [`Cholesky`],
//! [`Inverse`] (general or triangular), [`QRF`], [`SVD`], [`Eigh`] and
//! [`Eig`]. They work on the last two axes, batch axes first, float32 and
//! float64 (complex64 input, which MLX also takes for SVD/Eigh/Eig, is an
//! error here). Kernels: `backend::cpu::factor`, in f64.

use super::expect_inputs;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::factor;
use crate::primitive::Spec;
use crate::{Array, Buffer, Complex64, Data, Dtype, Error, Primitive, Result};

/// Cholesky factor of a symmetric positive definite matrix, read from its
/// lower triangle (upper when `upper`), returned lower (upper).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Cholesky {
    #[state]
    pub upper: bool,
}

/// Matrix inverse; with `tri` the input is triangular (`upper` says which
/// triangle is read) and the result keeps that shape.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Inverse {
    #[state]
    pub tri: bool,
    #[state]
    pub upper: bool,
}

/// Reduced QR factorisation: outputs Q (…, m, k) and R (…, k, n), k = min(m, n).
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct QRF {}

/// Singular value decomposition: (U, S, Vᵀ) with full U and Vᵀ, or S alone.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct SVD {
    #[state]
    pub compute_uv: bool,
}

/// Eigenvalues (ascending) and optionally eigenvectors (columns) of a
/// symmetric matrix read from the `uplo` ("L" or "U") triangle.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Eigh {
    #[state]
    pub uplo: String,
    #[state]
    pub compute_eigenvectors: bool,
}

/// Eigenvalues and optionally eigenvectors (columns) of a general square
/// matrix, both complex64.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Eig {
    #[state]
    pub compute_eigenvectors: bool,
}

/// Checks one float32/float64 input of at least 2 dimensions (square if
/// asked); returns (batch count, rows, cols).
fn check_matrix(op: &str, inputs: &[Spec], square: bool) -> Result<(usize, usize, usize)> {
    expect_inputs(op, inputs, 1)?;
    let a = &inputs[0];
    if a.dtype != Dtype::Float32 && a.dtype != Dtype::Float64 {
        return Err(Error::invalid(
            op,
            format!(
                "arrays must have type float32 or float64, found {}",
                a.dtype
            ),
        ));
    }
    let nd = a.shape.len();
    if nd < 2 {
        return Err(Error::invalid(
            op,
            format!(
                "arrays must have at least 2 dimensions, found shape {:?}",
                a.shape
            ),
        ));
    }
    let (m, n) = (a.shape[nd - 2] as usize, a.shape[nd - 1] as usize);
    if square && m != n {
        return Err(Error::invalid(
            op,
            format!(
                "only defined for square matrices, found shape {:?}",
                a.shape
            ),
        ));
    }
    let batch = a.shape[..nd - 2].iter().map(|&d| d as usize).product();
    Ok((batch, m, n))
}

/// The input's elements, row-major, widened to f64.
fn widened(a: &Array) -> Result<Vec<f64>> {
    let d = a.data()?;
    Ok(match a.dtype() {
        Dtype::Float32 => to_contiguous_vec::<f32>(&d, a.shape())
            .into_iter()
            .map(f64::from)
            .collect(),
        _ => to_contiguous_vec::<f64>(&d, a.shape()),
    })
}

/// Row-major data of `spec` (float32 or float64) from f64 values.
fn narrowed(v: &[f64], spec: &Spec) -> Data {
    let buf = match spec.dtype {
        Dtype::Float32 => Buffer::from_slice(&v.iter().map(|&x| x as f32).collect::<Vec<_>>()),
        _ => Buffer::from_slice(v),
    };
    Data::contiguous(buf, &spec.shape)
}

/// Row-major complex64 data of `spec`.
fn complex(v: &[factor::C64], spec: &Spec) -> Data {
    let c: Vec<Complex64> = v
        .iter()
        .map(|z| Complex64::new(z.re as f32, z.im as f32))
        .collect();
    Data::contiguous(Buffer::from_slice(&c), &spec.shape)
}

impl Primitive for Cholesky {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::cubic_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        check_matrix("Cholesky", inputs, true)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (batch, n, _) = check_matrix("Cholesky", &[inputs[0].spec().clone()], true)?;
        let a = widened(&inputs[0])?;
        let mut res = Vec::with_capacity(a.len());
        for b in 0..batch {
            // Like MLX (LAPACK potrf), a matrix that is not positive
            // definite gives a partial factor, not an error.
            let f = factor::cholesky(&a[b * n * n..(b + 1) * n * n], n, self.upper);
            res.extend(f.unwrap_or_else(|partial| partial));
        }
        Ok(vec![narrowed(&res, &out[0])])
    }
}

impl Primitive for Inverse {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::cubic_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        check_matrix("Inverse", inputs, true)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (batch, n, _) = check_matrix("Inverse", &[inputs[0].spec().clone()], true)?;
        let a = widened(&inputs[0])?;
        let mut res = Vec::with_capacity(a.len());
        for b in 0..batch {
            let m = &a[b * n * n..(b + 1) * n * n];
            let inv = if self.tri {
                factor::tri_inverse(m, n, self.upper).map_err(|k| {
                    Error::invalid(
                        "Inverse",
                        format!(
                            "triangular inversion failed: diagonal entry {k} of matrix {b} is zero"
                        ),
                    )
                })?
            } else {
                factor::inverse(m, n).map_err(|k| {
                    Error::invalid(
                        "Inverse",
                        format!("matrix {b} is singular (LU pivot {k} is exactly zero)"),
                    )
                })?
            };
            res.extend(inv);
        }
        Ok(vec![narrowed(&res, &out[0])])
    }
}

impl Primitive for QRF {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::cubic_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let (_, m, n) = check_matrix("QRF", inputs, false)?;
        let k = m.min(n) as i32;
        let a = &inputs[0];
        let nd = a.shape.len();
        let mut q = a.shape.clone();
        q[nd - 1] = k;
        let mut r = a.shape.clone();
        r[nd - 2] = k;
        Ok(vec![Spec::new(q, a.dtype), Spec::new(r, a.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (batch, m, n) = check_matrix("QRF", &[inputs[0].spec().clone()], false)?;
        let a = widened(&inputs[0])?;
        let (mut qs, mut rs) = (Vec::new(), Vec::new());
        for b in 0..batch {
            let (q, r) = factor::qr(&a[b * m * n..(b + 1) * m * n], m, n);
            qs.extend(q);
            rs.extend(r);
        }
        Ok(vec![narrowed(&qs, &out[0]), narrowed(&rs, &out[1])])
    }
}

impl Primitive for SVD {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::cubic_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let (_, m, n) = check_matrix("SVD", inputs, false)?;
        let a = &inputs[0];
        let nd = a.shape.len();
        let mut s = a.shape[..nd - 1].to_vec();
        s[nd - 2] = m.min(n) as i32;
        let s = Spec::new(s, a.dtype);
        if !self.compute_uv {
            return Ok(vec![s]);
        }
        let mut u = a.shape.clone();
        u[nd - 1] = m as i32;
        let mut vt = a.shape.clone();
        vt[nd - 2] = n as i32;
        Ok(vec![Spec::new(u, a.dtype), s, Spec::new(vt, a.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (batch, m, n) = check_matrix("SVD", &[inputs[0].spec().clone()], false)?;
        let a = widened(&inputs[0])?;
        let (mut us, mut ss, mut vts) = (Vec::new(), Vec::new(), Vec::new());
        for b in 0..batch {
            let (u, s, vt) = factor::svd(&a[b * m * n..(b + 1) * m * n], m, n);
            us.extend(u);
            ss.extend(s);
            vts.extend(vt);
        }
        if !self.compute_uv {
            return Ok(vec![narrowed(&ss, &out[0])]);
        }
        Ok(vec![
            narrowed(&us, &out[0]),
            narrowed(&ss, &out[1]),
            narrowed(&vts, &out[2]),
        ])
    }
}

/// Output specs of Eigh/Eig: values (…, n), vectors (…, n, n).
fn eigen_specs(a: &Spec, values: Dtype, vectors: Option<Dtype>) -> Vec<Spec> {
    let nd = a.shape.len();
    let mut out = vec![Spec::new(a.shape[..nd - 1].to_vec(), values)];
    if let Some(v) = vectors {
        out.push(Spec::new(a.shape.clone(), v));
    }
    out
}

impl Primitive for Eigh {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::cubic_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        check_matrix("Eigh", inputs, true)?;
        if self.uplo != "L" && self.uplo != "U" {
            return Err(Error::invalid(
                "Eigh",
                format!("UPLO must be \"L\" or \"U\", found {:?}", self.uplo),
            ));
        }
        let d = inputs[0].dtype;
        Ok(eigen_specs(
            &inputs[0],
            d,
            self.compute_eigenvectors.then_some(d),
        ))
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (batch, n, _) = check_matrix("Eigh", &[inputs[0].spec().clone()], true)?;
        let a = widened(&inputs[0])?;
        let (mut ws, mut vs) = (Vec::new(), Vec::new());
        for b in 0..batch {
            let (w, v) = factor::eigh(&a[b * n * n..(b + 1) * n * n], n, self.uplo == "L");
            ws.extend(w);
            vs.extend(v);
        }
        let mut res = vec![narrowed(&ws, &out[0])];
        if self.compute_eigenvectors {
            res.push(narrowed(&vs, &out[1]));
        }
        Ok(res)
    }
}

impl Primitive for Eig {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::cubic_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        check_matrix("Eig", inputs, true)?;
        let c = Dtype::Complex64;
        Ok(eigen_specs(
            &inputs[0],
            c,
            self.compute_eigenvectors.then_some(c),
        ))
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (batch, n, _) = check_matrix("Eig", &[inputs[0].spec().clone()], true)?;
        let a = widened(&inputs[0])?;
        let (mut ws, mut vs) = (Vec::new(), Vec::new());
        for b in 0..batch {
            let m = &a[b * n * n..(b + 1) * n * n];
            if m.iter().any(|x| !x.is_finite()) {
                return Err(Error::invalid(
                    "Eig",
                    format!("matrix {b} has non-finite entries"),
                ));
            }
            let (w, v) = factor::eig(m, n, self.compute_eigenvectors).ok_or_else(|| {
                Error::invalid(
                    "Eig",
                    format!("the QR iteration did not converge for matrix {b}"),
                )
            })?;
            ws.extend(w);
            vs.extend(v);
        }
        let mut res = vec![complex(&ws, &out[0])];
        if self.compute_eigenvectors {
            res.push(complex(&vs, &out[1]));
        }
        Ok(res)
    }
}
