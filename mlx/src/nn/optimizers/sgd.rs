//! Stochastic gradient descent with momentum, dampening, Nesterov
//! momentum and weight decay (MLX's `optim.SGD`).

use super::{lr_as, Optimizer, StepContext};
use crate::nn::Parameters;
use crate::ops::{add, multiply, scalar_like, subtract, zeros_like};
use crate::{Array, Error, Result};

/// `v ← μ·v + (1 − τ)·g`, `w ← w − λ·v` (plain `w ← w − λ·g` without
/// momentum); weight decay adds `wd·w` to the gradient first.
#[derive(Clone, Debug)]
pub struct SGD {
    /// λ, the initial value of the state's `learning_rate`.
    pub learning_rate: f64,
    /// μ (0 disables momentum).
    pub momentum: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// τ, dampening of the momentum.
    pub dampening: f64,
    /// Nesterov momentum (needs momentum > 0 and no dampening).
    pub nesterov: bool,
}

impl SGD {
    /// Plain SGD: no momentum, weight decay or dampening (MLX's defaults).
    pub fn new(learning_rate: f64) -> SGD {
        SGD {
            learning_rate,
            momentum: 0.0,
            weight_decay: 0.0,
            dampening: 0.0,
            nesterov: false,
        }
    }

    fn check(&self) -> Result<()> {
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::invalid(
                "SGD",
                format!(
                    "Nesterov momentum requires a momentum and zero dampening, found momentum {} and dampening {}",
                    self.momentum, self.dampening
                ),
            ));
        }
        Ok(())
    }
}

impl Optimizer for SGD {
    fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    /// `v`: zeros like the parameter (created even without momentum, as MLX).
    fn init_single(&self, parameter: &Array) -> Result<Parameters> {
        let mut s = Parameters::new();
        s.insert("v", zeros_like(parameter)?);
        Ok(s)
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        slots: &Parameters,
        ctx: &StepContext,
    ) -> Result<(Array, Parameters)> {
        self.check()?;
        let mut g = gradient.clone();
        if self.weight_decay != 0.0 {
            let decay = multiply(&scalar_like(parameter, self.weight_decay), parameter)?;
            g = add(&g, &decay)?;
        }
        let lr = lr_as(&ctx.learning_rate, g.dtype())?;
        if self.momentum <= 0.0 {
            let p = subtract(parameter, &multiply(&lr, &g)?)?;
            return Ok((p, slots.clone()));
        }
        let v = slots.require("SGD", "v")?;
        let mom = self.momentum;
        let v = multiply(&scalar_like(v, mom), v)?;
        let v = if self.dampening > 0.0 {
            let kept = 1.0 - self.dampening;
            add(&v, &multiply(&scalar_like(&g, kept), &g)?)?
        } else {
            add(&v, &g)?
        };
        let update = if self.nesterov {
            add(&g, &multiply(&scalar_like(&v, mom), &v)?)?
        } else {
            v.clone()
        };
        let mut s = slots.clone();
        s.insert("v", v);
        Ok((subtract(parameter, &multiply(&lr, &update)?)?, s))
    }
}
