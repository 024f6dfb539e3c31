//! Generic element-wise kernels: map one or two (or three) arrays of the
//! same shape into a new row-major array, with contiguous fast paths,
//! buffer donation, and rayon above [`PAR_THRESHOLD`].

use super::copy::{for_each_row, to_contiguous_vec};
use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::buffer::Buffer;
use crate::primitive::Spec;
use crate::{Array, Element, Result};
use rayon::prelude::*;

/// A row-major output buffer for `spec`, reusing a donated input buffer
/// of the same byte size when one of `candidates` can give it.
pub fn output_buffer(spec: &Spec, candidates: &[&Array]) -> Buffer {
    let nbytes = spec.size() * spec.dtype.size();
    for a in candidates {
        if a.nbytes() == nbytes && a.shape() == spec.shape.as_slice() {
            if let Some(b) = a.try_donate() {
                return b;
            }
        }
    }
    Buffer::zeroed(nbytes)
}

/// Fills `out[i] = f(i-th element)` where the input is read row-major.
fn fill_from<T: Element, U: Element>(
    out: &mut [U],
    src: &Data,
    shape: &[i32],
    f: &(impl Fn(T) -> U + Sync),
) {
    let s = src.buffer.as_slice::<T>();
    if src.is_row_contiguous(shape) {
        let s = &s[src.offset..src.offset + out.len()];
        if out.len() >= PAR_THRESHOLD {
            out.par_chunks_mut(PAR_THRESHOLD / 4)
                .zip(s.par_chunks(PAR_THRESHOLD / 4))
                .for_each(|(o, i)| o.iter_mut().zip(i).for_each(|(o, &x)| *o = f(x)));
        } else {
            out.iter_mut().zip(s).for_each(|(o, &x)| *o = f(x));
        }
        return;
    }
    let mut k = 0;
    for_each_row(shape, &src.strides, src.offset, |base, len, stride| {
        for i in 0..len as isize {
            out[k] = f(s[(base + i * stride) as usize]);
            k += 1;
        }
    });
}

/// `out = f(a)` element-wise; `a` has the output's shape.
pub fn unary<T: Element, U: Element>(
    a: &Array,
    out: &Spec,
    f: impl Fn(T) -> U + Sync,
) -> Result<Data> {
    if std::mem::size_of::<T>() == std::mem::size_of::<U>() {
        if let Some(mut buf) = a.try_donate() {
            map_in_place(&mut buf, out.size(), &f);
            return Ok(Data::contiguous(buf, &out.shape));
        }
    }
    let da = a.data()?;
    let mut buf = Buffer::zeroed(out.size() * out.dtype.size());
    fill_from(
        buf.as_mut_slice::<U>().expect("heap buffer"),
        &da,
        a.shape(),
        &f,
    );
    Ok(Data::contiguous(buf, &out.shape))
}

/// Converts the `n` elements of a donated buffer from T to U in place.
fn map_in_place<T: Element, U: Element>(buf: &mut Buffer, n: usize, f: &(impl Fn(T) -> U + Sync)) {
    let addr = buf.bytes_mut().expect("heap buffer").as_mut_ptr() as usize;
    let step = |i: usize| {
        // SAFETY: T and U have the same size; element i is read before it is
        // written, and each index is touched by one thread only.
        unsafe {
            let x = (addr as *const T).add(i).read();
            (addr as *mut U).add(i).write(f(x));
        }
    };
    if n >= PAR_THRESHOLD {
        (0..n)
            .into_par_iter()
            .with_min_len(PAR_THRESHOLD / 4)
            .for_each(step);
    } else {
        (0..n).for_each(step);
    }
}

/// `out = f(a, b)` element-wise; `a` and `b` have the output's shape
/// (broadcast views with zero strides are fine).
pub fn binary<T: Element, U: Element>(
    a: &Array,
    b: &Array,
    out: &Spec,
    f: impl Fn(T, T) -> U + Sync,
) -> Result<Data> {
    let shape = out.shape.as_slice();
    let n = out.size();
    if T::DTYPE == U::DTYPE {
        if let Some(d) = binary_donated(a, b, out, &f)? {
            return Ok(d);
        }
    }
    let (da, db) = (a.data()?, b.data()?);
    let mut buf = Buffer::zeroed(n * U::DTYPE.size());
    let o = buf.as_mut_slice::<U>().expect("heap buffer");
    let sa = da.buffer.as_slice::<T>();
    let sb = db.buffer.as_slice::<T>();
    match (layout(&da, shape), layout(&db, shape)) {
        (Layout::Dense, Layout::Dense) => {
            let (x, y) = (&sa[da.offset..da.offset + n], &sb[db.offset..db.offset + n]);
            zip_fill(o, |i| f(x[i], y[i]));
        }
        (Layout::Dense, Layout::Scalar) => {
            let (x, y) = (&sa[da.offset..da.offset + n], sb[db.offset]);
            zip_fill(o, |i| f(x[i], y));
        }
        (Layout::Scalar, Layout::Dense) => {
            let (x, y) = (sa[da.offset], &sb[db.offset..db.offset + n]);
            zip_fill(o, |i| f(x, y[i]));
        }
        _ => {
            // General strided case: materialise b row-major, then walk a's rows.
            let yb = to_contiguous_vec::<T>(&db, shape);
            let mut k = 0;
            for_each_row(shape, &da.strides, da.offset, |base, len, stride| {
                for i in 0..len as isize {
                    o[k] = f(sa[(base + i * stride) as usize], yb[k]);
                    k += 1;
                }
            });
        }
    }
    Ok(Data::contiguous(buf, shape))
}

#[derive(PartialEq)]
enum Layout {
    Dense,
    Scalar,
    Strided,
}

fn layout(d: &Data, shape: &[i32]) -> Layout {
    if d.strides.iter().all(|&s| s == 0) {
        Layout::Scalar
    } else if d.is_row_contiguous(shape) {
        Layout::Dense
    } else {
        Layout::Strided
    }
}

/// `o[i] = g(i)` for every i, split across threads when large.
fn zip_fill<U: Element>(o: &mut [U], g: impl Fn(usize) -> U + Sync) {
    if o.len() >= PAR_THRESHOLD {
        let chunk = PAR_THRESHOLD / 4;
        o.par_chunks_mut(chunk).enumerate().for_each(|(c, o)| {
            let base = c * chunk;
            for (i, o) in o.iter_mut().enumerate() {
                *o = g(base + i);
            }
        });
    } else {
        for (i, o) in o.iter_mut().enumerate() {
            *o = g(i);
        }
    }
}

/// The binary op written into a donated input buffer (T and U are the same type).
fn binary_donated<T: Element, U: Element>(
    a: &Array,
    b: &Array,
    out: &Spec,
    f: &(impl Fn(T, T) -> U + Sync),
) -> Result<Option<Data>> {
    let shape = out.shape.as_slice();
    let n = out.size();
    let cast = |u: U| -> T {
        // SAFETY: the caller checked T::DTYPE == U::DTYPE, so T and U are one type.
        unsafe { std::mem::transmute_copy::<U, T>(&u) }
    };
    for (donor, other, donor_first) in [(a, b, true), (b, a, false)] {
        if donor.shape() != shape {
            continue;
        }
        let dother = other.data()?;
        let lo = layout(&dother, shape);
        if lo == Layout::Strided {
            continue;
        }
        let Some(mut buf) = donor.try_donate() else {
            continue;
        };
        let so = dother.buffer.as_slice::<T>();
        let o = buf.as_mut_slice::<T>().expect("heap buffer");
        let addr = o.as_mut_ptr() as usize;
        let g = |i: usize| {
            let y = if lo == Layout::Scalar {
                so[dother.offset]
            } else {
                so[dother.offset + i]
            };
            // SAFETY: element i is read before it is written, by one thread.
            let x = unsafe { *(addr as *const T).add(i) };
            let r = if donor_first { f(x, y) } else { f(y, x) };
            unsafe { *(addr as *mut T).add(i) = cast(r) };
        };
        if n >= PAR_THRESHOLD {
            (0..n)
                .into_par_iter()
                .with_min_len(PAR_THRESHOLD / 4)
                .for_each(g);
        } else {
            (0..n).for_each(g);
        }
        return Ok(Some(Data::contiguous(buf, shape)));
    }
    Ok(None)
}

/// `out = f(c, a, b)` for three same-shape inputs (select-like ops).
pub fn ternary<C: Element, T: Element, U: Element>(
    c: &Array,
    a: &Array,
    b: &Array,
    out: &Spec,
    f: impl Fn(C, T, T) -> U + Sync,
) -> Result<Data> {
    let shape = out.shape.as_slice();
    let xc = to_contiguous_vec::<C>(&c.data()?, shape);
    let xa = to_contiguous_vec::<T>(&a.data()?, shape);
    let xb = to_contiguous_vec::<T>(&b.data()?, shape);
    let mut buf = Buffer::zeroed(out.size() * U::DTYPE.size());
    let o = buf.as_mut_slice::<U>().expect("heap buffer");
    if o.len() >= PAR_THRESHOLD {
        o.par_iter_mut()
            .enumerate()
            .for_each(|(i, o)| *o = f(xc[i], xa[i], xb[i]));
    } else {
        for (i, o) in o.iter_mut().enumerate() {
            *o = f(xc[i], xa[i], xb[i]);
        }
    }
    Ok(Data::contiguous(buf, shape))
}
