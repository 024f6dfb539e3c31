//! Validation of a parsed [`Model`]: rules that need the whole struct.

use crate::attr::Model;
use crate::ctxt::Ctxt;
use syn::LitStr;

/// Records every rule the model breaks.
pub fn check(cx: &mut Ctxt, model: &Model) {
    check_name(cx, &model.name, "name");
    let mut seen = vec![model.name.value()];
    let old_names = model.mlx_aliases.iter().map(|(old, _)| old);
    for alias in model.aliases.iter().chain(old_names) {
        check_name(cx, alias, "alias");
        let a = alias.value();
        if seen.contains(&a) {
            cx.error(
                alias.span(),
                format!("`{a}` is already a name of this primitive"),
            );
        } else {
            seen.push(a);
        }
    }
}

/// A registry name is what MLX writes: non-empty, with no whitespace (MLX
/// cuts a display name at its first space to get the registry key).
fn check_name(cx: &mut Ctxt, lit: &LitStr, what: &str) {
    let s = lit.value();
    if s.is_empty() {
        cx.error(lit.span(), format!("primitive {what} must not be empty"));
    } else if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        cx.error(
            lit.span(),
            format!("primitive {what} `{s}` must not contain whitespace: files store the name up to the first space"),
        );
    }
}
