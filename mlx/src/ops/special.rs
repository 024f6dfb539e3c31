//! `hadamard_transform`, `gather_mm` and `block_masked_mm`,
//! building MLX's graphs (AsType of the operands, Broadcast of the indices
//! and masks, ExpandDims/Squeeze around 1-D operands).

use super::{broadcast_arrays, broadcast_as, cast_to, expand_dims, squeeze};
use crate::primitives::hadamard::Hadamard;
use crate::primitives::masked_mm::{BlockMaskedMM, GatherMM};
use crate::shape::broadcast_shapes;
use crate::{promote_types, Array, Dtype, Error, Result};

/// Walsh–Hadamard transform along the last axis, times `scale` (default
/// 1/√n). Integer inputs are computed in float32. The last axis must have
/// a power-of-two size here (MLX also allows 12, 20 or 28 times one).
pub fn hadamard_transform(a: &Array, scale: Option<f32>) -> Result<Array> {
    if a.size() == 0 {
        return Err(Error::invalid(
            "hadamard_transform",
            "does not support empty arrays",
        ));
    }
    let n = if a.ndim() > 0 {
        a.shape()[a.ndim() - 1]
    } else {
        1
    };
    let scale = scale.unwrap_or(1.0 / (n as f32).sqrt());
    let dtype = if a.dtype().is_float() {
        a.dtype()
    } else {
        Dtype::Float32
    };
    if n == 1 {
        if scale == 1.0 {
            return Ok(a.clone());
        }
        return super::multiply(a, &Array::scalar_of(scale as f64, dtype));
    }
    Array::from_primitive(Hadamard { scale }, vec![cast_to(a, dtype)?])
}

/// Checks and promotes the operands of a gathered or masked product;
/// returns (a, b, dtype) with 1-D operands made 2-D.
fn matmul_operands(op: &str, a: &Array, b: &Array) -> Result<(Array, Array, Dtype)> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(Error::invalid(
            op,
            "got a 0-d input; inputs must have at least one dimension",
        ));
    }
    let a = if a.ndim() == 1 {
        expand_dims(a, &[0])?
    } else {
        a.clone()
    };
    let b = if b.ndim() == 1 {
        expand_dims(b, &[1])?
    } else {
        b.clone()
    };
    if a.shape()[a.ndim() - 1] != b.shape()[b.ndim() - 2] {
        return Err(Error::invalid(
            op,
            format!(
                "last dimension of the first input with shape {:?} must match the second to \
                 last dimension of the second input with shape {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let dtype = promote_types(a.dtype(), b.dtype());
    if !dtype.is_float() {
        return Err(Error::invalid(
            op,
            format!(
                "only real floating point types are supported, but {} and {} promote to {dtype}",
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    Ok((cast_to(&a, dtype)?, cast_to(&b, dtype)?, dtype))
}

/// Removes the axes inserted for 1-D operands.
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
        squeeze(&out, &axes)
    }
}

/// Given indices cast to uint32, or `arange` over the batch matrices of `x`.
fn indices_or_default(idx: Option<&Array>, x: &Array) -> Result<Array> {
    if x.ndim() < 2 {
        return Err(Error::invalid(
            "gather_mm",
            format!(
                "input must have at least two dimensions, found shape {:?}",
                x.shape()
            ),
        ));
    }
    match idx {
        Some(i) if !i.dtype().is_integer() => Err(Error::invalid(
            "gather_mm",
            format!("indices must be integral, found {}", i.dtype()),
        )),
        Some(i) => cast_to(i, Dtype::Uint32),
        None => {
            let batch = &x.shape()[..x.ndim() - 2];
            let total: i32 = batch.iter().product();
            let r = super::arange(0.0, total as f64, 1.0, Dtype::Uint32)?;
            super::reshape(&r, batch)
        }
    }
}

/// Matrix product with a matrix-level gather: output position `i` is
/// `a[lhs_indices[i]] @ b[rhs_indices[i]]`, indices counting the matrices
/// of the batch axes (all of them when not given). Without any indices it
/// is `matmul`.
pub fn gather_mm(
    a: &Array,
    b: &Array,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    sorted_indices: bool,
) -> Result<Array> {
    if lhs_indices.is_none() && rhs_indices.is_none() {
        return super::matmul(a, b);
    }
    let (in_a, in_b) = (a.ndim(), b.ndim());
    let (a, b, _) = matmul_operands("gather_mm", a, b)?;
    let lhs = indices_or_default(lhs_indices, &a)?;
    let rhs = indices_or_default(rhs_indices, &b)?;
    let idx = broadcast_arrays(&[lhs, rhs])?;
    let p = GatherMM {
        left_sorted: sorted_indices && rhs_indices.is_none(),
        right_sorted: sorted_indices && lhs_indices.is_none(),
    };
    let out = Array::from_primitive(p, vec![a, b, idx[0].clone(), idx[1].clone()])?;
    squeeze_vectors(out, in_a, in_b)
}

/// Matrix product with block masks of `block_size` (32 or 64) square tiles:
/// `mask_out` (…, ⌈M/bs⌉, ⌈N/bs⌉) masks tiles of the product, `mask_lhs`
/// (…, ⌈M/bs⌉, ⌈K/bs⌉) and `mask_rhs` (…, ⌈K/bs⌉, ⌈N/bs⌉) tiles of the
/// operands. Bool masks keep or zero a tile, float masks scale it. Without
/// any mask it is `matmul`.
pub fn block_masked_mm(
    a: &Array,
    b: &Array,
    block_size: i32,
    mask_out: Option<&Array>,
    mask_lhs: Option<&Array>,
    mask_rhs: Option<&Array>,
) -> Result<Array> {
    const OP: &str = "block_masked_mm";
    if mask_out.is_none() && mask_lhs.is_none() && mask_rhs.is_none() {
        return super::matmul(a, b);
    }
    if block_size != 32 && block_size != 64 {
        return Err(Error::invalid(
            OP,
            format!("only block sizes 32 and 64 are supported, found {block_size}"),
        ));
    }
    let (in_a, in_b) = (a.ndim(), b.ndim());
    let (a, b, dtype) = matmul_operands(OP, a, b)?;
    let (na, nb) = (a.ndim(), b.ndim());
    let mut shape = broadcast_shapes(OP, &a.shape()[..na - 2], &b.shape()[..nb - 2])?;
    let nd = shape.len() + 2;
    shape.extend([1, 1]);
    let (m, k, n) = (a.shape()[na - 2], a.shape()[na - 1], b.shape()[nb - 1]);
    let with_tail = |shape: &[i32], y: i32, x: i32| {
        let mut s = shape.to_vec();
        s[nd - 2] = y;
        s[nd - 1] = x;
        s
    };
    let a = broadcast_as(&a, &with_tail(&shape, m, k))?;
    let b = broadcast_as(&b, &with_tail(&shape, k, n))?;
    let tiles = |d: i32| (d + block_size - 1) / block_size;
    let (tm, tn, tk) = (tiles(m), tiles(n), tiles(k));
    let mask = |mask: &Array, y: i32, x: i32, dtype: Dtype| -> Result<Array> {
        let target = with_tail(&shape, y, x);
        let m = cast_to(mask, dtype)?;
        broadcast_as(&m, &target).map_err(|_| {
            Error::invalid(
                OP,
                format!(
                    "mask with shape {:?} does not broadcast to the tile grid {target:?}",
                    mask.shape()
                ),
            )
        })
    };
    let mut inputs = vec![a, b];
    if let Some(mo) = mask_out {
        let mut mo = mo.clone();
        let mut ex = Vec::new();
        if in_a == 1 {
            ex.push(-2);
        }
        if in_b == 1 {
            ex.push(-1);
        }
        if !ex.is_empty() {
            mo = expand_dims(&mo, &ex)?;
        }
        let t = if mo.dtype() == Dtype::Bool {
            Dtype::Bool
        } else {
            dtype
        };
        inputs.push(mask(&mo, tm, tn, t)?);
    }
    if mask_lhs.is_some() || mask_rhs.is_some() {
        let yes = Array::from_slice(&[true], &[1])?;
        let mut ml = mask_lhs.cloned().unwrap_or_else(|| yes.clone());
        let mut mr = mask_rhs.cloned().unwrap_or(yes);
        let t = if ml.dtype() == Dtype::Bool && mr.dtype() == Dtype::Bool {
            Dtype::Bool
        } else {
            dtype
        };
        if in_a == 1 {
            ml = expand_dims(&ml, &[-2])?;
        }
        if in_b == 1 {
            mr = expand_dims(&mr, &[-1])?;
        }
        inputs.push(mask(&ml, tm, tk, t)?);
        inputs.push(mask(&mr, tk, tn, t)?);
    }
    let out = Array::from_primitive(BlockMaskedMM { block_size }, inputs)?;
    squeeze_vectors(out, in_a, in_b)
}
