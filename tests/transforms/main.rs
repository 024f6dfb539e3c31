//! Transforms: evaluation of the lazy graph, `compile`, and the derivative
//! rules (`vjp`, `jvp`, `grad`, `value_and_grad`) against finite
//! differences and MLX's gradients, eagerly and inside exported functions.

#[path = "../common/mod.rs"]
mod common;

mod autodiff;
mod autodiff_fixtures;
mod autodiff_ops;
mod compile;
mod graph;
