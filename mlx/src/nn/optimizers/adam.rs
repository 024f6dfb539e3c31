//! Adam and AdamW (MLX's `optim.Adam`, `optim.AdamW`; bias correction off
//! by default, as in MLX).

use super::{lr_as, Optimizer, StepContext};
use crate::nn::Parameters;
use crate::ops::{
    add, astype, divide, multiply, power, rsqrt, scalar_like, sqrt, square, subtract, zeros_like,
};
use crate::{Array, Error, Result};

/// `m ← β₁m + (1 − β₁)g`, `v ← β₂v + (1 − β₂)g²`,
/// `w ← w − λ·m / (√v + ε)` (with bias correction when enabled).
#[derive(Clone, Debug)]
pub struct Adam {
    /// λ, the initial value of the state's `learning_rate`.
    pub learning_rate: f64,
    /// (β₁, β₂), each in [0, 1).
    pub betas: (f64, f64),
    /// ε added to the denominator.
    pub eps: f64,
    /// Divide the moments by `1 − βᵗ` (MLX's default: off).
    pub bias_correction: bool,
}

impl Adam {
    /// MLX's defaults: betas (0.9, 0.999), eps 1e-8, no bias correction.
    pub fn new(learning_rate: f64) -> Adam {
        Adam {
            learning_rate,
            betas: (0.9, 0.999),
            eps: 1e-8,
            bias_correction: false,
        }
    }

    fn check(&self, op: &str) -> Result<()> {
        for (i, b) in [self.betas.0, self.betas.1].into_iter().enumerate() {
            if !(0.0..1.0).contains(&b) {
                return Err(Error::invalid(
                    op,
                    format!("beta{} should be in [0, 1), found {b}", i + 1),
                ));
            }
        }
        if self.eps.is_nan() || self.eps < 0.0 {
            return Err(Error::invalid(
                op,
                format!("epsilon should be >= 0, found {}", self.eps),
            ));
        }
        Ok(())
    }

    /// The Adam update of `parameter` (already decayed for AdamW).
    fn update(
        &self,
        gradient: &Array,
        parameter: &Array,
        slots: &Parameters,
        ctx: &StepContext,
    ) -> Result<(Array, Parameters)> {
        let g = gradient;
        let lr = lr_as(&ctx.learning_rate, g.dtype())?;
        let (b1, b2) = (self.betas.0, self.betas.1);
        let m = slots.require("Adam", "m")?;
        let v = slots.require("Adam", "v")?;
        let m = add(
            &multiply(&scalar_like(m, b1), m)?,
            &multiply(&scalar_like(g, 1.0 - b1), g)?,
        )?;
        let sq = square(g)?;
        let v = add(
            &multiply(&scalar_like(v, b2), v)?,
            &multiply(&scalar_like(&sq, 1.0 - b2), &sq)?,
        )?;
        let eps = self.eps;
        let new_p = if self.bias_correction {
            // 1 − βᵗ with β a float32 scalar and t the uint64 step.
            let one_minus_pow = |b: f64| -> Result<Array> {
                let bt = power(&Array::scalar(b as f32), &ctx.step)?;
                subtract(&scalar_like(&bt, 1.0), &bt)
            };
            let c1 = astype(&divide(&lr, &one_minus_pow(b1)?)?, g.dtype())?;
            let c2 = astype(&rsqrt(&one_minus_pow(b2)?)?, g.dtype())?;
            let numerator = multiply(&c1, &m)?;
            let den = multiply(&sqrt(&v)?, &c2)?;
            let den = add(&den, &scalar_like(&den, eps))?;
            subtract(parameter, &divide(&numerator, &den)?)?
        } else {
            let root = sqrt(&v)?;
            let den = add(&root, &scalar_like(&root, eps))?;
            subtract(parameter, &divide(&multiply(&lr, &m)?, &den)?)?
        };
        let mut s = slots.clone();
        s.insert("m", m);
        s.insert("v", v);
        Ok((new_p, s))
    }
}

/// `m` and `v`: zeros like the parameter.
fn init_moments(parameter: &Array) -> Result<Parameters> {
    let mut s = Parameters::new();
    s.insert("m", zeros_like(parameter)?);
    s.insert("v", zeros_like(parameter)?);
    Ok(s)
}

impl Optimizer for Adam {
    fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    fn init_single(&self, parameter: &Array) -> Result<Parameters> {
        init_moments(parameter)
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        slots: &Parameters,
        ctx: &StepContext,
    ) -> Result<(Array, Parameters)> {
        self.check("Adam")?;
        self.update(gradient, parameter, slots, ctx)
    }
}

/// Adam with decoupled weight decay: the parameter is first scaled by
/// `1 − λ·wd`, then updated as [`Adam`].
#[derive(Clone, Debug)]
pub struct AdamW {
    /// The Adam part (learning rate, betas, eps, bias correction).
    pub adam: Adam,
    /// wd (MLX's default 0.01).
    pub weight_decay: f64,
}

impl AdamW {
    /// MLX's defaults: Adam's, plus weight decay 0.01.
    pub fn new(learning_rate: f64) -> AdamW {
        AdamW {
            adam: Adam::new(learning_rate),
            weight_decay: 0.01,
        }
    }
}

impl Optimizer for AdamW {
    fn learning_rate(&self) -> f64 {
        self.adam.learning_rate
    }

    fn init_single(&self, parameter: &Array) -> Result<Parameters> {
        init_moments(parameter)
    }

    fn apply_single(
        &self,
        gradient: &Array,
        parameter: &Array,
        slots: &Parameters,
        ctx: &StepContext,
    ) -> Result<(Array, Parameters)> {
        self.adam.check("AdamW")?;
        let lr = lr_as(&ctx.learning_rate, gradient.dtype())?;
        let decay = multiply(&lr, &scalar_like(&lr, self.weight_decay))?;
        let keep = subtract(&scalar_like(&decay, 1.0), &decay)?;
        let decayed = multiply(parameter, &keep)?;
        self.adam.update(gradient, &decayed, slots, ctx)
    }
}
