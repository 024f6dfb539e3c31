//! Arithmetic on every element type with MLX's CPU semantics: integers wrap,
//! integer division by zero gives 0 (MLX 0.32.4), half types compute in f32
//! and round once (NaN rounds to MLX's own NaN patterns), bool arithmetic is
//! C++'s (add = or, multiply = and), complex numbers order lexicographically.

use super::math;
use crate::{Complex64, Element};
use half::{bf16, f16};

/// Rounds an f32 to float16 as MLX does (round to nearest even; NaN becomes
/// `sign | 0x7D00`). Branch-free, so loops of it vectorize.
#[inline(always)]
pub fn f16_from_f32(x: f32) -> f16 {
    let sign = ((x.to_bits() >> 16) & 0x8000) as u16;
    let bits = f16_bits_from_f32(x);
    f16::from_bits(if x.is_nan() { sign | 0x7D00 } else { bits })
}

/// float16 as f32, exactly as `half::f16::to_f32` gives it (a NaN keeps
/// its payload and becomes quiet). `half` checks the CPU and calls out for
/// every value, which keeps loops from vectorizing; this is plain bit
/// arithmetic.
#[inline(always)]
pub fn f16_to_f32(h: f16) -> f32 {
    let h = h.to_bits() as u32;
    let magnitude = h & 0x7FFF;
    let sign = (h & 0x8000) << 16;
    // Exponent and significand moved to f32's places read as 2^-112 of the
    // value, subnormals included; the power-of-two product is exact.
    let finite = (f32::from_bits(magnitude << 13) * f32::from_bits(0x7780_0000)).to_bits();
    let quiet = if magnitude > 0x7C00 { 0x0040_0000 } else { 0 };
    let special = (magnitude << 13) | 0x7F80_0000 | quiet;
    f32::from_bits(sign | if magnitude >= 0x7C00 { special } else { finite })
}

/// An f32 rounded to float16 (nearest even) exactly as `half::f16::from_f32`
/// rounds it (a NaN becomes `sign | 0x7E00` with the top of its payload),
/// branch-free so loops of it vectorize.
#[inline(always)]
pub fn f16_round(x: f32) -> f16 {
    f16::from_bits(f16_bits_from_f32(x))
}

/// The bits of [`f16_round`].
#[inline(always)]
fn f16_bits_from_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let a = bits & 0x7FFF_FFFF;
    // Below 2^-14 (float16's subnormals and zero): adding 0.5 puts the
    // value's float16 significand in the low bits, rounded by the addition
    // to nearest even.
    let magic = f32::from_bits(126 << 23);
    let small = (f32::from_bits(a) + magic)
        .to_bits()
        .wrapping_sub(126 << 23);
    // Normal: rebias the exponent and round the 13 dropped bits to nearest
    // even (a carry out of the significand moves into the exponent, up to
    // infinity).
    let odd = (a >> 13) & 1;
    let normal = a.wrapping_sub((127 - 15) << 23).wrapping_add(0xFFF + odd) >> 13;
    let nan = 0x7E00 | (a >> 13) & 0x3FF;
    let out = if a > 0x7F80_0000 {
        nan
    } else if a >= (127 + 16) << 23 {
        0x7C00
    } else if a < (127 - 14) << 23 {
        small
    } else {
        normal
    };
    sign | out as u16
}

/// Widens a bfloat16 as MLX does: it is the top half of an f32, so every
/// value, NaN payloads included, keeps its bits (a signaling NaN stays
/// signaling, where `half`'s `to_f32` sets the quiet bit), and the widening
/// is one shift.
#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// Rounds an f32 to bfloat16 as MLX does (round to nearest even; every NaN
/// becomes `0x7FC0`).
/// Branch-free, so loops of it vectorize.
#[inline(always)]
pub fn bf16_from_f32(x: f32) -> bf16 {
    let u = x.to_bits();
    let rounded = (u.wrapping_add(((u >> 16) & 1) + 0x7FFF) >> 16) as u16;
    bf16::from_bits(if x.is_nan() { 0x7FC0 } else { rounded })
}

/// Element arithmetic used by the generic kernels.
pub trait Num: Element {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Division; integers give 0 when dividing by zero.
    fn div(self, o: Self) -> Self;
    /// `self` if it is NaN or larger, else `o` (MLX's `maximum`).
    fn max(self, o: Self) -> Self;
    /// `self` if it is NaN or smaller, else `o`.
    fn min(self, o: Self) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    /// Ordering used by comparisons (complex: lexicographic).
    fn lt(self, o: Self) -> bool;
    /// `-self` (wrapping for integers; bool is unchanged as in C++).
    fn neg(self) -> Self;
    /// Whether `self` is NaN (complex: either part).
    fn is_nan(self) -> bool {
        false
    }
    /// Whether `self` is non-zero (C++ truthiness).
    fn truthy(self) -> bool {
        self != Self::zero()
    }
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            fn max(self, o: Self) -> Self { if self > o { self } else { o } }
            fn min(self, o: Self) -> Self { if self < o { self } else { o } }
            fn zero() -> Self { 0 }
            fn one() -> Self { 1 }
            fn lt(self, o: Self) -> bool { self < o }
            fn neg(self) -> Self { self.wrapping_neg() }
        }
    )*};
}
int_num!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn add(self, o: Self) -> Self { self + o }
            fn sub(self, o: Self) -> Self { self - o }
            fn mul(self, o: Self) -> Self { self * o }
            fn div(self, o: Self) -> Self { self / o }
            fn max(self, o: Self) -> Self { if self.is_nan() || self > o { self } else { o } }
            fn min(self, o: Self) -> Self { if self.is_nan() || self < o { self } else { o } }
            fn zero() -> Self { 0.0 }
            fn one() -> Self { 1.0 }
            fn lt(self, o: Self) -> bool { self < o }
            fn neg(self) -> Self { -self }
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
        }
    )*};
}
float_num!(f32, f64);

macro_rules! half_num {
    ($($t:ty => $widen:path, $round:path),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { $round($widen(self) + $widen(o)) }
            #[inline(always)]
            fn sub(self, o: Self) -> Self { $round($widen(self) - $widen(o)) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { $round($widen(self) * $widen(o)) }
            #[inline(always)]
            fn div(self, o: Self) -> Self { $round($widen(self) / $widen(o)) }
            fn max(self, o: Self) -> Self { if self.is_nan() || self > o { self } else { o } }
            fn min(self, o: Self) -> Self { if self.is_nan() || self < o { self } else { o } }
            fn zero() -> Self { <$t>::ZERO }
            fn one() -> Self { <$t>::ONE }
            fn lt(self, o: Self) -> bool { self < o }
            fn neg(self) -> Self { $round(-$widen(self)) }
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
        }
    )*};
}
half_num!(f16 => f16_to_f32, f16_from_f32, bf16 => bf16_to_f32, bf16_from_f32);

impl Num for bool {
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn div(self, o: Self) -> Self {
        self & o
    }
    fn max(self, o: Self) -> Self {
        self | o
    }
    fn min(self, o: Self) -> Self {
        self & o
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn lt(self, o: Self) -> bool {
        !self & o
    }
    fn neg(self) -> Self {
        self
    }
}

/// MLX's complex ordering: by real part, then imaginary part.
fn complex_gt(a: Complex64, b: Complex64) -> bool {
    a.re > b.re || (a.re == b.re && a.im > b.im)
}

impl Num for Complex64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn div(self, o: Self) -> Self {
        math::complex_div(self, o)
    }
    fn max(self, o: Self) -> Self {
        if Num::is_nan(self) || complex_gt(self, o) {
            self
        } else {
            o
        }
    }
    fn min(self, o: Self) -> Self {
        if Num::is_nan(self) || complex_gt(o, self) {
            self
        } else {
            o
        }
    }
    fn zero() -> Self {
        Complex64::new(0.0, 0.0)
    }
    fn one() -> Self {
        Complex64::new(1.0, 0.0)
    }
    fn lt(self, o: Self) -> bool {
        complex_gt(o, self)
    }
    fn neg(self) -> Self {
        -self
    }
    fn is_nan(self) -> bool {
        self.re.is_nan() || self.im.is_nan()
    }
}

/// Integer (and bool) operations with C++/MLX semantics.
pub trait Int: Num {
    /// Python floor division; division by zero gives 0.
    fn floor_div(self, o: Self) -> Self;
    /// Python remainder (sign of the divisor); `x % 0 = x`.
    fn rem(self, o: Self) -> Self;
    /// `self^o` by repeated squaring (wrapping); negative exponents give 0.
    fn pow(self, o: Self) -> Self;
    fn bit_and(self, o: Self) -> Self;
    fn bit_or(self, o: Self) -> Self;
    fn bit_xor(self, o: Self) -> Self;
    /// `self << o` after C++ integer promotion; the count is masked as x86 does.
    fn shl(self, o: Self) -> Self;
    /// `self >> o` (arithmetic for signed types).
    fn shr(self, o: Self) -> Self;
}

macro_rules! int_ops {
    ($($t:ty => $wide:ty, $signed:expr);*) => {$(
        impl Int for $t {
            fn floor_div(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                #[allow(unused_comparisons)]
                if $signed && self.wrapping_rem(o) != 0 && ((self < 0) != (o < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            fn rem(self, o: Self) -> Self {
                if o == 0 {
                    return self;
                }
                let r = self.wrapping_rem(o);
                #[allow(unused_comparisons)]
                if $signed && r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                }
            }
            fn pow(self, o: Self) -> Self {
                #[allow(unused_comparisons)]
                if o < 0 {
                    return 0;
                }
                let (mut base, mut e, mut res) = (self, o, 1 as $t);
                while e != 0 {
                    if e & 1 != 0 {
                        res = res.wrapping_mul(base);
                    }
                    e >>= 1;
                    base = base.wrapping_mul(base);
                }
                res
            }
            fn bit_and(self, o: Self) -> Self { self & o }
            fn bit_or(self, o: Self) -> Self { self | o }
            fn bit_xor(self, o: Self) -> Self { self ^ o }
            fn shl(self, o: Self) -> Self { (self as $wide).wrapping_shl(o as u32) as $t }
            fn shr(self, o: Self) -> Self { (self as $wide).wrapping_shr(o as u32) as $t }
        }
    )*};
}
int_ops!(u8 => i32, false; u16 => i32, false; u32 => u32, false; u64 => u64, false;
         i8 => i32, true; i16 => i32, true; i32 => i32, true; i64 => i64, true);

impl Int for bool {
    fn floor_div(self, o: Self) -> Self {
        self & o
    }
    fn rem(self, o: Self) -> Self {
        self & !o
    }
    fn pow(self, o: Self) -> Self {
        !o || self
    }
    fn bit_and(self, o: Self) -> Self {
        self & o
    }
    fn bit_or(self, o: Self) -> Self {
        self | o
    }
    fn bit_xor(self, o: Self) -> Self {
        self ^ o
    }
    fn shl(self, o: Self) -> Self {
        ((self as i32) << (o as i32)) != 0
    }
    fn shr(self, o: Self) -> Self {
        ((self as i32) >> (o as i32)) != 0
    }
}

/// Real floating-point types: how MLX evaluates math on each. f32 uses the
/// function directly; half types go through f32 and round once; f64 uses
/// the f64 function (or, for MLX's own formulas, the f32 one).
pub trait Float: Num + PartialOrd {
    fn to_f32(self) -> f32;
    /// Rounds an f32 as MLX does.
    fn from_f32(x: f32) -> Self;
    /// `f32` for f32 and half types, `f64` for f64.
    fn map(self, f: impl Fn(f32) -> f32, g: impl Fn(f64) -> f64) -> Self;
    /// `f`/`g` of two arguments.
    fn map2(self, o: Self, f: impl Fn(f32, f32) -> f32, g: impl Fn(f64, f64) -> f64) -> Self;
    /// MLX's exp (its own formula, evaluated in f32 for every type).
    fn mlx_exp(self) -> Self;
    fn floor(self) -> Self {
        self.map(f32::floor, f64::floor)
    }
    /// Python remainder via the IEEE remainder, as MLX computes it.
    fn py_rem(self, o: Self) -> Self {
        let r = self.map2(o, math::ieee_remainder_f32, math::ieee_remainder_f64);
        if r != Self::zero() && (r < Self::zero()) != (o < Self::zero()) {
            r.add(o)
        } else {
            r
        }
    }
    /// MLX's DivMod on floats: (floor(x / y), fmod-based Python remainder).
    fn divmod(self, o: Self) -> (Self, Self) {
        let r = self.map2(o, |a, b| a % b, |a, b| a % b);
        let r = if r != Self::zero() && (r < Self::zero()) != (o < Self::zero()) {
            r.add(o)
        } else {
            r
        };
        (self.div(o).floor(), r)
    }
    /// MLX's log-add-exp: max + log1p(exp(min − max)), each step in this type.
    fn logaddexp(self, o: Self) -> Self {
        let maxval = self.max(o);
        let minval = self.min(o);
        let inf = Self::from_f32(f32::INFINITY);
        if minval == inf.neg() || maxval == inf {
            return maxval;
        }
        let e = minval.sub(maxval).mlx_exp();
        maxval.add(e.map(f32::ln_1p, f64::ln_1p))
    }
}

impl Float for f32 {
    // Inlined always: kernels compiled for AVX2 call these per element, and
    // an out-of-line call there spills every vector register.
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        x
    }
    fn map(self, f: impl Fn(f32) -> f32, _g: impl Fn(f64) -> f64) -> Self {
        f(self)
    }
    fn map2(self, o: Self, f: impl Fn(f32, f32) -> f32, _g: impl Fn(f64, f64) -> f64) -> Self {
        f(self, o)
    }
    fn mlx_exp(self) -> Self {
        math::exp_f32(self)
    }
}

impl Float for f64 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        x as f64
    }
    fn map(self, _f: impl Fn(f32) -> f32, g: impl Fn(f64) -> f64) -> Self {
        g(self)
    }
    fn map2(self, o: Self, _f: impl Fn(f32, f32) -> f32, g: impl Fn(f64, f64) -> f64) -> Self {
        g(self, o)
    }
    fn mlx_exp(self) -> Self {
        math::exp_f32(self as f32) as f64
    }
}

macro_rules! half_float {
    ($($t:ty => $widen:path, $round:path),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn to_f32(self) -> f32 { $widen(self) }
            #[inline(always)]
            fn from_f32(x: f32) -> Self { $round(x) }
            fn map(self, f: impl Fn(f32) -> f32, _g: impl Fn(f64) -> f64) -> Self {
                $round(f($widen(self)))
            }
            fn map2(self, o: Self, f: impl Fn(f32, f32) -> f32, _g: impl Fn(f64, f64) -> f64) -> Self {
                $round(f($widen(self), $widen(o)))
            }
            fn mlx_exp(self) -> Self { $round(math::exp_f32($widen(self))) }
        }
    )*};
}
half_float!(f16 => f16_to_f32, f16_from_f32, bf16 => bf16_to_f32, bf16_from_f32);

/// Calls `$body` with `$T` bound to the element type of `$dtype` (all have [`Num`]).
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_num {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtype!($dtype, $T => $body)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_semantics() {
        assert_eq!(Int::floor_div(-7i32, 2), -4);
        assert_eq!(Int::floor_div(7i32, 0), 0);
        assert_eq!(Int::rem(-7i32, 2), 1);
        assert_eq!(Int::rem(7i32, -2), -1);
        assert_eq!(Int::rem(-7i32, 0), -7);
        assert_eq!(Int::pow(3i32, 4), 81);
        assert_eq!(Int::pow(2i32, -1), 0);
        assert_eq!(Int::shl(1i32, 33), 2);
        assert_eq!(Int::shl(1i8, 9), 0);
        assert_eq!(Int::shr(-5i8, 1), -3);
    }

    /// Every float16 widens to the f32 `half` gives (F16C where the CPU
    /// has it), NaN payloads included.
    #[test]
    fn float16_widens_as_half_does() {
        for bits in 0..=u16::MAX {
            let h = half::f16::from_bits(bits);
            assert_eq!(f16_to_f32(h).to_bits(), h.to_f32().to_bits(), "{bits:#06x}");
        }
    }

    /// f32 values round to the float16 `half` gives: every upper 19 bits
    /// with low bits at and around the halfway points of normals, and a
    /// pseudo-random sweep (subnormals, overflow, NaN payloads among them).
    #[test]
    fn float16_rounds_as_half_does() {
        let check = |bits: u32| {
            let x = f32::from_bits(bits);
            assert_eq!(
                f16_round(x).to_bits(),
                half::f16::from_f32(x).to_bits(),
                "{bits:#010x}"
            );
            if !x.is_nan() {
                assert_eq!(f16_from_f32(x), f16_round(x));
            }
        };
        for high in 0..1u32 << 19 {
            for low in [0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF] {
                check(high << 13 | low);
            }
        }
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..1 << 20 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            check((state >> 32) as u32);
        }
    }

    #[test]
    fn half_nan_patterns() {
        assert_eq!(f16_from_f32(f32::NAN).to_bits(), 0x7D00);
        assert_eq!(f16_from_f32(-f32::NAN).to_bits(), 0xFD00);
        assert_eq!(bf16_from_f32(-f32::NAN).to_bits(), 0x7FC0);
        assert_eq!(bf16_from_f32(1.003_906_2).to_bits(), 0x3F80);
    }
}
