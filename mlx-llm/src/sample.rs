//! Samplers with mlx-lm's semantics (sample_utils.make_sampler): the same
//! filters in the same order (top-p, min-p, top-k), each on log-probabilities
//! in the logits' dtype, then `categorical(logprobs / temp)`. A seeded
//! generation draws its keys as mlx-lm's global state would after
//! `mx.random.seed(seed)` (but from a sequence of its own, so generations on
//! other threads cannot interleave), so a seed reproduces mlx-lm's token ids.

use crate::error::{LlmError, Result};
use mlx::{ops, random, Array, Dtype};

/// Sampling parameters; the defaults are greedy.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// 0 picks the argmax.
    pub temp: f64,
    /// Nucleus threshold; off unless 0 < top_p < 1.
    pub top_p: f64,
    /// Keep tokens with probability >= min_p * the top one; off at 0.
    pub min_p: f64,
    /// Keep the k most likely tokens; off at 0.
    pub top_k: usize,
    /// Draw keys as MLX's global generator does after `seed(seed)`, from a
    /// sequence owned by the generation; `None` draws from the global one.
    pub seed: Option<u64>,
}

impl Sampling {
    pub fn greedy() -> Sampling {
        Sampling::default()
    }

    /// Checks the ranges mlx-lm checks.
    pub fn validate(&self, vocab: usize) -> Result<()> {
        if self.temp.is_nan() || self.temp < 0.0 {
            return Err(LlmError::BadSampling(format!(
                "temperature must be >= 0, got {}",
                self.temp
            )));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return Err(LlmError::BadSampling(format!(
                "min-p must be in [0, 1], got {}",
                self.min_p
            )));
        }
        if !(0.0..=1.0).contains(&self.top_p) {
            return Err(LlmError::BadSampling(format!(
                "top-p must be in [0, 1], got {}",
                self.top_p
            )));
        }
        if self.top_k > 0 && self.top_k >= vocab {
            return Err(LlmError::BadSampling(format!(
                "top-k must be in (0, {vocab}) (the vocabulary size), got {}",
                self.top_k
            )));
        }
        Ok(())
    }
}

/// mlx-lm's generate_step: `logprobs = logits - logsumexp(logits)` over the
/// whole `[1, vocab]` row, in the logits' dtype.
pub fn log_probs(logits: &Array) -> Result<Array> {
    let axes: Vec<i32> = (0..logits.ndim() as i32).collect();
    let lse = ops::logsumexp(logits, &axes, true)?;
    Ok(ops::subtract(logits, &lse)?)
}

/// One token id from `logprobs` `[1, vocab]`; `key` (or, without one, the
/// global generator) drives the draw when `s.temp` is not zero.
pub fn sample(logprobs: &Array, s: &Sampling, key: Option<&Array>) -> Result<u32> {
    let token = if s.temp == 0.0 {
        ops::argmax(logprobs, Some(-1), false)?
    } else {
        let mut lp = logprobs.clone();
        if 0.0 < s.top_p && s.top_p < 1.0 {
            lp = top_p(&lp, s.top_p)?;
        }
        if s.min_p != 0.0 {
            lp = min_p(&lp, s.min_p)?;
        }
        if s.top_k > 0 {
            lp = top_k(&lp, s.top_k)?;
        }
        let scaled = ops::multiply(&lp, &scalar(1.0 / s.temp, lp.dtype()))?;
        random::categorical(&scaled, -1, None, None, key)?
    };
    let id = ops::astype(&token, Dtype::Int32)?.to_vec::<i32>()?;
    Ok(id[0] as u32)
}

fn scalar(v: f64, dtype: Dtype) -> Array {
    Array::scalar_of(v, dtype)
}

/// Drops the least likely tokens whose summed probability stays below 1 - p
/// (mlx-lm's apply_top_p: sorted ascending, reverse exclusive cumsum in f32).
fn top_p(lp: &Array, p: f64) -> Result<Array> {
    let sorted = ops::sort(lp, Some(-1))?;
    let probs = ops::exp(&ops::astype(&sorted, Dtype::Float32)?)?;
    let mass_above = ops::cumsum(&probs, Some(-1), true, false)?;
    let first = |a: &Array| ops::slice(a, &[0, 0], &[1, 1], &[1, 1]);
    let total = ops::add(&first(&mass_above)?, &first(&probs)?)?;
    let limit = ops::multiply(&scalar(p, Dtype::Float32), &total)?;
    let dropped = ops::sum(&ops::greater_equal(&mass_above, &limit)?, &[-1], true)?;
    let threshold = ops::take_along_axis(&sorted, &ops::astype(&dropped, Dtype::Int32)?, Some(-1))?;
    mask_below(lp, &ops::less(lp, &threshold)?)
}

/// Drops tokens less likely than min_p times the most likely (mlx-lm's
/// apply_min_p with min_tokens_to_keep = 1).
fn min_p(lp: &Array, p: f64) -> Result<Array> {
    let top = ops::max(lp, &[-1], true)?;
    let floor = ops::add(&top, &scalar(p.ln(), lp.dtype()))?;
    mask_below(lp, &ops::less(lp, &floor)?)
}

/// Keeps the k most likely tokens (mlx-lm's apply_top_k: argpartition of
/// the negated log-probabilities, everything past k set to -inf).
fn top_k(lp: &Array, k: usize) -> Result<Array> {
    let vocab = lp.shape()[1];
    let order = ops::argpartition(&ops::negative(lp)?, k as i32 - 1, Some(-1))?;
    let rest = ops::slice(&order, &[0, k as i32], &[1, vocab], &[1, 1])?;
    let neg_inf = ops::full(rest.shape(), &scalar(f64::NEG_INFINITY, lp.dtype()), None)?;
    Ok(ops::put_along_axis(lp, &rest, &neg_inf, Some(-1))?)
}

fn mask_below(lp: &Array, drop: &Array) -> Result<Array> {
    let neg_inf = scalar(f64::NEG_INFINITY, lp.dtype());
    Ok(ops::where_(drop, &neg_inf, lp)?)
}
