//! Axis and broadcast arithmetic on shapes (`&[i32]`): no arrays, no
//! graph. Ops and primitives both use it; its errors are the typed
//! [`Error::AxisOutOfBounds`], [`Error::DuplicateAxis`] and
//! [`Error::Broadcast`].
//!
//! ```
//! use mlx::shape::{broadcast_shapes, normalize_axis};
//! assert_eq!(broadcast_shapes("add", &[2, 1], &[3]).unwrap(), vec![2, 3]);
//! assert_eq!(normalize_axis("sum", -1, 3).unwrap(), 2);
//! ```

use crate::{Error, Result};

/// `axis` (negative counts from the end) as an index into `ndim` dimensions.
pub fn normalize_axis(op: &str, axis: i32, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let a = axis as i64;
    if a < -n || a >= n {
        return Err(Error::AxisOutOfBounds {
            op: op.to_string(),
            axis,
            ndim,
        });
    }
    Ok(if a < 0 { (a + n) as usize } else { a as usize })
}

/// Normalised, checked axes; duplicates are an error.
pub fn normalize_axes(op: &str, axes: &[i32], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let ax = normalize_axis(op, a, ndim)?;
        if out.contains(&ax) {
            return Err(Error::DuplicateAxis {
                op: op.to_string(),
                axis: a,
                axes: axes.to_vec(),
            });
        }
        out.push(ax);
    }
    Ok(out)
}

/// The broadcast of two shapes (numpy rules), or an error naming both.
pub fn broadcast_shapes(op: &str, a: &[i32], b: &[i32]) -> Result<Vec<i32>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Broadcast {
                op: op.to_string(),
                a: a.to_vec(),
                b: b.to_vec(),
            });
        };
    }
    Ok(out)
}
