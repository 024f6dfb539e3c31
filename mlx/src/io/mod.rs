//! Array files: numpy's `.npy` and safetensors.

mod npy;
mod safetensors;

pub use self::safetensors::{load_safetensors, save_safetensors};
pub use npy::{load_npy, load_npy_bytes, save_npy, save_npy_bytes};
