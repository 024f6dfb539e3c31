//! Quantization primitives: [`Quantize`] (affine quantize, and dequantize
//! when `dequantize` is set) and [`QuantizedMatmul`], with MLX's state.
//! Every mode decodes from files. [`QuantizedMatmul`] and [`GatherQMM`]
//! run them all (the microscaling float modes as MLX's CPU kernels do);
//! quantizing runs the affine mode and refuses the others with a clear
//! error. (MLX 0.32 cannot export its float modes' dequantize, whose graph
//! holds an unserializable `FromFP8`.)

use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::fast::{read_f32, round_fn, write_f32};
use crate::backend::cpu::qgemv as kernel_qgemv;
use crate::backend::cpu::quantized::{self as kernel, QMatrix, QParams};
use crate::buffer::Buffer;
use crate::layout::row_major;
use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{Array, Data, Dtype, Error, Primitive, Result};

crate::state_enum! {
    /// How values are quantized (MLX's `QuantizationMode`).
    pub enum QuantizationMode {
        /// Integers with a per-group scale and bias.
        Affine = 0,
        /// 4-bit floats with power-of-two group scales.
        Mxfp4 = 1,
        /// 8-bit floats with power-of-two group scales.
        Mxfp8 = 2,
        /// NVIDIA's 4-bit floats with fp8 group scales.
        Nvfp4 = 3,
    }
}

/// Bit widths MLX 0.32.4 accepts for affine quantization.
pub const AFFINE_BITS: &[i32] = &[1, 2, 3, 4, 5, 6, 8];
/// Group sizes MLX accepts for affine quantization.
pub const AFFINE_GROUP_SIZES: &[i32] = &[32, 64, 128];

/// Checks mode, bits and group size; returns the kernel parameters.
pub(crate) fn check_params(
    op: &str,
    mode: QuantizationMode,
    group_size: i32,
    bits: i32,
) -> Result<QParams> {
    if mode != QuantizationMode::Affine {
        return Err(Error::invalid(
            op,
            format!(
                "only the Affine quantization mode is implemented, found {}",
                mode.name()
            ),
        ));
    }
    if !AFFINE_GROUP_SIZES.contains(&group_size) {
        return Err(Error::invalid(
            op,
            format!("group size must be one of {AFFINE_GROUP_SIZES:?}, found {group_size}"),
        ));
    }
    if !AFFINE_BITS.contains(&bits) {
        return Err(Error::invalid(
            op,
            format!("bits must be one of {AFFINE_BITS:?}, found {bits}"),
        ));
    }
    Ok(QParams {
        group_size: group_size as usize,
        bits: bits as usize,
    })
}

/// The (group size, bits) each microscaling float mode takes in MLX 0.32.
fn fp_params(mode: QuantizationMode) -> Option<(usize, usize)> {
    match mode {
        QuantizationMode::Affine => None,
        QuantizationMode::Mxfp4 => Some((32, 4)),
        QuantizationMode::Mxfp8 => Some((32, 8)),
        QuantizationMode::Nvfp4 => Some((16, 4)),
    }
}

/// Affine quantization of the last axis in groups: `w → (w_q uint32,
/// scales, biases)`; with `dequantize`, `(w_q, scales, biases) → w`.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx, mlx_alias("AffineQuantize", before = "0.29.0"))]
pub struct Quantize {
    /// Consecutive values sharing a scale and bias.
    #[state]
    pub group_size: i32,
    /// Bits per quantized value.
    #[state]
    pub bits: i32,
    /// Quantization scheme (only Affine runs).
    #[state(mlx_since = "0.29.0", mlx_absent = QuantizationMode::Affine)]
    pub mode: QuantizationMode,
    /// Unpack instead of pack.
    #[state]
    pub dequantize: bool,
}

/// Checks that `scales`/`biases` fit packed weights `w` (MLX's rules).
fn check_packed(op: &str, w: &Spec, scales: &Spec, biases: &Spec, p: QParams) -> Result<usize> {
    check_words(op, w)?;
    if scales.shape != biases.shape {
        return Err(Error::invalid(
            op,
            format!(
                "scales and biases must have the same shape, found {:?} and {:?}",
                scales.shape, biases.shape
            ),
        ));
    }
    if !scales.dtype.is_float() || scales.dtype != biases.dtype {
        return Err(Error::invalid(
            op,
            format!(
                "scales and biases must share a floating point dtype, found {} and {}",
                scales.dtype, biases.dtype
            ),
        ));
    }
    check_groups(op, w, scales, p)
}

/// Packed weights are uint32 with at least 2 dimensions.
fn check_words(op: &str, w: &Spec) -> Result<()> {
    if w.dtype != Dtype::Uint32 {
        return Err(Error::invalid(
            op,
            format!("the packed weights must be uint32, found {}", w.dtype),
        ));
    }
    if w.shape.len() < 2 {
        return Err(Error::invalid(
            op,
            format!(
                "the packed weights must have at least 2 dimensions, found shape {:?}",
                w.shape
            ),
        ));
    }
    Ok(())
}

/// Checks that `w`'s words hold whole values and groups, one scale per
/// group; returns the unpacked columns.
fn check_groups(op: &str, w: &Spec, scales: &Spec, p: QParams) -> Result<usize> {
    let nd = w.shape.len();
    let packed_bits = w.shape[nd - 1] as usize * 32;
    let cols = packed_bits / p.bits;
    let groups = cols / p.group_size;
    let mut want = w.shape.clone();
    want[nd - 1] = groups as i32;
    // The packed words must hold a whole number of values and of groups.
    let whole = cols * p.bits == packed_bits && groups * p.group_size == cols;
    if scales.shape != want || !whole {
        return Err(Error::invalid(
            op,
            format!(
                "weights of shape {:?} with bits={} and group_size={} need scales of shape {want:?}, found {:?}",
                w.shape, p.bits, p.group_size, scales.shape
            ),
        ));
    }
    Ok(cols)
}

impl Primitive for Quantize {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let p = check_params("Quantize", self.mode, self.group_size, self.bits)?;
        if self.dequantize {
            super::expect_inputs("Quantize", inputs, 3)?;
            let cols = check_packed("Quantize", &inputs[0], &inputs[1], &inputs[2], p)?;
            let mut shape = inputs[0].shape.clone();
            *shape.last_mut().expect("ndim >= 2") = cols as i32;
            return Ok(vec![Spec::new(shape, inputs[1].dtype)]);
        }
        super::expect_inputs("Quantize", inputs, 1)?;
        let w = &inputs[0];
        if !w.dtype.is_float() {
            return Err(Error::invalid(
                "Quantize",
                format!(
                    "only real floating types can be quantized, found {}",
                    w.dtype
                ),
            ));
        }
        let nd = w.shape.len();
        if nd < 2 {
            return Err(Error::invalid(
                "Quantize",
                format!(
                    "the matrix to quantize must have at least 2 dimensions, found shape {:?}",
                    w.shape
                ),
            ));
        }
        let k = w.shape[nd - 1];
        if k % self.group_size != 0 {
            return Err(Error::invalid(
                "Quantize",
                format!(
                    "the last dimension must be divisible by the group size {}, found shape {:?}",
                    self.group_size, w.shape
                ),
            ));
        }
        let mut wq = w.shape.clone();
        // In i64: k * bits overflows i32 for k past 2^28 (the result, k / 4 at
        // most, fits).
        wq[nd - 1] = (k as i64 * self.bits as i64 / 32) as i32;
        let mut s = w.shape.clone();
        s[nd - 1] = k / self.group_size;
        Ok(vec![
            Spec::new(wq, Dtype::Uint32),
            Spec::new(s.clone(), w.dtype),
            Spec::new(s, w.dtype),
        ])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let p = check_params("Quantize", self.mode, self.group_size, self.bits)?;
        if self.dequantize {
            let wq = &inputs[0];
            let packed = to_contiguous_vec::<u32>(&wq.data()?, wq.shape());
            let scales = read_f32(&inputs[1])?;
            let biases = read_f32(&inputs[2])?;
            let w = kernel::dequantize(&packed, &scales, &biases, p, round_fn(out[0].dtype));
            return Ok(vec![write_f32(&w, out[0].dtype, &out[0].shape)]);
        }
        let w = read_f32(&inputs[0])?;
        let (packed, scales, biases) = kernel::quantize(&w, p);
        Ok(vec![
            Data::contiguous(Buffer::from_slice(&packed), &out[0].shape),
            write_f32(&scales, out[1].dtype, &out[1].shape),
            write_f32(&biases, out[2].dtype, &out[2].shape),
        ])
    }
}

/// `x @ dequantize(w).T` (`transpose`, nn.QuantizedLinear's layout) or
/// `x @ dequantize(w)`; inputs (x, w, scales, biases) for the affine mode,
/// (x, w, scales) with uint8 scales for the microscaling float modes.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct QuantizedMatmul {
    /// Consecutive values sharing a scale and bias.
    #[state]
    pub group_size: i32,
    /// Bits per quantized value.
    #[state]
    pub bits: i32,
    /// Quantization scheme (every mode runs).
    #[state(mlx_since = "0.29.0", mlx_absent = QuantizationMode::Affine)]
    pub mode: QuantizationMode,
    /// Multiply by the transpose of the stored (out, in) matrix.
    #[state]
    pub transpose: bool,
}

impl QuantizedMatmul {
    /// The product's (k, n) and the unpacked weight's (rows, cols).
    fn sizes(&self, w: &Spec, p: QParams) -> ((usize, usize), (usize, usize)) {
        let (inner, outer) = self.dims(w, p);
        let nd = w.shape.len();
        let rows = w.shape[nd - 2] as usize;
        let cols = w.shape[nd - 1] as usize * 32 / p.bits;
        ((inner as usize, outer as usize), (rows, cols))
    }

    /// (inner, outer) sizes of the dequantized matrix as used by the product.
    fn dims(&self, w: &Spec, p: QParams) -> (i32, i32) {
        let nd = w.shape.len();
        let (rows, cols) = (
            w.shape[nd - 2],
            (w.shape[nd - 1] as usize * 32 / p.bits) as i32,
        );
        if self.transpose {
            (cols, rows)
        } else {
            (rows, cols)
        }
    }
}

impl QuantizedMatmul {
    /// A microscaling float mode's group size and bits (MLX's pair for the
    /// mode), uint32 weights and one uint8 scale per group.
    fn check_fp(&self, op: &str, w: &Spec, scales: &Spec) -> Result<QParams> {
        let (group, bits) = fp_params(self.mode).expect("a float mode");
        if (self.group_size as usize, self.bits as usize) != (group, bits) {
            return Err(Error::invalid(
                op,
                format!(
                    "mode {} takes group_size={group} and bits={bits}, found {} and {}",
                    self.mode.name(),
                    self.group_size,
                    self.bits
                ),
            ));
        }
        if scales.dtype != Dtype::Uint8 {
            return Err(Error::invalid(
                op,
                format!(
                    "mode {} needs uint8 scales, found {}",
                    self.mode.name(),
                    scales.dtype
                ),
            ));
        }
        let p = QParams {
            group_size: group,
            bits,
        };
        // The affine mode's layout rules, without biases.
        check_words(op, w)?;
        check_groups(op, w, scales, p)?;
        Ok(p)
    }

    /// A product in a microscaling float mode, step for step as MLX's CPU
    /// kernel ([`fp_qmm`](crate::backend::cpu::fp_quantized::fp_qmm)).
    fn eval_fp(&self, inputs: &[Array], o: &Spec) -> Result<Vec<Data>> {
        use crate::backend::cpu::fp_quantized::{fp_qmm, FpStack};
        let p = self.check_fp("QuantizedMatmul", inputs[1].spec(), inputs[2].spec())?;
        let ((k, n), (rows, cols)) = self.sizes(inputs[1].spec(), p);
        let b = Batch::of(o, &inputs[0], inputs[1].ndim(), n)?;
        let words = b.contiguous::<u32>(&inputs[1])?;
        let scales = b.contiguous::<u8>(&inputs[2])?;
        let stack = FpStack::new(words, scales, b.count, p, (rows, cols));
        let round = round_fn(o.dtype);
        let mut result = vec![0f32; o.size()];
        for i in 0..b.count {
            let (x, out) = b.entry(i, k, n, &mut result);
            fp_qmm(x, b.m, &stack.matrix(i), self.transpose, round, out);
        }
        Ok(vec![write_f32(&result, o.dtype, &o.shape)])
    }
}

/// `a`'s last two axes viewed at batch shape `batch`.
fn at_batch(a: &Array, batch: &[i32]) -> Result<Array> {
    let mut s = batch.to_vec();
    s.extend_from_slice(&a.shape()[a.ndim() - 2..]);
    broadcast_view(a, &s)
}

/// A product's operands at the output's batch: every weight operand
/// viewed (and copied) at the batch shape, one matrix per entry, and `x`
/// as f32 with `m` rows per entry. A 2-D weight is one matrix whose
/// product takes every row of `x` at once.
struct Batch {
    shape: Vec<i32>,
    count: usize,
    m: usize,
    xs: Vec<f32>,
}

impl Batch {
    fn of(o: &Spec, x: &Array, wn: usize, n: usize) -> Result<Batch> {
        let nd = o.shape.len();
        let (shape, m) = if wn == 2 {
            (Vec::new(), o.size().checked_div(n).unwrap_or(0))
        } else {
            (o.shape[..nd - 2].to_vec(), o.shape[nd - 2] as usize)
        };
        let count = shape.iter().map(|&d| d as usize).product();
        let xs = if wn == 2 {
            read_f32(x)?
        } else {
            read_f32(&at_batch(x, &shape)?)?
        };
        Ok(Batch {
            shape,
            count,
            m,
            xs,
        })
    }

    /// `a`'s last two axes at the batch shape.
    fn at(&self, a: &Array) -> Result<Array> {
        at_batch(a, &self.shape)
    }

    /// `a` at the batch shape, row-major.
    fn contiguous<T: crate::Element>(&self, a: &Array) -> Result<Vec<T>> {
        let v = self.at(a)?;
        Ok(to_contiguous_vec::<T>(&v.data()?, v.shape()))
    }

    /// Entry `i`'s rows of `x` and of the output (`k` and `n` wide).
    fn entry<'a>(
        &'a self,
        i: usize,
        k: usize,
        n: usize,
        out: &'a mut [f32],
    ) -> (&'a [f32], &'a mut [f32]) {
        let (m, x) = (self.m, &self.xs);
        (
            &x[i * m * k..(i + 1) * m * k],
            &mut out[i * m * n..(i + 1) * m * n],
        )
    }
}

impl Primitive for QuantizedMatmul {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::product_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let name = "QuantizedMatmul";
        let p = if self.mode == QuantizationMode::Affine {
            let p = check_params(name, self.mode, self.group_size, self.bits)?;
            super::expect_inputs(name, inputs, 4)?;
            check_packed(name, &inputs[1], &inputs[2], &inputs[3], p)?;
            p
        } else {
            super::expect_inputs(name, inputs, 3)?;
            self.check_fp(name, &inputs[1], &inputs[2])?
        };
        let (x, w) = (&inputs[0], &inputs[1]);
        let scales_dtype = match self.mode {
            QuantizationMode::Affine => inputs[2].dtype,
            _ => x.dtype,
        };
        if !x.dtype.is_float() || x.dtype != scales_dtype {
            return Err(Error::invalid(
                name,
                format!(
                    "x must be a floating point array of the scales' dtype {}, found {}",
                    inputs[2].dtype, x.dtype
                ),
            ));
        }
        let (inner, outer) = self.dims(w, p);
        if x.shape.is_empty() || *x.shape.last().expect("ndim >= 1") != inner {
            return Err(Error::invalid(
                name,
                format!(
                    "last dimension of x with shape {:?} does not match the expanded quantized \
                     matrix ({inner}, {outer}) of w with shape {:?}, group_size={}, bits={}, transpose={}",
                    x.shape, w.shape, self.group_size, self.bits, self.transpose
                ),
            ));
        }
        let (xn, wn) = (x.shape.len(), w.shape.len());
        let mut shape = if xn >= 2 {
            let mut b =
                crate::shape::broadcast_shapes(name, &x.shape[..xn - 2], &w.shape[..wn - 2])?;
            b.push(x.shape[xn - 2]);
            b
        } else if wn == 2 {
            vec![]
        } else {
            return Err(Error::invalid(
                name,
                format!(
                    "a 1-D x of shape {:?} needs a 2-D w, found {:?}",
                    x.shape, w.shape
                ),
            ));
        };
        shape.push(outer);
        Ok(vec![Spec::new(shape, x.dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        if self.mode != QuantizationMode::Affine {
            return self.eval_fp(inputs, &out[0]);
        }
        let p = check_params("QuantizedMatmul", self.mode, self.group_size, self.bits)?;
        let (x, w) = (&inputs[0], &inputs[1]);
        let o = &out[0];
        // One row of x (batch-1 decode): stream the weights in place.
        let mats = [[w.clone(), inputs[2].clone(), inputs[3].clone()]];
        if let Some(d) = self.one_row_products(x, &mats, out, p)? {
            return Ok(d);
        }
        let ((k, n), (rows, cols)) = self.sizes(w.spec(), p);
        let wn = w.ndim();
        let b = Batch::of(o, x, wn, n)?;
        let packed = b.contiguous::<u32>(w)?;
        let (sc, bi) = (read_f32(&b.at(&inputs[2])?)?, read_f32(&b.at(&inputs[3])?)?);
        let (pw, sw) = (packed.len() / b.count.max(1), sc.len() / b.count.max(1));
        let mut result = vec![0f32; o.size()];
        for i in 0..b.count {
            let qm = QMatrix {
                packed: &packed[i * pw..(i + 1) * pw],
                scales: &sc[i * sw..(i + 1) * sw],
                biases: &bi[i * sw..(i + 1) * sw],
                rows,
                cols,
            };
            let (x, out) = b.entry(i, k, n, &mut result);
            kernel::qmm(x, b.m, qm, p, self.transpose, out);
        }
        Ok(vec![write_f32(&result, o.dtype, &o.shape)])
    }

    /// x: the product with the other orientation of the same quantized
    /// matrix; scales and biases (affine): per-group sums of the dense
    /// weight cotangent (times the quantized values for the scales). The
    /// packed weights have no gradient.
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        use crate::ops as o;
        super::grad_util::only_args(
            "QuantizedMatmul",
            argnums,
            &[0, 2, 3],
            "its quantized weights",
        )?;
        let (x, w, c) = (&primals[0], &primals[1], &cot[0]);
        let mut dense: Option<Array> = None;
        argnums
            .iter()
            .map(|&a| {
                if a == 0 {
                    let p = QuantizedMatmul {
                        transpose: !self.transpose,
                        ..self.clone()
                    };
                    let inputs = vec![c.clone(), w.clone(), primals[2].clone(), primals[3].clone()];
                    return Array::from_primitive(p, inputs);
                }
                if dense.is_none() {
                    let nd = w.ndim() as i32;
                    let fc = o::flatten(c, 0, -nd)?;
                    let fx = o::flatten(x, 0, -nd)?;
                    let dw = if self.transpose {
                        o::matmul(&o::swapaxes(&fc, -1, -2)?, &fx)?
                    } else {
                        o::matmul(&o::swapaxes(&fx, -1, -2)?, &fc)?
                    };
                    dense = Some(o::unflatten(&dw, -1, &[-1, self.group_size])?);
                }
                let dsb = dense.as_ref().expect("set above");
                if a == 3 {
                    return o::sum(dsb, &[-1], false);
                }
                let (s, b) = (&primals[2], &primals[3]);
                let q = o::dequantize(
                    w,
                    &o::ones_like(s)?,
                    &o::zeros_like(b)?,
                    self.group_size,
                    self.bits,
                )?;
                let q = o::unflatten(&q, -1, &[-1, self.group_size])?;
                o::sum(&o::multiply(dsb, &q)?, &[-1], false)
            })
            .collect()
    }

    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        super::grad_util::linear_jvp(
            self,
            primals,
            tangents,
            argnums,
            &[0],
            "its quantized weights",
        )
    }
}

impl QuantizedMatmul {
    /// This product of one `x` with each of `mats` (weight, scales,
    /// biases), whose outputs are `outs`: for a single row of `x`, one
    /// [`qgemv_many`](kernel_qgemv::qgemv_many) over all of them; else
    /// each product on its own.
    pub(crate) fn eval_shared_x(
        &self,
        x: &Array,
        mats: &[[Array; 3]],
        outs: &[Spec],
    ) -> Result<Vec<Data>> {
        let p = check_params("QuantizedMatmul", self.mode, self.group_size, self.bits)?;
        if let Some(d) = self.one_row_products(x, mats, outs, p)? {
            return Ok(d);
        }
        let mut datas = Vec::with_capacity(mats.len());
        for ([w, s, b], o) in mats.iter().zip(outs) {
            let inputs = [x.clone(), w.clone(), s.clone(), b.clone()];
            datas.extend(self.eval(&inputs, std::slice::from_ref(o))?);
        }
        Ok(datas)
    }

    /// `x @ W.T` for a single row of x and 2-D weights `W` of `(n, k)`
    /// unpacked, read in place by one
    /// [`qgemv_many`](kernel_qgemv::qgemv_many) over all of `mats`; None
    /// unless every product is such, with scales of one dtype that has
    /// the kernel.
    fn one_row_products(
        &self,
        x: &Array,
        mats: &[[Array; 3]],
        outs: &[Spec],
        p: QParams,
    ) -> Result<Option<Vec<Data>>> {
        fn run<S: crate::backend::cpu::num::Float>(
            x: &[f32],
            mats: &[[Array; 3]],
            p: QParams,
            sizes: &[(usize, usize)],
        ) -> Result<Vec<Vec<f32>>> {
            let mut datas = Vec::with_capacity(mats.len());
            for [w, s, b] in mats {
                datas.push([w.data()?, s.data()?, b.data()?]);
            }
            let parts: Vec<_> = datas
                .iter()
                .zip(mats)
                .map(|([wd, sd, bd], [w, s, b])| {
                    (
                        row_major::<u32>(wd, w.shape()),
                        row_major::<S>(sd, s.shape()),
                        row_major::<S>(bd, b.shape()),
                    )
                })
                .collect();
            let ws: Vec<kernel_qgemv::QRows<'_, S>> = parts
                .iter()
                .zip(sizes)
                .map(|((packed, scales, biases), &(n, k))| kernel_qgemv::QRows {
                    packed,
                    scales,
                    biases,
                    n,
                    k,
                })
                .collect();
            let mut outs: Vec<Vec<f32>> = sizes.iter().map(|&(n, _)| vec![0f32; n]).collect();
            let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[..]).collect();
            kernel_qgemv::qgemv_many(x, &ws, p, &mut refs);
            Ok(outs)
        }
        if self.mode != QuantizationMode::Affine || !self.transpose || mats.is_empty() {
            return Ok(None);
        }
        let dtype = mats[0][1].dtype();
        let mut sizes = Vec::with_capacity(mats.len());
        for ([w, s, b], o) in mats.iter().zip(outs) {
            let ((k, n), (rows, cols)) = self.sizes(w.spec(), p);
            let one_row = w.ndim() == 2 && o.size() == n && x.size() == k;
            if !one_row || s.dtype() != dtype || b.dtype() != dtype {
                return Ok(None);
            }
            sizes.push((rows, cols));
        }
        let xs = read_f32(x)?;
        let results = match dtype {
            Dtype::Float32 => run::<f32>(&xs, mats, p, &sizes)?,
            Dtype::Float16 => run::<half::f16>(&xs, mats, p, &sizes)?,
            Dtype::Bfloat16 => run::<half::bf16>(&xs, mats, p, &sizes)?,
            _ => return Ok(None),
        };
        Ok(Some(
            results
                .iter()
                .zip(outs)
                .map(|(r, o)| write_f32(r, o.dtype, &o.shape))
                .collect(),
        ))
    }
}

/// `x[lhs[p]] @ dequantize(w[rhs[p]])(.T)` for every position p of the
/// (equal-shaped, uint32) index arrays; inputs (x, w, scales, biases,
/// lhs_indices, rhs_indices). Output shape: index shape ++ (M, N).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct GatherQMM {
    /// Consecutive values sharing a scale and bias.
    #[state]
    pub group_size: i32,
    /// Bits per quantized value.
    #[state]
    pub bits: i32,
    /// Quantization scheme (every mode runs).
    #[state(mlx_since = "0.29.0", mlx_absent = QuantizationMode::Affine)]
    pub mode: QuantizationMode,
    /// Multiply by the transpose of the stored (out, in) matrices.
    #[state]
    pub transpose: bool,
    /// The lhs indices are sorted (a GPU scheduling hint).
    #[state]
    pub left_sorted: bool,
    /// The rhs indices are sorted (a GPU scheduling hint).
    #[state]
    pub right_sorted: bool,
}

impl GatherQMM {
    fn as_qmm(&self) -> QuantizedMatmul {
        QuantizedMatmul {
            group_size: self.group_size,
            bits: self.bits,
            mode: self.mode,
            transpose: self.transpose,
        }
    }
}

impl GatherQMM {
    /// The float modes: each index pair's product as
    /// [`QuantizedMatmul`]'s (MLX's CPU kernel runs the same per pair).
    fn eval_fp(&self, inputs: &[Array], o: &Spec) -> Result<Vec<Data>> {
        use crate::backend::cpu::fp_quantized::{fp_qmm, FpStack};
        let s = &inputs[2];
        let p = self
            .as_qmm()
            .check_fp("GatherQMM", inputs[1].spec(), s.spec())?;
        let g = GatherParts::of(self, inputs, p)?;
        let w = &inputs[1];
        let words = to_contiguous_vec::<u32>(&w.data()?, w.shape());
        let scales = to_contiguous_vec::<u8>(&s.data()?, s.shape());
        let stack = FpStack::new(words, scales, x_batch(w), p, (g.rows, g.cols));
        let round = round_fn(o.dtype);
        let result = g.products(o.size(), |x, r, dst| {
            fp_qmm(x, g.m, &stack.matrix(r), self.transpose, round, dst)
        });
        Ok(vec![write_f32(&result, o.dtype, &o.shape)])
    }
}

/// What both modes of [`GatherQMM`] read: sizes, `x` as f32 and the index
/// pairs (the last two inputs), each checked to be inside the x and weight
/// matrices.
struct GatherParts {
    m: usize,
    k: usize,
    n: usize,
    rows: usize,
    cols: usize,
    xs: Vec<f32>,
    pairs: Vec<(usize, usize)>,
}

impl GatherParts {
    fn of(g: &GatherQMM, inputs: &[Array], p: QParams) -> Result<GatherParts> {
        let (x, w) = (&inputs[0], &inputs[1]);
        let ((k, n), (rows, cols)) = g.as_qmm().sizes(w.spec(), p);
        let idx =
            |a: &Array| -> Result<Vec<u32>> { Ok(to_contiguous_vec::<u32>(&a.data()?, a.shape())) };
        let q = inputs.len() - 2;
        let (lhs, rhs) = (idx(&inputs[q])?, idx(&inputs[q + 1])?);
        let (nx, nw) = (x_batch(x), x_batch(w));
        let pairs = lhs
            .iter()
            .zip(&rhs)
            .map(|(&l, &r)| check_pair(l as usize, r as usize, nx, nw))
            .collect::<Result<Vec<_>>>()?;
        Ok(GatherParts {
            m: x.shape()[x.ndim() - 2] as usize,
            k,
            n,
            rows,
            cols,
            xs: read_f32(x)?,
            pairs,
        })
    }

    /// The `size` outputs, pair by pair: `product(x matrix, weight matrix
    /// index, output rows)`.
    fn products(
        &self,
        size: usize,
        mut product: impl FnMut(&[f32], usize, &mut [f32]),
    ) -> Vec<f32> {
        let (m, k, n) = (self.m, self.k, self.n);
        let mut result = vec![0f32; size];
        for (pos, &(l, r)) in self.pairs.iter().enumerate() {
            let dst = &mut result[pos * m * n..(pos + 1) * m * n];
            product(&self.xs[l * m * k..(l + 1) * m * k], r, dst);
        }
        result
    }
}

/// An index pair inside `nx` x matrices and `nw` weight matrices.
fn check_pair(l: usize, r: usize, nx: usize, nw: usize) -> Result<(usize, usize)> {
    if l >= nx || r >= nw {
        return Err(Error::invalid(
            "GatherQMM",
            format!(
                "index pair ({l}, {r}) out of range for {nx} x matrices and {nw} weight matrices"
            ),
        ));
    }
    Ok((l, r))
}

impl Primitive for GatherQMM {
    fn work(&self, inputs: &[Spec], outputs: &[Spec]) -> u64 {
        crate::primitive::product_work(inputs, outputs)
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let name = "GatherQMM";
        let affine = self.mode == QuantizationMode::Affine;
        if affine {
            let p = check_params(name, self.mode, self.group_size, self.bits)?;
            super::expect_inputs(name, inputs, 6)?;
            check_packed(name, &inputs[1], &inputs[2], &inputs[3], p)?;
        } else {
            // The float modes have no biases: (x, w, scales, lhs, rhs).
            super::expect_inputs(name, inputs, 5)?;
            self.as_qmm().check_fp(name, &inputs[1], &inputs[2])?;
        }
        let q = inputs.len() - 2;
        let (x, w, lhs, rhs) = (&inputs[0], &inputs[1], &inputs[q], &inputs[q + 1]);
        if x.shape.len() < 2
            || lhs.dtype != Dtype::Uint32
            || rhs.dtype != Dtype::Uint32
            || lhs.shape != rhs.shape
        {
            return Err(Error::invalid(
                name,
                format!(
                    "expected x with at least 2 dimensions and uint32 indices of one shape, \
                     found x {:?}, indices {:?} {} and {:?} {}",
                    x.shape, lhs.shape, lhs.dtype, rhs.shape, rhs.dtype
                ),
            ));
        }
        // The product of one x matrix with one w matrix.
        let nd = w.shape.len();
        let mut one = vec![
            Spec::new(x.shape[x.shape.len() - 2..].to_vec(), x.dtype),
            Spec::new(w.shape[nd - 2..].to_vec(), w.dtype),
        ];
        one.extend(
            inputs[2..q]
                .iter()
                .map(|a| Spec::new(a.shape[nd - 2..].to_vec(), a.dtype)),
        );
        let mn = self.as_qmm().output_specs(&one)?.remove(0);
        let mut shape = lhs.shape.clone();
        shape.extend_from_slice(&mn.shape);
        Ok(vec![Spec::new(shape, x.dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        if self.mode != QuantizationMode::Affine {
            return self.eval_fp(inputs, &out[0]);
        }
        let p = check_params("GatherQMM", self.mode, self.group_size, self.bits)?;
        let g = GatherParts::of(self, inputs, p)?;
        let w = &inputs[1];
        let words = to_contiguous_vec::<u32>(&w.data()?, w.shape());
        let (sc, bi) = (read_f32(&inputs[2])?, read_f32(&inputs[3])?);
        let nw = x_batch(w);
        let (pw, sw) = (words.len() / nw.max(1), sc.len() / nw.max(1));
        let result = g.products(out[0].size(), |x, r, dst| {
            let qm = QMatrix {
                packed: &words[r * pw..(r + 1) * pw],
                scales: &sc[r * sw..(r + 1) * sw],
                biases: &bi[r * sw..(r + 1) * sw],
                rows: g.rows,
                cols: g.cols,
            };
            kernel::qmm(x, g.m, qm, p, self.transpose, dst)
        });
        Ok(vec![write_f32(&result, out[0].dtype, &out[0].shape)])
    }
}

/// Number of matrices in the batch axes of `a` (at least 2-D).
fn x_batch(a: &Array) -> usize {
    a.shape()[..a.ndim() - 2]
        .iter()
        .map(|&d| d as usize)
        .product()
}
