//! Sorting and scan primitives with MLX's names and state: Sort, ArgSort,
//! Partition, ArgPartition (axis stored non-negative; NaNs sort last;
//! sorts are stable) and Scan (cumulative sum/prod/max/min/logaddexp).

use super::expect_inputs;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::scan::{self, mlx_half_result, LogAddExpElem, ScanElem, ScanSpec};
use crate::backend::cpu::sort;
use crate::ops::normalize_axis;
use crate::primitive::Spec;
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
}

/// The uint32 indices that sort `a` along `axis` (stable; NaNs last).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
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
}

/// `a` partitioned along `axis` around its `kth` element: that element is
/// in sorted position, smaller ones before, larger ones after (each side
/// in unspecified order).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
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
}

/// The uint32 indices that partition `a` along `axis` around its `kth` element.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
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
}

crate::state_enum! {
    /// The operation a Scan accumulates with.
    pub enum ScanType { Max = 0, Min = 1, Sum = 2, Prod = 3, LogAddExp = 4 }
}

/// Cumulative `reduce_type` along `axis`, optionally from the end
/// (`reverse`) and excluding the current element (`!inclusive`, the first
/// output is then the operation's identity). A sum of bools gives int32.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
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
