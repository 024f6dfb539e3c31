//! The fused primitives of `mlx::fast`: [`RMSNorm`], [`LayerNorm`],
//! [`RoPE`] and [`ScaledDotProductAttention`], with MLX's state (MLX's
//! leading fallback-function member writes no bytes, so it has no field
//! here). MLX's CPU build never creates them (it records the
//! decompositions); files from its GPU build do, and so do our ops, which
//! run the fused CPU kernels of `backend::cpu::fast`.

use super::expect_inputs;
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::fast::{self as kernel, finfo_min, read_f32, round_fn, write_f32};
use crate::primitive::Spec;
use crate::primitives::shape::broadcast_view;
use crate::{dispatch_dtype, Array, Data, Dtype, Error, Primitive, Result};

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

/// `(x − mean) · rsqrt(var + eps) · weight + bias` over the last axis;
/// inputs (x, weight, bias), 0-d `1` / `0` when absent.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct LayerNorm {
    /// Added to the variance before the square root.
    #[state]
    pub eps: f32,
}

/// Rotary position embedding of the first `dims` features; inputs
/// (x, offset int 0-d or (B,)[, freqs (dims/2,)]). Positions run along
/// axis −2, batch entries along axis 0.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[allow(clippy::upper_case_acronyms)]
pub struct RoPE {
    /// Features rotated (even); the rest pass through.
    #[state]
    pub dims: i32,
    /// Rotate interleaved pairs (2i, 2i+1) instead of the two halves.
    #[state]
    pub traditional: bool,
    /// Frequency base (1.0, unused, when freqs are an input).
    #[state]
    pub base: f32,
    /// Multiplies the positions.
    #[state]
    pub scale: f32,
    /// The rotation itself (false: its inverse, for gradients).
    #[state]
    pub forward: bool,
}

/// `softmax(scale · q kᵀ [+ mask]) v`; inputs (q, k, v[, mask][, sinks]),
/// q (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv), Hq a multiple
/// of Hkv. The mask is present when there is an input beyond v that is not
/// the sinks; a bool mask keeps where true, another is added.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx)]
pub struct ScaledDotProductAttention {
    /// Multiplies the queries.
    #[state]
    pub scale: f32,
    /// Query i attends to keys j ≤ i + (Lk − Lq).
    #[state]
    pub do_causal: bool,
    /// The last input holds one sink logit per query head.
    #[state(mlx_since = "0.29.1")]
    pub has_sinks: bool,
    /// Also output the float32 log-sum-exp of each score row.
    #[state(mlx_since = "0.30.0")]
    pub output_logsumexp: bool,
    /// MLX GPU kernel selection hint; no effect on the CPU.
    #[state(mlx_since = "0.32.2")]
    pub force_fused: bool,
}

/// A float input plus a parameter that is 0-d or a vector of the last axis.
fn check_param(name: &str, what: &str, x: &Spec, p: &Spec) -> Result<()> {
    let d = x.shape.last().copied().unwrap_or(0);
    let ok_shape = p.shape.is_empty() || p.shape == [d] || p.shape == [1];
    if p.dtype != x.dtype || !ok_shape {
        return Err(Error::invalid(
            name,
            format!(
                "{what} must be 0-d or have shape [{d}] and dtype {}, found shape {:?} and dtype {}",
                x.dtype, p.shape, p.dtype
            ),
        ));
    }
    Ok(())
}

fn check_float_rows(name: &str, x: &Spec) -> Result<()> {
    if x.shape.is_empty() || !x.dtype.is_float() {
        return Err(Error::invalid(
            name,
            format!(
                "input must be a floating point array with at least 1 dimension, found shape {:?} and dtype {}",
                x.shape, x.dtype
            ),
        ));
    }
    Ok(())
}

fn last_dim(x: &Array) -> usize {
    x.shape().last().map_or(1, |&d| d as usize)
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
        let y = kernel::rms_norm(
            &x,
            last_dim(&inputs[0]),
            &w,
            self.eps,
            round_fn(out[0].dtype),
        );
        Ok(vec![write_f32(&y, out[0].dtype, &out[0].shape)])
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
        let y = kernel::layer_norm(
            &x,
            last_dim(&inputs[0]),
            &w,
            &b,
            self.eps,
            round_fn(out[0].dtype),
        );
        Ok(vec![write_f32(&y, out[0].dtype, &out[0].shape)])
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

impl Primitive for RoPE {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if !(2..=3).contains(&inputs.len()) {
            return Err(Error::invalid(
                "RoPE",
                format!(
                    "expected inputs (x, offset[, freqs]), found {} inputs",
                    inputs.len()
                ),
            ));
        }
        let (x, off) = (&inputs[0], &inputs[1]);
        let nd = x.shape.len();
        if nd < 3 || !x.dtype.is_float() {
            return Err(Error::invalid(
                "RoPE",
                format!(
                    "input must be a floating point array with at least 3 dimensions, found shape {:?} and dtype {}",
                    x.shape, x.dtype
                ),
            ));
        }
        let size: i32 = off.shape.iter().product();
        if !off.dtype.is_integer() || off.shape.len() > 1 || (size != 1 && size != x.shape[0]) {
            return Err(Error::invalid(
                "RoPE",
                format!(
                    "offset must be an integer scalar or a vector of {} elements, found shape {:?} and dtype {}",
                    x.shape[0], off.shape, off.dtype
                ),
            ));
        }
        if self.dims <= 0 || self.dims % 2 != 0 || self.dims > x.shape[nd - 1] {
            return Err(Error::invalid(
                "RoPE",
                format!(
                    "dims must be positive, even and at most the last dimension {}, found {}",
                    x.shape[nd - 1],
                    self.dims
                ),
            ));
        }
        if let Some(f) = inputs.get(2) {
            if f.shape != [self.dims / 2] || !f.dtype.is_float() {
                return Err(Error::invalid(
                    "RoPE",
                    format!(
                        "freqs must be a float vector of {} elements, found shape {:?} and dtype {}",
                        self.dims / 2,
                        f.shape,
                        f.dtype
                    ),
                ));
            }
        }
        Ok(vec![x.clone()])
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let x = &inputs[0];
        let s = x.shape();
        let nd = s.len();
        let mid: i32 = s[1..nd - 2].iter().product();
        let shape = [
            s[0] as usize,
            mid as usize,
            s[nd - 2] as usize,
            s[nd - 1] as usize,
        ];
        let off = &inputs[1];
        let offsets: Vec<i32> = dispatch_dtype!(off.dtype(), T => {
            to_contiguous_vec::<T>(&off.data()?, off.shape()).into_iter().map(|v| v.cast::<i32>()).collect()
        });
        let inv_freqs: Vec<f32> = match inputs.get(2) {
            Some(f) => read_f32(f)?.iter().map(|v| 1.0 / v).collect(),
            None => kernel::rope_inv_freqs(self.base, self.dims as usize),
        };
        let p = kernel::RopeParams {
            shape,
            dims: self.dims as usize,
            traditional: self.traditional,
            scale: self.scale,
            forward: self.forward,
            offsets: &offsets,
            inv_freqs: &inv_freqs,
        };
        let y = kernel::rope(&read_f32(x)?, &p, round_fn(out[0].dtype));
        Ok(vec![write_f32(&y, out[0].dtype, &out[0].shape)])
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

impl ScaledDotProductAttention {
    /// Index of the mask input, if there is one.
    pub(crate) fn mask_index(&self, n_inputs: usize) -> Option<usize> {
        (n_inputs == 4 + self.has_sinks as usize).then_some(3)
    }
}

impl Primitive for ScaledDotProductAttention {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let name = "ScaledDotProductAttention";
        let min = 3 + self.has_sinks as usize;
        if inputs.len() != min && inputs.len() != min + 1 {
            return Err(Error::invalid(
                name,
                format!(
                    "expected inputs (q, k, v[, mask][, sinks]), found {} inputs",
                    inputs.len()
                ),
            ));
        }
        let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
        let bad = |msg: String| Err(Error::invalid(name, msg));
        if q.shape.len() != 4 || k.shape.len() != 4 || v.shape.len() != 4 {
            return bad(format!(
                "q, k and v must have rank 4, found shapes {:?}, {:?}, {:?}",
                q.shape, k.shape, v.shape
            ));
        }
        if !q.dtype.is_float() || k.dtype != q.dtype || v.dtype != q.dtype {
            return bad(format!(
                "q, k and v must share a floating point dtype, found {}, {}, {}",
                q.dtype, k.dtype, v.dtype
            ));
        }
        let (b, hq, lq, d) = (q.shape[0], q.shape[1], q.shape[2], q.shape[3]);
        let (hkv, lk) = (k.shape[1], k.shape[2]);
        if k.shape[0] != b
            || v.shape[0] != b
            || k.shape[3] != d
            || v.shape[1] != hkv
            || v.shape[2] != lk
        {
            return bad(format!(
                "q {:?}, k {:?} and v {:?} do not fit (B, H, L, D) attention",
                q.shape, k.shape, v.shape
            ));
        }
        if hkv == 0 || hq % hkv != 0 {
            return bad(format!(
                "query heads {hq} must be a multiple of key/value heads {hkv}"
            ));
        }
        let full = [b, hq, lq, lk];
        if let Some(i) = self.mask_index(inputs.len()) {
            let m = &inputs[i];
            let fits = crate::ops::broadcast_shapes(name, &m.shape, &full).map(|s| s == full);
            if m.shape.len() > 4
                || fits.ok() != Some(true)
                || (m.dtype != Dtype::Bool && m.dtype != q.dtype)
            {
                return bad(format!(
                    "mask must be bool or {} and broadcast to {full:?}, found shape {:?} and dtype {}",
                    q.dtype, m.shape, m.dtype
                ));
            }
        }
        if self.has_sinks {
            let s = inputs.last().expect("sinks");
            if s.shape != [hq] || s.dtype != q.dtype {
                return bad(format!(
                    "sinks must have shape [{hq}] and dtype {}, found {:?} and {}",
                    q.dtype, s.shape, s.dtype
                ));
            }
        }
        let mut outs = vec![Spec::new([b, hq, lq, v.shape[3]], q.dtype)];
        if self.output_logsumexp {
            outs.push(Spec::new([b, hq, lq, 1], Dtype::Float32));
        }
        Ok(outs)
    }

    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
        let dims = |a: &Array, i: usize| a.shape()[i] as usize;
        let shape = kernel::AttnShape {
            b: dims(q, 0),
            hq: dims(q, 1),
            hkv: dims(k, 1),
            lq: dims(q, 2),
            lk: dims(k, 2),
            d: dims(q, 3),
            dv: dims(v, 3),
        };
        let full = [q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2]];
        let mask = match self.mask_index(inputs.len()) {
            Some(i) => {
                let m = broadcast_view(&inputs[i], &full)?;
                Some(if m.dtype() == Dtype::Bool {
                    kernel::AttnMask::Bool(to_contiguous_vec::<bool>(&m.data()?, &full))
                } else {
                    kernel::AttnMask::Additive(read_f32(&m)?)
                })
            }
            None => None,
        };
        let sinks = if self.has_sinks {
            Some(read_f32(inputs.last().expect("sinks"))?)
        } else {
            None
        };
        let dtype = out[0].dtype;
        let opts = kernel::AttnOptions {
            scale: self.scale,
            causal: self.do_causal,
            mask: mask.as_ref(),
            sinks: sinks.as_deref(),
            fill: finfo_min(dtype),
            round_t: round_fn(dtype),
        };
        let (o, lse) = kernel::attention(&read_f32(q)?, &read_f32(k)?, &read_f32(v)?, shape, &opts);
        let mut res = vec![write_f32(&o, dtype, &out[0].shape)];
        if let Some(spec) = out.get(1) {
            res.push(write_f32(&lse, Dtype::Float32, &spec.shape));
        }
        Ok(res)
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
