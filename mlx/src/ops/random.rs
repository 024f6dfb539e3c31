//! `mlx::random`: MLX's counter-based random numbers, bit for bit.
//!
//! Keys are uint32 arrays of shape (2,) hashed with threefry-2x32 by the
//! [`RandomBits`] primitive; every sampler is built from primitives exactly
//! the way MLX builds it (for example uniform is RandomBits → AsType →
//! Divide → Minimum → AsType → Multiply → Add), so the same key gives the
//! same bits as Python MLX.
//!
//! Functions take `key: Option<&Array>`. Without a key they draw one from
//! a process-wide generator: `(state, sub) = split(state)`, `sub` is used.
//! That subkey is a constant array, so inside a traced function the drawn
//! values are fixed at trace time, as in MLX.

use crate::ops::{
    add, astype, broadcast_shapes, cast_to, divide, maximum, minimum, multiply, subtract,
};
use crate::ops::{erf, erfinv, floor, less, log, negative};
use crate::primitives::random::{bits_dtype, fill_bits, RandomBits};
use crate::{Array, Dtype, Error, Result};
use std::sync::Mutex;

/// The global key: `None` until first used or seeded.
static STATE: Mutex<Option<(u32, u32)>> = Mutex::new(None);

/// The two rows of `split(key)` computed directly (no graph).
fn split_now(key: (u32, u32)) -> ((u32, u32), (u32, u32)) {
    let mut b = [0u8; 16];
    fill_bits(key, &mut b);
    let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    ((w(0), w(1)), (w(2), w(3)))
}

fn key_words(seed: u64) -> (u32, u32) {
    ((seed >> 32) as u32, seed as u32)
}

/// Seeds the global generator: its state becomes `key(seed)`.
pub fn seed(seed: u64) {
    *crate::array::lock(&STATE) = Some(key_words(seed));
}

/// The next key of the global generator (advancing it).
fn next_key() -> Array {
    let mut st = crate::array::lock(&STATE);
    let cur = st.unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        key_words(t)
    });
    let (next, sub) = split_now(cur);
    *st = Some(next);
    key_array(sub)
}

fn key_array(words: (u32, u32)) -> Array {
    Array::from_slice(&[words.0, words.1], &[2]).expect("two words")
}

/// A generator of its own: the keys the global one gives after
/// [`seed`]`(seed)`, in the same order, but no other thread's draws can
/// come between them (a seeded sampler stays reproducible while other
/// code draws from the global generator).
#[derive(Debug, Clone)]
pub struct KeySequence {
    state: (u32, u32),
}

impl KeySequence {
    pub fn new(seed: u64) -> KeySequence {
        KeySequence {
            state: key_words(seed),
        }
    }

    /// The next key, advancing the sequence as the global generator advances.
    pub fn next_key(&mut self) -> Array {
        let (next, sub) = split_now(self.state);
        self.state = next;
        key_array(sub)
    }
}

/// The key for `seed`: uint32 `[seed >> 32, seed & 0xFFFFFFFF]`.
pub fn key(seed: u64) -> Array {
    key_array(key_words(seed))
}

/// `num` new keys from `key`, as a (num, 2) array.
pub fn split(key: &Array, num: i32) -> Result<Array> {
    bits(&[num, 2], 4, Some(key))
}

/// The two halves of `split(key, 2)`, each a key of shape (2,).
pub fn split_pair(key: &Array) -> Result<(Array, Array)> {
    let keys = split(key, 2)?;
    Ok((row(&keys, 0)?, row(&keys, 1)?))
}

/// The given key, checked, or the next global one.
fn resolve(op: &str, key: Option<&Array>) -> Result<Array> {
    let Some(k) = key else {
        return Ok(next_key());
    };
    if k.dtype() != Dtype::Uint32 || k.shape() != [2] {
        return Err(Error::invalid(
            op,
            format!(
                "expected a uint32 key of shape [2], found {} {:?}",
                k.dtype(),
                k.shape()
            ),
        ));
    }
    Ok(k.clone())
}

/// Random bits: uint8/uint16/uint32 elements for `width` 1/2/4 bytes.
pub fn bits(shape: &[i32], width: i32, key: Option<&Array>) -> Result<Array> {
    if shape.iter().any(|&d| d < 0) {
        return Err(Error::invalid(
            "bits",
            format!("negative dimensions are not allowed, found {shape:?}"),
        ));
    }
    bits_dtype("bits", width)?;
    let key = resolve("bits", key)?;
    Array::from_primitive(
        RandomBits {
            shape: shape.to_vec(),
            width,
        },
        vec![key],
    )
}

/// The largest value below 1 in `dtype`, held as float32.
fn below_one(op: &str, dtype: Dtype) -> Result<Array> {
    let v = match dtype {
        Dtype::Float32 => 1.0 - f32::EPSILON / 2.0,
        Dtype::Float16 => 1.0 - 2f32.powi(-11),
        Dtype::Bfloat16 => 1.0 - 2f32.powi(-8),
        other => {
            return Err(Error::invalid(
                op,
                format!("uniform samples need float32, float16 or bfloat16, found {other}"),
            ))
        }
    };
    Ok(Array::scalar(v))
}

/// Samples uniform on [low, high) of `shape` (low/high broadcast to it).
pub fn uniform(
    low: &Array,
    high: &Array,
    shape: &[i32],
    dtype: Dtype,
    key: Option<&Array>,
) -> Result<Array> {
    if !dtype.is_float() {
        return Err(Error::invalid(
            "uniform",
            format!("can only generate real floating point types, found {dtype}"),
        ));
    }
    let lo = cast_to(low, dtype)?;
    let hi = cast_to(high, dtype)?;
    let range = subtract(&hi, &lo)?;
    let out_shape = broadcast_shapes("uniform", shape, range.shape())?;
    if out_shape != shape {
        return Err(Error::invalid(
            "uniform",
            format!(
                "cannot generate random values of shape {shape:?} from broadcast shape {out_shape:?}"
            ),
        ));
    }
    let upper = below_one("uniform", dtype)?;
    let maxval = Array::scalar(u32::MAX as f32);
    let out = bits(shape, 4, key)?;
    let out = divide(&out, &maxval)?;
    let out = cast_to(&minimum(&out, &upper)?, dtype)?;
    add(&multiply(&range, &out)?, &lo)
}

/// Uniform on [0, 1) in `dtype`.
pub fn uniform_unit(shape: &[i32], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    uniform(
        &Array::scalar_of(0.0, dtype),
        &Array::scalar_of(1.0, dtype),
        shape,
        dtype,
        key,
    )
}

/// Normal samples: `loc + scale * sqrt(2) * erfinv(u)` for u uniform on
/// (-1, 1) in float32, the product rounded to `dtype`.
pub fn normal(
    shape: &[i32],
    dtype: Dtype,
    loc: Option<&Array>,
    scale: Option<&Array>,
    key: Option<&Array>,
) -> Result<Array> {
    if !dtype.is_float() {
        return Err(Error::invalid(
            "normal",
            format!("only real floating point types are supported, found {dtype}"),
        ));
    }
    let low = Array::scalar(f32::from_bits((-1.0f32).to_bits() - 1));
    let high = Array::scalar(1.0f32);
    let samples = uniform(&low, &high, shape, Dtype::Float32, key)?;
    let mut applied = Array::scalar_of(std::f64::consts::SQRT_2, dtype);
    if let Some(s) = scale {
        applied = multiply(&applied, &cast_to(s, dtype)?)?;
    }
    let samples = cast_to(&erfinv(&samples)?, dtype)?;
    let samples = multiply(&applied, &samples)?;
    match loc {
        Some(l) => add(&cast_to(l, dtype)?, &samples),
        None => Ok(samples),
    }
}

/// Integers uniform on [low, high) of an integer `dtype`.
pub fn randint(
    low: &Array,
    high: &Array,
    shape: &[i32],
    dtype: Dtype,
    key: Option<&Array>,
) -> Result<Array> {
    if dtype.is_inexact() {
        return Err(Error::invalid(
            "randint",
            format!("only integer dtypes and bool are accepted, found {dtype}"),
        ));
    }
    let u = uniform(low, high, shape, Dtype::Float32, key)?;
    let out = astype(&floor(&u)?, dtype)?;
    // low/high may not be exact in float32: clamp to [low, high - 1].
    let hi = cast_to(
        &subtract(high, &Array::scalar_of(1.0, high.dtype()))?,
        dtype,
    )?;
    maximum(&minimum(&out, &hi)?, &cast_to(low, dtype)?)
}

/// Booleans that are true with probability `p` (default shape: p's shape).
pub fn bernoulli(p: &Array, shape: Option<&[i32]>, key: Option<&Array>) -> Result<Array> {
    if !p.dtype().is_float() {
        return Err(Error::invalid(
            "bernoulli",
            format!(
                "the probability p must be a float type, found {}",
                p.dtype()
            ),
        ));
    }
    let shape = shape.unwrap_or(p.shape()).to_vec();
    // p on the scale [0, nextafter(2^32 - 1, +inf)]: p >= 1 is always true.
    let upper = Array::scalar(f32::from_bits((u32::MAX as f32).to_bits() + 1));
    let res = less(&bits(&shape, 4, key)?, &multiply(p, &upper)?)?;
    if res.shape() != shape.as_slice() {
        return Err(Error::invalid(
            "bernoulli",
            format!(
                "shape of p {:?} is incompatible with the shape {shape:?}",
                p.shape()
            ),
        ));
    }
    Ok(res)
}

/// Normal samples truncated to [lower, upper] (inverse-CDF method as in
/// JAX and MLX); default shape: the broadcast of lower and upper.
pub fn truncated_normal(
    lower: &Array,
    upper: &Array,
    shape: Option<&[i32]>,
    dtype: Dtype,
    key: Option<&Array>,
) -> Result<Array> {
    if !dtype.is_float() {
        return Err(Error::invalid(
            "truncated_normal",
            format!("only floating point dtypes are accepted, found {dtype}"),
        ));
    }
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => broadcast_shapes("truncated_normal", lower.shape(), upper.shape())?,
    };
    let sqrt2 = Array::scalar_of(std::f64::consts::SQRT_2, dtype);
    let lower = cast_to(lower, dtype)?;
    let upper = cast_to(upper, dtype)?;
    let a = erf(&divide(&lower, &sqrt2)?)?;
    let b = erf(&divide(&upper, &sqrt2)?)?;
    let u = uniform(&a, &b, &shape, dtype, key)?;
    let out = multiply(&sqrt2, &erfinv(&u)?)?;
    maximum(&minimum(&upper, &out)?, &lower)
}

/// Gumbel samples: `-log(-log(u))` for u uniform on [0, 1).
pub fn gumbel(shape: &[i32], dtype: Dtype, key: Option<&Array>) -> Result<Array> {
    negative(&log(&negative(&log(&uniform_unit(shape, dtype, key)?)?)?)?)
}

/// Samples indices from the categorical distribution of `logits` along
/// `axis`. `shape` (broadcast-compatible with the logits without `axis`)
/// or `num_samples` (a trailing sample axis) choose the output shape; by
/// default one sample per distribution.
pub fn categorical(
    logits: &Array,
    axis: i32,
    shape: Option<&[i32]>,
    num_samples: Option<i32>,
    key: Option<&Array>,
) -> Result<Array> {
    let ax = crate::shape::normalize_axis("categorical", axis, logits.ndim())?;
    if shape.is_some() && num_samples.is_some() {
        return Err(Error::invalid(
            "categorical",
            "at most one of shape and num_samples may be given",
        ));
    }
    if let Some(n) = num_samples {
        let l = crate::ops::expand_dims(logits, &[-1])?;
        let mut s = l.shape().to_vec();
        s.remove(ax);
        *s.last_mut().expect("ndim >= 1") = n;
        return categorical_impl(&l, ax, &s, key);
    }
    let mut reduced = logits.shape().to_vec();
    reduced.remove(ax);
    let shape = match shape {
        Some(s) => {
            if broadcast_shapes("categorical", s, &reduced)? != s {
                return Err(Error::invalid(
                    "categorical",
                    format!(
                        "requested shape {s:?} is not broadcast compatible with the \
                         reduced logits shape {reduced:?}"
                    ),
                ));
            }
            s.to_vec()
        }
        None => reduced,
    };
    categorical_impl(logits, ax, &shape, key)
}

fn categorical_impl(
    logits: &Array,
    axis: usize,
    shape: &[i32],
    key: Option<&Array>,
) -> Result<Array> {
    let n = logits.shape()[axis];
    if n > 0 && logits.size() == n as usize && !shape.is_empty() {
        // One distribution: MLX samples it by inverse CDF.
        return categorical_inverse_cdf(&crate::ops::reshape(logits, &[n])?, shape, key);
    }
    let offset = axis + shape.len() + 1 - logits.ndim();
    let mut gshape = shape.to_vec();
    gshape.insert(offset, n);
    let g = gumbel(&gshape, Dtype::Float32, key)?;
    argmax(&add(&g, logits)?, offset as i32, false)
}

/// Samples of shape `shape` from one distribution (1-D `logits`), as MLX
/// does: weights exp(x − max) (uniform over the maximal entries when the
/// max is infinite), exclusive cumulative sum, then for uniform draws scaled
/// by the total the last bin whose start is ≤ the draw.
fn categorical_inverse_cdf(logits: &Array, shape: &[i32], key: Option<&Array>) -> Result<Array> {
    use crate::ops::{cumsum, equal, exp, isinf, max, searchsorted, sum, where_};
    let dtype = crate::promote_types(logits.dtype(), Dtype::Float32);
    let x = astype(logits, dtype)?;
    let m = max(&x, &[], false)?;
    let w = where_(
        &isinf(&m)?,
        &astype(&equal(&x, &m)?, dtype)?,
        &exp(&subtract(&x, &m)?)?,
    )?;
    let cdf = cumsum(&w, Some(0), false, false)?;
    let u = multiply(
        &uniform_unit(shape, Dtype::Float32, key)?,
        &sum(&w, &[], false)?,
    )?;
    subtract(&searchsorted(&cdf, &u, "right")?, &Array::scalar(1u32))
}

/// Index of the first maximum along `axis`.
fn argmax(a: &Array, axis: i32, keepdims: bool) -> Result<Array> {
    crate::ops::argmax(a, Some(axis), keepdims)
}

/// Row `i` of a 2-D array, the way MLX takes the halves of a split key
/// (Split along axis 0, then Reshape).
fn row(a: &Array, i: i32) -> Result<Array> {
    if a.ndim() != 2 || i < 0 || i >= a.shape()[0] {
        return Err(Error::invalid(
            "split",
            format!("no row {i} in shape {:?}", a.shape()),
        ));
    }
    let parts = crate::ops::split(a, a.shape()[0], 0)?;
    crate::ops::reshape(&parts[i as usize], &a.shape()[1..])
}
