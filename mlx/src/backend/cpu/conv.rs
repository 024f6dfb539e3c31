//! N-d convolution (channels last) as im2col + one `gemm` per group.
//!
//! The input position read by output position `o` and kernel tap `k` on
//! one spatial axis is `p = o·stride − pad_lo + k·kernel_dilation` in the
//! input dilated by `input_dilation` (zeros between samples); it is a real
//! sample when `p` is a multiple of the dilation and inside the input.
//! `flip` walks the kernel backwards (true convolution, used by the
//! transposed convolutions).

use crate::array::Data;
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::buffer::Buffer;
use crate::{Dtype, Element, Error, Result};
use gemm::Parallelism;
use rayon::prelude::*;

/// Geometry of one convolution (all vectors have one entry per spatial axis).
pub struct ConvParams<'a> {
    /// Step between output positions, in (dilated) input samples.
    pub strides: &'a [i32],
    /// Zeros before the first input sample (the high side follows from the output shape).
    pub padding_lo: &'a [i32],
    /// Spacing between kernel taps.
    pub kernel_dilation: &'a [i32],
    /// Spacing between input samples (> 1 for transposed convolutions).
    pub input_dilation: &'a [i32],
    /// Channel groups: input and output channels split into this many blocks.
    pub groups: i32,
    /// Walk the kernel backwards (true convolution).
    pub flip: bool,
}

/// The convolution of `x` (N, spatial…, C_in) with `w` (C_out, kernel…,
/// C_in / groups) into a row-major array of `out_shape` (N, out spatial…,
/// C_out), computed in f64 for float64 and in f32 otherwise.
#[allow(clippy::too_many_arguments)]
pub fn conv(
    x: &Data,
    x_shape: &[i32],
    w: &Data,
    w_shape: &[i32],
    p: &ConvParams<'_>,
    dtype: Dtype,
    out_shape: &[i32],
) -> Result<Data> {
    let size: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut buf = Buffer::zeroed(size * dtype.size());
    match dtype {
        Dtype::Float64 => {
            let xs = to_contiguous_vec::<f64>(x, x_shape);
            let ws = to_contiguous_vec::<f64>(w, w_shape);
            let o = buf.as_mut_slice::<f64>().expect("heap buffer");
            run::<f64>(&xs, x_shape, &ws, w_shape, p, o, out_shape);
        }
        Dtype::Float32 => {
            let xs = to_contiguous_vec::<f32>(x, x_shape);
            let ws = to_contiguous_vec::<f32>(w, w_shape);
            let o = buf.as_mut_slice::<f32>().expect("heap buffer");
            run::<f32>(&xs, x_shape, &ws, w_shape, p, o, out_shape);
        }
        Dtype::Float16 => half_conv::<half::f16>(x, x_shape, w, w_shape, p, &mut buf, out_shape),
        Dtype::Bfloat16 => half_conv::<half::bf16>(x, x_shape, w, w_shape, p, &mut buf, out_shape),
        other => {
            return Err(Error::invalid(
                "Convolution",
                format!("expected a floating point dtype, found {other}"),
            ))
        }
    }
    Ok(Data::contiguous(buf, out_shape))
}

/// A half-type convolution through f32 (rounded once at the end).
/// im2col elements built at a time (64 MiB of f32): the scratch of a
/// convolution is bounded whatever its output size.
const SCRATCH_ELEMS: usize = 1 << 24;

fn half_conv<T: Element + Cast>(
    x: &Data,
    x_shape: &[i32],
    w: &Data,
    w_shape: &[i32],
    p: &ConvParams<'_>,
    buf: &mut Buffer,
    out_shape: &[i32],
) {
    let widen = |d: &Data, s: &[i32]| -> Vec<f32> {
        to_contiguous_vec::<T>(d, s)
            .iter()
            .map(|v| v.cast::<f32>())
            .collect()
    };
    let (xs, ws) = (widen(x, x_shape), widen(w, w_shape));
    let mut o32 = vec![0f32; out_shape.iter().map(|&d| d as usize).product()];
    run::<f32>(&xs, x_shape, &ws, w_shape, p, &mut o32, out_shape);
    let o = buf.as_mut_slice::<T>().expect("heap buffer");
    for (d, s) in o.iter_mut().zip(&o32) {
        *d = s.cast::<T>();
    }
}

/// Where the kernel taps of one spatial axis land in the input. Computed
/// per tap rather than tabled: a table of output positions x taps can be far
/// larger than the convolution's operands.
struct AxisTaps {
    in_len: i64,
    k_len: i64,
    stride: i64,
    pad_lo: i64,
    kdil: i64,
    idil: i64,
    flip: bool,
}

impl AxisTaps {
    /// The input index that output position `o` reads through tap `k`, or
    /// `None` (padding or a hole of the input dilation).
    #[inline]
    fn tap(&self, o: usize, k: usize) -> Option<usize> {
        let k = k as i64;
        let kk = if self.flip { self.k_len - 1 - k } else { k };
        let pos = o as i64 * self.stride - self.pad_lo + kk * self.kdil;
        let ok = pos >= 0 && pos % self.idil == 0 && pos / self.idil < self.in_len;
        ok.then_some((pos / self.idil) as usize)
    }
}

fn run<T: Element + Cast>(
    x: &[T],
    x_shape: &[i32],
    w: &[T],
    w_shape: &[i32],
    p: &ConvParams<'_>,
    out: &mut [T],
    out_shape: &[i32],
) {
    let nd = x_shape.len() - 2;
    let n = x_shape[0] as usize;
    let c_in = x_shape[nd + 1] as usize;
    let c_out = w_shape[0] as usize;
    let g = p.groups as usize;
    let (cin_g, cout_g) = (c_in / g, c_out / g);
    let in_sp: Vec<usize> = x_shape[1..=nd].iter().map(|&d| d as usize).collect();
    let out_sp: Vec<usize> = out_shape[1..=nd].iter().map(|&d| d as usize).collect();
    let k_sp: Vec<usize> = w_shape[1..=nd].iter().map(|&d| d as usize).collect();
    let taps: Vec<AxisTaps> = (0..nd)
        .map(|a| AxisTaps {
            in_len: in_sp[a] as i64,
            k_len: k_sp[a] as i64,
            stride: p.strides[a] as i64,
            pad_lo: p.padding_lo[a] as i64,
            kdil: p.kernel_dilation[a] as i64,
            idil: p.input_dilation[a] as i64,
            flip: p.flip,
        })
        .collect();
    let n_out: usize = out_sp.iter().product();
    let n_k: usize = k_sp.iter().product();
    let rows = n * n_out;
    let cols = n_k * cin_g;
    if rows == 0 || c_out == 0 {
        return;
    }
    // Row-major strides of the input's spatial axes (in elements of one channel row).
    let mut in_stride = vec![0usize; nd];
    let mut acc = c_in;
    for a in (0..nd).rev() {
        in_stride[a] = acc;
        acc *= in_sp[a];
    }
    let img = acc;

    if cols == 0 {
        return;
    }
    // im2col in blocks of rows, so the scratch stays near SCRATCH_ELEMS
    // elements (or one row) however large the output is.
    let chunk = (SCRATCH_ELEMS / cols).clamp(1, rows);
    let mut scratch = vec![T::default(); chunk * cols];
    for grp in 0..g {
        let wg = &w[grp * cout_g * cols..];
        for r0 in (0..rows).step_by(chunk) {
            let nr = chunk.min(rows - r0);
            let col = &mut scratch[..nr * cols];
            col.fill(T::default());
            // im2col: one row per (batch, output position), columns (taps, channel).
            col.par_chunks_mut(cols).enumerate().for_each(|(ri, row)| {
                let r = r0 + ri;
                let b = r / n_out;
                let mut o = r % n_out;
                let mut oi = vec![0usize; nd];
                for a in (0..nd).rev() {
                    oi[a] = o % out_sp[a];
                    o /= out_sp[a];
                }
                for t in 0..n_k {
                    let mut rem = t;
                    let mut base = Some(b * img + grp * cin_g);
                    for a in (0..nd).rev() {
                        let k = rem % k_sp[a];
                        rem /= k_sp[a];
                        base = match (base, taps[a].tap(oi[a], k)) {
                            (Some(bs), Some(i)) => Some(bs + i * in_stride[a]),
                            _ => None,
                        };
                    }
                    if let Some(bs) = base {
                        row[t * cin_g..(t + 1) * cin_g].copy_from_slice(&x[bs..bs + cin_g]);
                    }
                }
            });
            // out[r0.., grp·cout_g ..] = col (nr × cols) @ w_grpᵀ (cols × cout_g).
            let par = if nr * cols * cout_g >= 1 << 18 {
                Parallelism::Rayon(0)
            } else {
                Parallelism::None
            };
            // SAFETY: col is nr × cols row-major, wg holds cout_g rows of
            // `cols` weights, and the output block (nr × cout_g with row
            // stride c_out, from row r0 and column grp·cout_g) lies inside
            // `out`, which has rows × c_out elements.
            unsafe {
                gemm::gemm(
                    nr,
                    cout_g,
                    cols,
                    out.as_mut_ptr().add(r0 * c_out + grp * cout_g),
                    1,
                    c_out as isize,
                    false,
                    col.as_ptr(),
                    1,
                    cols as isize,
                    wg.as_ptr(),
                    cols as isize,
                    1,
                    T::default(),
                    T::from_f64(1.0),
                    false,
                    false,
                    false,
                    par,
                );
            }
        }
    }
}
