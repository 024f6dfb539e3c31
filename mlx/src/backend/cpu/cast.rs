//! Element conversion between any two dtypes, as C++ `static_cast` does it
//! (integers wrap, floats truncate toward zero into integers, bool is `!= 0`,
//! complex to real keeps the real part).

use crate::{Complex64, Element};
use half::{bf16, f16};

/// A value in transit between two element types.
#[derive(Clone, Copy)]
pub enum Wide {
    Int(i128),
    Float(f64),
    Complex(f64, f64),
}

/// Conversion through [`Wide`]; implemented for every element type.
pub trait Cast: Element {
    fn to_wide(self) -> Wide;
    fn from_wide(w: Wide) -> Self;
    /// `self` converted to `U`.
    #[inline]
    fn cast<U: Cast>(self) -> U {
        U::from_wide(self.to_wide())
    }
}

macro_rules! int_cast {
    ($($t:ty),*) => {$(
        impl Cast for $t {
            #[inline]
            fn to_wide(self) -> Wide { Wide::Int(self as i128) }
            #[inline]
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Int(i) => i as $t,
                    Wide::Float(f) | Wide::Complex(f, _) => f as $t,
                }
            }
        }
    )*};
}
int_cast!(u8, u16, u32, u64, i8, i16, i32, i64);

impl Cast for bool {
    fn to_wide(self) -> Wide {
        Wide::Int(self as i128)
    }
    fn from_wide(w: Wide) -> Self {
        match w {
            Wide::Int(i) => i != 0,
            Wide::Float(f) => f != 0.0,
            Wide::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
}

macro_rules! float_cast {
    ($($t:ty => $from_f64:expr, $from_f32:expr, $to_f64:expr);*) => {$(
        impl Cast for $t {
            #[inline]
            fn to_wide(self) -> Wide { Wide::Float($to_f64(self)) }
            #[inline]
            fn from_wide(w: Wide) -> Self {
                match w {
                    // Integers convert through f32 when that is exact enough for the
                    // target, as C++ converts int -> float directly.
                    Wide::Int(i) => $from_f64(i as f64),
                    Wide::Float(f) | Wide::Complex(f, _) => $from_f64(f),
                }
            }
        }
    )*};
}
float_cast!(
    f32 => |v: f64| v as f32, |v: f32| v, |x: f32| x as f64;
    f64 => |v: f64| v, |v: f32| v as f64, |x: f64| x;
    f16 => f16::from_f64, f16::from_f32, |x: f16| x.to_f64();
    bf16 => bf16::from_f64, bf16::from_f32, |x: bf16| x.to_f64()
);

impl Cast for Complex64 {
    fn to_wide(self) -> Wide {
        Wide::Complex(self.re as f64, self.im as f64)
    }
    fn from_wide(w: Wide) -> Self {
        match w {
            Wide::Int(i) => Complex64::new(i as f32, 0.0),
            Wide::Float(f) => Complex64::new(f as f32, 0.0),
            Wide::Complex(re, im) => Complex64::new(re as f32, im as f32),
        }
    }
}
