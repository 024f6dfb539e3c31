//! Arbitrary bytes to the safetensors reader (through a file: the reader
//! takes a path). Any outcome but a panic or a crash is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("mlx-fuzz-{}.safetensors", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(map) = mlx::io::load_safetensors(&path) {
        for a in map.values() {
            let _ = a.eval();
        }
    }
});
