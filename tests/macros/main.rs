//! `#[derive(Primitive)]` and the primitive table: generated code on
//! primitives defined here, compile errors for misuse (`tests/ui`), the
//! registry's invariants, and a primitive from another crate
//! (`user-primitive`).

#[path = "../common/mod.rs"]
mod common;

mod derive;
mod registry;
mod ui;
mod user_primitive;
