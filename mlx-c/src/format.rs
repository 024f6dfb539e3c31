//! MLX's printed form of an array (`mlx_array_tostring`):
//! `array([[1, 2],\n       [3, 4]], dtype=int32)`, numbers as C++'s
//! `ostream` prints them (6 significant digits, like `%g`).

use crate::boundary::Failure;
use mlx::{Array, Complex64, Dtype};

const PREFIX: &str = "array(";

/// The text of `a` (evaluates it).
pub fn array_text(a: &Array) -> Result<String, Failure> {
    let items = elements(a)?;
    let mut out = String::from(PREFIX);
    if a.ndim() == 0 {
        out.push_str(items.first().map(String::as_str).unwrap_or(""));
    } else {
        nest(&mut out, &items, a.shape(), 0);
    }
    if a.size() == 0 {
        out.push_str(&format!(", shape={:?}", a.shape()));
    }
    out.push_str(&format!(", dtype={})", a.dtype()));
    Ok(out)
}

/// Writes the elements of one sub-array at `depth` in brackets.
fn nest(out: &mut String, items: &[String], shape: &[i32], depth: usize) {
    out.push('[');
    let n = shape[0].max(0) as usize;
    if shape.len() == 1 {
        out.push_str(&items.join(", "));
    } else {
        let chunk = items.len().checked_div(n).unwrap_or(0);
        for i in 0..n {
            if i > 0 {
                out.push_str(",\n");
                out.push_str(&" ".repeat(PREFIX.len() + depth + 1));
            }
            nest(
                out,
                &items[i * chunk..(i + 1) * chunk],
                &shape[1..],
                depth + 1,
            );
        }
    }
    out.push(']');
}

/// Every element as text, row-major.
fn elements(a: &Array) -> Result<Vec<String>, Failure> {
    let texts = match a.dtype() {
        Dtype::Bool => each(a.to_vec::<bool>()?, |v| v.to_string()),
        Dtype::Uint8 => each(a.to_vec::<u8>()?, |v| v.to_string()),
        Dtype::Uint16 => each(a.to_vec::<u16>()?, |v| v.to_string()),
        Dtype::Uint32 => each(a.to_vec::<u32>()?, |v| v.to_string()),
        Dtype::Uint64 => each(a.to_vec::<u64>()?, |v| v.to_string()),
        Dtype::Int8 => each(a.to_vec::<i8>()?, |v| v.to_string()),
        Dtype::Int16 => each(a.to_vec::<i16>()?, |v| v.to_string()),
        Dtype::Int32 => each(a.to_vec::<i32>()?, |v| v.to_string()),
        Dtype::Int64 => each(a.to_vec::<i64>()?, |v| v.to_string()),
        Dtype::Float16 => each(a.to_vec::<half::f16>()?, |v| general(v.to_f64())),
        Dtype::Bfloat16 => each(a.to_vec::<half::bf16>()?, |v| general(v.to_f64())),
        Dtype::Float32 => each(a.to_vec::<f32>()?, |v| general(v as f64)),
        Dtype::Float64 => each(a.to_vec::<f64>()?, general),
        Dtype::Complex64 => each(a.to_vec::<Complex64>()?, |v| {
            let sign = if v.im.is_sign_negative() { "-" } else { "+" };
            format!(
                "{}{sign}{}j",
                general(v.re as f64),
                general((v.im as f64).abs())
            )
        }),
    };
    Ok(texts)
}

fn each<T>(v: Vec<T>, f: impl Fn(T) -> String) -> Vec<String> {
    v.into_iter().map(f).collect()
}

/// `v` as C's `%g` prints it: 6 significant digits, trailing zeros dropped,
/// scientific notation below 1e-4 and from 1e6 on.
pub fn general(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}")).to_string()
    }
}

fn trim(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::general;

    #[test]
    fn general_matches_printf_g() {
        // Values and what glibc's printf("%g") prints for them.
        let cases = [
            (1.0, "1"),
            (0.5, "0.5"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (-2.5, "-2.5"),
            (1.23456789, "1.23457"),
            (999999.5, "1e+06"),
        ];
        for (v, want) in cases {
            assert_eq!(general(v), want, "{v}");
        }
    }
}
