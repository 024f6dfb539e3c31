//! float16 element-wise kernels against the element path, bit for bit:
//! on a CPU with F16C they widen, compute and round a block at a time
//! (`backend::cpu::f16c`); the expected values here are computed one
//! element at a time with the element functions (`f16_to_f32`, the f32
//! operation, `f16_from_f32`). Lengths cover a single short block, block
//! tails, and several parallel chunks; operands are dense, broadcast
//! scalars, transposed, donated intermediates and fused chains.

use half::f16;
use mlx::backend::cpu::math;
use mlx::backend::cpu::num::{f16_from_f32, f16_to_f32};
use mlx::transforms::compile;
use mlx::{ops, Array, Dtype, Result};

/// Lengths: shorter than a vector, around a 64-value block, and past the
/// parallel threshold (2^15) with a ragged last chunk.
const LENGTHS: [usize; 6] = [1, 7, 63, 65, 1000, 70_001];

/// Pseudo-random float16 bit patterns: every class (zeros, subnormals,
/// normals, infinities, NaNs with payloads) appears.
fn halves(n: usize, seed: u64) -> Vec<f16> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            f16::from_bits((state >> 48) as u16)
        })
        .collect()
}

fn array(v: &[f16]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

fn bits(a: &Array) -> Vec<u16> {
    a.to_vec::<f16>()
        .unwrap()
        .iter()
        .map(|h| h.to_bits())
        .collect()
}

fn expect(got: &Array, want: impl Iterator<Item = f16>, what: &str) {
    let got = bits(got);
    let want: Vec<u16> = want.map(|h| h.to_bits()).collect();
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // MLX's NaN of either sign where both operands were NaN (see
        // `round2`); every other value bit for bit.
        let either = *w == EITHER_NAN && g & 0x7FFF == 0x7D00;
        assert!(
            g == w || either,
            "{what}: element {i} of {}: {g:#06x} != {w:#06x}",
            got.len()
        );
    }
}

/// Stands for MLX's NaN of either sign in expected values.
const EITHER_NAN: u16 = 0xFFFF;

/// The element path of a binary op: widen, compute in f32, round. When
/// both operands are NaN, x86 returns the NaN of the instruction's first
/// source, and which operand that is, is the compiler's choice (Rust
/// leaves the sign of a NaN result unspecified): the result is MLX's NaN
/// of either sign (and so is anything computed from it).
fn round2(f: fn(f32, f32) -> f32, x: f16, y: f16) -> f16 {
    let marked = x.to_bits() == EITHER_NAN || y.to_bits() == EITHER_NAN;
    if (x.is_nan() && y.is_nan()) || marked {
        return f16::from_bits(EITHER_NAN);
    }
    f16_from_f32(f(f16_to_f32(x), f16_to_f32(y)))
}

type BinaryOp = fn(&Array, &Array) -> Result<Array>;
/// An op, its name and its f32 function.
type BinaryCase = (&'static str, BinaryOp, fn(f32, f32) -> f32);

const BINARY: [BinaryCase; 4] = [
    ("add", ops::add, |a, b| a + b),
    ("subtract", ops::subtract, |a, b| a - b),
    ("multiply", ops::multiply, |a, b| a * b),
    ("divide", ops::divide, |a, b| a / b),
];

#[test]
fn binary_ops_match_the_element_path() {
    for n in LENGTHS {
        let (x, y) = (halves(n, 1), halves(n, 2));
        let (a, b) = (array(&x), array(&y));
        let s = f16::from_f32(-1.5);
        let sa = Array::scalar(s);
        for (name, op, f) in BINARY {
            let pairs = x.iter().zip(&y);
            expect(
                &op(&a, &b).unwrap(),
                pairs.map(|(&p, &q)| round2(f, p, q)),
                name,
            );
            let right = x.iter().map(|&p| round2(f, p, s));
            expect(&op(&a, &sa).unwrap(), right, &format!("{name} scalar"));
            let left = x.iter().map(|&p| round2(f, s, p));
            expect(&op(&sa, &a).unwrap(), left, &format!("scalar {name}"));
            // An intermediate the op may overwrite in place (donated).
            let t = ops::multiply(&a, &b).unwrap();
            let want: Vec<f16> = x
                .iter()
                .zip(&y)
                .map(|(&p, &q)| round2(f, round2(|u, v| u * v, p, q), q))
                .collect();
            expect(
                &op(&t, &b).unwrap(),
                want.into_iter(),
                &format!("{name} donated"),
            );
        }
    }
}

#[test]
fn binary_ops_on_transposed_inputs_match_the_element_path() {
    let (r, c) = (131, 257);
    let (x, y) = (halves(r * c, 3), halves(r * c, 4));
    let a = Array::from_slice(&x, &[r as i32, c as i32]).unwrap();
    let b = Array::from_slice(&y, &[c as i32, r as i32]).unwrap();
    let at = ops::transpose(&a, &[]).unwrap(); // (c, r), strided
    let want = (0..c).flat_map(|i| {
        let (x, y) = (&x, &y);
        (0..r).map(move |j| round2(|u, v| u * v, x[j * c + i], y[i * r + j]))
    });
    expect(
        &ops::multiply(&at, &b).unwrap(),
        want,
        "multiply transposed",
    );
    let bt = ops::transpose(&b, &[]).unwrap(); // (r, c), strided
    let at2 = ops::transpose(&at, &[]).unwrap();
    let both = (0..r).flat_map(|i| {
        let (x, y) = (&x, &y);
        (0..c).map(move |j| round2(|u, v| u - v, x[i * c + j], y[j * r + i]))
    });
    expect(
        &ops::subtract(&at2, &bt).unwrap(),
        both,
        "subtract both strided",
    );
}

type UnaryOp = fn(&Array) -> Result<Array>;
/// An op, its name and its element path.
type UnaryCase = (&'static str, UnaryOp, Box<dyn Fn(f16) -> f16>);

fn sigmoid_element(x: f16) -> f16 {
    let round = |e: f32| f16_to_f32(f16_from_f32(e));
    f16_from_f32(math::sigmoid_half(f16_to_f32(x), round))
}

fn rsqrt_element(x: f16) -> f16 {
    let t = f16_to_f32(f16_from_f32(f16_to_f32(x).sqrt()));
    f16_from_f32(1.0 / t)
}

fn element(f: fn(f32) -> f32, x: f16) -> f16 {
    f16_from_f32(f(f16_to_f32(x)))
}

#[test]
fn unary_ops_match_the_element_path() {
    let ops_and_elements: [UnaryCase; 8] = [
        ("negative", ops::negative, Box::new(|x| element(|v| -v, x))),
        ("square", ops::square, Box::new(|x| element(|v| v * v, x))),
        ("abs", ops::abs, Box::new(|x| element(f32::abs, x))),
        ("sqrt", ops::sqrt, Box::new(|x| element(f32::sqrt, x))),
        ("exp", ops::exp, Box::new(|x| element(math::exp_f32, x))),
        ("sin", ops::sin, Box::new(|x| element(math::sin_f32, x))),
        ("rsqrt", ops::rsqrt, Box::new(rsqrt_element)),
        ("sigmoid", ops::sigmoid, Box::new(sigmoid_element)),
    ];
    for n in LENGTHS {
        let x = halves(n, 5);
        let a = array(&x);
        for (name, op, f) in &ops_and_elements {
            expect(&op(&a).unwrap(), x.iter().map(|&v| f(v)), name);
            // Donated: the op may write over its input's buffer.
            let t = ops::negative(&a).unwrap();
            let want = x.iter().map(|&v| f(element(|u| -u, v)));
            expect(&op(&t).unwrap(), want, &format!("{name} donated"));
        }
    }
    // A transposed input is gathered chunk by chunk first.
    let (r, c) = (257, 301);
    let x = halves(r * c, 6);
    let at = ops::transpose(&Array::from_slice(&x, &[r as i32, c as i32]).unwrap(), &[]).unwrap();
    let want = (0..c).flat_map(|i| {
        let x = &x;
        (0..r).map(move |j| sigmoid_element(x[j * c + i]))
    });
    expect(&ops::sigmoid(&at).unwrap(), want, "sigmoid transposed");
}

#[test]
fn float32_float16_casts_match_the_element_path() {
    for n in LENGTHS {
        let mut state = n as u64;
        let v: Vec<f32> = (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                f32::from_bits((state >> 32) as u32)
            })
            .collect();
        let a = Array::from_slice(&v, &[n as i32]).unwrap();
        let h = ops::astype(&a, Dtype::Float16).unwrap();
        expect(&h, v.iter().map(|&x| f16_from_f32(x)), "f32 -> f16");
        let x = halves(n, 7);
        let w = ops::astype(&array(&x), Dtype::Float32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        for (i, (&h, w)) in x.iter().zip(w).enumerate() {
            assert_eq!(
                w.to_bits(),
                f16_to_f32(h).to_bits(),
                "f16 -> f32 element {i}"
            );
        }
    }
}

/// A compiled chain runs its binary steps chunk by chunk on byte slices
/// (`eval_chunk`); it gives the eager, element-path bits.
#[test]
fn fused_float16_chains_match_the_element_path() {
    let n = 100_003;
    let (x, y) = (halves(n, 8), halves(n, 9));
    let s = f16::from_f32(0.3);
    let f = compile(|a: &[Array]| {
        let p = ops::multiply(&a[0], &a[1])?;
        Ok(vec![ops::subtract(&ops::add(&p, &a[2])?, &a[0])?])
    });
    let got = &f(&[array(&x), array(&y), Array::scalar(s)]).unwrap()[0];
    let want = x.iter().zip(&y).map(|(&p, &q)| {
        let m = round2(|u, v| u * v, p, q);
        round2(|u, v| u - v, round2(|u, v| u + v, m, s), p)
    });
    expect(got, want, "fused chain");
}
