//! Sixteen bfloat16 or float16 rows dotted with one f32 row on AVX-512,
//! in MLX's order: per row one f32 accumulator, each product rounded to
//! f32 and then added, strictly in k order. This is the batch-1 layer
//! `x @ W.T` of a decode step, where `W`'s rows run along k.
//!
//! Each step loads the next 32 values of every row (one 64-byte cache line
//! a row). A 16 x 16 transpose of 32-bit words then gives, per word, the
//! sixteen rows' values at k (low halves) and k + 1 (high halves) in one
//! vector. The 256-bit kernel (`panel_gemm`'s `dot16`) reads half a line a
//! row per step and transposes two 8 x 8 blocks for the same work.

use std::arch::x86_64::*;

/// Rows of a 16 x 16 block of 32-bit words to its columns.
#[inline(always)]
unsafe fn transpose16(r: [__m512i; 16]) -> [__m512i; 16] {
    // Within each 128-bit lane, 4 x 4 blocks of four rows: `v[4g + q]`
    // holds, in lane L, rows 4g..4g + 4 at word 4L + q.
    let mut v = [_mm512_setzero_si512(); 16];
    for g in 0..4 {
        let (a, b, c, d) = (r[4 * g], r[4 * g + 1], r[4 * g + 2], r[4 * g + 3]);
        let (ab_lo, ab_hi) = (_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
        let (cd_lo, cd_hi) = (_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
        v[4 * g] = _mm512_unpacklo_epi64(ab_lo, cd_lo);
        v[4 * g + 1] = _mm512_unpackhi_epi64(ab_lo, cd_lo);
        v[4 * g + 2] = _mm512_unpacklo_epi64(ab_hi, cd_hi);
        v[4 * g + 3] = _mm512_unpackhi_epi64(ab_hi, cd_hi);
    }
    // Then the four groups' lanes side by side: lane L of every group
    // makes word 4L + q's column.
    const EVEN: i32 = 0b10_00_10_00;
    const ODD: i32 = 0b11_01_11_01;
    let mut out = [_mm512_setzero_si512(); 16];
    for q in 0..4 {
        let (lanes02_01, lanes13_01) = (
            _mm512_shuffle_i32x4::<EVEN>(v[q], v[4 + q]),
            _mm512_shuffle_i32x4::<ODD>(v[q], v[4 + q]),
        );
        let (lanes02_23, lanes13_23) = (
            _mm512_shuffle_i32x4::<EVEN>(v[8 + q], v[12 + q]),
            _mm512_shuffle_i32x4::<ODD>(v[8 + q], v[12 + q]),
        );
        out[q] = _mm512_shuffle_i32x4::<EVEN>(lanes02_01, lanes02_23);
        out[8 + q] = _mm512_shuffle_i32x4::<ODD>(lanes02_01, lanes02_23);
        out[4 + q] = _mm512_shuffle_i32x4::<EVEN>(lanes13_01, lanes13_23);
        out[12 + q] = _mm512_shuffle_i32x4::<ODD>(lanes13_01, lanes13_23);
    }
    out
}

/// One 16-bit value as f32.
#[inline(always)]
fn widen<const BF16: bool>(v: u16) -> f32 {
    if BF16 {
        super::num::bf16_to_f32(half::bf16::from_bits(v))
    } else {
        super::num::f16_to_f32(half::f16::from_bits(v))
    }
}

/// `x . row_j` for the sixteen rows `row_j = src[first + j * stride..][..k]`
/// of bfloat16 (`BF16`) or float16 bits.
///
/// # Safety
/// The CPU must have AVX-512F and AVX2 ([`has_avx512`](super::simd::has_avx512)).
#[target_feature(enable = "avx2,fma,f16c,avx512f")]
pub unsafe fn dot16<const BF16: bool>(
    src: &[u16],
    first: usize,
    stride: usize,
    k: usize,
    x: &[f32],
) -> [f32; 16] {
    assert!(x.len() >= k && first + 15 * stride + k <= src.len());
    let base = src.as_ptr().add(first);
    let high = _mm512_set1_epi32(0xFFFF_0000u32 as i32);
    let mut acc = _mm512_setzero_ps();
    let full = k / 32 * 32;
    // The next sixteen rows, a kilobyte a step: interleaved rows defeat the
    // hardware's stream detection, a linear walk ahead does not.
    let next = base.wrapping_add(16 * stride) as *const i8;
    for kk in (0..full).step_by(32) {
        super::simd::prefetch_lines(next.wrapping_add(kk / 32 * 1024), 1024);
        // SAFETY: kk + 32 <= k, so each load stays inside its row (asserted above).
        let words = transpose16(std::array::from_fn(|j| {
            _mm512_loadu_si512(base.add(j * stride + kk) as *const __m512i)
        }));
        for (c, &w) in words.iter().enumerate() {
            let (lo, hi) = if BF16 {
                (
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(w)),
                    _mm512_castsi512_ps(_mm512_and_si512(w, high)),
                )
            } else {
                (
                    _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w)),
                    _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(w))),
                )
            };
            // SAFETY: kk + 2c + 1 < kk + 32 <= k <= x.len().
            let x0 = _mm512_set1_ps(*x.get_unchecked(kk + 2 * c));
            let x1 = _mm512_set1_ps(*x.get_unchecked(kk + 2 * c + 1));
            acc = _mm512_add_ps(acc, _mm512_mul_ps(x0, lo));
            acc = _mm512_add_ps(acc, _mm512_mul_ps(x1, hi));
        }
    }
    let mut out = [0f32; 16];
    _mm512_storeu_ps(out.as_mut_ptr(), acc);
    for (j, o) in out.iter_mut().enumerate() {
        let row = &src[first + j * stride..][..k];
        for kk in full..k {
            *o += x[kk] * widen::<BF16>(row[kk]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Against the written-out loop (one accumulator, product rounded,
    /// then added, k in order), bit for bit: 16 rows 131 apart of k = 100
    /// (three 32-value steps and a tail of 4), values whose sums round.
    #[test]
    fn sixteen_rows_sum_in_k_order_bit_for_bit() {
        if !crate::backend::cpu::simd::has_avx512() {
            return;
        }
        let (k, stride, first) = (100, 131, 7);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        let x: Vec<f32> = (0..k).map(|_| next() * 3.0).collect();
        let values: Vec<f32> = (0..first + 16 * stride).map(|_| next()).collect();
        let bf: Vec<u16> = values
            .iter()
            .map(|&v| half::bf16::from_f32(v).to_bits())
            .collect();
        let f16: Vec<u16> = values
            .iter()
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect();
        for (bits, is_bf16) in [(&bf, true), (&f16, false)] {
            let want: Vec<u32> = (0..16)
                .map(|j| {
                    let row = &bits[first + j * stride..][..k];
                    let widen = |b: u16| {
                        if is_bf16 {
                            super::widen::<true>(b)
                        } else {
                            super::widen::<false>(b)
                        }
                    };
                    row.iter()
                        .zip(&x)
                        .fold(0f32, |acc, (&w, &x)| acc + x * widen(w))
                        .to_bits()
                })
                .collect();
            // SAFETY: has_avx512() checked above.
            let got = unsafe {
                if is_bf16 {
                    super::dot16::<true>(bits, first, stride, k, &x)
                } else {
                    super::dot16::<false>(bits, first, stride, k, &x)
                }
            };
            let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "bf16 {is_bf16}");
        }
    }
}
