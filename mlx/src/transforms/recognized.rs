//! The kernels of the subgraphs `transforms::recognize` finds: MLX's
//! recorded decompositions of rms_norm and rope, in float32, each run in
//! one pass with the operations of the graph in the graph's order (so the
//! same roundings: a sum of squares folded as `Reduce` folds it, every
//! product and sum rounded on its own, nothing fused into an FMA).
//!
//! Like a fused chain, such a node has no registry entry: exports and
//! transforms use its fallback, the matched entries replayed.

use super::fused::{replay_steps, Step};
use crate::array::Data;
use crate::backend::cpu::elementwise::fresh_output;
use crate::backend::cpu::reduce::{fold_slice, Reducer, SumR};
use crate::backend::cpu::PAR_THRESHOLD;
use crate::layout::{for_each_row, row_major};
use crate::primitive::{MlxWriter, Primitive, PrimitiveState, Spec, StateValue};
use crate::primitives::unary::recip_sqrt;
use crate::{Array, Dtype, Error, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// Which decomposition a [`Recognized`] node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Inputs (x, a, eps, w): `x · rsqrt(sum(x²) · a + eps) · w` over the
    /// last axis; `a` and `eps` one value each, `w` one row.
    RmsNorm,
    /// Inputs (x, c, s): `concat(x1 · c − x2 · s, x1 · s + x2 · c)` with x1,
    /// x2 the halves of x's last axis and c, s shaped like them.
    RopeHalves,
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

impl PrimitiveState for Recognized {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::RmsNorm => "RecognizedRMSNorm",
            Kind::RopeHalves => "RecognizedRoPE",
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["steps"]
    }
    fn state(&self) -> Vec<StateValue> {
        let names = self
            .steps
            .iter()
            .map(|(p, _)| StateValue::Str(p.name().to_string()));
        vec![StateValue::List(names.collect())]
    }
    fn encode_cbor(&self) -> ciborium::Value {
        ciborium::Value::Map(Vec::new())
    }
    fn write_mlx(&self, w: &mut MlxWriter) {
        // As for a fused chain: exports record the steps instead.
        w.problems.push(format!(
            "{} has no file form; export records the graph it stands for",
            self.name()
        ));
    }
    fn clone_boxed(&self) -> Box<dyn Primitive> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Primitive for Recognized {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let want = match self.kind {
            Kind::RmsNorm => 4,
            Kind::RopeHalves => 3,
        };
        if inputs.len() < want || inputs.iter().any(|s| s.dtype != Dtype::Float32) {
            return Err(Error::invalid(
                self.name(),
                format!("expected {want} float32 inputs, got {inputs:?}"),
            ));
        }
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[Array], outputs: &[Spec]) -> Result<Vec<Data>> {
        let out = &outputs[0];
        let mut buf = fresh_output(out);
        let o = buf.as_mut_slice::<f32>().expect("heap buffer");
        match self.kind {
            Kind::RmsNorm => rms_norm(inputs, o)?,
            Kind::RopeHalves => rope_halves(inputs, o)?,
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

/// `x · rsqrt(sum(x²) · a + eps) · w`, row by row into `out`.
fn rms_norm(inputs: &[Array], out: &mut [f32]) -> Result<()> {
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
    let wv = wd.buffer.as_slice::<f32>();
    let w: Vec<f32> = (0..d as isize)
        .map(|j| wv[(w0 + j * ws) as usize])
        .collect();
    let row = |(xr, or): (&[f32], &mut [f32])| {
        let squares: Vec<f32> = xr.iter().map(|v| v * v).collect();
        // As `Reduce` sums a row: fold, then join the running total.
        let sum = <SumR as Reducer<f32>>::combine(
            <SumR as Reducer<f32>>::init(),
            fold_slice::<f32, SumR>(&squares),
        );
        let r = recip_sqrt(sum * a + eps);
        for ((o, &v), &wj) in or.iter_mut().zip(xr).zip(&w) {
            *o = v * r * wj;
        }
    };
    if xs.len() >= PAR_THRESHOLD {
        xs.par_chunks(d).zip(out.par_chunks_mut(d)).for_each(row);
    } else {
        xs.chunks(d).zip(out.chunks_mut(d)).for_each(row);
    }
    Ok(())
}

/// `x1 · c − x2 · s` and `x1 · s + x2 · c` side by side, row by row.
fn rope_halves(inputs: &[Array], out: &mut [f32]) -> Result<()> {
    let [x, c, s, ..] = inputs else {
        return Err(Error::invalid("RecognizedRoPE", "expected 3 inputs"));
    };
    let width = *x.shape().last().unwrap_or(&0) as usize;
    let h = width / 2;
    let (xd, cd, sd) = (x.data()?, c.data()?, s.data()?);
    let (xr, cr, sr) = (
        row_starts(&xd, x.shape()),
        row_starts(&cd, c.shape()),
        row_starts(&sd, s.shape()),
    );
    let (xv, cv, sv) = (
        xd.buffer.as_slice::<f32>(),
        cd.buffer.as_slice::<f32>(),
        sd.buffer.as_slice::<f32>(),
    );
    let at = |v: &[f32], (start, stride): (isize, isize), j: usize| {
        v[(start + j as isize * stride) as usize]
    };
    let row = |(r, o): (usize, &mut [f32])| {
        for j in 0..h {
            let (x1, x2) = (at(xv, xr[r], j), at(xv, xr[r], j + h));
            let (cj, sj) = (at(cv, cr[r], j), at(sv, sr[r], j));
            o[j] = x1 * cj - x2 * sj;
            o[h + j] = x1 * sj + x2 * cj;
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
