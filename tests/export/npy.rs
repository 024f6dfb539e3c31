//! `.npy` reading and writing.

use crate::common;
use mlx::{io, Array, Dtype};

#[test]
fn round_trip_every_dtype() {
    let dir = std::env::temp_dir().join(format!("mlx-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let arrays = [
        Array::from_slice(&[true, false, true], &[3]).unwrap(),
        Array::from_slice(&[1u8, 2, 255], &[3]).unwrap(),
        Array::from_slice(&[-1i64, 2, 3, 4], &[2, 2]).unwrap(),
        Array::from_slice(&[half::f16::from_f32(1.5)], &[1]).unwrap(),
        Array::scalar(2.5f64),
    ];
    for a in &arrays {
        let p = dir.join("a.npy");
        io::save_npy(&p, a).unwrap();
        let b = io::load_npy(&p).unwrap();
        common::assert_bits_eq(&b, a);
    }
}

#[test]
fn errors_name_the_problem() {
    let e = io::load_npy_bytes(b"not numpy at all", "x.npy")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.npy") && e.contains("magic"), "{e}");
    let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let mut bytes = io::save_npy_bytes(&a).unwrap();
    bytes.pop();
    let e = io::load_npy_bytes(&bytes, "t.npy").unwrap_err().to_string();
    assert!(e.contains("needs 8 data bytes"), "{e}");
    assert_eq!(Dtype::Float32, a.dtype());
}

/// Found by the `npy` and `call_inputs` fuzz targets: a header whose descr
/// is empty, or starts with a multi-byte character, panicked while being
/// split at its first byte.
#[test]
fn empty_and_non_ascii_descrs_are_refused() {
    for descr in ["", "\u{e9}4", "<", "\u{1F600}"] {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (1, 3), }}");
        let mut header = dict.into_bytes();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(b' ');
        }
        header.push(b'\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(&header);
        bytes.extend_from_slice(&[0u8; 12]);
        let e = io::load_npy_bytes(&bytes, "d.npy").unwrap_err().to_string();
        assert!(e.contains("d.npy"), "{descr:?}: {e}");
    }
}
