//! [`FFT`]: complex, real-to-complex and complex-to-real discrete Fourier
//! transforms over several axes, with MLX 0.32.4's state (including
//! `odd_out`, the parity of a complex-to-real output length).

use super::expect_inputs;
use super::grad_util::linear_jvp;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::fast::read_f32;
use crate::backend::cpu::fft::{c2c, c2r, r2c, C64};
use crate::buffer::Buffer;
use crate::ops;
use crate::primitive::Spec;
use crate::{Array, Complex64, Data, Dtype, Error, Primitive, Result};

/// A transform over `axes`. `real` with `inverse` = false: float32 input,
/// the last axis shrinks to n/2 + 1; `real` with `inverse`: complex input,
/// the last axis becomes 2(m − 1) + `odd_out`, float32 output. Inverse
/// transforms are scaled by 1/n per axis.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[allow(clippy::upper_case_acronyms)]
pub struct FFT {
    /// Transformed axes (non-negative); for real transforms the last is the halved one.
    #[state]
    pub axes: Vec<u64>,
    /// Inverse transform (scaled by 1/n per axis).
    #[state]
    pub inverse: bool,
    /// Real input (forward) or real output (inverse).
    #[state]
    pub real: bool,
    /// Inverse real transform to an odd length.
    #[state(mlx_since = "0.32.4", mlx_from_outputs)]
    pub odd_out: bool,
}

impl Primitive for FFT {
    /// MLX before 0.32.4 has no `odd_out` in its files: the recorded output
    /// length of the halved axis says it.
    fn adopt_recorded_specs(&mut self, outputs: &[Spec]) {
        if let (true, true, Some(&axis), Some(out)) =
            (self.inverse, self.real, self.axes.last(), outputs.first())
        {
            if let Some(&n) = out.shape.get(axis as usize) {
                self.odd_out = n % 2 == 1;
            }
        }
    }
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("FFT", inputs, 1)?;
        let x = &inputs[0];
        let nd = x.shape.len();
        let mut seen = vec![false; nd];
        for &a in &self.axes {
            if a as usize >= nd || std::mem::replace(&mut seen[a as usize], true) {
                return Err(Error::invalid(
                    "FFT",
                    format!(
                        "axes {:?} must be distinct axes of an array of shape {:?}",
                        self.axes, x.shape
                    ),
                ));
            }
        }
        let want_in = if self.real && !self.inverse {
            Dtype::Float32
        } else {
            Dtype::Complex64
        };
        if x.dtype != want_in {
            return Err(Error::invalid(
                "FFT",
                format!(
                    "expected a {want_in} input for this transform, found {}",
                    x.dtype
                ),
            ));
        }
        let mut shape = x.shape.clone();
        let mut dtype = Dtype::Complex64;
        if self.real {
            let Some(&last) = self.axes.last() else {
                return Err(Error::invalid(
                    "FFT",
                    "a real transform needs at least one axis",
                ));
            };
            let d = &mut shape[last as usize];
            if self.inverse {
                *d = (2 * (*d - 1) + self.odd_out as i32).max(0);
                dtype = Dtype::Float32;
            } else {
                *d = *d / 2 + 1;
            }
        }
        Ok(vec![Spec::new(shape, dtype)])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let x = &inputs[0];
        let mut shape: Vec<usize> = x.shape().iter().map(|&d| d as usize).collect();
        let axes: Vec<usize> = self.axes.iter().map(|&a| a as usize).collect();
        let complex_in = |x: &Array| -> Result<Vec<C64>> {
            let v = to_contiguous_vec::<Complex64>(&x.data()?, x.shape());
            Ok(v.iter()
                .map(|c| C64::new(c.re as f64, c.im as f64))
                .collect())
        };
        let to_c64 = |v: &[C64]| -> Vec<Complex64> {
            v.iter()
                .map(|c| Complex64::new(c.re as f32, c.im as f32))
                .collect()
        };
        let o = &out[0];
        if x.size() == 0 || o.size() == 0 {
            return Ok(vec![Data::contiguous(
                Buffer::zeroed(o.size() * o.dtype.size()),
                &o.shape,
            )]);
        }
        if !self.real {
            let mut data = complex_in(x)?;
            for &a in &axes {
                data = c2c(&data, &shape, a, self.inverse);
            }
            return Ok(vec![Data::contiguous(
                Buffer::from_slice(&to_c64(&data)),
                &o.shape,
            )]);
        }
        let (&last, rest) = axes.split_last().expect("checked in output_specs");
        if !self.inverse {
            let real: Vec<f64> = read_f32(x)?.iter().map(|&v| v as f64).collect();
            let mut data = r2c(&real, &shape, last);
            shape[last] = shape[last] / 2 + 1;
            for &a in rest {
                data = c2c(&data, &shape, a, false);
            }
            return Ok(vec![Data::contiguous(
                Buffer::from_slice(&to_c64(&data)),
                &o.shape,
            )]);
        }
        let mut data = complex_in(x)?;
        for &a in rest {
            data = c2c(&data, &shape, a, true);
        }
        let real = c2r(&data, &shape, last, o.shape[last] as usize);
        let real: Vec<f32> = real.iter().map(|&v| v as f32).collect();
        Ok(vec![Data::contiguous(Buffer::from_slice(&real), &o.shape)])
    }
    /// MLX's rule: the transform in the other direction, unnormalised; for
    /// real transforms the interior frequencies (used twice by the
    /// Hermitian half-spectrum) are weighted by 2 (inverse) or ½ (forward).
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        _: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        let (x, c) = (&primals[0], &cot[0]);
        let size = |a: &Array| -> f64 {
            self.axes
                .iter()
                .map(|&ax| a.shape()[ax as usize] as f64)
                .product()
        };
        let n = if self.inverse { size(c) } else { size(x) };
        let transform = |a: &Array, inverse: bool, odd_out: bool| {
            let p = FFT {
                inverse,
                odd_out,
                ..self.clone()
            };
            Array::from_primitive(p, vec![a.clone()])
        };
        let g = match (self.real, self.inverse) {
            (false, inverse) => {
                let scale = if inverse { 1.0 / n } else { n };
                let t = transform(c, !inverse, false)?;
                ops::multiply(&t, &Array::scalar(Complex64::new(scale as f32, 0.0)))?
            }
            (true, true) => {
                let w = self.half_spectrum_weights(x, c, 2.0 / n, 1.0 / n)?;
                ops::multiply(&transform(c, false, false)?, &w)?
            }
            (true, false) => {
                let w = self.half_spectrum_weights(c, x, 0.5, 1.0)?;
                let odd = x.shape()[*self.axes.last().expect("real") as usize] % 2 == 1;
                let t = transform(&ops::multiply(c, &w)?, true, odd)?;
                ops::multiply(&t, &Array::scalar(n as f32))?
            }
        };
        Ok(vec![g])
    }

    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        linear_jvp(self, primals, tangents, argnums, &[0], "its input")
    }
}

impl FFT {
    /// Weights along the halved axis of `spectrum` (broadcastable to it):
    /// `interior` for the frequencies a real signal of the length of
    /// `signal`'s axis uses twice, `edge` for DC and (even lengths) Nyquist.
    fn half_spectrum_weights(
        &self,
        spectrum: &Array,
        signal: &Array,
        interior: f64,
        edge: f64,
    ) -> Result<Array> {
        let ax = *self.axes.last().expect("real transforms have an axis") as usize;
        let m = spectrum.shape()[ax];
        let odd = signal.shape()[ax] % 2;
        let vals: Vec<Complex64> = (0..m)
            .map(|i| {
                let v = if i > 0 && i < m - 1 + odd {
                    interior
                } else {
                    edge
                };
                Complex64::new(v as f32, 0.0)
            })
            .collect();
        let mut shape = vec![1; spectrum.ndim()];
        shape[ax] = m;
        Array::from_slice(&vals, &shape)
    }
}
