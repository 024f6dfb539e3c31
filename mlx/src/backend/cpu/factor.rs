//! Dense matrix factorisations on one row-major `f64` matrix at a time:
//! Cholesky, LU inverse, triangular inverse, Householder QR, one-sided
//! Jacobi SVD, Jacobi symmetric eigensolver and a complex Schur (shifted QR)
//! eigensolver for general matrices. Written for the small and medium
//! matrices `mlx::linalg` is used on; inputs of every float dtype are
//! widened to `f64` by the callers, so float32 results are at least as
//! accurate as LAPACK's single precision ones.
//!
//! Conventions follow LAPACK where MLX exposes them: QR's reflectors are
//! `dlarfg`'s (so Q and R carry LAPACK's signs), a failed Cholesky leaves
//! the failing pivot and the untouched input in place (as `potrf`), SVD
//! values are sorted descending, symmetric eigenvalues ascending.

use num_complex::Complex;

/// A complex number of two `f64`.
pub type C64 = Complex<f64>;

/// Cholesky factor of the symmetric matrix read from one triangle of `a`
/// (`n`×`n`, row-major): `Ok(L)` lower (or its transpose when `upper`).
/// On a non-positive pivot at column `j` returns `Err(partial)`: columns
/// before `j` factored, from `j` on the trailing block's Schur complement
/// (the failing pivot at `(j, j)`), the other triangle zero: what the
/// LAPACK MLX links leaves, and MLX returns without an error.
pub fn cholesky(a: &[f64], n: usize, upper: bool) -> std::result::Result<Vec<f64>, Vec<f64>> {
    // Work on the lower triangle: `l[i][j]` for i >= j.
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            l[i * n + j] = if upper { a[j * n + i] } else { a[i * n + j] };
        }
    }
    // Right-looking: after each column, the trailing block holds its
    // Schur complement, which is what a failure leaves behind.
    let mut failed = false;
    for j in 0..n {
        let d = l[j * n + j];
        if d.is_nan() || d <= 0.0 {
            failed = true;
            break;
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            l[i * n + j] /= d;
        }
        for k in j + 1..n {
            let lkj = l[k * n + j];
            for i in k..n {
                l[i * n + k] -= l[i * n + j] * lkj;
            }
        }
    }
    let out = if upper { transpose(&l, n, n) } else { l };
    if failed {
        Err(out)
    } else {
        Ok(out)
    }
}

/// `a` transposed (`rows`×`cols` in, `cols`×`rows` out).
pub fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

/// Inverse of a square matrix by LU with partial pivoting. `Err(k)` when
/// pivot `k` (1-based, as LAPACK's `info`) is exactly zero.
pub fn inverse(a: &[f64], n: usize) -> std::result::Result<Vec<f64>, usize> {
    let mut lu = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    for k in 0..n {
        let p = (k..n)
            .max_by(|&x, &y| lu[x * n + k].abs().total_cmp(&lu[y * n + k].abs()))
            .unwrap_or(k);
        if lu[p * n + k] == 0.0 {
            return Err(k + 1);
        }
        if p != k {
            for j in 0..n {
                lu.swap(k * n + j, p * n + j);
            }
            perm.swap(k, p);
        }
        let d = lu[k * n + k];
        for i in k + 1..n {
            let f = lu[i * n + k] / d;
            lu[i * n + k] = f;
            for j in k + 1..n {
                lu[i * n + j] -= f * lu[k * n + j];
            }
        }
    }
    // Solve L U x = P e_c for every column c.
    let mut inv = vec![0.0; n * n];
    let mut x = vec![0.0; n];
    for c in 0..n {
        for i in 0..n {
            let mut s = if perm[i] == c { 1.0 } else { 0.0 };
            for k in 0..i {
                s -= lu[i * n + k] * x[k];
            }
            x[i] = s;
        }
        for i in (0..n).rev() {
            let mut s = x[i];
            for k in i + 1..n {
                s -= lu[i * n + k] * x[k];
            }
            x[i] = s / lu[i * n + i];
        }
        for i in 0..n {
            inv[i * n + c] = x[i];
        }
    }
    Ok(inv)
}

/// Inverse of the triangular matrix in one triangle of `a` (the other is
/// ignored and zero in the result). `Err(k)` for a zero diagonal entry `k`
/// (1-based).
pub fn tri_inverse(a: &[f64], n: usize, upper: bool) -> std::result::Result<Vec<f64>, usize> {
    // Invert a lower triangular L; an upper matrix is handled as L = Uᵀ.
    let l = if upper {
        transpose(a, n, n)
    } else {
        a.to_vec()
    };
    if let Some(k) = (0..n).find(|&k| l[k * n + k] == 0.0) {
        return Err(k + 1);
    }
    let mut x = vec![0.0; n * n];
    for c in 0..n {
        x[c * n + c] = 1.0 / l[c * n + c];
        for i in c + 1..n {
            let mut s = 0.0;
            for k in c..i {
                s += l[i * n + k] * x[k * n + c];
            }
            x[i * n + c] = -s / l[i * n + i];
        }
    }
    Ok(if upper { transpose(&x, n, n) } else { x })
}

/// Reduced QR of an `m`×`n` matrix with LAPACK's Householder reflectors:
/// returns (Q `m`×k, R k×`n`), k = min(m, n).
pub fn qr(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    let mut r = a.to_vec();
    let mut vs: Vec<(Vec<f64>, f64)> = Vec::with_capacity(k);
    for j in 0..k {
        let alpha = r[j * n + j];
        let xnorm = (j + 1..m)
            .map(|i| r[i * n + j] * r[i * n + j])
            .sum::<f64>()
            .sqrt();
        let mut v = vec![0.0; m - j];
        v[0] = 1.0;
        if xnorm == 0.0 {
            vs.push((v, 0.0));
            continue;
        }
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        for i in j + 1..m {
            v[i - j] = r[i * n + j] / (alpha - beta);
            r[i * n + j] = 0.0;
        }
        r[j * n + j] = beta;
        // Apply H = I - tau v vᵀ to the remaining columns.
        for c in j + 1..n {
            let w: f64 = (j..m).map(|i| v[i - j] * r[i * n + c]).sum();
            for i in j..m {
                r[i * n + c] -= tau * v[i - j] * w;
            }
        }
        vs.push((v, tau));
    }
    // Q = H_0 H_1 … H_{k-1} applied to the first k columns of the identity.
    let mut q = vec![0.0; m * k];
    for i in 0..k {
        q[i * k + i] = 1.0;
    }
    for (j, (v, tau)) in vs.iter().enumerate().rev() {
        if *tau == 0.0 {
            continue;
        }
        for c in 0..k {
            let w: f64 = (j..m).map(|i| v[i - j] * q[i * k + c]).sum();
            for i in j..m {
                q[i * k + c] -= tau * v[i - j] * w;
            }
        }
    }
    let mut rr = vec![0.0; k * n];
    for i in 0..k {
        for c in i..n {
            rr[i * n + c] = r[i * n + c];
        }
    }
    (q, rr)
}

/// Singular value decomposition of an `m`×`n` matrix: (U `m`×`m`, S
/// descending, Vᵀ `n`×`n`) with A = U diag(S) Vᵀ.
pub fn svd(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if m < n {
        // Aᵀ = U' S V'ᵀ, so A = V' S U'ᵀ.
        let (u2, s, vt2) = svd(&transpose(a, m, n), n, m);
        return (transpose(&vt2, m, m), s, transpose(&u2, n, n));
    }
    // One-sided Jacobi on the columns of A (m >= n).
    let mut u = a.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..80 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..m {
                    let (x, y) = (u[i * n + p], u[i * n + q]);
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                rotate_columns(&mut u, n, m, p, q, c, s);
                rotate_columns(&mut v, n, n, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| {
            (0..m)
                .map(|i| u[i * n + j] * u[i * n + j])
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let tiny = s.first().copied().unwrap_or(0.0) * f64::EPSILON * m as f64;
    // Columns of U for the non-zero singular values, then completed to an
    // orthonormal basis of R^m.
    let mut cols: Vec<Vec<f64>> = Vec::with_capacity(m);
    for (&j, &sj) in order.iter().zip(&s) {
        if sj > tiny && sj > 0.0 {
            cols.push((0..m).map(|i| u[i * n + j] / sj).collect());
        }
    }
    let mut e = 0;
    while cols.len() < m && e < m {
        let mut c = vec![0.0; m];
        c[e] = 1.0;
        e += 1;
        if let Some(c) = orthonormalised(c, &cols) {
            cols.push(c);
        }
    }
    // Columns belong in singular value order: the kept ones come first and
    // are already sorted; the completed ones stand for the zero values.
    let mut uu = vec![0.0; m * m];
    for (j, c) in cols.iter().enumerate() {
        for i in 0..m {
            uu[i * m + j] = c[i];
        }
    }
    let mut vt = vec![0.0; n * n];
    for (r, &j) in order.iter().enumerate() {
        for i in 0..n {
            vt[r * n + i] = v[i * n + j];
        }
    }
    (uu, s, vt)
}

/// `c` minus its projections on `basis` (twice, for stability), normalised;
/// `None` if nothing independent is left.
fn orthonormalised(mut c: Vec<f64>, basis: &[Vec<f64>]) -> Option<Vec<f64>> {
    for _ in 0..2 {
        for b in basis {
            let d: f64 = c.iter().zip(b).map(|(x, y)| x * y).sum();
            for (x, y) in c.iter_mut().zip(b) {
                *x -= d * y;
            }
        }
    }
    let norm = c.iter().map(|x| x * x).sum::<f64>().sqrt();
    (norm > 1e-8).then(|| c.into_iter().map(|x| x / norm).collect())
}

/// Rotates columns `p` and `q` of a `rows`×`ncols` matrix.
fn rotate_columns(a: &mut [f64], ncols: usize, rows: usize, p: usize, q: usize, c: f64, s: f64) {
    for i in 0..rows {
        let (x, y) = (a[i * ncols + p], a[i * ncols + q]);
        a[i * ncols + p] = c * x - s * y;
        a[i * ncols + q] = s * x + c * y;
    }
}

/// Eigen-decomposition of the symmetric matrix read from one triangle of
/// `a` (`lower` = the lower one): eigenvalues ascending, eigenvectors as
/// the columns of the returned `n`×`n` matrix.
pub fn eigh(a: &[f64], n: usize, lower: bool) -> (Vec<f64>, Vec<f64>) {
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let x = if lower { a[i * n + j] } else { a[j * n + i] };
            s[i * n + j] = x;
            s[j * n + i] = x;
        }
    }
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = s.iter().map(|x| x * x).sum();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| s[i * n + j] * s[i * n + j])
            .sum();
        if off <= total * f64::EPSILON * f64::EPSILON || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (s[q * n + q] - s[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * c;
                // S <- Jᵀ S J with J the rotation in the (p, q) plane.
                rotate_columns(&mut s, n, n, p, q, c, sn);
                for j in 0..n {
                    let (x, y) = (s[p * n + j], s[q * n + j]);
                    s[p * n + j] = c * x - sn * y;
                    s[q * n + j] = sn * x + c * y;
                }
                rotate_columns(&mut v, n, n, p, q, c, sn);
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| s[x * n + x].total_cmp(&s[y * n + y]));
    let w: Vec<f64> = order.iter().map(|&j| s[j * n + j]).collect();
    let mut vecs = vec![0.0; n * n];
    for (c, &j) in order.iter().enumerate() {
        for i in 0..n {
            vecs[i * n + c] = v[i * n + j];
        }
    }
    (w, vecs)
}

/// Eigenvalues and right eigenvectors (columns, unit norm, largest
/// component real) of a general real `n`×`n` matrix, through a complex
/// Schur form. For a real eigenvalue the imaginary parts are exactly zero.
/// `None` if the QR iteration does not converge.
pub fn eig(a: &[f64], n: usize, vectors: bool) -> Option<(Vec<C64>, Vec<C64>)> {
    let (mut t, mut z) = hessenberg(a, n);
    schur(&mut t, &mut z, n)?;
    let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let tol = scale * f64::EPSILON * (n as f64) * 8.0;
    let mut w: Vec<C64> = (0..n).map(|i| t[i * n + i]).collect();
    for x in w.iter_mut() {
        if x.im.abs() <= tol {
            x.im = 0.0;
        }
    }
    if !vectors {
        return Some((w, Vec::new()));
    }
    let small = (scale * f64::EPSILON).max(f64::MIN_POSITIVE);
    let mut vecs = vec![C64::new(0.0, 0.0); n * n];
    let mut x = vec![C64::new(0.0, 0.0); n];
    for k in 0..n {
        let lambda = t[k * n + k];
        x.iter_mut().for_each(|v| *v = C64::new(0.0, 0.0));
        x[k] = C64::new(1.0, 0.0);
        for j in (0..k).rev() {
            let mut s = C64::new(0.0, 0.0);
            for i in j + 1..=k {
                s += t[j * n + i] * x[i];
            }
            let mut d = t[j * n + j] - lambda;
            if d.norm() < small {
                d = C64::new(small, 0.0);
            }
            x[j] = -s / d;
        }
        // v = Z x, normalised with its largest component made real.
        let mut v: Vec<C64> = (0..n)
            .map(|i| (0..=k).map(|j| z[i * n + j] * x[j]).sum())
            .collect();
        let norm = v.iter().map(|c| c.norm_sqr()).sum::<f64>().sqrt();
        let big = (0..n)
            .max_by(|&p, &q| v[p].norm().total_cmp(&v[q].norm()))
            .unwrap_or(0);
        let phase = if v[big].norm() > 0.0 {
            v[big].conj() / v[big].norm()
        } else {
            C64::new(1.0, 0.0)
        };
        for c in v.iter_mut() {
            *c = *c * phase / norm;
            if w[k].im == 0.0 {
                c.im = 0.0;
            }
        }
        for i in 0..n {
            vecs[i * n + k] = v[i];
        }
    }
    Some((w, vecs))
}

/// Householder reduction to upper Hessenberg form: (H, Z) complex with
/// A = Z H Zᵀ.
fn hessenberg(a: &[f64], n: usize) -> (Vec<C64>, Vec<C64>) {
    let mut h = a.to_vec();
    let mut z = vec![0.0; n * n];
    for i in 0..n {
        z[i * n + i] = 1.0;
    }
    for k in 0..n.saturating_sub(2) {
        let norm = (k + 1..n)
            .map(|i| h[i * n + k] * h[i * n + k])
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = -norm.copysign(h[(k + 1) * n + k]);
        let mut v: Vec<f64> = (k + 1..n).map(|i| h[i * n + k]).collect();
        v[0] -= alpha;
        let vn: f64 = v.iter().map(|x| x * x).sum();
        if vn == 0.0 {
            continue;
        }
        // H <- P H P with P = I - 2 v vᵀ / (vᵀ v), acting on rows/cols k+1..
        for c in 0..n {
            let d: f64 = (k + 1..n).map(|i| v[i - k - 1] * h[i * n + c]).sum::<f64>() * 2.0 / vn;
            for i in k + 1..n {
                h[i * n + c] -= d * v[i - k - 1];
            }
        }
        for r in 0..n {
            let d: f64 = (k + 1..n).map(|j| h[r * n + j] * v[j - k - 1]).sum::<f64>() * 2.0 / vn;
            for j in k + 1..n {
                h[r * n + j] -= d * v[j - k - 1];
            }
        }
        for r in 0..n {
            let d: f64 = (k + 1..n).map(|j| z[r * n + j] * v[j - k - 1]).sum::<f64>() * 2.0 / vn;
            for j in k + 1..n {
                z[r * n + j] -= d * v[j - k - 1];
            }
        }
        for i in k + 2..n {
            h[i * n + k] = 0.0;
        }
    }
    let c = |x: &f64| C64::new(*x, 0.0);
    (h.iter().map(c).collect(), z.iter().map(c).collect())
}

/// Shifted complex QR iteration turning the Hessenberg `t` into upper
/// triangular form in place, accumulating the rotations into `z`.
fn schur(t: &mut [C64], z: &mut [C64], n: usize) -> Option<()> {
    if n < 2 {
        return Some(());
    }
    let zero = C64::new(0.0, 0.0);
    let mut hi = n - 1;
    let mut iter = 0;
    let mut total = 0;
    while hi > 0 {
        // Deflate: find the start of the unreduced block ending at `hi`.
        let mut lo = hi;
        while lo > 0 {
            let sub = t[lo * n + lo - 1].norm();
            let diag = t[lo * n + lo].norm() + t[(lo - 1) * n + lo - 1].norm();
            if sub <= f64::EPSILON * diag || sub < f64::MIN_POSITIVE {
                t[lo * n + lo - 1] = zero;
                break;
            }
            lo -= 1;
        }
        if lo == hi {
            hi -= 1;
            iter = 0;
            continue;
        }
        iter += 1;
        total += 1;
        if total > 100 * n {
            return None;
        }
        // Wilkinson shift from the trailing 2x2 block, exceptional shifts
        // now and then to break cycles.
        let (a, b) = (t[(hi - 1) * n + hi - 1], t[(hi - 1) * n + hi]);
        let (c, d) = (t[hi * n + hi - 1], t[hi * n + hi]);
        let mu = if iter % 11 == 10 {
            d + C64::new(t[hi * n + hi - 1].norm() * 0.75, 0.0)
        } else {
            let tr = (a + d) * 0.5;
            let disc = ((a - d) * 0.5 * ((a - d) * 0.5) + b * c).sqrt();
            let (e1, e2) = (tr + disc, tr - disc);
            if (e1 - d).norm() < (e2 - d).norm() {
                e1
            } else {
                e2
            }
        };
        for i in lo..=hi {
            t[i * n + i] -= mu;
        }
        let mut rots = Vec::with_capacity(hi - lo);
        for k in lo..hi {
            let (x, y) = (t[k * n + k], t[(k + 1) * n + k]);
            let r = (x.norm_sqr() + y.norm_sqr()).sqrt();
            let (cs, sn) = if r == 0.0 {
                (1.0, zero)
            } else if x.norm() == 0.0 {
                (0.0, C64::new(1.0, 0.0))
            } else {
                let ph = x / x.norm();
                (x.norm() / r, ph * y.conj() / r)
            };
            for j in k..n {
                let (p, q) = (t[k * n + j], t[(k + 1) * n + j]);
                t[k * n + j] = p * cs + sn * q;
                t[(k + 1) * n + j] = -sn.conj() * p + q * cs;
            }
            rots.push((cs, sn));
        }
        for (k, &(cs, sn)) in (lo..hi).zip(&rots) {
            let last = (k + 2).min(hi);
            for i in 0..=last {
                let (p, q) = (t[i * n + k], t[i * n + k + 1]);
                t[i * n + k] = p * cs + q * sn.conj();
                t[i * n + k + 1] = -(p * sn) + q * cs;
            }
            for i in 0..n {
                let (p, q) = (z[i * n + k], z[i * n + k + 1]);
                z[i * n + k] = p * cs + q * sn.conj();
                z[i * n + k + 1] = -(p * sn) + q * cs;
            }
        }
        for i in lo..=hi {
            t[i * n + i] += mu;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
    }

    #[test]
    fn qr_reconstructs_with_lapack_signs() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let (q, r) = qr(&a, 3, 2);
        assert!(close(&matmul(&q, &r, 3, 2, 2), &a, 1e-12));
        assert!((r[0] + 5.916079783099616).abs() < 1e-12);
    }

    #[test]
    fn svd_reconstructs_wide_and_tall() {
        // [[1, 2, 3], [4, 5, 6]] and its transpose: the same singular values,
        // sqrt((91 ± sqrt(8065)) / 2) from the eigenvalues of A Aᵀ.
        let wide = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let tall = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
        let want = [9.508032000695724, 0.7728696356734843];
        for (a, m, n) in [(&wide, 2, 3), (&tall, 3, 2)] {
            let (u, s, vt) = svd(a, m, n);
            let k = m.min(n);
            let mut us = vec![0.0; m * n];
            for i in 0..m {
                for j in 0..k {
                    us[i * n + j] = u[i * m + j] * s[j];
                }
            }
            assert!(close(&matmul(&us, &vt, m, n, n), a, 1e-12));
            assert!(close(&s, &want, 1e-12), "{m}x{n}: {s:?}");
        }
    }

    #[test]
    fn eig_of_rotation_is_plus_minus_i() {
        let (w, v) = eig(&[0.0, 1.0, -1.0, 0.0], 2, true).unwrap();
        let mut im: Vec<f64> = w.iter().map(|x| x.im).collect();
        im.sort_by(f64::total_cmp);
        assert!(close(&im, &[-1.0, 1.0], 1e-12));
        assert_eq!(v.len(), 4);
    }
}
