//! The native importer on well-formed files whose header says something
//! wrong: the header is re-encoded with a valid checksum, so only the
//! importer's own checks stand between it and a bad graph. Every case must
//! be an `Err` that says where in the file the problem is.

use ciborium::Value;
use mlx::{ops, Array, ExportOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh path per call: the tests run in parallel.
fn tmp(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("mlx-forged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}-{name}", N.fetch_add(1, Ordering::Relaxed)))
}

/// `reshape(x + w, [16, 16])` with a 256-float constant `w`, and a keyword
/// input `scale` multiplied in: Add, Multiply and Reshape entries.
fn sample() -> Vec<u8> {
    let w = Array::from_slice(&(0..256).map(|i| i as f32).collect::<Vec<_>>(), &[256]).unwrap();
    let path = tmp("sample.mlxfn");
    let mut kw = mlx::Kwargs::new();
    kw.insert("scale".into(), Array::scalar(1.0f32));
    mlx::export_function_kwargs(
        &path,
        move |a, k| {
            let y = ops::multiply(&ops::add(&a[0], &w)?, &k["scale"])?;
            Ok(vec![ops::reshape(&y, &[16, 16])?])
        },
        &[Array::from_slice(&[0.0f32; 256], &[256]).unwrap()],
        &kw,
        &ExportOptions::default(),
    )
    .unwrap();
    std::fs::read(&path).unwrap()
}

/// The header of a native file as a CBOR value.
fn header(bytes: &[u8]) -> Value {
    let hlen = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    ciborium::from_reader(&bytes[32..32 + hlen]).unwrap()
}

/// `bytes` with its header replaced by `h` (checksum recomputed, data
/// section moved to the new 64-byte boundary, offsets unchanged).
fn with_header(bytes: &[u8], h: &Value) -> Vec<u8> {
    let old_len = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let data = &bytes[(32 + old_len).div_ceil(64) * 64..];
    let mut hb = Vec::new();
    ciborium::into_writer(h, &mut hb).unwrap();
    with_raw_header(&bytes[..16], &hb, data)
}

fn with_raw_header(preamble: &[u8], hb: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = preamble[..16].to_vec();
    out.extend_from_slice(&(hb.len() as u64).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(hb).to_le_bytes());
    out.extend_from_slice(hb);
    out.resize(out.len().div_ceil(64) * 64, 0);
    out.extend_from_slice(data);
    out
}

/// The map entry `key` of a CBOR map.
fn field<'a>(v: &'a mut Value, key: &str) -> &'a mut Value {
    let Value::Map(m) = v else {
        panic!("not a map: {v:?}")
    };
    &mut m
        .iter_mut()
        .find(|(k, _)| k.as_text() == Some(key))
        .unwrap_or_else(|| panic!("no field {key}"))
        .1
}

fn item(v: &mut Value, i: usize) -> &mut Value {
    match v {
        Value::Array(a) => &mut a[i],
        other => panic!("not an array: {other:?}"),
    }
}

/// The `k`-th tape entry of function 0.
fn entry(h: &mut Value, k: usize) -> &mut Value {
    item(field(item(field(h, "functions"), 0), "entries"), k)
}

/// Index of the first entry whose primitive is `name`.
fn entry_index(h: &mut Value, name: &str) -> usize {
    let entries = field(item(field(h, "functions"), 0), "entries");
    let Value::Array(a) = entries else { panic!() };
    a.iter_mut()
        .position(|e| field(e, "primitive").as_text() == Some(name))
        .unwrap_or_else(|| panic!("no {name} entry"))
}

/// Imports the forged file and calls it; the error text.
fn import_err(bytes: &[u8]) -> String {
    let p = tmp("forged.mlxfn");
    std::fs::write(&p, bytes).unwrap();
    let r = mlx::import_function(&p).and_then(|f| {
        let mut kw = mlx::Kwargs::new();
        kw.insert("scale".into(), Array::scalar(1.0f32));
        f.call_kwargs(&[Array::from_slice(&[1.0f32; 256], &[256]).unwrap()], &kw)
            .and_then(|o| o[0].eval().map(|_| o))
    });
    match r {
        Ok(_) => panic!("a forged file imported and ran"),
        Err(e) => e.to_string(),
    }
}

/// Applies `edit` to the sample's header and returns the import error.
fn forged(edit: impl FnOnce(&mut Value)) -> String {
    let bytes = sample();
    let mut h = header(&bytes);
    edit(&mut h);
    import_err(&with_header(&bytes, &h))
}

fn assert_has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "error {e:?} lacks {p:?}");
    }
}

#[test]
fn the_sample_itself_imports_and_runs() {
    let bytes = sample();
    let p = tmp("plain.mlxfn");
    // Re-encoding an untouched header gives a file that still works.
    std::fs::write(&p, with_header(&bytes, &header(&bytes))).unwrap();
    let f = mlx::import_function(&p).unwrap();
    let mut kw = mlx::Kwargs::new();
    kw.insert("scale".into(), Array::scalar(2.0f32));
    let out = f
        .call_kwargs(&[Array::from_slice(&[1.0f32; 256], &[256]).unwrap()], &kw)
        .unwrap();
    assert_eq!(out[0].shape(), &[16, 16]);
    let v = out[0].to_vec::<f32>().unwrap();
    assert!(v
        .iter()
        .enumerate()
        .all(|(i, &x)| x == 2.0 * (i as f32 + 1.0)));
}

#[test]
fn unknown_primitive_names_it_the_entry_and_the_known_names() {
    let e = forged(|h| {
        let k = entry_index(h, "Add");
        *field(entry(h, k), "primitive") = Value::Text("FluxCapacitor".into());
    });
    assert_has(
        &e,
        &[
            "function 0",
            "entry",
            "FluxCapacitor",
            "Reshape",
            "Multiply",
        ],
    );
}

#[test]
fn a_state_that_does_not_decode_names_the_entry() {
    let e = forged(|h| {
        let k = entry_index(h, "Reshape");
        *field(field(entry(h, k), "state"), "shape") = Value::Text("sixteen".into());
    });
    assert_has(&e, &["function 0", "entry", "Reshape"]);
    // A state that is not a map at all.
    let e = forged(|h| {
        let k = entry_index(h, "Reshape");
        *field(entry(h, k), "state") = Value::Integer(7.into());
    });
    assert_has(&e, &["function 0", "entry", "Reshape"]);
}

#[test]
fn references_to_undefined_values_and_cycles_are_refused() {
    let refs = |h: &mut Value, k: usize| -> Value { field(entry(h, k), "inputs").clone() };
    // An entry that uses its own output (a cycle) or a later entry's.
    for target in [0usize, 1, 40] {
        let e = forged(|h| {
            let k = entry_index(h, "Reshape");
            let mut ins = refs(h, k);
            let t = if target == 0 { k } else { k + target };
            *item(&mut ins, 0) = Value::Map(vec![(
                Value::Text("Entry".into()),
                Value::Array(vec![Value::Integer(t.into()), Value::Integer(0.into())]),
            )]);
            *field(entry(h, k), "inputs") = ins;
        });
        assert_has(
            &e,
            &["function 0", "entry", "Reshape", "not defined before"],
        );
    }
    // A second output of an entry that has one.
    let e = forged(|h| {
        let k = entry_index(h, "Reshape");
        let mut ins = refs(h, k);
        *item(&mut ins, 0) = Value::Map(vec![(
            Value::Text("Entry".into()),
            Value::Array(vec![Value::Integer(0.into()), Value::Integer(3.into())]),
        )]);
        *field(entry(h, k), "inputs") = ins;
    });
    assert_has(&e, &["output 3 of entry 0"]);
    // Inputs and constants that do not exist.
    for (kind, n, want) in [
        ("Input", 9, "input 9 does not exist"),
        ("Constant", 5, "constant 5 does not exist"),
    ] {
        let e = forged(|h| {
            let k = entry_index(h, "Add");
            let mut ins = refs(h, k);
            *item(&mut ins, 0) =
                Value::Map(vec![(Value::Text(kind.into()), Value::Integer(n.into()))]);
            *field(entry(h, k), "inputs") = ins;
        });
        assert_has(&e, &["function 0", want]);
    }
    // The function's outputs too.
    let e = forged(|h| {
        *field(item(field(h, "functions"), 0), "outputs") = Value::Array(vec![Value::Map(vec![(
            Value::Text("Entry".into()),
            Value::Array(vec![Value::Integer(99.into()), Value::Integer(0.into())]),
        )])]);
    });
    assert_has(&e, &["function 0", "outputs", "entry 99"]);
}

#[test]
fn bad_dtypes_and_shapes_are_refused() {
    let e = forged(|h| {
        let c = item(field(h, "constants"), 0);
        *field(c, "dtype") = Value::Text("float7".into());
    });
    assert_has(&e, &["constant 0", "float7"]);
    let e = forged(|h| {
        let f = item(field(h, "functions"), 0);
        *field(item(field(f, "inputs"), 0), "shape") =
            Value::Array(vec![Value::Integer((-3).into())]);
    });
    assert_has(&e, &["function 0", "-3"]);
    let e = forged(|h| {
        let k = entry_index(h, "Reshape");
        *field(entry(h, k), "outputs") = Value::Array(vec![]);
    });
    assert_has(&e, &["function 0", "Reshape", "no outputs"]);
    // A recorded output shape that the primitive does not produce.
    let e = forged(|h| {
        let k = entry_index(h, "Reshape");
        let out = item(field(entry(h, k), "outputs"), 0);
        *field(out, "shape") =
            Value::Array(vec![Value::Integer(8.into()), Value::Integer(32.into())]);
    });
    assert_has(&e, &["Reshape", "[8, 32]"]);
}

#[test]
fn constant_records_are_checked_against_the_file() {
    let set = |name: &'static str, v: u64| {
        forged(move |h| {
            let c = item(field(h, "constants"), 0);
            *field(c, name) = Value::Integer(v.into());
        })
    };
    assert_has(&set("offset", 3), &["constant 0", "aligned"]);
    assert_has(&set("offset", 1 << 40), &["constant 0", "truncated"]);
    assert_has(&set("offset", u64::MAX - 63), &["constant 0", "overflows"]);
    assert_has(&set("length", 100), &["constant 0", "1024", "100"]);
    assert_has(&set("checksum", 12345), &["checksum", "constant 0"]);
    assert_has(
        &set("checksum_block", 16),
        &["constant 0", "checksum block of 16"],
    );
    // A shape whose byte count overflows.
    let e = forged(|h| {
        let c = item(field(h, "constants"), 0);
        *field(c, "shape") = Value::Array(vec![Value::Integer(i32::MAX.into()); 4]);
    });
    assert_has(&e, &["constant 0"]);
}

#[test]
fn input_tables_must_agree() {
    let e = forged(|h| {
        *field(item(field(h, "functions"), 0), "positional") = Value::Integer(3.into());
    });
    assert_has(&e, &["function 0", "3 positional", "input specs"]);
    let e = forged(|h| {
        *field(item(field(h, "functions"), 0), "kwarg_names") =
            Value::Array(vec![Value::Text("zeta".into())]);
        // Same count: now the call's keyword `scale` matches nothing.
    });
    assert_has(&e, &["zeta", "scale"]);
    let e = forged(|h| {
        let f = item(field(h, "functions"), 0);
        *field(f, "kwarg_names") =
            Value::Array(vec![Value::Text("b".into()), Value::Text("a".into())]);
        *field(f, "positional") = Value::Integer(0.into());
    });
    assert_has(&e, &["function 0", "sorted and distinct"]);
}

#[test]
fn deep_nesting_and_oversized_headers_are_errors_not_crashes() {
    let bytes = sample();
    // A state nested a million arrays deep: refused by the decoder's depth
    // limit, not a stack overflow.
    let depth = 1_000_000;
    let hb = header_bytes_with_state_prefix(&bytes, depth);
    let old = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let data = bytes[(32 + old).div_ceil(64) * 64..].to_vec();
    let e = import_err(&with_raw_header(&bytes, &hb, &data));
    assert_has(&e, &["header"]);
    // A header length that takes in a byte of padding: its checksum fails.
    let mut b = with_raw_header(&bytes, &hb, &data);
    b[16..24].copy_from_slice(&(hb.len() as u64 + 1).to_le_bytes());
    assert_has(&import_err(&b), &["checksum", "header"]);
    // A header length beyond the file and beyond the 1 GiB limit.
    for len in [b.len() as u64, 1u64 << 31, u64::MAX] {
        let mut b = with_raw_header(&bytes, &hb, &data);
        b[16..24].copy_from_slice(&len.to_le_bytes());
        assert_has(&import_err(&b), &["truncated", "header"]);
    }
}

/// The sample's header bytes with the first entry's state replaced by
/// `depth` nested one-element CBOR arrays (written by hand: a value that
/// deep cannot be built as a `Value` without recursing).
fn header_bytes_with_state_prefix(bytes: &[u8], depth: usize) -> Vec<u8> {
    let mut h = header(bytes);
    let marker = "@@NESTED@@";
    *field(entry(&mut h, 0), "state") = Value::Text(marker.into());
    let mut hb = Vec::new();
    ciborium::into_writer(&h, &mut hb).unwrap();
    // The marker is encoded as a text header byte (0x60 + len) then its bytes.
    let mut enc = vec![0x60 + marker.len() as u8];
    enc.extend_from_slice(marker.as_bytes());
    let at = hb.windows(enc.len()).position(|w| w == enc).unwrap();
    let mut nested = vec![0x81u8; depth]; // array of length 1, repeated
    nested.push(0x00); // innermost: the integer 0
    hb.splice(at..at + enc.len(), nested);
    hb
}
