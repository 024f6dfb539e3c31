//! MLX 0.32's `.mlxfn` format, read and written through the same
//! [`FunctionTable`] as the native format. The layout is positional and
//! little-endian with no alignment; every primitive's state is written by
//! its derived MLX codec (`PrimitiveState::write_mlx`), so there is no
//! per-primitive code here.
//!
//! ```text
//! file     := version:str function_count:i32 shapeless:bool metadata:str function*
//! function := kwarg_keys:vec<str> input_ids:vec<u64> inputs:vec<(Shape, Dtype)>
//!             output_ids:vec<u64> tape_len:u64 entry*
//! entry    := id:u64 has_primitive:bool
//!             ( input_ids:vec<u64> stream:(i32,i32,i32) name:str state
//!               n_siblings:u64 (Shape Dtype | ids:vec<u64> shapes:vec<Shape> dtypes:vec<Dtype>)
//!             | is_constant:bool [Shape Dtype bytes]   -- bytes only at a constant's first use )
//! ```
//! Ids are per function, except constants, which are shared across the
//! functions of a file by id.

use super::tape::{FunctionTable, Tape, TapeEntry, ValueRef};
use crate::buffer::{Buffer, DeferredFile};
use crate::primitive::{
    lookup, mlx_names, registered, MlxReader, MlxVersion, MlxWriter, Spec, StateField,
};
use crate::{Array, Data, Dtype, Error, Result};
use std::collections::HashMap;

/// The primitive names MLX `release` can import, as far as this library
/// implements them, from the registered primitives' `mlx` attributes.
pub fn registry(release: MlxVersion) -> Vec<&'static str> {
    mlx_names(release)
}

/// The release whose layout a file's version string names: the string's
/// leading release number, or the newest known layout when it has none
/// (MLX ignores the string, so hand-made files may carry anything).
pub fn layout_of(version: &str) -> MlxVersion {
    MlxVersion::parse_prefix(version).unwrap_or(MlxVersion::NEWEST)
}

/// The MLX releases that can import a file: from `first` up to, not
/// including, `before` (`None`: every later release this library knows,
/// and newer ones that keep the layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderRange {
    pub first: MlxVersion,
    pub before: Option<MlxVersion>,
}

impl ReaderRange {
    /// The known releases in the range, first and last.
    pub fn known(&self) -> Option<(MlxVersion, MlxVersion)> {
        let inside = |v: &&MlxVersion| **v >= self.first && self.before.is_none_or(|b| **v < b);
        let mut it = MlxVersion::RELEASES.iter().filter(inside);
        let first = *it.next()?;
        Some((first, *it.next_back().unwrap_or(&first)))
    }
}

impl std::fmt::Display for ReaderRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.known(), self.before) {
            (None, _) => write!(f, "no known MLX release"),
            (Some((a, _)), None) => write!(f, "MLX {a} and later"),
            (Some((a, b)), Some(_)) if a == b => write!(f, "MLX {a} only"),
            (Some((a, b)), Some(_)) => write!(f, "MLX {a} to {b}"),
        }
    }
}

/// Which MLX releases can import `table` written in `layout`'s layout: a
/// release reads it if it has every primitive, and no header or state
/// layout change of those primitives falls between it and `layout`.
/// `Err` names a primitive no MLX release has.
pub fn readers(table: &FunctionTable, layout: MlxVersion) -> Result<ReaderRange> {
    let mut range = ReaderRange {
        first: MlxVersion::OLDEST,
        before: None,
    };
    let cut = |bp: MlxVersion, range: &mut ReaderRange| {
        if bp <= layout {
            range.first = range.first.max(bp);
        } else {
            range.before = Some(range.before.map_or(bp, |b| b.min(bp)));
        }
    };
    cut(MlxVersion::HEADER_METADATA, &mut range);
    // Older releases mix keyword inputs up; an old file's own order is
    // whatever its writer's hash map gave, so only newer layouts cut.
    if layout >= MlxVersion::KWARGS_IN_ORDER
        && table.functions.iter().any(|t| t.kwarg_names.len() > 1)
    {
        range.first = range.first.max(MlxVersion::KWARGS_IN_ORDER);
    }
    let mut seen = std::collections::HashSet::new();
    for e in table.functions.iter().flat_map(|t| &t.entries) {
        let name = e.primitive.name();
        if !seen.insert(name) {
            continue;
        }
        let entry = lookup(name)?;
        let since = entry.mlx_since.ok_or_else(|| {
            Error::Export(format!(
                "primitive {name} is not in MLX's registry: no MLX release can import this file"
            ))
        })?;
        range.first = range.first.max(since);
        entry.mlx_breakpoints().for_each(|bp| cut(bp, &mut range));
    }
    Ok(range)
}

fn read_shape(r: &mut MlxReader<'_>) -> Result<Vec<i32>> {
    let n = r.len(4, "shape")?;
    let shape = (0..n).map(|_| r.i32()).collect::<Result<Vec<_>>>()?;
    crate::array::check_shape("shape", &shape).map_err(|e| r.error(e))?;
    Ok(shape)
}

fn read_spec(r: &mut MlxReader<'_>) -> Result<Spec> {
    let shape = read_shape(r)?;
    let dtype = Dtype::read_mlx(r)?;
    Ok(Spec::new(shape, dtype))
}

fn read_ids(r: &mut MlxReader<'_>, what: &str) -> Result<Vec<u64>> {
    let n = r.len(8, what)?;
    (0..n).map(|_| r.u64()).collect()
}

/// Parses an MLX `.mlxfn` file, laid out as the release named in its
/// header wrote it (the metadata string exists from 0.32.1 on; primitive
/// states as their `mlx_since` attributes say). A file from a release newer
/// than [`MlxVersion::NEWEST`] is read with the newest known layout, and an
/// error names its release. `strict` rejects trailing bytes.
pub fn decode(bytes: &[u8], path: &str, strict: bool) -> Result<FunctionTable> {
    decode_from(bytes, None, path, strict)
}

/// [`decode`] of a mapped file whose constants are not copied at import:
/// each is read in place, or copied on first use when it is not aligned
/// (all of the file's misaligned constants at once: `DeferredFile`, which
/// reads them from `file`, the open file `map` maps, when given).
pub fn decode_mapped(
    map: &std::sync::Arc<memmap2::Mmap>,
    file: Option<std::fs::File>,
    path: &str,
    strict: bool,
) -> Result<FunctionTable> {
    let file = DeferredFile::new(map.clone(), file);
    let table = decode_from(map, Some(&file), path, strict)?;
    file.seal();
    Ok(table)
}

fn decode_from(
    bytes: &[u8],
    map: Option<&std::sync::Arc<DeferredFile>>,
    path: &str,
    strict: bool,
) -> Result<FunctionTable> {
    let r = &mut MlxReader::new(bytes, path);
    let version = r.str()?;
    r.version = layout_of(&version);
    decode_body(r, map, version, strict).map_err(|e| {
        let v = r.version;
        if v > MlxVersion::NEWEST {
            annotate(
                e,
                &format!(
                    "written by MLX {v}, newer than the newest release this library knows ({}), \
                     read with that release's layout",
                    MlxVersion::NEWEST
                ),
            )
        } else if v < MlxVersion::OLDEST {
            annotate(
                e,
                &format!(
                    "written by MLX {v}, older than the oldest release this library knows ({}), \
                     read with that release's layout",
                    MlxVersion::OLDEST
                ),
            )
        } else {
            e
        }
    })
}

fn decode_body(
    r: &mut MlxReader<'_>,
    map: Option<&std::sync::Arc<DeferredFile>>,
    version: String,
    strict: bool,
) -> Result<FunctionTable> {
    let count = r.i32()?;
    if count < 0 {
        return Err(r.error(format!("negative function count {count}")));
    }
    let shapeless = r.bool()?;
    let metadata = if r.version >= MlxVersion::HEADER_METADATA {
        r.str()?
    } else {
        String::new()
    };
    let mut table = FunctionTable {
        shapeless,
        metadata,
        writer_version: version,
        ..FunctionTable::default()
    };
    let mut constant_ids: HashMap<u64, usize> = HashMap::new();
    for fi in 0..count {
        let tape = decode_function(r, map, &mut table.constants, &mut constant_ids)
            .map_err(|e| annotate(e, &format!("function {fi}")))?;
        table.functions.push(tape);
    }
    if strict && r.remaining() > 0 {
        return Err(r.error(format!(
            "{} unexpected bytes after the last function",
            r.remaining()
        )));
    }
    Ok(table)
}

fn annotate(e: Error, ctx: &str) -> Error {
    match e {
        Error::Format { path, msg } => Error::Format {
            path,
            msg: format!("{ctx}: {msg}"),
        },
        other => other,
    }
}

fn decode_function(
    r: &mut MlxReader<'_>,
    map: Option<&std::sync::Arc<DeferredFile>>,
    constants: &mut Vec<Array>,
    constant_ids: &mut HashMap<u64, usize>,
) -> Result<Tape> {
    let kwarg_names = Vec::<String>::read_mlx(r)?;
    let input_ids = read_ids(r, "input ids")?;
    let n_inputs = r.len(4, "inputs")?;
    if n_inputs != input_ids.len() {
        return Err(r.error(format!(
            "{} input ids but {n_inputs} input descriptions",
            input_ids.len()
        )));
    }
    let inputs = (0..n_inputs)
        .map(|_| read_spec(r))
        .collect::<Result<Vec<_>>>()?;
    if kwarg_names.len() > inputs.len() {
        return Err(r.error(format!(
            "{} keyword names for {} inputs",
            kwarg_names.len(),
            inputs.len()
        )));
    }
    let output_ids = read_ids(r, "output ids")?;
    let tape_len = r.len(9, "tape")?;
    let mut ids: HashMap<u64, ValueRef> = HashMap::new();
    let input_pos: HashMap<u64, usize> = input_ids
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i))
        .collect();
    let mut entries: Vec<TapeEntry> = Vec::new();
    for _ in 0..tape_len {
        let at = r.pos();
        let id = r.u64()?;
        if r.bool()? {
            let in_ids = read_ids(r, "entry input ids")?;
            let refs = in_ids
                .iter()
                .map(|i| {
                    ids.get(i)
                        .copied()
                        .ok_or_else(|| r.error(format!("entry uses id {i} before it is defined")))
                })
                .collect::<Result<Vec<_>>>()?;
            let _stream_index = r.i32()?;
            let device = r.i32()?;
            let _device_index = r.i32()?;
            if device != 0 && device != 1 {
                return Err(r.error(format!("unknown device type {device}")));
            }
            let name_at = r.pos();
            let name = r.str()?;
            let entry = lookup(&name).map_err(|_| Error::UnknownPrimitive {
                name: name.clone(),
                at: format!(" in {} at byte {name_at}", r.source),
                known: registered()
                    .iter()
                    .map(|e| e.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
            let mut primitive =
                (entry.decode_mlx)(r).map_err(|e| annotate(e, &format!("state of {name}")))?;
            let n_siblings = r.u64()?;
            let (out_ids, outputs) = if n_siblings == 0 {
                (vec![id], vec![read_spec(r)?])
            } else {
                let oids = read_ids(r, "sibling ids")?;
                let ns = r.len(8, "sibling shapes")?;
                let shapes = (0..ns).map(|_| read_shape(r)).collect::<Result<Vec<_>>>()?;
                let nd = r.len(5, "sibling dtypes")?;
                let dtypes = (0..nd)
                    .map(|_| Dtype::read_mlx(r))
                    .collect::<Result<Vec<_>>>()?;
                // Compared as u64: a hostile n_siblings of u64::MAX must not overflow.
                let k = n_siblings.saturating_add(1);
                let lens = [oids.len(), shapes.len(), dtypes.len()];
                if lens.iter().any(|&l| l as u64 != k) || !oids.contains(&id) {
                    return Err(r.error(format!(
                        "inconsistent sibling block for {name} (entry at byte {at})"
                    )));
                }
                (
                    oids,
                    shapes
                        .into_iter()
                        .zip(dtypes)
                        .map(|(s, d)| Spec::new(s, d))
                        .collect(),
                )
            };
            primitive.adopt_recorded_specs(&outputs);
            let e = entries.len();
            for (o, oid) in out_ids.iter().enumerate() {
                ids.insert(
                    *oid,
                    ValueRef::Entry {
                        entry: e,
                        output: o,
                    },
                );
            }
            entries.push(TapeEntry {
                primitive,
                inputs: refs,
                outputs,
            });
        } else if r.bool()? {
            if let Some(&c) = constant_ids.get(&id) {
                ids.insert(id, ValueRef::Constant(c));
                continue;
            }
            let spec = read_spec(r)?;
            let n = spec
                .size()
                .checked_mul(spec.dtype.size())
                .ok_or_else(|| r.error("constant too large"))?;
            let at = r.pos();
            let raw = r.take(n, "constant data")?;
            let bools = spec.dtype == Dtype::Bool;
            let buf = match map {
                Some(m) => Buffer::mapped_or_deferred(m, at, n, bools)
                    .ok_or_else(|| r.error("constant data outside the file"))?,
                None => {
                    let mut buf = Buffer::from_bytes(raw);
                    if bools {
                        crate::buffer::normalize_bools(buf.bytes_mut().expect("heap"));
                    }
                    buf
                }
            };
            constants.push(Array::from_data(Data::contiguous(buf, &spec.shape), spec));
            constant_ids.insert(id, constants.len() - 1);
            ids.insert(id, ValueRef::Constant(constants.len() - 1));
        } else {
            let i = *input_pos
                .get(&id)
                .ok_or_else(|| r.error(format!("leaf {id} is neither an input nor a constant")))?;
            ids.insert(id, ValueRef::Input(i));
        }
    }
    let outputs = output_ids
        .iter()
        .map(|i| {
            match ids
                .get(i)
                .copied()
                .or_else(|| input_pos.get(i).map(|&p| ValueRef::Input(p)))
            {
                Some(v) => Ok(v),
                None => Err(r.error(format!("output id {i} is not defined by the tape"))),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Tape {
        positional: inputs.len() - kwarg_names.len(),
        kwarg_names,
        inputs,
        entries,
        outputs,
    })
}

fn write_shape(w: &mut MlxWriter, shape: &[i32]) {
    w.len(shape.len());
    shape.iter().for_each(|&d| w.i32(d));
}

fn write_spec(w: &mut MlxWriter, s: &Spec) {
    write_shape(w, &s.shape);
    s.dtype.write_mlx(w);
}

/// The name MLX `target` writes for `name`, or why it cannot hold it (or
/// would compute it differently).
fn mlx_name_for(name: &str, target: MlxVersion) -> Result<&'static str> {
    let entry = lookup(name)?;
    if let (Some(_), Some((since, why))) =
        (entry.mlx_name(target), entry.mlx_meaning_before(target))
    {
        return Err(Error::Export(format!(
            "MLX {target} could not run this file as written: MLX before {since} computes {name} \
             differently (it {why}); write for MLX {since} or newer"
        )));
    }
    match (entry.mlx_name(target), entry.mlx_since) {
        (Some(n), _) => Ok(n),
        (None, Some(since)) => Err(Error::Export(format!(
            "primitive {name} exists in MLX only from {since} on, so MLX {target} could not import this file; \
             write for MLX {since} or newer"
        ))),
        (None, None) => Err(Error::Export(format!(
            "primitive {name} is not in MLX's registry, so Python MLX could not import this file; \
             export it in the native format instead"
        ))),
    }
}

/// Encodes a table in MLX's layout for the newest known release.
/// Primitives MLX cannot import are an error.
pub fn encode(table: &FunctionTable) -> Result<Vec<u8>> {
    encode_for(table, MlxVersion::NEWEST)
}

/// Encodes a table as MLX release `target` lays files out: no metadata
/// before 0.32.1, the primitive names and state layouts of that release.
/// A primitive or a state value the release lacks is an error naming it.
pub fn encode_for(table: &FunctionTable, target: MlxVersion) -> Result<Vec<u8>> {
    let mut names: HashMap<&'static str, &'static str> = HashMap::new();
    for t in &table.functions {
        for e in &t.entries {
            let name = e.primitive.name();
            if !names.contains_key(name) {
                names.insert(name, mlx_name_for(name, target)?);
            }
        }
    }
    if target < MlxVersion::HEADER_METADATA && !table.metadata.is_empty() {
        return Err(Error::Export(format!(
            "MLX {target} could not import this file: it has metadata, which MLX files hold only from {} on; \
             clear the metadata (mlxfn convert --drop-metadata) to write for MLX {target}",
            MlxVersion::HEADER_METADATA
        )));
    }
    if target < MlxVersion::KWARGS_IN_ORDER {
        if let Some(t) = table.functions.iter().find(|t| t.kwarg_names.len() > 1) {
            return Err(Error::Export(format!(
                "MLX {target} could not run this file as written: it passes keyword inputs to an imported \
                 function in hash-map order, which mixes up the {} keyword inputs ({}); write for MLX {} or newer",
                t.kwarg_names.len(),
                t.kwarg_names.join(", "),
                MlxVersion::KWARGS_IN_ORDER
            )));
        }
    }
    let mut w = MlxWriter::for_release(target);
    w.str(&target.to_string());
    w.i32(table.functions.len() as i32);
    w.bool(table.shapeless);
    if target >= MlxVersion::HEADER_METADATA {
        w.str(&table.metadata);
    }
    // Ids: constants get file-wide ids; everything else is numbered per function.
    let const_id = |c: usize| 1 + c as u64;
    let base = 1 + table.constants.len() as u64;
    let mut written = vec![false; table.constants.len()];
    for t in &table.functions {
        let input_id = |i: usize| base + i as u64;
        let entry_base = base + t.inputs.len() as u64;
        let mut entry_out_ids: Vec<Vec<u64>> = Vec::new();
        let mut next = entry_base;
        for e in &t.entries {
            entry_out_ids.push((0..e.outputs.len()).map(|o| next + o as u64).collect());
            next += e.outputs.len() as u64;
        }
        let id_of = |r: &ValueRef| match *r {
            ValueRef::Input(i) => input_id(i),
            ValueRef::Constant(c) => const_id(c),
            ValueRef::Entry { entry, output } => entry_out_ids[entry][output],
        };
        Vec::<String>::write_mlx(&t.kwarg_names, &mut w);
        w.len(t.inputs.len());
        (0..t.inputs.len()).for_each(|i| w.u64(input_id(i)));
        w.len(t.inputs.len());
        t.inputs.iter().for_each(|s| write_spec(&mut w, s));
        w.len(t.outputs.len());
        t.outputs.iter().for_each(|r| w.u64(id_of(r)));

        let mut body = MlxWriter::for_release(target);
        let mut count = 0u64;
        let mut leaf_done: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut leaf = |r: &ValueRef, body: &mut MlxWriter, count: &mut u64| -> Result<()> {
            let id = id_of(r);
            if !matches!(r, ValueRef::Input(_) | ValueRef::Constant(_)) || !leaf_done.insert(id) {
                return Ok(());
            }
            *count += 1;
            body.u64(id);
            body.bool(false);
            match *r {
                ValueRef::Input(_) => body.bool(false),
                ValueRef::Constant(c) => {
                    body.bool(true);
                    if !written[c] {
                        written[c] = true;
                        let a = &table.constants[c];
                        write_spec(body, a.spec());
                        body.raw(&a.to_bytes()?);
                    }
                }
                ValueRef::Entry { .. } => {}
            }
            Ok(())
        };
        for (k, e) in t.entries.iter().enumerate() {
            for r in &e.inputs {
                leaf(r, &mut body, &mut count)?;
            }
            count += 1;
            body.u64(entry_out_ids[k][0]);
            body.bool(true);
            body.len(e.inputs.len());
            e.inputs.iter().for_each(|r| body.u64(id_of(r)));
            (0..3).for_each(|_| body.i32(0)); // stream: index 0, cpu, device 0
            body.str(names[e.primitive.name()]);
            e.primitive.write_mlx(&mut body);
            if let Some(p) = body.problems.first() {
                return Err(Error::Export(format!(
                    "MLX {target} could not import this file: {p}"
                )));
            }
            body.u64(e.outputs.len() as u64 - 1);
            if e.outputs.len() == 1 {
                write_spec(&mut body, &e.outputs[0]);
            } else {
                body.len(e.outputs.len());
                entry_out_ids[k].iter().for_each(|&id| body.u64(id));
                body.len(e.outputs.len());
                e.outputs
                    .iter()
                    .for_each(|s| write_shape(&mut body, &s.shape));
                body.len(e.outputs.len());
                e.outputs.iter().for_each(|s| s.dtype.write_mlx(&mut body));
            }
        }
        for r in &t.outputs {
            leaf(r, &mut body, &mut count)?;
        }
        w.u64(count);
        w.raw(&body.bytes);
    }
    Ok(w.bytes)
}
