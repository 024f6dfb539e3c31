//! numpy `.npy` files, versions 1.0–3.0, every numpy dtype that has an MLX
//! counterpart. bfloat16 (absent from numpy) is written as its raw 16-bit
//! patterns with descr `<u2`, the convention of the MLX fixtures.

use crate::array::Data;
use crate::buffer::Buffer;
use crate::primitive::Spec;
use crate::{Array, Dtype, Error, Result};
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

fn descr(d: Dtype) -> &'static str {
    match d {
        Dtype::Bool => "|b1",
        Dtype::Uint8 => "|u1",
        Dtype::Uint16 | Dtype::Bfloat16 => "<u2",
        Dtype::Uint32 => "<u4",
        Dtype::Uint64 => "<u8",
        Dtype::Int8 => "|i1",
        Dtype::Int16 => "<i2",
        Dtype::Int32 => "<i4",
        Dtype::Int64 => "<i8",
        Dtype::Float16 => "<f2",
        Dtype::Float32 => "<f4",
        Dtype::Float64 => "<f8",
        Dtype::Complex64 => "<c8",
    }
}

/// (dtype, big_endian) for a numpy type string.
fn parse_descr(s: &str) -> Option<(Dtype, bool)> {
    // By characters: the descr may be empty or start with any character.
    let mut chars = s.chars();
    let big = match chars.next()? {
        '<' | '|' | '=' => false,
        '>' => true,
        _ => return None,
    };
    let code = chars.as_str();
    let d = match code {
        "b1" => Dtype::Bool,
        "u1" => Dtype::Uint8,
        "u2" => Dtype::Uint16,
        "u4" => Dtype::Uint32,
        "u8" => Dtype::Uint64,
        "i1" => Dtype::Int8,
        "i2" => Dtype::Int16,
        "i4" => Dtype::Int32,
        "i8" => Dtype::Int64,
        "f2" => Dtype::Float16,
        "f4" => Dtype::Float32,
        "f8" => Dtype::Float64,
        "c8" => Dtype::Complex64,
        _ => return None,
    };
    Some((d, big))
}

/// Reads a `.npy` file.
pub fn load_npy(path: impl AsRef<Path>) -> Result<Array> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    load_npy_bytes(&bytes, &path.display().to_string())
}

/// Parses `.npy` bytes; `name` is used in error messages.
pub fn load_npy_bytes(bytes: &[u8], name: &str) -> Result<Array> {
    let err = |msg: String| Error::Format {
        path: name.to_string(),
        msg,
    };
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(err("not a .npy file (bad magic)".into()));
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(err("truncated header".into()));
            }
            (
                u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize,
                12,
            )
        }
        v => return Err(err(format!("unsupported .npy version {v}"))),
    };
    let header = bytes
        .get(hstart..hstart + hlen)
        .ok_or_else(|| err("truncated header".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| err("header is not text".into()))?;
    let descr_s = dict_value(header, "descr")
        .ok_or_else(|| err(format!("no 'descr' in header {header:?}")))?;
    let descr_s = descr_s.trim_matches(|c| c == '\'' || c == '"');
    let (dtype, big) =
        parse_descr(descr_s).ok_or_else(|| err(format!("unsupported dtype '{descr_s}'")))?;
    let fortran = dict_value(header, "fortran_order")
        .ok_or_else(|| err("no 'fortran_order' in header".into()))?;
    let fortran = match fortran.trim() {
        "True" => true,
        "False" => false,
        other => return Err(err(format!("bad fortran_order {other}"))),
    };
    let shape_s = dict_value(header, "shape").ok_or_else(|| err("no 'shape' in header".into()))?;
    let shape: Vec<i32> = shape_s
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i32>()
                .map_err(|_| err(format!("bad shape {shape_s}")))
        })
        .collect::<Result<_>>()?;
    crate::array::check_shape("load_npy", &shape).map_err(|e| err(e.to_string()))?;
    let n: usize = shape.iter().map(|&d| d as usize).product();
    let nbytes = n
        .checked_mul(dtype.size())
        .ok_or_else(|| err("shape too large".into()))?;
    let data = &bytes[hstart + hlen..];
    if data.len() != nbytes {
        return Err(err(format!(
            "shape {shape:?} of {dtype} needs {nbytes} data bytes, the file has {}",
            data.len()
        )));
    }
    let mut buf = Buffer::from_bytes(data);
    let raw = buf.bytes_mut().expect("heap buffer");
    if big && dtype.size() > 1 {
        let w = if dtype == Dtype::Complex64 {
            4
        } else {
            dtype.size()
        };
        raw.chunks_mut(w).for_each(<[u8]>::reverse);
    }
    if dtype == Dtype::Bool {
        crate::buffer::normalize_bools(raw);
    }
    let strides = if fortran {
        let mut s = vec![0isize; shape.len()];
        let mut acc = 1isize;
        for (st, &d) in s.iter_mut().zip(&shape) {
            *st = acc;
            acc *= d.max(1) as isize;
        }
        s
    } else {
        crate::array::row_major_strides(&shape)
    };
    let data = Data {
        buffer: std::sync::Arc::new(buf),
        strides,
        offset: 0,
    };
    Ok(Array::from_data(data, Spec::new(shape, dtype)))
}

/// Text of `key`'s value in a Python dict literal (up to the next top-level comma).
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let k1 = format!("'{key}'");
    let start = header.find(&k1)? + k1.len();
    let rest = header[start..].trim_start().strip_prefix(':')?;
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}

/// Writes `a` as a `.npy` file (version 1.0, row-major). bfloat16 is written
/// as its 16-bit patterns with descr `<u2`.
pub fn save_npy(path: impl AsRef<Path>, a: &Array) -> Result<()> {
    let path = path.as_ref();
    let bytes = save_npy_bytes(a)?;
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

/// The `.npy` bytes of `a`.
pub fn save_npy_bytes(a: &Array) -> Result<Vec<u8>> {
    a.eval()?;
    let shape = a.shape();
    let shape_s = match shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape_s}, }}",
        descr(a.dtype())
    );
    // Pad so the data starts on a 64-byte boundary, ending with a newline.
    let total = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(total + a.nbytes() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&a.to_bytes()?);
    Ok(out)
}
