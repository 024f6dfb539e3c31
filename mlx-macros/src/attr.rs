//! Parsing and validation of the derive input into a [`Model`].

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Type};

/// What the derive knows about one primitive struct.
pub struct Model {
    pub ident: Ident,
    /// Registry name written into files.
    pub name: String,
    pub aliases: Vec<String>,
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

/// Collects errors so that all of them are reported at once.
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        let e = syn::Error::new(span, msg);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
}

impl Model {
    pub fn parse(input: &DeriveInput) -> Result<Model, syn::Error> {
        let mut errors = Errors(None);
        if !input.generics.params.is_empty() {
            errors.push(
                input.generics.span(),
                "#[derive(Primitive)] does not support generic structs: the registry needs one concrete type per name",
            );
        }
        let fields = match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
                Fields::Unit => Vec::new(),
                Fields::Unnamed(u) => {
                    errors.push(
                        u.span(),
                        "#[derive(Primitive)] needs named fields: state is keyed by field name",
                    );
                    Vec::new()
                }
            },
            Data::Enum(e) => {
                errors.push(
                    e.enum_token.span(),
                    "#[derive(Primitive)] works on structs only, not enums",
                );
                Vec::new()
            }
            Data::Union(u) => {
                errors.push(
                    u.union_token.span(),
                    "#[derive(Primitive)] works on structs only, not unions",
                );
                Vec::new()
            }
        };

        let mut name = input.ident.to_string();
        let mut aliases = Vec::new();
        for attr in &input.attrs {
            if !attr.path().is_ident("primitive") {
                continue;
            }
            let res = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("name") {
                    let lit: LitStr = meta.value()?.parse()?;
                    if lit.value().is_empty() {
                        return Err(meta.error("primitive name must not be empty"));
                    }
                    name = lit.value();
                    Ok(())
                } else if meta.path.is_ident("aliases") {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let lits = content
                        .parse_terminated(<LitStr as syn::parse::Parse>::parse, syn::Token![,])?;
                    aliases.extend(lits.iter().map(|l| l.value()));
                    Ok(())
                } else {
                    Err(meta.error(format!(
                        "unknown key `{}` in #[primitive(..)]: expected `name` or `aliases`",
                        path_text(&meta.path)
                    )))
                }
            });
            if let Err(e) = res {
                errors.push(e.span(), e);
            }
        }

        let mut out = Vec::new();
        for f in fields {
            let Some(ident) = f.ident.clone() else {
                continue;
            };
            let mut field = Field {
                ident,
                ty: f.ty.clone(),
                state: false,
                default: false,
                skip_mlx: false,
            };
            for attr in &f.attrs {
                if attr.path().is_ident("primitive") {
                    errors.push(
                        attr.span(),
                        "#[primitive(..)] belongs on the struct, not on a field",
                    );
                }
                if !attr.path().is_ident("state") {
                    continue;
                }
                field.state = true;
                if matches!(attr.meta, syn::Meta::Path(_)) {
                    continue;
                }
                let res = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("default") {
                        field.default = true;
                        Ok(())
                    } else if meta.path.is_ident("skip_mlx") {
                        field.skip_mlx = true;
                        Ok(())
                    } else {
                        Err(meta.error(format!(
                            "unknown key `{}` in #[state(..)]: expected `default` or `skip_mlx`",
                            path_text(&meta.path)
                        )))
                    }
                });
                if let Err(e) = res {
                    errors.push(e.span(), e);
                }
            }
            out.push(field);
        }
        match errors.0 {
            Some(e) => Err(e),
            None => Ok(Model {
                ident: input.ident.clone(),
                name,
                aliases,
                fields: out,
            }),
        }
    }
}

fn path_text(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}
