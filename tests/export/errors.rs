//! Every error path of the native importer: damaged headers, damaged
//! constants, truncation anywhere, bad references, unknown primitives.

use mlx::{ops, Array, ExportOptions, ImportOptions};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-export-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A small valid file with one constant of 256 floats.
fn sample(name: &str) -> (PathBuf, Vec<u8>) {
    let w = Array::from_slice(&(0..256).map(|i| i as f32).collect::<Vec<_>>(), &[256]).unwrap();
    let path = tmp(name);
    mlx::export_function(
        &path,
        move |a| Ok(vec![ops::add(&a[0], &w)?]),
        &[Array::from_slice(&[0.0f32; 256], &[256]).unwrap()],
        &ExportOptions::default(),
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn import_bytes(name: &str, bytes: &[u8]) -> mlx::Result<mlx::ImportedFunction> {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    mlx::import_function(&p)
}

fn call(f: &mlx::ImportedFunction) -> mlx::Result<Vec<f32>> {
    let out = f.call(&[Array::from_slice(&[1.0f32; 256], &[256]).unwrap()])?;
    out[0].to_vec::<f32>()
}

#[test]
fn header_damage_is_detected_by_its_checksum() {
    let (_, bytes) = sample("h.mlxfn");
    let hlen = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    for pos in [32, 32 + hlen / 2, 32 + hlen - 1] {
        let mut b = bytes.clone();
        b[pos] ^= 0x40;
        let e = import_bytes("h2.mlxfn", &b)
            .err()
            .expect("damaged header must fail")
            .to_string();
        assert!(e.contains("checksum") && e.contains("header"), "{e}");
    }
}

#[test]
fn constant_damage_is_an_error_naming_the_constant_on_first_use() {
    let (_, mut bytes) = sample("c.mlxfn");
    let n = bytes.len();
    bytes[n - 10] ^= 0x01; // inside the constant's data
    let f = import_bytes("c2.mlxfn", &bytes).expect("header is intact, import succeeds lazily");
    let e = call(&f).unwrap_err().to_string();
    assert!(
        e.contains("checksum") && e.contains("constant 0") && e.contains("float32 [256]"),
        "{e}"
    );
    // Reading into memory checks every constant at import.
    let p = tmp("c3.mlxfn");
    std::fs::write(&p, &bytes).unwrap();
    let e = mlx::import_function_with(
        &p,
        &ImportOptions {
            mmap: false,
            ..Default::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("constant 0"), "{e}");
    // Trusting the file skips the check: the damaged value comes through.
    for mmap in [true, false] {
        let f = mlx::import_function_with(
            &p,
            &ImportOptions {
                mmap,
                verify_checksums: false,
                ..Default::default()
            },
        )
        .unwrap();
        let out = call(&f).unwrap();
        // Byte n - 10 is byte 2 of element 253 (elements are 4 bytes, 256 of them last).
        let want = f32::from_bits(253f32.to_bits() ^ (1 << 16)) + 1.0;
        assert_eq!((out[253], out[255]), (want, 256.0), "mmap {mmap}");
    }
}

/// A constant longer than the 4 MiB checksum block is hashed block by
/// block: the file's checksum is xxh3 of the blocks' xxh3 digests, and
/// damage in any block (first, middle, the short last one) is found.
#[test]
fn large_constants_are_checked_block_by_block() {
    const BLOCK: usize = 4 << 20;
    let n = (2 * BLOCK + 4096) / 4; // two full blocks and a short third
    let v: Vec<f32> = (0..n).map(|i| (i % 1013) as f32).collect();
    let w = Array::from_slice(&v, &[n as i32]).unwrap();
    let path = tmp("big.mlxfn");
    mlx::export_function(
        &path,
        move |a| Ok(vec![ops::add(&a[0], &w)?]),
        &[Array::from_slice(&[0.0f32], &[1]).unwrap()],
        &ExportOptions::default(),
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let data: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let start = bytes.len() - data.len();
    assert_eq!(&bytes[start..], &data[..], "the constant ends the file");
    let digests: Vec<u8> = data
        .chunks(BLOCK)
        .flat_map(|b| xxhash_rust::xxh3::xxh3_64(b).to_le_bytes())
        .collect();
    let want = xxhash_rust::xxh3::xxh3_64(&digests);
    let f = mlx::import_function(&path).unwrap();
    let record = f.table().constants.len();
    assert_eq!(record, 1);
    let hlen = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let header: ciborium::Value = ciborium::from_reader(&bytes[32..32 + hlen]).unwrap();
    let text = format!("{header:?}");
    assert!(
        text.contains(&format!("Integer({want})")),
        "checksum {want} not in {text}"
    );
    let x = Array::from_slice(&[1.0f32], &[1]).unwrap();
    let out = f.call(std::slice::from_ref(&x)).unwrap()[0]
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(out[n - 1], ((n - 1) % 1013) as f32 + 1.0);
    for at in [start + 5, start + BLOCK + 123, bytes.len() - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        let f = import_bytes("big2.mlxfn", &b).unwrap();
        let e = f.call(std::slice::from_ref(&x)).unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains("constant 0"), "{e}");
    }
}

#[test]
fn truncation_at_every_length_is_an_error_never_a_panic() {
    let (_, bytes) = sample("t.mlxfn");
    for len in 0..bytes.len() {
        let r = import_bytes("t2.mlxfn", &bytes[..len]);
        // Either the import fails, or (data section only partly cut) the call does.
        if let Ok(f) = r {
            assert!(
                call(&f).is_err(),
                "truncated to {len} bytes but a call succeeded"
            );
        }
    }
    let f = import_bytes("t3.mlxfn", &bytes).unwrap();
    assert_eq!(call(&f).unwrap()[255], 256.0);
}

#[test]
fn wrong_magic_and_future_versions_are_rejected() {
    let (_, bytes) = sample("v.mlxfn");
    let mut b = bytes.clone();
    b[8..12].copy_from_slice(&99u32.to_le_bytes());
    let e = import_bytes("v2.mlxfn", &b).err().unwrap().to_string();
    assert!(e.contains("format version 99"), "{e}");
    let e = import_bytes("v3.mlxfn", b"").err().unwrap().to_string();
    assert!(e.contains("v3.mlxfn"), "{e}");
}

#[test]
fn missing_file_names_the_path() {
    let e = mlx::import_function(tmp("does-not-exist.mlxfn"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("does-not-exist.mlxfn"), "{e}");
}

#[test]
fn flipping_any_byte_never_gives_silently_different_numbers() {
    let (_, bytes) = sample("flip.mlxfn");
    let want: Vec<f32> = (0..256).map(|i| i as f32 + 1.0).collect();
    for pos in 0..bytes.len() {
        let mut b = bytes.clone();
        b[pos] ^= 0x5a;
        match import_bytes("flip2.mlxfn", &b).and_then(|f| call(&f)) {
            Err(_) => {}
            // Bytes nobody reads (reserved field, alignment padding) may change freely.
            Ok(got) => assert_eq!(got, want, "byte {pos} flipped gave different numbers"),
        }
    }
}

#[test]
fn one_imported_function_serves_eight_threads() {
    let (path, _) = sample("threads.mlxfn");
    let f = std::sync::Arc::new(mlx::import_function(&path).unwrap());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let f = f.clone();
            std::thread::spawn(move || {
                let x = Array::from_slice(&vec![t as f32; 256], &[256]).unwrap();
                f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap()
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let got = h.join().unwrap();
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, &v)| v == i as f32 + t as f32),
            "thread {t}"
        );
    }
}
