//! Shape and layout primitives. Views (broadcast, transpose, reshape when
//! possible, slices) share the input's buffer.

use super::expect_inputs;
use crate::primitive::Spec;
use crate::{Array, Data, Error, Primitive, Result};

/// `a` as a view with shape `shape` (numpy broadcasting: new leading axes and
/// size-1 axes get stride 0). `a` must be evaluated.
pub(crate) fn broadcast_view(a: &Array, shape: &[i32]) -> Result<Array> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    let d = a.data()?;
    let strides = broadcast_strides("Broadcast", a.shape(), &d.strides, shape)?;
    Ok(Array::from_data(
        Data {
            buffer: d.buffer,
            strides,
            offset: d.offset,
        },
        Spec::new(shape, a.dtype()),
    ))
}

/// Strides of a broadcast view of (`from`, `strides`) with shape `to`.
pub(crate) fn broadcast_strides(
    op: &str,
    from: &[i32],
    strides: &[isize],
    to: &[i32],
) -> Result<Vec<isize>> {
    if from.len() > to.len() {
        return Err(Error::invalid(
            op,
            format!("cannot broadcast shape {from:?} to {to:?}"),
        ));
    }
    let lead = to.len() - from.len();
    let mut out = vec![0isize; to.len()];
    for i in 0..from.len() {
        let (f, t) = (from[i], to[lead + i]);
        out[lead + i] = if f == t {
            strides[i]
        } else if f == 1 {
            0
        } else {
            return Err(Error::invalid(
                op,
                format!("cannot broadcast shape {from:?} to {to:?}"),
            ));
        };
    }
    Ok(out)
}

/// Broadcasts input 0 to `shape` (a view). With more inputs (shapeless
/// traces), the output is the broadcast of all input shapes.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Broadcast {
    #[state]
    pub shape: Vec<i32>,
}

impl Primitive for Broadcast {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if inputs.is_empty() {
            return Err(Error::invalid("Broadcast", "expected at least 1 input"));
        }
        let shape = if inputs.len() == 1 {
            crate::array::check_shape("Broadcast", &self.shape)?;
            let b = crate::ops::broadcast_shapes("Broadcast", &inputs[0].shape, &self.shape)?;
            if b != self.shape {
                return Err(Error::invalid(
                    "Broadcast",
                    format!(
                        "cannot broadcast shape {:?} to {:?}",
                        inputs[0].shape, self.shape
                    ),
                ));
            }
            b
        } else {
            let mut s = inputs[0].shape.clone();
            for i in &inputs[1..] {
                s = crate::ops::broadcast_shapes("Broadcast", &s, &i.shape)?;
            }
            s
        };
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![broadcast_view(&inputs[0], &out[0].shape)?.data()?])
    }
}

/// Strides that show the data (`from`, `strides`) with shape `to` without
/// copying, if the layout allows it (numpy's no-copy reshape rule: each
/// group of input axes that merges into a group of output axes must be
/// contiguous within itself).
pub(crate) fn reshape_strides(from: &[i32], strides: &[isize], to: &[i32]) -> Option<Vec<isize>> {
    if from.iter().any(|&d| d == 0) {
        return None;
    }
    let (od, os): (Vec<i64>, Vec<isize>) = from
        .iter()
        .zip(strides)
        .filter(|(d, _)| **d != 1)
        .map(|(d, s)| (*d as i64, *s))
        .unzip();
    let nd: Vec<i64> = to.iter().map(|&d| d as i64).collect();
    let mut ns = vec![0isize; nd.len()];
    let (mut oi, mut oj, mut ni, mut nj) = (0usize, 1usize, 0usize, 1usize);
    while ni < nd.len() && oi < od.len() {
        let (mut np, mut op) = (nd[ni], od[oi]);
        while np != op {
            if np < op {
                np *= *nd.get(nj)?;
                nj += 1;
            } else {
                op *= *od.get(oj)?;
                oj += 1;
            }
        }
        for k in oi..oj - 1 {
            if os[k] != od[k + 1] as isize * os[k + 1] {
                return None;
            }
        }
        ns[nj - 1] = os[oj - 1];
        for k in (ni + 1..nj).rev() {
            ns[k - 1] = ns[k] * nd[k] as isize;
        }
        ni = nj;
        nj += 1;
        oi = oj;
        oj += 1;
    }
    // Whatever is left of `to` is size-1 axes; their stride is irrelevant.
    Some(ns)
}

/// Gives the input a new shape with the same number of elements. A view
/// when the memory layout allows it, a row-major copy otherwise. The stored
/// shape may hold one `-1` (the caller's spelling), inferred from the input.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Reshape {
    #[state]
    pub shape: Vec<i32>,
}

/// `shape` with a single `-1` replaced so that it holds `size` elements.
pub(crate) fn infer_shape(op: &str, from: &[i32], shape: &[i32]) -> Result<Vec<i32>> {
    let size: i64 = from.iter().map(|&d| d as i64).product();
    let mut out = shape.to_vec();
    let infer: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] == -1).collect();
    if infer.len() > 1 {
        return Err(Error::invalid(
            op,
            format!("only one dimension can be -1, found {shape:?}"),
        ));
    }
    if let Some(&bad) = shape.iter().find(|&&d| d < -1) {
        return Err(Error::invalid(
            op,
            format!("invalid dimension {bad} in {shape:?}"),
        ));
    }
    let known: i64 = shape
        .iter()
        .filter(|&&d| d != -1)
        .map(|&d| d as i64)
        .product();
    if let Some(&i) = infer.first() {
        if known == 0 || size % known != 0 {
            return Err(Error::invalid(
                op,
                format!("cannot reshape array of shape {from:?} into {shape:?}"),
            ));
        }
        out[i] = (size / known) as i32;
    } else if known != size {
        return Err(Error::invalid(
            op,
            format!("cannot reshape array of shape {from:?} into {shape:?}"),
        ));
    }
    Ok(out)
}

impl Primitive for Reshape {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Reshape", inputs, 1)?;
        Ok(vec![Spec::new(
            infer_shape("Reshape", &inputs[0].shape, &self.shape)?,
            inputs[0].dtype,
        )])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = a.data()?;
        if let Some(strides) = reshape_strides(a.shape(), &d.strides, &out[0].shape) {
            return Ok(vec![Data {
                buffer: d.buffer,
                strides,
                offset: d.offset,
            }]);
        }
        let c = crate::dispatch_dtype!(a.dtype(), T => crate::backend::cpu::copy::make_contiguous::<T>(&d, a.shape()));
        Ok(vec![Data {
            strides: crate::array::row_major_strides(&out[0].shape),
            ..c
        }])
    }
}

/// Permutes the axes: output axis i is input axis `axes[i]` (a view).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Transpose {
    #[state]
    pub axes: Vec<i32>,
}

impl Primitive for Transpose {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Transpose", inputs, 1)?;
        let s = &inputs[0].shape;
        if self.axes.len() != s.len() {
            return Err(Error::invalid(
                "Transpose",
                format!("axes {:?} do not match an array of shape {s:?}", self.axes),
            ));
        }
        let axes = crate::ops::normalize_axes("Transpose", &self.axes, s.len())?;
        Ok(vec![Spec::new(
            axes.iter().map(|&a| s[a]).collect::<Vec<_>>(),
            inputs[0].dtype,
        )])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let d = inputs[0].data()?;
        let axes = crate::ops::normalize_axes("Transpose", &self.axes, inputs[0].ndim())?;
        let strides = axes.iter().map(|&a| d.strides[a]).collect();
        Ok(vec![Data { strides, ..d }])
    }
}

/// Removes the listed size-1 axes (a view).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct Squeeze {
    #[state]
    pub axes: Vec<i32>,
}

impl Primitive for Squeeze {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Squeeze", inputs, 1)?;
        let s = &inputs[0].shape;
        let axes = crate::ops::normalize_axes("Squeeze", &self.axes, s.len())?;
        for &a in &axes {
            if s[a] != 1 {
                return Err(Error::invalid(
                    "Squeeze",
                    format!("cannot squeeze axis {a} of size {} in shape {s:?}", s[a]),
                ));
            }
        }
        let shape: Vec<i32> = (0..s.len())
            .filter(|i| !axes.contains(i))
            .map(|i| s[i])
            .collect();
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let d = inputs[0].data()?;
        let axes = crate::ops::normalize_axes("Squeeze", &self.axes, inputs[0].ndim())?;
        let strides = (0..d.strides.len())
            .filter(|i| !axes.contains(i))
            .map(|i| d.strides[i])
            .collect();
        Ok(vec![Data { strides, ..d }])
    }
}

/// Inserts size-1 axes at the listed output positions (a view).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
pub struct ExpandDims {
    #[state]
    pub axes: Vec<i32>,
}

impl ExpandDims {
    fn out_axes(&self, ndim: usize) -> Result<Vec<usize>> {
        crate::ops::normalize_axes("ExpandDims", &self.axes, ndim + self.axes.len())
    }
}

impl Primitive for ExpandDims {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("ExpandDims", inputs, 1)?;
        let s = &inputs[0].shape;
        let axes = self.out_axes(s.len())?;
        let mut it = s.iter();
        let shape: Vec<i32> = (0..s.len() + axes.len())
            .map(|i| {
                if axes.contains(&i) {
                    1
                } else {
                    *it.next().expect("count matches")
                }
            })
            .collect();
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let d = inputs[0].data()?;
        let axes = self.out_axes(inputs[0].ndim())?;
        let mut it = d.strides.iter();
        let strides = (0..d.strides.len() + axes.len())
            .map(|i| {
                if axes.contains(&i) {
                    0
                } else {
                    *it.next().expect("count matches")
                }
            })
            .collect();
        Ok(vec![Data { strides, ..d }])
    }
}
