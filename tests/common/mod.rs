//! Helpers shared by the integration tests: fixture paths and comparisons.
#![allow(dead_code)]

pub mod mlx_cases;

use mlx::{ops, Array, Dtype};
use std::path::PathBuf;

/// Path of a file under `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Loads `tests/fixtures/<rel>` as an array.
pub fn npy(rel: &str) -> Array {
    mlx::io::load_npy(fixture(rel)).unwrap_or_else(|e| panic!("{e}"))
}

/// Loads `tests/fixtures/<stem>.npy`, or `<stem>_bf16bits.npy` (bfloat16
/// stored as its uint16 bits, which `.npy` has no type for) as bfloat16.
pub fn npy_or_bf16bits(stem: &str) -> Array {
    let bits = fixture(&format!("{stem}_bf16bits.npy"));
    if !bits.exists() {
        return npy(&format!("{stem}.npy"));
    }
    let a = mlx::io::load_npy(bits).unwrap_or_else(|e| panic!("{e}"));
    let v: Vec<half::bf16> = a
        .to_vec::<u16>()
        .unwrap()
        .into_iter()
        .map(half::bf16::from_bits)
        .collect();
    Array::from_slice(&v, a.shape()).unwrap()
}

/// The elements as f64 (any real dtype; bf16 stored as uint16 is not converted).
pub fn as_f64(a: &Array) -> Vec<f64> {
    let a = if a.dtype() == Dtype::Float64 {
        a.clone()
    } else {
        ops::astype(a, Dtype::Float64).unwrap()
    };
    a.to_vec::<f64>().unwrap()
}

/// numpy `allclose` semantics, NaNs equal; panics with the first mismatch.
pub fn assert_close(got: &Array, want: &Array, rtol: f64, atol: f64) {
    assert_eq!(got.shape(), want.shape(), "shape");
    let (g, w) = (as_f64(got), as_f64(want));
    for (i, (x, y)) in g.iter().zip(&w).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= atol + rtol * y.abs();
        assert!(
            ok,
            "element {i}: got {x}, want {y} (rtol {rtol}, atol {atol})"
        );
    }
}

/// Bit-for-bit equality of two arrays of the same dtype and shape.
pub fn assert_bits_eq(got: &Array, want: &Array) {
    assert_eq!(got.shape(), want.shape(), "shape");
    assert_eq!(got.dtype(), want.dtype(), "dtype");
    let g = mlx::io::save_npy_bytes(got).unwrap();
    let w = mlx::io::save_npy_bytes(want).unwrap();
    if g != w {
        let (gv, wv) = (as_f64(got), as_f64(want));
        let i = gv
            .iter()
            .zip(&wv)
            .position(|(a, b)| a.to_bits() != b.to_bits())
            .unwrap_or(0);
        panic!(
            "arrays differ; first at element {i}: got {:?}, want {:?}",
            gv.get(i),
            wv.get(i)
        );
    }
}

/// The one seeded generator of the tests: a 64-bit LCG (Knuth's MMIX
/// constants), so inputs need no RNG crate and are the same on every run.
pub struct Lcg(u64);

impl Lcg {
    /// A generator whose first step starts from `seed` as given.
    pub fn from_state(state: u64) -> Lcg {
        Lcg(state)
    }

    /// A generator from `seed` stepped once, so nearby seeds (`s`, `s ^ 1`)
    /// give unrelated first draws.
    pub fn new(seed: u64) -> Lcg {
        let mut g = Lcg(seed);
        g.next_u64();
        g
    }

    /// The next raw state.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// Uniform in [0, 1), from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64)
    }

    /// `n` values uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64, n: usize) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.unit()).collect()
    }
}

/// Tests that use the process-wide `mlx::random` generator hold this lock
/// (tests of one binary run in parallel, and the generator is global).
pub fn random_lock() -> std::sync::MutexGuard<'static, ()> {
    static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RNG.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seeds the global generator under [`random_lock`]; hold the guard while drawing.
pub fn seeded(seed: u64) -> std::sync::MutexGuard<'static, ()> {
    let g = random_lock();
    mlx::random::seed(seed);
    g
}
