//! Rust element types that back each [`Dtype`].

use crate::Dtype;
use std::fmt::Debug;

/// A complex number of two `f32` (MLX's `complex64`).
pub type Complex64 = num_complex::Complex<f32>;

/// A Rust type that is the element of some [`Dtype`].
///
/// Implemented for `bool, u8..u64, i8..i64, half::f16, half::bf16, f32, f64`
/// and [`Complex64`]. All are plain data with no padding, which lets buffers
/// be viewed as slices of them.
pub trait Element:
    Copy + Send + Sync + Default + PartialEq + Debug + 'static + sealed::Sealed
{
    /// The dtype this type is the element of.
    const DTYPE: Dtype;
    /// Converts from `f64` as a C cast would (complex: real part; bool: non-zero).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (complex: real part; bool: 0 or 1).
    fn to_f64(self) -> f64;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! primitive_elements {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$d;
            fn from_f64(v: f64) -> Self { v as $t }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}

primitive_elements! {
    u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64, f32 => Float32, f64 => Float64,
}

macro_rules! half_elements {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$d;
            fn from_f64(v: f64) -> Self { <$t>::from_f64(v) }
            fn to_f64(self) -> f64 { <$t>::to_f64(self) }
        }
    )*};
}
half_elements!(half::f16 => Float16, half::bf16 => Bfloat16);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: Dtype = Dtype::Bool;
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
}

impl sealed::Sealed for Complex64 {}
impl Element for Complex64 {
    const DTYPE: Dtype = Dtype::Complex64;
    fn from_f64(v: f64) -> Self {
        Complex64::new(v as f32, 0.0)
    }
    fn to_f64(self) -> f64 {
        self.re as f64
    }
}

/// Calls `$body` with `$T` bound to the Rust element type of `$dtype`.
///
/// ```text
/// dispatch_dtype!(a.dtype(), T => kernel::<T>(..))
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::Dtype::Bool => {
                type $T = bool;
                $body
            }
            $crate::Dtype::Uint8 => {
                type $T = u8;
                $body
            }
            $crate::Dtype::Uint16 => {
                type $T = u16;
                $body
            }
            $crate::Dtype::Uint32 => {
                type $T = u32;
                $body
            }
            $crate::Dtype::Uint64 => {
                type $T = u64;
                $body
            }
            $crate::Dtype::Int8 => {
                type $T = i8;
                $body
            }
            $crate::Dtype::Int16 => {
                type $T = i16;
                $body
            }
            $crate::Dtype::Int32 => {
                type $T = i32;
                $body
            }
            $crate::Dtype::Int64 => {
                type $T = i64;
                $body
            }
            $crate::Dtype::Float16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::Dtype::Float32 => {
                type $T = f32;
                $body
            }
            $crate::Dtype::Float64 => {
                type $T = f64;
                $body
            }
            $crate::Dtype::Bfloat16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::Dtype::Complex64 => {
                type $T = $crate::Complex64;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` the unsigned integer as wide as one element of
/// `$dtype`: kernels that move bits, not values (copies, gathers), serve
/// every dtype with four instantiations.
macro_rules! dispatch_bits {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype.size() {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}
pub(crate) use dispatch_bits;
