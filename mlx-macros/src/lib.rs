//! `#[derive(Primitive)]` for the `mlx` crate.
//!
//! The derive reads a struct with named fields, where `#[state]` marks the
//! fields that describe the operation (in the order MLX serialises them), and
//! generates the state accessor, both wire codecs (CBOR and MLX's positional
//! binary form) and a self-registering entry in the primitive table.
//!
//! Pipeline: [`attr`] parses the input into a typed model, collecting every
//! error with its span; [`expand`] emits the code. On error the errors alone
//! are emitted, so the user sees what is wrong and nothing else.

mod attr;
mod expand;

use proc_macro::TokenStream;

/// Derives `PrimitiveState` and registers the primitive. See the `mlx` crate docs.
#[proc_macro_derive(Primitive, attributes(primitive, state))]
pub fn derive_primitive(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    match attr::Model::parse(&input) {
        Ok(model) => expand::expand(&model).into(),
        Err(errors) => errors.to_compile_error().into(),
    }
}
