//! Array files: numpy's `.npy` (and, later, safetensors).

mod npy;

pub use npy::{load_npy, load_npy_bytes, save_npy, save_npy_bytes};
