//! The [`Module`] trait: a layer with named parameters and a forward pass.

use super::parameters::join;
use super::Parameters;
use crate::{Array, Error, Result};

/// A layer or model: named parameters plus a forward pass, as MLX's
/// `nn.Module`.
///
/// Implementors list their arrays through the two visitors (children under
/// a dotted prefix, see [`visit_child`](Module::visit_child)); `parameters`
/// and `update` come for free. Layers whose call takes more than one array
/// (attention, RoPE with an offset) add their own methods next to
/// [`forward`](Module::forward).
pub trait Module {
    /// Calls `f(name, array)` for every parameter, in a fixed order.
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array));

    /// Calls `f(name, slot)` for every parameter, in the same order, so
    /// the slot can be replaced.
    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array));

    /// The layer applied to one input.
    fn forward(&self, x: &Array) -> Result<Array>;

    /// The parameters as a flat, ordered map (`"query_proj.weight"`, ...).
    fn parameters(&self) -> Parameters {
        let mut out = Parameters::new();
        self.visit_parameters(&mut |n, a| {
            out.insert(n, a.clone());
        });
        out
    }

    /// Replaces the parameters named in `params` (others keep their value),
    /// like MLX's `Module.update`. A name the module does not have is an
    /// error (MLX's `strict=True`), and nothing is changed then.
    fn update(&mut self, params: &Parameters) -> Result<()> {
        let mut known = Vec::new();
        self.visit_parameters(&mut |n, _| known.push(n.to_string()));
        if let Some(bad) = params.names().find(|n| !known.iter().any(|k| k == n)) {
            return Err(Error::invalid(
                "Module::update",
                format!("the module has no parameter {bad:?}; its parameters are {known:?}"),
            ));
        }
        self.visit_parameters_mut(&mut |n, slot| {
            if let Some(a) = params.get(n) {
                *slot = a.clone();
            }
        });
        Ok(())
    }
}

/// For [`Module`] implementors: visits `child`'s parameters under `prefix.`.
pub fn visit_child(prefix: &str, child: &dyn Module, f: &mut dyn FnMut(&str, &Array)) {
    child.visit_parameters(&mut |n, a| f(&join(prefix, n), a));
}

/// For [`Module`] implementors: the mutable form of [`visit_child`].
pub fn visit_child_mut(prefix: &str, child: &mut dyn Module, f: &mut dyn FnMut(&str, &mut Array)) {
    child.visit_parameters_mut(&mut |n, a| f(&join(prefix, n), a));
}
