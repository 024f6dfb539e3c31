//! `mlx::random` and RandomBits, bit for bit against real MLX 0.32.4
//! (tests/fixtures/random/generate.py).

use crate::common;

use common::{assert_bits_eq, npy};
use mlx::primitives::random::{threefry2x32, RandomBits};
use mlx::{ops, random, Array, Dtype};

fn load(name: &str) -> Array {
    npy(&format!("random/{name}.npy"))
}

fn k42() -> Array {
    random::key(42)
}

/// Bit patterns of a bfloat16 array against a fixture of uint16 patterns.
fn assert_bf16_bits(got: &Array, name: &str) {
    assert_eq!(got.dtype(), Dtype::Bfloat16);
    let want = load(&format!("{name}_bf16bits"));
    assert_eq!(got.shape(), want.shape());
    let g: Vec<u16> = got
        .to_vec::<half::bf16>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert_eq!(g, want.to_vec::<u16>().unwrap(), "{name}");
}

#[test]
fn threefry_known_answer() {
    // Random123's known-answer vectors for threefry2x32 with 20 rounds.
    assert_eq!(threefry2x32((0, 0), (0, 0)), (0x6b200159, 0x99ba4efe));
    assert_eq!(
        threefry2x32((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff)),
        (0x1cb996fc, 0xbb002be7)
    );
}

#[test]
fn keys_and_split() {
    assert_bits_eq(&k42(), &load("key_42"));
    assert_bits_eq(&random::key((1 << 40) + 12345), &load("key_big"));
    assert_bits_eq(&random::split(&k42(), 2).unwrap(), &load("split_42_2"));
    assert_bits_eq(&random::split(&k42(), 5).unwrap(), &load("split_42_5"));
    let (a, b) = random::split_pair(&k42()).unwrap();
    let both = load("split_42_2").to_vec::<u32>().unwrap();
    assert_eq!(a.to_vec::<u32>().unwrap(), both[..2]);
    assert_eq!(b.to_vec::<u32>().unwrap(), both[2..]);
}

#[test]
fn bits_all_widths_odd_and_partial_words() {
    for w in [1, 2, 4] {
        for shape in [[1, 1], [1, 3], [1, 5], [1, 7], [2, 3], [4, 9]] {
            let name = format!("bits_w{w}_{}x{}", shape[0], shape[1]);
            let got = random::bits(&shape, w, Some(&k42())).unwrap();
            assert_bits_eq(&got, &load(&name));
        }
    }
}

#[test]
fn batched_keys_fill_one_block_each() {
    let keys = load("batch_keys");
    let out = Array::from_primitive(
        RandomBits {
            shape: vec![1, 5],
            width: 1,
        },
        vec![keys],
    )
    .unwrap();
    assert_eq!(out.shape(), &[3, 1, 5]);
    let got = out.to_vec::<u8>().unwrap();
    for i in 0..3 {
        let want = load(&format!("batch_bits_{i}")).to_vec::<u8>().unwrap();
        assert_eq!(got[i * 5..(i + 1) * 5], want[..], "key {i}");
    }
    // A transposed (non-contiguous) key batch gives the same bits.
    let t = ops::transpose(&load("batch_keys"), &[]).unwrap();
    let t = ops::transpose(&t, &[]).unwrap();
    let again = Array::from_primitive(
        RandomBits {
            shape: vec![1, 5],
            width: 1,
        },
        vec![t],
    )
    .unwrap();
    assert_eq!(again.to_vec::<u8>().unwrap(), got);
}

#[test]
fn uniform_bit_exact() {
    let k = k42();
    let lo = Array::scalar(-3.0f32);
    let hi = Array::scalar(5.0f32);
    for (dtype, tag) in [(Dtype::Float32, "f32"), (Dtype::Float16, "f16")] {
        let u = random::uniform_unit(&[33], dtype, Some(&k)).unwrap();
        assert_bits_eq(&u, &load(&format!("uniform_{tag}")));
        let u = random::uniform(&lo, &hi, &[4, 5], dtype, Some(&k)).unwrap();
        assert_bits_eq(&u, &load(&format!("uniform_m3_5_{tag}")));
    }
    let u = random::uniform_unit(&[33], Dtype::Bfloat16, Some(&k)).unwrap();
    assert_bf16_bits(&u, "uniform_bf16");
    let u = random::uniform(&lo, &hi, &[4, 5], Dtype::Bfloat16, Some(&k)).unwrap();
    assert_bf16_bits(&u, "uniform_m3_5_bf16");
}

#[test]
fn normal_bit_exact() {
    // erfinv uses libm's logf, as MLX's CPU kernel does (glibc here).
    let k = k42();
    let loc = Array::scalar(1.5f32);
    let scale = Array::scalar(0.25f32);
    for (dtype, tag) in [(Dtype::Float32, "f32"), (Dtype::Float16, "f16")] {
        let n = random::normal(&[50], dtype, None, None, Some(&k)).unwrap();
        assert_bits_eq(&n, &load(&format!("normal_{tag}")));
        let n = random::normal(&[20], dtype, Some(&loc), Some(&scale), Some(&k)).unwrap();
        assert_bits_eq(&n, &load(&format!("normal_ls_{tag}")));
    }
    let n = random::normal(&[50], Dtype::Bfloat16, None, None, Some(&k)).unwrap();
    assert_bf16_bits(&n, "normal_bf16");
    let n = random::normal(&[20], Dtype::Bfloat16, Some(&loc), Some(&scale), Some(&k)).unwrap();
    assert_bf16_bits(&n, "normal_ls_bf16");
}

#[test]
fn randint_bernoulli_bit_exact() {
    let k = k42();
    let r = random::randint(
        &Array::scalar(-7i32),
        &Array::scalar(13i32),
        &[40],
        Dtype::Int32,
        Some(&k),
    )
    .unwrap();
    assert_bits_eq(&r, &load("randint"));
    let r = random::randint(
        &Array::scalar(0i32),
        &Array::scalar(200i32),
        &[17],
        Dtype::Uint8,
        Some(&k),
    )
    .unwrap();
    assert_bits_eq(&r, &load("randint_u8"));
    let b = random::bernoulli(&Array::scalar(0.3f32), Some(&[40]), Some(&k)).unwrap();
    assert_bits_eq(&b, &load("bernoulli"));
    let p = Array::from_slice(&[0.0f32, 0.25, 0.5, 0.75, 1.0], &[5]).unwrap();
    let b = random::bernoulli(&p, None, Some(&k)).unwrap();
    assert_bits_eq(&b, &load("bernoulli_p"));
}

#[test]
fn truncated_normal_gumbel_categorical_bit_exact() {
    let k = k42();
    let t = random::truncated_normal(
        &Array::scalar(-1.0f32),
        &Array::scalar(2.0f32),
        Some(&[30]),
        Dtype::Float32,
        Some(&k),
    )
    .unwrap();
    assert_bits_eq(&t, &load("truncated_normal"));
    let g = random::gumbel(&[30], Dtype::Float32, Some(&k)).unwrap();
    assert_bits_eq(&g, &load("gumbel"));
    let logits = load("cat_logits");
    let c = random::categorical(&logits, -1, None, None, Some(&k)).unwrap();
    assert_bits_eq(&c, &load("categorical"));
    let c = random::categorical(&logits, 0, None, None, Some(&k)).unwrap();
    assert_bits_eq(&c, &load("categorical_axis0"));
    let c = random::categorical(&logits, -1, None, Some(5), Some(&k)).unwrap();
    assert_bits_eq(&c, &load("categorical_n5"));
}

#[test]
fn global_generator_sequence() {
    let _rng = common::seeded(7);
    let u = random::uniform_unit(&[3], Dtype::Float32, None).unwrap();
    let n = random::normal(&[4], Dtype::Float32, None, None, None).unwrap();
    let r = random::randint(
        &Array::scalar(0i32),
        &Array::scalar(100i32),
        &[2],
        Dtype::Int32,
        None,
    )
    .unwrap();
    assert_bits_eq(&u, &load("global_0"));
    assert_bits_eq(&n, &load("global_1"));
    assert_bits_eq(&r, &load("global_2"));
}

#[test]
fn key_sequence_is_the_seeded_global_sequence_unshared() {
    // Global draws happen here: hold the lock other global-sequence tests hold.
    let _rng = common::random_lock();
    let mut keys = random::KeySequence::new(7);
    // Draws from the global generator in between must not move the sequence.
    let _ = random::uniform_unit(&[2], Dtype::Float32, None).unwrap();
    let u = random::uniform_unit(&[3], Dtype::Float32, Some(&keys.next_key())).unwrap();
    let _ = random::uniform_unit(&[2], Dtype::Float32, None).unwrap();
    let n = random::normal(&[4], Dtype::Float32, None, None, Some(&keys.next_key())).unwrap();
    let r = random::randint(
        &Array::scalar(0i32),
        &Array::scalar(100i32),
        &[2],
        Dtype::Int32,
        Some(&keys.next_key()),
    )
    .unwrap();
    assert_bits_eq(&u, &load("global_0"));
    assert_bits_eq(&n, &load("global_1"));
    assert_bits_eq(&r, &load("global_2"));
}

/// Names of the primitives from `a` back to the inputs, depth first.
fn graph_names(a: &Array) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![a.clone()];
    while let Some(x) = stack.pop() {
        if let Some((node, _)) = x.node() {
            out.push(node.primitive().name().to_string());
            stack.extend(node.inputs());
        }
    }
    out
}

#[test]
fn uniform_graph_is_mlx_s() {
    let u = random::uniform_unit(&[3], Dtype::Float16, Some(&k42())).unwrap();
    let names = graph_names(&u);
    for p in [
        "RandomBits",
        "AsType",
        "Divide",
        "Minimum",
        "Multiply",
        "Add",
    ] {
        assert!(names.iter().any(|n| n == p), "{p} missing from {names:?}");
    }
}

#[test]
fn errors() {
    let k = k42();
    let bad_key = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    assert!(random::bits(&[2], 4, Some(&bad_key)).is_err());
    let e = random::bits(&[2], 3, Some(&k)).unwrap_err().to_string();
    assert!(e.contains("1, 2 or 4"), "{e}");
    assert!(random::bits(&[-1], 4, Some(&k)).is_err());
    assert!(random::uniform_unit(&[2], Dtype::Int32, Some(&k)).is_err());
    assert!(random::uniform_unit(&[2], Dtype::Float64, Some(&k)).is_err());
    let lo = Array::from_slice(&[0.0f32; 3], &[3]).unwrap();
    let e = random::uniform(&lo, &Array::scalar(1.0f32), &[2], Dtype::Float32, Some(&k))
        .unwrap_err()
        .to_string();
    assert!(e.contains("[2]"), "{e}");
    assert!(random::randint(
        &Array::scalar(0i32),
        &Array::scalar(3i32),
        &[2],
        Dtype::Float32,
        Some(&k)
    )
    .is_err());
    assert!(random::bernoulli(&Array::scalar(1i32), None, Some(&k)).is_err());
    assert!(random::normal(&[2], Dtype::Int8, None, None, Some(&k)).is_err());
    assert!(random::categorical(&load("cat_logits"), 2, None, None, Some(&k)).is_err());
}
