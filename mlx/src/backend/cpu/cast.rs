//! Element conversion between any two dtypes, as MLX's C++ `static_cast`
//! does it on x86-64: integers wrap; floats truncate toward zero into
//! integers, through a 32-bit conversion for types up to 32 bits (an
//! out-of-range value gives `i32::MIN` before wrapping, so 300.0 -> uint8 is
//! 44) and a 64-bit one otherwise; bool is `!= 0`; complex to real keeps the
//! real part; half types are reached through f32 (so f64 -> f16 rounds
//! twice, as in MLX) with MLX's NaN patterns.

use super::num::{bf16_from_f32, bf16_to_f32, f16_from_f32, f16_to_f32};
use crate::{Complex64, Element};
use half::{bf16, f16};

/// x86 `cvttsd2si` into 32 bits: NaN and out-of-range give `i32::MIN`.
fn trunc_i32(v: f64) -> i32 {
    if !(v > -2147483649.0 && v < 2147483648.0) {
        i32::MIN
    } else {
        v as i32
    }
}

/// x86 `cvttsd2si` into 64 bits: NaN and out-of-range give `i64::MIN`.
fn trunc_i64(v: f64) -> i64 {
    if !(-9223372036854775808.0..9223372036854775808.0).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// The float -> uint64 sequence compilers emit on x86-64.
fn trunc_u64(v: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    if v < TWO63 {
        trunc_i64(v) as u64
    } else {
        (trunc_i64(v - TWO63) as u64) ^ (1u64 << 63)
    }
}

/// A value in transit between two element types.
#[derive(Clone, Copy)]
pub enum Wide {
    Int(i128),
    Float(f64),
    /// A float32's or bfloat16's value with its f32 bits: an f32 or
    /// complex64 target takes them as they are (MLX keeps a float32's bits
    /// there and widens bfloat16 by a shift, so a signaling NaN stays
    /// signaling, where the f64 transit would quiet it).
    Single(f32),
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
    ($($t:ty => $trunc:ident),*) => {$(
        impl Cast for $t {
            #[inline]
            fn to_wide(self) -> Wide { Wide::Int(self as i128) }
            #[inline]
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Int(i) => i as $t,
                    Wide::Float(f) | Wide::Complex(f, _) => $trunc(f) as $t,
                    Wide::Single(f) => $trunc(f as f64) as $t,
                }
            }
        }
    )*};
}
int_cast!(u8 => trunc_i32, u16 => trunc_i32, u32 => trunc_i64, u64 => trunc_u64,
          i8 => trunc_i32, i16 => trunc_i32, i32 => trunc_i32, i64 => trunc_i64);

impl Cast for bool {
    fn to_wide(self) -> Wide {
        Wide::Int(self as i128)
    }
    fn from_wide(w: Wide) -> Self {
        match w {
            Wide::Int(i) => i != 0,
            Wide::Float(f) => f != 0.0,
            Wide::Single(f) => f != 0.0,
            Wide::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
}

macro_rules! float_cast {
    ($($t:ty => $from_f64:expr, $from_f32:expr, $from_int:expr, $to_wide:expr);*) => {$(
        impl Cast for $t {
            #[inline]
            fn to_wide(self) -> Wide { $to_wide(self) }
            #[inline]
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Int(i) => $from_int(i),
                    Wide::Float(f) | Wide::Complex(f, _) => $from_f64(f),
                    Wide::Single(f) => $from_f32(f),
                }
            }
        }
    )*};
}
float_cast!(
    f32 => |v: f64| v as f32, |v: f32| v, |i: i128| i as f32, |x: f32| Wide::Single(x);
    f64 => |v: f64| v, |v: f32| v as f64, |i: i128| i as f64, |x: f64| Wide::Float(x);
    // Widened through the branch-free `f16_to_f32` (exact, as f32 -> f64
    // is): `half`'s own checks the CPU per value, so no cast loop from
    // float16 vectorized.
    f16 => |v: f64| f16_from_f32(v as f32), f16_from_f32, |i: i128| f16_from_f32(i as f32),
        |x: f16| Wide::Float(f16_to_f32(x) as f64);
    bf16 => |v: f64| bf16_from_f32(v as f32), bf16_from_f32, |i: i128| bf16_from_f32(i as f32),
        |x: bf16| Wide::Single(bf16_to_f32(x))
);

impl Cast for Complex64 {
    fn to_wide(self) -> Wide {
        Wide::Complex(self.re as f64, self.im as f64)
    }
    fn from_wide(w: Wide) -> Self {
        match w {
            Wide::Int(i) => Complex64::new(i as f32, 0.0),
            Wide::Float(f) => Complex64::new(f as f32, 0.0),
            Wide::Single(f) => Complex64::new(f, 0.0),
            Wide::Complex(re, im) => Complex64::new(re as f32, im as f32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cast;
    use half::f16;

    /// Every float16 value widens to f64 and f32 with `half`'s own bits
    /// (NaN payloads included).
    #[test]
    fn float16_widens_as_half_does() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            assert_eq!(
                h.cast::<f64>().to_bits(),
                h.to_f64().to_bits(),
                "{bits:#06x}"
            );
            assert_eq!(
                h.cast::<f32>().to_bits(),
                h.to_f32().to_bits(),
                "{bits:#06x}"
            );
        }
    }
}
