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

    /// Whether these strides and offset keep every element of an array of
    /// `shape` and `dtype` inside the buffer, and (for bool) whether the
    /// buffer holds only 0 and 1 bytes. Kernels index buffers through raw
    /// pointers and read bool buffers as `bool`: both rely on this, so data
    /// built outside the library ([`Array::from_data`](crate::Array::from_data),
    /// a user primitive's kernel) is checked before an array holds it.
    pub fn check_fits(&self, shape: &[i32], dtype: crate::Dtype) -> Result<(), String> {
        if self.strides.len() != shape.len() {
            return Err(format!(
                "{} strides for the {} axes of shape {shape:?}",
                self.strides.len(),
                shape.len()
            ));
        }
        if let Some(&d) = shape.iter().find(|&&d| d < 0) {
            return Err(format!("negative dimension {d} in shape {shape:?}"));
        }
        let elements = self.buffer.len() / dtype.size();
        if dtype == crate::Dtype::Bool {
            if let Some(b) = self.buffer.bytes().iter().find(|&&b| b > 1) {
                return Err(format!("a bool buffer holds the byte {b}, not 0 or 1"));
            }
        }
        if shape.contains(&0) {
            return Ok(());
        }
        // The lowest and highest element reached, in i128 (no overflow).
        let (mut lo, mut hi) = (self.offset as i128, self.offset as i128);
        for (&d, &s) in shape.iter().zip(&self.strides) {
            let span = (d as i128 - 1) * s as i128;
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        if lo < 0 || hi >= elements as i128 {
            return Err(format!(
                "shape {shape:?} with strides {:?} from offset {} reaches elements {lo}..={hi} of a buffer of {elements} {dtype} elements",
                self.strides, self.offset
            ));
        }
        Ok(())
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
    let mut out = vec![T::default(); n];
    gather_range(data, shape, 0, &mut out);
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

/// Elements `start..start + out.len()` of `data` (shaped `shape`) in
/// row-major order, copied into `out` run by run along the last axis (one
/// chunk of a strided input, without indexing every element from scratch).
pub fn gather_range<T: Element>(data: &Data, shape: &[i32], start: usize, out: &mut [T]) {
    if out.is_empty() {
        return;
    }
    let src = data.buffer.as_slice::<T>();
    let nd = shape.len();
    if nd == 0 {
        out.fill(src[data.offset]);
        return;
    }
    // The multi-index of `start` and its element offset.
    let mut idx = vec![0usize; nd];
    let mut rem = start;
    let mut off = data.offset as isize;
    for ax in (0..nd).rev() {
        let d = shape[ax] as usize;
        idx[ax] = rem % d;
        rem /= d;
        off += idx[ax] as isize * data.strides[ax];
    }
    let (last, stride) = (shape[nd - 1] as usize, data.strides[nd - 1]);
    let mut k = 0;
    while k < out.len() {
        let run = (last - idx[nd - 1]).min(out.len() - k);
        let dst = &mut out[k..k + run];
        match stride {
            // A contiguous run is one copy, a broadcast one a fill.
            1 => dst.copy_from_slice(&src[off as usize..off as usize + run]),
            0 => dst.fill(src[off as usize]),
            _ => {
                for (i, o) in dst.iter_mut().enumerate() {
                    *o = src[(off + i as isize * stride) as usize];
                }
            }
        }
        k += run;
        // Step past the run, then carry into the outer axes like an odometer.
        idx[nd - 1] += run;
        off += run as isize * stride;
        let mut ax = nd - 1;
        while idx[ax] == shape[ax] as usize && ax > 0 {
            off -= shape[ax] as isize * data.strides[ax];
            idx[ax] = 0;
            ax -= 1;
            idx[ax] += 1;
            off += data.strides[ax];
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_range_reads_any_chunk_of_a_strided_view() {
        // A (2, 3, 4) array of 0..24 viewed as its (4, 2, 3) transpose,
        // reversed along the middle axis: element (i, j, k) of the view is
        // source element (1 - j, k, i), i.e. 12 (1 - j) + 4 k + i.
        let src: Vec<u32> = (0..24).collect();
        let data = Data {
            buffer: Arc::new(Buffer::from_slice(&src)),
            strides: vec![1, -12, 4],
            offset: 12,
        };
        let shape = [4, 2, 3];
        let want: Vec<u32> = (0..4)
            .flat_map(|i| (0..2).flat_map(move |j| (0..3).map(move |k| 12 * (1 - j) + 4 * k + i)))
            .collect();
        for start in 0..24 {
            for len in 0..=24 - start {
                let mut out = vec![u32::MAX; len];
                gather_range(&data, &shape, start, &mut out);
                assert_eq!(out, want[start..start + len], "start {start} len {len}");
            }
        }
    }
}
