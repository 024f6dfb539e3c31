//! What is emitted when the input has errors: the errors, plus a stub
//! `PrimitiveState` impl so the user's own `impl Primitive for ..` still
//! type-checks and the build shows the derive's errors and nothing else.

use crate::attr::Model;
use proc_macro2::TokenStream;
use quote::quote;

/// A `PrimitiveState` impl whose bodies are never run (the build fails).
pub fn expand(model: &Model, errors: syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    let ident = &model.ident;
    // A generic input already has its error; the bound keeps the stub from
    // adding "`T` may not live long enough" and friends to it.
    let mut generics = model.generics.clone();
    generics
        .make_where_clause()
        .predicates
        .push(syn::parse_quote!(
            Self: 'static + ::core::marker::Send + ::core::marker::Sync + ::core::fmt::Debug
        ));
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let krate = &model.krate;
    let p = quote!(#krate::__private);
    let never = quote!(::core::unreachable!(
        "#[derive(Primitive)] failed to expand"
    ));
    quote! {
        #errors
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #p::PrimitiveState for #ident #ty_generics #where_clause {
                fn name(&self) -> &'static str { #never }
                fn state_names(&self) -> &'static [&'static str] { #never }
                fn state(&self) -> ::std::vec::Vec<#p::StateValue> { #never }
                fn encode_cbor(&self) -> #p::CborValue { #never }
                fn write_mlx(&self, _: &mut #p::MlxWriter) { #never }
                fn clone_boxed(&self) -> ::std::boxed::Box<dyn #p::Primitive> { #never }
                fn as_any(&self) -> &dyn ::core::any::Any { #never }
            }
        };
    }
}
