//! Unary math and dtype conversion. Like MLX, float functions cast integer
//! and bool inputs to float32 first (an explicit AsType node), and
//! `round(a, decimals)` with decimals != 0 is Multiply, Round, Multiply.

use super::{broadcast_to, cast_to, equal, logical_or, multiply, not_equal};
use crate::primitives::unary::{self, LogBase};
use crate::{Array, Dtype, Error, Primitive, Result};

/// Converts the elements of `a` to `dtype`.
pub fn astype(a: &Array, dtype: Dtype) -> Result<Array> {
    Array::from_primitive(unary::AsType { dtype }, vec![a.clone()])
}

/// `d` if it is floating point or complex, else float32 (MLX's `at_least_float`).
pub(crate) fn at_least_float(d: Dtype) -> Dtype {
    if d.is_inexact() {
        d
    } else {
        Dtype::Float32
    }
}

/// Casts to at least float32, then applies `p`.
fn float_op(a: &Array, p: impl Primitive) -> Result<Array> {
    let x = cast_to(a, at_least_float(a.dtype()))?;
    Array::from_primitive(p, vec![x])
}

/// Like [`float_op`], but complex input is an error (MLX's message).
fn real_float_op(op: &str, a: &Array, p: impl Primitive) -> Result<Array> {
    if a.dtype().is_complex() {
        return Err(Error::DtypeNotSupported {
            op: op.into(),
            dtype: Dtype::Complex64,
        });
    }
    float_op(a, p)
}

macro_rules! float_ops {
    ($($(#[$doc:meta])* $f:ident => $p:expr;)*) => {$(
        $(#[$doc])*
        pub fn $f(a: &Array) -> Result<Array> {
            float_op(a, $p)
        }
    )*};
}

float_ops! {
    /// `e^a` (MLX's own exp formula).
    exp => unary::Exp {};
    /// Natural logarithm.
    log => unary::Log { base: LogBase::E };
    /// Base-2 logarithm.
    log2 => unary::Log { base: LogBase::Two };
    /// Base-10 logarithm.
    log10 => unary::Log { base: LogBase::Ten };
    /// `ln(1 + a)`.
    log1p => unary::Log1p {};
    /// Sine (MLX's own formula).
    sin => unary::Sin {};
    /// Cosine (MLX's own formula).
    cos => unary::Cos {};
    /// Tangent.
    tan => unary::Tan {};
    /// Hyperbolic sine.
    sinh => unary::Sinh {};
    /// Hyperbolic cosine.
    cosh => unary::Cosh {};
    /// Hyperbolic tangent.
    tanh => unary::Tanh {};
    /// Inverse sine.
    arcsin => unary::ArcSin {};
    /// Inverse cosine.
    arccos => unary::ArcCos {};
    /// Inverse tangent.
    arctan => unary::ArcTan {};
    /// Inverse hyperbolic sine.
    arcsinh => unary::ArcSinh {};
    /// Inverse hyperbolic cosine.
    arccosh => unary::ArcCosh {};
    /// Inverse hyperbolic tangent.
    arctanh => unary::ArcTanh {};
    /// Square root.
    sqrt => unary::Sqrt { recip: false };
    /// `1 / sqrt(a)` (one Sqrt node with `recip`).
    rsqrt => unary::Sqrt { recip: true };
}

/// `e^a - 1`; complex input is an error.
pub fn expm1(a: &Array) -> Result<Array> {
    real_float_op("expm1", a, unary::Expm1 {})
}

/// The logistic function; complex input is an error.
pub fn sigmoid(a: &Array) -> Result<Array> {
    real_float_op("sigmoid", a, unary::Sigmoid {})
}

/// The error function; complex input is an error.
pub fn erf(a: &Array) -> Result<Array> {
    real_float_op("erf", a, unary::Erf {})
}

/// The inverse error function; complex input is an error.
pub fn erfinv(a: &Array) -> Result<Array> {
    real_float_op("erfinv", a, unary::ErfInv {})
}

/// Absolute value; complex input gives float32 (Abs then AsType, as MLX).
pub fn abs(a: &Array) -> Result<Array> {
    let out = Array::from_primitive(unary::Abs {}, vec![a.clone()])?;
    if a.dtype().is_complex() {
        return astype(&out, Dtype::Float32);
    }
    Ok(out)
}

/// `-a`; bool input is an error (use [`logical_not`]).
pub fn negative(a: &Array) -> Result<Array> {
    if a.dtype() == Dtype::Bool {
        return Err(Error::invalid(
            "negative",
            "not supported for bool, use logical_not instead",
        ));
    }
    Array::from_primitive(unary::Negative {}, vec![a.clone()])
}

/// -1, 0 or 1 by the sign of each element, in `a`'s dtype.
pub fn sign(a: &Array) -> Result<Array> {
    Array::from_primitive(unary::Sign {}, vec![a.clone()])
}

/// `a * a`, in `a`'s dtype.
pub fn square(a: &Array) -> Result<Array> {
    Array::from_primitive(unary::Square {}, vec![a.clone()])
}

/// Logical negation (the input is cast to bool first).
pub fn logical_not(a: &Array) -> Result<Array> {
    let x = cast_to(a, Dtype::Bool)?;
    Array::from_primitive(unary::LogicalNot {}, vec![x])
}

fn no_complex(op: &str, a: &Array) -> Result<()> {
    if a.dtype().is_complex() {
        return Err(Error::DtypeNotSupported {
            op: op.into(),
            dtype: Dtype::Complex64,
        });
    }
    Ok(())
}

/// Rounds down (integers unchanged); complex input is an error.
pub fn floor(a: &Array) -> Result<Array> {
    no_complex("floor", a)?;
    Array::from_primitive(unary::Floor {}, vec![a.clone()])
}

/// Rounds up (integers unchanged); complex input is an error.
pub fn ceil(a: &Array) -> Result<Array> {
    no_complex("ceil", a)?;
    Array::from_primitive(unary::Ceil {}, vec![a.clone()])
}

/// Rounds to `decimals` decimal places, halves to even. With decimals != 0
/// this is `a * 10^d`, Round, `* 10^-d` (in at least float32), cast back to
/// `a`'s dtype, as MLX builds it.
pub fn round(a: &Array, decimals: i32) -> Result<Array> {
    if decimals == 0 {
        return Array::from_primitive(unary::Round {}, vec![a.clone()]);
    }
    let dtype = at_least_float(a.dtype());
    let scale = 10f64.powi(decimals) as f32;
    let r = multiply(a, &Array::scalar_of(scale as f64, dtype))?;
    let r = Array::from_primitive(unary::Round {}, vec![r])?;
    let r = multiply(&r, &Array::scalar_of((1.0f32 / scale) as f64, dtype))?;
    cast_to(&r, a.dtype())
}

/// `1 / a` (in at least float32).
pub fn reciprocal(a: &Array) -> Result<Array> {
    let one = Array::scalar_of(1.0, at_least_float(a.dtype()));
    super::divide(&one, a)
}

/// The real part (float32) of a complex array; other arrays unchanged.
pub fn real(a: &Array) -> Result<Array> {
    if !a.dtype().is_complex() {
        return Ok(a.clone());
    }
    Array::from_primitive(unary::Real {}, vec![a.clone()])
}

/// The imaginary part (float32) of a complex array; zeros for other arrays.
pub fn imag(a: &Array) -> Result<Array> {
    if !a.dtype().is_complex() {
        return filled(a, 0.0, a.dtype());
    }
    Array::from_primitive(unary::Imag {}, vec![a.clone()])
}

/// The complex conjugate; other arrays unchanged.
pub fn conjugate(a: &Array) -> Result<Array> {
    if !a.dtype().is_complex() {
        return Ok(a.clone());
    }
    Array::from_primitive(unary::Conjugate {}, vec![a.clone()])
}

/// A constant `v` of `dtype` with `a`'s shape (a broadcast 0-d constant).
/// MLX materialises it with a Full node; the values are the same.
fn filled(a: &Array, v: f64, dtype: Dtype) -> Result<Array> {
    broadcast_to(&Array::scalar_of(v, dtype), a.shape())
}

/// Whether each element is NaN (always false for integers and bool).
pub fn isnan(a: &Array) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return filled(a, 0.0, Dtype::Bool);
    }
    not_equal(a, a)
}

/// Whether each element is +inf.
pub fn isposinf(a: &Array) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return filled(a, 0.0, Dtype::Bool);
    }
    equal(a, &Array::scalar_of(f64::INFINITY, a.dtype()))
}

/// Whether each element is -inf.
pub fn isneginf(a: &Array) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return filled(a, 0.0, Dtype::Bool);
    }
    equal(a, &Array::scalar_of(f64::NEG_INFINITY, a.dtype()))
}

/// Whether each element is ±inf (complex: either part).
pub fn isinf(a: &Array) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return filled(a, 0.0, Dtype::Bool);
    }
    if a.dtype().is_complex() {
        return logical_or(&isinf(&real(a)?)?, &isinf(&imag(a)?)?);
    }
    logical_or(&isposinf(a)?, &isneginf(a)?)
}

/// Whether each element is finite (neither inf nor NaN).
pub fn isfinite(a: &Array) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return filled(a, 1.0, Dtype::Bool);
    }
    logical_not(&logical_or(&isinf(a)?, &isnan(a)?)?)
}
