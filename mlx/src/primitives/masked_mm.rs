//! Matrix products that pick or mask their operands: [`GatherMM`] (each
//! output matrix multiplies the `a` and `b` matrices its index arrays name)
//! and [`BlockMaskedMM`] (tiles of the operands and of the product are
//! zeroed or scaled by block masks).

use super::expect_inputs;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::matmul::{addmm, MatrixView};
use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{Array, Buffer, Data, Dtype, Error, Primitive, Result};

/// `a[lhs_indices[i]] @ b[rhs_indices[i]]` for every position `i` of the
/// (equal-shaped, uint32) index arrays; inputs (a, b, lhs_indices,
/// rhs_indices), indices count matrices of the flattened batch axes.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct GatherMM {
    /// The lhs indices are sorted (a hint for GPU kernels).
    #[state]
    pub left_sorted: bool,
    /// The rhs indices are sorted (a hint for GPU kernels).
    #[state]
    pub right_sorted: bool,
}

/// `a @ b` with block masks; inputs (a, b[, out_mask][, lhs_mask,
/// rhs_mask]). A mask entry covers a `block_size` square tile: a bool mask
/// zeroes the tiles where it is false, a float mask scales the tile by its
/// value. Operand masks apply before the product, the output mask after.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct BlockMaskedMM {
    /// Side of the square tiles the masks address (32 or 64 from the op).
    #[state]
    pub block_size: i32,
}

/// (rows, cols) of the last two axes.
fn matrix_dims(s: &Spec) -> (i32, i32) {
    let n = s.shape.len();
    (s.shape[n - 2], s.shape[n - 1])
}

/// Checks the two operands: float, same dtype, ≥ 2-D, inner sizes agree.
fn check_operands(op: &str, a: &Spec, b: &Spec) -> Result<()> {
    if a.dtype != b.dtype || !a.dtype.is_float() {
        return Err(Error::invalid(
            op,
            format!(
                "operands must share a real floating point dtype, found {} and {}",
                a.dtype, b.dtype
            ),
        ));
    }
    if a.shape.len() < 2 || b.shape.len() < 2 {
        return Err(Error::invalid(
            op,
            format!(
                "operands must have at least 2 dimensions, found shapes {:?} and {:?}",
                a.shape, b.shape
            ),
        ));
    }
    if matrix_dims(a).1 != matrix_dims(b).0 {
        return Err(Error::invalid(
            op,
            format!(
                "last dimension of the first input with shape {:?} must match the second \
                 to last dimension of the second input with shape {:?}",
                a.shape, b.shape
            ),
        ));
    }
    Ok(())
}

/// Element offset of matrix `index` of the flattened batch axes of `x`.
fn matrix_offset(op: &str, x: &Array, d: &Data, index: u32) -> Result<usize> {
    let nd = x.ndim();
    let batch = &x.shape()[..nd - 2];
    let count: usize = batch.iter().map(|&s| s as usize).product();
    if index as usize >= count {
        return Err(Error::invalid(
            op,
            format!(
                "index {index} is out of range for {count} matrices (shape {:?})",
                x.shape()
            ),
        ));
    }
    let mut rest = index as usize;
    let mut off = d.offset as isize;
    for ax in (0..nd - 2).rev() {
        let dim = batch[ax] as usize;
        off += (rest % dim) as isize * d.strides[ax];
        rest /= dim;
    }
    Ok(off as usize)
}

impl Primitive for GatherMM {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::product_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("GatherMM", inputs, 4)?;
        let (a, b, li, ri) = (&inputs[0], &inputs[1], &inputs[2], &inputs[3]);
        check_operands("GatherMM", a, b)?;
        if li.dtype != Dtype::Uint32 || ri.dtype != Dtype::Uint32 || li.shape != ri.shape {
            return Err(Error::invalid(
                "GatherMM",
                format!(
                    "index arrays must be uint32 of one shape, found {} {:?} and {} {:?}",
                    li.dtype, li.shape, ri.dtype, ri.shape
                ),
            ));
        }
        let mut shape = li.shape.clone();
        shape.push(matrix_dims(a).0);
        shape.push(matrix_dims(b).1);
        Ok(vec![Spec::new(shape, a.dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let (da, db) = (a.data()?, b.data()?);
        let li = to_contiguous_vec::<u32>(&inputs[2].data()?, inputs[2].shape());
        let ri = to_contiguous_vec::<u32>(&inputs[3].data()?, inputs[3].shape());
        let (m, k) = matrix_dims(a.spec());
        let n = matrix_dims(b.spec()).1;
        let (na, nb) = (a.ndim(), b.ndim());
        let a_strides = da.strides[na - 2..].to_vec();
        let b_strides = db.strides[nb - 2..].to_vec();
        let item = out[0].dtype.size();
        let mut bytes = Vec::with_capacity(out[0].size() * item);
        for (&ia, &ib) in li.iter().zip(&ri) {
            let va = Data {
                buffer: da.buffer.clone(),
                strides: a_strides.clone(),
                offset: matrix_offset("GatherMM", a, &da, ia)?,
            };
            let vb = Data {
                buffer: db.buffer.clone(),
                strides: b_strides.clone(),
                offset: matrix_offset("GatherMM", b, &db, ib)?,
            };
            let prod = addmm(
                MatrixView {
                    data: &va,
                    shape: &[m, k],
                },
                MatrixView {
                    data: &vb,
                    shape: &[k, n],
                },
                None,
                1.0,
                0.0,
                out[0].dtype,
                &[m, n],
            )?;
            bytes.extend_from_slice(&prod.buffer.bytes()[..(m * n) as usize * item]);
        }
        Ok(vec![Data::contiguous(
            Buffer::from_bytes(&bytes),
            &out[0].shape,
        )])
    }
}

/// Multiplies (or zeroes) the tiles of the row-major `rows`×`cols` matrix
/// `x` by the row-major tile mask `mask` (values as f32; a bool mask, as
/// 0/1, sets masked tiles to zero even where they hold NaN, as MLX).
fn apply_mask(
    x: &mut [f32],
    rows: usize,
    cols: usize,
    mask: &(Vec<f32>, bool),
    start: usize,
    block: usize,
) {
    let (mask, is_bool) = (&mask.0[start..], mask.1);
    let tc = cols.div_ceil(block);
    for i in 0..rows {
        for j in 0..cols {
            let f = mask[(i / block) * tc + j / block];
            if is_bool && f == 0.0 {
                x[i * cols + j] = 0.0;
            } else if f != 1.0 {
                x[i * cols + j] *= f;
            }
        }
    }
}

/// A mask input viewed at `batch ++ [tiles_r, tiles_c]`, as f32 values.
fn mask_values(
    op: &str,
    m: &Array,
    batch: &[i32],
    tr: usize,
    tc: usize,
) -> Result<(Vec<f32>, bool)> {
    let mut shape = batch.to_vec();
    shape.push(tr as i32);
    shape.push(tc as i32);
    let v = broadcast_view(m, &shape).map_err(|_| {
        Error::invalid(
            op,
            format!(
                "mask with shape {:?} does not broadcast to the tile grid {shape:?}",
                m.shape()
            ),
        )
    })?;
    let d = v.data()?;
    Ok(match m.dtype() {
        Dtype::Bool => (
            to_contiguous_vec::<bool>(&d, &shape)
                .into_iter()
                .map(|b| b as u8 as f32)
                .collect(),
            true,
        ),
        Dtype::Float32 => (to_contiguous_vec::<f32>(&d, &shape), false),
        other => {
            return Err(Error::invalid(
                op,
                format!("masks must be bool or float32, found {other}"),
            ))
        }
    })
}

/// The operand viewed at `batch ++ [rows, cols]`, row-major f32.
fn operand(x: &Array, batch: &[i32]) -> Result<Vec<f32>> {
    let nd = x.ndim();
    let mut shape = batch.to_vec();
    shape.extend_from_slice(&x.shape()[nd - 2..]);
    let v = broadcast_view(x, &shape)?;
    Ok(to_contiguous_vec::<f32>(&v.data()?, &shape))
}

impl Primitive for BlockMaskedMM {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::product_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if !(2..=5).contains(&inputs.len()) {
            return Err(Error::invalid(
                "BlockMaskedMM",
                format!("expected 2 to 5 inputs, found {}", inputs.len()),
            ));
        }
        if self.block_size <= 0 {
            return Err(Error::invalid(
                "BlockMaskedMM",
                format!("block_size must be positive, found {}", self.block_size),
            ));
        }
        let (a, b) = (&inputs[0], &inputs[1]);
        check_operands("BlockMaskedMM", a, b)?;
        let (na, nb) = (a.shape.len(), b.shape.len());
        let mut shape = crate::shape::broadcast_shapes(
            "BlockMaskedMM",
            &a.shape[..na - 2],
            &b.shape[..nb - 2],
        )?;
        shape.push(matrix_dims(a).0);
        shape.push(matrix_dims(b).1);
        Ok(vec![Spec::new(shape, a.dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        const OP: &str = "BlockMaskedMM";
        if out[0].dtype != Dtype::Float32 {
            return Err(Error::invalid(
                OP,
                format!(
                    "only float32 is supported (as MLX's CPU), found {}",
                    out[0].dtype
                ),
            ));
        }
        let nd = out[0].shape.len();
        let batch = &out[0].shape[..nd - 2];
        let nb: usize = batch.iter().map(|&d| d as usize).product();
        let (m, k) = matrix_dims(inputs[0].spec());
        let n = matrix_dims(inputs[1].spec()).1;
        let (m, k, n) = (m as usize, k as usize, n as usize);
        let bs = self.block_size as usize;
        let (tm, tk, tn) = (m.div_ceil(bs), k.div_ceil(bs), n.div_ceil(bs));
        let mut a = operand(&inputs[0], batch)?;
        let mut b = operand(&inputs[1], batch)?;
        let has_out = inputs.len() == 3 || inputs.len() == 5;
        if inputs.len() >= 4 {
            let lm = mask_values(OP, &inputs[inputs.len() - 2], batch, tm, tk)?;
            let rm = mask_values(OP, &inputs[inputs.len() - 1], batch, tk, tn)?;
            for i in 0..nb {
                apply_mask(
                    &mut a[i * m * k..(i + 1) * m * k],
                    m,
                    k,
                    &lm,
                    i * tm * tk,
                    bs,
                );
                apply_mask(
                    &mut b[i * k * n..(i + 1) * k * n],
                    k,
                    n,
                    &rm,
                    i * tk * tn,
                    bs,
                );
            }
        }
        let shape_a: Vec<i32> = out[0].shape[..nd - 2]
            .iter()
            .copied()
            .chain([m as i32, k as i32])
            .collect();
        let shape_b: Vec<i32> = out[0].shape[..nd - 2]
            .iter()
            .copied()
            .chain([k as i32, n as i32])
            .collect();
        let da = Data::contiguous(Buffer::from_slice(&a), &shape_a);
        let db = Data::contiguous(Buffer::from_slice(&b), &shape_b);
        let prod = addmm(
            MatrixView {
                data: &da,
                shape: &shape_a,
            },
            MatrixView {
                data: &db,
                shape: &shape_b,
            },
            None,
            1.0,
            0.0,
            Dtype::Float32,
            &out[0].shape,
        )?;
        if !has_out {
            return Ok(vec![prod]);
        }
        let mut c = to_contiguous_vec::<f32>(&prod, &out[0].shape);
        let om = mask_values(OP, &inputs[2], batch, tm, tn)?;
        for i in 0..nb {
            apply_mask(
                &mut c[i * m * n..(i + 1) * m * n],
                m,
                n,
                &om,
                i * tm * tn,
                bs,
            );
        }
        Ok(vec![Data::contiguous(
            Buffer::from_slice(&c),
            &out[0].shape,
        )])
    }
}
