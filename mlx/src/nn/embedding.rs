//! [`Embedding`]: a lookup table from integer ids to vectors.

use super::Module;
use crate::ops::{matmul, take, transpose};
use crate::{random, Array, Dtype, Error, Result};

/// Maps each integer of the input to a row of `weight`, as MLX's
/// `nn.Embedding`.
#[derive(Clone, Debug)]
pub struct Embedding {
    /// (num_embeddings, dims).
    pub weight: Array,
}

impl Embedding {
    /// A table initialised as MLX does: normal samples with standard
    /// deviation `1/√dims`, from the global random key.
    pub fn new(num_embeddings: i32, dims: i32) -> Result<Embedding> {
        if num_embeddings <= 0 || dims <= 0 {
            return Err(Error::invalid(
                "Embedding",
                format!("sizes must be positive, found ({num_embeddings}, {dims})"),
            ));
        }
        let scale = Array::scalar((1.0 / dims as f64).sqrt() as f32);
        let weight = random::normal(
            &[num_embeddings, dims],
            Dtype::Float32,
            None,
            Some(&scale),
            None,
        )?;
        Ok(Embedding { weight })
    }

    /// `x @ weightᵀ`: the table used as an output projection (tied weights).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        matmul(x, &transpose(&self.weight, &[])?)
    }
}

impl Module for Embedding {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        f("weight", &self.weight);
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        f("weight", &mut self.weight);
    }

    /// `weight[x]`: rows of the table, output shape `x.shape + (dims,)`.
    fn forward(&self, x: &Array) -> Result<Array> {
        if !x.dtype().is_integer() {
            return Err(Error::invalid(
                "Embedding",
                format!("expected integer ids, found dtype {}", x.dtype()),
            ));
        }
        take(&self.weight, x, Some(0))
    }
}
