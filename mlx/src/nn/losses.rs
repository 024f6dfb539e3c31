//! Loss functions with MLX's definitions (`mlx.nn.losses`), built from the
//! same operations in the same order.

use crate::ops::{
    add, clip, expand_dims, log, logaddexp, logsumexp, max, mean, multiply, negative,
    normalize_axis, scalar_like, square, squeeze, stop_gradient, subtract, sum, take_along_axis,
};
use crate::{Array, Error, Result};

/// How the per-element losses are combined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// Keep the per-element losses.
    #[default]
    None,
    /// Their mean.
    Mean,
    /// Their sum.
    Sum,
}

fn reduce(loss: Array, reduction: Reduction) -> Result<Array> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => mean(&loss, &[], false),
        Reduction::Sum => sum(&loss, &[], false),
    }
}

fn apply_weights(op: &str, loss: Array, weights: Option<&Array>) -> Result<Array> {
    match weights {
        None => Ok(loss),
        Some(w) if w.shape() == loss.shape() => multiply(&loss, w),
        Some(w) => Err(Error::invalid(
            op,
            format!(
                "weights with shape {:?} are not the same shape as the loss {:?}",
                w.shape(),
                loss.shape()
            ),
        )),
    }
}

/// Cross entropy of unnormalised `logits` against `targets`, which are
/// either class indices (the logits' shape without `axis`) or
/// probabilities (the logits' shape). Optional per-target `weights`,
/// label smoothing in [0, 1). MLX's default reduction is
/// [`Reduction::None`].
pub fn cross_entropy(
    logits: &Array,
    targets: &Array,
    weights: Option<&Array>,
    axis: i32,
    label_smoothing: f64,
    reduction: Reduction,
) -> Result<Array> {
    let op = "cross_entropy";
    if !(0.0..1.0).contains(&label_smoothing) {
        return Err(Error::invalid(
            op,
            format!("label smoothing must be in [0, 1), found {label_smoothing}"),
        ));
    }
    let ax = normalize_axis(op, axis, logits.ndim())?;
    let as_probs = targets.ndim() == logits.ndim();
    let mut expected = logits.shape().to_vec();
    if !as_probs {
        expected.remove(ax);
    }
    if targets.shape() != expected.as_slice() {
        return Err(Error::invalid(
            op,
            format!(
                "targets shape {:?} does not match logits shape {:?}",
                targets.shape(),
                logits.shape()
            ),
        ));
    }
    if !as_probs && !targets.dtype().is_integer() {
        return Err(Error::invalid(
            op,
            format!(
                "class-index targets must be integers, found dtype {}",
                targets.dtype()
            ),
        ));
    }
    let ax = ax as i32;
    // Shift by the (constant) maximum for stability, as MLX does.
    let shift = stop_gradient(&max(logits, &[ax], true)?)?;
    let logits = subtract(logits, &shift)?;
    let score = if as_probs {
        sum(&multiply(&logits, targets)?, &[ax], false)?
    } else {
        let picked = take_along_axis(&logits, &expand_dims(targets, &[ax])?, Some(ax))?;
        squeeze(&picked, &[ax])?
    };
    let lse = logsumexp(&logits, &[ax], false)?;
    let loss = if label_smoothing > 0.0 {
        let ls = label_smoothing;
        let adjusted = multiply(&scalar_like(&score, 1.0 - ls), &score)?;
        let mean_logits = mean(&logits, &[ax], false)?;
        let smoothed = multiply(&negative(&mean_logits)?, &scalar_like(&mean_logits, ls))?;
        add(&subtract(&lse, &adjusted)?, &smoothed)?
    } else {
        subtract(&lse, &score)?
    };
    reduce(apply_weights(op, loss, weights)?, reduction)
}

/// Squared error `(predictions − targets)²`; MLX's default reduction is
/// [`Reduction::Mean`].
pub fn mse_loss(predictions: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    if predictions.shape() != targets.shape() {
        return Err(Error::invalid(
            "mse_loss",
            format!(
                "predictions shape {:?} does not match targets shape {:?}",
                predictions.shape(),
                targets.shape()
            ),
        ));
    }
    reduce(square(&subtract(predictions, targets)?)?, reduction)
}

/// Binary cross entropy of `inputs` against targets in {0, 1}.
/// With `with_logits` (MLX's default) the inputs are logits and the loss
/// is `log(1 + eˣ) − x·t`; otherwise they are probabilities and the logs
/// are clipped below at −100. MLX's default reduction is [`Reduction::Mean`].
pub fn binary_cross_entropy(
    inputs: &Array,
    targets: &Array,
    weights: Option<&Array>,
    with_logits: bool,
    reduction: Reduction,
) -> Result<Array> {
    let op = "binary_cross_entropy";
    if inputs.shape() != targets.shape() {
        return Err(Error::invalid(
            op,
            format!(
                "inputs shape {:?} does not match targets shape {:?}",
                inputs.shape(),
                targets.shape()
            ),
        ));
    }
    let loss = if with_logits {
        let softplus = logaddexp(&scalar_like(inputs, 0.0), inputs)?;
        subtract(&softplus, &multiply(inputs, targets)?)?
    } else {
        let floor = |a: Array| -> Result<Array> {
            let lo = scalar_like(&a, -100.0);
            clip(&a, Some(&lo), None)
        };
        let log_p = floor(log(inputs)?)?;
        let log_q = floor(log(&subtract(&scalar_like(inputs, 1.0), inputs)?)?)?;
        let not_t = subtract(&scalar_like(targets, 1.0), targets)?;
        let total = add(&multiply(targets, &log_p)?, &multiply(&not_t, &log_q)?)?;
        negative(&total)?
    };
    reduce(apply_weights(op, loss, weights)?, reduction)
}
