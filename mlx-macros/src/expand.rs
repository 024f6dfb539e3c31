//! Code generation for `#[derive(Primitive)]`.
//!
//! Everything is named through `::mlx::__private`, so a user crate needs only
//! `mlx` as a dependency, and wrapped in `const _: () = { .. };` so nothing
//! leaks into the user's namespace.

use crate::attr::Model;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub fn expand(model: &Model) -> TokenStream {
    let ident = &model.ident;
    let name = &model.name;
    let aliases = &model.aliases;
    let p = quote!(::mlx::__private);

    let state: Vec<_> = model.fields.iter().filter(|f| f.state).collect();
    let state_idents: Vec<_> = state.iter().map(|f| &f.ident).collect();
    let state_names: Vec<String> = state.iter().map(|f| f.ident.to_string()).collect();

    // A compile-time check per state field, spanned on its type, so a type
    // without a codec is reported at the field that uses it.
    let field_checks = state.iter().map(|f| {
        let ty = &f.ty;
        quote_spanned! {ty.span()=>
            let _ = #p::assert_state_field::<#ty>;
        }
    });

    let mlx_writes = state.iter().filter(|f| !f.skip_mlx).map(|f| {
        let id = &f.ident;
        quote!(#p::StateField::write_mlx(&self.#id, w);)
    });

    let cbor_inits = model.fields.iter().map(|f| {
        let id = &f.ident;
        let key = id.to_string();
        if !f.state {
            quote!(#id: ::core::default::Default::default())
        } else if f.default {
            quote!(#id: #p::cbor_field_or_default(map, #name, #key)?)
        } else {
            quote!(#id: #p::cbor_field(map, #name, #key)?)
        }
    });

    let mlx_inits = model.fields.iter().map(|f| {
        let id = &f.ident;
        if !f.state || f.skip_mlx {
            quote!(#id: ::core::default::Default::default())
        } else {
            quote!(#id: #p::StateField::read_mlx(r)?)
        }
    });

    quote! {
        const _: () = {
            #[allow(dead_code)]
            fn __check_fields() { #(#field_checks)* }

            impl #p::PrimitiveState for #ident {
                fn name(&self) -> &'static str { #name }
                fn state_names(&self) -> &'static [&'static str] { &[#(#state_names),*] }
                fn state(&self) -> ::std::vec::Vec<#p::StateValue> {
                    ::std::vec![#(#p::StateField::to_state(&self.#state_idents)),*]
                }
                fn encode_cbor(&self) -> #p::CborValue {
                    #p::CborValue::Map(::std::vec![
                        #((#p::CborValue::Text(::std::string::String::from(#state_names)),
                           #p::StateField::to_cbor(&self.#state_idents))),*
                    ])
                }
                fn write_mlx(&self, w: &mut #p::MlxWriter) {
                    let _ = &w;
                    #(#mlx_writes)*
                }
                fn clone_boxed(&self) -> ::std::boxed::Box<dyn #p::Primitive> {
                    ::std::boxed::Box::new(::core::clone::Clone::clone(self))
                }
                fn as_any(&self) -> &dyn ::core::any::Any { self }
            }

            fn __decode_cbor(value: &#p::CborValue) -> #p::Result<::std::boxed::Box<dyn #p::Primitive>> {
                let map = #p::cbor_map(value, #name)?;
                let _ = &map;
                ::core::result::Result::Ok(::std::boxed::Box::new(#ident { #(#cbor_inits),* }))
            }

            fn __decode_mlx(r: &mut #p::MlxReader<'_>) -> #p::Result<::std::boxed::Box<dyn #p::Primitive>> {
                let _ = &r;
                ::core::result::Result::Ok(::std::boxed::Box::new(#ident { #(#mlx_inits),* }))
            }

            #p::inventory::submit! {
                #p::PrimitiveEntry {
                    name: #name,
                    aliases: &[#(#aliases),*],
                    decode_cbor: __decode_cbor,
                    decode_mlx: __decode_mlx,
                }
            }
        };
    }
}
