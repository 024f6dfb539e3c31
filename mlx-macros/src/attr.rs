//! Parsing of the derive input into a typed [`Model`].
//!
//! Parsing never stops at the first problem: every error goes into the
//! [`Ctxt`] with the span of the offending token, and a model is returned
//! regardless so that the caller can still emit a stub impl.

use crate::ctxt::Ctxt;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Generics, Ident, LitStr, Type};

/// What the derive knows about one primitive struct.
pub struct Model {
    pub ident: Ident,
    /// Kept only so the error fallback can name the type exactly as written.
    pub generics: Generics,
    /// Registry name written into files: `#[primitive(name = ..)]` or the
    /// struct's name.
    pub name: LitStr,
    /// Other names the registry resolves to this primitive.
    pub aliases: Vec<LitStr>,
    /// Path of the `mlx` crate: `#[primitive(crate = "..")]`, default `::mlx`
    /// (for a crate that renamed its dependency).
    pub krate: syn::Path,
    /// `#[primitive(elementwise)]`: each output element depends only on the
    /// same element of each input (compile fuses chains of such primitives).
    pub elementwise: bool,
    pub fields: Vec<Field>,
}

/// One named field of the struct.
pub struct Field {
    pub ident: Ident,
    pub ty: Type,
    /// `#[state]`: serialised; otherwise a cache rebuilt with `Default`.
    pub state: bool,
    /// `#[state(default)]`: may be missing in a native file.
    pub default: bool,
    /// `#[state(skip_mlx)]`: not part of MLX's wire state; `Default` on MLX import.
    pub skip_mlx: bool,
}

impl Field {
    /// The field's name as written in files (a raw identifier loses its `r#`).
    pub fn key(&self) -> String {
        self.ident.unraw().to_string()
    }
}

impl Model {
    /// Reads the struct, its `#[primitive(..)]` attribute and its fields'
    /// `#[state(..)]` attributes, recording every misuse in `cx`.
    pub fn parse(cx: &mut Ctxt, input: &DeriveInput) -> Model {
        if !input.generics.params.is_empty() {
            cx.error_at(
                &input.generics,
                "#[derive(Primitive)] does not support generic structs: the registry needs one concrete type per name",
            );
        }
        let fields = struct_fields(cx, input);
        let (name, aliases, krate, elementwise) = primitive_attr(cx, input);
        Model {
            ident: input.ident.clone(),
            generics: input.generics.clone(),
            name,
            aliases,
            krate,
            elementwise,
            fields: fields.iter().filter_map(|f| field(cx, f)).collect(),
        }
    }
}

/// The named fields of a struct; anything else is an error.
fn struct_fields<'a>(cx: &mut Ctxt, input: &'a DeriveInput) -> Vec<&'a syn::Field> {
    match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => named.named.iter().collect(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(u) => {
                cx.error_at(
                    u,
                    "#[derive(Primitive)] needs named fields (or none): state is keyed by field name",
                );
                Vec::new()
            }
        },
        Data::Enum(e) => {
            cx.error(
                e.enum_token.span,
                "#[derive(Primitive)] works on structs only, not enums; for an enum-valued state field use `mlx::state_enum!`",
            );
            Vec::new()
        }
        Data::Union(u) => {
            cx.error(
                u.union_token.span,
                "#[derive(Primitive)] works on structs only, not unions",
            );
            Vec::new()
        }
    }
}

/// `#[primitive(name = "..", aliases("..", ..), crate = "..", elementwise)]`
/// on the struct (over one attribute or several).
fn primitive_attr(cx: &mut Ctxt, input: &DeriveInput) -> (LitStr, Vec<LitStr>, syn::Path, bool) {
    let mut name: Option<LitStr> = None;
    let mut elementwise = false;
    let mut aliases = Vec::new();
    let mut krate: Option<syn::Path> = None;
    for attr in input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("primitive"))
    {
        let res = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                let lit: LitStr = meta.value()?.parse()?;
                if name.is_some() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "duplicate `name` in #[primitive(..)]",
                    ));
                }
                name = Some(lit);
            } else if meta.path.is_ident("aliases") {
                let content;
                syn::parenthesized!(content in meta.input);
                let lits = content
                    .parse_terminated(<LitStr as syn::parse::Parse>::parse, syn::Token![,])?;
                aliases.extend(lits);
            } else if meta.path.is_ident("elementwise") {
                elementwise = true;
            } else if meta.path.is_ident("crate") {
                let lit: LitStr = meta.value()?.parse()?;
                if krate.is_some() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "duplicate `crate` in #[primitive(..)]",
                    ));
                }
                krate = Some(lit.parse()?);
            } else {
                return Err(unknown_key(
                    &meta,
                    "#[primitive(..)]",
                    "`name`, `aliases`, `crate` or `elementwise`",
                ));
            }
            Ok(())
        });
        if let Err(e) = res {
            cx.push(e);
        }
    }
    let name =
        name.unwrap_or_else(|| LitStr::new(&input.ident.unraw().to_string(), input.ident.span()));
    let krate = krate.unwrap_or_else(|| syn::parse_quote!(::mlx));
    (name, aliases, krate, elementwise)
}

/// One field and its `#[state(..)]` attribute.
fn field(cx: &mut Ctxt, f: &syn::Field) -> Option<Field> {
    let mut out = Field {
        ident: f.ident.clone()?,
        ty: f.ty.clone(),
        state: false,
        default: false,
        skip_mlx: false,
    };
    let mut seen: Option<&Attribute> = None;
    for attr in &f.attrs {
        if attr.path().is_ident("primitive") {
            cx.error_at(
                attr,
                "#[primitive(..)] belongs on the struct, not on a field",
            );
            continue;
        }
        if !attr.path().is_ident("state") {
            continue;
        }
        if seen.is_some() {
            cx.error_at(
                attr,
                "duplicate #[state] attribute: put every key in one #[state(..)]",
            );
            continue;
        }
        seen = Some(attr);
        out.state = true;
        if matches!(attr.meta, syn::Meta::Path(_)) {
            continue;
        }
        let res = attr.parse_nested_meta(|meta| {
            let flag = if meta.path.is_ident("default") {
                &mut out.default
            } else if meta.path.is_ident("skip_mlx") {
                &mut out.skip_mlx
            } else {
                return Err(unknown_key(
                    &meta,
                    "#[state(..)]",
                    "`default` or `skip_mlx`",
                ));
            };
            if *flag {
                return Err(meta.error("duplicate key in #[state(..)]"));
            }
            *flag = true;
            Ok(())
        });
        if let Err(e) = res {
            cx.push(e);
        }
    }
    Some(out)
}

/// An error on an unrecognised key, at that key.
fn unknown_key(meta: &ParseNestedMeta<'_>, attr: &str, expected: &str) -> syn::Error {
    let key = meta
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::");
    syn::Error::new(
        meta.path.span(),
        format!("unknown key `{key}` in {attr}: expected {expected}"),
    )
}
