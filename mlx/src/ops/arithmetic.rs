//! Binary arithmetic, comparison, logical and bitwise ops, `where_` and
//! `clip`. Each promotes its inputs (explicit AsType nodes), broadcasts them
//! (explicit Broadcast nodes) and applies one primitive, as MLX does.

use super::math::at_least_float;
use super::{broadcast_as, cast_to, promote_and_broadcast};
use crate::primitives::binary::{self, BitwiseOp};
use crate::shape::broadcast_shapes;
use crate::{promote_types, Array, Dtype, Error, Primitive, Result};

/// Promotes, broadcasts, then applies the binary primitive.
pub(crate) fn binary_op(op: &str, a: &Array, b: &Array, p: impl Primitive) -> Result<Array> {
    let (a, b) = promote_and_broadcast(op, a, b)?;
    Array::from_primitive(p, vec![a, b])
}

/// Casts both to `dtype`, broadcasts, then applies the primitive.
fn binary_as(op: &str, a: &Array, b: &Array, dtype: Dtype, p: impl Primitive) -> Result<Array> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let a = broadcast_as(&cast_to(a, dtype)?, &shape)?;
    let b = broadcast_as(&cast_to(b, dtype)?, &shape)?;
    Array::from_primitive(p, vec![a, b])
}

/// Errors when the promoted dtype of `a` and `b` is complex.
fn no_complex(op: &str, a: &Array, b: &Array) -> Result<()> {
    if promote_types(a.dtype(), b.dtype()).is_complex() {
        return Err(Error::invalid(op, "complex64 is not supported"));
    }
    Ok(())
}

/// `a + b` with broadcasting and type promotion.
pub fn add(a: &Array, b: &Array) -> Result<Array> {
    binary_op("add", a, b, binary::Add {})
}

/// `a - b`.
pub fn subtract(a: &Array, b: &Array) -> Result<Array> {
    binary_op("subtract", a, b, binary::Subtract {})
}

/// `a * b`.
pub fn multiply(a: &Array, b: &Array) -> Result<Array> {
    binary_op("multiply", a, b, binary::Multiply {})
}

/// `a / b`, true division: integer and bool inputs are cast to float32 first.
pub fn divide(a: &Array, b: &Array) -> Result<Array> {
    let dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
    binary_as("divide", a, b, dtype, binary::Divide {})
}

/// `a // b`: Python floor division for integers (division by zero gives 0),
/// `floor(a / b)` for floats (one FloorDivide node, as MLX 0.32.4).
pub fn floor_divide(a: &Array, b: &Array) -> Result<Array> {
    binary_op("floor_divide", a, b, binary::FloorDivide {})
}

/// `a % b` with the sign of `b` (Python's `%`); complex is an error.
pub fn remainder(a: &Array, b: &Array) -> Result<Array> {
    no_complex("remainder", a, b)?;
    binary_op("remainder", a, b, binary::Remainder {})
}

/// `(a // b, a % b)` from one DivMod node with two outputs.
pub fn divmod(a: &Array, b: &Array) -> Result<(Array, Array)> {
    no_complex("divmod", a, b)?;
    let (a, b) = promote_and_broadcast("divmod", a, b)?;
    let mut outs = Array::from_primitive_multi(Box::new(binary::DivMod {}), vec![a, b])?;
    let r = outs.pop().expect("DivMod has two outputs");
    let q = outs.pop().expect("DivMod has two outputs");
    Ok((q, r))
}

/// `a ^ b` element-wise, in the promoted dtype (integer powers stay integers).
pub fn power(a: &Array, b: &Array) -> Result<Array> {
    binary_op("power", a, b, binary::Power {})
}

/// Element-wise maximum (NaN propagates).
pub fn maximum(a: &Array, b: &Array) -> Result<Array> {
    binary_op("maximum", a, b, binary::Maximum {})
}

/// Element-wise minimum (NaN propagates).
pub fn minimum(a: &Array, b: &Array) -> Result<Array> {
    binary_op("minimum", a, b, binary::Minimum {})
}

/// `a == b` (bool).
pub fn equal(a: &Array, b: &Array) -> Result<Array> {
    binary_op("equal", a, b, binary::Equal { equal_nan: false })
}

/// `a != b` (bool).
pub fn not_equal(a: &Array, b: &Array) -> Result<Array> {
    binary_op("not_equal", a, b, binary::NotEqual {})
}

/// `a < b` (bool; complex compares lexicographically, as MLX).
pub fn less(a: &Array, b: &Array) -> Result<Array> {
    binary_op("less", a, b, binary::Less {})
}

/// `a <= b` (bool).
pub fn less_equal(a: &Array, b: &Array) -> Result<Array> {
    binary_op("less_equal", a, b, binary::LessEqual {})
}

/// `a > b` (bool).
pub fn greater(a: &Array, b: &Array) -> Result<Array> {
    binary_op("greater", a, b, binary::Greater {})
}

/// `a >= b` (bool).
pub fn greater_equal(a: &Array, b: &Array) -> Result<Array> {
    binary_op("greater_equal", a, b, binary::GreaterEqual {})
}

/// Logical and; both inputs are cast to bool first.
pub fn logical_and(a: &Array, b: &Array) -> Result<Array> {
    binary_as("logical_and", a, b, Dtype::Bool, binary::LogicalAnd {})
}

/// Logical or; both inputs are cast to bool first.
pub fn logical_or(a: &Array, b: &Array) -> Result<Array> {
    binary_as("logical_or", a, b, Dtype::Bool, binary::LogicalOr {})
}

/// `log(e^a + e^b)`, in at least float32.
pub fn logaddexp(a: &Array, b: &Array) -> Result<Array> {
    let dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
    binary_as("logaddexp", a, b, dtype, binary::LogAddExp {})
}

/// `atan2(a, b)`, in at least float32; complex is an error.
pub fn arctan2(a: &Array, b: &Array) -> Result<Array> {
    if a.dtype().is_complex() || b.dtype().is_complex() {
        return Err(Error::DtypeNotSupported {
            op: "arctan2".into(),
            dtype: Dtype::Complex64,
        });
    }
    let dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
    binary_as("arctan2", a, b, dtype, binary::ArcTan2 {})
}

/// A BitwiseBinary node in `dtype`, which must be an integer type or bool.
fn bitwise(op_name: &str, a: &Array, b: &Array, op: BitwiseOp, dtype: Dtype) -> Result<Array> {
    if !(dtype.is_integer() || dtype == Dtype::Bool) {
        return Err(Error::invalid(
            op_name,
            format!(
                "only allowed on integer or boolean types, but got types {} and {}",
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    binary_as(op_name, a, b, dtype, binary::BitwiseBinary { op })
}

/// Bitwise and (integers and bool).
pub fn bitwise_and(a: &Array, b: &Array) -> Result<Array> {
    let t = promote_types(a.dtype(), b.dtype());
    bitwise("bitwise_and", a, b, BitwiseOp::And, t)
}

/// Bitwise or (integers and bool).
pub fn bitwise_or(a: &Array, b: &Array) -> Result<Array> {
    let t = promote_types(a.dtype(), b.dtype());
    bitwise("bitwise_or", a, b, BitwiseOp::Or, t)
}

/// Bitwise exclusive or (integers and bool).
pub fn bitwise_xor(a: &Array, b: &Array) -> Result<Array> {
    let t = promote_types(a.dtype(), b.dtype());
    bitwise("bitwise_xor", a, b, BitwiseOp::Xor, t)
}

/// The dtype of a shift: the promoted type, with bool shifted as uint8.
fn shift_dtype(a: &Array, b: &Array) -> Dtype {
    match promote_types(a.dtype(), b.dtype()) {
        Dtype::Bool => Dtype::Uint8,
        t => t,
    }
}

/// `a << b` (integers; bool is shifted as uint8).
pub fn left_shift(a: &Array, b: &Array) -> Result<Array> {
    bitwise("left_shift", a, b, BitwiseOp::LeftShift, shift_dtype(a, b))
}

/// `a >> b` (arithmetic for signed integers; bool is shifted as uint8).
pub fn right_shift(a: &Array, b: &Array) -> Result<Array> {
    bitwise(
        "right_shift",
        a,
        b,
        BitwiseOp::RightShift,
        shift_dtype(a, b),
    )
}

/// `x` where `cond` is true, else `y`: cond is cast to bool, x and y to
/// their promoted dtype, and all three broadcast (one Select node).
pub fn where_(cond: &Array, x: &Array, y: &Array) -> Result<Array> {
    let dtype = promote_types(x.dtype(), y.dtype());
    let shape = broadcast_shapes("where", cond.shape(), x.shape())?;
    let shape = broadcast_shapes("where", &shape, y.shape())?;
    let c = broadcast_as(&cast_to(cond, Dtype::Bool)?, &shape)?;
    let x = broadcast_as(&cast_to(x, dtype)?, &shape)?;
    let y = broadcast_as(&cast_to(y, dtype)?, &shape)?;
    Array::from_primitive(binary::Select {}, vec![c, x, y])
}

/// Limits `a` to `[a_min, a_max]` (Maximum then Minimum); at least one bound is needed.
pub fn clip(a: &Array, a_min: Option<&Array>, a_max: Option<&Array>) -> Result<Array> {
    if a_min.is_none() && a_max.is_none() {
        return Err(Error::invalid(
            "clip",
            "at most one of a_min and a_max may be None",
        ));
    }
    let mut r = a.clone();
    if let Some(lo) = a_min {
        r = maximum(&r, lo)?;
    }
    if let Some(hi) = a_max {
        r = minimum(&r, hi)?;
    }
    Ok(r)
}
