//! Walking strided data and making row-major copies.

use crate::array::Data;
use crate::buffer::Buffer;
use crate::Element;

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
