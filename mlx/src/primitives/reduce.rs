//! Reductions: Reduce (sum, prod, min, max, and, or over axes), ArgReduce
//! (argmin/argmax along one axis), and the fused last-axis LogSumExp and
//! Softmax. All keep the reduced axes as size 1; ops squeeze them.

use super::expect_inputs;
use super::grad::{elementwise_rules, linear_jvp, reapply, zeros_like};
use crate::backend::cpu::reduce::{self as kernels, AndR, MaxR, MinR, OrR, ProdR, SumR};
use crate::primitive::Spec;
use crate::{dispatch_dtype, ops, Array, Data, Dtype, Error, Primitive, Result};
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
#[primitive(
    name = "Reduce",
    aliases("Sum", "Prod", "Max", "Min", "And", "Or"),
    mlx
)]
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
        let axes = crate::shape::normalize_axes("Reduce", &self.axes, s.shape.len())?;
        let dtype = match self.reduce_type {
            ReduceType::And | ReduceType::Or => Dtype::Bool,
            ReduceType::Sum | ReduceType::Prod => sum_dtype(s.dtype),
            ReduceType::Min | ReduceType::Max => s.dtype,
        };
        Ok(vec![Spec::new(reduced_shape(&s.shape, &axes), dtype)])
    }

    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let axes = crate::shape::normalize_axes("Reduce", &self.axes, a.ndim())?;
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
    fn vjp(&self, x: &[Array], c: &[Array], _: &[usize], out: &[Array]) -> Result<Vec<Array>> {
        let x = &x[0];
        if self.reduce_type == ReduceType::Sum {
            let g = ops::broadcast_like(&ops::cast_to(&c[0], x.dtype())?, x)?;
            return Ok(vec![g]);
        }
        match self.partial(x, &out[0])? {
            Some(d) => Ok(vec![reduction_pullback(x, &c[0], &d)?]),
            None => Ok(vec![zeros_like(x)?]),
        }
    }
    fn jvp(&self, x: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        if self.reduce_type == ReduceType::Sum {
            return linear_jvp(self, x, t, argnums, |_| true);
        }
        let out = reapply(self, x)?.remove(0);
        match self.partial(&x[0], &out)? {
            Some(d) => Ok(vec![reduction_pushforward(
                &t[0],
                &d,
                &self.axes,
                out.dtype(),
            )?]),
            None => Ok(vec![zeros_like(&out)?]),
        }
    }
}

impl Reduce {
    /// The derivative of the (keepdims) output with respect to each input
    /// element, shaped like the input: the product of the other elements
    /// for Prod, the tie-shared indicator of the extremum for Max/Min
    /// (MLX's rule), `None` for the boolean reductions.
    fn partial(&self, x: &Array, out: &Array) -> Result<Option<Array>> {
        let axes = crate::shape::normalize_axes("Reduce", &self.axes, x.ndim())?;
        Ok(match self.reduce_type {
            ReduceType::Prod => Some(exclusive_product(x, &axes)?),
            ReduceType::Max | ReduceType::Min => {
                let mask = ops::equal(x, out)?;
                let ax: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
                let n = sum_kept(&mask, &ax)?;
                Some(ops::divide(
                    &ops::cast_to(&mask, x.dtype())?,
                    &ops::cast_to(&n, x.dtype())?,
                )?)
            }
            ReduceType::Sum | ReduceType::And | ReduceType::Or => None,
        })
    }
}

/// For each element, the product of the other elements over `axes`: two
/// exclusive cumulative products (MLX's zero-safe rule). Several axes are
/// moved last and flattened into one first.
fn exclusive_product(x: &Array, axes: &[usize]) -> Result<Array> {
    let both = |a: &Array, axis: i32| {
        let fwd = ops::cumprod(a, Some(axis), false, false)?;
        let bwd = ops::cumprod(a, Some(axis), true, false)?;
        ops::multiply(&fwd, &bwd)
    };
    if let [axis] = axes {
        return both(x, *axis as i32);
    }
    let kept: Vec<usize> = (0..x.ndim()).filter(|i| !axes.contains(i)).collect();
    let perm: Vec<i32> = kept.iter().chain(axes).map(|&i| i as i32).collect();
    let moved = ops::transpose(x, &perm)?;
    let mut flat: Vec<i32> = kept.iter().map(|&i| x.shape()[i]).collect();
    flat.push(axes.iter().map(|&i| x.shape()[i]).product());
    let p = both(&ops::reshape(&moved, &flat)?, -1)?;
    let p = ops::reshape(&p, moved.shape())?;
    let mut inverse = vec![0i32; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p as usize] = i as i32;
    }
    ops::transpose(&p, &inverse)
}

/// vjp of a reduction with keepdims output: the cotangent broadcast back
/// over the reduced axes times the (conjugated) per-element derivative `d`.
fn reduction_pullback(x: &Array, c: &Array, d: &Array) -> Result<Array> {
    let g = ops::multiply(c, &ops::conjugate(d)?)?;
    ops::cast_to(&ops::broadcast_like(&g, x)?, x.dtype())
}

/// jvp of a reduction over `axes`: the tangent weighted by the derivative
/// `d`, summed over the reduced axes (kept as size 1).
fn reduction_pushforward(t: &Array, d: &Array, axes: &[i32], dtype: Dtype) -> Result<Array> {
    ops::cast_to(&sum_kept(&ops::multiply(t, d)?, axes)?, dtype)
}

/// Sum over `axes` keeping them as size 1; no axes is the identity (the
/// `sum` op would read an empty list as every axis).
fn sum_kept(a: &Array, axes: &[i32]) -> Result<Array> {
    if axes.is_empty() {
        return Ok(a.clone());
    }
    ops::sum(a, axes, true)
}

/// Index (uint32) of the first minimum or maximum along `axis`, which is
/// kept as size 1. Ties pick the first index; the first NaN wins (MLX).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
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
        let axis = crate::shape::normalize_axis("ArgReduce", self.axis, s.shape.len())?;
        Ok(vec![Spec::new(
            reduced_shape(&s.shape, &[axis]),
            Dtype::Uint32,
        )])
    }

    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let axis = crate::shape::normalize_axis("ArgReduce", self.axis, a.ndim())?;
        let max = self.reduce_type == ArgReduceType::ArgMax;
        let d = a.data()?;
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => kernels::arg_reduce::<T>(&d, a.shape(), axis, max)),
        ])
    }
    elementwise_rules!(zero);
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
#[primitive(mlx)]
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
    // The derivative with respect to each element is its softmax weight.
    fn vjp(&self, x: &[Array], c: &[Array], _: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        let s = ops::softmax_precise(&x[0], &[-1])?;
        Ok(vec![reduction_pullback(&x[0], &c[0], &s)?])
    }
    fn jvp(&self, x: &[Array], t: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let s = ops::softmax_precise(&x[0], &[-1])?;
        Ok(vec![reduction_pushforward(&t[0], &s, &[-1], x[0].dtype())?])
    }
}

/// Softmax over the last axis. `precise` computes half types in f32;
/// otherwise every step rounds to the half type, as MLX does.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
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
    fn vjp(&self, _: &[Array], c: &[Array], _: &[usize], out: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![softmax_linear(&out[0], &c[0])?])
    }
    fn jvp(&self, x: &[Array], t: &[Array], _: &[usize]) -> Result<Vec<Array>> {
        let s = reapply(self, x)?.remove(0);
        Ok(vec![softmax_linear(&s, &t[0])?])
    }
}

/// The softmax Jacobian (symmetric) applied to `v`: `s v - s sum(s v)`
/// over the last axis.
fn softmax_linear(s: &Array, v: &Array) -> Result<Array> {
    let sv = ops::multiply(s, v)?;
    let total = ops::sum(&sv, &[-1], true)?;
    let g = ops::subtract(&sv, &ops::multiply(s, &total)?)?;
    ops::cast_to(&g, s.dtype())
}
