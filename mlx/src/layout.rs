//! Where an array's elements sit in its buffer: [`Data`] (a shared buffer
//! plus strides and offset, in elements), row-major strides, the
//! contiguity test, and walking strided data in row-major order (to copy it
//! out). Views (transpose, broadcast, slices) are new strides over the same
//! buffer; everything that reads them goes through here.

use crate::buffer::Buffer;
use crate::Element;
use std::sync::Arc;

/// Evaluated data: a buffer and the layout of this array inside it.
/// Strides and offset are in elements.
#[derive(Clone, Debug)]
pub struct Data {
    pub buffer: Arc<Buffer>,
    pub strides: Vec<isize>,
    pub offset: usize,
}

/// Row-major strides (in elements) for `shape`.
pub fn row_major_strides(shape: &[i32]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d.max(1) as isize;
    }
    strides
}

impl Data {
    /// Row-major data filling `buffer` from its start.
    pub fn contiguous(buffer: Buffer, shape: &[i32]) -> Data {
        Data {
            buffer: Arc::new(buffer),
            strides: row_major_strides(shape),
            offset: 0,
        }
    }

    /// Whether the elements are laid out row-major and densely from `offset`.
    pub fn is_row_contiguous(&self, shape: &[i32]) -> bool {
        let mut expect = 1isize;
        for (&d, &s) in shape.iter().zip(&self.strides).rev() {
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

    /// The elements from `offset` on, typed. Index with the strides.
    pub fn slice<T: Element>(&self) -> &[T] {
        &self.buffer.as_slice::<T>()[self
            .offset
            .min(self.buffer.len() / std::mem::size_of::<T>())..]
    }
}

/// Calls `f(row_start, len, stride)` for each run along the last axis, in
/// row-major order; offsets are in elements from the buffer start.
pub fn for_each_row(
    shape: &[i32],
    strides: &[isize],
    offset: usize,
    mut f: impl FnMut(isize, usize, isize),
) {
    if shape.contains(&0) {
        return;
    }
    if shape.is_empty() {
        f(offset as isize, 1, 1);
        return;
    }
    let nd = shape.len();
    let (len, stride) = (shape[nd - 1] as usize, strides[nd - 1]);
    let outer = &shape[..nd - 1];
    let mut idx = vec![0i32; outer.len()];
    let mut base = offset as isize;
    loop {
        f(base, len, stride);
        // Advance the outer multi-index like an odometer.
        let mut ax = outer.len();
        loop {
            if ax == 0 {
                return;
            }
            ax -= 1;
            idx[ax] += 1;
            base += strides[ax];
            if idx[ax] < outer[ax] {
                break;
            }
            base -= strides[ax] * outer[ax] as isize;
            idx[ax] = 0;
        }
    }
}

/// The elements of `data` (shaped `shape`) in row-major order.
pub fn to_contiguous_vec<T: Element>(data: &Data, shape: &[i32]) -> Vec<T> {
    let n: usize = shape.iter().map(|&d| d as usize).product();
    let src = data.buffer.as_slice::<T>();
    if data.is_row_contiguous(shape) {
        return src[data.offset..data.offset + n].to_vec();
    }
    let mut out = Vec::with_capacity(n);
    for_each_row(shape, &data.strides, data.offset, |base, len, stride| {
        for i in 0..len as isize {
            out.push(src[(base + i * stride) as usize]);
        }
    });
    out
}

/// The elements of `data` (shaped `shape`) in row-major order, borrowed
/// when they already are, else copied.
pub fn row_major<'a, T: Element>(data: &'a Data, shape: &[i32]) -> std::borrow::Cow<'a, [T]> {
    if data.is_row_contiguous(shape) {
        let n: usize = shape.iter().map(|&d| d as usize).product();
        return std::borrow::Cow::Borrowed(&data.slice::<T>()[..n]);
    }
    std::borrow::Cow::Owned(to_contiguous_vec(data, shape))
}

/// `data` itself when it is row-major from a buffer of its own size, else a row-major copy.
pub fn make_contiguous<T: Element>(data: &Data, shape: &[i32]) -> Data {
    if data.is_row_contiguous(shape) {
        return data.clone();
    }
    Data::contiguous(
        Buffer::from_slice(&to_contiguous_vec::<T>(data, shape)),
        shape,
    )
}
