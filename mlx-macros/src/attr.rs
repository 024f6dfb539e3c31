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
    /// The first MLX release that has this primitive: `#[primitive(mlx)]`
    /// (every release this library reads) or `#[primitive(mlx_since = "..")]`.
    /// `None`: not an MLX primitive, so MLX files cannot hold it.
    pub mlx: Option<MlxSince>,
    /// `#[primitive(mlx_alias("Old", before = "x.y.z"))]`: the name MLX
    /// releases before `x.y.z` write for this primitive.
    pub mlx_aliases: Vec<(LitStr, Release)>,
    /// `#[primitive(mlx_meaning("x.y.z", "why"))]`: MLX releases before
    /// `x.y.z` compute this primitive differently (same name and state), so
    /// a file holding it cannot be written for them; `why` says how.
    pub mlx_meanings: Vec<(Release, LitStr)>,
    pub fields: Vec<Field>,
}

/// A release number from an attribute, checked at parse time.
#[derive(Clone)]
pub struct Release {
    pub numbers: [u16; 3],
}

/// Since when MLX has a primitive.
pub enum MlxSince {
    /// Every release this library reads.
    Always,
    /// From this release on.
    Release(Release),
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
    /// `#[state(mlx_since = "..")]`: in MLX's layout from this release on.
    pub mlx_since: Option<Release>,
    /// `#[state(mlx_absent = expr)]`: the value releases before `mlx_since`
    /// behave as (default: `Default::default()`).
    pub mlx_absent: Option<syn::Expr>,
    /// `#[state(mlx_from_outputs)]`: releases before `mlx_since` take the
    /// value from the recorded output shapes, so leaving it out loses
    /// nothing (the primitive's `adopt_recorded_specs` restores it).
    pub mlx_from_outputs: bool,
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
        let PrimitiveAttr {
            name,
            aliases,
            krate,
            elementwise,
            mlx,
            mlx_aliases,
            mlx_meanings,
        } = primitive_attr(cx, input);
        Model {
            ident: input.ident.clone(),
            generics: input.generics.clone(),
            name,
            aliases,
            krate,
            elementwise,
            mlx,
            mlx_aliases,
            mlx_meanings,
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

/// What `#[primitive(..)]` says.
struct PrimitiveAttr {
    name: LitStr,
    aliases: Vec<LitStr>,
    krate: syn::Path,
    elementwise: bool,
    mlx: Option<MlxSince>,
    mlx_aliases: Vec<(LitStr, Release)>,
    mlx_meanings: Vec<(Release, LitStr)>,
}

/// A release literal `"major.minor.patch"`.
pub fn release(lit: LitStr) -> syn::Result<Release> {
    let v = lit.value();
    let parts: Vec<Option<u16>> = v.split('.').map(|p| p.parse().ok()).collect();
    match parts.as_slice() {
        [Some(a), Some(b), Some(c)] => Ok(Release {
            numbers: [*a, *b, *c],
        }),
        _ => Err(syn::Error::new(
            lit.span(),
            format!("expected an MLX release like \"0.29.0\", found \"{v}\""),
        )),
    }
}

/// `#[primitive(name = "..", aliases("..", ..), crate = "..", elementwise, mlx |
/// mlx_since = "..", mlx_alias("..", before = ".."))]` on the struct.
fn primitive_attr(cx: &mut Ctxt, input: &DeriveInput) -> PrimitiveAttr {
    let mut name: Option<LitStr> = None;
    let mut elementwise = false;
    let mut aliases = Vec::new();
    let mut krate: Option<syn::Path> = None;
    let mut mlx: Option<MlxSince> = None;
    let mut mlx_aliases = Vec::new();
    let mut mlx_meanings = Vec::new();
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
            } else if meta.path.is_ident("mlx") || meta.path.is_ident("mlx_since") {
                if mlx.is_some() {
                    return Err(meta.error("duplicate `mlx` / `mlx_since` in #[primitive(..)]"));
                }
                mlx = Some(if meta.path.is_ident("mlx") {
                    MlxSince::Always
                } else {
                    MlxSince::Release(release(meta.value()?.parse()?)?)
                });
            } else if meta.path.is_ident("mlx_alias") {
                let content;
                syn::parenthesized!(content in meta.input);
                let old: LitStr = content.parse()?;
                content.parse::<syn::Token![,]>()?;
                let key: Ident = content.parse()?;
                if key != "before" {
                    return Err(syn::Error::new(
                        key.span(),
                        "expected `before = \"x.y.z\"` after the old name in mlx_alias(..)",
                    ));
                }
                content.parse::<syn::Token![=]>()?;
                let until = release(content.parse()?)?;
                mlx_aliases.push((old, until));
            } else if meta.path.is_ident("mlx_meaning") {
                let content;
                syn::parenthesized!(content in meta.input);
                let since = release(content.parse()?)?;
                content.parse::<syn::Token![,]>()?;
                let why: LitStr = content.parse()?;
                mlx_meanings.push((since, why));
            } else {
                return Err(unknown_key(
                    &meta,
                    "#[primitive(..)]",
                    "`name`, `aliases`, `crate`, `elementwise`, `mlx`, `mlx_since`, `mlx_alias` or `mlx_meaning`",
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
    PrimitiveAttr {
        name,
        aliases,
        krate,
        elementwise,
        mlx,
        mlx_aliases,
        mlx_meanings,
    }
}

/// One field and its `#[state(..)]` attribute.
fn field(cx: &mut Ctxt, f: &syn::Field) -> Option<Field> {
    let mut out = Field {
        ident: f.ident.clone()?,
        ty: f.ty.clone(),
        state: false,
        default: false,
        skip_mlx: false,
        mlx_since: None,
        mlx_absent: None,
        mlx_from_outputs: false,
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
            if meta.path.is_ident("mlx_since") {
                if out.mlx_since.is_some() {
                    return Err(meta.error("duplicate key in #[state(..)]"));
                }
                out.mlx_since = Some(release(meta.value()?.parse()?)?);
                return Ok(());
            }
            if meta.path.is_ident("mlx_absent") {
                if out.mlx_absent.is_some() {
                    return Err(meta.error("duplicate key in #[state(..)]"));
                }
                out.mlx_absent = Some(meta.value()?.parse()?);
                return Ok(());
            }
            let flag = if meta.path.is_ident("default") {
                &mut out.default
            } else if meta.path.is_ident("skip_mlx") {
                &mut out.skip_mlx
            } else if meta.path.is_ident("mlx_from_outputs") {
                &mut out.mlx_from_outputs
            } else {
                return Err(unknown_key(
                    &meta,
                    "#[state(..)]",
                    "`default`, `skip_mlx`, `mlx_since`, `mlx_absent` or `mlx_from_outputs`",
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
