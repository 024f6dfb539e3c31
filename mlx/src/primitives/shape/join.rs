//! Joining and cutting along an axis: Concatenate, Split (views), Pad.

use super::copy::{combine_into, filled};
use crate::array::row_major_strides;
use crate::element::dispatch_bits;
use crate::primitive::Spec;
use crate::primitives::expect_inputs;
use crate::primitives::grad::linear_jvp_rule;
use crate::shape::{normalize_axes, normalize_axis};
use crate::{ops, Array, Buffer, Data, Error, Primitive, Result};

/// Copies `src` into the row-major buffer `dst` (shaped `out`) at element offset `offset`.
fn paste(dst: &mut Buffer, out: &Spec, offset: usize, src: &Array) -> Result<()> {
    let strides = row_major_strides(&out.shape);
    let d = src.data()?;
    dispatch_bits!(out.dtype, T => combine_into::<T>(
        dst.as_mut_slice::<T>().expect("heap buffer"), &strides, offset, &d, src.shape(), |_, x| x));
    Ok(())
}

/// Joins the inputs along `axis` (non-negative); all other dimensions and
/// the dtype must agree.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Concatenate {
    #[state]
    pub axis: i32,
}

impl Primitive for Concatenate {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if inputs.is_empty() {
            return Err(Error::invalid("Concatenate", "expected at least 1 input"));
        }
        let first = &inputs[0];
        let ax = normalize_axis("Concatenate", self.axis, first.shape.len())?;
        let mut total = 0i64;
        for s in inputs {
            let same = s.shape.len() == first.shape.len()
                && (0..s.shape.len()).all(|i| i == ax || s.shape[i] == first.shape[i]);
            if !same || s.dtype != first.dtype {
                let all: Vec<String> = inputs
                    .iter()
                    .map(|s| format!("{} {:?}", s.dtype, s.shape))
                    .collect();
                return Err(Error::invalid(
                    "Concatenate",
                    format!(
                        "inputs must share the dtype and every dimension except axis {}; found {}",
                        self.axis,
                        all.join(", ")
                    ),
                ));
            }
            total += s.shape[ax] as i64;
        }
        let mut shape = first.shape.clone();
        shape[ax] = i32::try_from(total).map_err(|_| {
            Error::invalid(
                "Concatenate",
                format!("axis {ax} would hold {total} elements"),
            )
        })?;
        Ok(vec![Spec::new(shape, first.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let spec = &out[0];
        let ax = normalize_axis("Concatenate", self.axis, spec.shape.len())?;
        let step = row_major_strides(&spec.shape)[ax] as usize;
        let mut buf = Buffer::zeroed(spec.size() * spec.dtype.size());
        let mut at = 0usize;
        for a in inputs {
            paste(&mut buf, spec, at * step, a)?;
            at += a.shape()[ax] as usize;
        }
        Ok(vec![Data::contiguous(buf, &spec.shape)])
    }
    // Each input gets its own stretch of the cotangent.
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        let ax = normalize_axis("Concatenate", self.axis, c[0].ndim())?;
        let mut bounds = vec![0i32];
        for a in p {
            bounds.push(bounds[bounds.len() - 1] + a.shape()[ax]);
        }
        argnums
            .iter()
            .map(|&i| ops::slice_axis(&c[0], ax as i32, bounds[i], bounds[i + 1], 1))
            .collect()
    }
    linear_jvp_rule!();
}

/// Cuts the input along `axis` at `indices` (non-decreasing, within the
/// axis); output i spans `indices[i-1]..indices[i]`. Outputs are views.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Split {
    #[state]
    pub indices: Vec<i32>,
    #[state]
    pub axis: i32,
}

impl Split {
    /// Boundaries `0, indices..., n`, checked.
    fn bounds(&self, shape: &[i32]) -> Result<(usize, Vec<i32>)> {
        let ax = normalize_axis("Split", self.axis, shape.len())?;
        let n = shape[ax];
        let mut b = Vec::with_capacity(self.indices.len() + 2);
        b.push(0);
        b.extend_from_slice(&self.indices);
        b.push(n);
        if b.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::invalid(
                "Split",
                format!(
                    "split indices {:?} must be non-decreasing and within 0..={n} (axis {ax} of shape {shape:?})",
                    self.indices
                ),
            ));
        }
        Ok((ax, b))
    }
}

impl Primitive for Split {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Split", inputs, 1)?;
        let (ax, b) = self.bounds(&inputs[0].shape)?;
        Ok(b.windows(2)
            .map(|w| {
                let mut s = inputs[0].shape.clone();
                s[ax] = w[1] - w[0];
                Spec::new(s, inputs[0].dtype)
            })
            .collect())
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let (ax, b) = self.bounds(inputs[0].shape())?;
        let d = inputs[0].data()?;
        Ok(b.windows(2)
            .map(|w| {
                let mut d = d.clone();
                if w[1] > w[0] {
                    d.offset = (d.offset as isize + w[0] as isize * d.strides[ax]) as usize;
                }
                d
            })
            .collect())
    }
    fn vjp(&self, _: &[Array], c: &[Array], _: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![ops::concatenate(c, self.axis)?])
    }
    linear_jvp_rule!();
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        if self.indices.is_empty() {
            return Ok(());
        }
        Err(Error::invalid(
            "Split",
            format!(
                "the split points {:?} are absolute indices fixed at trace time",
                self.indices
            ),
        ))
    }
}

/// Pads the listed axes with `low_pad_size` elements before and
/// `high_pad_size` after, all equal to the second input (a one-element
/// array of the same dtype). Inputs (x, pad value).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Pad {
    #[state]
    pub axes: Vec<i32>,
    #[state]
    pub low_pad_size: Vec<i32>,
    #[state]
    pub high_pad_size: Vec<i32>,
}

impl Primitive for Pad {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Pad", inputs, 2)?;
        let (x, v) = (&inputs[0], &inputs[1]);
        if v.size() != 1 || v.dtype != x.dtype {
            return Err(Error::invalid(
                "Pad",
                format!(
                    "the pad value must be one element of the input's dtype {}, found {} {:?}",
                    x.dtype, v.dtype, v.shape
                ),
            ));
        }
        let n = self.axes.len();
        if self.low_pad_size.len() != n || self.high_pad_size.len() != n {
            return Err(Error::invalid(
                "Pad",
                format!(
                    "expected one low and one high size per axis {:?}, found {:?} and {:?}",
                    self.axes, self.low_pad_size, self.high_pad_size
                ),
            ));
        }
        let axes = normalize_axes("Pad", &self.axes, x.shape.len())?;
        let mut shape = x.shape.clone();
        for (i, &ax) in axes.iter().enumerate() {
            let (lo, hi) = (self.low_pad_size[i], self.high_pad_size[i]);
            if lo < 0 || hi < 0 {
                return Err(Error::invalid(
                    "Pad",
                    format!("padding sizes must be non-negative, found ({lo}, {hi}) for axis {ax}"),
                ));
            }
            let d = shape[ax] as i64 + lo as i64 + hi as i64;
            shape[ax] = i32::try_from(d)
                .map_err(|_| Error::invalid("Pad", format!("axis {ax} would hold {d} elements")))?;
        }
        crate::array::check_shape("Pad", &shape)?;
        Ok(vec![Spec::new(shape, x.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let spec = &out[0];
        let axes = normalize_axes("Pad", &self.axes, spec.shape.len())?;
        let mut buf = filled(&inputs[1].data()?, spec);
        let rm = row_major_strides(&spec.shape);
        let offset: isize = axes
            .iter()
            .zip(&self.low_pad_size)
            .map(|(&ax, &lo)| rm[ax] * lo as isize)
            .sum();
        if spec.size() > 0 {
            paste(&mut buf, spec, offset as usize, &inputs[0])?;
        }
        Ok(vec![Data::contiguous(buf, &spec.shape)])
    }
    // The input gets the inner region of the cotangent; the pad value the
    // sum of the rest.
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        let c = &c[0];
        let axes = normalize_axes("Pad", &self.axes, c.ndim())?;
        let mut start = vec![0i32; c.ndim()];
        let mut stop = c.shape().to_vec();
        for (k, &ax) in axes.iter().enumerate() {
            start[ax] = self.low_pad_size[k];
            stop[ax] -= self.high_pad_size[k];
        }
        let inner = ops::slice(c, &start, &stop, &[])?;
        argnums
            .iter()
            .map(|&i| {
                if i == 0 {
                    return Ok(inner.clone());
                }
                let rest =
                    ops::subtract(&ops::sum(c, &[], false)?, &ops::sum(&inner, &[], false)?)?;
                ops::reshape(&ops::cast_to(&rest, p[1].dtype())?, p[1].shape())
            })
            .collect()
    }
    linear_jvp_rule!();
}
