//! The quantized matrix-vector kernel of [`qgemv`](super::qgemv) with
//! AVX-512 VNNI, for 2 to 6 and 8 bits: integer products instead of float
//! ones.
//!
//! The float kernels spend three vector instructions on every 16 values
//! (mask, convert, multiply-add), so at 4 bits they run out of instructions
//! before they run out of memory bandwidth. Here the packed values are the
//! multiplicands, one a byte in the byte's low bits, and `vpdpbusd`
//! multiplies 64 such bytes by 64 signed bytes and adds them in fours into
//! 32-bit lanes. Each of a vector's 16 lanes covers a run of values of one
//! row ([`lane_values`]), met in one to four planes of 64 bytes:
//!
//! - 2, 4 and 8 bits: lane `i` is word `i` of 16 packed words, and a shift
//!   and a mask put value `t` of every byte in place (plane `t`).
//! - 3, 5 and 6 bits (AVX-512 VBMI): lane `i` is the 8 values in bytes
//!   `b i .. b i + b` of `16 b` packed bytes (b = bits). A byte permute
//!   gives each lane the 4 bytes that hold its first (plane 0) or last
//!   (plane 1) four values, a multishift moves each value's bits to the
//!   bottom of its own byte, and a mask clears the rest.
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

/// Lanes (32-bit sums) in one 512-bit vector.
const WORDS: usize = 16;
/// Signed base-256 digits per input value.
const DIGITS: usize = 4;
/// How far ahead of the kernel the packed bytes are fetched into cache.
const PREFETCH_BYTES: usize = 2048;
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

/// Whether this layout runs here: 2 to 6 or 8 bits (3, 5 and 6 with
/// AVX-512 VBMI), and groups of a power of two (MLX's 32, 64 and 128) of
/// at least 16 values a plane (`16 * planes` inputs). A vector of lanes
/// then starts at a group's start or holds whole groups.
pub(super) fn supports(bits: usize, group_size: usize) -> bool {
    let shape = match bits {
        2 | 4 | 8 => true,
        3 | 5 | 6 => is_x86_feature_detected!("avx512vbmi"),
        _ => false,
    };
    shape && group_size.is_power_of_two() && group_size.is_multiple_of(16 * planes(bits))
}

/// Planes of 64 bytes a vector of lanes is met in.
#[inline(always)]
const fn planes(bits: usize) -> usize {
    match bits {
        2 => 4,
        8 => 1,
        _ => 2,
    }
}

/// Values of a row one lane covers: 4 a plane.
#[inline(always)]
const fn lane_values(bits: usize) -> usize {
    4 * planes(bits)
}

/// Whether lane `i` is 8 values in `bits` whole bytes (3, 5, 6 bits)
/// rather than one packed word.
#[inline(always)]
const fn byte_runs(bits: usize) -> bool {
    matches!(bits, 3 | 5 | 6)
}

/// Splits `x` (whole groups of `group_size`, which [`supports`] allows)
/// into digits; `None` when a value or a group's range is one the
/// integers cannot hold (see the module doc).
///
/// # Safety
/// The CPU must have what [`available`] checks.
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn split(x: &[f32], bits: usize, group_size: usize) -> Option<Digits> {
    let planes = planes(bits);
    let row_lanes = x.len() / lane_values(bits);
    let chunks = row_lanes.div_ceil(WORDS);
    let lpg = group_size / lane_values(bits);
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
    for (l, u) in units.iter_mut().enumerate().take(row_lanes) {
        *u = exps[l / lpg].map_or(0.0, |e| pow2(e - FRAC));
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
            // The block's 16 values a plane meet bytes `j .. j + 16` of
            // the plane (4 lanes).
            let j = (g * group_size) / planes + 16 * b;
            let (z, pos) = (j / 64, j % 64);
            // Exact: a power of two, and |m| < 2^30.
            let scale = _mm512_set1_ps(pow2(FRAC - e));
            for t in 0..planes {
                let m = _mm512_cvtps_epi32(_mm512_mul_ps(plane(&v, bits, t), scale));
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

/// Plane `t`'s 16 values of the `16 * planes` in `v` (4 lanes): byte
/// `m` of a plane meets byte `m % 4` of lane `m / 4`, which holds, in
/// packed words, values `t, t + planes, ...` of the word's, and in byte
/// runs, values `4 t .. 4 t + 4` of the lane's 8.
#[inline]
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni")]
fn plane(v: &[__m512; 4], bits: usize, t: usize) -> __m512 {
    if byte_runs(bits) {
        return _mm512_permutex2var_ps(v[0], lanes(|m| 8 * (m / 4) + 4 * t + m % 4), v[1]);
    }
    match planes(bits) {
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

/// Rows `r0..r0 + out.len()` of `x @ W.T` from `x`'s digits, for 2, 4
/// and 8 bits.
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
    debug_assert!(!byte_runs(BITS as usize));
    // SAFETY: this function's features are the body's.
    unsafe { rows_with::<S, BITS>(a, xd, r0, out) }
}

/// [`rows`] for 3, 5 and 6 bits, whose byte permutes need AVX-512 VBMI.
///
/// # Safety
/// The CPU must have what [`available`] checks, and AVX-512 VBMI.
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,avx512vbmi")]
pub(super) unsafe fn rows_vbmi<S: Float, const BITS: u32>(
    a: &Args<'_, S>,
    xd: &Digits,
    r0: usize,
    out: &mut [f32],
) {
    debug_assert!(byte_runs(BITS as usize));
    // SAFETY: this function's features are the body's.
    unsafe { rows_with::<S, BITS>(a, xd, r0, out) }
}

/// The body of [`rows`] and [`rows_vbmi`], inlined into each (so that its
/// intrinsics are compiled with their features).
///
/// # Safety
/// The caller's features: what [`available`] checks, and VBMI for 3, 5
/// and 6 bits.
#[inline(always)]
unsafe fn rows_with<S: Float, const BITS: u32>(
    a: &Args<'_, S>,
    xd: &Digits,
    r0: usize,
    out: &mut [f32],
) {
    let bits = BITS as usize;
    let planes = planes(bits);
    let lpg = a.p.group_size / lane_values(bits);
    let chunks = (a.w.k / lane_values(bits)).div_ceil(WORDS);
    // Lane i of a vector reads scale (i / lpg) of its first group.
    let lane_group = lanes(|i| i / lpg);
    let src = Chunks::<BITS>::new(a.row_words);
    let (bytes, units) = (xd.bytes.as_slice::<i8>(), xd.units.as_slice::<f32>());
    for (r, o) in (r0..).zip(out.iter_mut()) {
        let (words, scales, biases) = a.row(r);
        let mut acc = _mm512_setzero_ps();
        for z in 0..chunks {
            // SAFETY: the caller's features.
            let q = unsafe { src.planes(words, z) };
            let mut sums = [_mm512_setzero_si512(); DIGITS];
            for (t, &q) in q.iter().enumerate().take(planes) {
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
            // SAFETY: `units` holds 16 lanes per vector of lanes, 64
            // bytes a vector from an aligned start.
            let u = unsafe { _mm512_load_ps(units.as_ptr().add(z * WORDS)) };
            let first = z * WORDS / lpg;
            let s = if lpg >= WORDS {
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

/// How a row's packed values become the byte planes `vpdpbusd` takes,
/// one vector of 16 lanes (a chunk) at a time; the constants for `BITS`.
struct Chunks<const BITS: u32> {
    /// Packed bytes of a row.
    row_bytes: usize,
    /// Which of a chunk's first and next 64 bytes it loads: all of its
    /// own in a whole chunk, and those inside the row in the last one.
    whole: [u64; 2],
    last: [u64; 2],
    /// Each value's bits (in every byte).
    low: __m512i,
    /// Byte runs: for each plane, the byte of the chunk each byte of the
    /// permuted vector takes (lane i: 4 bytes from `b i`, or from
    /// `b i + b / 2` for plane 1).
    take: [__m512i; 2],
    /// Byte runs: for each plane, the bit of its 64-bit word each byte's
    /// value starts at.
    shift: [__m512i; 2],
}

impl<const BITS: u32> Chunks<BITS> {
    /// Packed bytes of a chunk.
    const BYTES: usize = if byte_runs(BITS as usize) {
        16 * BITS as usize
    } else {
        64
    };

    #[inline(always)]
    fn new(row_words: usize) -> Self {
        let b = BITS as usize;
        let bytes = |f: &dyn Fn(usize) -> usize| -> __m512i {
            let v: [u8; 64] = std::array::from_fn(|p| f(p) as u8);
            // SAFETY: `v` holds 64 bytes, what an unaligned load reads.
            unsafe { _mm512_loadu_si512(v.as_ptr().cast()) }
        };
        let low = ((1u32 << b) - 1) as u8;
        let row_bytes = row_words * 4;
        // Masks of the first `n` bytes of 64 and of the 64 after them.
        let masks = |n: usize| {
            [n.min(64), n.saturating_sub(64).min(64)].map(|n| {
                if n == 64 {
                    !0
                } else {
                    (1u64 << n) - 1
                }
            })
        };
        Chunks {
            row_bytes,
            whole: masks(Self::BYTES),
            last: masks(row_bytes - row_bytes.saturating_sub(1) / Self::BYTES * Self::BYTES),
            low: bytes(&|_| low as usize),
            take: std::array::from_fn(|t| bytes(&|p| b * (p / 4) + t * (b / 2) + p % 4)),
            shift: std::array::from_fn(|t| {
                bytes(&|p| 32 * (p / 4 % 2) + t * 4 * (b % 2) + b * (p % 4))
            }),
        }
    }

    /// Chunk `z` of the row `words` as up to four planes of one value a
    /// byte (the first [`planes`]`(BITS)` count).
    ///
    /// # Safety
    /// The CPU must have what [`available`] checks, and VBMI for 3, 5 and
    /// 6 bits.
    #[inline(always)]
    unsafe fn planes(&self, words: &[u32], z: usize) -> [__m512i; 4] {
        let start = z * Self::BYTES;
        let p = words.as_ptr().cast::<u8>().wrapping_add(start);
        for line in (0..Self::BYTES).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_BYTES + line).cast());
        }
        // The bytes of this chunk inside the row: a chunk's own, or fewer
        // in the last one (the lanes past the row's end read zeros).
        let whole = start + Self::BYTES <= self.row_bytes;
        let [lo_mask, hi_mask] = if whole { self.whole } else { self.last };
        // SAFETY: a whole chunk's first 64 bytes lie inside the row, and
        // the masks take only bytes of the chunk inside the row (masked-off
        // bytes are neither read nor can they fault).
        let lo = unsafe {
            if whole {
                _mm512_loadu_si512(p.cast())
            } else {
                _mm512_maskz_loadu_epi8(lo_mask, p.cast())
            }
        };
        let mut q = [_mm512_setzero_si512(); 4];
        if !byte_runs(BITS as usize) {
            for (t, q) in q.iter_mut().enumerate().take(planes(BITS as usize)) {
                // Value t of each byte, shifted down to the byte's bottom.
                let shift = _mm_cvtsi32_si128((BITS as usize * t) as i32);
                *q = _mm512_and_si512(_mm512_srl_epi32(lo, shift), self.low);
            }
            return q;
        }
        let hi = if Self::BYTES > 64 {
            // SAFETY: as for `lo`, the bytes from `start + 64`.
            unsafe { _mm512_maskz_loadu_epi8(hi_mask, p.wrapping_add(64).cast()) }
        } else {
            _mm512_setzero_si512()
        };
        for (t, q) in q.iter_mut().enumerate().take(2) {
            let lane_bytes = _mm512_permutex2var_epi8(lo, self.take[t], hi);
            let moved = _mm512_multishift_epi64_epi8(self.shift[t], lane_bytes);
            *q = _mm512_and_si512(moved, self.low);
        }
        q
    }
}
