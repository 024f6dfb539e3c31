//! The kernels of the subgraphs `transforms::recognize` finds: MLX's
//! recorded decompositions of rms_norm and rope, each run in one pass with
//! the operations of the graph in the graph's order and type (so the same
//! roundings: a sum of squares folded as `Reduce` folds it, every product
//! and sum rounded on its own to its dtype as the element-wise kernels
//! round it, nothing fused into an FMA).
//!
//! Like a fused chain, such a node has no registry entry: exports and
//! transforms use its fallback, the matched entries replayed.

use super::fused::{replay_steps, Step};
use crate::array::Data;
use crate::backend::cpu::elementwise::fresh_output;
use crate::backend::cpu::f16c;
use crate::backend::cpu::num::{Float, Num};
use crate::backend::cpu::reduce::{fold_slice, Reducer, SumR};
use crate::backend::cpu::PAR_THRESHOLD;
use crate::layout::{for_each_row, row_major};
use crate::primitive::{Primitive, PrimitiveState, Spec};
use crate::primitives::unary::recip_sqrt;
use crate::{Array, Dtype, Element, Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::sync::Arc;

/// Which decomposition a [`Recognized`] node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Inputs (x, a, eps, w): `x · rsqrt(sum(x²) · a + eps) · w` over the
    /// last axis; x, `a` and `eps` float32 (`a` and `eps` one value each),
    /// `w` one row of the output's dtype, which `x · rsqrt(..)` is rounded
    /// to first.
    RmsNorm,
    /// Inputs (x, c, s), all of the output's dtype: `concat(x1 · c − x2 · s,
    /// x1 · s + x2 · c)` with x1, x2 the halves of the first `dims` of x's
    /// last axis and c, s shaped like them, then x's other elements.
    RopeHalves,
    /// As [`Kind::RopeHalves`] with x1, x2 the even and odd elements of
    /// the first `dims`, the results interleaved the same way (MLX's
    /// `traditional` rope).
    RopePairs,
}

/// A recognised subgraph run as one kernel.
#[derive(Clone, Debug)]
pub struct Recognized {
    kind: Kind,
    /// The matched entries: the fallback.
    steps: Arc<[Step]>,
}

impl Recognized {
    pub(super) fn new(kind: Kind, steps: Vec<Step>) -> Recognized {
        Recognized {
            kind,
            steps: steps.into(),
        }
    }
}

run_time_node_state!(
    Recognized,
    "a recognised subgraph",
    |r| match r.kind {
        Kind::RmsNorm => "RecognizedRMSNorm",
        Kind::RopeHalves => "RecognizedRoPE",
        Kind::RopePairs => "RecognizedRoPEPairs",
    },
    steps
);

impl Primitive for Recognized {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let dtypes: Vec<Dtype> = inputs.iter().map(|s| s.dtype).collect();
        let out = match (self.kind, &dtypes[..]) {
            (Kind::RmsNorm, [F32, F32, F32, t]) if is_kernel_dtype(*t) => *t,
            (Kind::RopeHalves | Kind::RopePairs, [t, u, v])
                if is_kernel_dtype(*t) && t == u && u == v =>
            {
                *t
            }
            _ => {
                return Err(Error::invalid(
                    self.name(),
                    format!("inputs of unexpected dtypes: {dtypes:?}"),
                ))
            }
        };
        Ok(vec![Spec::new(inputs[0].shape.clone(), out)])
    }

    fn eval(&self, inputs: &[Array], outputs: &[Spec]) -> Result<Vec<Data>> {
        let out = &outputs[0];
        let mut buf = fresh_output(out);
        match out.dtype {
            F32 => run::<f32>(self.kind, inputs, out_slice(&mut buf)?)?,
            Dtype::Bfloat16 => run::<bf16>(self.kind, inputs, out_slice(&mut buf)?)?,
            _ => run::<f16>(self.kind, inputs, out_slice(&mut buf)?)?,
        }
        Ok(vec![Data::contiguous(buf, &out.shape)])
    }

    /// The matched entries, replayed.
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        Some(replay_steps(self.name(), &self.steps, inputs))
    }

    fn is_equivalent(&self, _other: &dyn Primitive) -> bool {
        false
    }
}

const F32: Dtype = Dtype::Float32;

/// `kind`'s kernel in the output's type `T`.
fn run<T: Float + Element>(kind: Kind, inputs: &[Array], out: &mut [T]) -> Result<()> {
    match kind {
        Kind::RmsNorm => rms_norm::<T>(inputs, out),
        Kind::RopeHalves => rope::<T, false>(inputs, out),
        Kind::RopePairs => rope::<T, true>(inputs, out),
    }
}

/// float32, bfloat16 or float16: the types the kernels compute in.
pub(super) fn is_kernel_dtype(t: Dtype) -> bool {
    matches!(t, Dtype::Float32 | Dtype::Bfloat16 | Dtype::Float16)
}

/// `v` as float16 values when `T` is float16.
fn as_f16<T: Element>(v: &[T]) -> Option<&[f16]> {
    // SAFETY: `Element` is sealed and f16 is its one float16 type, so `T`
    // is f16: the same layout.
    (T::DTYPE == Dtype::Float16)
        .then(|| unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len()) })
}

/// [`as_f16`] of a mutable slice.
fn as_f16_mut<T: Element>(v: &mut [T]) -> Option<&mut [f16]> {
    // SAFETY: as in `as_f16`.
    (T::DTYPE == Dtype::Float16)
        .then(|| unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len()) })
}

/// A fresh output buffer's elements.
fn out_slice<T: Element>(buf: &mut crate::Buffer) -> Result<&mut [T]> {
    buf.as_mut_slice::<T>()
        .ok_or_else(|| Error::invalid("Recognized", "the output buffer is not writable"))
}

/// The value at a uniform array's offset (each of its elements).
fn first_value(a: &Array) -> Result<f32> {
    Ok(a.data()?.slice::<f32>()[0])
}

/// Start and stride (in elements) of each run along `shape`'s last axis.
fn row_starts(d: &Data, shape: &[i32]) -> Vec<(isize, isize)> {
    let mut rows = Vec::new();
    for_each_row(shape, &d.strides, d.offset, |start, _, stride| {
        rows.push((start, stride))
    });
    rows
}

/// `round_T(x · rsqrt(sum(x²) · a + eps)) · w`, row by row into `out`.
fn rms_norm<T: Float + Element>(inputs: &[Array], out: &mut [T]) -> Result<()> {
    let [x, a, eps, w, ..] = inputs else {
        return Err(Error::invalid("RecognizedRMSNorm", "expected 4 inputs"));
    };
    let d = *x.shape().last().unwrap_or(&1) as usize;
    let xd = x.data()?;
    let xs = row_major::<f32>(&xd, x.shape());
    let (a, eps) = (first_value(a)?, first_value(eps)?);
    // Every row of w is the same (see `recognize`): read the first.
    let wd = w.data()?;
    let (w0, ws) = row_starts(&wd, w.shape())[0];
    let wv = wd.buffer.as_slice::<T>();
    let w: Vec<T> = (0..d as isize)
        .map(|j| wv[(w0 + j * ws) as usize])
        .collect();
    // float16 rounds a block at a time with F16C where the CPU has it.
    let w16 = as_f16(&w).filter(|_| f16c::available());
    let row = |(xr, or): (&[f32], &mut [T])| {
        let squares: Vec<f32> = xr.iter().map(|v| v * v).collect();
        // As `Reduce` sums a row: fold, then join the running total.
        let sum = <SumR as Reducer<f32>>::combine(
            <SumR as Reducer<f32>>::init(),
            fold_slice::<f32, SumR>(&squares),
        );
        let r = recip_sqrt(sum * a + eps);
        if let (Some(w), Some(o)) = (w16, as_f16_mut(or)) {
            // SAFETY: the CPU has F16C (`w16` is Some only then).
            unsafe { f16c::with_f16c(|| f16c::norm_row(xr, r, w, o)) };
            return;
        }
        for ((o, &v), &wj) in or.iter_mut().zip(xr).zip(&w) {
            *o = T::from_f32(v * r).mul(wj);
        }
    };
    if xs.len() >= PAR_THRESHOLD {
        xs.par_chunks(d).zip(out.par_chunks_mut(d)).for_each(row);
    } else {
        xs.chunks(d).zip(out.chunks_mut(d)).for_each(row);
    }
    Ok(())
}

/// `x1 · c − x2 · s` and `x1 · s + x2 · c`, row by row, each operation
/// rounded to `T`: x1, x2 and the two results are the halves of a row's
/// first `2h` elements (h: c's last axis), or (`PAIRS`) their even and odd
/// elements; the rest of the row passes through.
fn rope<T: Num + Element, const PAIRS: bool>(inputs: &[Array], out: &mut [T]) -> Result<()> {
    let [x, c, s, ..] = inputs else {
        return Err(Error::invalid("RecognizedRoPE", "expected 3 inputs"));
    };
    let width = *x.shape().last().unwrap_or(&0) as usize;
    // c holds one value per pair: the first 2h of a row rotate.
    let h = *c.shape().last().unwrap_or(&0) as usize;
    let dims = 2 * h;
    if dims > width {
        return Err(Error::invalid("RecognizedRoPE", "rotates more than a row"));
    }
    let (xd, cd, sd) = (x.data()?, c.data()?, s.data()?);
    let (xr, cr, sr) = (
        row_starts(&xd, x.shape()),
        row_starts(&cd, c.shape()),
        row_starts(&sd, s.shape()),
    );
    let (xv, cv, sv) = (
        xd.buffer.as_slice::<T>(),
        cd.buffer.as_slice::<T>(),
        sd.buffer.as_slice::<T>(),
    );
    // float16 halves round a block at a time with F16C where the CPU has it.
    let v16 = match (as_f16(xv), as_f16(cv), as_f16(sv)) {
        (Some(x), Some(c), Some(s)) if !PAIRS && f16c::available() => Some((x, c, s)),
        _ => None,
    };
    let at = |v: &[T], (start, stride): (isize, isize), j: usize| {
        v[(start + j as isize * stride) as usize]
    };
    // Where the j-th x1 and x2 (and results) sit in a row.
    let place = |j: usize| {
        if PAIRS {
            (2 * j, 2 * j + 1)
        } else {
            (j, j + h)
        }
    };
    let row = |(r, o): (usize, &mut [T])| {
        let ((x0, xs), (c0, cs), (s0, ss)) = (xr[r], cr[r], sr[r]);
        let (o, rest) = o.split_at_mut(dims);
        // The elements past the rotated ones pass through.
        for (j, o) in rest.iter_mut().enumerate() {
            *o = at(xv, xr[r], dims + j);
        }
        if xs == 1 && cs == 1 && ss == 1 {
            // Runs in place: slices, which the compiler vectorizes.
            let (x0, c0, s0) = (x0 as usize, c0 as usize, s0 as usize);
            if let (Some((xv, cv, sv)), Some(o)) = (v16, as_f16_mut(o)) {
                let (x1, x2) = xv[x0..x0 + dims].split_at(h);
                let (o1, o2) = o.split_at_mut(h);
                let (c, s) = (&cv[c0..c0 + h], &sv[s0..s0 + h]);
                // SAFETY: the CPU has F16C (`v16` is Some only then).
                unsafe { f16c::with_f16c(|| f16c::rope_halves_row([x1, x2], c, s, o1, o2)) };
                return;
            }
            let xrow = &xv[x0..x0 + dims];
            let (c, s) = (&cv[c0..c0 + h], &sv[s0..s0 + h]);
            if PAIRS {
                let pairs = xrow.chunks_exact(2).zip(o.chunks_exact_mut(2));
                for (((p, o), &cj), &sj) in pairs.zip(c).zip(s) {
                    o[0] = p[0].mul(cj).sub(p[1].mul(sj));
                    o[1] = p[0].mul(sj).add(p[1].mul(cj));
                }
            } else {
                let (x1, x2) = xrow.split_at(h);
                let (o1, o2) = o.split_at_mut(h);
                for (j, (o1, o2)) in o1.iter_mut().zip(o2).enumerate() {
                    *o1 = x1[j].mul(c[j]).sub(x2[j].mul(s[j]));
                    *o2 = x1[j].mul(s[j]).add(x2[j].mul(c[j]));
                }
            }
            return;
        }
        for j in 0..h {
            let (i1, i2) = place(j);
            let (x1, x2) = (at(xv, xr[r], i1), at(xv, xr[r], i2));
            let (cj, sj) = (at(cv, cr[r], j), at(sv, sr[r], j));
            o[i1] = x1.mul(cj).sub(x2.mul(sj));
            o[i2] = x1.mul(sj).add(x2.mul(cj));
        }
    };
    if width == 0 {
        return Ok(());
    }
    if out.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(width).enumerate().for_each(row);
    } else {
        out.chunks_mut(width).enumerate().for_each(row);
    }
    Ok(())
}
