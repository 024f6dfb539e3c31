//! RMS normalisation over the last axis: the [`RMSNorm`] primitive (MLX's
//! state, the fused CPU kernel, MLX's fallback graph, the derivatives), the
//! [`RMSNormVJP`] backward primitive MLX's GPU build records, and the
//! [`rms_norm`] op of `mlx::fast`.

use super::{
    arity, check_float_rows, check_param, last_dim, norm_type, param_grad, param_or, row_mean,
    scalar, select, tangent, up, values, vjp_check, vjp_output,
};
use crate::backend::cpu::fast::{read_f32, round_fn, rows_par, write_f32};
use crate::ops as o;
use crate::ops::{self, cast_to};
use crate::primitive::Spec;
use crate::primitives::expect_inputs;
use crate::primitives::grad::unbroadcast;
use crate::{Array, Data, Dtype, Primitive, Result};

/// `x · rsqrt(mean(x², −1) + eps) · weight` over the last axis; inputs
/// (x, weight), weight a 0-d `1` when the caller gave none.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[allow(clippy::upper_case_acronyms)]
pub struct RMSNorm {
    /// Added to the mean square before the square root.
    #[state]
    pub eps: f32,
}

/// Root-mean-square normalisation over the last axis:
/// `x / sqrt(mean(x²) + eps) · weight` (statistics in float32).
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let t = norm_type("rms_norm", x, &[weight])?;
    let inputs = vec![cast_to(x, t)?, param_or(weight, t, 1.0)?];
    Array::from_primitive(RMSNorm { eps }, inputs)
}

/// Rows of `d` values: `round(round(x · rsqrt(mean(x²) + eps)) · w)`.
/// `weight` has `d` values or one.
pub fn rms_norm_kernel(
    x: &[f32],
    d: usize,
    weight: &[f32],
    eps: f32,
    round_t: fn(f32) -> f32,
) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    let row = |(xr, or): (&[f32], &mut [f32])| {
        let ss: f32 = xr.iter().map(|v| v * v).sum();
        let r = 1.0 / (ss / d as f32 + eps).sqrt();
        for (j, (o, &v)) in or.iter_mut().zip(xr).enumerate() {
            let w = weight[if weight.len() == 1 { 0 } else { j }];
            *o = round_t(round_t(v * r) * w);
        }
    };
    rows_par(x, &mut out, d, row);
    out
}

impl Primitive for RMSNorm {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("RMSNorm", inputs, 2)?;
        check_float_rows("RMSNorm", &inputs[0])?;
        check_param("RMSNorm", "weight", &inputs[0], &inputs[1])?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let x = read_f32(&inputs[0])?;
        let w = read_f32(&inputs[1])?;
        let y = rms_norm_kernel(
            &x,
            last_dim(&inputs[0]),
            &w,
            self.eps,
            round_fn(out[0].dtype),
        );
        Ok(vec![write_f32(&y, out[0].dtype, &out[0].shape)])
    }
    /// The graph MLX's CPU build records instead of this primitive.
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        Some(fallback_graph(self, inputs).map(|a| vec![a]))
    }
    fn vjp(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
        _: &[Array],
    ) -> Result<Vec<Array>> {
        self.rule(primals, cot, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
        self.forward_rule(primals, tangents, argnums)
    }
}

/// `x · rsqrt(mean(x², -1) + eps)` in float32, cast back, times the weight.
/// Casts to the type a value has are not recorded: MLX's `astype` returns
/// such a value as it is, and a decomposed export should hold the graph
/// MLX's own files hold (which imports recognise as one kernel).
fn fallback_graph(p: &RMSNorm, inputs: &[Array]) -> Result<Array> {
    arity("RMSNorm", inputs, 2)?;
    let (x, w) = (&inputs[0], &inputs[1]);
    let x32 = cast_to(x, Dtype::Float32)?;
    let ms = ops::mean(&ops::square(&x32)?, &[-1], true)?;
    let n = ops::rsqrt(&ops::add(&ms, &Array::scalar(p.eps))?)?;
    let y = cast_to(&ops::multiply(&x32, &n)?, x.dtype())?;
    // A 0-d weight is the `1` MLX passes when no weight was given.
    if w.ndim() == 0 {
        Ok(y)
    } else {
        ops::multiply(&y, w)
    }
}

impl RMSNorm {
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w, g) = (up(&primals[0])?, up(&primals[1])?, up(&cot[0])?);
        let eps = scalar(self.eps as f64, &x);
        let n = o::rsqrt(&o::add(&row_mean(&o::square(&x)?)?, &eps)?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let gw = o::multiply(&g, &w)?;
        let t = o::multiply(&o::multiply(&x, &row_mean(&o::multiply(&gw, &x)?)?)?, &n3)?;
        let dx = o::subtract(&o::multiply(&gw, &n)?, &t)?;
        let dw = unbroadcast(
            o::multiply(&g, &o::multiply(&x, &n)?)?,
            w.shape(),
            w.dtype(),
        )?;
        select(vec![dx, dw], primals, argnums)
    }
}

impl RMSNorm {
    /// Forward mode: with n = rsqrt(mean(x²) + eps), dn = −n³ mean(x dx)
    /// and dy = w (dx n + x dn) + x n dw.
    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w) = (up(&primals[0])?, up(&primals[1])?);
        let t = |i| tangent(primals, tangents, argnums, i);
        let (dx, dw) = (t(0)?, t(1)?);
        let n = o::rsqrt(&o::add(
            &row_mean(&o::square(&x)?)?,
            &scalar(self.eps as f64, &x),
        )?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let dn = o::negative(&o::multiply(&n3, &row_mean(&o::multiply(&x, &dx)?)?)?)?;
        let inner = o::add(&o::multiply(&dx, &n)?, &o::multiply(&x, &dn)?)?;
        let dy = o::add(
            &o::multiply(&w, &inner)?,
            &o::multiply(&o::multiply(&x, &n)?, &dw)?,
        )?;
        Ok(vec![o::cast_to(&dy, primals[0].dtype())?])
    }
}

/// Gradients of `rms_norm(x, weight, eps)` with respect to x and weight.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[allow(clippy::upper_case_acronyms)]
pub struct RMSNormVJP {
    /// The forward's epsilon.
    #[state]
    pub eps: f32,
}

impl Primitive for RMSNormVJP {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        vjp_check("RMSNormVJP", inputs, 1)?;
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
        Ok(vec![vjp_output(&dx, &out[0]), vjp_output(&dw, &out[1])])
    }
}
