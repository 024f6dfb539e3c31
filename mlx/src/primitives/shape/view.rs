//! Primitives that only change how the same elements are indexed:
//! broadcasting, reshaping, flattening, transposing, adding and removing
//! size-1 axes. All are views of the input's buffer, except a reshape whose
//! layout cannot be expressed with strides, which copies.

use super::copy::contiguous_copy;
use crate::array::{check_shape, row_major_strides};
use crate::primitive::Spec;
use crate::primitives::expect_inputs;
use crate::primitives::grad::{linear_jvp, linear_rules, unbroadcast, zeros_like};
use crate::shape::{broadcast_shapes, normalize_axes, normalize_axis};
use crate::{ops, Array, Data, Error, Primitive, Result};

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
    let bad = || Error::invalid(op, format!("cannot broadcast shape {from:?} to {to:?}"));
    if from.len() > to.len() {
        return Err(bad());
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
            return Err(bad());
        };
    }
    Ok(out)
}

/// Broadcasts input 0 to `shape` (a view). With more inputs (shapeless
/// traces), the output is the broadcast of all input shapes and `shape` is
/// only a record of the traced one.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
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
            check_shape("Broadcast", &self.shape)?;
            let b = broadcast_shapes("Broadcast", &inputs[0].shape, &self.shape)?;
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
                s = broadcast_shapes("Broadcast", &s, &i.shape)?;
            }
            s
        };
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![broadcast_view(&inputs[0], &out[0].shape)?.data()?])
    }
    fn vjp(&self, x: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        broadcast_vjp(x, &c[0], argnums)
    }
    fn jvp(&self, x: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, x, t, argnums, |i| i == 0)
    }
    fn check_shapeless(&self, inputs: &[Spec]) -> Result<()> {
        if inputs.len() == 1 {
            return Err(Error::invalid(
                "Broadcast",
                format!(
                    "broadcasting to the fixed shape {:?} is only right for the traced shapes; \
                     a shapeless trace must broadcast against the arrays that give the shape",
                    self.shape
                ),
            ));
        }
        Ok(())
    }
}

/// Broadcasts input 0 against the other inputs, except on the trailing
/// axes listed in `ignore_axes` (negative, ascending), which keep input 0's
/// sizes. Made by shapeless traces of batched matmul-like ops.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct BroadcastAxes {
    #[state]
    pub ignore_axes: Vec<i32>,
}

impl BroadcastAxes {
    /// The output shape (MLX's rule), checking the ignored axes.
    fn shape(&self, inputs: &[Spec]) -> Result<Vec<i32>> {
        let mut prev = i32::MIN;
        for &ax in &self.ignore_axes {
            if ax >= 0 || ax <= prev {
                return Err(Error::invalid(
                    "BroadcastAxes",
                    format!(
                        "ignore_axes must be negative and ascending, found {:?}",
                        self.ignore_axes
                    ),
                ));
            }
            prev = ax;
        }
        let k = self.ignore_axes.len();
        let mut shape: Vec<i32> = Vec::new();
        for s in inputs {
            if s.shape.len() < k {
                return Err(Error::invalid(
                    "BroadcastAxes",
                    format!(
                        "cannot ignore axes {:?} of an input of shape {:?}",
                        self.ignore_axes, s.shape
                    ),
                ));
            }
            let n = s.shape.len() as i32;
            let kept: Vec<i32> = (0..n)
                .filter(|&i| !self.ignore_axes.contains(&(i - n)))
                .map(|i| s.shape[i as usize])
                .collect();
            shape = broadcast_shapes("BroadcastAxes", &shape, &kept)?;
        }
        let first = &inputs[0].shape;
        let dims = (shape.len() + k) as i32;
        for &ax in &self.ignore_axes {
            let pos = (dims + ax) as usize;
            let size = first[(first.len() as i32 + ax) as usize];
            shape.insert(pos.min(shape.len()), size);
        }
        Ok(shape)
    }
}

impl Primitive for BroadcastAxes {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if inputs.is_empty() {
            return Err(Error::invalid("BroadcastAxes", "expected at least 1 input"));
        }
        Ok(vec![Spec::new(self.shape(inputs)?, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![broadcast_view(&inputs[0], &out[0].shape)?.data()?])
    }
    fn vjp(&self, x: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        broadcast_vjp(x, &c[0], argnums)
    }
    fn jvp(&self, x: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, x, t, argnums, |i| i == 0)
    }
}

/// vjp of the broadcasts: input 0 gets the cotangent summed over the
/// broadcast axes; the other inputs only give a shape (zeros).
fn broadcast_vjp(x: &[Array], c: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
    argnums
        .iter()
        .map(|&i| match i {
            0 => unbroadcast(c.clone(), x[0].shape(), x[0].dtype()),
            _ => zeros_like(&x[i]),
        })
        .collect()
}

/// Strides that show the data (`from`, `strides`) with shape `to` without
/// copying, if the layout allows it (numpy's no-copy reshape rule: each
/// group of input axes that merges into a group of output axes must be
/// contiguous within itself). `None` when a copy is needed. Public so that
/// tests can check the rule directly.
pub fn reshape_strides(from: &[i32], strides: &[isize], to: &[i32]) -> Option<Vec<isize>> {
    if from.contains(&0) {
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
    if oi < od.len() {
        // `to` holds fewer elements than `from`.
        return None;
    }
    // Whatever is left of `to` is size-1 axes; their stride is irrelevant.
    Some(ns)
}

/// The data of `a` shown with shape `to` (same size): a view when the
/// layout allows it, a row-major copy otherwise.
pub(crate) fn reshape_data(a: &Array, to: &[i32]) -> Result<Data> {
    let d = a.data()?;
    if let Some(strides) = reshape_strides(a.shape(), &d.strides, to) {
        return Ok(Data { strides, ..d });
    }
    let c = contiguous_copy(&d, a.spec());
    Ok(Data {
        strides: row_major_strides(to),
        ..c
    })
}

/// `shape` with a single `-1` replaced so that it holds as many elements as `from`.
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
    let known = shape
        .iter()
        .filter(|&&d| d != -1)
        .try_fold(1i64, |acc, &d| acc.checked_mul(d as i64))
        .ok_or_else(|| Error::invalid(op, format!("shape {shape:?} has too many elements")))?;
    if let Some(&i) = infer.first() {
        if known == 0 {
            return Err(Error::invalid(
                op,
                format!("cannot infer the -1 in {shape:?} for an array of shape {from:?}: the other dimensions hold 0 elements"),
            ));
        }
        if size % known != 0 {
            return Err(Error::invalid(
                op,
                format!("cannot reshape array of shape {from:?} ({size} elements) into {shape:?}"),
            ));
        }
        out[i] = i32::try_from(size / known).map_err(|_| {
            Error::invalid(op, format!("inferred dimension of {shape:?} is too large"))
        })?;
    } else if known != size {
        return Err(Error::invalid(
            op,
            format!("cannot reshape array of shape {from:?} ({size} elements) into {shape:?}"),
        ));
    }
    Ok(out)
}

/// Gives the input a new shape with the same number of elements. A view
/// when the memory layout allows it, a row-major copy otherwise. The stored
/// shape may hold one `-1` (the caller's spelling), inferred from the input.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Reshape {
    #[state]
    pub shape: Vec<i32>,
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
        Ok(vec![reshape_data(&inputs[0], &out[0].shape)?])
    }
    linear_rules!(|_, x, c| ops::reshape(c, x.shape()));
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        if self.shape.contains(&-1) {
            return Ok(());
        }
        Err(Error::invalid(
            "Reshape",
            format!(
                "the fixed shape {:?} is only valid for inputs of the traced size; \
                 write the dimension that varies as -1",
                self.shape
            ),
        ))
    }
}

/// Merges the axes `start_axis..=end_axis` (non-negative) into one (a view when possible).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Flatten {
    #[state]
    pub start_axis: i32,
    #[state]
    pub end_axis: i32,
}

impl Primitive for Flatten {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Flatten", inputs, 1)?;
        let s = &inputs[0].shape;
        let (a, b) = (self.start_axis, self.end_axis);
        if a < 0 || b < a || b as usize >= s.len() {
            return Err(Error::invalid(
                "Flatten",
                format!(
                    "axes {a}..={b} must satisfy 0 <= start <= end < ndim for an array of shape {s:?}"
                ),
            ));
        }
        let (a, b) = (a as usize, b as usize);
        let merged = s[a..=b].iter().map(|&d| d as i64).product::<i64>();
        let merged = i32::try_from(merged).map_err(|_| {
            Error::invalid("Flatten", format!("flattening {s:?} overflows a dimension"))
        })?;
        let shape: Vec<i32> = s[..a]
            .iter()
            .copied()
            .chain([merged])
            .chain(s[b + 1..].iter().copied())
            .collect();
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![reshape_data(&inputs[0], &out[0].shape)?])
    }
    linear_rules!(|p, x, c| {
        let (a, b) = (p.start_axis as usize, p.end_axis as usize);
        ops::unflatten(c, p.start_axis, &x.shape()[a..=b])
    });
}

/// Splits axis `axis` (non-negative) into the axes `shape` (a view when possible).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Unflatten {
    #[state]
    pub axis: i32,
    #[state]
    pub shape: Vec<i32>,
}

impl Primitive for Unflatten {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Unflatten", inputs, 1)?;
        let s = &inputs[0].shape;
        let ax = normalize_axis("Unflatten", self.axis, s.len())?;
        if self.shape.is_empty() {
            return Err(Error::invalid(
                "Unflatten",
                "the shape to unflatten into is empty",
            ));
        }
        let parts = infer_shape("Unflatten", &s[ax..=ax], &self.shape)?;
        let shape: Vec<i32> = s[..ax]
            .iter()
            .chain(&parts)
            .chain(&s[ax + 1..])
            .copied()
            .collect();
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![reshape_data(&inputs[0], &out[0].shape)?])
    }
    linear_rules!(|p, x, c| {
        let ax = normalize_axis("Unflatten", p.axis, x.ndim())? as i32;
        ops::flatten(c, ax, ax + p.shape.len() as i32 - 1)
    });
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        if self.shape.contains(&-1) {
            return Ok(());
        }
        Err(Error::invalid(
            "Unflatten",
            format!(
                "splitting axis {} into the fixed sizes {:?} is only valid at the traced size",
                self.axis, self.shape
            ),
        ))
    }
}

/// Permutes the axes: output axis i is input axis `axes[i]` (a view).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
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
                format!(
                    "axes {:?} do not match an array of shape {s:?}: expected {} axes",
                    self.axes,
                    s.len()
                ),
            ));
        }
        let axes = normalize_axes("Transpose", &self.axes, s.len())?;
        Ok(vec![Spec::new(
            axes.iter().map(|&a| s[a]).collect::<Vec<_>>(),
            inputs[0].dtype,
        )])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let d = inputs[0].data()?;
        let axes = normalize_axes("Transpose", &self.axes, inputs[0].ndim())?;
        let strides = axes.iter().map(|&a| d.strides[a]).collect();
        Ok(vec![Data { strides, ..d }])
    }
    linear_rules!(|p, x, c| {
        let axes = normalize_axes("Transpose", &p.axes, x.ndim())?;
        let mut inverse = vec![0i32; axes.len()];
        for (i, &a) in axes.iter().enumerate() {
            inverse[a] = i as i32;
        }
        ops::transpose(c, &inverse)
    });
}

/// Removes the listed size-1 axes (a view).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Squeeze {
    #[state]
    pub axes: Vec<i32>,
}

impl Primitive for Squeeze {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Squeeze", inputs, 1)?;
        let s = &inputs[0].shape;
        let axes = normalize_axes("Squeeze", &self.axes, s.len())?;
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
        let axes = normalize_axes("Squeeze", &self.axes, inputs[0].ndim())?;
        let strides = (0..d.strides.len())
            .filter(|i| !axes.contains(i))
            .map(|i| d.strides[i])
            .collect();
        Ok(vec![Data { strides, ..d }])
    }
    linear_rules!(|p, _, c| if p.axes.is_empty() {
        Ok(c.clone())
    } else {
        ops::expand_dims(c, &p.axes)
    });
}

/// Inserts size-1 axes at the listed output positions (a view).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct ExpandDims {
    #[state]
    pub axes: Vec<i32>,
}

impl ExpandDims {
    fn out_axes(&self, ndim: usize) -> Result<Vec<usize>> {
        normalize_axes("ExpandDims", &self.axes, ndim + self.axes.len())
    }
}

/// `values` with `fill` inserted at the output positions `axes`.
fn insert_at<T: Copy>(values: &[T], axes: &[usize], fill: T) -> Vec<T> {
    let mut it = values.iter();
    (0..values.len() + axes.len())
        .map(|i| {
            if axes.contains(&i) {
                fill
            } else {
                *it.next().expect("count matches")
            }
        })
        .collect()
}

impl Primitive for ExpandDims {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("ExpandDims", inputs, 1)?;
        let axes = self.out_axes(inputs[0].shape.len())?;
        Ok(vec![Spec::new(
            insert_at(&inputs[0].shape, &axes, 1),
            inputs[0].dtype,
        )])
    }
    fn eval(&self, inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        let d = inputs[0].data()?;
        let axes = self.out_axes(inputs[0].ndim())?;
        let strides = insert_at(&d.strides, &axes, 0);
        Ok(vec![Data { strides, ..d }])
    }
    linear_rules!(|p, _, c| if p.axes.is_empty() {
        Ok(c.clone())
    } else {
        ops::squeeze(c, &p.axes)
    });
}
