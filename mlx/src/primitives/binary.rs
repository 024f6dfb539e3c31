//! Element-wise binary primitives (and `Select`). Inputs share one dtype;
//! shapes are broadcast (ops insert explicit Broadcast nodes, as MLX does,
//! but files written by hand may rely on the kernel broadcasting).
//! Semantics are MLX 0.32.4's CPU ones: integer division by zero gives 0,
//! `x % 0 = x` for integers, NaN in the first operand of max/min wins.

use super::expect_inputs;
use super::grad::{constant, elementwise_rules, Partial};
use crate::backend::cpu::copy::to_contiguous_vec;
use crate::backend::cpu::elementwise::{
    binary, binary_chunk, binary_chunk_f16, binary_f16, ternary,
};
use crate::backend::cpu::math::complex;
use crate::backend::cpu::num::{Float, Int, Num};
use crate::buffer::Buffer;
use crate::primitive::{ChunkRef, Spec};
use crate::primitives::shape::broadcast_view;
use crate::{dispatch_dtype, ops, Array, Complex64, Data, Dtype, Error, Primitive, Result};
use half::{bf16, f16};
use std::borrow::Cow;

/// Output spec of a binary op: broadcast shape; `out` dtype or the input's.
pub(crate) fn binary_spec(name: &str, inputs: &[Spec], out: Option<Dtype>) -> Result<Vec<Spec>> {
    expect_inputs(name, inputs, 2)?;
    if inputs[0].dtype != inputs[1].dtype {
        return Err(Error::invalid(
            name,
            format!(
                "inputs must share a dtype, found {} and {}",
                inputs[0].dtype, inputs[1].dtype
            ),
        ));
    }
    let shape = crate::shape::broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
    Ok(vec![Spec::new(shape, out.unwrap_or(inputs[0].dtype))])
}

/// [`binary_spec`] that also checks the dtype with `ok`, naming `what` was expected.
fn checked_spec(
    name: &str,
    inputs: &[Spec],
    ok: impl Fn(Dtype) -> bool,
    what: &str,
) -> Result<Vec<Spec>> {
    let spec = binary_spec(name, inputs, None)?;
    if !ok(inputs[0].dtype) {
        return Err(Error::invalid(
            name,
            format!("expected {what}, found {}", inputs[0].dtype),
        ));
    }
    Ok(spec)
}

/// The two inputs as views of the output's shape.
pub(crate) fn broadcast_inputs<'a>(
    inputs: &'a [Array],
    out: &Spec,
) -> Result<(Cow<'a, Array>, Cow<'a, Array>)> {
    Ok((
        at_shape(&inputs[0], &out.shape)?,
        at_shape(&inputs[1], &out.shape)?,
    ))
}

/// `a` viewed at `shape`; borrowed when it already has it, so that a kernel
/// can still take over its buffer (a clone would count as another owner).
fn at_shape<'a>(a: &'a Array, shape: &[i32]) -> Result<Cow<'a, Array>> {
    if a.shape() == shape {
        Ok(Cow::Borrowed(a))
    } else {
        broadcast_view(a, shape).map(Cow::Owned)
    }
}

/// Defines a binary primitive whose kernel is a [`Num`] method, for every dtype.
///
/// `$via_f32`: float16 computes `f32`'s method and rounds, which the block
/// kernels of [`binary_f16`] do with the CPU's conversion instructions
/// (false for maximum/minimum, which return an operand's own bits).
macro_rules! num_binary {
    ($(#[$doc:meta])* $name:ident, $f:ident, $via_f32:expr, $partial:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
        #[primitive(elementwise)]
        #[primitive(mlx)]
        pub struct $name {}

        impl Primitive for $name {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                binary_spec(stringify!($name), inputs, None)
            }
            fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
                let (a, b) = broadcast_inputs(inputs, &out[0])?;
                if $via_f32 && out[0].dtype == Dtype::Float16 {
                    return Ok(vec![binary_f16(&a, &b, &out[0], <f32 as Num>::$f)?]);
                }
                Ok(vec![dispatch_dtype!(out[0].dtype, T => binary::<T, T>(&a, &b, &out[0], <T as Num>::$f)?)])
            }
            fn eval_chunk(&self, ins: &[ChunkRef], out: &mut [u8], dtype: Dtype) -> Option<Result<()>> {
                let [a, b] = ins else { return None };
                if a.dtype != dtype || b.dtype != dtype {
                    return None;
                }
                if $via_f32 && dtype == Dtype::Float16 {
                    binary_chunk_f16(*a, *b, out, <f32 as Num>::$f);
                    return Some(Ok(()));
                }
                dispatch_dtype!(dtype, T => binary_chunk::<T, T>(*a, *b, out, <T as Num>::$f));
                Some(Ok(()))
            }
            elementwise_rules!($partial);
        }
    };
}

num_binary!(
    /// `a + b` (integers wrap; bool: or).
    Add, add, true, |_, _, _, _| Ok(Partial::One)
);
num_binary!(
    /// `a - b`.
    Subtract, sub, true, |_, i, _, _| Ok(if i == 0 { Partial::One } else { Partial::MinusOne })
);
num_binary!(
    /// `a * b`.
    Multiply, mul, true, |_, i, x, _| Ok(Partial::Times(x[1 - i].clone()))
);
num_binary!(
    /// `a / b` (true division; ops cast integers to float first; an integer
    /// division by zero gives 0).
    Divide, div, true, |_, i, x, _| Ok(if i == 0 {
        Partial::Over(x[1].clone())
    } else {
        // d(a/b)/db = -a / b^2
        Partial::Times(ops::negative(&ops::divide(&x[0], &ops::square(&x[1])?)?)?)
    })
);
num_binary!(
    /// Element-wise maximum: `a` if it is NaN or larger, else `b`.
    Maximum, max, false, |_, i, x, _| selected(i, x, ops::greater, ops::less_equal)
);
num_binary!(
    /// Element-wise minimum: `a` if it is NaN or smaller, else `b`.
    Minimum, min, false, |_, i, x, _| selected(i, x, ops::less, ops::greater_equal)
);

/// The partial of maximum/minimum: the mask of positions where input `i`
/// is the one selected (`first` for input 0, `second` for input 1; ties go
/// to the second input, as in MLX).
fn selected(
    i: usize,
    x: &[Array],
    first: fn(&Array, &Array) -> Result<Array>,
    second: fn(&Array, &Array) -> Result<Array>,
) -> Result<Partial> {
    let f = if i == 0 { first } else { second };
    Ok(Partial::Times(f(&x[0], &x[1])?))
}

/// Applies one of three kernels by dtype class: integers and bool, real
/// floats, complex (`None`: unsupported). The kernels are passed as
/// function pointers so that every op shares one kernel instance per dtype
/// (this keeps compile times down; the arithmetic ops above stay inlined).
macro_rules! by_class {
    ($name:expr, $dtype:expr, $a:expr, $b:expr, $out:expr,
     int: $fi:expr, float: $ff:expr, complex: $fc:expr) => {{
        let (a, b, out) = ($a, $b, $out);
        match $dtype {
            Dtype::Bool => {
                let f: fn(bool, bool) -> bool = $fi;
                binary::<bool, bool>(a, b, out, f)
            }
            Dtype::Uint8 => {
                let f: fn(u8, u8) -> u8 = $fi;
                binary::<u8, u8>(a, b, out, f)
            }
            Dtype::Uint16 => {
                let f: fn(u16, u16) -> u16 = $fi;
                binary::<u16, u16>(a, b, out, f)
            }
            Dtype::Uint32 => {
                let f: fn(u32, u32) -> u32 = $fi;
                binary::<u32, u32>(a, b, out, f)
            }
            Dtype::Uint64 => {
                let f: fn(u64, u64) -> u64 = $fi;
                binary::<u64, u64>(a, b, out, f)
            }
            Dtype::Int8 => {
                let f: fn(i8, i8) -> i8 = $fi;
                binary::<i8, i8>(a, b, out, f)
            }
            Dtype::Int16 => {
                let f: fn(i16, i16) -> i16 = $fi;
                binary::<i16, i16>(a, b, out, f)
            }
            Dtype::Int32 => {
                let f: fn(i32, i32) -> i32 = $fi;
                binary::<i32, i32>(a, b, out, f)
            }
            Dtype::Int64 => {
                let f: fn(i64, i64) -> i64 = $fi;
                binary::<i64, i64>(a, b, out, f)
            }
            Dtype::Float16 => {
                let f: fn(f16, f16) -> f16 = $ff;
                binary::<f16, f16>(a, b, out, f)
            }
            Dtype::Float32 => {
                let f: fn(f32, f32) -> f32 = $ff;
                binary::<f32, f32>(a, b, out, f)
            }
            Dtype::Float64 => {
                let f: fn(f64, f64) -> f64 = $ff;
                binary::<f64, f64>(a, b, out, f)
            }
            Dtype::Bfloat16 => {
                let f: fn(bf16, bf16) -> bf16 = $ff;
                binary::<bf16, bf16>(a, b, out, f)
            }
            Dtype::Complex64 => {
                let fc: Option<fn(Complex64, Complex64) -> Complex64> = $fc;
                match fc {
                    Some(f) => binary::<Complex64, Complex64>(a, b, out, f),
                    None => Err(Error::unsupported($name, "complex64 is not supported")),
                }
            }
        }
    }};
}

/// Never called: the dtype was rejected by `output_specs`.
fn rejected<T>(_: T, _: T) -> T {
    unreachable!("dtype checked by output_specs")
}

/// Floor division: Python's `//` for integers (by zero: 0), `floor(a / b)`
/// for floats (the division rounded in the dtype first), `a / b` for complex.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx_since = "0.32.4")]
pub struct FloorDivide {}

impl Primitive for FloorDivide {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        binary_spec("FloorDivide", inputs, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let d = by_class!("FloorDivide", out[0].dtype, &a, &b, &out[0],
            int: Int::floor_div,
            float: |x, y| Float::floor(Num::div(x, y)),
            complex: Some(Num::div))?;
        Ok(vec![d])
    }
}

/// Python-style remainder (the result has the divisor's sign); for
/// integers `x % 0 = x`; floats go through the IEEE remainder as MLX does.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Remainder {}

impl Primitive for Remainder {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        checked_spec("Remainder", inputs, |d| !d.is_complex(), "a real dtype")
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let d = by_class!("Remainder", out[0].dtype, &a, &b, &out[0],
            int: Int::rem, float: Float::py_rem, complex: None)?;
        Ok(vec![d])
    }
    // a % b = a - floor(a / b) * b: the quotient is piecewise constant.
    elementwise_rules!(|_, i, x, _| Ok(if i == 0 {
        Partial::One
    } else {
        Partial::Times(ops::negative(&ops::floor(&ops::divide(&x[0], &x[1])?)?)?)
    }));
}

/// `a^b`: integer powers by repeated squaring (negative exponents give 0),
/// libm `pow` for floats, complex `exp(b·ln a)`.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Power {}

impl Primitive for Power {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        binary_spec("Power", inputs, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let d = by_class!("Power", out[0].dtype, &a, &b, &out[0],
            int: Int::pow,
            float: |x, y| Float::map2(x, y, f32::powf, f64::powf),
            complex: Some(complex::pow))?;
        Ok(vec![d])
    }
    elementwise_rules!(|_, i, x, y| Ok(Partial::Times(if i == 0 {
        // b * a^(b - 1)
        let b1 = ops::subtract(&x[1], &constant(1.0, &x[1]))?;
        ops::multiply(&ops::power(&x[0], &b1)?, &x[1])?
    } else {
        // log(a) * a^b, and 0 where a^b is 0 (0 * log 0 -> 0).
        let d = ops::multiply(&ops::log(&x[0])?, y)?;
        ops::where_(y, &d, &constant(0.0, &d))?
    })));
}

/// `atan2(a, b)` for real floats (libm).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct ArcTan2 {}

impl Primitive for ArcTan2 {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        checked_spec(
            "ArcTan2",
            inputs,
            Dtype::is_float,
            "a real floating-point dtype",
        )
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let d = by_class!("ArcTan2", out[0].dtype, &a, &b, &out[0],
            int: rejected,
            float: |x, y| Float::map2(x, y, f32::atan2, f64::atan2),
            complex: None)?;
        Ok(vec![d])
    }
    // d atan2(a, b) = (b da - a db) / (a^2 + b^2)
    elementwise_rules!(|_, i, x, _| {
        let r = ops::add(&ops::square(&x[0])?, &ops::square(&x[1])?)?;
        let num = if i == 0 {
            x[1].clone()
        } else {
            ops::negative(&x[0])?
        };
        Ok(Partial::Times(ops::divide(&num, &r)?))
    });
}

/// `log(e^a + e^b)` computed as `max + log1p(exp(min - max))` with MLX's exp.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct LogAddExp {}

fn complex_logaddexp(x: Complex64, y: Complex64) -> Complex64 {
    let (maxval, minval) = (Num::max(x, y), Num::min(x, y));
    let inf = f32::INFINITY;
    if minval == Complex64::new(-inf, 0.0) || maxval == Complex64::new(inf, 0.0) {
        return maxval;
    }
    let e = (minval - maxval).exp();
    maxval + (e + Complex64::new(1.0, 0.0)).ln()
}

impl Primitive for LogAddExp {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        checked_spec(
            "LogAddExp",
            inputs,
            Dtype::is_inexact,
            "a floating-point dtype",
        )
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let d = by_class!("LogAddExp", out[0].dtype, &a, &b, &out[0],
            int: rejected,
            float: Float::logaddexp,
            complex: Some(complex_logaddexp))?;
        Ok(vec![d])
    }
    // The weights of each input: sigmoid(a - b) and sigmoid(b - a).
    elementwise_rules!(|_, i, x, _| {
        let (p, q) = if i == 0 {
            (&x[0], &x[1])
        } else {
            (&x[1], &x[0])
        };
        Ok(Partial::Times(ops::sigmoid(&ops::subtract(p, q)?)?))
    });
}

crate::state_enum! {
    /// The operation of [`BitwiseBinary`] (MLX's `BitwiseBinary::Op`).
    pub enum BitwiseOp { And = 0, Or = 1, Xor = 2, LeftShift = 3, RightShift = 4 }
}

/// Bitwise and/or/xor and shifts on integers and bool.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct BitwiseBinary {
    #[state]
    pub op: BitwiseOp,
}

/// Dispatches `$f` (a method of [`Int`]) over the integer and bool dtypes.
macro_rules! int_dispatch {
    ($dtype:expr, $a:expr, $b:expr, $out:expr, $f:ident) => {
        match $dtype {
            Dtype::Bool => {
                let f: fn(bool, bool) -> bool = <bool as Int>::$f;
                binary::<bool, bool>($a, $b, $out, f)
            }
            Dtype::Uint8 => {
                let f: fn(u8, u8) -> u8 = <u8 as Int>::$f;
                binary::<u8, u8>($a, $b, $out, f)
            }
            Dtype::Uint16 => {
                let f: fn(u16, u16) -> u16 = <u16 as Int>::$f;
                binary::<u16, u16>($a, $b, $out, f)
            }
            Dtype::Uint32 => {
                let f: fn(u32, u32) -> u32 = <u32 as Int>::$f;
                binary::<u32, u32>($a, $b, $out, f)
            }
            Dtype::Uint64 => {
                let f: fn(u64, u64) -> u64 = <u64 as Int>::$f;
                binary::<u64, u64>($a, $b, $out, f)
            }
            Dtype::Int8 => {
                let f: fn(i8, i8) -> i8 = <i8 as Int>::$f;
                binary::<i8, i8>($a, $b, $out, f)
            }
            Dtype::Int16 => {
                let f: fn(i16, i16) -> i16 = <i16 as Int>::$f;
                binary::<i16, i16>($a, $b, $out, f)
            }
            Dtype::Int32 => {
                let f: fn(i32, i32) -> i32 = <i32 as Int>::$f;
                binary::<i32, i32>($a, $b, $out, f)
            }
            Dtype::Int64 => {
                let f: fn(i64, i64) -> i64 = <i64 as Int>::$f;
                binary::<i64, i64>($a, $b, $out, f)
            }
            d => Err(Error::unsupported(
                "BitwiseBinary",
                format!("{d} is not supported"),
            )),
        }
    };
}

impl Primitive for BitwiseBinary {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        checked_spec(
            "BitwiseBinary",
            inputs,
            |d| d.is_integer() || d == Dtype::Bool,
            "integer or boolean inputs",
        )
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let (a, b, o) = (&a, &b, &out[0]);
        let d = match self.op {
            BitwiseOp::And => int_dispatch!(o.dtype, a, b, o, bit_and),
            BitwiseOp::Or => int_dispatch!(o.dtype, a, b, o, bit_or),
            BitwiseOp::Xor => int_dispatch!(o.dtype, a, b, o, bit_xor),
            BitwiseOp::LeftShift => int_dispatch!(o.dtype, a, b, o, shl),
            BitwiseOp::RightShift => int_dispatch!(o.dtype, a, b, o, shr),
        }?;
        Ok(vec![d])
    }
    elementwise_rules!(zero);
}

/// Defines a primitive with a bool output from `|x, y| expr` over every dtype.
macro_rules! bool_binary {
    ($(#[$doc:meta])* $name:ident, |$x:ident, $y:ident| $e:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
        #[primitive(elementwise)]
        #[primitive(mlx)]
        pub struct $name {}

        impl Primitive for $name {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                binary_spec(stringify!($name), inputs, Some(Dtype::Bool))
            }
            fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
                let (a, b) = broadcast_inputs(inputs, &out[0])?;
                // A function pointer: all comparisons share one kernel per dtype.
                Ok(vec![dispatch_dtype!(a.dtype(), T => {
                    let f: fn(T, T) -> bool = |$x: T, $y: T| $e;
                    binary::<T, bool>(&a, &b, &out[0], f)?
                })])
            }
            elementwise_rules!(zero);
        }
    };
}

bool_binary!(
    /// `a != b` (NaN differs from everything).
    NotEqual, |x, y| x != y
);
bool_binary!(
    /// `a < b` (complex: lexicographic, as MLX).
    Less, |x, y| x.lt(y)
);
bool_binary!(
    /// `a <= b`.
    LessEqual, |x, y| x.lt(y) || x == y
);
bool_binary!(
    /// `a > b`.
    Greater, |x, y| y.lt(x)
);
bool_binary!(
    /// `a >= b`.
    GreaterEqual, |x, y| y.lt(x) || x == y
);
bool_binary!(
    /// Logical and of the truth values (ops cast to bool first).
    LogicalAnd, |x, y| x.truthy() && y.truthy()
);
bool_binary!(
    /// Logical or of the truth values.
    LogicalOr, |x, y| x.truthy() || y.truthy()
);

/// `a == b`; with `equal_nan`, NaN equals NaN (MLX's `NaNEqual`).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Equal {
    #[state]
    pub equal_nan: bool,
}

impl Primitive for Equal {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        binary_spec("Equal", inputs, Some(Dtype::Bool))
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        Ok(vec![dispatch_dtype!(a.dtype(), T => {
            let f: fn(T, T) -> bool = if self.equal_nan {
                |x: T, y: T| x == y || (x.is_nan() && y.is_nan())
            } else {
                |x: T, y: T| x == y
            };
            binary::<T, bool>(&a, &b, &out[0], f)?
        })])
    }
    elementwise_rules!(zero);
}

/// Quotient and remainder at once (two outputs): floor division and the
/// Python remainder (fmod-based for floats, as MLX's DivMod).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(mlx)]
#[primitive(mlx_meaning(
    "0.32.2",
    "rounds the quotient toward zero, and the remainder takes the dividend's sign"
))]
pub struct DivMod {}

/// Both outputs of DivMod from row-major copies of the inputs.
fn divmod_kernel<T: Num>(
    a: &Array,
    b: &Array,
    out: &Spec,
    f: impl Fn(T, T) -> (T, T),
) -> Result<[Data; 2]> {
    let shape = &out.shape;
    let xa = to_contiguous_vec::<T>(&a.data()?, shape);
    let xb = to_contiguous_vec::<T>(&b.data()?, shape);
    let (q, r): (Vec<T>, Vec<T>) = xa.into_iter().zip(xb).map(|(x, y)| f(x, y)).unzip();
    Ok([
        Data::contiguous(Buffer::from_slice(&q), shape),
        Data::contiguous(Buffer::from_slice(&r), shape),
    ])
}

fn int_divmod<T: Int>(x: T, y: T) -> (T, T) {
    (x.floor_div(y), x.rem(y))
}

impl Primitive for DivMod {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let spec = checked_spec("DivMod", inputs, |d| !d.is_complex(), "a real dtype")?;
        Ok(vec![spec[0].clone(), spec[0].clone()])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, b) = broadcast_inputs(inputs, &out[0])?;
        let (a, b, o) = (&a, &b, &out[0]);
        let [q, r] = match o.dtype {
            Dtype::Bool => divmod_kernel::<bool>(a, b, o, int_divmod)?,
            Dtype::Uint8 => divmod_kernel::<u8>(a, b, o, int_divmod)?,
            Dtype::Uint16 => divmod_kernel::<u16>(a, b, o, int_divmod)?,
            Dtype::Uint32 => divmod_kernel::<u32>(a, b, o, int_divmod)?,
            Dtype::Uint64 => divmod_kernel::<u64>(a, b, o, int_divmod)?,
            Dtype::Int8 => divmod_kernel::<i8>(a, b, o, int_divmod)?,
            Dtype::Int16 => divmod_kernel::<i16>(a, b, o, int_divmod)?,
            Dtype::Int32 => divmod_kernel::<i32>(a, b, o, int_divmod)?,
            Dtype::Int64 => divmod_kernel::<i64>(a, b, o, int_divmod)?,
            Dtype::Float16 => divmod_kernel::<f16>(a, b, o, Float::divmod)?,
            Dtype::Float32 => divmod_kernel::<f32>(a, b, o, Float::divmod)?,
            Dtype::Float64 => divmod_kernel::<f64>(a, b, o, Float::divmod)?,
            Dtype::Bfloat16 => divmod_kernel::<bf16>(a, b, o, Float::divmod)?,
            Dtype::Complex64 => {
                return Err(Error::unsupported("DivMod", "complex64 is not supported"))
            }
        };
        Ok(vec![q, r])
    }
    elementwise_rules!(zero);
}

/// `cond ? a : b` element-wise; inputs (bool condition, a, b) broadcast.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Select {}

impl Primitive for Select {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("Select", inputs, 3)?;
        if inputs[0].dtype != Dtype::Bool {
            return Err(Error::invalid(
                "Select",
                format!("the condition must be bool, found {}", inputs[0].dtype),
            ));
        }
        let spec = binary_spec("Select", &inputs[1..], None)?;
        let shape = crate::shape::broadcast_shapes("Select", &inputs[0].shape, &spec[0].shape)?;
        Ok(vec![Spec::new(shape, spec[0].dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let o = &out[0];
        let c = broadcast_view(&inputs[0], &o.shape)?;
        let a = broadcast_view(&inputs[1], &o.shape)?;
        let b = broadcast_view(&inputs[2], &o.shape)?;
        Ok(vec![
            dispatch_dtype!(o.dtype, T => ternary::<bool, T, T>(&c, &a, &b, o, |c, x, y| if c { x } else { y })?),
        ])
    }
    elementwise_rules!(|_, i, x, _| Ok(match i {
        0 => Partial::Zero,
        1 => Partial::Times(x[0].clone()),
        _ => Partial::Times(ops::logical_not(&x[0])?),
    }));
}
