//! The 2/4/8-bit quantized matrix-vector kernel of [`qgemv`](super::qgemv)
//! for AVX2 + FMA, written with intrinsics. It does the arithmetic of the
//! portable `qgemv::rows_blocked` in the same order, so it gives the same
//! bits; left to the auto-vectorizer, that code ran half its products as
//! scalars and spent about one instruction per 4-bit weight, and at 4 bits
//! the instructions, not the memory, set the pace.
//!
//! One difference in form, none in value: a group's two sums start from
//! its first products instead of from zero plus them. They differ only in
//! the sign of a zero sum, and the row's sum starts from +0, which absorbs
//! it (`-0 · s + 0 = +0`, as `+0 · s + 0` is).

use super::num::Float;
use super::qgemv::{finish, prefetch_ahead, Args, LANES};
use std::arch::x86_64::*;

/// Rows `r0..r0 + out.len()` with `BITS` in {2, 4, 8} (`P = 32 / BITS`
/// values a word) and whole blocks of [`LANES`] words in a row.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`](super::simd::has_fma)).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn rows<S: Float, const BITS: u32, const P: usize>(
    a: &Args<'_, S>,
    r0: usize,
    out: &mut [f32],
) {
    let wpg = a.p.words_per_group();
    for (r, o) in (r0..).zip(out.iter_mut()) {
        let (words, scales, biases) = a.row(r);
        prefetch_ahead(words);
        let acc = if wpg == LANES {
            // A block per group (4 bits in groups of 64, 8 in groups of 32).
            fixed_groups::<S, BITS, P, 1>(words, a.xp, scales)
        } else if wpg == 2 * LANES {
            // Two (4 bits in groups of 128, 8 in groups of 64).
            fixed_groups::<S, BITS, P, 2>(words, a.xp, scales)
        } else if wpg > LANES {
            // Several blocks per group: one scale for the group's lanes.
            let mut acc = _mm256_setzero_ps();
            let groups = words.chunks_exact(wpg).zip(a.xp.chunks_exact(wpg * P));
            for ((gw, gx), &s) in groups.zip(scales) {
                let mut blocks = gw.chunks_exact(LANES).zip(gx.chunks_exact(LANES * P));
                let (w0, x0) = blocks.next().expect("a group holds a block");
                let mut d = first_block::<BITS, P>(w0, x0);
                for (bw, bx) in blocks {
                    block::<BITS, P>(bw, bx, &mut d);
                }
                let sum = _mm256_add_ps(d[0], d[1]);
                acc = _mm256_fmadd_ps(sum, _mm256_set1_ps(s.to_f32()), acc);
            }
            acc
        } else {
            // Several groups per block (wpg is 2 or 4): a scale per lane.
            let mut acc = _mm256_setzero_ps();
            let shift = wpg.trailing_zeros();
            let blocks = words.chunks_exact(LANES).zip(a.xp.chunks_exact(LANES * P));
            for (b, (bw, bx)) in blocks.enumerate() {
                let d = first_block::<BITS, P>(bw, bx);
                let s: [f32; LANES] =
                    std::array::from_fn(|i| scales[(b * LANES + i) >> shift].to_f32());
                // SAFETY: `s` holds 8 f32, what an unaligned 256-bit load reads.
                let s = unsafe { _mm256_loadu_ps(s.as_ptr()) };
                acc = _mm256_fmadd_ps(_mm256_add_ps(d[0], d[1]), s, acc);
            }
            acc
        };
        let mut lanes = [0f32; LANES];
        // SAFETY: `lanes` holds 8 f32, what an unaligned 256-bit store writes.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
        *o = finish(&lanes, biases, a.xsums);
    }
}

/// `Σ_g s_g · (q_g · xp_g)` in 8 lanes over a row of groups of `B`
/// blocks each, as the general loop of [`rows`] sums them, without its
/// inner loop.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn fixed_groups<S: Float, const BITS: u32, const P: usize, const B: usize>(
    words: &[u32],
    xp: &[f32],
    scales: &[S],
) -> __m256 {
    let mut acc = _mm256_setzero_ps();
    let groups = words
        .chunks_exact(B * LANES)
        .zip(xp.chunks_exact(B * LANES * P));
    for ((gw, gx), &s) in groups.zip(scales) {
        let mut d = first_block::<BITS, P>(&gw[..LANES], &gx[..LANES * P]);
        for b in 1..B {
            block::<BITS, P>(
                &gw[b * LANES..(b + 1) * LANES],
                &gx[b * LANES * P..(b + 1) * LANES * P],
                &mut d,
            );
        }
        let sum = _mm256_add_ps(d[0], d[1]);
        acc = _mm256_fmadd_ps(sum, _mm256_set1_ps(s.to_f32()), acc);
    }
    acc
}

/// Value `j` of each of a block's 8 words as f32, times `2^(BITS j)`
/// (masked in place, the last one shifted down; see `qgemv::permute`),
/// and its 8 permuted inputs.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn plane<const BITS: u32, const P: usize>(
    words: __m256i,
    xb: &[f32],
    j: usize,
) -> (__m256, __m256) {
    let xs: &[f32; LANES] = xb[j * LANES..(j + 1) * LANES].try_into().expect("8");
    // SAFETY: `xs` is 8 f32, what a 256-bit load reads.
    let x = unsafe { _mm256_loadu_ps(xs.as_ptr()) };
    let shift = BITS * j as u32;
    let q = if j + 1 < P {
        let mask = ((1u32 << BITS) - 1) << shift;
        _mm256_and_si256(words, _mm256_set1_epi32(mask as i32))
    } else {
        _mm256_srl_epi32(words, _mm_cvtsi32_si128(shift as i32))
    };
    // Below 2^31, so the signed conversion is exact.
    (_mm256_cvtepi32_ps(q), x)
}

/// A block's 8 words.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn load(words: &[u32]) -> __m256i {
    let words: &[u32; LANES] = words.try_into().expect("a block");
    // SAFETY: `words` is 8 u32, what a 256-bit load reads.
    unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
}

/// The first block of a group (`xb`: its `8 P` permuted inputs): `d[j % 2]
/// = Σ q_j · xp_j` over the values `j` of the words.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn first_block<const BITS: u32, const P: usize>(words: &[u32], xb: &[f32]) -> [__m256; 2] {
    let words = load(words);
    let (q0, x0) = plane::<BITS, P>(words, xb, 0);
    let (q1, x1) = plane::<BITS, P>(words, xb, 1);
    let mut d = [_mm256_mul_ps(q0, x0), _mm256_mul_ps(q1, x1)];
    for j in 2..P {
        let (q, x) = plane::<BITS, P>(words, xb, j);
        d[j % 2] = _mm256_fmadd_ps(q, x, d[j % 2]);
    }
    d
}

/// A later block of a group: `d[j % 2] += q_j · xp_j`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn block<const BITS: u32, const P: usize>(words: &[u32], xb: &[f32], d: &mut [__m256; 2]) {
    let words = load(words);
    for j in 0..P {
        let (q, x) = plane::<BITS, P>(words, xb, j);
        d[j % 2] = _mm256_fmadd_ps(q, x, d[j % 2]);
    }
}
