//! safetensors files (through the `safetensors` crate), memory-mapped on
//! load: tensors whose data is 64-byte aligned in the file are used in
//! place, the others are copied.

use crate::array::Data;
use crate::buffer::{Buffer, BUFFER_ALIGN};
use crate::primitive::Spec;
use crate::{Array, Dtype, Error, Result};
use safetensors::tensor::{Dtype as StDtype, TensorView};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn to_dtype(d: StDtype) -> Option<Dtype> {
    Some(match d {
        StDtype::BOOL => Dtype::Bool,
        StDtype::U8 => Dtype::Uint8,
        StDtype::U16 => Dtype::Uint16,
        StDtype::U32 => Dtype::Uint32,
        StDtype::U64 => Dtype::Uint64,
        StDtype::I8 => Dtype::Int8,
        StDtype::I16 => Dtype::Int16,
        StDtype::I32 => Dtype::Int32,
        StDtype::I64 => Dtype::Int64,
        StDtype::F16 => Dtype::Float16,
        StDtype::BF16 => Dtype::Bfloat16,
        StDtype::F32 => Dtype::Float32,
        StDtype::F64 => Dtype::Float64,
        StDtype::C64 => Dtype::Complex64,
        _ => return None,
    })
}

fn from_dtype(d: Dtype) -> StDtype {
    match d {
        Dtype::Bool => StDtype::BOOL,
        Dtype::Uint8 => StDtype::U8,
        Dtype::Uint16 => StDtype::U16,
        Dtype::Uint32 => StDtype::U32,
        Dtype::Uint64 => StDtype::U64,
        Dtype::Int8 => StDtype::I8,
        Dtype::Int16 => StDtype::I16,
        Dtype::Int32 => StDtype::I32,
        Dtype::Int64 => StDtype::I64,
        Dtype::Float16 => StDtype::F16,
        Dtype::Bfloat16 => StDtype::BF16,
        Dtype::Float32 => StDtype::F32,
        Dtype::Float64 => StDtype::F64,
        Dtype::Complex64 => StDtype::C64,
    }
}

/// Reads every tensor of a safetensors file, by name.
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Array>> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: read-only mapping; the file must not change while arrays use it.
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?);
    let st = safetensors::SafeTensors::deserialize(&map).map_err(|e| Error::Format {
        path: name.clone(),
        msg: format!("not a valid safetensors file: {e}"),
    })?;
    let base = map.as_ptr() as usize;
    let mut out = BTreeMap::new();
    for (key, view) in st.tensors() {
        let dtype = to_dtype(view.dtype()).ok_or_else(|| Error::Format {
            path: name.clone(),
            msg: format!(
                "tensor `{key}` has dtype {:?}, which has no MLX counterpart",
                view.dtype()
            ),
        })?;
        let shape: Vec<i32> = view
            .shape()
            .iter()
            .map(|&d| i32::try_from(d))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Format {
                path: name.clone(),
                msg: format!("tensor `{key}` has a dimension over 2^31"),
            })?;
        let bytes = view.data();
        let offset = bytes.as_ptr() as usize - base;
        let buffer =
            if (bytes.as_ptr() as usize).is_multiple_of(BUFFER_ALIGN) && dtype != Dtype::Bool {
                Buffer::mapped(map.clone(), offset, bytes.len())
                    .unwrap_or_else(|| Buffer::from_bytes(bytes))
            } else {
                let mut b = Buffer::from_bytes(bytes);
                if dtype == Dtype::Bool {
                    crate::buffer::normalize_bools(b.bytes_mut().expect("heap"));
                }
                b
            };
        out.insert(
            key,
            Array::from_data(Data::contiguous(buffer, &shape), Spec::new(shape, dtype)),
        );
    }
    Ok(out)
}

/// Writes named arrays as a safetensors file (row-major values).
pub fn save_safetensors(path: impl AsRef<Path>, arrays: &BTreeMap<String, Array>) -> Result<()> {
    let path = path.as_ref();
    let mut bytes = Vec::new();
    for a in arrays.values() {
        bytes.push(a.to_bytes()?);
    }
    let views = arrays
        .iter()
        .zip(&bytes)
        .map(|((k, a), b)| {
            let shape: Vec<usize> = a.shape().iter().map(|&d| d as usize).collect();
            TensorView::new(from_dtype(a.dtype()), shape, b)
                .map(|v| (k.clone(), v))
                .map_err(|e| Error::invalid("save_safetensors", format!("tensor `{k}`: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, None, path)
        .map_err(|e| Error::invalid("save_safetensors", format!("{}: {e}", path.display())))
}
