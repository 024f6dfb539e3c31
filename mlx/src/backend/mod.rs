//! Kernels. Only a CPU backend today; a future backend is a sibling folder.

pub mod cpu;
