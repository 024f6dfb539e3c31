//! Exporting traced functions to a file and importing them back.
//!
//! - [`export_function`], [`export_function_kwargs`], [`exporter`] (several
//!   traces in one file), [`export_with_callback`] (inspect what would be
//!   written), [`export_to_dot`] (Graphviz).
//! - [`import_function`] detects the format (native or MLX's `.mlxfn`) and
//!   returns an [`ImportedFunction`].
//!
//! The native format is described in [`native`]; MLX's in [`mlx`].

mod atomic;
mod checks;
pub mod checksum;
mod decompose;
mod dot;
mod exporter;
mod import;
pub mod mlx;
pub mod native;
mod signature;
pub mod tape;

pub use decompose::{decompose_fast, is_fused_fast};
pub use dot::export_to_dot;
pub use exporter::{
    export_function, export_function_kwargs, export_with_callback, exporter, ExportEvent,
    FunctionExporter,
};
pub use import::{
    import_function, import_function_from_bytes, import_function_with, ImportOptions,
    ImportedFunction,
};
pub use signature::Signature;
pub use tape::{FunctionTable, Tape, TapeEntry, ValueRef};

pub use crate::primitive::MlxVersion;
use crate::Result;
use std::path::Path;

/// How to export.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Accept any input sizes at call time (dtypes and ranks still bind).
    pub shapeless: bool,
    /// Free-form text stored in the file.
    pub metadata: String,
    pub format: Format,
    /// Record `mlx::fast` ops (RMSNorm, LayerNorm, RoPE, attention) as the
    /// graphs of basic primitives MLX's CPU build writes for them, instead of
    /// the fused primitives (as MLX's GPU build writes). Python MLX on CPU
    /// can import fused primitives but not run them, so set this for files
    /// meant for it. See [`decompose_fast`] to convert an existing table.
    pub decompose_fast: bool,
}

/// File format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// This library's format: checksummed, aligned, memory-mappable.
    #[default]
    Native,
    /// MLX 0.32's `.mlxfn` layout, readable by Python MLX.
    Mlx,
}

/// Writes a function table to `path` in `format`, atomically.
pub fn write_table(path: &Path, table: &FunctionTable, format: Format) -> Result<()> {
    match format {
        Format::Native => {
            let encoded = native::encode(table)?;
            atomic::write_atomic(path, &encoded.parts())
        }
        Format::Mlx => {
            let bytes = mlx::encode(table)?;
            atomic::write_atomic(path, &[&bytes])
        }
    }
}

pub(crate) use crate::transforms::tape::spec_of_ref;

/// Writes a function table to `path` in MLX's layout for MLX `release`
/// (which may be older than the newest: no metadata before 0.32.1, that
/// release's primitive names and state layouts), atomically. A primitive or
/// state value the release lacks is an error naming it and the release
/// that added it.
///
/// This, and [`FunctionExporter::for_mlx`], is how to target an older MLX:
/// the release is not an [`ExportOptions`] field, so that struct keeps the
/// fields the design contract fixes.
pub fn write_table_for_mlx(path: &Path, table: &FunctionTable, release: MlxVersion) -> Result<()> {
    let bytes = mlx::encode_for(table, release)?;
    atomic::write_atomic(path, &[&bytes])
}
