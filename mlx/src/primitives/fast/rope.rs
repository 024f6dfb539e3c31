//! Rotary position embedding: the [`RoPE`] primitive (MLX's state, the
//! fused CPU kernel, MLX's fallback graph, the derivatives) and the
//! [`rope`] / [`rope_inverse`] ops of `mlx::fast`.

use super::arity;
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::fast::{mlx_exp, read_f32, round_fn, write_f32};
use crate::backend::cpu::PAR_THRESHOLD;
use crate::ops::{self, astype, cast_to};
use crate::primitive::Spec;
use crate::primitives::grad_util::{linear_jvp, only_args};
use crate::{dispatch_dtype, Array, Data, Dtype, Error, Primitive, Result};
use rayon::prelude::*;

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

/// The position offset of [`rope`]: one integer, or an integer array that
/// is 0-d or has one entry per batch element (axis 0 of x).
#[derive(Clone, Debug)]
pub enum RopeOffset {
    /// The same offset for every batch element.
    Int(i32),
    /// An integer array (0-d or (B,)).
    Array(Array),
}

impl From<i32> for RopeOffset {
    fn from(v: i32) -> Self {
        RopeOffset::Int(v)
    }
}

impl From<&Array> for RopeOffset {
    fn from(a: &Array) -> Self {
        RopeOffset::Array(a.clone())
    }
}

impl From<Array> for RopeOffset {
    fn from(a: Array) -> Self {
        RopeOffset::Array(a)
    }
}

/// Rotary position embedding of the first `dims` features of `x` (at least
/// 3-D; positions along axis −2 start at `offset`). Exactly one of `base`
/// (frequencies `base^(−2i/dims)`) and `freqs` (given frequencies) is set.
/// `traditional` rotates interleaved pairs instead of the two halves.
pub fn rope(
    x: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: impl Into<RopeOffset>,
    freqs: Option<&Array>,
) -> Result<Array> {
    rope_impl(
        x,
        dims,
        traditional,
        base,
        scale,
        offset.into(),
        freqs,
        true,
    )
}

/// The inverse rotation of [`rope`] (MLX's `forward = false`, used by its gradient).
pub fn rope_inverse(
    x: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: impl Into<RopeOffset>,
    freqs: Option<&Array>,
) -> Result<Array> {
    rope_impl(
        x,
        dims,
        traditional,
        base,
        scale,
        offset.into(),
        freqs,
        false,
    )
}

#[allow(clippy::too_many_arguments)]
fn rope_impl(
    x: &Array,
    dims: i32,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: RopeOffset,
    freqs: Option<&Array>,
    forward: bool,
) -> Result<Array> {
    let offset = match offset {
        RopeOffset::Int(v) => Array::scalar(v),
        RopeOffset::Array(a) => {
            if !a.dtype().is_integer() {
                return Err(Error::invalid(
                    "rope",
                    format!("offset must be an integer, found dtype {}", a.dtype()),
                ));
            }
            if a.dtype().size() != 4 {
                astype(&a, Dtype::Int32)?
            } else {
                a
            }
        }
    };
    let mut inputs = vec![x.clone(), offset];
    let base = match (base, freqs) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "rope",
                "only one of base or freqs can have a value",
            ))
        }
        (None, None) => return Err(Error::invalid("rope", "neither base nor freqs has a value")),
        (Some(b), None) => b,
        (None, Some(f)) => {
            inputs.push(cast_to(f, Dtype::Float32)?);
            1.0
        }
    };
    let p = RoPE {
        dims,
        traditional,
        base,
        scale,
        forward,
    };
    Array::from_primitive(p, inputs)
}

/// Parameters of a rotary embedding over x viewed as (B, N, T, D).
pub struct RopeParams<'a> {
    /// (B, N, T, D).
    pub shape: [usize; 4],
    /// Feature count rotated (even, ≤ D).
    pub dims: usize,
    /// Rotate interleaved pairs (2i, 2i+1) instead of the halves.
    pub traditional: bool,
    /// Position multiplier.
    pub scale: f32,
    /// Rotation direction: forward, or its inverse.
    pub forward: bool,
    /// One offset, or one per batch entry.
    pub offsets: &'a [i32],
    /// Inverse frequencies, `dims / 2` of them.
    pub inv_freqs: &'a [f32],
}

/// The rotary embedding; features past `dims` are copied.
pub fn rope_kernel(x: &[f32], p: &RopeParams<'_>, round_t: fn(f32) -> f32) -> Vec<f32> {
    let [_, n, t, d] = p.shape;
    let half = p.dims / 2;
    let mut out = x.to_vec();
    let row = |(r, or): (usize, &mut [f32])| {
        let b = r / (n * t);
        let pos_t = (r % t) as f32;
        let off = p.offsets[if p.offsets.len() == 1 { 0 } else { b }] as f32;
        let pos = (pos_t + off) * p.scale;
        for i in 0..half {
            let theta = pos * p.inv_freqs[i];
            let (c, s) = (round_t(theta.cos()), round_t(theta.sin()));
            let (i1, i2) = if p.traditional {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + half)
            };
            let (x1, x2) = (or[i1], or[i2]);
            let (m1c, m2s, m1s, m2c) = (
                round_t(x1 * c),
                round_t(x2 * s),
                round_t(x1 * s),
                round_t(x2 * c),
            );
            if p.forward {
                or[i1] = round_t(m1c - m2s);
                or[i2] = round_t(m1s + m2c);
            } else {
                or[i1] = round_t(m2s + m1c);
                or[i2] = round_t(m2c - m1s);
            }
        }
    };
    if d == 0 {
        return out;
    }
    if x.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(d).enumerate().for_each(row);
    } else {
        out.chunks_mut(d).enumerate().for_each(row);
    }
    out
}

/// MLX's default inverse frequencies: `exp(-i · ln(base) / (dims/2))`.
pub fn rope_inv_freqs(base: f32, dims: usize) -> Vec<f32> {
    let half = dims / 2;
    let c = base.ln() / half as f32;
    (0..half).map(|i| mlx_exp(-(i as f32) * c)).collect()
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
            None => rope_inv_freqs(self.base, self.dims as usize),
        };
        let p = RopeParams {
            shape,
            dims: self.dims as usize,
            traditional: self.traditional,
            scale: self.scale,
            forward: self.forward,
            offsets: &offsets,
            inv_freqs: &inv_freqs,
        };
        let y = rope_kernel(&read_f32(x)?, &p, round_fn(out[0].dtype));
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

/// Rotary embedding: positions (arange(T) + offset)·scale times inverse
/// frequencies, rotating pairs of the first `dims` features.
fn fallback_graph(p: &RoPE, inputs: &[Array]) -> Result<Array> {
    arity("RoPE", inputs, 2)?;
    let shape = inputs[0].shape().to_vec();
    let mut x = inputs[0].clone();
    if x.ndim() == 3 {
        x = ops::expand_dims(&x, &[1])?;
    } else if x.ndim() > 4 {
        x = ops::flatten(&x, 1, x.ndim() as i32 - 3)?;
    }
    if x.ndim() != 4 {
        return Err(Error::invalid(
            "RoPE",
            format!("input of shape {shape:?} must have at least 3 dimensions"),
        ));
    }
    let s = x.shape().to_vec();
    let (b, n, t, last) = (s[0], s[1], s[2], s[3]);
    let dims = p.dims;
    let half = dims / 2;
    let dtype = x.dtype();
    let mut offset = inputs[1].clone();
    if offset.size() > 1 {
        offset = ops::expand_dims(&offset, &[-1, -2])?;
    }
    let positions = ops::multiply(
        &ops::add(&ops::arange(0.0, t as f64, 1.0, Dtype::Float32)?, &offset)?,
        &Array::scalar(p.scale),
    )?;
    let inv_freqs = match inputs.get(2) {
        Some(freqs) => ops::reciprocal(freqs)?,
        None => ops::exp(&ops::multiply(
            &ops::arange(0.0, -(half as f64), -1.0, Dtype::Float32)?,
            &Array::scalar(p.base.ln() / half as f32),
        )?)?,
    };
    let theta = ops::multiply(&ops::expand_dims(&positions, &[-1])?, &inv_freqs)?;
    let coss = cast_to(&ops::cos(&theta)?, dtype)?;
    let sins = cast_to(&ops::sin(&theta)?, dtype)?;
    let rotate = |x1: &Array, x2: &Array| -> Result<[Array; 2]> {
        let (a, c) = (ops::multiply(x1, &coss)?, ops::multiply(x1, &sins)?);
        let (d, e) = (ops::multiply(x2, &sins)?, ops::multiply(x2, &coss)?);
        Ok(if p.forward {
            [ops::subtract(&a, &d)?, ops::add(&c, &e)?]
        } else {
            [ops::add(&d, &a)?, ops::subtract(&e, &c)?]
        })
    };
    let rest = |x: &Array| ops::slice(x, &[0, 0, 0, dims], &[b, n, t, last], &[1, 1, 1, 1]);
    let out = if p.traditional {
        let x1 = ops::slice(&x, &[0, 0, 0, 0], &[b, n, t, dims], &[1, 1, 1, 2])?;
        let x2 = ops::slice(&x, &[0, 0, 0, 1], &[b, n, t, dims], &[1, 1, 1, 2])?;
        let [o1, o2] = rotate(&x1, &x2)?;
        let pair = ops::concatenate(
            &[ops::expand_dims(&o1, &[-1])?, ops::expand_dims(&o2, &[-1])?],
            -1,
        )?;
        let mut out = ops::reshape(&pair, &[b, n, t, dims])?;
        if dims < last {
            out = ops::concatenate(&[out, rest(&x)?], -1)?;
        }
        out
    } else {
        let x1 = ops::slice(&x, &[0, 0, 0, 0], &[b, n, t, half], &[1, 1, 1, 1])?;
        let x2 = ops::slice(&x, &[0, 0, 0, half], &[b, n, t, dims], &[1, 1, 1, 1])?;
        let [o1, o2] = rotate(&x1, &x2)?;
        let mut parts = vec![o1, o2];
        if dims < last {
            parts.push(rest(&x)?);
        }
        ops::concatenate(&parts, -1)?
    };
    ops::reshape(&out, &shape)
}

impl RoPE {
    /// The rotation is orthogonal: its transpose is the inverse rotation.
    pub(crate) fn rule(
        &self,
        primals: &[Array],
        cot: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        only_args("RoPE", argnums, &[0], "its offset or frequencies")?;
        let mut inputs = primals.to_vec();
        inputs[0] = cot[0].clone();
        let p = RoPE {
            forward: !self.forward,
            ..self.clone()
        };
        Ok(vec![Array::from_primitive(p, inputs)?])
    }

    pub(crate) fn forward_rule(
        &self,
        primals: &[Array],
        tangents: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        linear_jvp(
            self,
            primals,
            tangents,
            argnums,
            &[0],
            "its offset or frequencies",
        )
    }
}
