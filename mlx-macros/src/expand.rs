//! Code generation for `#[derive(Primitive)]`.
//!
//! Everything is named through `::mlx::__private`, so a user crate needs only
//! `mlx` as a dependency, and wrapped in `const _: () = { .. };` so nothing
//! leaks into the user's namespace. Local names start with `__` so a user's
//! constant of the same name cannot turn a binding into a pattern.
//!
//! Every use of a field's type is spanned on that type: if the type lacks a
//! codec (`StateField`) or `Default`, the error points at the field.

use crate::attr::{Field, MlxSince, Model, Release};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// The impls and the registry entry for a valid model.
pub fn expand(model: &Model) -> TokenStream {
    let ident = &model.ident;
    let name = &model.name;
    let aliases = &model.aliases;
    let krate = &model.krate;
    let p = quote!(#krate::__private);

    let state: Vec<&Field> = model.fields.iter().filter(|f| f.state).collect();
    let state_names: Vec<String> = state.iter().map(|f| f.key()).collect();
    let to_state = state.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        quote_spanned!(ty.span()=> <#ty as #p::StateField>::to_state(&self.#id))
    });
    let to_cbor = state.iter().map(|f| {
        let (id, ty, key) = (&f.ident, &f.ty, f.key());
        quote_spanned! {ty.span()=>
            (#p::CborValue::Text(::std::string::String::from(#key)),
             <#ty as #p::StateField>::to_cbor(&self.#id))
        }
    });
    let version = |r: &Release| {
        let [a, b, c] = r.numbers;
        quote!(#p::MlxVersion::new(#a, #b, #c))
    };
    // The value a release without the field behaves as.
    let absent = |f: &Field| {
        let ty = &f.ty;
        match &f.mlx_absent {
            Some(e) => quote!({ let __absent: #ty = #e; __absent }),
            None => quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default()),
        }
    };
    let mlx_writes = state.iter().filter(|f| !f.skip_mlx).map(|f| {
        let (id, ty, key) = (&f.ident, &f.ty, f.key());
        let write = quote_spanned!(ty.span()=> <#ty as #p::StateField>::write_mlx(&self.#id, __w););
        match &f.mlx_since {
            None => write,
            Some(since) => {
                let since = version(since);
                let lost = if f.mlx_from_outputs {
                    quote!()
                } else {
                    let absent = absent(f);
                    quote! {
                        else if <#ty as #p::StateField>::to_state(&self.#id)
                            != <#ty as #p::StateField>::to_state(&#absent)
                        {
                            __w.missing_field(#name, #key, #since);
                        }
                    }
                };
                quote!(if __w.target >= #since { #write } #lost)
            }
        }
    });
    let cbor_inits = model.fields.iter().map(|f| {
        let (id, ty, key) = (&f.ident, &f.ty, f.key());
        let value = if !f.state {
            quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default())
        } else if f.default {
            quote_spanned! {ty.span()=>
                #p::cbor_field_with_default(
                    __map, #name, #key,
                    <#ty as #p::StateField>::from_cbor,
                    <#ty as ::core::default::Default>::default,
                )?
            }
        } else {
            quote_spanned! {ty.span()=>
                #p::cbor_field_with(__map, #name, #key, <#ty as #p::StateField>::from_cbor)?
            }
        };
        quote!(#id: #value)
    });
    let mlx_inits = model.fields.iter().map(|f| {
        let (id, ty) = (&f.ident, &f.ty);
        let value = if !f.state || f.skip_mlx {
            quote_spanned!(ty.span()=> <#ty as ::core::default::Default>::default())
        } else {
            let read = quote_spanned!(ty.span()=> <#ty as #p::StateField>::read_mlx(__r)?);
            match &f.mlx_since {
                None => read,
                Some(since) => {
                    let (since, absent) = (version(since), absent(f));
                    quote!(if __r.version >= #since { #read } else { #absent })
                }
            }
        };
        quote!(#id: #value)
    });
    let elementwise = model.elementwise.then(|| {
        quote!(
            fn is_elementwise(&self) -> bool {
                true
            }
        )
    });
    let mlx_since = match &model.mlx {
        None => quote!(::core::option::Option::None),
        Some(MlxSince::Always) => quote!(::core::option::Option::Some(#p::MlxVersion::OLDEST)),
        Some(MlxSince::Release(r)) => {
            let v = version(r);
            quote!(::core::option::Option::Some(#v))
        }
    };
    let mlx_old_names = model.mlx_aliases.iter().map(|(old, before)| {
        let before = version(before);
        quote!((#old, #before))
    });
    let mlx_meanings = model.mlx_meanings.iter().map(|(since, why)| {
        let since = version(since);
        quote!((#since, #why))
    });
    let mut layout_changes: Vec<[u16; 3]> = state
        .iter()
        .filter_map(|f| f.mlx_since.as_ref().map(|r| r.numbers))
        .collect();
    layout_changes.sort_unstable();
    layout_changes.dedup();
    let layout_changes = layout_changes
        .iter()
        .map(|[a, b, c]| quote!(#p::MlxVersion::new(#a, #b, #c)));
    // The user's `impl Primitive` is checked here, at the struct's name.
    let as_primitive = quote_spanned! {ident.span()=>
        fn __as_primitive(__x: #ident) -> ::std::boxed::Box<dyn #p::Primitive> {
            <#ident as #p::IntoPrimitive>::into_boxed(__x)
        }
    };

    quote! {
        const _: () = {
            #as_primitive

            #[automatically_derived]
            impl #p::PrimitiveState for #ident {
                fn name(&self) -> &'static str { #name }
                fn state_names(&self) -> &'static [&'static str] { &[#(#state_names),*] }
                fn state(&self) -> ::std::vec::Vec<#p::StateValue> {
                    ::std::vec![#(#to_state),*]
                }
                fn encode_cbor(&self) -> #p::CborValue {
                    #p::CborValue::Map(::std::vec![#(#to_cbor),*])
                }
                fn write_mlx(&self, __w: &mut #p::MlxWriter) {
                    let _ = &__w;
                    #(#mlx_writes)*
                }
                fn clone_boxed(&self) -> ::std::boxed::Box<dyn #p::Primitive> {
                    __as_primitive(::core::clone::Clone::clone(self))
                }
                fn as_any(&self) -> &dyn ::core::any::Any { self }
                #elementwise
            }

            fn __decode_cbor(
                __value: &#p::CborValue,
            ) -> #p::Result<::std::boxed::Box<dyn #p::Primitive>> {
                let __map = #p::cbor_map(__value, #name)?;
                let _ = &__map;
                ::core::result::Result::Ok(__as_primitive(#ident { #(#cbor_inits),* }))
            }

            fn __decode_mlx(
                __r: &mut #p::MlxReader<'_>,
            ) -> #p::Result<::std::boxed::Box<dyn #p::Primitive>> {
                let _ = &__r;
                ::core::result::Result::Ok(__as_primitive(#ident { #(#mlx_inits),* }))
            }

            #p::inventory::submit! {
                #p::PrimitiveEntry {
                    name: #name,
                    aliases: &[#(#aliases),*],
                    decode_cbor: __decode_cbor,
                    decode_mlx: __decode_mlx,
                    mlx_since: #mlx_since,
                    mlx_old_names: &[#(#mlx_old_names),*],
                    mlx_layout_changes: &[#(#layout_changes),*],
                    mlx_meaning_changes: &[#(#mlx_meanings),*],
                }
            }
        };
    }
}
