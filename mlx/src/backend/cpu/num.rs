//! Arithmetic on every element type with MLX's CPU semantics: integers wrap,
//! division by zero never panics, half types compute in f32 and round once,
//! bool arithmetic is C++'s (add = or, multiply = and).

use crate::{Complex64, Element};
use half::{bf16, f16};

/// Element arithmetic used by the generic kernels.
pub trait Num: Element {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    /// Larger of the two; NaN wins (MLX propagates NaN).
    fn max(self, o: Self) -> Self;
    /// Smaller of the two; NaN wins.
    fn min(self, o: Self) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    /// Ordering used by comparisons (complex: lexicographic).
    fn lt(self, o: Self) -> bool;
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
            fn zero() -> Self { <$t as num_traits::Zero>::zero() }
            fn one() -> Self { <$t as num_traits::One>::one() }
            fn lt(self, o: Self) -> bool { self < o }
        }
    )*};
}
float_num!(f32, f64, f16, bf16);

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
        self / o
    }
    fn max(self, o: Self) -> Self {
        if o.lt(self) {
            self
        } else {
            o
        }
    }
    fn min(self, o: Self) -> Self {
        if self.lt(o) {
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
        (self.re, self.im) < (o.re, o.im)
    }
}

/// Calls `$body` with `$T` bound to the element type of `$dtype` (all have [`Num`]).
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_num {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtype!($dtype, $T => $body)
    };
}
