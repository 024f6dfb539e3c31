//! Indexing primitives with MLX's names and state: Gather, GatherAxis,
//! Scatter, ScatterAxis, MaskedScatter.
//!
//! Index inputs may have any integer dtype (all index inputs of one node
//! share it); bool and floating index arrays are errors. Negative indices
//! count from the end of their axis. Indices still out of range after that
//! are an evaluation error here, where MLX reads or writes out of bounds.

use super::expect_inputs;
use super::grad_util::{linear_jvp, only_args};
use crate::backend::cpu::indexing::{self as kernel, is_index_dtype, Combine};
use crate::ops;
use crate::primitive::Spec;
use crate::shape::normalize_axis;
use crate::{Array, Data, Dtype, Error, Primitive, Result};

crate::state_enum! {
    /// How Scatter combines updates with the destination (None = assignment).
    pub enum ScatterType { Max = 0, Min = 1, Sum = 2, Prod = 3, None = 4 }
}

crate::state_enum! {
    /// How ScatterAxis combines updates with the destination (None = assignment).
    pub enum ScatterAxisType { Sum = 0, None = 1 }
}

impl ScatterType {
    fn combine(self) -> Combine {
        match self {
            ScatterType::Max => Combine::Max,
            ScatterType::Min => Combine::Min,
            ScatterType::Sum => Combine::Sum,
            ScatterType::Prod => Combine::Prod,
            ScatterType::None => Combine::Assign,
        }
    }
}

/// Checks that index inputs are integer arrays of one dtype and one shape;
/// returns that shape.
fn check_indices<'a>(op: &str, idx: &'a [Spec]) -> Result<&'a [i32]> {
    let Some(first) = idx.first() else {
        return Ok(&[]);
    };
    for s in idx {
        if !is_index_dtype(s.dtype) {
            return Err(Error::invalid(
                op,
                format!("indices must have an integer dtype, found {}", s.dtype),
            ));
        }
        if s.dtype != first.dtype || s.shape != first.shape {
            let all: Vec<String> = idx
                .iter()
                .map(|s| format!("{} {:?}", s.dtype, s.shape))
                .collect();
            return Err(Error::invalid(
                op,
                format!(
                    "index arrays must share one dtype and one shape, found {}",
                    all.join(", ")
                ),
            ));
        }
    }
    Ok(&first.shape)
}

/// Normalised axes, one per index array, distinct and inside `ndim`.
fn check_axes(op: &str, axes: &[i32], n_idx: usize, ndim: usize) -> Result<Vec<usize>> {
    if axes.len() != n_idx {
        return Err(Error::invalid(
            op,
            format!("expected one axis per index array ({n_idx}), found axes {axes:?}"),
        ));
    }
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        if a < 0 || a as usize >= ndim {
            return Err(Error::invalid(
                op,
                format!("axis {a} of {axes:?} is outside an array with {ndim} dimensions"),
            ));
        }
        if out.contains(&(a as usize)) {
            return Err(Error::invalid(op, format!("axes {axes:?} repeat an axis")));
        }
        out.push(a as usize);
    }
    Ok(out)
}

/// Slices of `src` at gathered positions: inputs (src, idx_0 … idx_{k-1});
/// `axes[j]` is the axis idx_j indexes; output `I ++ slice_sizes`.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Gather {
    #[state]
    pub axes: Vec<i32>,
    #[state]
    pub slice_sizes: Vec<i32>,
}

impl Gather {
    fn check(&self, inputs: &[Spec]) -> Result<(Vec<usize>, Vec<i32>)> {
        let op = "Gather";
        let Some((src, idx)) = inputs.split_first() else {
            return Err(Error::invalid(op, "expected a source input"));
        };
        let ishape = check_indices(op, idx)?;
        let axes = check_axes(op, &self.axes, idx.len(), src.shape.len())?;
        let bad = self.slice_sizes.len() != src.shape.len()
            || self
                .slice_sizes
                .iter()
                .zip(&src.shape)
                .any(|(&s, &d)| s < 0 || s > d);
        if bad {
            return Err(Error::invalid(
                op,
                format!(
                    "slice sizes {:?} must have one entry in [0, dim] per axis of the source {:?}",
                    self.slice_sizes, src.shape
                ),
            ));
        }
        let mut shape = ishape.to_vec();
        shape.extend_from_slice(&self.slice_sizes);
        Ok((axes, shape))
    }
}

impl Primitive for Gather {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let (_, shape) = self.check(inputs)?;
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let specs: Vec<Spec> = inputs.iter().map(|a| a.spec().clone()).collect();
        let (axes, _) = self.check(&specs)?;
        let d = kernel::gather(&inputs[0], &inputs[1..], &axes, &self.slice_sizes, &out[0])?;
        Ok(vec![d])
    }
    /// The cotangent added back at the gathered positions (Scatter Sum).
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        only_args("Gather", argnums, &[0], INDICES)?;
        let mut inputs = vec![ops::zeros_like(&primals[0])?];
        inputs.extend_from_slice(&primals[1..]);
        inputs.push(cot[0].clone());
        let p = Scatter {
            reduce_type: ScatterType::Sum,
            axes: self.axes.clone(),
        };
        Ok(vec![Array::from_primitive(p, inputs)?])
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, primals, tangents, argnums, &[0], INDICES)
    }
}

/// How the rules name the inputs that have no derivative.
const INDICES: &str = "its indices";

/// Checks (src, indices[, updates]) for the `axis` primitives: same rank,
/// integer indices, sizes equal to the source's except along `axis`.
fn check_along_axis(op: &str, axis: i32, src: &Spec, idx: &Spec) -> Result<usize> {
    if !is_index_dtype(idx.dtype) {
        return Err(Error::invalid(
            op,
            format!("indices must have an integer dtype, found {}", idx.dtype),
        ));
    }
    let ax = normalize_axis(op, axis, src.shape.len())?;
    let same = idx.shape.len() == src.shape.len()
        && (0..src.shape.len()).all(|i| i == ax || idx.shape[i] == src.shape[i]);
    if !same {
        return Err(Error::invalid(
            op,
            format!(
                "indices of shape {:?} must match the array's shape {:?} except along axis {ax}",
                idx.shape, src.shape
            ),
        ));
    }
    Ok(ax)
}

/// `take_along_axis`: inputs (src, indices); output has the indices' shape.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct GatherAxis {
    #[state]
    pub axis: i32,
}

impl Primitive for GatherAxis {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("GatherAxis", inputs, 2)?;
        check_along_axis("GatherAxis", self.axis, &inputs[0], &inputs[1])?;
        Ok(vec![Spec::new(inputs[1].shape.clone(), inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let ax = check_along_axis("GatherAxis", self.axis, inputs[0].spec(), inputs[1].spec())?;
        Ok(vec![kernel::gather_axis(
            &inputs[0], &inputs[1], ax, &out[0],
        )?])
    }
    /// The cotangent added back along the axis (ScatterAxis Sum).
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        only_args("GatherAxis", argnums, &[0], INDICES)?;
        let p = ScatterAxis {
            reduce_type: ScatterAxisType::Sum,
            axis: self.axis,
        };
        let inputs = vec![
            ops::zeros_like(&primals[0])?,
            primals[1].clone(),
            cot[0].clone(),
        ];
        Ok(vec![Array::from_primitive(p, inputs)?])
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, primals, tangents, argnums, &[0], INDICES)
    }
}

/// Writes (or combines) update slices into a copy of the destination:
/// inputs (dst, idx_0 … idx_{k-1}, updates), updates shaped `I ++ slice`
/// where `slice` has one entry (≤ the dimension) per axis of dst.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Scatter {
    #[state]
    pub reduce_type: ScatterType,
    #[state]
    pub axes: Vec<i32>,
}

impl Scatter {
    fn check(&self, inputs: &[Spec]) -> Result<Vec<usize>> {
        let op = "Scatter";
        if inputs.len() < 2 {
            return Err(Error::invalid(
                op,
                format!(
                    "expected (dst, indices…, updates), found {} inputs",
                    inputs.len()
                ),
            ));
        }
        let (dst, upd) = (&inputs[0], &inputs[inputs.len() - 1]);
        let idx = &inputs[1..inputs.len() - 1];
        let ishape = check_indices(op, idx)?;
        let axes = check_axes(op, &self.axes, idx.len(), dst.shape.len())?;
        if upd.dtype != dst.dtype {
            return Err(Error::invalid(
                op,
                format!(
                    "updates must have the destination's dtype {}, found {}",
                    dst.dtype, upd.dtype
                ),
            ));
        }
        let k = ishape.len();
        let ok = upd.shape.len() == k + dst.shape.len()
            && upd.shape[..k] == *ishape
            && upd.shape[k..].iter().zip(&dst.shape).all(|(&u, &d)| u <= d);
        if !ok {
            return Err(Error::invalid(
                op,
                format!(
                    "updates of shape {:?} do not fit index shape {ishape:?} followed by a slice of \
                     the destination {:?}",
                    upd.shape, dst.shape
                ),
            ));
        }
        Ok(axes)
    }
}

impl Primitive for Scatter {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        self.check(inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let specs: Vec<Spec> = inputs.iter().map(|a| a.spec().clone()).collect();
        let axes = self.check(&specs)?;
        let n = inputs.len();
        let d = kernel::scatter(
            &inputs[0],
            &inputs[1..n - 1],
            &inputs[n - 1],
            &axes,
            self.reduce_type.combine(),
            &out[0],
        )?;
        Ok(vec![d])
    }
    /// Assignment and sum pass the cotangent to the kept destination
    /// entries and gather it for the updates; max and min route it to
    /// whichever of the two produced the result (both on ties).
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        outputs: &[Array],
    ) -> Result<Vec<Array>> {
        let n = primals.len();
        only_args("Scatter", argnums, &[0, n - 1], INDICES)?;
        if self.reduce_type == ScatterType::Prod {
            return Err(super::grad_util::not_differentiable(
                "Scatter",
                "a product reduction",
            ));
        }
        let (dst, idx, upd, c) = (&primals[0], &primals[1..n - 1], &primals[n - 1], &cot[0]);
        let extreme = matches!(self.reduce_type, ScatterType::Max | ScatterType::Min);
        let k = upd.ndim() - dst.ndim();
        let gather = |a: &Array| {
            let mut inputs = vec![a.clone()];
            inputs.extend_from_slice(idx);
            let p = Gather {
                axes: self.axes.clone(),
                slice_sizes: upd.shape()[k..].to_vec(),
            };
            Array::from_primitive(p, inputs)
        };
        argnums
            .iter()
            .map(|&a| match (a, self.reduce_type) {
                (0, ScatterType::None) => {
                    let mut inputs = vec![c.clone()];
                    inputs.extend_from_slice(idx);
                    inputs.push(ops::zeros_like(upd)?);
                    Array::from_primitive(self.clone(), inputs)
                }
                (0, _) if extreme => keep_where_equal(c, &outputs[0], dst),
                (0, _) => Ok(c.clone()),
                (_, _) if extreme => keep_where_equal(&gather(c)?, &gather(&outputs[0])?, upd),
                _ => gather(c),
            })
            .collect()
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        if !matches!(self.reduce_type, ScatterType::None | ScatterType::Sum) {
            return Err(super::grad_util::not_differentiable(
                "Scatter",
                &format!("a {} reduction in forward mode", self.reduce_type.name()),
            ));
        }
        linear_jvp(
            self,
            primals,
            tangents,
            argnums,
            &[0, primals.len() - 1],
            INDICES,
        )
    }
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        Err(Error::invalid(
            "Scatter",
            "cannot infer output shapes in a shapeless export (as in MLX)",
        ))
    }
}

/// `put_along_axis` / `scatter_add_axis`: inputs (dst, indices, updates),
/// indices and updates of one shape, equal to dst's except along `axis`.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct ScatterAxis {
    #[state]
    pub reduce_type: ScatterAxisType,
    #[state]
    pub axis: i32,
}

impl ScatterAxis {
    fn check(&self, inputs: &[Spec]) -> Result<usize> {
        let op = "ScatterAxis";
        expect_inputs(op, inputs, 3)?;
        let ax = check_along_axis(op, self.axis, &inputs[0], &inputs[1])?;
        let (dst, idx, upd) = (&inputs[0], &inputs[1], &inputs[2]);
        if upd.shape != idx.shape || upd.dtype != dst.dtype {
            return Err(Error::invalid(
                op,
                format!(
                    "updates must have the indices' shape {:?} and the destination's dtype {}, \
                     found {} {:?}",
                    idx.shape, dst.dtype, upd.dtype, upd.shape
                ),
            ));
        }
        Ok(ax)
    }
}

impl Primitive for ScatterAxis {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        self.check(inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let specs: Vec<Spec> = inputs.iter().map(|a| a.spec().clone()).collect();
        let ax = self.check(&specs)?;
        let how = match self.reduce_type {
            ScatterAxisType::Sum => Combine::Sum,
            ScatterAxisType::None => Combine::Assign,
        };
        let d = kernel::scatter_axis(&inputs[0], &inputs[1], &inputs[2], ax, how, &out[0])?;
        Ok(vec![d])
    }
    /// As Scatter's rule, along one axis.
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        only_args("ScatterAxis", argnums, &[0, 2], INDICES)?;
        let (idx, upd, c) = (&primals[1], &primals[2], &cot[0]);
        argnums
            .iter()
            .map(|&a| match (a, self.reduce_type) {
                (0, ScatterAxisType::None) => Array::from_primitive(
                    self.clone(),
                    vec![c.clone(), idx.clone(), ops::zeros_like(upd)?],
                ),
                (0, ScatterAxisType::Sum) => Ok(c.clone()),
                _ => Array::from_primitive(
                    GatherAxis { axis: self.axis },
                    vec![c.clone(), idx.clone()],
                ),
            })
            .collect()
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, primals, tangents, argnums, &[0, 2], INDICES)
    }
}

/// `c` where `result == source` (the source gave the result), else 0.
fn keep_where_equal(c: &Array, result: &Array, source: &Array) -> Result<Array> {
    let zero = Array::scalar_of(0.0, c.dtype());
    ops::where_(&ops::equal(result, source)?, c, &zero)
}

/// Boolean-mask assignment: inputs (dst, mask of dst's shape, values);
/// per batch (axis 0), the true positions of the mask take the batch's
/// values in row-major order.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx_since = "0.30.1")]
pub struct MaskedScatter {}

impl Primitive for MaskedScatter {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let op = "MaskedScatter";
        expect_inputs(op, inputs, 3)?;
        let (dst, mask, vals) = (&inputs[0], &inputs[1], &inputs[2]);
        if mask.dtype != Dtype::Bool || mask.shape != dst.shape || dst.shape.is_empty() {
            return Err(Error::invalid(
                op,
                format!(
                    "the mask must be bool with the destination's shape {:?} (at least 1-d), \
                     found {} {:?}",
                    dst.shape, mask.dtype, mask.shape
                ),
            ));
        }
        if vals.dtype != dst.dtype || vals.shape.is_empty() || vals.shape[0] != dst.shape[0] {
            return Err(Error::invalid(
                op,
                format!(
                    "values must have dtype {} and {} rows (one per batch), found {} {:?}",
                    dst.dtype, dst.shape[0], vals.dtype, vals.shape
                ),
            ));
        }
        Ok(vec![dst.clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![kernel::masked_scatter(
            &inputs[0], &inputs[1], &inputs[2], &out[0],
        )?])
    }
    /// The destination keeps the cotangent where the mask is false; the
    /// values get it back from the masked positions: per batch, the running
    /// count of true mask entries is each position's value index.
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        only_args("MaskedScatter", argnums, &[0, 2], "its mask")?;
        let (mask, vals, c) = (&primals[1], &primals[2], &cot[0]);
        let zero = Array::scalar_of(0.0, c.dtype());
        argnums
            .iter()
            .map(|&a| {
                if a == 0 {
                    return ops::where_(mask, &zero, c);
                }
                let b = mask.shape()[0];
                let m = ops::reshape(mask, &[b, -1])?;
                let count = ops::cumsum(&ops::astype(&m, Dtype::Int32)?, Some(1), false, false)?;
                let pos = ops::where_(&m, &count, &Array::scalar(0i32))?;
                let upd = ops::where_(&m, &ops::reshape(c, &[b, -1])?, &zero)?;
                let dst = ops::zeros(&[b, (vals.size() / b.max(1) as usize) as i32], c.dtype())?;
                let p = ScatterAxis {
                    reduce_type: ScatterAxisType::Sum,
                    axis: 1,
                };
                ops::reshape(
                    &Array::from_primitive(p, vec![dst, pos, upd])?,
                    vals.shape(),
                )
            })
            .collect()
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, primals, tangents, argnums, &[0, 2], "its mask")
    }
}
