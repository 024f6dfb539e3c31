//! What `mlxfn run -i FILE...` does with its inputs: arbitrary `.npy` bytes
//! loaded and passed to real imported functions (committed fixtures: keyword
//! inputs, several traces, gather/scatter, a shapeless trace). Any dtype,
//! shape or count must give a result or an `Err`, never a crash.
//!
//! Input: one byte picks the function; the rest is split at each `.npy`
//! magic (`\x93NUMPY`) into the arrays, the last one passed as the first
//! keyword input when the function has keywords.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mlx::{import_function_from_bytes, io::load_npy_bytes, ImportOptions, Kwargs};

const FUNCTIONS: [&[u8]; 4] = [
    include_bytes!("../../tests/fixtures/mlx/kwargs/fn.mlxfn"),
    include_bytes!("../../tests/fixtures/mlx/multi_trace/fn.mlxfn"),
    include_bytes!("../../tests/fixtures/mlx/gather_scatter/fn.mlxfn"),
    include_bytes!("../../tests/fixtures/mlx/shapeless/fn.mlxfn"),
];
const MAGIC: &[u8] = b"\x93NUMPY";

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let file = FUNCTIONS[pick as usize % FUNCTIONS.len()];
    let f = import_function_from_bytes(file.to_vec(), "fixture", &ImportOptions::default())
        .expect("a committed fixture imports");
    let mut arrays = Vec::new();
    for piece in split_at_magic(rest) {
        match load_npy_bytes(&piece, "fuzz-input") {
            // Huge arrays are refused by the caps; small ones are called.
            Ok(a) if a.size() <= 1 << 16 => arrays.push(a),
            _ => return,
        }
    }
    let mut kwargs = Kwargs::new();
    if let Some((name, _)) = f.signatures().first().and_then(|s| s.keyword.iter().next()) {
        if let Some(a) = arrays.pop() {
            kwargs.insert(name.clone(), a);
        }
    }
    if let Ok(out) = f.call_kwargs(&arrays, &kwargs) {
        for o in out {
            let _ = o.eval();
        }
    }
});

/// The pieces of `bytes` that each start with [`MAGIC`] (bytes before the
/// first magic are dropped).
fn split_at_magic(bytes: &[u8]) -> Vec<Vec<u8>> {
    let starts: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i..].starts_with(MAGIC))
        .take(4)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| bytes[s..starts.get(k + 1).copied().unwrap_or(bytes.len())].to_vec())
        .collect()
}
