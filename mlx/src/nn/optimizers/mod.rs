//! Optimizers with MLX's update rules (`mlx.optimizers`): [`SGD`],
//! [`Adam`], [`AdamW`].
//!
//! The optimizer struct holds only hyperparameters; its state is a
//! [`Parameters`] map of arrays, threaded through explicitly, so a
//! training step `(params, state, batch) → (params, state, loss)` is a pure
//! function of arrays that can be traced and exported. The state is laid
//! out as MLX flattens `optimizer.state`: `"step"` (uint64), then
//! `"learning_rate"` (float32, so it can be changed between steps), then
//! each parameter's slots (`"layers.0.weight.v"`, ...).

mod adam;
mod sgd;

pub use adam::{Adam, AdamW};
pub use sgd::SGD;

use super::Parameters;
use crate::ops::{add, astype, scalar_like};
use crate::{Array, Dtype, Result};

/// The per-step values every update rule can read.
#[derive(Clone, Debug)]
pub struct StepContext {
    /// The learning rate, a float32 0-d array from the state.
    pub learning_rate: Array,
    /// The step count after this step's increment (uint64, 0-d).
    pub step: Array,
}

/// An update rule applied parameter by parameter, as MLX's `Optimizer`.
pub trait Optimizer {
    /// The learning rate the state starts with.
    fn learning_rate(&self) -> f64;

    /// The slots of one parameter's state (e.g. `[("v", zeros)]`), in the
    /// order MLX creates them.
    fn init_single(&self, parameter: &Array) -> Result<Parameters>;

    /// One parameter's update: its new value and its new slots.
    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        slots: &Parameters,
        ctx: &StepContext,
    ) -> Result<(Array, Parameters)>;

    /// The initial state for `params`: `step` 0, `learning_rate`, then
    /// every parameter's slots under its name.
    fn init(&self, params: &Parameters) -> Result<Parameters> {
        let mut state = Parameters::new();
        state.insert("step", Array::scalar(0u64));
        state.insert("learning_rate", Array::scalar(self.learning_rate() as f32));
        for (name, p) in params {
            state.extend_prefixed(name, self.init_single(p)?);
        }
        Ok(state)
    }

    /// One optimisation step: increments `step`, updates every parameter
    /// that has a gradient (the others are returned unchanged) and returns
    /// the new parameters and state. Slots missing from `state` are
    /// initialised first, as MLX does on the first update.
    fn apply_gradients(
        &self,
        gradients: &Parameters,
        params: &Parameters,
        state: &Parameters,
    ) -> Result<(Parameters, Parameters)> {
        let op = "Optimizer::apply_gradients";
        let step = state
            .get("step")
            .cloned()
            .unwrap_or_else(|| Array::scalar(0u64));
        let step = add(&step, &scalar_like(&step, 1.0))?;
        let learning_rate = match state.get("learning_rate") {
            Some(lr) => lr.clone(),
            None => Array::scalar(self.learning_rate() as f32),
        };
        let mut new_state = state.clone();
        new_state.insert("step", step.clone());
        new_state.insert("learning_rate", learning_rate.clone());
        let ctx = StepContext {
            learning_rate,
            step,
        };
        let mut new_params = params.clone();
        for (name, g) in gradients {
            let p = params.require(op, name)?;
            let mut slots = state.under(name);
            if slots.is_empty() {
                slots = self.init_single(p)?;
            }
            let (p2, slots2) = self.apply_single(g, p, &slots, &ctx)?;
            new_params.insert(name, p2);
            new_state.extend_prefixed(name, slots2);
        }
        Ok((new_params, new_state))
    }
}

/// `lr` in the gradient's dtype (MLX's `learning_rate.astype(g.dtype)`).
fn lr_as(lr: &Array, dtype: Dtype) -> Result<Array> {
    if lr.dtype() == dtype {
        Ok(lr.clone())
    } else {
        astype(lr, dtype)
    }
}
