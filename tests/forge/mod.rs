//! Hand-made native files for the hostile-input tests: a header written
//! field by field as CBOR (with a valid checksum), so a test says exactly
//! what the file claims, however absurd.
#![allow(dead_code)]

use ciborium::Value;

pub fn text(s: &str) -> Value {
    Value::Text(s.into())
}

pub fn int(i: i128) -> Value {
    Value::Integer(i.try_into().expect("fits a CBOR integer"))
}

pub fn ints(v: &[i128]) -> Value {
    Value::Array(v.iter().map(|&i| int(i)).collect())
}

pub fn map(fields: &[(&str, Value)]) -> Value {
    Value::Map(fields.iter().map(|(k, v)| (text(k), v.clone())).collect())
}

/// `{shape, dtype}` of an input or an entry output.
pub fn spec(shape: &[i128], dtype: &str) -> Value {
    map(&[("shape", ints(shape)), ("dtype", text(dtype))])
}

/// A reference to function input `i`.
pub fn input(i: i128) -> Value {
    map(&[("Input", int(i))])
}

/// A reference to constant `i`.
pub fn constant(i: i128) -> Value {
    map(&[("Constant", int(i))])
}

/// A reference to output `o` of entry `e`.
pub fn entry_ref(e: i128, o: i128) -> Value {
    map(&[("Entry", ints(&[e, o]))])
}

/// One tape entry.
pub fn entry(primitive: &str, state: Value, inputs: Vec<Value>, outputs: Vec<Value>) -> Value {
    map(&[
        ("primitive", text(primitive)),
        ("state", state),
        ("inputs", Value::Array(inputs)),
        ("outputs", Value::Array(outputs)),
    ])
}

/// One function: positional inputs only unless `kwarg_names` is given.
pub fn function(
    positional: i128,
    kwarg_names: &[&str],
    inputs: Vec<Value>,
    entries: Vec<Value>,
    outputs: Vec<Value>,
) -> Value {
    map(&[
        ("positional", int(positional)),
        (
            "kwarg_names",
            Value::Array(kwarg_names.iter().map(|k| text(k)).collect()),
        ),
        ("inputs", Value::Array(inputs)),
        ("entries", Value::Array(entries)),
        ("outputs", Value::Array(outputs)),
    ])
}

/// A constant record (checksum 0 with `checksum_block` 0: tests that want
/// the data checked compute it with [`checksum`]).
pub fn constant_record(dtype: &str, shape: &[i128], offset: i128, length: i128) -> Value {
    constant_record_summed(dtype, shape, offset, length, 0)
}

pub fn constant_record_summed(
    dtype: &str,
    shape: &[i128],
    offset: i128,
    length: i128,
    checksum: u64,
) -> Value {
    map(&[
        ("dtype", text(dtype)),
        ("shape", ints(shape)),
        ("offset", int(offset)),
        ("length", int(length)),
        ("checksum", int(checksum as i128)),
        ("checksum_block", int(0)),
    ])
}

/// xxh3-64 of `bytes`: a flat (`checksum_block` 0) constant checksum.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The whole header.
pub fn header(functions: Vec<Value>, constants: Vec<Value>) -> Value {
    map(&[
        ("library_version", text("0.1.0")),
        ("format_version", int(2)),
        ("shapeless", Value::Bool(false)),
        ("metadata", text("hand-made")),
        ("functions", Value::Array(functions)),
        ("constants", Value::Array(constants)),
    ])
}

/// A native file: preamble, `header` (checksummed), padding, then `data`.
pub fn file(header: &Value, data: &[u8]) -> Vec<u8> {
    let mut hb = Vec::new();
    ciborium::into_writer(header, &mut hb).expect("encodes");
    file_raw(&hb, data)
}

/// A native file around raw header bytes (checksum made valid).
pub fn file_raw(hb: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = b"MLXFN-RS".to_vec();
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(hb.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(hb).to_le_bytes());
    out.extend_from_slice(hb);
    out.resize(out.len().div_ceil(64) * 64, 0);
    out.extend_from_slice(data);
    out
}

/// A file with one function `(x: float32 [n]) -> ...` over `entries`.
pub fn one_function(
    inputs: Vec<Value>,
    entries: Vec<Value>,
    outputs: Vec<Value>,
    constants: Vec<Value>,
    data: &[u8],
) -> Vec<u8> {
    let n = inputs.len() as i128;
    file(
        &header(vec![function(n, &[], inputs, entries, outputs)], constants),
        data,
    )
}
