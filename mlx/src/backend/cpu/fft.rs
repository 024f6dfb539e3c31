//! Discrete Fourier transforms of any length along any axis: iterative
//! radix-2 for powers of two, Bluestein's chirp-z (through a power-of-two
//! transform) for every other length. Computed in f64 and rounded once, so
//! the result is as accurate as MLX's (pocketfft, float32) or better.
//! Lines of one axis run in parallel above [`PAR_THRESHOLD`](super::PAR_THRESHOLD).

use num_complex::Complex;
use rayon::prelude::*;
use std::f64::consts::PI;

/// The complex type the kernels compute in.
pub type C64 = Complex<f64>;

/// A reusable transform of one length.
pub enum Plan {
    /// Length 0 or 1: the identity.
    Trivial,
    /// Power-of-two length: bit-reversal permutation and twiddles.
    Radix2 {
        /// exp(−2πik/n) for k < n/2.
        twiddles: Vec<C64>,
        /// The bit-reversal permutation.
        rev: Vec<usize>,
    },
    /// Any other length n, as a convolution of length m ≥ 2n − 1.
    Bluestein {
        /// The transform length.
        n: usize,
        /// exp(−πik²/n) for k < n.
        chirp: Vec<C64>,
        /// The forward transform of the conjugate chirp, wrapped to length m.
        kernel: Vec<C64>,
        /// The power-of-two plan of length m.
        inner: Box<Plan>,
    },
}

impl Plan {
    /// The plan for length `n`.
    pub fn new(n: usize) -> Plan {
        if n <= 1 {
            return Plan::Trivial;
        }
        if n.is_power_of_two() {
            let bits = n.trailing_zeros();
            let rev = (0..n)
                .map(|i| i.reverse_bits() >> (usize::BITS - bits))
                .collect();
            let twiddles = (0..n / 2)
                .map(|k| C64::from_polar(1.0, -2.0 * PI * k as f64 / n as f64))
                .collect();
            return Plan::Radix2 { twiddles, rev };
        }
        let m = (2 * n - 1).next_power_of_two();
        // k² mod 2n keeps the angle small and exact.
        let chirp: Vec<C64> = (0..n)
            .map(|k| {
                let k2 = (k as u128 * k as u128 % (2 * n as u128)) as f64;
                C64::from_polar(1.0, -PI * k2 / n as f64)
            })
            .collect();
        let mut kernel = vec![C64::new(0.0, 0.0); m];
        kernel[0] = chirp[0].conj();
        for k in 1..n {
            kernel[k] = chirp[k].conj();
            kernel[m - k] = chirp[k].conj();
        }
        let inner = Plan::new(m);
        inner.forward(&mut kernel);
        Plan::Bluestein {
            n,
            chirp,
            kernel,
            inner: Box::new(inner),
        }
    }

    /// Unnormalised forward transform in place: X_k = Σ x_j e^(−2πijk/n).
    pub fn forward(&self, x: &mut [C64]) {
        match self {
            Plan::Trivial => {}
            Plan::Radix2 { twiddles, rev } => radix2(x, twiddles, rev),
            Plan::Bluestein {
                n,
                chirp,
                kernel,
                inner,
            } => {
                let m = kernel.len();
                let mut a = vec![C64::new(0.0, 0.0); m];
                for k in 0..*n {
                    a[k] = x[k] * chirp[k];
                }
                inner.forward(&mut a);
                for (v, w) in a.iter_mut().zip(kernel) {
                    *v *= w;
                }
                // Inverse of length m through conjugation.
                a.iter_mut().for_each(|v| *v = v.conj());
                inner.forward(&mut a);
                let s = 1.0 / m as f64;
                for k in 0..*n {
                    x[k] = a[k].conj() * s * chirp[k];
                }
            }
        }
    }

    /// Unnormalised inverse transform in place: x_j = Σ X_k e^(+2πijk/n).
    pub fn inverse(&self, x: &mut [C64]) {
        x.iter_mut().for_each(|v| *v = v.conj());
        self.forward(x);
        x.iter_mut().for_each(|v| *v = v.conj());
    }
}

fn radix2(x: &mut [C64], twiddles: &[C64], rev: &[usize]) {
    let n = x.len();
    for (i, &j) in rev.iter().enumerate() {
        if i < j {
            x.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let step = n / len;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let w = twiddles[k * step];
                let (a, b) = (x[start + k], x[start + k + len / 2] * w);
                x[start + k] = a + b;
                x[start + k + len / 2] = a - b;
            }
        }
        len <<= 1;
    }
}

/// Applies `f(input line, output line)` to every line along `axis` of a
/// row-major array of `shape`; output lines have `out_len` elements.
fn along_axis<I, O>(
    data: &[I],
    shape: &[usize],
    axis: usize,
    out_len: usize,
    f: impl Fn(&[I], &mut [O]) + Sync,
) -> Vec<O>
where
    I: Copy + Send + Sync,
    O: Copy + Default + Send + Sync,
{
    let n = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let mut out = vec![O::default(); outer * out_len * inner];
    if out.is_empty() {
        return out;
    }
    let line = |l: usize| -> Vec<O> {
        let (o, i) = (l / inner, l % inner);
        let src: Vec<I> = (0..n).map(|j| data[(o * n + j) * inner + i]).collect();
        let mut dst = vec![O::default(); out_len];
        f(&src, &mut dst);
        dst
    };
    let lines: Vec<Vec<O>> = if data.len().max(out.len()) >= super::PAR_THRESHOLD {
        (0..outer * inner).into_par_iter().map(line).collect()
    } else {
        (0..outer * inner).map(line).collect()
    };
    for (l, v) in lines.into_iter().enumerate() {
        let (o, i) = (l / inner, l % inner);
        for (j, x) in v.into_iter().enumerate() {
            out[(o * out_len + j) * inner + i] = x;
        }
    }
    out
}

/// Complex transform along `axis`; the inverse is scaled by 1/n.
pub fn c2c(data: &[C64], shape: &[usize], axis: usize, inverse: bool) -> Vec<C64> {
    let n = shape[axis];
    let plan = Plan::new(n);
    along_axis(data, shape, axis, n, |src, dst| {
        dst.copy_from_slice(src);
        if inverse {
            plan.inverse(dst);
            let s = 1.0 / n as f64;
            dst.iter_mut().for_each(|v| *v *= s);
        } else {
            plan.forward(dst);
        }
    })
}

/// Real-input transform along `axis`: the n/2 + 1 non-redundant outputs.
pub fn r2c(data: &[f64], shape: &[usize], axis: usize) -> Vec<C64> {
    let n = shape[axis];
    let plan = Plan::new(n);
    along_axis(data, shape, axis, n / 2 + 1, |src, dst| {
        let mut buf: Vec<C64> = src.iter().map(|&r| C64::new(r, 0.0)).collect();
        plan.forward(&mut buf);
        dst.copy_from_slice(&buf[..dst.len()]);
    })
}

/// Inverse of [`r2c`] along `axis`, giving `n_out` real values (scaled by
/// 1/n_out) from the first n_out/2 + 1 inputs of each line; the imaginary
/// parts of the terms without a conjugate partner are ignored.
pub fn c2r(data: &[C64], shape: &[usize], axis: usize, n_out: usize) -> Vec<f64> {
    let plan = Plan::new(n_out);
    along_axis(data, shape, axis, n_out, |src, dst| {
        let m = src.len().min(n_out / 2 + 1);
        let mut full = vec![C64::new(0.0, 0.0); n_out];
        full[..m].copy_from_slice(&src[..m]);
        for k in 1..m {
            if n_out - k >= m {
                full[n_out - k] = src[k].conj();
            }
        }
        plan.inverse(&mut full);
        let s = 1.0 / n_out as f64;
        for (d, v) in dst.iter_mut().zip(&full) {
            *d = v.re * s;
        }
    })
}
