//! Matrix products: `matmul`, `addmm`, `inner`, `outer`, `tensordot`.
//!
//! The graphs follow MLX's: 1-D operands get an ExpandDims and a final
//! Squeeze, mixed dtypes an AsType, batch axes explicit Broadcast nodes.

use super::shape::broadcast_together;
use super::{broadcast_as, cast_to};
use crate::primitives::linalg::{AddMM, Matmul};
use crate::shape::broadcast_shapes;
use crate::{promote_types, Array, Dtype, Error, Result};

/// Broadcasts the batch axes (all but the last two) of `a` and `b` together.
fn broadcast_batches(op: &str, a: &Array, b: &Array) -> Result<(Array, Array)> {
    let mut out = broadcast_together(op, &[a.clone(), b.clone()], &[-2, -1])?;
    let b = out.pop().expect("two arrays in, two out");
    Ok((out.pop().expect("two arrays in, two out"), b))
}

/// 1-D operands as matrices: a row vector on the left, a column on the right.
fn promote_vectors(op: &str, a: &Array, b: &Array) -> Result<(Array, Array)> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(Error::invalid(
            op,
            format!(
                "inputs must have at least one dimension, found shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let a = if a.ndim() == 1 {
        super::expand_dims(a, &[0])?
    } else {
        a.clone()
    };
    let b = if b.ndim() == 1 {
        super::expand_dims(b, &[1])?
    } else {
        b.clone()
    };
    let (na, nb) = (a.ndim(), b.ndim());
    if a.shape()[na - 1] != b.shape()[nb - 2] {
        return Err(Error::invalid(
            op,
            format!(
                "last dimension of the first input with shape {:?} must match the second \
                 to last dimension of the second input with shape {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok((a, b))
}

/// Removes the axes that `promote_vectors` inserted.
fn squeeze_vectors(out: Array, a_ndim: usize, b_ndim: usize) -> Result<Array> {
    let nd = out.ndim() as i32;
    let mut axes = Vec::new();
    if a_ndim == 1 {
        axes.push(nd - 2);
    }
    if b_ndim == 1 {
        axes.push(nd - 1);
    }
    if axes.is_empty() {
        Ok(out)
    } else {
        super::squeeze(&out, &axes)
    }
}

/// Matrix product with numpy's rules: 1-D operands are promoted to a row
/// (left) or column (right) and the added axis removed afterwards; leading
/// axes are batch axes and broadcast. Only inexact dtypes.
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    let (in_a, in_b) = (a.ndim(), b.ndim());
    let (a, b) = promote_vectors("matmul", a, b)?;
    let dtype = promote_types(a.dtype(), b.dtype());
    if !dtype.is_inexact() {
        return Err(Error::invalid(
            "matmul",
            format!(
                "only inexact types are supported, but {} and {} promote to {dtype}, \
                 which is not a floating point type",
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    let (a, b) = (cast_to(&a, dtype)?, cast_to(&b, dtype)?);
    // MLX flattens a batched `a` against a matrix `b` (Flatten/Unflatten);
    // broadcasting `b` instead gives the same values, and the kernel turns a
    // broadcast `b` back into one tall product.
    let (a, b) = if in_a > 2 || in_b > 2 {
        broadcast_batches("matmul", &a, &b)?
    } else {
        (a, b)
    };
    let out = Array::from_primitive(Matmul {}, vec![a, b])?;
    squeeze_vectors(out, in_a, in_b)
}

/// `alpha * (a @ b) + beta * c` with `matmul`'s shape rules; `c` broadcasts
/// to the product's shape. Real floating point dtypes use the AddMM
/// primitive; complex64 is built from matmul, multiply and add, as in MLX.
pub fn addmm(c: &Array, a: &Array, b: &Array, alpha: f32, beta: f32) -> Result<Array> {
    let (in_a, in_b) = (a.ndim(), b.ndim());
    if in_a == 0 || in_b == 0 {
        return Err(Error::invalid(
            "addmm",
            format!(
                "inputs must have at least one dimension, found shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let dtype = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
    if dtype == Dtype::Complex64 {
        let ab = super::multiply(&matmul(a, b)?, &Array::scalar(alpha))?;
        return super::add(&ab, &super::multiply(&Array::scalar(beta), c)?);
    }
    let (a, b) = promote_vectors("addmm", a, b)?;
    if !dtype.is_float() {
        return Err(Error::invalid(
            "addmm",
            format!(
                "only real floating point types are supported, but {}, {} and {} \
                 promote to {dtype}",
                c.dtype(),
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    let a = cast_to(&a, dtype)?;
    let b = cast_to(&b, dtype)?;
    let c = cast_to(c, dtype)?;
    let prim = AddMM { alpha, beta };

    // A batched `a` against a matrix `b` and a vector (or scalar) `c`: one
    // tall product, reshaped back.
    if a.ndim() > 2 && b.ndim() == 2 && c.ndim() <= 1 {
        let mut out_shape = a.shape().to_vec();
        let k = *out_shape.last().expect("ndim > 2");
        let a = super::reshape(&a, &[-1, k])?;
        *out_shape.last_mut().expect("ndim > 2") = b.shape()[1];
        if in_b == 1 {
            out_shape.pop();
        }
        let c = broadcast_as(&c, &[a.shape()[0], b.shape()[1]])?;
        let out = Array::from_primitive(prim, vec![a, b, c])?;
        return super::reshape(&out, &out_shape);
    }
    let (a, b) = if a.ndim() > 2 || b.ndim() > 2 {
        broadcast_batches("addmm", &a, &b)?
    } else {
        (a, b)
    };
    let mut out_shape = a.shape().to_vec();
    *out_shape.last_mut().expect("ndim >= 2") = b.shape()[b.ndim() - 1];

    // c broadcasts against the product's shape without the 1-D promotion axes.
    let mut adjusted = out_shape.clone();
    let nd = adjusted.len();
    if in_a == 1 || in_b == 1 {
        let lo = nd - if in_a == 1 { 2 } else { 1 };
        let hi = nd - if in_b == 1 { 0 } else { 1 };
        adjusted.drain(lo..hi);
    }
    let cshape = broadcast_shapes("addmm", c.shape(), &adjusted)?;
    let mut c = broadcast_as(&c, &cshape)?;
    if in_a == 1 || in_b == 1 {
        let mut r = c.shape().to_vec();
        if in_b == 1 {
            r.push(1);
        }
        if in_a == 1 {
            let last = *r.last().unwrap_or(&1);
            r.push(last);
            let n = r.len();
            r[n - 2] = 1;
        }
        c = super::reshape(&c, &r)?;
    }
    if c.shape() != out_shape.as_slice() {
        return Err(Error::invalid(
            "addmm",
            format!(
                "c with shape {:?} must broadcast to the output shape {out_shape:?}",
                c.shape()
            ),
        ));
    }
    let out = Array::from_primitive(prim, vec![a, b, c])?;
    squeeze_vectors(out, in_a, in_b)
}

/// Sum product over the last axes of `a` and `b` (a plain product when
/// either is 0-d).
pub fn inner(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return super::multiply(a, b);
    }
    if a.shape()[a.ndim() - 1] != b.shape()[b.ndim() - 1] {
        return Err(Error::invalid(
            "inner",
            format!(
                "a and b must have the same last dimension, found shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    tensordot_axes(a, b, &[-1], &[-1])
}

/// Outer product of the flattened `a` and `b`: shape (a.size, b.size).
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    let a = super::reshape(a, &[a.size() as i32, 1])?;
    let b = if b.ndim() == 1 {
        b.clone()
    } else {
        super::reshape(b, &[-1])?
    };
    super::multiply(&a, &b)
}

/// Contracts the last `axes` axes of `a` with the first `axes` of `b`.
pub fn tensordot(a: &Array, b: &Array, axes: i32) -> Result<Array> {
    if axes < 0 || axes as usize > a.ndim().min(b.ndim()) {
        return Err(Error::invalid(
            "tensordot",
            format!(
                "axes must be in 0..={}, found {axes} for shapes {:?} and {:?}",
                a.ndim().min(b.ndim()),
                a.shape(),
                b.shape()
            ),
        ));
    }
    let axes_a: Vec<i32> = (0..axes).map(|i| i - axes).collect();
    let axes_b: Vec<i32> = (0..axes).collect();
    tensordot_axes(a, b, &axes_a, &axes_b)
}

/// Contracts `axes_a` of `a` with `axes_b` of `b` (pairwise, equal sizes).
pub fn tensordot_axes(a: &Array, b: &Array, axes_a: &[i32], axes_b: &[i32]) -> Result<Array> {
    if axes_a.len() != axes_b.len() {
        return Err(Error::invalid(
            "tensordot",
            format!("axes must have the same length, found {axes_a:?} and {axes_b:?}"),
        ));
    }
    let ca = super::normalize_axes("tensordot", axes_a, a.ndim())?;
    let cb = super::normalize_axes("tensordot", axes_b, b.ndim())?;
    let mut csize = 1;
    for (&i, &j) in ca.iter().zip(&cb) {
        if a.shape()[i] != b.shape()[j] {
            return Err(Error::invalid(
                "tensordot",
                format!(
                    "a and b must have the same size on the contracted axes, \
                     found shapes {:?} and {:?} with axes {axes_a:?} and {axes_b:?}",
                    a.shape(),
                    b.shape()
                ),
            ));
        }
        csize *= a.shape()[i];
    }
    let mut rshape = Vec::new();
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    let (mut size_a, mut size_b) = (1, 1);
    for i in 0..a.ndim() {
        if !ca.contains(&i) {
            ta.push(i as i32);
            size_a *= a.shape()[i];
            rshape.push(a.shape()[i]);
        }
    }
    ta.extend(ca.iter().map(|&i| i as i32));
    tb.extend(cb.iter().map(|&i| i as i32));
    for i in 0..b.ndim() {
        if !cb.contains(&i) {
            tb.push(i as i32);
            size_b *= b.shape()[i];
            rshape.push(b.shape()[i]);
        }
    }
    let x = super::reshape(&super::transpose(a, &ta)?, &[size_a, csize])?;
    let y = super::reshape(&super::transpose(b, &tb)?, &[csize, size_b])?;
    super::reshape(&matmul(&x, &y)?, &rshape)
}
