//! Shape and layout primitives, with MLX's names and state.
//!
//! - views: Broadcast, BroadcastAxes, Reshape, Flatten,
//!   Unflatten, Transpose, Squeeze, ExpandDims — views of the input's buffer
//!   (a reshape copies only when strides cannot express it).
//! - slices: Slice (a view, negative strides too), SliceUpdate,
//!   DynamicSlice (a view), DynamicSliceUpdate.
//! - joins: Concatenate, Split (outputs are views), Pad.
//! - misc: Copy, StopGradient, Depends, NumberOfElements, View, AsStrided.
//!
//! Primitives whose state holds absolute sizes or indices (Slice, Split,
//! Reshape without `-1`, Unflatten, single-input Broadcast, AsStrided,
//! DynamicSlice) refuse shapeless export in `check_shapeless`.

mod copy;
mod join;
mod misc;
mod slice;
mod view;

pub use join::{Concatenate, Pad, Split};
pub use misc::{AsStrided, Copy, Depends, NumberOfElements, View};
pub use slice::{DynamicSlice, DynamicSliceUpdate, Slice, SliceUpdate, SliceUpdateType};
pub use view::{
    reshape_strides, Broadcast, BroadcastAxes, ExpandDims, Flatten, Reshape, Squeeze, Transpose,
    Unflatten,
};

pub use misc::StopGradient;

pub(crate) use view::{broadcast_view, infer_shape};
