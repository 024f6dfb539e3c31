//! Robustness of the MLX `.mlxfn` reader: random bytes and random mutations
//! of real MLX files (byte flips, inserted and deleted ranges, huge length
//! fields) never panic, and the reader never allocates more than a small
//! multiple of the file's size; hostile lengths (2^60-element vectors,
//! negative dims, huge strings) are rejected before anything is allocated.
//!
//! A counting global allocator measures, per thread, the peak of live heap
//! bytes while `decode` runs.

use crate::common::mlx_cases;

use mlx::export::mlx::decode;
use mlx::primitive::MlxWriter;
use proptest::prelude::*;

use crate::alloc_counter::{LIVE, PEAK};

/// Decodes `bytes` (strict and lenient) and returns the peak of heap bytes
/// allocated meanwhile, above what was live before.
fn decode_peak(bytes: &[u8]) -> (mlx::Result<()>, usize) {
    let base = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(base));
    let strict = decode(bytes, "fuzz", true).map(|_| ());
    let lenient = decode(bytes, "fuzz", false).map(|_| ());
    if strict.is_ok() {
        assert!(
            lenient.is_ok(),
            "strict decode accepted what lenient rejected"
        );
    }
    let peak = PEAK.with(|p| p.get()) - base;
    (strict, peak)
}

/// What the reader may allocate for a file of `len` bytes: decoded tapes and
/// constants take a bounded number of heap bytes per file byte.
fn budget(len: usize) -> usize {
    64 * len + (64 << 10)
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (_, peak) = decode_peak(bytes);
    prop_assert!(
        peak <= budget(bytes.len()),
        "decoding {} bytes allocated {peak} bytes",
        bytes.len()
    );
    Ok(())
}

fn fixtures() -> &'static [Vec<u8>] {
    static F: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let mut v: Vec<Vec<u8>> = ["mlx", "mlx_models"]
            .iter()
            .flat_map(|r| mlx_cases::mlxfn_files(r))
            .map(|p| std::fs::read(p).unwrap())
            .filter(|b| b.len() <= 32 << 10)
            .collect();
        v.sort_by_key(|b| b.len());
        v
    })
}

/// One edit of a file; positions are fractions of the length so they stay in range.
#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: f64,
        bit: u8,
    },
    Set {
        at: f64,
        byte: u8,
    },
    Insert {
        at: f64,
        bytes: Vec<u8>,
    },
    Delete {
        at: f64,
        len: usize,
    },
    /// Overwrites 8 bytes with a hostile length (huge, 2^60, negative as i32 pairs...).
    Length {
        at: f64,
        value: u64,
    },
    /// Overwrites 4 bytes with a hostile i32 (negative dims, huge counts).
    Int {
        at: f64,
        value: i32,
    },
    Truncate {
        at: f64,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    let hostile_u64 = prop_oneof![
        Just(u64::MAX),
        Just(1u64 << 60),
        Just(1u64 << 32),
        Just((1u64 << 31) - 1),
        Just(0xFFFF_FFFF_0000_0001),
        Just(0),
        any::<u64>(),
    ];
    let hostile_i32 = prop_oneof![
        Just(-1),
        Just(i32::MIN),
        Just(i32::MAX),
        Just(1 << 30),
        any::<i32>()
    ];
    prop_oneof![
        (at.clone(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (at.clone(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        (at.clone(), prop::collection::vec(any::<u8>(), 1..24))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (at.clone(), 1usize..64).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (at.clone(), hostile_u64).prop_map(|(at, value)| Mutation::Length { at, value }),
        (at.clone(), hostile_i32).prop_map(|(at, value)| Mutation::Int { at, value }),
        at.prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let pos = |at: f64, n: usize| ((at * n as f64) as usize).min(n.saturating_sub(1));
    let n = bytes.len();
    if n == 0 {
        return;
    }
    match m {
        Mutation::Flip { at, bit } => bytes[pos(*at, n)] ^= 1 << bit,
        Mutation::Set { at, byte } => bytes[pos(*at, n)] = *byte,
        Mutation::Insert { at, bytes: b } => {
            let p = pos(*at, n);
            bytes.splice(p..p, b.iter().copied());
        }
        Mutation::Delete { at, len } => {
            let p = pos(*at, n);
            bytes.drain(p..(p + len).min(n));
        }
        Mutation::Length { at, value } => {
            let p = pos(*at, n).min(n.saturating_sub(8));
            let end = (p + 8).min(n);
            bytes[p..end].copy_from_slice(&value.to_le_bytes()[..end - p]);
        }
        Mutation::Int { at, value } => {
            let p = pos(*at, n).min(n.saturating_sub(4));
            let end = (p + 4).min(n);
            bytes[p..end].copy_from_slice(&value.to_le_bytes()[..end - p]);
        }
        Mutation::Truncate { at } => bytes.truncate(pos(*at, n)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary bytes, alone and after a valid header.
    #[test]
    fn random_bytes_never_panic(tail in prop::collection::vec(any::<u8>(), 0..600), header in any::<bool>()) {
        let mut bytes = Vec::new();
        if header {
            let mut w = MlxWriter::new();
            w.str("0.32.4");
            w.i32(1);
            w.bool(false);
            w.str("");
            bytes = w.bytes;
        }
        bytes.extend_from_slice(&tail);
        check(&bytes)?;
    }

    /// Real MLX files with 1-4 random edits.
    #[test]
    fn mutated_fixtures_never_panic(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec(mutation(), 1..5),
    ) {
        let files = fixtures();
        let mut bytes = which.get(files).clone();
        for m in &edits {
            apply(&mut bytes, m);
        }
        check(&bytes)?;
    }
}

/// Every fixture decodes within the allocation budget, and every one of its
/// 8-byte-aligned words replaced by 2^60 or u64::MAX is handled.
#[test]
fn every_fixture_with_every_word_made_huge() {
    for bytes in fixtures().iter().take(12) {
        let (r, peak) = decode_peak(bytes);
        assert!(r.is_ok());
        assert!(peak > 0, "the allocation counter saw nothing");
        assert!(
            peak <= budget(bytes.len()),
            "{peak} for {} bytes",
            bytes.len()
        );
        for at in 0..bytes.len().saturating_sub(8) {
            for value in [1u64 << 60, u64::MAX] {
                let mut b = bytes.clone();
                b[at..at + 8].copy_from_slice(&value.to_le_bytes());
                let (_, peak) = decode_peak(&b);
                assert!(
                    peak <= budget(b.len()),
                    "word at {at} = {value:#x}: {peak} bytes"
                );
            }
        }
    }
}

/// The smallest valid file header, then one function record with `inputs`
/// given as raw bytes after the kwarg names and input ids.
fn header(w: &mut MlxWriter) {
    w.str("0.32.4");
    w.i32(1);
    w.bool(false);
    w.str("");
}

fn expect_rejected(bytes: &[u8], what: &str, want: &str) {
    let (r, peak) = decode_peak(bytes);
    let err = r.expect_err(what).to_string();
    assert!(err.contains(want), "{what}: message {err:?} lacks {want:?}");
    assert!(
        peak <= 16 << 10,
        "{what}: {peak} bytes allocated before the rejection"
    );
}

#[test]
fn vector_of_2_pow_60_elements_is_rejected_before_allocation() {
    // kwarg names: a vector claiming 2^60 strings.
    let mut w = MlxWriter::new();
    header(&mut w);
    w.u64(1 << 60);
    expect_rejected(&w.bytes, "2^60 kwarg names", "cannot fit");

    // input ids: 2^60 u64s.
    let mut w = MlxWriter::new();
    header(&mut w);
    w.len(0);
    w.u64(1 << 60);
    w.raw(&[0; 64]);
    expect_rejected(&w.bytes, "2^60 input ids", "cannot fit");

    // A shape vector of 2^60 dims in an input description.
    let mut w = MlxWriter::new();
    header(&mut w);
    w.len(0);
    w.len(1);
    w.u64(1);
    w.len(1);
    w.u64(1 << 60);
    w.raw(&[0; 64]);
    expect_rejected(&w.bytes, "2^60-dim shape", "cannot fit");

    // A tape claiming 2^60 entries.
    let mut w = MlxWriter::new();
    header(&mut w);
    w.len(0);
    w.len(0);
    w.len(0);
    w.len(0);
    w.u64(1 << 60);
    w.raw(&[0; 64]);
    expect_rejected(&w.bytes, "2^60 tape entries", "cannot fit");
}

/// A constant of shape `shape` float32 as the only tape entry.
fn constant_file(shape: &[i32], payload: usize) -> Vec<u8> {
    let mut w = MlxWriter::new();
    header(&mut w);
    w.len(0); // kwarg names
    w.len(0); // input ids
    w.len(0); // inputs
    w.len(1); // output ids
    w.u64(7);
    w.u64(1); // tape length
    w.u64(7);
    w.bool(false);
    w.bool(true);
    w.len(shape.len());
    shape.iter().for_each(|&d| w.i32(d));
    w.i32(10); // float32
    w.u8(4);
    w.raw(&vec![0; payload]);
    w.bytes
}

#[test]
fn negative_and_overflowing_dims_are_rejected_before_allocation() {
    // The well-formed version parses (so the rejections below are about the dims).
    assert!(decode(&constant_file(&[2, 3], 24), "ok", true).is_ok());
    expect_rejected(
        &constant_file(&[2, -3], 0),
        "negative dim",
        "negative dimension",
    );
    expect_rejected(&constant_file(&[-1], 4), "dim -1", "negative dimension");
    expect_rejected(
        &constant_file(&[i32::MAX, i32::MAX, i32::MAX], 64),
        "2^93-element constant",
        "",
    );
    expect_rejected(
        &constant_file(&[1 << 30, 1 << 30], 64),
        "2^60-element constant",
        "truncated",
    );
    // Negative dim in an input description.
    let mut w = MlxWriter::new();
    header(&mut w);
    w.len(0);
    w.len(1);
    w.u64(1);
    w.len(1);
    w.len(2);
    w.i32(4);
    w.i32(-4);
    w.i32(10);
    w.u8(4);
    w.raw(&[0; 32]);
    expect_rejected(&w.bytes, "negative input dim", "negative dimension");
}

#[test]
fn huge_strings_are_rejected_before_allocation() {
    for n in [1u64 << 60, u64::MAX, 1 << 40, 100_000] {
        // The version string.
        let mut w = MlxWriter::new();
        w.u64(n);
        w.raw(b"0.32.4");
        expect_rejected(&w.bytes, "huge version", "cannot fit");
        // The metadata string.
        let mut w = MlxWriter::new();
        w.str("0.32.4");
        w.i32(1);
        w.bool(false);
        w.u64(n);
        w.raw(&[b'x'; 100]);
        expect_rejected(&w.bytes, "huge metadata", "cannot fit");
        // A primitive name.
        let mut w = MlxWriter::new();
        header(&mut w);
        w.len(0);
        w.len(0);
        w.len(0);
        w.len(1);
        w.u64(9);
        w.u64(1);
        w.u64(9);
        w.bool(true);
        w.len(0);
        (0..3).for_each(|_| w.i32(0));
        w.u64(n);
        w.raw(b"Arange");
        expect_rejected(&w.bytes, "huge primitive name", "cannot fit");
    }
}

/// An `Arange` entry whose sibling count is `n_siblings`, with empty sibling vectors.
fn sibling_file(n_siblings: u64) -> Vec<u8> {
    let mut w = MlxWriter::new();
    header(&mut w);
    w.len(0);
    w.len(0);
    w.len(0);
    w.len(1);
    w.u64(9);
    w.u64(1);
    w.u64(9);
    w.bool(true);
    w.len(0);
    (0..3).for_each(|_| w.i32(0));
    w.str("Arange");
    [0.0, 4.0, 1.0].iter().for_each(|&v| w.f64(v));
    w.u64(n_siblings);
    (0..3).for_each(|_| w.len(0));
    w.bytes
}

#[test]
fn sibling_count_of_u64_max_is_an_error() {
    for n in [u64::MAX, u64::MAX - 1, 1 << 60, 1] {
        expect_rejected(
            &sibling_file(n),
            "huge sibling count",
            "inconsistent sibling block",
        );
    }
}
