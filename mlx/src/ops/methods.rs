//! Methods on [`Array`] that delegate to the ops of the same name, so a
//! chain reads left to right: `x.matmul(&w)?.add(&b)?.exp()?` instead of
//! `ops::exp(&ops::add(&ops::matmul(&x, &w)?, &b)?)?`. Arguments after the
//! array are the op's, in the op's order; each method is the op, nothing
//! more (the free functions in [`crate::ops`] stay the reference).
//!
//! ```
//! use mlx::Array;
//! let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let y = x.matmul(&x).unwrap().sum(&[-1], true).unwrap();
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![17.0, 37.0]);
//! ```

use crate::ops;
use crate::{Array, Dtype, Result};

/// `pub fn name(&self) -> Result<Array>` for unary ops.
macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Result<Array> {
            ops::$name(self)
        }
    )*};
}

/// `pub fn name(&self, other: &Array) -> Result<Array>` for binary ops.
macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(&self, other: &Array) -> Result<Array> {
            ops::$name(self, other)
        }
    )*};
}

/// `pub fn name(&self, axes: &[i32], keepdims: bool) -> Result<Array>` for reductions.
macro_rules! reduce_methods {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(&self, axes: &[i32], keepdims: bool) -> Result<Array> {
            ops::$name(self, axes, keepdims)
        }
    )*};
}

impl Array {
    binary_methods!(
        /// [`ops::add`].
        add,
        /// [`ops::subtract`].
        subtract,
        /// [`ops::multiply`].
        multiply,
        /// [`ops::divide`].
        divide,
        /// [`ops::power`].
        power,
        /// [`ops::maximum`].
        maximum,
        /// [`ops::minimum`].
        minimum,
        /// [`ops::matmul`].
        matmul,
        /// [`ops::equal`].
        equal,
        /// [`ops::less`].
        less,
        /// [`ops::greater`].
        greater,
    );

    unary_methods!(
        /// [`ops::exp`].
        exp,
        /// [`ops::log`].
        log,
        /// [`ops::sin`].
        sin,
        /// [`ops::cos`].
        cos,
        /// [`ops::tanh`].
        tanh,
        /// [`ops::sqrt`].
        sqrt,
        /// [`ops::rsqrt`].
        rsqrt,
        /// [`ops::square`].
        square,
        /// [`ops::abs`].
        abs,
        /// [`ops::negative`].
        negative,
        /// [`ops::sigmoid`].
        sigmoid,
        /// [`ops::erf`].
        erf,
        /// [`ops::floor`].
        floor,
        /// [`ops::ceil`].
        ceil,
        /// [`ops::sign`].
        sign,
        /// [`ops::reciprocal`].
        reciprocal,
        /// [`ops::stop_gradient`].
        stop_gradient,
    );

    reduce_methods!(
        /// [`ops::sum`].
        sum,
        /// [`ops::mean`].
        mean,
        /// [`ops::max`].
        max,
        /// [`ops::min`].
        min,
        /// [`ops::prod`].
        prod,
        /// [`ops::all`].
        all,
        /// [`ops::any`].
        any,
        /// [`ops::logsumexp`].
        logsumexp,
    );

    /// [`ops::argmax`].
    pub fn argmax(&self, axis: Option<i32>, keepdims: bool) -> Result<Array> {
        ops::argmax(self, axis, keepdims)
    }

    /// [`ops::argmin`].
    pub fn argmin(&self, axis: Option<i32>, keepdims: bool) -> Result<Array> {
        ops::argmin(self, axis, keepdims)
    }

    /// [`ops::var`].
    pub fn var(&self, axes: &[i32], keepdims: bool, ddof: i32) -> Result<Array> {
        ops::var(self, axes, keepdims, ddof)
    }

    /// [`ops::softmax`].
    pub fn softmax(&self, axes: &[i32]) -> Result<Array> {
        ops::softmax(self, axes)
    }

    /// [`ops::reshape`].
    pub fn reshape(&self, shape: &[i32]) -> Result<Array> {
        ops::reshape(self, shape)
    }

    /// [`ops::transpose`] (`&[]` reverses the axes).
    pub fn transpose(&self, axes: &[i32]) -> Result<Array> {
        ops::transpose(self, axes)
    }

    /// [`ops::swapaxes`].
    pub fn swapaxes(&self, axis1: i32, axis2: i32) -> Result<Array> {
        ops::swapaxes(self, axis1, axis2)
    }

    /// [`ops::broadcast_to`].
    pub fn broadcast_to(&self, shape: &[i32]) -> Result<Array> {
        ops::broadcast_to(self, shape)
    }

    /// [`ops::expand_dims`].
    pub fn expand_dims(&self, axes: &[i32]) -> Result<Array> {
        ops::expand_dims(self, axes)
    }

    /// [`ops::squeeze`] (`&[]` drops every axis of size 1).
    pub fn squeeze(&self, axes: &[i32]) -> Result<Array> {
        ops::squeeze(self, axes)
    }

    /// [`ops::flatten`].
    pub fn flatten(&self, start_axis: i32, end_axis: i32) -> Result<Array> {
        ops::flatten(self, start_axis, end_axis)
    }

    /// [`ops::slice`].
    pub fn slice(&self, start: &[i32], stop: &[i32], strides: &[i32]) -> Result<Array> {
        ops::slice(self, start, stop, strides)
    }

    /// [`ops::take`].
    pub fn take(&self, indices: &Array, axis: Option<i32>) -> Result<Array> {
        ops::take(self, indices, axis)
    }

    /// [`ops::astype`].
    pub fn astype(&self, dtype: Dtype) -> Result<Array> {
        ops::astype(self, dtype)
    }

    /// [`ops::view`].
    pub fn view(&self, dtype: Dtype) -> Result<Array> {
        ops::view(self, dtype)
    }
}
