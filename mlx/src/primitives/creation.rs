//! Creation primitives: Full (materialise a broadcast value) and Arange.

use super::expect_inputs;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::num::Num;
use crate::backend::cpu::PAR_THRESHOLD;
use crate::buffer::Buffer;
use crate::primitive::Spec;
use crate::{dispatch_dtype, Array, Data, Dtype, Element, Error, Primitive, Result};
use rayon::prelude::*;

/// Materialises its input, which ops have already broadcast to the output
/// shape and cast to the output dtype (`zeros`, `ones`, `full`).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Full {}

impl Primitive for Full {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Full", inputs, 1)?;
        Ok(vec![inputs[0].clone()])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = a.data()?;
        if d.is_row_contiguous(a.shape()) {
            // Already row-major: share the buffer (arrays are immutable, and
            // donation checks that nothing else holds a buffer).
            return Ok(vec![d]);
        }
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => materialise::<T>(&d, &out[0])),
        ])
    }
    // The output is the input: an identity for derivatives. (MLX 0.32.4
    // multiplies the cotangent by the input here; the identity is the
    // derivative of what the kernel computes.)
    super::grad::linear_rules!(|_, x, c| super::grad::unbroadcast(c.clone(), x.shape(), x.dtype()));
}

/// A row-major copy of `d` with shape `spec.shape`; a broadcast scalar is a fill.
fn materialise<T: Element>(d: &Data, spec: &Spec) -> Data {
    let n = spec.size();
    if d.strides.iter().all(|&s| s == 0) {
        let v = d.slice::<T>()[0];
        let mut buf = Buffer::zeroed(n * std::mem::size_of::<T>());
        // A zeroed buffer already holds an all-zero-bits value.
        if Buffer::from_slice(&[v]).bytes().iter().any(|&b| b != 0) {
            let o = buf.as_mut_slice::<T>().expect("heap buffer");
            if n >= PAR_THRESHOLD {
                o.par_chunks_mut(PAR_THRESHOLD).for_each(|c| c.fill(v));
            } else {
                o.fill(v);
            }
        }
        return Data::contiguous(buf, &spec.shape);
    }
    Data::contiguous(
        Buffer::from_slice(&to_contiguous_vec::<T>(d, &spec.shape)),
        &spec.shape,
    )
}

/// Number of elements of `arange(start, stop, step)`: `max(ceil((stop -
/// start) / step), 0)`, with MLX's checks.
pub fn arange_len(start: f64, stop: f64, step: f64) -> Result<usize> {
    if start.is_nan() || stop.is_nan() || step.is_nan() || start.is_infinite() || stop.is_infinite()
    {
        return Err(Error::invalid(
            "arange",
            format!("cannot compute the length of arange({start}, {stop}, {step})"),
        ));
    }
    if step == 0.0 {
        return Err(Error::invalid("arange", "step must be nonzero"));
    }
    let n = ((stop - start) / step).ceil();
    if n > i32::MAX as f64 {
        return Err(Error::invalid(
            "arange",
            format!(
                "arange({start}, {stop}, {step}) has {n} elements, more than {}",
                i32::MAX
            ),
        ));
    }
    Ok(n.max(0.0) as usize)
}

/// `start, start + step, ...` below `stop` (above, for a negative step).
///
/// MLX files do not record the dtype in the state (the tape entry has it);
/// `dtype` carries it for shape inference and the native format. Evaluation
/// always uses the node's recorded output dtype. In the output dtype T the
/// values are `v = T(start)`, `d = T(start + step) - T(start)`, then
/// repeatedly `v += d`, as MLX computes them (so `arange(0, 5, 0.5)` in
/// int32 is all zeros).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct Arange {
    #[state]
    pub start: f64,
    #[state]
    pub stop: f64,
    #[state]
    pub step: f64,
    #[state(skip_mlx)]
    pub dtype: Dtype,
}

impl Primitive for Arange {
    /// MLX files record the dtype only as the entry's output dtype.
    fn adopt_recorded_specs(&mut self, outputs: &[Spec]) {
        if let Some(s) = outputs.first() {
            self.dtype = s.dtype;
        }
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Arange", inputs, 0)?;
        if self.dtype == Dtype::Bool {
            return Err(Error::invalid("arange", "bool is not supported for arange"));
        }
        let n = arange_len(self.start, self.stop, self.step)?;
        Ok(vec![Spec::new([n as i32], self.dtype)])
    }

    fn eval(&self, _inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let spec = &out[0];
        if spec.dtype == Dtype::Bool {
            return Err(Error::unsupported(
                "Arange",
                "bool is not supported for arange",
            ));
        }
        let data = dispatch_dtype!(spec.dtype, T => arange_fill::<T>(self.start, self.step, spec));
        Ok(vec![data])
    }
}

fn arange_fill<T: Element + Num>(start: f64, step: f64, spec: &Spec) -> Data {
    let n = spec.size();
    let first = T::from_f64(start);
    let d = T::from_f64(start + step).sub(first);
    let mut buf = Buffer::for_elements::<T>(n);
    let o = buf.as_mut_slice::<T>().expect("heap buffer");
    let mut v = first;
    for o in o.iter_mut() {
        *o = v;
        v = v.add(d);
    }
    Data::contiguous(buf, &spec.shape)
}
