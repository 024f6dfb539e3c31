//! The 2/4/8-bit quantized matrix-vector kernel of [`qgemv`](super::qgemv)
//! with AVX-512 VNNI: integer products instead of float ones.
//!
//! The float kernels spend three vector instructions on every 16 values
//! (mask, convert, multiply-add), so at 4 bits they run out of instructions
//! before they run out of memory bandwidth. Here the packed bytes are the
//! multiplicands: a shift and a mask put value `t` of every byte in the
//! byte's low bits, and `vpdpbusd` multiplies 64 such bytes by 64 signed
//! bytes and adds them in fours into 32-bit lanes.
//!
//! For that, `x` becomes integers once per call. In each group of the
//! quantization, with `2^(e-1) <= max |x| < 2^e`, every value is rounded to
//! the integer `m = x * 2^(30 - e)`, written as four signed base-256
//! digits: a value moves by at most 2^-31 of its group's largest |x|, so
//! values down to 1/128 of the largest keep all 24 bits of their f32
//! significand. The sums of products are then exact integers until they are
//! combined into f32 (two roundings). Against summing f32 products (each
//! addition rounded to 2^-24 of the running sum) that is as exact or more,
//! except for values far below an outlier whose own weight is near zero.
//! Inputs this cannot hold (NaN, infinities, groups whose largest value is
//! below 2^-90 or above 2^120) stay on the float kernels.

use super::num::Float;
use super::qgemv::Args;
use crate::buffer::Buffer;
use crate::Dtype;
use std::arch::x86_64::*;

/// Words in one 512-bit vector.
const WORDS: usize = 16;
/// Signed base-256 digits per input value.
const DIGITS: usize = 4;
/// How far ahead of the kernel the packed words are fetched into cache.
const PREFETCH_WORDS: usize = 512;
/// Bits above the group's exponent that the integer inputs keep.
const FRAC: i32 = 30;

/// `x` as the digits the kernel multiplies, for one call. Both are on
/// 64-byte-aligned buffers: the kernel reads them a cache line at a time,
/// and a vector load that spans two lines costs two (a 1536 x 576 4-bit
/// product took 15% longer on a vector allocated without alignment).
pub(super) struct Digits {
    /// For each vector of [`WORDS`] words, each plane `t` and each digit:
    /// 64 bytes (i8), byte `4 i + b` multiplying byte `b` of word `i`.
    bytes: Buffer,
    /// For each vector of words, 16 lanes (f32) of `2^(e - 30)` of the
    /// group of each lane's word (0 past the end of a row).
    units: Buffer,
}

/// Whether the CPU has what [`rows`] is compiled for.
pub(super) fn available() -> bool {
    super::simd::has_avx512()
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
}

/// Whether this layout runs here: 2, 4 or 8 bits, and groups of a power
/// of two (MLX's 32, 64 and 128) that hold whole vectors of one plane's
/// values (16 values of a plane span `16 * 8 / bits` inputs). A vector of
/// words then starts at a group's start or holds whole groups.
pub(super) fn supports(bits: usize, group_size: usize) -> bool {
    matches!(bits, 2 | 4 | 8)
        && group_size.is_power_of_two()
        && group_size.is_multiple_of(WORDS * 8 / bits)
}

/// Splits `x` (whole groups of `group_size`, which [`supports`] allows)
/// into digits; `None` when a value or a group's range is one the
/// integers cannot hold (see the module doc).
///
/// # Safety
/// The CPU must have what [`available`] checks.
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn split(x: &[f32], bits: usize, group_size: usize) -> Option<Digits> {
    let planes = 8 / bits;
    let values_per_word = 32 / bits;
    let row_words = x.len() / values_per_word;
    let chunks = row_words.div_ceil(WORDS);
    let wpg = group_size / values_per_word;
    // Each group's exponent e (max |x| < 2^e); None for a zero group.
    let mut exps = Vec::with_capacity(x.len() / group_size);
    for g in x.chunks_exact(group_size) {
        let (mut max, mut nan) = (_mm512_setzero_ps(), 0);
        for v in g.chunks_exact(16) {
            // SAFETY: `v` holds 16 f32.
            let v = unsafe { _mm512_loadu_ps(v.as_ptr()) };
            nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            max = _mm512_max_ps(max, _mm512_abs_ps(v));
        }
        let max = _mm512_reduce_max_ps(max);
        if nan != 0 || !max.is_finite() {
            return None;
        }
        if max == 0.0 {
            exps.push(None);
            continue;
        }
        let e = ((max.to_bits() >> 23) as i32) - 126;
        if !(-90..=120).contains(&e) {
            return None;
        }
        exps.push(Some(e));
    }
    let mut units_buf = Buffer::zeroed(chunks * WORDS * 4);
    let units = units_buf.as_mut_slice::<f32>().expect("heap buffer");
    for (w, u) in units.iter_mut().enumerate().take(row_words) {
        *u = exps[w / wpg].map_or(0.0, |e| pow2(e - FRAC));
    }
    let mut bytes_buf = Buffer::zeroed(chunks * planes * DIGITS * 64);
    let bytes = bytes_buf.as_mut_slice::<i8>().expect("heap buffer");
    let (low, half) = (_mm512_set1_epi32(255), _mm512_set1_epi32(128));
    for (g, e) in exps.iter().enumerate() {
        let Some(e) = *e else { continue };
        let xs = &x[g * group_size..(g + 1) * group_size];
        for (b, block) in xs.chunks_exact(16 * planes).enumerate() {
            // SAFETY: `block` holds 16 f32 per plane.
            let v: [__m512; 4] = std::array::from_fn(|i| unsafe {
                if i < planes {
                    _mm512_loadu_ps(block.as_ptr().add(16 * i))
                } else {
                    _mm512_setzero_ps()
                }
            });
            // Plane t holds x[t], x[t + planes], ...: its j-th value meets
            // byte j % 4 of word j / 4.
            let j = (g * group_size) / planes + 16 * b;
            let (z, pos) = (j / 64, j % 64);
            // Exact: a power of two, and |m| < 2^30.
            let scale = _mm512_set1_ps(pow2(FRAC - e));
            for t in 0..planes {
                let m = _mm512_cvtps_epi32(_mm512_mul_ps(plane(&v, planes, t), scale));
                let mut rest = m;
                for d in 0..DIGITS {
                    let digit =
                        _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(rest, half), low), half);
                    let at = ((z * planes + t) * DIGITS + d) * 64 + pos;
                    debug_assert!(at + 16 <= bytes.len());
                    // SAFETY: 16 bytes at `at` lie inside `bytes` (pos is a
                    // multiple of 16 below 64).
                    unsafe {
                        _mm_storeu_si128(
                            bytes.as_mut_ptr().add(at).cast(),
                            _mm512_cvtepi32_epi8(digit),
                        )
                    };
                    rest = _mm512_srai_epi32::<8>(_mm512_sub_epi32(rest, digit));
                }
            }
        }
    }
    Some(Digits {
        bytes: bytes_buf,
        units: units_buf,
    })
}

/// The vector of `f(0), ..., f(15)`.
#[inline]
#[target_feature(enable = "avx512f")]
fn lanes(f: impl Fn(usize) -> usize) -> __m512i {
    let v: [i32; 16] = std::array::from_fn(|i| f(i) as i32);
    // SAFETY: `v` holds 16 i32, what an unaligned 512-bit load reads.
    unsafe { _mm512_loadu_si512(v.as_ptr().cast()) }
}

/// Values `t, t + planes, ...` of the `16 * planes` values in `v`.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni")]
fn plane(v: &[__m512; 4], planes: usize, t: usize) -> __m512 {
    match planes {
        1 => v[0],
        2 => _mm512_permutex2var_ps(v[0], lanes(|i| 2 * i + t), v[1]),
        _ => {
            // Indices past 31 wrap; only the low 8 lanes of each half count.
            let idx = lanes(|i| 4 * i + t);
            let lo = _mm512_permutex2var_ps(v[0], idx, v[1]);
            let hi = _mm512_permutex2var_ps(v[2], idx, v[3]);
            _mm512_shuffle_f32x4::<0b0100_0100>(lo, hi)
        }
    }
}

/// Values `at..at + 16` of `src` (f32, bf16 or f16) as f32 lanes, 0 past
/// its end: a row's scales or biases read in place, widened in registers.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni")]
fn widened<S: Float>(src: &[S], at: usize) -> __m512 {
    let n = src.len().saturating_sub(at).min(16);
    let mask = ((1u32 << n) - 1) as __mmask16;
    let p = src.as_ptr().wrapping_add(at);
    // SAFETY (each load): masked-off lanes are not read (nor can they
    // fault), and the `n` lanes left lie inside `src`.
    unsafe {
        match S::DTYPE {
            Dtype::Float32 => _mm512_maskz_loadu_ps(mask, p.cast()),
            Dtype::Bfloat16 => {
                let h = _mm256_maskz_loadu_epi16(mask, p.cast());
                _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
            }
            Dtype::Float16 => _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p.cast())),
            _ => {
                let mut v = [0f32; 16];
                for (d, s) in v.iter_mut().zip(&src[at.min(src.len())..]) {
                    *d = s.to_f32();
                }
                _mm512_loadu_ps(v.as_ptr())
            }
        }
    }
}

/// `2^e` for `e` in f32's normal range.
fn pow2(e: i32) -> f32 {
    debug_assert!((-126..=127).contains(&e));
    f32::from_bits(((e + 127) as u32) << 23)
}

/// Rows `r0..r0 + out.len()` of `x @ W.T` from `x`'s digits.
///
/// # Safety
/// The CPU must have what [`available`] checks.
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn rows<S: Float, const BITS: u32>(
    a: &Args<'_, S>,
    xd: &Digits,
    r0: usize,
    out: &mut [f32],
) {
    let planes = 8 / BITS as usize;
    let (rw, wpg) = (a.row_words, a.p.words_per_group());
    let chunks = rw.div_ceil(WORDS);
    // Lane i of a vector reads scale (i / wpg) of its first group.
    let lane_group = lanes(|i| i / wpg);
    let low = _mm512_set1_epi32((((1u32 << BITS) - 1) * 0x0101_0101) as i32);
    let tail = (rw % WORDS) as u32;
    let tail_mask: __mmask16 = if tail == 0 { !0 } else { (1 << tail) - 1 };
    let (bytes, units) = (xd.bytes.as_slice::<i8>(), xd.units.as_slice::<f32>());
    for (r, o) in (r0..).zip(out.iter_mut()) {
        let (words, scales, biases) = a.row(r);
        let mut acc = _mm512_setzero_ps();
        for z in 0..chunks {
            let ahead = words.as_ptr().wrapping_add(z * WORDS + PREFETCH_WORDS);
            _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
            // SAFETY: every vector but the last lies inside the row; the
            // last one's mask leaves out the words past the row's end.
            let w = unsafe {
                let p = words.as_ptr().add(z * WORDS);
                if z + 1 < chunks {
                    _mm512_loadu_si512(p.cast())
                } else {
                    _mm512_maskz_loadu_epi32(tail_mask, p.cast())
                }
            };
            let mut sums = [_mm512_setzero_si512(); DIGITS];
            for t in 0..planes {
                // Value t of each byte, shifted down to the byte's bottom.
                let shift = _mm_cvtsi32_si128((BITS as usize * t) as i32);
                let q = _mm512_and_si512(_mm512_srl_epi32(w, shift), low);
                for (d, s) in sums.iter_mut().enumerate() {
                    let at = ((z * planes + t) * DIGITS + d) * 64;
                    // SAFETY: `bytes` holds 64 bytes at `at` (see `split`),
                    // on a 64-byte boundary (at is a multiple of 64).
                    let x = unsafe { _mm512_load_si512(bytes.as_ptr().add(at).cast()) };
                    *s = _mm512_dpbusd_epi32(*s, q, x);
                }
            }
            let b = _mm512_set1_ps(256.0);
            let f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[3]), b, _mm512_cvtepi32_ps(sums[2]));
            let f = _mm512_fmadd_ps(f, b, _mm512_cvtepi32_ps(sums[1]));
            let f = _mm512_fmadd_ps(f, b, _mm512_cvtepi32_ps(sums[0]));
            // SAFETY: `units` holds 16 lanes per vector of words, 64
            // bytes a vector from an aligned start.
            let u = unsafe { _mm512_load_ps(units.as_ptr().add(z * WORDS)) };
            let first = z * WORDS / wpg;
            let s = if wpg >= WORDS {
                _mm512_set1_ps(scales[first].to_f32())
            } else {
                _mm512_permutexvar_ps(lane_group, widened(scales, first))
            };
            acc = _mm512_fmadd_ps(_mm512_mul_ps(f, u), s, acc);
        }
        // The bias term, Σ b_g Σ x_g, joins the lanes before their sum.
        for g in (0..biases.len()).step_by(16) {
            acc = _mm512_fmadd_ps(widened(biases, g), widened(a.xsums, g), acc);
        }
        *o = _mm512_reduce_add_ps(acc);
    }
}
