//! `#[derive(Primitive)]` for the `mlx` crate.
//!
//! The derive reads a struct with named fields, where `#[state]` marks the
//! fields that describe the operation (in the order MLX serialises them), and
//! generates the state accessor, both wire codecs (CBOR and MLX's positional
//! binary form) and a self-registering entry in the primitive table.
//!
//! Pipeline: [`attr`] parses the input into a typed model and [`check`]
//! validates it, both collecting every error with its span in a
//! [`ctxt::Ctxt`]; [`expand`] emits the code. On error, [`fallback`] emits the
//! errors plus a stub impl, so the user sees what is wrong and nothing else.
//!
//! Attributes:
//! - `#[primitive(name = "Name", aliases("Other", ..))]` on the struct: the
//!   registry name (default: the struct's name) and extra names that resolve
//!   to it. `crate = "path"` names the `mlx` crate when a dependency was
//!   renamed (default `::mlx`). `elementwise`: output element `i` depends
//!   only on element `i` of each input (compile fuses chains of these).
//!   `mlx` marks a primitive every MLX release
//!   this library reads has (so MLX files may hold it), `mlx_since = "x.y.z"`
//!   one MLX added in that release, and `mlx_alias("Old", before = "x.y.z")`
//!   the name releases before `x.y.z` write for it.
//!   `mlx_meaning("x.y.z", "why")`: releases before `x.y.z` have the
//!   primitive under the same name and state but compute something else
//!   (`why` says what), so files holding it are not written for them.
//! - `#[state]` on a field: part of the primitive's state, in declaration
//!   order. `#[state(default)]`: may be missing from a native file (decoded
//!   as `Default`). `#[state(mlx_since = "x.y.z")]`: in MLX's layout from
//!   that release on; older files decode it as `mlx_absent = expr` (default
//!   `Default::default()`), and writing for an older release refuses a value
//!   other than that one, unless `mlx_from_outputs` says older releases take
//!   it from the recorded output shapes. `#[state(skip_mlx)]`: not in MLX's
//!   wire layout (decoded as `Default` from MLX files).
//! - Fields without `#[state]` are caches, rebuilt with `Default` on decode.

mod attr;
mod check;
mod ctxt;
mod expand;
mod fallback;

use proc_macro::TokenStream;

/// Derives `PrimitiveState` and registers the primitive. See the `mlx` crate docs.
#[proc_macro_derive(Primitive, attributes(primitive, state))]
pub fn derive_primitive(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    let mut cx = ctxt::Ctxt::default();
    let model = attr::Model::parse(&mut cx, &input);
    check::check(&mut cx, &model);
    match cx.finish() {
        Ok(()) => expand::expand(&model).into(),
        Err(errors) => fallback::expand(&model, errors).into(),
    }
}
