//! Slices with static bounds (views, negative strides included), updates of
//! a slice, and slices whose start comes from an array (dynamic).
//!
//! Dynamic starts: MLX reads them unchecked (an out-of-range start reads or
//! writes outside the array). Here every start is clamped so the whole
//! slice fits: `start = clamp(start, 0, dim - size)` (negative starts give
//! 0), which agrees with MLX wherever MLX is defined.

use super::copy::{check_in_bounds, combine_into, writable_copy};
use crate::array::row_major_strides;
use crate::backend::cpu::num::Num;
use crate::element::dispatch_bits;
use crate::primitive::Spec;
use crate::primitives::expect_inputs;
use crate::primitives::grad::{linear_jvp, linear_rules, zeros_like};
use crate::shape::normalize_axes;
use crate::{dispatch_dtype, ops, Array, Buffer, Data, Error, Primitive, Result};

crate::state_enum! {
    /// How SliceUpdate combines the update with what is in the slice.
    pub enum SliceUpdateType { Max = 0, Min = 1, Sum = 2, Prod = 3, None = 4 }
}

/// Output shape of a slice with stored (normalised) bounds. Starts are
/// taken as already normalised (a negative start is before the array);
/// a negative end counts from the end, as in MLX's `normalize_slice`.
pub(crate) fn slice_shape(
    op: &str,
    shape: &[i32],
    start: &[i32],
    end: &[i32],
    strides: &[i32],
) -> Result<Vec<i32>> {
    let n = shape.len();
    if start.len() != n || end.len() != n || strides.len() != n {
        return Err(Error::invalid(
            op,
            format!(
                "expected {n} start indices, end indices and strides for an array of shape {shape:?}, \
                 found {}, {} and {}",
                start.len(),
                end.len(),
                strides.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (d, s, e, k) = (
            shape[i] as i64,
            start[i] as i64,
            end[i] as i64,
            strides[i] as i64,
        );
        let e = if e < 0 { e + d } else { e };
        let len = if k > 0 {
            let st = s.clamp(0, d);
            let ed = Ord::max(e.clamp(0, d), st);
            (ed - st + k - 1) / k
        } else if k < 0 {
            let st = Ord::min(s, d - 1);
            let ed = Ord::min(Ord::max(e, -1), st);
            (st - ed - k - 1) / -k
        } else {
            return Err(Error::invalid(
                op,
                format!("slice strides must be non-zero, found {strides:?}"),
            ));
        };
        out.push(len as i32);
    }
    Ok(out)
}

/// Offset and strides (in elements) of the slice view of data laid out
/// with `in_strides`, checked against a buffer of `len` elements.
fn slice_layout(
    op: &str,
    out_shape: &[i32],
    in_strides: &[isize],
    offset: usize,
    start: &[i32],
    strides: &[i32],
    len: usize,
) -> Result<(usize, Vec<isize>)> {
    if start.len() != out_shape.len() || strides.len() != out_shape.len() {
        return Err(Error::invalid(
            op,
            format!(
                "start indices {start:?} and strides {strides:?} do not match the output shape {out_shape:?}"
            ),
        ));
    }
    // i128: a file's start indices and strides must not wrap the offset.
    let mut off = offset as i128;
    let mut st = Vec::with_capacity(out_shape.len());
    for i in 0..out_shape.len() {
        off += start[i] as i128 * in_strides[i] as i128;
        let s = in_strides[i]
            .checked_mul(strides[i] as isize)
            .ok_or_else(|| {
                Error::invalid(op, format!("stride {} of axis {i} overflows", strides[i]))
            })?;
        st.push(s);
    }
    if out_shape.iter().all(|&d| d > 0) {
        check_in_bounds(op, out_shape, &st, off, len)?;
        Ok((off as usize, st))
    } else {
        Ok((offset, st))
    }
}

/// Checks that each slice position lies inside its axis, so a view can
/// never reach a neighbouring row (the buffer check alone cannot see that).
fn check_slice_inside(
    op: &str,
    shape: &[i32],
    out: &[i32],
    start: &[i32],
    strides: &[i32],
) -> Result<()> {
    if out.contains(&0) {
        return Ok(());
    }
    for i in 0..shape.len() {
        let first = start[i] as i64;
        let last = first + (out[i] as i64 - 1) * strides[i] as i64;
        let d = shape[i] as i64;
        if first < 0 || first >= d || last < 0 || last >= d {
            return Err(Error::invalid(
                op,
                format!(
                    "a slice of {} elements from {first} with stride {} leaves axis {i} of size {d} \
                     (start indices {start:?}, strides {strides:?}, input shape {shape:?})",
                    out[i], strides[i]
                ),
            ));
        }
    }
    Ok(())
}

/// `a[start:end:strides]` on every axis (a view). The ops store MLX's
/// normalised form: starts inside the axis, ends as given, stride 1 on
/// axes of one element.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Slice {
    #[state]
    pub start_indices: Vec<i32>,
    #[state]
    pub end_indices: Vec<i32>,
    #[state]
    pub strides: Vec<i32>,
}

impl Primitive for Slice {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Slice", inputs, 1)?;
        let shape = slice_shape(
            "Slice",
            &inputs[0].shape,
            &self.start_indices,
            &self.end_indices,
            &self.strides,
        )?;
        Ok(vec![Spec::new(shape, inputs[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let shape = &out[0].shape;
        if shape.len() != a.ndim() {
            return Err(Error::invalid(
                "Slice",
                format!(
                    "output shape {shape:?} does not match input shape {:?}",
                    a.shape()
                ),
            ));
        }
        check_slice_inside(
            "Slice",
            a.shape(),
            shape,
            &self.start_indices,
            &self.strides,
        )?;
        let d = a.data()?;
        let len = d.buffer.len() / a.dtype().size();
        let (offset, strides) = slice_layout(
            "Slice",
            shape,
            &d.strides,
            d.offset,
            &self.start_indices,
            &self.strides,
            len,
        )?;
        Ok(vec![Data {
            buffer: d.buffer,
            strides,
            offset,
        }])
    }
    // The cotangent goes back into its slice of zeros.
    linear_rules!(|p, x, c| {
        let put = SliceUpdate {
            reduce_type: SliceUpdateType::None,
            start_indices: p.start_indices.clone(),
            end_indices: p.end_indices.clone(),
            strides: p.strides.clone(),
        };
        Array::from_primitive(put, vec![zeros_like(x)?, c.clone()])
    });
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        Err(Error::invalid(
            "Slice",
            format!(
                "the bounds {:?}..{:?} are absolute indices fixed at trace time; \
                 they would select other elements at other input shapes",
                self.start_indices, self.end_indices
            ),
        ))
    }
}

/// Applies `kind` to combine `update` into the region of `dst` selected by
/// (`start`, `strides`, update's shape). `dst` is row-major of `spec`.
fn update_region(
    op: &str,
    kind: SliceUpdateType,
    dst: &mut Buffer,
    spec: &Spec,
    update: &Array,
    start: &[i32],
    strides: &[i32],
) -> Result<()> {
    let rm = row_major_strides(&spec.shape);
    let (offset, region) = slice_layout(op, update.shape(), &rm, 0, start, strides, spec.size())?;
    let u = update.data()?;
    let shape = update.shape();
    match kind {
        SliceUpdateType::None => dispatch_bits!(spec.dtype, T => combine_into::<T>(
            dst.as_mut_slice::<T>().expect("heap buffer"), &region, offset, &u, shape, |_, x| x)),
        _ => dispatch_dtype!(spec.dtype, T => {
            let f = match kind {
                SliceUpdateType::Max => <T as Num>::max,
                SliceUpdateType::Min => <T as Num>::min,
                SliceUpdateType::Sum => <T as Num>::add,
                _ => <T as Num>::mul,
            };
            combine_into::<T>(dst.as_mut_slice::<T>().expect("heap buffer"), &region, offset, &u, shape, f)
        }),
    }
    Ok(())
}

/// `dst` with the slice `start:end:strides` replaced by (or combined with)
/// `update`, whose shape is the slice's. Inputs (dst, update).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct SliceUpdate {
    #[state(mlx_since = "0.31.2", mlx_absent = SliceUpdateType::None)]
    pub reduce_type: SliceUpdateType,
    #[state]
    pub start_indices: Vec<i32>,
    #[state]
    pub end_indices: Vec<i32>,
    #[state]
    pub strides: Vec<i32>,
}

impl Primitive for SliceUpdate {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("SliceUpdate", inputs, 2)?;
        let (dst, upd) = (&inputs[0], &inputs[1]);
        if dst.dtype != upd.dtype {
            return Err(Error::invalid(
                "SliceUpdate",
                format!(
                    "the update must have the destination's dtype {}, found {}",
                    dst.dtype, upd.dtype
                ),
            ));
        }
        let shape = slice_shape(
            "SliceUpdate",
            &dst.shape,
            &self.start_indices,
            &self.end_indices,
            &self.strides,
        )?;
        if shape != upd.shape {
            return Err(Error::invalid(
                "SliceUpdate",
                format!(
                    "the update has shape {:?}, the slice of the destination {:?} has shape {shape:?}",
                    upd.shape, dst.shape
                ),
            ));
        }
        Ok(vec![dst.clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (dst, upd) = (&inputs[0], &inputs[1]);
        check_slice_inside(
            "SliceUpdate",
            dst.shape(),
            upd.shape(),
            &self.start_indices,
            &self.strides,
        )?;
        let mut buf = writable_copy(dst, &out[0])?;
        update_region(
            "SliceUpdate",
            self.reduce_type,
            &mut buf,
            &out[0],
            upd,
            &self.start_indices,
            &self.strides,
        )?;
        Ok(vec![Data::contiguous(buf, &out[0].shape)])
    }
    fn vjp(
        &self,
        p: &[Array],
        c: &[Array],
        argnums: &[usize],
        out: &[Array],
    ) -> Result<Vec<Array>> {
        let (dst, upd, c, out) = (&p[0], &p[1], &c[0], &out[0]);
        argnums
            .iter()
            .map(|&i| match (i, self.reduce_type) {
                (0, SliceUpdateType::None) => {
                    self.with(SliceUpdateType::None, c, &zeros_like(upd)?)
                }
                (0, SliceUpdateType::Sum) => Ok(c.clone()),
                (0, SliceUpdateType::Prod) => self.with(SliceUpdateType::Prod, c, upd),
                // Max/min: the gradient goes where the kept value came from.
                (0, _) => where_equal(out, dst, c),
                (_, SliceUpdateType::None | SliceUpdateType::Sum) => self.sliced(c),
                (_, SliceUpdateType::Prod) => ops::multiply(&self.sliced(c)?, &self.sliced(dst)?),
                (_, _) => where_equal(&self.sliced(out)?, upd, &self.sliced(c)?),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        match self.reduce_type {
            SliceUpdateType::None | SliceUpdateType::Sum => linear_jvp(self, p, t, argnums, |_| true),
            _ => Err(Error::unsupported(
                "SliceUpdate",
                "forward-mode derivatives of max, min and product updates are not implemented (as in MLX)",
            )),
        }
    }
}

impl SliceUpdate {
    /// This update's region, combined with `kind`, applied to (dst, upd).
    fn with(&self, kind: SliceUpdateType, dst: &Array, upd: &Array) -> Result<Array> {
        let p = SliceUpdate {
            reduce_type: kind,
            ..self.clone()
        };
        Array::from_primitive(p, vec![dst.clone(), upd.clone()])
    }
    /// This update's region of `a`.
    fn sliced(&self, a: &Array) -> Result<Array> {
        let p = Slice {
            start_indices: self.start_indices.clone(),
            end_indices: self.end_indices.clone(),
            strides: self.strides.clone(),
        };
        Array::from_primitive(p, vec![a.clone()])
    }
}

/// `c` where `a == b`, 0 elsewhere.
fn where_equal(a: &Array, b: &Array, c: &Array) -> Result<Array> {
    ops::where_(&ops::equal(a, b)?, c, &Array::scalar_of(0.0, c.dtype()))
}

/// Reads the start indices array (any integer dtype, 0-d or 1-d) as i64.
fn read_starts(op: &str, start: &Array, count: usize) -> Result<Vec<i64>> {
    if !start.dtype().is_integer() {
        return Err(Error::invalid(
            op,
            format!("start indices must be integers, found {}", start.dtype()),
        ));
    }
    if start.ndim() > 1 || start.size() != count {
        return Err(Error::invalid(
            op,
            format!(
                "expected {count} start indices (0-d or 1-d) for {count} axes, found shape {:?}",
                start.shape()
            ),
        ));
    }
    let d = start.data()?;
    let v = dispatch_dtype!(start.dtype(), T => {
        crate::backend::cpu::copy::to_contiguous_vec::<T>(&d, start.shape())
            .into_iter()
            .map(|x| {
                let f = crate::Element::to_f64(x);
                // u64 beyond i64: clamp; the start is clamped again below.
                if f >= i64::MAX as f64 { i64::MAX } else { f as i64 }
            })
            .collect::<Vec<i64>>()
    });
    Ok(v)
}

/// Checks the start indices spec of a dynamic slice (integer, 0-d or 1-d, one per axis).
fn check_start_spec(op: &str, start: &Spec, axes: usize) -> Result<()> {
    if !start.dtype.is_integer() || start.shape.len() > 1 || start.size() != axes {
        return Err(Error::invalid(
            op,
            format!(
                "start indices must be an integer array of {axes} elements (0-d or 1-d), found {} {:?}",
                start.dtype, start.shape
            ),
        ));
    }
    Ok(())
}

/// Per-axis starts, clamped so that a slice of `size` fits in `dims`.
fn clamped_starts(
    ndim: usize,
    axes: &[usize],
    starts: &[i64],
    dims: &[i32],
    size: &[i32],
) -> Vec<i32> {
    let mut out = vec![0i32; ndim];
    for (&ax, &s) in axes.iter().zip(starts) {
        let hi = Ord::max(dims[ax] - size[ax], 0) as i64;
        out[ax] = s.clamp(0, hi) as i32;
    }
    out
}

/// A slice of size `slice_size` (every axis) starting, on `axes`, at the
/// positions held by the second input (0 elsewhere). Inputs (a, start).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct DynamicSlice {
    #[state]
    pub axes: Vec<i32>,
    #[state]
    pub slice_size: Vec<i32>,
}

impl Primitive for DynamicSlice {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("DynamicSlice", inputs, 2)?;
        let a = &inputs[0];
        normalize_axes("DynamicSlice", &self.axes, a.shape.len())?;
        check_start_spec("DynamicSlice", &inputs[1], self.axes.len())?;
        let ok = self.slice_size.len() == a.shape.len()
            && self
                .slice_size
                .iter()
                .zip(&a.shape)
                .all(|(&s, &d)| (0..=d).contains(&s));
        if !ok {
            return Err(Error::invalid(
                "DynamicSlice",
                format!(
                    "slice size {:?} must have one entry per axis, each between 0 and the size, for shape {:?}",
                    self.slice_size, a.shape
                ),
            ));
        }
        Ok(vec![Spec::new(self.slice_size.clone(), a.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let axes = normalize_axes("DynamicSlice", &self.axes, a.ndim())?;
        let starts = read_starts("DynamicSlice", &inputs[1], axes.len())?;
        let start = clamped_starts(a.ndim(), &axes, &starts, a.shape(), &out[0].shape);
        let ones = vec![1; a.ndim()];
        check_slice_inside("DynamicSlice", a.shape(), &out[0].shape, &start, &ones)?;
        let d = a.data()?;
        let len = d.buffer.len() / a.dtype().size();
        let (offset, strides) = slice_layout(
            "DynamicSlice",
            &out[0].shape,
            &d.strides,
            d.offset,
            &start,
            &ones,
            len,
        )?;
        Ok(vec![Data {
            buffer: d.buffer,
            strides,
            offset,
        }])
    }
    // The start indices are integers: no derivative (zeros).
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        let put = DynamicSliceUpdate {
            axes: self.axes.clone(),
        };
        argnums
            .iter()
            .map(|&i| match i {
                0 => Array::from_primitive(
                    put.clone(),
                    vec![zeros_like(&p[0])?, c[0].clone(), p[1].clone()],
                ),
                _ => zeros_like(&p[i]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, p, t, argnums, |i| i == 0)
    }
    fn check_shapeless(&self, _inputs: &[Spec]) -> Result<()> {
        Err(Error::invalid(
            "DynamicSlice",
            format!(
                "the slice size {:?} is fixed at trace time and covers whole axes only at the traced shape",
                self.slice_size
            ),
        ))
    }
}

/// `src` with the region of `update`'s shape starting, on `axes`, at the
/// positions held by the third input replaced by `update`. Inputs (src, update, start).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct DynamicSliceUpdate {
    #[state]
    pub axes: Vec<i32>,
}

impl Primitive for DynamicSliceUpdate {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("DynamicSliceUpdate", inputs, 3)?;
        let (src, upd) = (&inputs[0], &inputs[1]);
        normalize_axes("DynamicSliceUpdate", &self.axes, src.shape.len())?;
        check_start_spec("DynamicSliceUpdate", &inputs[2], self.axes.len())?;
        if src.dtype != upd.dtype {
            return Err(Error::invalid(
                "DynamicSliceUpdate",
                format!(
                    "the update must have the destination's dtype {}, found {}",
                    src.dtype, upd.dtype
                ),
            ));
        }
        let fits = upd.shape.len() == src.shape.len()
            && upd.shape.iter().zip(&src.shape).all(|(u, s)| u <= s);
        if !fits {
            return Err(Error::invalid(
                "DynamicSliceUpdate",
                format!(
                    "an update of shape {:?} does not fit in an array of shape {:?}",
                    upd.shape, src.shape
                ),
            ));
        }
        Ok(vec![src.clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (src, upd) = (&inputs[0], &inputs[1]);
        let axes = normalize_axes("DynamicSliceUpdate", &self.axes, src.ndim())?;
        let starts = read_starts("DynamicSliceUpdate", &inputs[2], axes.len())?;
        let start = clamped_starts(src.ndim(), &axes, &starts, src.shape(), upd.shape());
        let ones = vec![1; src.ndim()];
        check_slice_inside(
            "DynamicSliceUpdate",
            src.shape(),
            upd.shape(),
            &start,
            &ones,
        )?;
        let mut buf = writable_copy(src, &out[0])?;
        update_region(
            "DynamicSliceUpdate",
            SliceUpdateType::None,
            &mut buf,
            &out[0],
            upd,
            &start,
            &ones,
        )?;
        Ok(vec![Data::contiguous(buf, &out[0].shape)])
    }
    fn vjp(&self, p: &[Array], c: &[Array], argnums: &[usize], _: &[Array]) -> Result<Vec<Array>> {
        let (upd, start, c) = (&p[1], &p[2], &c[0]);
        argnums
            .iter()
            .map(|&i| match i {
                0 => Array::from_primitive(
                    self.clone(),
                    vec![c.clone(), zeros_like(upd)?, start.clone()],
                ),
                1 => {
                    let take = DynamicSlice {
                        axes: self.axes.clone(),
                        slice_size: upd.shape().to_vec(),
                    };
                    Array::from_primitive(take, vec![c.clone(), start.clone()])
                }
                _ => zeros_like(&p[i]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], t: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, p, t, argnums, |i| i < 2)
    }
}
