//! Identities (Copy, StopGradient, Depends), reinterpretation (View,
//! AsStrided) and NumberOfElements.

use super::copy::{check_in_bounds, contiguous_copy, row_major};
use crate::primitive::Spec;
use crate::primitives::expect_inputs;
use crate::primitives::grad::{elementwise_rules, linear_jvp, linear_rules, zeros_like};
use crate::shape::normalize_axes;
use crate::{dispatch_dtype, ops, Array, Buffer, Data, Dtype, Element, Error, Primitive, Result};

/// A row-major copy of the input (an identity of values).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Copy {}

impl Primitive for Copy {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Copy", inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![contiguous_copy(&inputs[0].data()?, &out[0])])
    }
    linear_rules!(|_, _, c| Ok(c.clone()));
}

/// The input unchanged; gradients do not flow through it.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct StopGradient {}

impl Primitive for StopGradient {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("StopGradient", inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![inputs[0].data()?])
    }
    // The autodiff engine does not go through this node; called directly,
    // the derivative is zero.
    elementwise_rules!(zero);
}

/// Outputs the first `outputs` inputs unchanged; the remaining inputs are
/// dependencies that must be computed first (`mx.depends`).
///
/// MLX's Depends has no state: its file entry records how many outputs it
/// has, and replay with recorded shapes only needs that (`eval` uses the
/// number of output specs). The count is kept here as `outputs`, written
/// in native files and skipped on MLX's wire, so that shape inference can
/// work from the inputs alone. A Depends read from an MLX file has
/// `outputs == 0` ("unknown") until the importer hands it the recorded
/// output specs (`adopt_recorded_specs`).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Depends {
    #[state(skip_mlx)]
    pub outputs: u64,
}

impl Primitive for Depends {
    fn adopt_recorded_specs(&mut self, outputs: &[Spec]) {
        if self.outputs == 0 {
            self.outputs = outputs.len() as u64;
        }
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let n = self.outputs as usize;
        if n == 0 {
            return Err(Error::invalid(
                "Depends",
                "the number of outputs is unknown (an MLX file does not store it); \
                 only replay with recorded shapes can run this node",
            ));
        }
        if inputs.len() <= n {
            return Err(Error::invalid(
                "Depends",
                format!(
                    "expected more than {n} inputs ({n} passed through, then at least one dependency), found {}",
                    inputs.len()
                ),
            ));
        }
        Ok(inputs[..n].to_vec())
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        if inputs.len() < out.len() {
            return Err(Error::invalid(
                "Depends",
                format!("{} outputs but only {} inputs", out.len(), inputs.len()),
            ));
        }
        inputs[..out.len()].iter().map(Array::data).collect()
    }
    // The passed-through inputs get their output's cotangent; dependencies none.
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| match c.get(i) {
                Some(c) => Ok(c.clone()),
                None => zeros_like(&p[i]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        let n = self.outputs as usize;
        linear_jvp(self, p, t, argnums, |i| i < n)
    }
}

/// A 0-d array of `dtype` holding the product of the sizes of `axes` of
/// the input (or its reciprocal when `inverted`): a size that follows the
/// input's shape in shapeless traces (e.g. the divisor of a mean).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct NumberOfElements {
    #[state]
    pub axes: Vec<i32>,
    #[state]
    pub inverted: bool,
    #[state]
    pub dtype: Dtype,
}

impl Primitive for NumberOfElements {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("NumberOfElements", inputs, 1)?;
        normalize_axes("NumberOfElements", &self.axes, inputs[0].shape.len())?;
        Ok(vec![Spec::new([], self.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let shape = inputs[0].shape();
        let axes = normalize_axes("NumberOfElements", &self.axes, shape.len())?;
        let mut n: f64 = axes.iter().map(|&a| shape[a] as f64).product();
        if self.inverted {
            n = 1.0 / n;
        }
        let buf = dispatch_dtype!(out[0].dtype, T => Buffer::from_slice(&[T::from_f64(n)]));
        Ok(vec![Data::contiguous(buf, &[])])
    }
}

/// The input's bytes read as `dtype`; the last axis is rescaled when the
/// item sizes differ. Viewing as bool turns every non-zero byte into 1 so
/// bool buffers only ever hold 0 and 1.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct View {
    #[state]
    pub dtype: Dtype,
}

/// Output shape of viewing `shape` of `from` as `to` (MLX's rule).
pub(crate) fn view_shape(op: &str, shape: &[i32], from: Dtype, to: Dtype) -> Result<Vec<i32>> {
    let (ib, ob) = (from.size() as i32, to.size() as i32);
    let mut out = shape.to_vec();
    if ib == ob {
        return Ok(out);
    }
    let Some(last) = out.last_mut() else {
        return Err(Error::invalid(
            op,
            format!("a 0-d array can only be viewed as a dtype of the same size; {from} is {ib} bytes, {to} is {ob}"),
        ));
    };
    if ib < ob {
        if *last % (ob / ib) != 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "viewing {from} {shape:?} as {to} needs a last axis whose size in bytes ({}) is a multiple of {ob}",
                    *last * ib
                ),
            ));
        }
        *last /= ob / ib;
    } else {
        *last = last.checked_mul(ib / ob).ok_or_else(|| {
            Error::invalid(
                op,
                format!("viewing {shape:?} as {to} overflows the last axis"),
            )
        })?;
    }
    Ok(out)
}

impl Primitive for View {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("View", inputs, 1)?;
        let s = &inputs[0];
        Ok(vec![Spec::new(
            view_shape("View", &s.shape, s.dtype, self.dtype)?,
            self.dtype,
        )])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let (ib, ob) = (a.dtype().size(), self.dtype.size());
        let d = a.data()?;
        if self.dtype == Dtype::Bool && a.dtype() != Dtype::Bool {
            // Bytes other than 0 and 1 are not valid bools: normalise.
            let bytes = row_major(&d, a.spec());
            let src = &bytes.buffer.bytes()[bytes.offset * ib..(bytes.offset + a.size()) * ib];
            let norm: Vec<u8> = src.iter().map(|&b| (b != 0) as u8).collect();
            return Ok(vec![Data::contiguous(
                Buffer::from_bytes(&norm),
                &out[0].shape,
            )]);
        }
        if ib == ob {
            return Ok(vec![d]);
        }
        if let Some(v) = reinterpret(&d, a.shape(), ib, ob) {
            return Ok(vec![v]);
        }
        let c = contiguous_copy(&d, a.spec());
        let v = reinterpret(&c, a.shape(), ib, ob).ok_or_else(|| {
            Error::unsupported("View", "a row-major copy could not be reinterpreted")
        })?;
        Ok(vec![v])
    }
}

/// The layout of `d` (shaped `shape`, items of `ib` bytes) read as items of
/// `ob` bytes, when it can be expressed without copying: the last axis must
/// be dense and, for a larger item, every stride and the offset must fall
/// on whole output items.
fn reinterpret(d: &Data, shape: &[i32], ib: usize, ob: usize) -> Option<Data> {
    let nd = shape.len();
    if nd == 0 || (d.strides[nd - 1] != 1 && shape[nd - 1] != 1) {
        return None;
    }
    let mut strides = d.strides.clone();
    strides[nd - 1] = 1;
    let offset = if ob < ib {
        let r = (ib / ob) as isize;
        strides[..nd - 1].iter_mut().for_each(|s| *s *= r);
        d.offset * r as usize
    } else {
        let r = (ob / ib) as isize;
        if !d.offset.is_multiple_of(r as usize) || strides[..nd - 1].iter().any(|s| s % r != 0) {
            return None;
        }
        strides[..nd - 1].iter_mut().for_each(|s| *s /= r);
        d.offset / r as usize
    };
    Some(Data {
        buffer: d.buffer.clone(),
        strides,
        offset,
    })
}

/// A strided view of the input's elements in row-major order: element
/// `offset + Σ i_k * strides[k]` for each output index. Its input is the
/// flattened array (the op inserts a Flatten, as MLX does).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct AsStrided {
    #[state]
    pub shape: Vec<i32>,
    #[state]
    pub strides: Vec<i64>,
    #[state]
    pub offset: u64,
}

impl Primitive for AsStrided {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("AsStrided", inputs, 1)?;
        crate::array::check_shape("AsStrided", &self.shape)?;
        if self.strides.len() != self.shape.len() {
            return Err(Error::invalid(
                "AsStrided",
                format!(
                    "expected one stride per dimension of {:?}, found {:?}",
                    self.shape, self.strides
                ),
            ));
        }
        let strides: Vec<isize> = self.strides.iter().map(|&s| s as isize).collect();
        check_in_bounds(
            "AsStrided",
            &self.shape,
            &strides,
            self.offset,
            inputs[0].size(),
        )?;
        Ok(vec![Spec::new(self.shape.clone(), inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let flat = row_major(&a.data()?, a.spec());
        let strides: Vec<isize> = self.strides.iter().map(|&s| s as isize).collect();
        check_in_bounds("AsStrided", &out[0].shape, &strides, self.offset, a.size())?;
        Ok(vec![Data {
            offset: flat.offset + self.offset as usize,
            strides,
            buffer: flat.buffer,
        }])
    }
    // Scatter-add the cotangent onto the flat input positions each output
    // element reads (positions read twice accumulate), as MLX does.
    linear_rules!(|p, x, c| {
        let n = x.size() as i32;
        let positions = ops::arange(0.0, n as f64, 1.0, Dtype::Int32)?;
        let read = ops::as_strided(&positions, &p.shape, &p.strides, p.offset)?;
        let m = c.size() as i32;
        let read = ops::reshape(&read, &[m])?;
        let flat = ops::zeros(&[n], x.dtype())?;
        let g = ops::scatter_add(&flat, &[read], &ops::reshape(c, &[m, 1])?, &[0])?;
        ops::reshape(&g, x.shape())
    });
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        Err(Error::invalid(
            "AsStrided",
            format!(
                "the shape {:?}, strides {:?} and offset {} address elements of the traced input; \
                 they mean something else at other shapes",
                self.shape, self.strides, self.offset
            ),
        ))
    }
}
