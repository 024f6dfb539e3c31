//! Sorting and scan primitives with MLX's names and state: Sort, ArgSort,
//! Partition, ArgPartition (axis stored non-negative; NaNs sort last;
//! sorts are stable) and Scan (cumulative sum/prod/max/min/logaddexp).

use super::expect_inputs;
use super::grad_util::not_differentiable;
use super::indexing::{GatherAxis, ScatterAxis, ScatterAxisType};
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::scan::{self, mlx_half_result, LogAddExpElem, ScanElem, ScanSpec};
use crate::backend::cpu::sort;
use crate::ops;
use crate::primitive::Spec;
use crate::shape::normalize_axis;
use crate::{dispatch_dtype, Array, Complex64, Data, Dtype, Error, Primitive, Result};
use half::{bf16, f16};

/// The axis of a one-input sort-like primitive, checked against the input.
fn sort_axis(op: &str, inputs: &[Spec], axis: i32) -> Result<usize> {
    expect_inputs(op, inputs, 1)?;
    normalize_axis(op, axis, inputs[0].shape.len())
}

/// `kth` (negative counts from the end) checked against the axis size.
fn kth_index(op: &str, kth: i32, shape: &[i32], axis: usize) -> Result<usize> {
    let n = shape[axis];
    let k = if kth < 0 { kth + n } else { kth };
    if k < 0 || k >= n {
        return Err(Error::invalid(
            op,
            format!("kth {kth} is out of range for axis {axis} of size {n} (shape {shape:?})"),
        ));
    }
    Ok(k as usize)
}

/// `a` sorted along `axis` (stable; NaNs last).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Sort {
    #[state]
    pub axis: i32,
}

impl Primitive for Sort {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        sort_axis("Sort", inputs, self.axis)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let ax = normalize_axis("Sort", self.axis, a.ndim())?;
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => sort::sort::<T>(a, ax)?),
        ])
    }
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        _: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        let order = Array::from_primitive(ArgSort { axis: self.axis }, vec![primals[0].clone()])?;
        permutation_vjp(&primals[0], &order, &cot[0], self.axis)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let order = Array::from_primitive(ArgSort { axis: self.axis }, vec![primals[0].clone()])?;
        permutation_jvp(&order, &tangents[0], self.axis)
    }
}

/// Cotangent of `x` permuted by `order` along `axis` (the order is
/// locally constant, so cut from the graph): the cotangent written back to
/// the positions the values came from.
fn permutation_vjp(x: &Array, order: &Array, cot: &Array, axis: i32) -> Result<Vec<Array>> {
    let p = ScatterAxis {
        reduce_type: ScatterAxisType::None,
        axis,
    };
    let inputs = vec![ops::zeros_like(x)?, ops::stop_gradient(order)?, cot.clone()];
    Ok(vec![Array::from_primitive(p, inputs)?])
}

/// Tangent of `x` permuted by `order`: the tangent gathered the same way.
fn permutation_jvp(order: &Array, tangent: &Array, axis: i32) -> Result<Vec<Array>> {
    let inputs = vec![tangent.clone(), ops::stop_gradient(order)?];
    Ok(vec![Array::from_primitive(GatherAxis { axis }, inputs)?])
}

/// Zero cotangent (or tangent) for index outputs, which are locally
/// constant in the input (MLX's rule for ArgSort and ArgPartition).
fn index_output_vjp(x: &Array) -> Result<Vec<Array>> {
    Ok(vec![ops::zeros_like(x)?])
}

/// The uint32 indices that sort `a` along `axis` (stable; NaNs last).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct ArgSort {
    #[state]
    pub axis: i32,
}

impl Primitive for ArgSort {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        sort_axis("ArgSort", inputs, self.axis)?;
        Ok(vec![Spec::new(inputs[0].shape.clone(), Dtype::Uint32)])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let ax = normalize_axis("ArgSort", self.axis, a.ndim())?;
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => sort::argsort::<T>(a, ax)?),
        ])
    }
    fn vjp(&self, primals: &[Array], _: &[Array], _: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        index_output_vjp(&primals[0])
    }
    fn jvp(&self, primals: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros(primals[0].shape(), Dtype::Uint32)?])
    }
}

/// `a` partitioned along `axis` around its `kth` element: that element is
/// in sorted position, smaller ones before, larger ones after (each side
/// in unspecified order).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Partition {
    #[state]
    pub kth: i32,
    #[state]
    pub axis: i32,
}

impl Primitive for Partition {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let ax = sort_axis("Partition", inputs, self.axis)?;
        kth_index("Partition", self.kth, &inputs[0].shape, ax)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let ax = normalize_axis("Partition", self.axis, a.ndim())?;
        let k = kth_index("Partition", self.kth, a.shape(), ax)?;
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => sort::partition::<T>(a, ax, k)?),
        ])
    }
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        _: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        permutation_vjp(&primals[0], &self.order(&primals[0])?, &cot[0], self.axis)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        permutation_jvp(&self.order(&primals[0])?, &tangents[0], self.axis)
    }
}

impl Partition {
    /// The permutation this partition applies (ArgPartition of the same input).
    fn order(&self, x: &Array) -> Result<Array> {
        let p = ArgPartition {
            kth: self.kth,
            axis: self.axis,
        };
        Array::from_primitive(p, vec![x.clone()])
    }
}

/// The uint32 indices that partition `a` along `axis` around its `kth` element.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct ArgPartition {
    #[state]
    pub kth: i32,
    #[state]
    pub axis: i32,
}

impl Primitive for ArgPartition {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let ax = sort_axis("ArgPartition", inputs, self.axis)?;
        kth_index("ArgPartition", self.kth, &inputs[0].shape, ax)?;
        Ok(vec![Spec::new(inputs[0].shape.clone(), Dtype::Uint32)])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let ax = normalize_axis("ArgPartition", self.axis, a.ndim())?;
        let k = kth_index("ArgPartition", self.kth, a.shape(), ax)?;
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => sort::argpartition::<T>(a, ax, k)?),
        ])
    }
    fn vjp(&self, primals: &[Array], _: &[Array], _: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        index_output_vjp(&primals[0])
    }
    fn jvp(&self, primals: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![ops::zeros(primals[0].shape(), Dtype::Uint32)?])
    }
}

crate::state_enum! {
    /// The operation a Scan accumulates with.
    pub enum ScanType { Max = 0, Min = 1, Sum = 2, Prod = 3, LogAddExp = 4 }
}

/// Cumulative `reduce_type` along `axis`, optionally from the end
/// (`reverse`) and excluding the current element (`!inclusive`, the first
/// output is then the operation's identity). A sum of bools gives int32.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Scan {
    #[state]
    pub reduce_type: ScanType,
    #[state]
    pub axis: i32,
    #[state]
    pub reverse: bool,
    #[state]
    pub inclusive: bool,
}

impl Primitive for Scan {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        sort_axis("Scan", inputs, self.axis)?;
        let dtype = inputs[0].dtype;
        if self.reduce_type == ScanType::LogAddExp && !dtype.is_inexact() {
            return Err(Error::invalid(
                "Scan",
                format!("a LogAddExp scan needs a floating or complex input, found {dtype}"),
            ));
        }
        let out = if self.reduce_type == ScanType::Sum && dtype == Dtype::Bool {
            Dtype::Int32
        } else {
            dtype
        };
        Ok(vec![Spec::new(inputs[0].shape.clone(), out)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let spec = ScanSpec {
            axis: normalize_axis("Scan", self.axis, a.ndim())?,
            reverse: self.reverse,
            inclusive: self.inclusive,
        };
        let (din, dout) = (a.dtype(), out[0].dtype);
        if din == Dtype::Bool && dout == Dtype::Int32 && self.reduce_type == ScanType::Sum {
            let x: Vec<i32> = to_contiguous_vec::<bool>(&a.data()?, a.shape())
                .into_iter()
                .map(i32::from)
                .collect();
            return Ok(vec![scan::scan(&x, a.shape(), spec, 0, i32::wrapping_add)]);
        }
        if din != dout {
            return Err(Error::invalid(
                "Scan",
                format!("cannot scan {din} into {dout} (only a bool sum may change the dtype)"),
            ));
        }
        let d = if self.reduce_type == ScanType::LogAddExp {
            match din {
                Dtype::Float32 => log_add_exp_scan::<f32>(a, spec)?,
                Dtype::Float64 => log_add_exp_scan::<f64>(a, spec)?,
                Dtype::Float16 => log_add_exp_scan::<f16>(a, spec)?,
                Dtype::Bfloat16 => log_add_exp_scan::<bf16>(a, spec)?,
                Dtype::Complex64 => log_add_exp_scan::<Complex64>(a, spec)?,
                other => {
                    return Err(Error::invalid(
                        "Scan",
                        format!(
                            "a LogAddExp scan needs a floating or complex input, found {other}"
                        ),
                    ))
                }
            }
        } else {
            dispatch_dtype!(din, T => num_scan::<T>(a, spec, self.reduce_type)?)
        };
        Ok(vec![d])
    }

    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        _: &[usize],
        outputs: &[Array],
    ) -> Result<Vec<Array>> {
        let (x, c, y) = (&primals[0], &cot[0], &outputs[0]);
        let g = match self.reduce_type {
            ScanType::Sum => self.back(ScanType::Sum, c, self.inclusive)?,
            ScanType::Prod => self.prod_vjp(x, c, y)?,
            ScanType::LogAddExp => self.logaddexp_vjp(x, c, y)?,
            ScanType::Max | ScanType::Min => self.extreme_vjp(x, c, y)?,
        };
        Ok(vec![g])
    }

    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        if self.reduce_type != ScanType::Sum {
            let what = format!(
                "its input in forward mode for a {} scan",
                self.reduce_type.name()
            );
            return Err(not_differentiable("Scan", &what));
        }
        super::grad_util::linear_jvp(self, primals, tangents, argnums, &[0], "its input")
    }
}

impl Scan {
    /// A scan of `a` like this one with another operation, in the opposite
    /// direction (what carries cotangents back), `inclusive` as given.
    fn back(&self, kind: ScanType, a: &Array, inclusive: bool) -> Result<Array> {
        self.scan(kind, a, !self.reverse, inclusive)
    }

    fn scan(&self, kind: ScanType, a: &Array, reverse: bool, inclusive: bool) -> Result<Array> {
        let p = Scan {
            reduce_type: kind,
            axis: self.axis,
            reverse,
            inclusive,
        };
        Array::from_primitive(p, vec![a.clone()])
    }

    /// Cumulative product: `back_cumsum(c · y) / x` before the first zero,
    /// the same with that zero replaced by 1 at the first zero, 0 after it.
    fn prod_vjp(&self, x: &Array, c: &Array, y: &Array) -> Result<Array> {
        let other = self.scan(ScanType::Prod, x, self.reverse, !self.inclusive)?;
        let (excl, incl) = if self.inclusive {
            (&other, y)
        } else {
            (y, &other)
        };
        let zero = Array::scalar_of(0.0, x.dtype());
        let one = Array::scalar_of(1.0, x.dtype());
        let eq_zero = ops::equal(incl, &zero)?;
        let first_zero = ops::logical_and(&eq_zero, &ops::not_equal(excl, &zero)?)?;
        let partial = |a: &Array| self.back(ScanType::Sum, &ops::multiply(a, c)?, self.inclusive);
        let with_one = self.scan(
            ScanType::Prod,
            &ops::where_(&first_zero, &one, x)?,
            self.reverse,
            self.inclusive,
        )?;
        let plain = ops::divide(&partial(y)?, x)?;
        let rest = ops::where_(&eq_zero, &zero, &plain)?;
        ops::where_(&first_zero, &partial(&with_one)?, &rest)
    }

    /// Cumulative log-sum-exp: the positive and negative parts of the
    /// cotangent carried back in log space, `exp(back_logcumsumexp(log|c±| − y) + x)`.
    fn logaddexp_vjp(&self, x: &Array, c: &Array, y: &Array) -> Result<Array> {
        let zero = Array::scalar_of(0.0, c.dtype());
        let lowest = Array::scalar_of(lowest_finite(c.dtype()), c.dtype());
        let log_abs = ops::log(&ops::abs(c)?)?;
        let part = |keep: Array| -> Result<Array> {
            let l = ops::where_(&keep, &log_abs, &lowest)?;
            let back = self.back(ScanType::LogAddExp, &ops::subtract(&l, y)?, self.inclusive)?;
            ops::exp(&ops::add(&back, x)?)
        };
        ops::subtract(
            &part(ops::greater(c, &zero)?)?,
            &part(ops::less(c, &zero)?)?,
        )
    }

    /// Cumulative max/min: each output's cotangent goes to the element that
    /// holds the running extreme there (the latest one in scan order on
    /// ties), found as a running max (forward) or min (reverse) over the
    /// positions where the input equals the inclusive running extreme.
    fn extreme_vjp(&self, x: &Array, c: &Array, y: &Array) -> Result<Array> {
        let ax = self.axis as usize;
        let n = x.shape()[ax];
        let (rev, incl) = (self.reverse, self.inclusive);
        if !incl && n <= 1 {
            return ops::zeros_like(x);
        }
        let window = |a: &Array, lo: i32, hi: i32| -> Result<Array> {
            let mut start = vec![0; a.ndim()];
            let mut stop = a.shape().to_vec();
            (start[ax], stop[ax]) = (lo, hi);
            ops::slice(a, &start, &stop, &[])
        };
        // Exclusive scans: output i holds the inclusive extreme of i ∓ 1.
        let (xs, ys, cs, first) = match (incl, rev) {
            (true, _) => (x.clone(), y.clone(), c.clone(), 0),
            (false, false) => (window(x, 0, n - 1)?, window(y, 1, n)?, window(c, 1, n)?, 0),
            (false, true) => (
                window(x, 1, n)?,
                window(y, 0, n - 1)?,
                window(c, 0, n - 1)?,
                1,
            ),
        };
        let len = xs.shape()[ax];
        let mut shape = vec![1; x.ndim()];
        shape[ax] = len;
        let iota = ops::reshape(
            &ops::arange(first as f64, (first + len) as f64, 1.0, Dtype::Int32)?,
            &shape,
        )?;
        let none = Array::scalar(if rev { n } else { -1 });
        let masked = ops::where_(&ops::equal(&xs, &ys)?, &iota, &none)?;
        let kind = if rev { ScanType::Min } else { ScanType::Max };
        let owner = self.scan(kind, &masked, rev, true)?;
        let owner = ops::stop_gradient(&ops::astype(&owner, Dtype::Uint32)?)?;
        let p = ScatterAxis {
            reduce_type: ScatterAxisType::Sum,
            axis: self.axis,
        };
        Array::from_primitive(p, vec![ops::zeros_like(x)?, owner, cs])
    }
}

/// The most negative finite value of a float dtype (a log of zero that
/// stays finite).
fn lowest_finite(d: Dtype) -> f64 {
    match d {
        Dtype::Float64 => f64::MIN,
        Dtype::Float16 => f16::MIN.to_f64(),
        Dtype::Bfloat16 => bf16::MIN.to_f64(),
        _ => f32::MIN as f64,
    }
}

fn num_scan<T: ScanElem>(a: &Array, spec: ScanSpec, kind: ScanType) -> Result<Data> {
    let x = to_contiguous_vec::<T>(&a.data()?, a.shape());
    let s = a.shape();
    Ok(match kind {
        ScanType::Sum => scan::scan(&x, s, spec, T::zero(), |a, b| mlx_half_result(a.add(b))),
        ScanType::Prod => scan::scan(&x, s, spec, T::one(), |a, b| mlx_half_result(a.mul(b))),
        ScanType::Max => scan::scan(&x, s, spec, T::max_init(), T::max_op),
        ScanType::Min => scan::scan(&x, s, spec, T::min_init(), T::min_op),
        ScanType::LogAddExp => {
            return Err(Error::invalid(
                "Scan",
                format!(
                    "a LogAddExp scan needs a floating input, found {}",
                    a.dtype()
                ),
            ))
        }
    })
}

fn log_add_exp_scan<T: LogAddExpElem>(a: &Array, spec: ScanSpec) -> Result<Data> {
    let x = to_contiguous_vec::<T>(&a.data()?, a.shape());
    Ok(scan::scan(&x, a.shape(), spec, T::init(), T::log_add_exp))
}

/// For each value of `v`, the index at which inserting it keeps the 1-D
/// sorted sequence `a` sorted (uint32, shape of `v`): with `right` the
/// number of elements ≤ it, else the number < it, under the sort order
/// (NaNs last). MLX builds it for `mx.searchsorted` and categorical
/// sampling from one distribution.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx_since = "0.32.1")]
pub struct SearchSorted {
    #[state]
    pub right: bool,
}

impl Primitive for SearchSorted {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("SearchSorted", inputs, 2)?;
        let (a, v) = (&inputs[0], &inputs[1]);
        if a.shape.len() != 1 {
            return Err(Error::invalid(
                "SearchSorted",
                format!("the sorted sequence must be 1-D, found shape {:?}", a.shape),
            ));
        }
        if a.dtype != v.dtype {
            return Err(Error::invalid(
                "SearchSorted",
                format!(
                    "sequence and values must have one dtype, found {} and {}",
                    a.dtype, v.dtype
                ),
            ));
        }
        if a.shape[0] as u64 > u32::MAX as u64 {
            return Err(Error::invalid(
                "SearchSorted",
                format!(
                    "{} elements are more than uint32 indices can address",
                    a.shape[0]
                ),
            ));
        }
        Ok(vec![Spec::new(v.shape.clone(), Dtype::Uint32)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, v) = (&inputs[0], &inputs[1]);
        let right = self.right;
        Ok(vec![dispatch_dtype!(a.dtype(), T => {
            let seq: Vec<T> = to_contiguous_vec(&a.data()?, a.shape());
            let vals: Vec<T> = to_contiguous_vec(&v.data()?, v.shape());
            let idx: Vec<u32> = vals.iter().map(|&x| sort::search_sorted(&seq, x, right)).collect();
            Data::contiguous(crate::Buffer::from_slice(&idx), &out[0].shape)
        })])
    }
}
