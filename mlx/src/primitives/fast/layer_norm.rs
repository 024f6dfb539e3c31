//! Layer normalisation over the last axis: the [`LayerNorm`] primitive
//! (MLX's state, the fused CPU kernel, MLX's fallback graph, the
//! derivatives), the [`LayerNormVJP`] backward primitive MLX's GPU build
//! records, and the [`layer_norm`] op of `mlx::fast`.

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

/// `(x − mean) · rsqrt(var + eps) · weight + bias` over the last axis;
/// inputs (x, weight, bias), 0-d `1` / `0` when absent.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct LayerNorm {
    /// Added to the variance before the square root.
    #[state]
    pub eps: f32,
}

/// Layer normalisation over the last axis:
/// `(x − mean) / sqrt(var + eps) · weight + bias` (statistics in float32).
pub fn layer_norm(
    x: &Array,
    weight: Option<&Array>,
    bias: Option<&Array>,
    eps: f32,
) -> Result<Array> {
    let t = norm_type("layer_norm", x, &[weight, bias])?;
    let inputs = vec![
        cast_to(x, t)?,
        param_or(weight, t, 1.0)?,
        param_or(bias, t, 0.0)?,
    ];
    Array::from_primitive(LayerNorm { eps }, inputs)
}

/// Rows of `d` values: `((x - mean) · rsqrt(var + eps)) · w + b`, rounding
/// after each step as MLX's decomposition does.
pub fn layer_norm_kernel(
    x: &[f32],
    d: usize,
    weight: &[f32],
    bias: &[f32],
    eps: f32,
    round_t: fn(f32) -> f32,
) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    let row = |(xr, or): (&[f32], &mut [f32])| {
        let mu = xr.iter().sum::<f32>() / d as f32;
        let var = xr.iter().map(|v| (v - mu) * (v - mu)).sum::<f32>() / d as f32;
        let r = 1.0 / (var + eps).sqrt();
        for (j, (o, &v)) in or.iter_mut().zip(xr).enumerate() {
            let w = weight[if weight.len() == 1 { 0 } else { j }];
            let b = bias[if bias.len() == 1 { 0 } else { j }];
            *o = round_t(round_t(round_t((v - mu) * r) * w) + b);
        }
    };
    rows_par(x, &mut out, d, row);
    out
}

impl Primitive for LayerNorm {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("LayerNorm", inputs, 3)?;
        check_float_rows("LayerNorm", &inputs[0])?;
        check_param("LayerNorm", "weight", &inputs[0], &inputs[1])?;
        check_param("LayerNorm", "bias", &inputs[0], &inputs[2])?;
        Ok(vec![inputs[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let x = read_f32(&inputs[0])?;
        let w = read_f32(&inputs[1])?;
        let b = read_f32(&inputs[2])?;
        let y = layer_norm_kernel(
            &x,
            last_dim(&inputs[0]),
            &w,
            &b,
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

/// `(x − mean) · rsqrt(var + eps)` in float32, cast back, then `· w + b`
/// (no cast recorded where the type is already right, as in MLX).
fn fallback_graph(p: &LayerNorm, inputs: &[Array]) -> Result<Array> {
    arity("LayerNorm", inputs, 3)?;
    let (x, w, b) = (&inputs[0], &inputs[1], &inputs[2]);
    let x32 = cast_to(x, Dtype::Float32)?;
    let mu = ops::mean(&x32, &[-1], true)?;
    let xc = ops::subtract(&x32, &mu)?;
    let v = ops::mean(&ops::square(&xc)?, &[-1], true)?;
    let n = ops::rsqrt(&ops::add(&v, &Array::scalar(p.eps))?)?;
    let mut y = cast_to(&ops::multiply(&xc, &n)?, x.dtype())?;
    // 0-d weight and bias are the `1` and `0` MLX passes when absent.
    if w.ndim() != 0 {
        y = ops::multiply(&y, w)?;
    }
    if b.ndim() != 0 {
        y = ops::add(&y, b)?;
    }
    Ok(y)
}

impl LayerNorm {
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w, b, g) = (
            up(&primals[0])?,
            up(&primals[1])?,
            &primals[2],
            up(&cot[0])?,
        );
        let eps = scalar(self.eps as f64, &x);
        let xc = o::subtract(&x, &row_mean(&x)?)?;
        let n = o::rsqrt(&o::add(&row_mean(&o::square(&xc)?)?, &eps)?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let wg = o::multiply(&w, &g)?;
        let t1 = o::multiply(&o::multiply(&xc, &row_mean(&o::multiply(&wg, &xc)?)?)?, &n3)?;
        let t2 = o::multiply(&o::subtract(&wg, &row_mean(&wg)?)?, &n)?;
        let dx = o::subtract(&t2, &t1)?;
        let dw = unbroadcast(
            o::multiply(&g, &o::multiply(&xc, &n)?)?,
            w.shape(),
            w.dtype(),
        )?;
        let db = unbroadcast(g.clone(), b.shape(), g.dtype())?;
        select(vec![dx, dw, db], primals, argnums)
    }
}

impl LayerNorm {
    /// Forward mode: with xc = x − mean(x), dxc = dx − mean(dx) and
    /// dn = −n³ mean(xc dxc), dy = w (dxc n + xc dn) + xc n dw + db.
    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (x, w) = (up(&primals[0])?, up(&primals[1])?);
        let t = |i| tangent(primals, tangents, argnums, i);
        let (dx, dw, db) = (t(0)?, t(1)?, t(2)?);
        let xc = o::subtract(&x, &row_mean(&x)?)?;
        let dxc = o::subtract(&dx, &row_mean(&dx)?)?;
        let n = o::rsqrt(&o::add(
            &row_mean(&o::square(&xc)?)?,
            &scalar(self.eps as f64, &x),
        )?)?;
        let n3 = o::multiply(&o::square(&n)?, &n)?;
        let dn = o::negative(&o::multiply(&n3, &row_mean(&o::multiply(&xc, &dxc)?)?)?)?;
        let inner = o::add(&o::multiply(&dxc, &n)?, &o::multiply(&xc, &dn)?)?;
        let dy = o::add(
            &o::multiply(&w, &inner)?,
            &o::multiply(&o::multiply(&xc, &n)?, &dw)?,
        )?;
        Ok(vec![o::cast_to(&o::add(&dy, &db)?, primals[0].dtype())?])
    }
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

impl Primitive for LayerNormVJP {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        vjp_check("LayerNormVJP", inputs, 2)?;
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
            vjp_output(&dx, &out[0]),
            vjp_output(&dw, &out[1]),
            vjp_output(&db, &out[2]),
        ])
    }
}
