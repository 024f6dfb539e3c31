//! Gather and scatter kernels (Gather, GatherAxis, Scatter, ScatterAxis,
//! MaskedScatter).
//!
//! Indices of any integer dtype are read row-major and widened to `i64`.
//! A negative index counts from the end of its axis once (MLX's rule); an
//! index that is still outside the axis, or a slice that would run past the
//! end of the axis, is an error. MLX reads and writes such positions
//! unchecked (undefined behaviour), so the error only replaces garbage.

use super::copy::{for_each_row, to_contiguous_vec};
use super::num::Num;
use super::scan::mlx_half_result;
use super::PAR_THRESHOLD;
use crate::array::{row_major_strides, Data};
use crate::buffer::Buffer;
use crate::element::dispatch_bits;
use crate::primitive::Spec;
use crate::{dispatch_dtype, Array, Dtype, Element, Error, Result};
use rayon::prelude::*;

/// How a scatter combines the value already in the output with an update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Plain assignment (the last update written wins).
    Assign,
    /// `out += update`.
    Sum,
    /// `out *= update`.
    Prod,
    /// `out = out > update ? out : update` (MLX's comparison, so a NaN
    /// already in the output is replaced).
    Max,
    /// `out = out < update ? out : update`.
    Min,
}

impl Combine {
    #[inline]
    fn apply<T: Num>(self, cur: T, upd: T) -> T {
        match self {
            Combine::Assign => upd,
            Combine::Sum => mlx_half_result(cur.add(upd)),
            Combine::Prod => mlx_half_result(cur.mul(upd)),
            Combine::Max => {
                if upd.lt(cur) {
                    cur
                } else {
                    upd
                }
            }
            Combine::Min => {
                if cur.lt(upd) {
                    cur
                } else {
                    upd
                }
            }
        }
    }
}

/// Whether `dtype` can index (every integer dtype; not bool, floats or complex).
pub fn is_index_dtype(dtype: Dtype) -> bool {
    !dtype.is_inexact() && dtype != Dtype::Bool
}

/// The values of an integer index array in row-major order, as `i64`
/// (uint64 values above `i64::MAX` become `i64::MAX`, which no axis holds).
pub fn index_values(op: &str, a: &Array) -> Result<Vec<i64>> {
    fn widen<T: Element>(d: &Data, shape: &[i32], f: impl Fn(T) -> i64) -> Vec<i64> {
        to_contiguous_vec::<T>(d, shape)
            .into_iter()
            .map(f)
            .collect()
    }
    let d = a.data()?;
    let s = a.shape();
    Ok(match a.dtype() {
        Dtype::Uint8 => widen(&d, s, |x: u8| x as i64),
        Dtype::Uint16 => widen(&d, s, |x: u16| x as i64),
        Dtype::Uint32 => widen(&d, s, |x: u32| x as i64),
        Dtype::Uint64 => widen(&d, s, |x: u64| i64::try_from(x).unwrap_or(i64::MAX)),
        Dtype::Int8 => widen(&d, s, |x: i8| x as i64),
        Dtype::Int16 => widen(&d, s, |x: i16| x as i64),
        Dtype::Int32 => widen(&d, s, |x: i32| x as i64),
        Dtype::Int64 => widen(&d, s, |x: i64| x),
        other => {
            return Err(Error::invalid(
                op,
                format!("indices must have an integer dtype, found {other}"),
            ))
        }
    })
}

/// `v` wrapped once if negative, checked so that `len` elements from it fit
/// in an axis of `dim` elements.
#[inline]
fn wrap(op: &str, v: i64, dim: i32, len: i32, axis: usize) -> Result<isize> {
    let dim = dim as i64;
    let w = if v < 0 { v + dim } else { v };
    if w < 0 || w >= dim || w + Ord::max(len, 1) as i64 > dim {
        let what = if len > 1 {
            format!("a slice of {len} elements from index {v}")
        } else {
            format!("index {v}")
        };
        return Err(Error::invalid(
            op,
            format!("{what} is out of bounds for axis {axis} of size {dim}"),
        ));
    }
    Ok(w as isize)
}

/// The element offset of every position of `shape` (row-major order) in
/// data laid out with `strides` from `offset`.
pub fn offsets(shape: &[i32], strides: &[isize], offset: isize) -> Vec<isize> {
    let n: usize = shape.iter().map(|&d| Ord::max(d, 0) as usize).product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let off = usize::try_from(offset).unwrap_or(0);
    let shift = offset - off as isize;
    for_each_row(shape, strides, off, |base, len, stride| {
        for i in 0..len as isize {
            out.push(base + shift + i * stride);
        }
    });
    out
}

/// Gather: for every index position p, the slice of `src` of size
/// `slice_sizes` that starts at `indices[j][p]` on axis `axes[j]` (0 on the
/// other axes). `indices` share one shape; `out` is `I ++ slice_sizes`.
pub fn gather(
    src: &Array,
    indices: &[Array],
    axes: &[usize],
    slice_sizes: &[i32],
    out: &Spec,
) -> Result<Data> {
    let op = "Gather";
    let mut buf = Buffer::zeroed(out.size() * out.dtype.size());
    let slice: usize = slice_sizes.iter().map(|&d| d as usize).product();
    if out.size() == 0 || slice == 0 {
        return Ok(Data::contiguous(buf, &out.shape));
    }
    let n = out.size() / slice;
    let d = src.data()?;
    let shape = src.shape();
    let mut bases = vec![d.offset as isize; n];
    for (ix, &ax) in indices.iter().zip(axes) {
        let vals = index_values(op, ix)?;
        for (b, &v) in bases.iter_mut().zip(&vals) {
            *b += wrap(op, v, shape[ax], slice_sizes[ax], ax)? * d.strides[ax];
        }
    }
    let offs = offsets(slice_sizes, &d.strides, 0);
    dispatch_bits!(out.dtype, T => {
        let s = d.buffer.as_slice::<T>();
        let o = buf.as_mut_slice::<T>().expect("heap buffer");
        let fill = |(p, chunk): (usize, &mut [T])| {
            let b = bases[p];
            for (x, &off) in chunk.iter_mut().zip(&offs) {
                *x = s[(b + off) as usize];
            }
        };
        if out.size() >= PAR_THRESHOLD {
            o.par_chunks_mut(slice).enumerate().for_each(fill);
        } else {
            o.chunks_mut(slice).enumerate().for_each(fill);
        }
    });
    Ok(Data::contiguous(buf, &out.shape))
}

/// GatherAxis (take_along_axis): `out[m] = src[m with m[axis] = idx[m]]`;
/// `idx` has the output's shape, equal to `src`'s except along `axis`.
pub fn gather_axis(src: &Array, idx: &Array, axis: usize, out: &Spec) -> Result<Data> {
    let op = "GatherAxis";
    let mut buf = Buffer::zeroed(out.size() * out.dtype.size());
    if out.size() == 0 {
        return Ok(Data::contiguous(buf, &out.shape));
    }
    let vals = index_values(op, idx)?;
    let d = src.data()?;
    let mut strides = d.strides.clone();
    strides[axis] = 0;
    let mut pos = offsets(&out.shape, &strides, d.offset as isize);
    let dim = src.shape()[axis];
    for (p, &v) in pos.iter_mut().zip(&vals) {
        *p += wrap(op, v, dim, 1, axis)? * d.strides[axis];
    }
    dispatch_bits!(out.dtype, T => {
        let s = d.buffer.as_slice::<T>();
        let o = buf.as_mut_slice::<T>().expect("heap buffer");
        if o.len() >= PAR_THRESHOLD {
            o.par_iter_mut().zip(pos.par_iter()).for_each(|(x, &p)| *x = s[p as usize]);
        } else {
            o.iter_mut().zip(&pos).for_each(|(x, &p)| *x = s[p as usize]);
        }
    });
    Ok(Data::contiguous(buf, &out.shape))
}

/// A row-major copy of `dst` to write the scatter into (its own buffer when
/// it can be donated).
fn writable<T: Element>(dst: &Array) -> Result<Buffer> {
    if let Some(b) = dst.try_donate() {
        return Ok(b);
    }
    Ok(Buffer::from_slice(&to_contiguous_vec::<T>(
        &dst.data()?,
        dst.shape(),
    )))
}

/// Scatter: `out = dst`, then for every index position p (row-major) and
/// every element j of the update slice, `out[start(p) + j] ⊕= upd[p, j]`.
/// `upd` is shaped `I ++ slice` with `slice` of `dst.ndim()` dims.
pub fn scatter(
    dst: &Array,
    indices: &[Array],
    upd: &Array,
    axes: &[usize],
    how: Combine,
    out: &Spec,
) -> Result<Data> {
    let op = "Scatter";
    let nd = out.shape.len();
    let slice_shape = &upd.shape()[upd.ndim() - nd..];
    let slice: usize = slice_shape.iter().map(|&d| d as usize).product();
    let n = upd.size().checked_div(slice).unwrap_or(0);
    let rm = row_major_strides(&out.shape);
    let mut bases = vec![0isize; n];
    for (ix, &ax) in indices.iter().zip(axes) {
        let vals = index_values(op, ix)?;
        for (b, &v) in bases.iter_mut().zip(&vals) {
            *b += wrap(op, v, out.shape[ax], slice_shape[ax], ax)? * rm[ax];
        }
    }
    let offs = offsets(slice_shape, &rm, 0);
    let data = dispatch_dtype!(out.dtype, T => {
        let mut buf = writable::<T>(dst)?;
        let u = to_contiguous_vec::<T>(&upd.data()?, upd.shape());
        let o = buf.as_mut_slice::<T>().expect("heap buffer");
        for (p, &b) in bases.iter().enumerate() {
            for (j, &off) in offs.iter().enumerate() {
                let at = (b + off) as usize;
                o[at] = how.apply(o[at], u[p * slice + j]);
            }
        }
        Data::contiguous(buf, &out.shape)
    });
    Ok(data)
}

/// ScatterAxis (put_along_axis): `out = dst`, then for every position m of
/// `idx` (row-major), `out[m with m[axis] = idx[m]] ⊕= upd[m]`.
pub fn scatter_axis(
    dst: &Array,
    idx: &Array,
    upd: &Array,
    axis: usize,
    how: Combine,
    out: &Spec,
) -> Result<Data> {
    let op = "ScatterAxis";
    let vals = index_values(op, idx)?;
    let rm = row_major_strides(&out.shape);
    let mut strides = rm.clone();
    strides[axis] = 0;
    let mut pos = offsets(idx.shape(), &strides, 0);
    for (p, &v) in pos.iter_mut().zip(&vals) {
        *p += wrap(op, v, out.shape[axis], 1, axis)? * rm[axis];
    }
    let data = dispatch_dtype!(out.dtype, T => {
        let mut buf = writable::<T>(dst)?;
        let u = to_contiguous_vec::<T>(&upd.data()?, upd.shape());
        let o = buf.as_mut_slice::<T>().expect("heap buffer");
        for (&p, &x) in pos.iter().zip(&u) {
            o[p as usize] = how.apply(o[p as usize], x);
        }
        Data::contiguous(buf, &out.shape)
    });
    Ok(data)
}

/// MaskedScatter: `out = dst`; per batch (axis 0 of the mask), the
/// positions where the mask is true take the batch's values in order.
/// Fewer values than selected positions is an error; extra ones are unused.
pub fn masked_scatter(dst: &Array, mask: &Array, values: &Array, out: &Spec) -> Result<Data> {
    let m = to_contiguous_vec::<bool>(&mask.data()?, mask.shape());
    let batch = mask
        .shape()
        .first()
        .copied()
        .unwrap_or(1)
        .clamp(0, i32::MAX) as usize;
    let data = dispatch_dtype!(out.dtype, T => {
        let mut buf = writable::<T>(dst)?;
        if batch == 0 || m.is_empty() {
            return Ok(Data::contiguous(buf, &out.shape));
        }
        let v = to_contiguous_vec::<T>(&values.data()?, values.shape());
        let (mb, vb) = (m.len() / batch, v.len() / batch);
        let o = buf.as_mut_slice::<T>().expect("heap buffer");
        for b in 0..batch {
            let mut used = 0;
            for i in 0..mb {
                if m[b * mb + i] {
                    if used >= vb {
                        return Err(Error::invalid(
                            "MaskedScatter",
                            format!(
                                "the mask selects more than the {vb} values given for batch {b} \
                                 (mask shape {:?}, values shape {:?})",
                                mask.shape(),
                                values.shape()
                            ),
                        ));
                    }
                    o[b * mb + i] = v[b * vb + used];
                    used += 1;
                }
            }
        }
        Data::contiguous(buf, &out.shape)
    });
    Ok(data)
}
