//! Reductions: Reduce (sum, prod, min, max, and, or over axes), ArgReduce
//! (argmin/argmax along one axis), and the fused last-axis LogSumExp and
//! Softmax. All keep the reduced axes as size 1; ops squeeze them.

use super::expect_inputs;
use crate::backend::cpu::reduce::{self as kernels, AndR, MaxR, MinR, OrR, ProdR, SumR};
use crate::primitive::Spec;
use crate::{dispatch_dtype, Array, Data, Dtype, Error, Primitive, Result};
use half::{bf16, f16};

crate::state_enum! {
    /// The reduction a [`Reduce`] applies (MLX's codes).
    pub enum ReduceType { And = 0, Or = 1, Sum = 2, Prod = 3, Min = 4, Max = 5 }
}

crate::state_enum! {
    /// Which index an [`ArgReduce`] finds (MLX's codes).
    pub enum ArgReduceType { ArgMin = 0, ArgMax = 1 }
}

/// The dtype MLX gives a sum or product of `d`: small signed integers and
/// bool widen to int32, small unsigned ones to uint32, the rest keep theirs.
pub fn sum_dtype(d: Dtype) -> Dtype {
    match d {
        Dtype::Bool | Dtype::Int8 | Dtype::Int16 | Dtype::Int32 => Dtype::Int32,
        Dtype::Uint8 | Dtype::Uint16 | Dtype::Uint32 => Dtype::Uint32,
        other => other,
    }
}

/// `shape` with the listed axes set to 1.
fn reduced_shape(shape: &[i32], axes: &[usize]) -> Vec<i32> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect()
}

/// Reduces the listed axes (kept as size 1). Axes are stored sorted and
/// non-negative, as MLX's ops create them.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(name = "Reduce", aliases("Sum", "Prod", "Max", "Min", "And", "Or"))]
pub struct Reduce {
    #[state]
    pub reduce_type: ReduceType,
    #[state]
    pub axes: Vec<i32>,
}

impl Primitive for Reduce {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Reduce", inputs, 1)?;
        let s = &inputs[0];
        let axes = crate::ops::normalize_axes("Reduce", &self.axes, s.shape.len())?;
        let dtype = match self.reduce_type {
            ReduceType::And | ReduceType::Or => Dtype::Bool,
            ReduceType::Sum | ReduceType::Prod => sum_dtype(s.dtype),
            ReduceType::Min | ReduceType::Max => s.dtype,
        };
        Ok(vec![Spec::new(reduced_shape(&s.shape, &axes), dtype)])
    }

    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let axes = crate::ops::normalize_axes("Reduce", &self.axes, a.ndim())?;
        let (d, shape) = (a.data()?, a.shape());
        let out = dispatch_dtype!(a.dtype(), T => match self.reduce_type {
            ReduceType::Sum => kernels::reduce::<T, SumR>(&d, shape, &axes),
            ReduceType::Prod => kernels::reduce::<T, ProdR>(&d, shape, &axes),
            ReduceType::Max => kernels::reduce::<T, MaxR>(&d, shape, &axes),
            ReduceType::Min => kernels::reduce::<T, MinR>(&d, shape, &axes),
            ReduceType::And => kernels::reduce::<T, AndR>(&d, shape, &axes),
            ReduceType::Or => kernels::reduce::<T, OrR>(&d, shape, &axes),
        });
        Ok(vec![out])
    }
}

/// Index (uint32) of the first minimum or maximum along `axis`, which is
/// kept as size 1. Ties pick the first index; the first NaN wins (MLX).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct ArgReduce {
    #[state]
    pub reduce_type: ArgReduceType,
    #[state]
    pub axis: i32,
}

impl Primitive for ArgReduce {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("ArgReduce", inputs, 1)?;
        let s = &inputs[0];
        let axis = crate::ops::normalize_axis("ArgReduce", self.axis, s.shape.len())?;
        Ok(vec![Spec::new(
            reduced_shape(&s.shape, &[axis]),
            Dtype::Uint32,
        )])
    }

    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let axis = crate::ops::normalize_axis("ArgReduce", self.axis, a.ndim())?;
        let max = self.reduce_type == ArgReduceType::ArgMax;
        let d = a.data()?;
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => kernels::arg_reduce::<T>(&d, a.shape(), axis, max)),
        ])
    }
}

/// Checks the single input of a fused last-axis primitive: a float array of
/// at least one dimension.
fn last_axis_input(name: &str, inputs: &[Spec]) -> Result<()> {
    expect_inputs(name, inputs, 1)?;
    let s = &inputs[0];
    if s.shape.is_empty() {
        return Err(Error::invalid(
            name,
            "expected an input with at least one dimension, found a 0-d array",
        ));
    }
    if !s.dtype.is_float() {
        return Err(Error::invalid(
            name,
            format!("expected a floating point input, found {}", s.dtype),
        ));
    }
    Ok(())
}

/// Calls `$body` with `$T` bound to the element type of a float dtype.
macro_rules! dispatch_float {
    ($name:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            Dtype::Float32 => {
                type $T = f32;
                $body
            }
            Dtype::Float64 => {
                type $T = f64;
                $body
            }
            Dtype::Float16 => {
                type $T = f16;
                $body
            }
            Dtype::Bfloat16 => {
                type $T = bf16;
                $body
            }
            other => {
                return Err(Error::unsupported(
                    $name,
                    format!("only floating point inputs are supported, found {other}"),
                ))
            }
        }
    };
}

/// `log(sum(exp(x)))` over the last axis, kept as size 1 (half types
/// compute in f32). Other axes are a decomposition built by the op.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
pub struct LogSumExp {}

impl Primitive for LogSumExp {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        last_axis_input("LogSumExp", inputs)?;
        let s = &inputs[0];
        let mut shape = s.shape.clone();
        *shape.last_mut().expect("checked: ndim >= 1") = 1;
        Ok(vec![Spec::new(shape, s.dtype)])
    }

    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = a.data()?;
        Ok(vec![
            dispatch_float!("LogSumExp", a.dtype(), T => kernels::logsumexp_last::<T>(&d, a.shape())),
        ])
    }
}

/// Softmax over the last axis. `precise` computes half types in f32;
/// otherwise every step rounds to the half type, as MLX does.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Softmax {
    #[state]
    pub precise: bool,
}

impl Primitive for Softmax {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        last_axis_input("Softmax", inputs)?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = a.data()?;
        Ok(vec![
            dispatch_float!("Softmax", a.dtype(), T => kernels::softmax_last::<T>(&d, a.shape(), self.precise)),
        ])
    }
}
