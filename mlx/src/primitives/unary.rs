//! Element-wise unary primitives and dtype conversion, with MLX's CPU
//! semantics: float math on f16/bf16 is computed in f32 and rounded once,
//! `Exp`/`Sin`/`Cos`/`Erf`/`ErfInv`/`Sigmoid` use MLX's own formulas
//! (bit-exact in f32), everything else the C math library.

use super::expect_inputs;
use super::grad::{constant, elementwise_rules, linear_rules, unbroadcast, Partial};
use crate::backend::cpu::cast::Cast;
use crate::backend::cpu::elementwise::{
    convert_f16, unary, unary_chunk, unary_f16, unary_f16_rounding_twice,
};
use crate::backend::cpu::f16c;
use crate::backend::cpu::math::{self, complex};
use crate::backend::cpu::num::{Float, Num};
use crate::primitive::{ChunkRef, Spec};
use crate::{dispatch_dtype, ops, Array, Complex64, Data, Dtype, Error, Primitive, Result};
use half::{bf16, f16};

/// Converts elements to another dtype (float to int truncates toward zero).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct AsType {
    #[state]
    pub dtype: Dtype,
}

impl Primitive for AsType {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        expect_inputs("AsType", inputs, 1)?;
        Ok(vec![Spec::new(inputs[0].shape.clone(), self.dtype)])
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        // float32 <-> float16 with the CPU's conversion instructions (the
        // same bits as the element casts).
        match (a.dtype(), self.dtype) {
            (Dtype::Float32, Dtype::Float16) => {
                let d = convert_f16::<f32, f16>(
                    a,
                    &out[0],
                    // SAFETY: `convert_f16` runs blocks only on a CPU with F16C.
                    #[inline(always)]
                    |s, o| unsafe { f16c::narrow(s, o) },
                    |x| x.cast(),
                )?;
                return Ok(vec![d]);
            }
            (Dtype::Float16, Dtype::Float32) => {
                let d = convert_f16::<f16, f32>(
                    a,
                    &out[0],
                    // SAFETY: as above.
                    #[inline(always)]
                    |s, o| unsafe { f16c::widen(s, o) },
                    |x| x.cast(),
                )?;
                return Ok(vec![d]);
            }
            _ => {}
        }
        let d = dispatch_dtype!(a.dtype(), S => dispatch_dtype!(self.dtype, D => unary::<S, D>(a, &out[0], |x: S| x.cast::<D>())?));
        Ok(vec![d])
    }
    linear_rules!(|_, x, c| unbroadcast(c.clone(), x.shape(), x.dtype()));
}

/// Which dtypes a unary primitive accepts.
#[derive(Clone, Copy, PartialEq)]
enum Accepts {
    /// Every dtype.
    All,
    /// f16, f32, f64, bf16 and complex64.
    Inexact,
    /// f16, f32, f64 and bf16.
    RealFloat,
    /// complex64 only.
    Complex,
}

/// Output spec of a unary primitive: the input's shape; `out` dtype or the input's.
fn unary_spec(
    name: &str,
    inputs: &[Spec],
    accepts: Accepts,
    out: Option<Dtype>,
) -> Result<Vec<Spec>> {
    expect_inputs(name, inputs, 1)?;
    let d = inputs[0].dtype;
    let ok = match accepts {
        Accepts::All => true,
        Accepts::Inexact => d.is_inexact(),
        Accepts::RealFloat => d.is_float(),
        Accepts::Complex => d.is_complex(),
    };
    if !ok {
        let what = match accepts {
            Accepts::All => "any dtype",
            Accepts::Inexact => "a floating-point or complex input",
            Accepts::RealFloat => "a real floating-point input",
            Accepts::Complex => "a complex64 input",
        };
        return Err(Error::invalid(
            name,
            format!("expected {what}, found {d} (ops cast integers to float32 first)"),
        ));
    }
    Ok(vec![Spec::new(inputs[0].shape.clone(), out.unwrap_or(d))])
}

/// The per-dtype functions of a floating-point unary primitive.
struct FloatFn<F, G> {
    f32: F,
    f64: G,
    c64: Option<fn(Complex64) -> Complex64>,
}

/// Applies `k` to a floating-point or complex array (half types through
/// f32). Generic over the functions so that they inline into the loop.
fn float_map<F, G>(name: &str, a: &Array, out: &Spec, k: &FloatFn<F, G>) -> Result<Data>
where
    F: Fn(f32) -> f32 + Sync + Copy,
    G: Fn(f64) -> f64 + Sync + Copy,
{
    let (f, g) = (k.f32, k.f64);
    match a.dtype() {
        Dtype::Float32 => unary::<f32, f32>(a, out, f),
        Dtype::Float64 => unary::<f64, f64>(a, out, g),
        Dtype::Float16 => unary_f16(a, out, f),
        Dtype::Bfloat16 => unary::<bf16, bf16>(a, out, move |x| x.map(f, g)),
        Dtype::Complex64 => match k.c64 {
            Some(c) => unary::<Complex64, Complex64>(a, out, c),
            None => Err(Error::unsupported(name, "complex64 is not supported")),
        },
        d => Err(Error::unsupported(name, format!("{d} is not supported"))),
    }
}

/// A float32 chunk of a fused chain through `f` (the chain's
/// [`Primitive::eval_chunk`]); other dtypes take the array path.
#[inline(always)]
fn f32_chunk(
    ins: &[ChunkRef],
    out: &mut [u8],
    dtype: Dtype,
    f: impl Fn(f32) -> f32,
) -> Option<Result<()>> {
    let [a] = ins else { return None };
    if a.dtype != Dtype::Float32 || dtype != Dtype::Float32 {
        return None;
    }
    unary_chunk::<f32, f32>(*a, out, f);
    Some(Ok(()))
}

/// Defines a floating-point unary primitive from its f32, f64 and complex functions.
macro_rules! float_unary {
    ($(#[$doc:meta])* $name:ident, $accepts:expr, $f32:expr, $f64:expr, $c64:expr, $partial:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
        #[primitive(elementwise)]
        #[primitive(mlx)]
        pub struct $name {}

        impl Primitive for $name {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                unary_spec(stringify!($name), inputs, $accepts, None)
            }
            fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
                let k = FloatFn { f32: $f32, f64: $f64, c64: $c64 };
                Ok(vec![float_map(stringify!($name), &inputs[0], &out[0], &k)?])
            }
            fn eval_chunk(&self, ins: &[ChunkRef], out: &mut [u8], dtype: Dtype) -> Option<Result<()>> {
                f32_chunk(ins, out, dtype, $f32)
            }
            elementwise_rules!($partial);
        }
    };
}

/// `1 + s * x^2` (the shared piece of the inverse trig derivatives).
fn one_plus_square(x: &Array, s: f64) -> Result<Array> {
    let sq = ops::square(x)?;
    let sq = if s < 0.0 { ops::negative(&sq)? } else { sq };
    ops::add(&constant(1.0, x), &sq)
}

/// `Partial::Times(f(x))` for a derivative that is a function of the input.
fn times(f: impl FnOnce() -> Result<Array>) -> Result<Partial> {
    Ok(Partial::Times(f()?))
}

float_unary!(
    /// `e^x` with MLX's polynomial (computed in f32 for every real dtype).
    Exp, Accepts::Inexact, math::exp_f32, |x| math::exp_f32(x as f32) as f64, Some(complex::exp),
    |_, _, _, y| Ok(Partial::Times(y.clone()))
);
float_unary!(
    /// `e^x - 1` (libm).
    Expm1, Accepts::Inexact, f32::exp_m1, f64::exp_m1, None,
    |_, _, _, y| times(|| ops::add(y, &constant(1.0, y)))
);
float_unary!(
    /// `ln(1 + x)` (libm; complex with MLX's cancellation-free formula).
    Log1p, Accepts::Inexact, f32::ln_1p, f64::ln_1p, Some(complex_log1p),
    |_, _, x, _| Ok(Partial::Over(ops::add(&x[0], &constant(1.0, &x[0]))?))
);
float_unary!(
    /// Sine with MLX's Cephes-style reduction (computed in f32).
    Sin, Accepts::Inexact, math::sin_f32, math::sin_f64, Some(complex::sin),
    |_, _, x, _| times(|| ops::cos(&x[0]))
);
float_unary!(
    /// Cosine with MLX's Cephes-style reduction (computed in f32).
    Cos, Accepts::Inexact, math::cos_f32, math::cos_f64, Some(complex::cos),
    |_, _, x, _| times(|| ops::negative(&ops::sin(&x[0])?))
);
float_unary!(
    /// Tangent (libm).
    Tan, Accepts::Inexact, f32::tan, f64::tan, Some(complex::tan),
    |_, _, x, _| Ok(Partial::Over(ops::square(&ops::cos(&x[0])?)?))
);
float_unary!(
    /// Hyperbolic sine (libm).
    Sinh, Accepts::Inexact, f32::sinh, f64::sinh, Some(complex::sinh),
    |_, _, x, _| times(|| ops::cosh(&x[0]))
);
float_unary!(
    /// Hyperbolic cosine (libm).
    Cosh, Accepts::Inexact, f32::cosh, f64::cosh, Some(complex::cosh),
    |_, _, x, _| times(|| ops::sinh(&x[0]))
);
float_unary!(
    /// Hyperbolic tangent (libm).
    Tanh, Accepts::Inexact, f32::tanh, f64::tanh, Some(complex::tanh),
    |_, _, x, _| Ok(Partial::Over(ops::square(&ops::cosh(&x[0])?)?))
);
float_unary!(
    /// Inverse sine (libm).
    ArcSin, Accepts::Inexact, f32::asin, f64::asin, Some(complex::asin),
    |_, _, x, _| times(|| ops::rsqrt(&one_plus_square(&x[0], -1.0)?))
);
float_unary!(
    /// Inverse cosine (libm).
    ArcCos, Accepts::Inexact, f32::acos, f64::acos, Some(complex::acos),
    |_, _, x, _| times(|| ops::negative(&ops::rsqrt(&one_plus_square(&x[0], -1.0)?)?))
);
float_unary!(
    /// Inverse tangent (libm).
    ArcTan, Accepts::Inexact, f32::atan, f64::atan, Some(complex::atan),
    |_, _, x, _| Ok(Partial::Over(one_plus_square(&x[0], 1.0)?))
);
float_unary!(
    /// Inverse hyperbolic sine (libm `asinhf`).
    ArcSinh, Accepts::Inexact, math::asinh_f32, math::asinh_f64, Some(complex::asinh),
    |_, _, x, _| times(|| ops::rsqrt(&one_plus_square(&x[0], 1.0)?))
);
float_unary!(
    /// Inverse hyperbolic cosine (libm `acoshf`).
    ArcCosh, Accepts::Inexact, math::acosh_f32, math::acosh_f64, Some(complex::acosh),
    |_, _, x, _| times(|| ops::rsqrt(&ops::subtract(&ops::square(&x[0])?, &constant(1.0, &x[0]))?))
);
float_unary!(
    /// Inverse hyperbolic tangent (libm `atanhf`).
    ArcTanh, Accepts::Inexact, math::atanh_f32, math::atanh_f64, Some(complex::atanh),
    |_, _, x, _| Ok(Partial::Over(one_plus_square(&x[0], -1.0)?))
);
float_unary!(
    /// The error function with MLX's polynomial (computed in f32).
    Erf, Accepts::RealFloat, math::erf_f32, erf_f64, None,
    |_, _, x, _| times(|| {
        let e = ops::exp(&ops::negative(&ops::square(&x[0])?)?)?;
        ops::multiply(&constant(std::f64::consts::FRAC_2_SQRT_PI, &x[0]), &e)
    })
);
float_unary!(
    /// The inverse error function with MLX's polynomial (computed in f32).
    ErfInv, Accepts::RealFloat, math::erfinv_f32, |x| math::erfinv_f32(x as f32) as f64, None,
    |_, _, _, y| times(|| {
        let e = ops::exp(&ops::square(y)?)?;
        ops::multiply(&constant(1.0 / std::f64::consts::FRAC_2_SQRT_PI, y), &e)
    })
);

fn erf_f64(x: f64) -> f64 {
    let r = math::erf_abs_f32(x as f32) as f64;
    if x > 0.0 {
        r
    } else {
        -r
    }
}

/// MLX's complex `log1p`: accurate near zero, `log|1+z| + i·arg(1+z)` elsewhere.
fn complex_log1p(z: Complex64) -> Complex64 {
    let (x, y) = (z.re, z.im);
    let theta = y.atan2(x + 1.0);
    if z.norm() < 0.5 {
        let r = x * (2.0 + x) + y * y;
        if r == 0.0 {
            return Complex64::new(x, theta);
        }
        Complex64::new(0.5 * r.ln_1p(), theta)
    } else {
        Complex64::new((x + 1.0).hypot(y).ln(), theta)
    }
}

crate::state_enum! {
    /// The base of [`Log`]: MLX's `Log::Base` (two, ten, e).
    pub enum LogBase { Two = 0, Ten = 1, E = 2 }
}

/// Logarithm in base 2, 10 or e (`mx.log2`, `mx.log10`, `mx.log`).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Log {
    #[state]
    pub base: LogBase,
}

impl Primitive for Log {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Log", inputs, Accepts::Inexact, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, o) = (&inputs[0], &out[0]);
        let d = match self.base {
            LogBase::E => float_map(
                "Log",
                a,
                o,
                &FloatFn {
                    f32: f32::ln,
                    f64: f64::ln,
                    c64: Some(complex::ln),
                },
            ),
            LogBase::Two => float_map(
                "Log",
                a,
                o,
                &FloatFn {
                    f32: f32::log2,
                    f64: f64::log2,
                    c64: Some(|z| complex::ln(z).unscale(std::f32::consts::LN_2)),
                },
            ),
            LogBase::Ten => float_map(
                "Log",
                a,
                o,
                &FloatFn {
                    f32: f32::log10,
                    f64: f64::log10,
                    c64: Some(|z| complex::ln(z).unscale(std::f32::consts::LN_10)),
                },
            ),
        };
        Ok(vec![d?])
    }
    // d log_b(x) = dx / (x ln b)
    elementwise_rules!(|p, _, x, _| {
        let x = &x[0];
        Ok(Partial::Over(match p.base {
            LogBase::E => x.clone(),
            LogBase::Two => ops::multiply(x, &constant(std::f64::consts::LN_2, x))?,
            LogBase::Ten => ops::multiply(x, &constant(std::f64::consts::LN_10, x))?,
        }))
    });
}

/// Square root, or its reciprocal when `recip` (`mx.rsqrt`).
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Sqrt {
    #[state]
    pub recip: bool,
}

impl Primitive for Sqrt {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Sqrt", inputs, Accepts::Inexact, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, o) = (&inputs[0], &out[0]);
        if !self.recip {
            let k = FloatFn {
                f32: f32::sqrt,
                f64: f64::sqrt,
                c64: Some(complex::sqrt),
            };
            return Ok(vec![float_map("Sqrt", a, o, &k)?]);
        }
        // MLX computes 1 / sqrt(x) as two operations of the dtype: half
        // types round the square root before dividing.
        let d = match a.dtype() {
            Dtype::Float16 => unary_f16_rounding_twice(a, o, f32::sqrt, |_, s| 1.0 / s)?,
            Dtype::Bfloat16 => unary::<bf16, bf16>(a, o, rsqrt_half)?,
            _ => {
                let k = FloatFn {
                    f32: recip_sqrt,
                    f64: |x: f64| 1.0 / x.sqrt(),
                    c64: Some(|z| math::complex_div(Complex64::new(1.0, 0.0), complex::sqrt(z))),
                };
                float_map("Sqrt", a, o, &k)?
            }
        };
        Ok(vec![d])
    }
    fn eval_chunk(&self, ins: &[ChunkRef], out: &mut [u8], dtype: Dtype) -> Option<Result<()>> {
        if self.recip {
            f32_chunk(ins, out, dtype, recip_sqrt)
        } else {
            f32_chunk(ins, out, dtype, f32::sqrt)
        }
    }
    // sqrt: dx / (2 y); rsqrt: -dx y / (2 x).
    elementwise_rules!(|p, _, x, y| {
        if p.recip {
            let d = ops::divide(&ops::multiply(y, &constant(-0.5, y))?, &x[0])?;
            Ok(Partial::Times(d))
        } else {
            Ok(Partial::Over(ops::multiply(y, &constant(2.0, y))?))
        }
    });
}

/// `1 / sqrt(x)` in float32: MLX's two operations, each rounded.
pub(crate) fn recip_sqrt(x: f32) -> f32 {
    1.0 / x.sqrt()
}

/// `1 / sqrt(x)` in a half type: both operations rounded to the type.
fn rsqrt_half<T: Float>(x: T) -> T {
    T::one().div(x.map(f32::sqrt, f64::sqrt))
}

/// The logistic function 1 / (1 + e^-x) with MLX's formula.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Sigmoid {}

/// MLX's sigmoid of a half type (the exp rounded to `T` first). The
/// element function is always inlined: the kernel's loop (compiled for
/// FMA) then takes it in and vectorizes it. Left to the compiler, float16's
/// stayed a call per element with the exp's multiply-adds as library calls
/// (12x slower than bfloat16's).
fn sigmoid_half<T: Float + crate::Element>(a: &Array, o: &Spec) -> Result<Data> {
    unary::<T, T>(
        a,
        o,
        #[inline(always)]
        |x| T::from_f32(math::sigmoid_half(x.to_f32(), |e| T::from_f32(e).to_f32())),
    )
}

impl Primitive for Sigmoid {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Sigmoid", inputs, Accepts::RealFloat, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let (a, o) = (&inputs[0], &out[0]);
        let d = match a.dtype() {
            Dtype::Float32 => unary::<f32, f32>(a, o, math::sigmoid_f32)?,
            Dtype::Float64 => unary::<f64, f64>(a, o, math::sigmoid_f64)?,
            Dtype::Float16 => unary_f16_rounding_twice(
                a,
                o,
                #[inline(always)]
                |x| math::exp_f32(x.abs()),
                math::sigmoid_from_exp,
            )?,
            Dtype::Bfloat16 => sigmoid_half::<bf16>(a, o)?,
            d => {
                return Err(Error::unsupported(
                    "Sigmoid",
                    format!("{d} is not supported"),
                ))
            }
        };
        Ok(vec![d])
    }
    fn eval_chunk(&self, ins: &[ChunkRef], out: &mut [u8], dtype: Dtype) -> Option<Result<()>> {
        f32_chunk(ins, out, dtype, math::sigmoid_f32)
    }
    elementwise_rules!(|_, _, _, y| times(|| ops::multiply(
        y,
        &ops::subtract(&constant(1.0, y), y)?
    )));
}

/// Defines a primitive that is the identity on integers and bool (the
/// input buffer is shared) and applies a float function otherwise.
macro_rules! rounding_unary {
    ($(#[$doc:meta])* $name:ident, $f32:expr, $f64:expr, $c64:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
        #[primitive(elementwise)]
        #[primitive(mlx)]
        pub struct $name {}

        impl Primitive for $name {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                unary_spec(stringify!($name), inputs, Accepts::All, None)
            }
            fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
                let a = &inputs[0];
                if !a.dtype().is_inexact() {
                    return Ok(vec![a.data()?]);
                }
                let k = FloatFn { f32: $f32, f64: $f64, c64: $c64 };
                Ok(vec![float_map(stringify!($name), a, &out[0], &k)?])
            }
            elementwise_rules!(zero);
        }
    };
}

rounding_unary!(
    /// Rounds down; integers are unchanged.
    Floor, f32::floor, f64::floor, None
);
rounding_unary!(
    /// Rounds up; integers are unchanged.
    Ceil, f32::ceil, f64::ceil, None
);
rounding_unary!(
    /// Rounds half to even (`rint`); integers are unchanged; complex per part.
    Round,
    f32::round_ties_even,
    f64::round_ties_even,
    Some(|z| Complex64::new(z.re.round_ties_even(), z.im.round_ties_even()))
);

/// Defines a primitive over every dtype through a generic function of [`Num`].
/// `$f32`: the function float16 computes in f32 and rounds (with the
/// CPU's conversion instructions, [`unary_f16`]).
macro_rules! num_unary {
    ($(#[$doc:meta])* $name:ident, $f:ident, $f32:expr, $partial:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
        #[primitive(elementwise)]
        #[primitive(mlx)]
        pub struct $name {}

        impl Primitive for $name {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                unary_spec(stringify!($name), inputs, Accepts::All, None)
            }
            fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
                let a = &inputs[0];
                if a.dtype() == Dtype::Float16 {
                    return Ok(vec![unary_f16(a, &out[0], $f32)?]);
                }
                Ok(vec![dispatch_dtype!(a.dtype(), T => unary::<T, T>(a, &out[0], $f::<T>)?)])
            }
            elementwise_rules!($partial);
        }
    };
}

fn negative<T: Num>(x: T) -> T {
    x.neg()
}
fn square<T: Num>(x: T) -> T {
    x.mul(x)
}

/// MLX's sign of a real value: -1, 0 or 1 (NaN and -0 give 0; bool and
/// unsigned give x != 0).
fn sign<T: Num>(x: T) -> T {
    let zero = T::zero();
    if x.lt(zero) {
        T::one().neg()
    } else if zero.lt(x) {
        T::one()
    } else {
        zero
    }
}

/// MLX's sign of a complex value: z / |z|, and 0 for 0.
fn complex_sign(z: Complex64) -> Complex64 {
    if z == Complex64::new(0.0, 0.0) {
        z
    } else {
        math::complex_div(z, Complex64::new(z.norm(), 0.0))
    }
}

num_unary!(
    /// `-x` (integers wrap; bool unchanged, as MLX's kernel does).
    Negative, negative, |x: f32| -x, |_, _, _, _| Ok(Partial::MinusOne)
);
num_unary!(
    /// `x * x`.
    Square, square, |x: f32| x * x, |_, _, x, _| times(|| ops::multiply(&x[0], &constant(2.0, &x[0])))
);
/// -1, 0 or 1 by the sign of x (0 for NaN); complex x / |x|.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Sign {}

impl Primitive for Sign {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Sign", inputs, Accepts::All, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = match a.dtype() {
            Dtype::Bool => a.data()?,
            Dtype::Complex64 => unary::<Complex64, Complex64>(a, &out[0], complex_sign)?,
            d => dispatch_dtype!(d, T => unary::<T, T>(a, &out[0], sign::<T>)?),
        };
        Ok(vec![d])
    }
    elementwise_rules!(zero);
}

/// Absolute value (complex: |z| as a complex; ops then cast to float32).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Abs {}

impl Primitive for Abs {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Abs", inputs, Accepts::All, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        let d = match a.dtype() {
            d if d.is_unsigned_integer() || d == Dtype::Bool => a.data()?,
            Dtype::Float32 => unary::<f32, f32>(a, &out[0], f32::abs)?,
            Dtype::Float64 => unary::<f64, f64>(a, &out[0], f64::abs)?,
            // std::abs of a half type goes through f32 (a NaN gets MLX's NaN pattern).
            Dtype::Float16 => unary_f16(a, &out[0], f32::abs)?,
            Dtype::Bfloat16 => unary::<bf16, bf16>(a, &out[0], |x| x.map(f32::abs, f64::abs))?,
            Dtype::Complex64 => {
                unary::<Complex64, Complex64>(a, &out[0], |z| Complex64::new(z.norm(), 0.0))?
            }
            d => {
                dispatch_dtype!(d, T => unary::<T, T>(a, &out[0], |x: T| if x.lt(T::zero()) { x.neg() } else { x })?)
            }
        };
        Ok(vec![d])
    }
    elementwise_rules!(|_, _, x, _| times(|| ops::sign(&x[0])));
}

/// Logical negation; the output is bool (ops cast the input to bool first).
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct LogicalNot {}

impl Primitive for LogicalNot {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("LogicalNot", inputs, Accepts::All, Some(Dtype::Bool))
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        let a = &inputs[0];
        Ok(vec![
            dispatch_dtype!(a.dtype(), T => unary::<T, bool>(a, &out[0], |x: T| !x.truthy())?),
        ])
    }
    elementwise_rules!(zero);
}

/// The real part of a complex64 array, as float32.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Real {}

impl Primitive for Real {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Real", inputs, Accepts::Complex, Some(Dtype::Float32))
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![unary::<Complex64, f32>(&inputs[0], &out[0], |z| {
            z.re
        })?])
    }
    linear_rules!(|_, _, c| ops::astype(c, Dtype::Complex64));
}

/// The imaginary part of a complex64 array, as float32.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Imag {}

impl Primitive for Imag {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Imag", inputs, Accepts::Complex, Some(Dtype::Float32))
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![unary::<Complex64, f32>(&inputs[0], &out[0], |z| {
            z.im
        })?])
    }
    // The cotangent of Im(z) enters along the imaginary axis.
    linear_rules!(|_, _, c| ops::multiply(&Array::scalar(Complex64::new(0.0, 1.0)), c));
}

/// The complex conjugate of a complex64 array.
#[derive(Debug, Clone, Default, PartialEq, crate::Primitive)]
#[primitive(elementwise)]
#[primitive(mlx)]
pub struct Conjugate {}

impl Primitive for Conjugate {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        unary_spec("Conjugate", inputs, Accepts::Complex, None)
    }
    fn eval(&self, inputs: &[Array], out: &[Spec]) -> Result<Vec<Data>> {
        Ok(vec![unary::<Complex64, Complex64>(
            &inputs[0],
            &out[0],
            |z| z.conj(),
        )?])
    }
    linear_rules!(|_, _, c| ops::conjugate(c));
}
