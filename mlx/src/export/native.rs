//! The native file format.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "MLXFN-RS"
//! 8       4     format version (u32 LE)
//! 12      4     reserved, 0
//! 16      8     header length H (u64 LE)
//! 24      8     xxh3-64 checksum of the header bytes
//! 32      H     header: CBOR (see `Header`)
//! ...           zero padding to a multiple of 64
//! D       ...   data: each constant's row-major bytes at D + offset, offsets 64-aligned
//! ```
//!
//! Import parses the header only; constants are memory-mapped and used in
//! place, each checked against its checksum the first time a call uses it
//! (version 2 hashes large constants in blocks, see [`checksum`](super::checksum);
//! version 1 files, hashed flat, still read).
//! Field names in the header make it extensible: a newer writer may add
//! fields; primitives' states are maps keyed by field name.

use super::checksum;
use super::tape::{FunctionTable, Tape, TapeEntry, ValueRef};
use crate::buffer::{Buffer, BUFFER_ALIGN};
use crate::primitive::{lookup, Spec};
use crate::{Array, Data, Dtype, Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub const MAGIC: &[u8; 8] = b"MLXFN-RS";
/// 2: constants hashed in blocks (see [`checksum`](super::checksum)).
pub const FORMAT_VERSION: u32 = 2;
const PREAMBLE: usize = 32;
/// Headers larger than this are refused before allocating (1 GiB).
const MAX_HEADER: u64 = 1 << 30;

#[derive(Serialize, Deserialize)]
struct Header {
    library_version: String,
    format_version: u32,
    shapeless: bool,
    metadata: String,
    functions: Vec<FunctionRecord>,
    constants: Vec<ConstantRecord>,
}

#[derive(Serialize, Deserialize)]
struct FunctionRecord {
    positional: usize,
    kwarg_names: Vec<String>,
    inputs: Vec<SpecRecord>,
    entries: Vec<EntryRecord>,
    outputs: Vec<RefRecord>,
}

#[derive(Serialize, Deserialize)]
struct SpecRecord {
    shape: Vec<i32>,
    dtype: String,
}

#[derive(Serialize, Deserialize)]
struct EntryRecord {
    primitive: String,
    state: ciborium::Value,
    inputs: Vec<RefRecord>,
    outputs: Vec<SpecRecord>,
}

#[derive(Serialize, Deserialize, Clone, Copy)]
enum RefRecord {
    Input(usize),
    Constant(usize),
    Entry(usize, usize),
}

/// Where a constant's bytes are and how to check them.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ConstantRecord {
    pub dtype: String,
    pub shape: Vec<i32>,
    /// Offset from the start of the data section (a multiple of 64).
    pub offset: u64,
    pub length: u64,
    /// See [`checksum`](super::checksum): xxh3-64 of the bytes, or of their
    /// blocks' digests when `checksum_block` is set and smaller.
    pub checksum: u64,
    /// Block size of the checksum; 0 (and absent, in version 1) hashes flat.
    #[serde(default)]
    pub checksum_block: u64,
}

fn spec_record(s: &Spec) -> SpecRecord {
    SpecRecord {
        shape: s.shape.clone(),
        dtype: s.dtype.name().to_string(),
    }
}

fn ref_record(r: &ValueRef, const_map: &[usize]) -> RefRecord {
    match *r {
        ValueRef::Input(i) => RefRecord::Input(i),
        ValueRef::Constant(i) => RefRecord::Constant(const_map[i]),
        ValueRef::Entry { entry, output } => RefRecord::Entry(entry, output),
    }
}

fn align(n: usize) -> usize {
    n.div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN
}

/// A native file ready to write: the preamble and header, then each
/// constant after the zero padding that aligns it.
pub struct Encoded {
    pub head: Vec<u8>,
    constants: Vec<(usize, crate::array::RowMajor)>,
}

impl Encoded {
    /// The file's bytes in order, borrowing the constants' buffers.
    pub fn parts(&self) -> Vec<&[u8]> {
        static ZEROS: [u8; BUFFER_ALIGN] = [0; BUFFER_ALIGN];
        let mut parts = vec![self.head.as_slice()];
        for (pad, c) in &self.constants {
            parts.push(&ZEROS[..*pad]);
            parts.push(c.bytes());
        }
        parts
    }
}

/// Encodes a table as a native file.
pub fn encode(table: &FunctionTable) -> Result<Encoded> {
    // Only constants some function uses are written, renumbered densely.
    let mut const_map = vec![usize::MAX; table.constants.len()];
    let mut order = Vec::new();
    for t in &table.functions {
        let refs = t
            .entries
            .iter()
            .flat_map(|e| e.inputs.iter())
            .chain(t.outputs.iter());
        for r in refs {
            if let ValueRef::Constant(i) = *r {
                if const_map[i] == usize::MAX {
                    const_map[i] = order.len();
                    order.push(i);
                }
            }
        }
    }
    let mut end = 0usize;
    let mut constants = Vec::new();
    let mut records = Vec::new();
    for &i in &order {
        let a = &table.constants[i];
        let bytes = a.row_major()?;
        let offset = align(end);
        let b = bytes.bytes();
        records.push(ConstantRecord {
            dtype: a.dtype().name().to_string(),
            shape: a.shape().to_vec(),
            offset: offset as u64,
            length: b.len() as u64,
            checksum: checksum::checksum(b, checksum::BLOCK),
            checksum_block: checksum::BLOCK,
        });
        let pad = offset - end;
        end = offset + b.len();
        constants.push((pad, bytes));
    }
    // A node without a registry entry (a fused chain) would decode as
    // nothing: refuse it rather than write a file that cannot be read.
    let entries = table.functions.iter().flat_map(|t| t.entries.iter());
    for e in entries {
        lookup(e.primitive.name()).map_err(|_| {
            Error::Export(format!(
                "primitive {} has no registry entry, so no file can hold it",
                e.primitive.name()
            ))
        })?;
    }
    let functions = table
        .functions
        .iter()
        .map(|t| FunctionRecord {
            positional: t.positional,
            kwarg_names: t.kwarg_names.clone(),
            inputs: t.inputs.iter().map(spec_record).collect(),
            entries: t
                .entries
                .iter()
                .map(|e| EntryRecord {
                    primitive: e.primitive.name().to_string(),
                    state: e.primitive.encode_cbor(),
                    inputs: e.inputs.iter().map(|r| ref_record(r, &const_map)).collect(),
                    outputs: e.outputs.iter().map(spec_record).collect(),
                })
                .collect(),
            outputs: t
                .outputs
                .iter()
                .map(|r| ref_record(r, &const_map))
                .collect(),
        })
        .collect();
    let header = Header {
        library_version: env!("CARGO_PKG_VERSION").to_string(),
        format_version: FORMAT_VERSION,
        shapeless: table.shapeless,
        metadata: table.metadata.clone(),
        functions,
        constants: records,
    };
    let mut hbytes = Vec::new();
    ciborium::into_writer(&header, &mut hbytes)
        .map_err(|e| Error::Export(format!("encoding header: {e}")))?;
    let mut head = Vec::with_capacity(align(PREAMBLE + hbytes.len()));
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(&(hbytes.len() as u64).to_le_bytes());
    head.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&hbytes).to_le_bytes());
    head.extend_from_slice(&hbytes);
    head.resize(align(head.len()), 0);
    Ok(Encoded { head, constants })
}

/// A decoded native file: the table plus what is needed to check constants.
pub struct Decoded {
    pub table: FunctionTable,
    pub records: Vec<ConstantRecord>,
    pub format_version: u32,
}

/// Source of a native file's bytes for decoding.
pub enum Source {
    /// The whole file mapped; constants point into it.
    Mapped(Arc<memmap2::Mmap>),
    /// The whole file in memory; constants are copied out.
    Bytes(Vec<u8>),
}

impl Source {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Source::Mapped(m) => m,
            Source::Bytes(b) => b,
        }
    }
}

/// Parses a native file. Every index, shape and range is checked.
pub fn decode(src: &Source, path: &str) -> Result<Decoded> {
    let bytes = src.bytes();
    let err = |msg: String| Error::Format {
        path: path.to_string(),
        msg,
    };
    if bytes.len() < PREAMBLE {
        return Err(err(format!(
            "truncated: {} bytes, the preamble alone is {PREAMBLE}",
            bytes.len()
        )));
    }
    if &bytes[..8] != MAGIC {
        return Err(err("not a native mlxfn file (bad magic)".into()));
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version == 0 || version > FORMAT_VERSION {
        return Err(err(format!(
            "format version {version} is not supported (this library reads versions 1 to {FORMAT_VERSION})"
        )));
    }
    let hlen = u64_at(16);
    if hlen > MAX_HEADER || hlen as usize > bytes.len() - PREAMBLE {
        return Err(err(format!(
            "truncated: header of {hlen} bytes does not fit in the {} bytes after the preamble",
            bytes.len() - PREAMBLE
        )));
    }
    let hbytes = &bytes[PREAMBLE..PREAMBLE + hlen as usize];
    if xxhash_rust::xxh3::xxh3_64(hbytes) != u64_at(24) {
        return Err(Error::Checksum {
            path: path.to_string(),
            what: "the header".into(),
        });
    }
    let header: Header =
        ciborium::from_reader(hbytes).map_err(|e| err(format!("bad header: {e}")))?;
    let data_start = align(PREAMBLE + hlen as usize);

    check_disjoint(&header.constants).map_err(err)?;
    let mut constants = Vec::with_capacity(header.constants.len());
    for (i, c) in header.constants.iter().enumerate() {
        constants.push(load_constant(src, data_start, i, c).map_err(err)?);
    }
    let mut functions = Vec::with_capacity(header.functions.len());
    for (fi, f) in header.functions.iter().enumerate() {
        functions.push(
            decode_function(f, constants.len()).map_err(|m| err(format!("function {fi}: {m}")))?,
        );
    }
    Ok(Decoded {
        table: FunctionTable {
            functions,
            constants,
            shapeless: header.shapeless,
            metadata: header.metadata,
            writer_version: header.library_version,
        },
        records: header.constants,
        format_version: version,
    })
}

/// Constants never share bytes (the writer lays them out one after the
/// other): records that overlap are a forged file.
fn check_disjoint(records: &[ConstantRecord]) -> std::result::Result<(), String> {
    let mut by_offset: Vec<(u64, u64, usize)> = records
        .iter()
        .enumerate()
        .filter(|(_, c)| c.length > 0)
        .map(|(i, c)| (c.offset, c.offset.saturating_add(c.length), i))
        .collect();
    by_offset.sort_unstable();
    for w in by_offset.windows(2) {
        let ((_, end_a, a), (start_b, _, b)) = (w[0], w[1]);
        if start_b < end_a {
            let (a, b) = (a.min(b), a.max(b));
            return Err(format!(
                "constant {b} overlaps constant {a} (bytes {start_b}.. of the data section are claimed twice)"
            ));
        }
    }
    Ok(())
}

fn spec_of(s: &SpecRecord) -> std::result::Result<Spec, String> {
    let dtype = Dtype::from_name(&s.dtype).ok_or_else(|| format!("unknown dtype `{}`", s.dtype))?;
    crate::array::check_shape("header", &s.shape).map_err(|e| e.to_string())?;
    Ok(Spec::new(s.shape.clone(), dtype))
}

fn load_constant(
    src: &Source,
    data_start: usize,
    i: usize,
    c: &ConstantRecord,
) -> std::result::Result<Array, String> {
    let spec = spec_of(&SpecRecord {
        shape: c.shape.clone(),
        dtype: c.dtype.clone(),
    })
    .map_err(|m| format!("constant {i}: {m}"))?;
    let want = (spec.size() as u64).checked_mul(spec.dtype.size() as u64);
    if want != Some(c.length) {
        return Err(format!(
            "constant {i}: {} {:?} needs {want:?} bytes, the header says {}",
            spec.dtype, spec.shape, c.length
        ));
    }
    if c.checksum_block != 0 && c.checksum_block < checksum::MIN_BLOCK {
        return Err(format!(
            "constant {i}: checksum block of {} bytes (at least {} or 0)",
            c.checksum_block,
            checksum::MIN_BLOCK
        ));
    }
    if !c.offset.is_multiple_of(BUFFER_ALIGN as u64) {
        return Err(format!(
            "constant {i}: offset {} is not {BUFFER_ALIGN}-byte aligned",
            c.offset
        ));
    }
    let start = (data_start as u64).checked_add(c.offset);
    let end = start.and_then(|s| s.checked_add(c.length));
    let len = src.bytes().len() as u64;
    let (Some(start), Some(end)) = (start, end) else {
        return Err(format!("constant {i}: range overflows"));
    };
    if end > len {
        return Err(format!(
            "truncated: constant {i} needs bytes {start}..{end}, the file has {len}"
        ));
    }
    let (start, n) = (start as usize, c.length as usize);
    let buffer = match src {
        // bool data is copied so that its bytes can be normalised to 0/1.
        Source::Mapped(m) if spec.dtype != Dtype::Bool => Buffer::mapped(m.clone(), start, n)
            .ok_or_else(|| format!("constant {i}: bad mapped range"))?,
        _ => {
            let mut b = Buffer::from_bytes(&src.bytes()[start..start + n]);
            if spec.dtype == Dtype::Bool {
                crate::buffer::normalize_bools(b.bytes_mut().expect("heap"));
            }
            b
        }
    };
    Ok(Array::from_data(
        Data::contiguous(buffer, &spec.shape),
        spec,
    ))
}

fn decode_function(f: &FunctionRecord, n_constants: usize) -> std::result::Result<Tape, String> {
    let inputs = f
        .inputs
        .iter()
        .map(spec_of)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if f.positional.checked_add(f.kwarg_names.len()) != Some(inputs.len()) {
        return Err(format!(
            "{} positional + {} keyword inputs, but {} input specs",
            f.positional,
            f.kwarg_names.len(),
            inputs.len()
        ));
    }
    let mut sorted = f.kwarg_names.clone();
    sorted.sort();
    sorted.dedup();
    if sorted != f.kwarg_names {
        return Err("keyword names must be sorted and distinct".into());
    }
    let mut entries: Vec<TapeEntry> = Vec::with_capacity(f.entries.len());
    let check_ref =
        |r: &RefRecord, entries: &[TapeEntry]| -> std::result::Result<ValueRef, String> {
            match *r {
                RefRecord::Input(i) if i < inputs.len() => Ok(ValueRef::Input(i)),
                RefRecord::Constant(i) if i < n_constants => Ok(ValueRef::Constant(i)),
                RefRecord::Entry(e, o) if e < entries.len() && o < entries[e].outputs.len() => {
                    Ok(ValueRef::Entry {
                        entry: e,
                        output: o,
                    })
                }
                RefRecord::Input(i) => Err(format!(
                    "input {i} does not exist ({} inputs)",
                    inputs.len()
                )),
                RefRecord::Constant(i) => Err(format!(
                    "constant {i} does not exist ({n_constants} constants)"
                )),
                RefRecord::Entry(e, o) => Err(format!(
                    "refers to output {o} of entry {e}, which is not defined before"
                )),
            }
        };
    for (k, e) in f.entries.iter().enumerate() {
        let entry = lookup(&e.primitive).map_err(|err| format!("entry {k}: {err}"))?;
        let primitive = (entry.decode_cbor)(&e.state).map_err(|err| format!("entry {k}: {err}"))?;
        let refs = e
            .inputs
            .iter()
            .map(|r| check_ref(r, &entries))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|m| format!("entry {k} ({}): {m}", e.primitive))?;
        let outputs = e
            .outputs
            .iter()
            .map(spec_of)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if outputs.is_empty() {
            return Err(format!("entry {k} ({}) has no outputs", e.primitive));
        }
        entries.push(TapeEntry {
            primitive,
            inputs: refs,
            outputs,
        });
    }
    let outputs = f
        .outputs
        .iter()
        .map(|r| check_ref(r, &entries))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|m| format!("outputs: {m}"))?;
    Ok(Tape {
        positional: f.positional,
        kwarg_names: f.kwarg_names.clone(),
        inputs,
        entries,
        outputs,
    })
}

/// Checks a constant's bytes against its recorded checksum.
pub fn verify_constant(a: &Array, record: &ConstantRecord, index: usize, path: &str) -> Result<()> {
    let d = a.data()?;
    let n = record.length as usize;
    let start = d.offset * a.dtype().size();
    let bytes = &d.buffer.bytes()[start..start + n];
    // bool constants were normalised on load; check the normalised form too.
    if checksum::checksum(bytes, record.checksum_block) != record.checksum {
        return Err(Error::Checksum {
            path: path.to_string(),
            what: format!("constant {index} ({} {:?})", record.dtype, record.shape),
        });
    }
    Ok(())
}
