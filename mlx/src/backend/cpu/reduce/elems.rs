//! Per-element-type facts the reductions need: accumulators for sum and
//! product (MLX's result dtypes), identity values for min and max, and
//! truthiness for all/any.

use crate::backend::cpu::num::{bf16_to_f32, f16_round, f16_to_f32};
use crate::{Complex64, Element};
use half::{bf16, f16};

/// Sum and product accumulation for one element type.
///
/// Integers of 4 bytes or less (and bool) accumulate in wrapping 32-bit
/// arithmetic, signed ones giving int32 and unsigned ones uint32 (MLX's
/// dtypes; the bits are the same); 8-byte integers keep their type; half
/// types accumulate in f32 and round once at the end.
pub trait SumElem: Element {
    /// Whether additions round, so the order of the fold shows in the result
    /// (floats and complex; integer sums wrap the same in any order).
    const ROUNDS: bool;
    type Acc: Copy + Send + Sync;
    type Out: Element;
    fn to_acc(self) -> Self::Acc;
    fn acc_zero() -> Self::Acc;
    fn acc_one() -> Self::Acc;
    fn acc_add(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn acc_mul(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn acc_out(a: Self::Acc) -> Self::Out;
}

macro_rules! int_sum {
    ($($t:ty => $acc:ty, $out:ty);* $(;)?) => {$(
        impl SumElem for $t {
            const ROUNDS: bool = false;
            type Acc = $acc;
            type Out = $out;
            #[inline(always)]
            fn to_acc(self) -> $acc { self as $acc }
            #[inline(always)]
            fn acc_zero() -> $acc { 0 }
            #[inline(always)]
            fn acc_one() -> $acc { 1 }
            #[inline(always)]
            fn acc_add(a: $acc, b: $acc) -> $acc { a.wrapping_add(b) }
            #[inline(always)]
            fn acc_mul(a: $acc, b: $acc) -> $acc { a.wrapping_mul(b) }
            #[inline(always)]
            fn acc_out(a: $acc) -> $out { a as $out }
        }
    )*};
}
int_sum! {
    bool => i32, i32;
    u8 => i32, u32;
    u16 => i32, u32;
    u32 => i32, u32;
    i8 => i32, i32;
    i16 => i32, i32;
    i32 => i32, i32;
    u64 => u64, u64;
    i64 => i64, i64;
}

macro_rules! float_sum {
    ($($t:ty => $acc:ty, $to:expr, $from:expr);* $(;)?) => {$(
        impl SumElem for $t {
            const ROUNDS: bool = true;
            type Acc = $acc;
            type Out = $t;
            #[inline(always)]
            fn to_acc(self) -> $acc { $to(self) }
            #[inline(always)]
            fn acc_zero() -> $acc { 0.0 }
            #[inline(always)]
            fn acc_one() -> $acc { 1.0 }
            #[inline(always)]
            fn acc_add(a: $acc, b: $acc) -> $acc { a + b }
            #[inline(always)]
            fn acc_mul(a: $acc, b: $acc) -> $acc { a * b }
            #[inline(always)]
            fn acc_out(a: $acc) -> $t { $from(a) }
        }
    )*};
}
float_sum! {
    f32 => f32, |x: f32| x, |a: f32| a;
    f64 => f64, |x: f64| x, |a: f64| a;
    f16 => f32, f16_to_f32, f16_round;
    bf16 => f32, bf16_to_f32, bf16::from_f32;
}

impl SumElem for Complex64 {
    const ROUNDS: bool = true;
    type Acc = Complex64;
    type Out = Complex64;
    fn to_acc(self) -> Complex64 {
        self
    }
    fn acc_zero() -> Complex64 {
        Complex64::new(0.0, 0.0)
    }
    fn acc_one() -> Complex64 {
        Complex64::new(1.0, 0.0)
    }
    fn acc_add(a: Complex64, b: Complex64) -> Complex64 {
        a + b
    }
    fn acc_mul(a: Complex64, b: Complex64) -> Complex64 {
        a * b
    }
    fn acc_out(a: Complex64) -> Complex64 {
        a
    }
}

/// The identities of max and min: the lowest and highest values (±inf for floats).
pub trait Limits: Element {
    fn lowest() -> Self;
    fn highest() -> Self;
}

macro_rules! int_limits {
    ($($t:ty),*) => {$(
        impl Limits for $t {
            fn lowest() -> $t { <$t>::MIN }
            fn highest() -> $t { <$t>::MAX }
        }
    )*};
}
int_limits!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float_limits {
    ($($t:ty),*) => {$(
        impl Limits for $t {
            fn lowest() -> $t { <$t>::NEG_INFINITY }
            fn highest() -> $t { <$t>::INFINITY }
        }
    )*};
}
float_limits!(f32, f64, f16, bf16);

impl Limits for bool {
    fn lowest() -> bool {
        false
    }
    fn highest() -> bool {
        true
    }
}

impl Limits for Complex64 {
    fn lowest() -> Complex64 {
        Complex64::new(f32::NEG_INFINITY, 0.0)
    }
    fn highest() -> Complex64 {
        Complex64::new(f32::INFINITY, 0.0)
    }
}

/// Whether an element counts as true in all/any: non-zero (-0.0 is zero, NaN is true).
pub trait Truthy: Element {
    fn truthy(self) -> bool;
}

macro_rules! int_truthy {
    ($($t:ty),*) => {$(
        impl Truthy for $t {
            #[inline(always)]
            fn truthy(self) -> bool { self != 0 }
        }
    )*};
}
int_truthy!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float_truthy {
    ($($t:ty => $zero:expr),*) => {$(
        impl Truthy for $t {
            #[inline(always)]
            fn truthy(self) -> bool { self != $zero }
        }
    )*};
}
float_truthy!(f32 => 0.0, f64 => 0.0, f16 => f16::ZERO, bf16 => bf16::ZERO);

impl Truthy for bool {
    #[inline(always)]
    fn truthy(self) -> bool {
        self
    }
}

impl Truthy for Complex64 {
    fn truthy(self) -> bool {
        self.re != 0.0 || self.im != 0.0
    }
}
