//! An MLX-style lazy array framework whose centre is exporting traced
//! functions to a file and importing them back.
//!
//! - [`Array`]: lazy, reference-counted, `Send + Sync`; views share buffers.
//! - [`ops`]: MLX's operations with MLX's names, each returning [`Result`].
//! - Primitives are structs with `#[derive(Primitive)]`; their `#[state]`
//!   fields give the state accessor, both file codecs and a self-registering
//!   entry in the primitive table (see [`primitive`]).
//!
//! ```
//! use mlx::{ops, Array};
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
//! let b = ops::add(&a, &a).unwrap();
//! assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
//! ```

extern crate self as mlx;

pub mod array;
pub mod backend;
mod buffer;
pub mod dtype;
mod element;
mod error;
pub mod export;
pub mod io;
pub mod layout;
pub mod nn;
pub mod ops;
pub mod primitive;
pub mod primitives;
pub mod shape;
pub mod trace_flag;
pub mod transforms;

pub use array::Array;
pub use buffer::{cache_memory, clear_cache, set_cache_limit, Buffer, BUFFER_ALIGN};
pub use dtype::{promote_types, Dtype};
pub use element::{Complex64, Element};
pub use error::{Error, Result};
pub use export::{
    export_function, export_function_kwargs, export_to_dot, export_with_callback, exporter,
    import_function, import_function_from_bytes, import_function_with, ExportOptions, Format,
    ImportOptions, ImportedFunction,
};
pub use layout::Data;
pub use mlx_macros::Primitive;
/// `mlx::fast`: the fused ops, which live with the other ops.
pub use ops::fast;
/// The op namespaces live with the other ops (`mlx/src/ops/`); these are
/// their public paths, as in MLX (`mx.fft`, `mx.linalg`, `mx.random`).
pub use ops::{fft, linalg, random};
pub use primitive::{ChunkRef, Primitive, PrimitiveState, Spec, StateValue};

/// Re-exported so `dispatch_dtype!` works in user crates.
#[doc(hidden)]
pub use half;

/// Keyword inputs of an exported function, sorted by name.
pub type Kwargs = std::collections::BTreeMap<String, Array>;

/// Evaluates several arrays at once (shared work is done once).
pub fn eval(arrays: &[Array]) -> Result<()> {
    transforms::eval(arrays)
}

/// Paths used by the code that `#[derive(Primitive)]` generates, so a user
/// crate needs only `mlx` as a dependency. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::error::Result;
    pub use crate::primitive::{
        assert_state_field, cbor_field, cbor_field_or_default, cbor_field_with,
        cbor_field_with_default, cbor_map, IntoPrimitive, MlxReader, MlxVersion, MlxWriter,
        Primitive, PrimitiveEntry, PrimitiveState, StateField, StateValue,
    };
    pub use ciborium::Value as CborValue;
    pub use inventory;
}
