//! Graph transforms: evaluation, tracing (shared by compile and export),
//! and later compile and autodiff.

/// `PrimitiveState` for a node that exists only while a graph runs (a
/// fused chain, a recognised subgraph, merged products, a tape call): it
/// has no registry entry and no file form, so a writer handed one reports
/// it instead of writing a bad file (exports record the graph it stands
/// for). `$name` is the node's name, read from `self` as `$s`; with
/// `steps`, its state is the names of its `steps` field's primitives.
macro_rules! run_time_node_state {
    ($ty:ty, $what:literal, |$s:ident| $name:expr) => {
        run_time_node_state!(@impl $ty, $what, |$s| $name, &[], |_node| Vec::new());
    };
    ($ty:ty, $what:literal, |$s:ident| $name:expr, steps) => {
        run_time_node_state!(@impl $ty, $what, |$s| $name, &["steps"], |node| {
            let names = node.steps.iter().map(|(p, _)| {
                $crate::primitive::StateValue::Str(p.name().to_string())
            });
            vec![$crate::primitive::StateValue::List(names.collect())]
        });
    };
    (@impl $ty:ty, $what:literal, |$s:ident| $name:expr, $names:expr,
     |$n:ident| $state:expr) => {
        impl $crate::primitive::PrimitiveState for $ty {
            fn name(&self) -> &'static str {
                let $s = self;
                $name
            }
            fn state_names(&self) -> &'static [&'static str] {
                $names
            }
            fn state(&self) -> Vec<$crate::primitive::StateValue> {
                let $n = self;
                $state
            }
            fn encode_cbor(&self) -> ciborium::Value {
                ciborium::Value::Map(Vec::new())
            }
            fn write_mlx(&self, w: &mut $crate::primitive::MlxWriter) {
                w.problems.push(format!(
                    "{} ({}) has no file form; export records the graph it stands for",
                    $what,
                    self.name()
                ));
            }
            fn clone_boxed(&self) -> Box<dyn $crate::primitive::Primitive> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}

mod autodiff;
mod compile;
mod eval;
pub mod fuse;
pub mod fused;
pub mod hoist;
pub mod recognize;
pub mod recognized;
pub mod shared_input;
pub mod simplify;
pub mod tape;
pub mod tape_call;
pub mod tracing;

/// The tracing flags, at their former path.
pub use crate::trace_flag as trace;

pub(crate) use autodiff::{fallback_jvp, fallback_vjp};
pub use autodiff::{grad, jvp, value_and_grad, vjp};
pub use compile::{compile, compile_shapeless};
pub use eval::eval;
