//! Arbitrary bytes to the `.npy` reader; what loads is evaluated and read
//! back. Any outcome but a panic or a crash is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = mlx::io::load_npy_bytes(data, "fuzz-input") {
        let _ = a.eval();
        let _ = mlx::io::save_npy_bytes(&a);
    }
});
