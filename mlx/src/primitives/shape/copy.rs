//! Strided copies for the shape primitives. They move bits, not values, so
//! they dispatch on the element size (1, 2, 4 or 8 bytes) instead of the
//! dtype: one kernel serves bool, the integers, the floats and complex64.

use crate::array::{row_major_strides, Data};
use crate::backend::cpu::copy::for_each_row;
use crate::backend::cpu::elementwise::fresh_output;
use crate::backend::cpu::PAR_THRESHOLD;
use crate::element::dispatch_bits;
use crate::primitive::Spec;
use crate::{Buffer, Element, Error, Result};
use rayon::prelude::*;

/// Lowest and highest element index that a view (`shape`, `strides`,
/// `offset`) touches; `None` when it has no elements. Computed in `i128`:
/// a hostile file's strides and offset near `2^63` must not wrap.
pub(crate) fn extent(shape: &[i32], strides: &[isize], offset: i128) -> Option<(i128, i128)> {
    if shape.iter().any(|&d| d <= 0) {
        return None;
    }
    let (mut lo, mut hi) = (offset, offset);
    for (&d, &s) in shape.iter().zip(strides) {
        // |(d - 1) * s| < 2^94 and ndim < 2^31: the sums stay far inside i128.
        let delta = (d as i128 - 1) * s as i128;
        if delta < 0 {
            lo += delta;
        } else {
            hi += delta;
        }
    }
    Some((lo, hi))
}

/// Whether `strides` lay out `shape` densely in row-major order (size-1 axes ignored).
pub(crate) fn is_row_major(shape: &[i32], strides: &[isize]) -> bool {
    let mut expect = 1isize;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d == 0 {
            return true;
        }
        if d != 1 && s != expect {
            return false;
        }
        expect *= d as isize;
    }
    true
}

/// Checks that a view stays inside a buffer of `len` elements.
pub(crate) fn check_in_bounds(
    op: &str,
    shape: &[i32],
    strides: &[isize],
    offset: impl Into<i128>,
    len: usize,
) -> Result<()> {
    let offset = offset.into();
    match extent(shape, strides, offset) {
        Some((lo, hi)) if lo < 0 || hi >= len as i128 => Err(Error::invalid(
            op,
            format!(
                "view of shape {shape:?} with strides {strides:?} and offset {offset} \
                 reaches elements {lo}..={hi} of a buffer of {len}"
            ),
        )),
        _ => Ok(()),
    }
}

/// `dst[j] = f(dst[j], src[i])` for every element, walking `src` (a view
/// shaped `shape`) and the destination view (`dst_strides`, `dst_offset`)
/// in the same row-major order. The destination view must not overlap
/// itself and must lie inside `dst` (callers check with [`check_in_bounds`]).
pub(crate) fn combine_into<T: Element>(
    dst: &mut [T],
    dst_strides: &[isize],
    dst_offset: usize,
    src: &Data,
    shape: &[i32],
    f: impl Fn(T, T) -> T + Sync,
) {
    if shape.contains(&0) {
        return;
    }
    let s = src.buffer.as_slice::<T>();
    if shape.is_empty() {
        dst[dst_offset] = f(dst[dst_offset], s[src.offset]);
        return;
    }
    // Both sides dense and row-major: one flat run.
    let n: usize = shape.iter().map(|&d| d as usize).product();
    let dense = is_row_major(shape, &src.strides) && is_row_major(shape, dst_strides);
    let (shape, src_strides, dst_strides): (&[i32], Vec<isize>, Vec<isize>) = if dense {
        (&[n as i32][..], vec![1], vec![1])
    } else {
        (shape, src.strides.clone(), dst_strides.to_vec())
    };
    let nd = shape.len() - 1;
    let (len, s_stride, d_stride) = (shape[nd] as usize, src_strides[nd], dst_strides[nd]);
    let mut rows: Vec<(isize, isize)> = Vec::new();
    for_each_row(shape, &src_strides, src.offset, |b, _, _| rows.push((b, 0)));
    let mut k = 0;
    for_each_row(shape, &dst_strides, dst_offset, |b, _, _| {
        rows[k].1 = b;
        k += 1;
    });
    let addr = dst.as_mut_ptr() as usize;
    let dst_len = dst.len();
    let run = |&(sb, db): &(isize, isize)| {
        if s_stride == 1 && d_stride == 1 {
            // Both runs contiguous: a slice loop the compiler vectorizes.
            let (sb, db) = (sb as usize, db as usize);
            assert!(db + len <= dst_len, "destination run in bounds");
            // SAFETY: the run is in bounds (checked above) and the
            // destination view does not overlap itself, so no two runs
            // share an element.
            let d = unsafe { std::slice::from_raw_parts_mut((addr as *mut T).add(db), len) };
            d.iter_mut()
                .zip(&s[sb..sb + len])
                .for_each(|(o, &v)| *o = f(*o, v));
            return;
        }
        for i in 0..len as isize {
            let j = (db + i * d_stride) as usize;
            assert!(j < dst_len, "destination index in bounds");
            // SAFETY: `j` is in bounds (checked above) and the destination
            // view does not overlap itself, so no two runs write one element.
            unsafe {
                let p = (addr as *mut T).add(j);
                p.write(f(p.read(), s[(sb + i * s_stride) as usize]));
            }
        }
    };
    if n >= PAR_THRESHOLD && rows.len() > 1 {
        rows.par_iter()
            .with_min_len((PAR_THRESHOLD / len.max(1)).max(1))
            .for_each(run);
    } else if dense && n >= PAR_THRESHOLD {
        // One long run: split it into chunks.
        let (sb, db) = rows[0];
        (0..n.div_ceil(PAR_THRESHOLD))
            .into_par_iter()
            .for_each(|c| {
                let lo = c * PAR_THRESHOLD;
                let hi = (lo + PAR_THRESHOLD).min(n);
                for i in lo..hi {
                    let j = db as usize + i;
                    assert!(j < dst_len, "destination index in bounds");
                    // SAFETY: as above; chunks are disjoint.
                    unsafe {
                        let p = (addr as *mut T).add(j);
                        p.write(f(p.read(), s[sb as usize + i]));
                    }
                }
            });
    } else {
        rows.iter().for_each(run);
    }
}

/// A row-major copy of the elements of `src` (a view shaped `spec.shape`).
pub(crate) fn contiguous_copy(src: &Data, spec: &Spec) -> Data {
    let mut buf = fresh_output(spec);
    let strides = row_major_strides(&spec.shape);
    dispatch_bits!(spec.dtype, T => combine_into::<T>(
        buf.as_mut_slice::<T>().expect("heap buffer"),
        &strides,
        0,
        src,
        &spec.shape,
        |_, x| x,
    ));
    Data::contiguous(buf, &spec.shape)
}

/// `src` itself when it is row-major, else a row-major copy.
pub(crate) fn row_major(src: &Data, spec: &Spec) -> Data {
    if src.is_row_contiguous(&spec.shape) {
        src.clone()
    } else {
        contiguous_copy(src, spec)
    }
}

/// A heap buffer of `spec` where every element has the bits of element 0 of `value`.
pub(crate) fn filled(value: &Data, spec: &Spec) -> Buffer {
    let mut buf = fresh_output(spec);
    dispatch_bits!(spec.dtype, T => {
        let v = value.slice::<T>().first().copied().unwrap_or_default();
        let out = buf.as_mut_slice::<T>().expect("heap buffer");
        if out.len() >= PAR_THRESHOLD {
            out.par_chunks_mut(PAR_THRESHOLD).for_each(|c| c.fill(v));
        } else {
            out.fill(v);
        }
    });
    buf
}

/// A row-major heap copy of `src` shaped `spec`, reusing the input's
/// buffer when `owner` can donate it (the destination of an update).
pub(crate) fn writable_copy(owner: &crate::Array, spec: &Spec) -> Result<Buffer> {
    if let Some(b) = owner.try_donate() {
        return Ok(b);
    }
    let d = owner.data()?;
    if d.is_row_contiguous(&spec.shape) {
        // One memcpy (a decode step copies every KV cache it updates).
        let (start, len) = (
            d.offset * spec.dtype.size(),
            spec.size() * spec.dtype.size(),
        );
        return Ok(Buffer::from_bytes(&d.buffer.bytes()[start..start + len]));
    }
    let c = contiguous_copy(&d, spec);
    Ok(std::sync::Arc::try_unwrap(c.buffer).unwrap_or_else(|b| Buffer::from_bytes(b.bytes())))
}
