//! `std::ops` operators on `Array`, `&Array` and scalars, for readability.
//! They panic with the op's error message where the op would return an
//! error; use the functions in [`crate::ops`] to handle errors.

use super::scalar_like;
use crate::Array;
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

macro_rules! overload {
    ($tr:ident, $m:ident, $f:path) => {
        impl $tr<&Array> for &Array {
            type Output = Array;
            fn $m(self, rhs: &Array) -> Array {
                $f(self, rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<Array> for Array {
            type Output = Array;
            fn $m(self, rhs: Array) -> Array {
                $f(&self, &rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<&Array> for Array {
            type Output = Array;
            fn $m(self, rhs: &Array) -> Array {
                $f(&self, rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<Array> for &Array {
            type Output = Array;
            fn $m(self, rhs: Array) -> Array {
                $f(self, &rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<f64> for &Array {
            type Output = Array;
            fn $m(self, rhs: f64) -> Array {
                $f(self, &scalar_like(self, rhs)).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<f64> for Array {
            type Output = Array;
            fn $m(self, rhs: f64) -> Array {
                $f(&self, &scalar_like(&self, rhs)).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<&Array> for f64 {
            type Output = Array;
            fn $m(self, rhs: &Array) -> Array {
                $f(&scalar_like(rhs, self), rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl $tr<Array> for f64 {
            type Output = Array;
            fn $m(self, rhs: Array) -> Array {
                $f(&scalar_like(&rhs, self), &rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
    };
}

overload!(Add, add, super::add);
overload!(Sub, sub, super::subtract);
overload!(Mul, mul, super::multiply);
overload!(Div, div, super::divide);
overload!(Rem, rem, super::remainder);

impl Neg for &Array {
    type Output = Array;
    fn neg(self) -> Array {
        super::negative(self).unwrap_or_else(|e| panic!("{e}"))
    }
}
impl Neg for Array {
    type Output = Array;
    fn neg(self) -> Array {
        -&self
    }
}
