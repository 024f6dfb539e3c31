//! The 2/4/8-bit quantized matrix-vector kernel of [`qgemv`](super::qgemv)
//! for CPUs with AVX-512: two rows at a time, one 512-bit vector holding a
//! block of [`LANES`] words of each. Lanes `0..8` do exactly what the
//! 256-bit kernel (`qgemv256`) does for row `r`, lanes `8..16` the
//! same for row `r + 1`, with the same inputs, in the same order: each
//! row's result is the 256-bit kernel's to the bit, for half the
//! instructions. (Written with intrinsics: left to the auto-vectorizer, the
//! 16-lane arrays were kept on the stack between steps.)

use super::num::Float;
use super::qgemv::{finish, Args, LANES};
use std::arch::x86_64::*;

/// Rows `r0..r0 + out.len()` (see the module doc); an odd last row runs
/// on the 256-bit kernel.
///
/// # Safety
/// The CPU must support AVX-512F/DQ, AVX2 and FMA
/// ([`has_avx512`](super::simd::has_avx512)).
#[target_feature(enable = "avx2,fma,avx512f,avx512dq")]
pub(super) unsafe fn rows<S: Float, const BITS: u32, const P: usize>(
    a: &Args<'_, S>,
    r0: usize,
    out: &mut [f32],
) {
    let (rw, wpg) = (a.row_words, a.p.words_per_group());
    let mut pairs = out.chunks_exact_mut(2);
    let mut r = r0;
    for o in &mut pairs {
        let ((w0, s0, b0), (w1, s1, b1)) = (a.row(r), a.row(r + 1));
        let (rows, scales, biases) = ([w0, w1], [s0, s1], [b0, b1]);
        let mut acc = _mm512_setzero_ps();
        if wpg >= LANES {
            // Whole blocks per group: one scale per half.
            for (g, (&s0, &s1)) in scales[0].iter().zip(scales[1]).enumerate() {
                let (mut d0, mut d1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
                for b in g * wpg / LANES..(g + 1) * wpg / LANES {
                    pair_block::<BITS, P>(&rows, b, a.xp, &mut d0, &mut d1);
                }
                let s = _mm512_insertf32x8::<1>(
                    _mm512_set1_ps(s0.to_f32()),
                    _mm256_set1_ps(s1.to_f32()),
                );
                acc = _mm512_fmadd_ps(_mm512_add_ps(d0, d1), s, acc);
            }
        } else {
            // Several groups per block (wpg is 2 or 4): a scale per lane.
            let shift = wpg.trailing_zeros();
            for b in 0..rw / LANES {
                let (mut d0, mut d1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
                pair_block::<BITS, P>(&rows, b, a.xp, &mut d0, &mut d1);
                let s: [f32; 2 * LANES] = std::array::from_fn(|i| {
                    scales[i / LANES][(b * LANES + i % LANES) >> shift].to_f32()
                });
                // SAFETY: `s` holds 16 f32, what an unaligned 512-bit load reads.
                let s = unsafe { _mm512_loadu_ps(s.as_ptr()) };
                acc = _mm512_fmadd_ps(_mm512_add_ps(d0, d1), s, acc);
            }
        }
        let mut lanes = [0f32; 2 * LANES];
        // SAFETY: `lanes` holds 16 f32, what an unaligned 512-bit store writes.
        unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), acc) };
        for (h, o) in o.iter_mut().enumerate() {
            *o = finish(&lanes[h * LANES..(h + 1) * LANES], biases[h], a.xsums);
        }
        r += 2;
    }
    let rest = pairs.into_remainder();
    if !rest.is_empty() {
        // SAFETY: AVX2 and FMA, which this function is compiled for.
        unsafe { super::qgemv256::rows::<S, BITS, P>(a, r, rest) };
    }
}

/// Block `b` of both rows: `d[j % 2] += q_j · xp_j` for each value `j` of
/// the words (masked in place, the last one shifted down; see
/// `qgemv::permute`), as the 256-bit kernel's `block_dot` does per row.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512dq")]
fn pair_block<const BITS: u32, const P: usize>(
    rows: &[&[u32]; 2],
    b: usize,
    xp: &[f32],
    d0: &mut __m512,
    d1: &mut __m512,
) {
    let lo: &[u32; LANES] = rows[0][b * LANES..(b + 1) * LANES]
        .try_into()
        .expect("a block");
    let hi: &[u32; LANES] = rows[1][b * LANES..(b + 1) * LANES]
        .try_into()
        .expect("a block");
    let xb: &[f32] = &xp[b * LANES * P..(b + 1) * LANES * P];
    // SAFETY: `lo` and `hi` are 8 u32 each, what a 256-bit load reads.
    let words = unsafe {
        _mm512_inserti64x4::<1>(
            _mm512_castsi256_si512(_mm256_loadu_si256(lo.as_ptr().cast())),
            _mm256_loadu_si256(hi.as_ptr().cast()),
        )
    };
    let mask = (1u32 << BITS) - 1;
    for j in 0..P {
        let xs: &[f32; LANES] = xb[j * LANES..(j + 1) * LANES].try_into().expect("8");
        // SAFETY: `xs` is 8 f32, what a 256-bit load reads.
        let x = _mm512_broadcast_f32x8(unsafe { _mm256_loadu_ps(xs.as_ptr()) });
        let shift = BITS * j as u32;
        let q = if j + 1 < P {
            _mm512_and_si512(words, _mm512_set1_epi32((mask << shift) as i32))
        } else {
            _mm512_srl_epi32(words, _mm_cvtsi32_si128(shift as i32))
        };
        // Below 2^31, so the signed conversion is exact.
        let q = _mm512_cvtepi32_ps(q);
        if j % 2 == 0 {
            *d0 = _mm512_fmadd_ps(q, x, *d0);
        } else {
            *d1 = _mm512_fmadd_ps(q, x, *d1);
        }
    }
}
