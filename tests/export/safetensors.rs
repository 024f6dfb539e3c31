//! safetensors reading and writing, and its error messages.

use crate::common;
use mlx::{io, ops, Array};
use std::collections::BTreeMap;

#[test]
fn round_trip_of_several_dtypes_including_views() {
    let dir = std::env::temp_dir().join(format!("mlx-st-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let mut m = BTreeMap::new();
    m.insert("w_t".to_string(), ops::transpose(&w, &[]).unwrap()); // a view: written as its values
    m.insert(
        "h".to_string(),
        Array::from_slice(
            &[half::bf16::from_f32(1.5), half::bf16::from_f32(-2.0)],
            &[2],
        )
        .unwrap(),
    );
    m.insert(
        "mask".to_string(),
        Array::from_slice(&[true, false, true], &[3]).unwrap(),
    );
    m.insert(
        "idx".to_string(),
        Array::from_slice(&[7i64, -1], &[2]).unwrap(),
    );
    let p = dir.join("t.safetensors");
    io::save_safetensors(&p, &m).unwrap();
    let back = io::load_safetensors(&p).unwrap();
    assert_eq!(
        back.keys().collect::<Vec<_>>(),
        m.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        back["w_t"].to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    for k in ["h", "mask", "idx"] {
        common::assert_bits_eq(&back[k], &m[k]);
    }
}

#[test]
fn bad_files_name_the_file_and_the_problem() {
    let p = std::env::temp_dir().join(format!("mlx-st-bad-{}.safetensors", std::process::id()));
    std::fs::write(&p, b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}").unwrap();
    let e = io::load_safetensors(&p).unwrap_err().to_string();
    assert!(e.contains("mlx-st-bad") && e.contains("safetensors"), "{e}");
    let e = io::load_safetensors("/nonexistent/w.safetensors")
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/w.safetensors"), "{e}");
}
