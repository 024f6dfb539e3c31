//! An array's elements as bytes in row-major order, as files store them
//! (native and MLX constants, `.npy`, safetensors): views are written as
//! their values, and an array already in that order lends its own buffer.

use super::Array;
use crate::buffer::Buffer;
use crate::layout::{to_contiguous_vec, Data};
use crate::Result;

/// An array's row-major bytes: its own buffer when it is already in that
/// order (no copy of a large constant), else a gathered copy.
pub enum RowMajor {
    Shared(Data, std::ops::Range<usize>),
    Owned(Vec<u8>),
}

impl RowMajor {
    pub fn bytes(&self) -> &[u8] {
        match self {
            RowMajor::Shared(d, r) => &d.buffer.bytes()[r.clone()],
            RowMajor::Owned(v) => v,
        }
    }
}

impl Array {
    /// The row-major bytes of the array, evaluating it first (views are
    /// written as their values; no copy when it is already row-major).
    pub fn row_major(&self) -> Result<RowMajor> {
        self.eval()?;
        let d = self.data()?;
        if d.is_row_contiguous(self.shape()) {
            let start = d.offset * self.dtype().size();
            return Ok(RowMajor::Shared(d, start..start + self.nbytes()));
        }
        Ok(RowMajor::Owned(crate::dispatch_dtype!(self.dtype(), T => {
            let v = to_contiguous_vec::<T>(&d, self.shape());
            Buffer::from_slice(&v).bytes().to_vec()
        })))
    }

    /// [`Array::row_major`] as an owned vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        Ok(match self.row_major()? {
            RowMajor::Owned(v) => v,
            shared => shared.bytes().to_vec(),
        })
    }
}
