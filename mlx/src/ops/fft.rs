//! `mlx::fft`: discrete Fourier transforms with MLX's names and argument
//! forms. Requested sizes (`n`, `s`) slice or zero-pad the input first, as
//! MLX's graphs do (Slice, or zeros + SliceUpdate), then one `FFT` node
//! transforms every axis. Inputs are cast to complex64 (or float32 for the
//! real transforms); `norm` scales the result like numpy's.

use crate::ops::{astype, broadcast_to, multiply, slice, slice_update};
use crate::primitives::fft::FFT;
use crate::shape::normalize_axis;
use crate::{Array, Dtype, Error, Result};

/// Normalisation of a transform, as numpy's and MLX's `norm` argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FftNorm {
    /// No scaling forward, 1/n inverse.
    #[default]
    Backward,
    /// 1/√n both ways.
    Ortho,
    /// 1/n forward, none inverse.
    Forward,
}

/// Extra factor applied after the primitive (which already scales inverses by 1/n).
fn scale_factor(n: &[i32], norm: FftNorm, inverse: bool) -> f64 {
    let total: f64 = n.iter().map(|&d| d as f64).product();
    match norm {
        FftNorm::Backward => 1.0,
        FftNorm::Ortho if inverse => total.sqrt(),
        FftNorm::Ortho => 1.0 / total.sqrt(),
        FftNorm::Forward if inverse => total,
        FftNorm::Forward => 1.0 / total,
    }
}

/// The transform of `a` over `axes` with sizes `n` (MLX's `fft_impl`).
fn fft_impl(
    op: &str,
    a: &Array,
    n: &[i32],
    axes: &[i32],
    real: bool,
    inverse: bool,
    norm: FftNorm,
) -> Result<Array> {
    if a.ndim() < 1 {
        return Err(Error::invalid(
            op,
            "requires an array with at least one dimension",
        ));
    }
    if n.len() != axes.len() {
        return Err(Error::invalid(
            op,
            format!("sizes {n:?} and axes {axes:?} have different lengths"),
        ));
    }
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let valid = crate::shape::normalize_axes(op, axes, a.ndim())?;
    if n.iter().any(|&d| d <= 0) {
        return Err(Error::invalid(
            op,
            format!("invalid FFT output size requested {n:?}"),
        ));
    }
    let mut in_shape = a.shape().to_vec();
    for (&ax, &d) in valid.iter().zip(n) {
        in_shape[ax] = d;
    }
    let last = *valid.last().expect("non-empty");
    let n_last = *n.last().expect("non-empty");
    if real && inverse {
        in_shape[last] = n_last / 2 + 1;
    }
    let mut x = a.clone();
    if in_shape.iter().zip(a.shape()).any(|(i, s)| i < s) {
        let stop: Vec<i32> = in_shape
            .iter()
            .zip(a.shape())
            .map(|(&i, &s)| i.min(s))
            .collect();
        x = slice(&x, &vec![0; a.ndim()], &stop, &[])?;
    }
    if in_shape.iter().zip(x.shape()).any(|(i, s)| i > s) {
        let zeros = broadcast_to(&Array::scalar_of(0.0, a.dtype()), &in_shape)?;
        let stop = x.shape().to_vec();
        x = slice_update(&zeros, &x, &vec![0; a.ndim()], &stop, &[])?;
    }
    let in_type = if real && !inverse {
        Dtype::Float32
    } else {
        Dtype::Complex64
    };
    if real && !inverse && a.dtype() == Dtype::Complex64 {
        return Err(Error::invalid(
            op,
            "a real transform needs a real input, found complex64",
        ));
    }
    let x = if x.dtype() == in_type {
        x
    } else {
        astype(&x, in_type)?
    };
    let p = FFT {
        axes: valid.iter().map(|&a| a as u64).collect(),
        inverse,
        real,
        odd_out: real && inverse && n_last % 2 == 1,
    };
    let out = Array::from_primitive(p, vec![x])?;
    let s = scale_factor(n, norm, inverse);
    if s != 1.0 {
        return multiply(&out, &Array::scalar_of(s, out.dtype()));
    }
    Ok(out)
}

/// Sizes of `a` along `axes` (for real inverses the last is 2(m − 1)).
fn default_sizes(op: &str, a: &Array, axes: &[i32], real_inverse: bool) -> Result<Vec<i32>> {
    if a.ndim() < 1 {
        return Err(Error::invalid(
            op,
            "requires an array with at least one dimension",
        ));
    }
    let mut n = Vec::with_capacity(axes.len());
    for &ax in axes {
        n.push(a.shape()[normalize_axis(op, ax, a.ndim())?]);
    }
    if real_inverse {
        if let Some(l) = n.last_mut() {
            *l = (*l - 1) * 2;
        }
    }
    Ok(n)
}

fn one_axis(
    op: &str,
    a: &Array,
    n: Option<i32>,
    axis: i32,
    real: bool,
    inverse: bool,
    norm: FftNorm,
) -> Result<Array> {
    let n = match n {
        Some(n) => vec![n],
        None => default_sizes(op, a, &[axis], real && inverse)?,
    };
    fft_impl(op, a, &n, &[axis], real, inverse, norm)
}

fn many_axes(
    op: &str,
    a: &Array,
    s: Option<&[i32]>,
    axes: Option<&[i32]>,
    real: bool,
    inverse: bool,
    norm: FftNorm,
) -> Result<Array> {
    let all: Vec<i32> = (0..a.ndim() as i32).collect();
    let axes = match (s, axes) {
        (Some(_), None) => {
            return Err(Error::invalid(
                op,
                "`axes` should not be `None` if `s` is not `None`",
            ))
        }
        (_, Some(ax)) => ax,
        (None, None) => &all,
    };
    let n = match s {
        Some(s) => s.to_vec(),
        None => default_sizes(op, a, axes, real && inverse)?,
    };
    fft_impl(op, a, &n, axes, real, inverse, norm)
}

/// One-dimensional transform along `axis`, zero-padded or cut to `n`.
pub fn fft(a: &Array, n: Option<i32>, axis: i32, norm: FftNorm) -> Result<Array> {
    one_axis("fft", a, n, axis, false, false, norm)
}

/// Inverse of [`fft`].
pub fn ifft(a: &Array, n: Option<i32>, axis: i32, norm: FftNorm) -> Result<Array> {
    one_axis("ifft", a, n, axis, false, true, norm)
}

/// Transform of a real input: the n/2 + 1 non-negative frequencies.
pub fn rfft(a: &Array, n: Option<i32>, axis: i32, norm: FftNorm) -> Result<Array> {
    one_axis("rfft", a, n, axis, true, false, norm)
}

/// Inverse of [`rfft`]: `n` real outputs (default 2(m − 1)).
pub fn irfft(a: &Array, n: Option<i32>, axis: i32, norm: FftNorm) -> Result<Array> {
    one_axis("irfft", a, n, axis, true, true, norm)
}

/// Two-dimensional transform over `axes` (MLX's default `[-2, -1]`).
pub fn fft2(a: &Array, s: Option<&[i32]>, axes: &[i32], norm: FftNorm) -> Result<Array> {
    many_axes("fft2", a, s, Some(axes), false, false, norm)
}

/// Inverse of [`fft2`].
pub fn ifft2(a: &Array, s: Option<&[i32]>, axes: &[i32], norm: FftNorm) -> Result<Array> {
    many_axes("ifft2", a, s, Some(axes), false, true, norm)
}

/// Two-dimensional transform of a real input; the last axis is halved.
pub fn rfft2(a: &Array, s: Option<&[i32]>, axes: &[i32], norm: FftNorm) -> Result<Array> {
    many_axes("rfft2", a, s, Some(axes), true, false, norm)
}

/// Inverse of [`rfft2`].
pub fn irfft2(a: &Array, s: Option<&[i32]>, axes: &[i32], norm: FftNorm) -> Result<Array> {
    many_axes("irfft2", a, s, Some(axes), true, true, norm)
}

/// N-dimensional transform over `axes` (all axes when `None`).
pub fn fftn(a: &Array, s: Option<&[i32]>, axes: Option<&[i32]>, norm: FftNorm) -> Result<Array> {
    many_axes("fftn", a, s, axes, false, false, norm)
}

/// Inverse of [`fftn`].
pub fn ifftn(a: &Array, s: Option<&[i32]>, axes: Option<&[i32]>, norm: FftNorm) -> Result<Array> {
    many_axes("ifftn", a, s, axes, false, true, norm)
}

/// N-dimensional transform of a real input; the last axis is halved.
pub fn rfftn(a: &Array, s: Option<&[i32]>, axes: Option<&[i32]>, norm: FftNorm) -> Result<Array> {
    many_axes("rfftn", a, s, axes, true, false, norm)
}

/// Inverse of [`rfftn`].
pub fn irfftn(a: &Array, s: Option<&[i32]>, axes: Option<&[i32]>, norm: FftNorm) -> Result<Array> {
    many_axes("irfftn", a, s, axes, true, true, norm)
}
