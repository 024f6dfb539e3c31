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
