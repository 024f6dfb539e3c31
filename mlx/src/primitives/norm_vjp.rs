//! The backward primitives of the fused normalisations, as MLX's
//! `RMSNorm::vjp` / `LayerNorm::vjp` create them: [`RMSNormVJP`] (inputs
//! x, weight, cotangent → dx, dweight) and [`LayerNormVJP`] (inputs x,
//! weight, bias, cotangent → dx, dweight, dbias). A 0-d weight or bias
//! (the op's stand-in for "none") gets a zero gradient. Statistics are
//! computed in f64 and rounded once to each output's dtype.

use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{dispatch_dtype, Array, Buffer, Data, Element, Error, Primitive, Result};

/// Gradients of `rms_norm(x, weight, eps)` with respect to x and weight.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[allow(clippy::upper_case_acronyms)]
pub struct RMSNormVJP {
    /// The forward's epsilon.
    #[state]
    pub eps: f32,
}

/// Gradients of `layer_norm(x, weight, bias, eps)` with respect to x,
/// weight and bias.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[allow(clippy::upper_case_acronyms)]
pub struct LayerNormVJP {
    /// The forward's epsilon.
    #[state]
    pub eps: f32,
}

/// Checks x, the parameters (0-d or (d,)) and the cotangent (x's shape).
fn check(op: &str, inputs: &[Spec], params: usize) -> Result<()> {
    if inputs.len() != params + 2 {
        return Err(Error::invalid(
            op,
            format!("expected {} inputs, found {}", params + 2, inputs.len()),
        ));
    }
    let x = &inputs[0];
    let g = &inputs[params + 1];
    if x.shape.is_empty() || !x.dtype.is_float() {
        return Err(Error::invalid(
            op,
            format!(
                "x must be a floating point array with at least 1 dimension, found {} {:?}",
                x.dtype, x.shape
            ),
        ));
    }
    if g.shape != x.shape {
        return Err(Error::invalid(
            op,
            format!(
                "the cotangent's shape {:?} must equal x's {:?}",
                g.shape, x.shape
            ),
        ));
    }
    let d = *x.shape.last().unwrap_or(&1);
    for p in &inputs[1..=params] {
        if !(p.shape.is_empty() || p.shape == [d]) || !p.dtype.is_float() {
            return Err(Error::invalid(
                op,
                format!(
                    "parameters must be floating point, 0-d or of shape [{d}], found {} {:?}",
                    p.dtype, p.shape
                ),
            ));
        }
    }
    Ok(())
}

/// An input's elements (broadcast to `shape`) as f64, row-major.
fn values(a: &Array, shape: &[i32]) -> Result<Vec<f64>> {
    let v = broadcast_view(a, shape)?;
    let d = v.data()?;
    Ok(dispatch_dtype!(a.dtype(), T => {
        crate::backend::cpu::copy::to_contiguous_vec::<T>(&d, shape)
            .into_iter()
            .map(Element::to_f64)
            .collect()
    }))
}

/// Row-major data of `spec` from f64 values.
fn output(v: &[f64], spec: &Spec) -> Data {
    let buf = dispatch_dtype!(spec.dtype, T => {
        Buffer::from_slice(&v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>())
    });
    Data::contiguous(buf, &spec.shape)
}

/// Sum over rows of per-element terms, or zeros for a 0-d parameter.
fn param_grad(param: &Spec, d: usize, terms: &[f64]) -> Vec<f64> {
    if param.shape.is_empty() {
        return vec![0.0];
    }
    let mut acc = vec![0.0; d];
    for row in terms.chunks(d) {
        for (a, t) in acc.iter_mut().zip(row) {
            *a += t;
        }
    }
    acc
}

impl Primitive for RMSNormVJP {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        check("RMSNormVJP", inputs, 1)?;
        Ok(inputs[..2].to_vec())
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let shape = inputs[0].shape().to_vec();
        let d = *shape.last().unwrap_or(&1) as usize;
        let x = values(&inputs[0], &shape)?;
        let w = values(&inputs[1], &shape)?;
        let g = values(&inputs[2], &shape)?;
        let eps = self.eps as f64;
        let mut dx = vec![0.0; x.len()];
        let mut dw_terms = vec![0.0; x.len()];
        for r in 0..x.len() / d.max(1) {
            let s = r * d..(r + 1) * d;
            let (xr, wr, gr) = (&x[s.clone()], &w[s.clone()], &g[s.clone()]);
            let n = 1.0 / (xr.iter().map(|v| v * v).sum::<f64>() / d as f64 + eps).sqrt();
            let t = (0..d).map(|i| gr[i] * wr[i] * xr[i]).sum::<f64>() / d as f64;
            for i in 0..d {
                dx[r * d + i] = gr[i] * wr[i] * n - xr[i] * t * n * n * n;
                dw_terms[r * d + i] = gr[i] * xr[i] * n;
            }
        }
        let dw = param_grad(&out[1], d, &dw_terms);
        Ok(vec![output(&dx, &out[0]), output(&dw, &out[1])])
    }
}

impl Primitive for LayerNormVJP {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        check("LayerNormVJP", inputs, 2)?;
        Ok(inputs[..3].to_vec())
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let shape = inputs[0].shape().to_vec();
        let d = *shape.last().unwrap_or(&1) as usize;
        let x = values(&inputs[0], &shape)?;
        let w = values(&inputs[1], &shape)?;
        let g = values(&inputs[3], &shape)?;
        let eps = self.eps as f64;
        let mut dx = vec![0.0; x.len()];
        let mut dw_terms = vec![0.0; x.len()];
        for r in 0..x.len() / d.max(1) {
            let s = r * d..(r + 1) * d;
            let (xr, wr, gr) = (&x[s.clone()], &w[s.clone()], &g[s.clone()]);
            let mu = xr.iter().sum::<f64>() / d as f64;
            let var = xr.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / d as f64;
            let n = 1.0 / (var + eps).sqrt();
            let mean_wg = (0..d).map(|i| wr[i] * gr[i]).sum::<f64>() / d as f64;
            let mean_wgxc = (0..d).map(|i| wr[i] * gr[i] * (xr[i] - mu)).sum::<f64>() / d as f64;
            for i in 0..d {
                let xc = xr[i] - mu;
                dx[r * d + i] = (wr[i] * gr[i] - mean_wg) * n - xc * mean_wgxc * n * n * n;
                dw_terms[r * d + i] = gr[i] * xc * n;
            }
        }
        let dw = param_grad(&out[1], d, &dw_terms);
        let db = param_grad(&out[2], d, &g);
        Ok(vec![
            output(&dx, &out[0]),
            output(&dw, &out[1]),
            output(&db, &out[2]),
        ])
    }
}
