//! The f32 staging helpers the fused kernels (`primitives::fast`), the
//! quantized and the FFT kernels share. Every such kernel computes in f32;
//! `round_t` rounds an intermediate to the array's dtype where MLX's
//! decomposition would, so half-precision results follow MLX's rounding
//! steps.

use crate::array::Data;
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::num::{f16_round, f16_to_f32};
use crate::buffer::Buffer;
use crate::{dispatch_dtype, Array, Dtype, Result};
use gemm::Parallelism;
use half::{bf16, f16};
use rayon::prelude::*;

/// `e^x` in f32. MLX's CPU `Exp` is a Cephes-style polynomial; this is the
/// one place to swap it in (`backend::cpu::math`) once that lands on main.
#[inline]
pub fn mlx_exp(x: f32) -> f32 {
    x.exp()
}

/// C's `rint` in the default rounding mode: round half to even.
#[inline]
pub fn mlx_round(x: f32) -> f32 {
    x.round_ties_even()
}

/// The elements of an evaluated array as f32, row-major (any real dtype).
pub fn read_f32(a: &Array) -> Result<Vec<f32>> {
    let d = a.data()?;
    Ok(dispatch_dtype!(a.dtype(), T => {
        let v = to_contiguous_vec::<T>(&d, a.shape());
        v.into_iter().map(|x| x.cast::<f32>()).collect()
    }))
}

/// Row-major data of `dtype` from f32 values (one rounding per element).
pub fn write_f32(v: &[f32], dtype: Dtype, shape: &[i32]) -> Data {
    // Converted straight into the output buffer: a staging vector of the
    // converted values cost an allocation and a second copy on every call
    // (the decode step's ~120 quantized products and its small fused nodes).
    let buf = dispatch_dtype!(dtype, T => {
        let mut buf = Buffer::for_elements::<T>(v.len());
        let out = buf.as_mut_slice::<T>().expect("fresh heap buffer");
        if v.len() >= super::PAR_THRESHOLD {
            out.par_iter_mut().zip(v).for_each(|(o, &x)| *o = x.cast::<T>());
        } else {
            out.iter_mut().zip(v).for_each(|(o, &x)| *o = x.cast::<T>());
        }
        buf
    });
    Data::contiguous(buf, shape)
}

/// Rounds an f32 to `dtype`'s precision and back (identity for f32/f64).
pub fn round_fn(dtype: Dtype) -> fn(f32) -> f32 {
    match dtype {
        Dtype::Float16 => |x| f16_to_f32(f16_round(x)),
        Dtype::Bfloat16 => |x| bf16::from_f32(x).to_f32(),
        _ => |x| x,
    }
}

/// The most negative finite value of a float dtype, as f32 (MLX masks
/// attention scores with `finfo(dtype).min`).
pub fn finfo_min(dtype: Dtype) -> f32 {
    match dtype {
        Dtype::Float16 => f16::MIN.to_f32(),
        Dtype::Bfloat16 => bf16::MIN.to_f32(),
        _ => f32::MIN,
    }
}

/// A row-major f32 output that parallel tasks write disjoint blocks of.
pub struct Tile {
    ptr: *mut f32,
    len: usize,
}
// SAFETY: users write disjoint blocks (documented on `gemm_block`).
unsafe impl Send for Tile {}
unsafe impl Sync for Tile {}

impl Tile {
    /// Wraps `out` for the duration of a parallel loop.
    pub fn new(out: &mut [f32]) -> Tile {
        Tile {
            ptr: out.as_mut_ptr(),
            len: out.len(),
        }
    }

    /// Where column `col0` of the first row is, for a kernel that writes
    /// its block itself (the safety rules of [`Tile::gemm_block`] apply).
    pub fn column(&self, col0: usize) -> *mut f32 {
        assert!(col0 <= self.len);
        self.ptr.wrapping_add(col0)
    }

    /// `out[i, col0 + j] = Σ_l lhs[i, l] · rhs[l, j]` for i < m, j < nb,
    /// where out has leading dimension `ld`, lhs is row-major with row
    /// stride `lhs_rs`, and rhs has strides (`rhs_rs`, `rhs_cs`).
    ///
    /// # Safety
    /// No other thread may touch the block (rows 0..m, columns
    /// col0..col0+nb) at the same time; the block must lie inside the output
    /// and lhs/rhs must hold every element the strides reach.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_block(
        &self,
        m: usize,
        nb: usize,
        k: usize,
        col0: usize,
        ld: usize,
        lhs: &[f32],
        lhs_rs: isize,
        rhs: &[f32],
        rhs_rs: isize,
        rhs_cs: isize,
    ) {
        debug_assert!((m - 1) * ld + col0 + nb <= self.len);
        gemm::gemm(
            m,
            nb,
            k,
            self.ptr.add(col0),
            1,
            ld as isize,
            false,
            lhs.as_ptr(),
            1,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// Applies `f` to every (input row, output row) pair of width `d`.
pub(crate) fn rows_par(
    x: &[f32],
    out: &mut [f32],
    d: usize,
    f: impl Fn((&[f32], &mut [f32])) + Sync + Send,
) {
    if d == 0 {
        return;
    }
    if x.len() >= super::PAR_THRESHOLD {
        x.par_chunks(d).zip(out.par_chunks_mut(d)).for_each(f);
    } else {
        x.chunks(d).zip(out.chunks_mut(d)).for_each(f);
    }
}
