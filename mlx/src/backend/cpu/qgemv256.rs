//! The blocked (2 to 6 and 8-bit) quantized matrix-vector kernel of
//! [`qgemv`](super::qgemv) for AVX2 + FMA, written with intrinsics. It does the arithmetic of the
//! portable `qgemv::rows_blocked` in the same order, so it gives the same
//! bits; left to the auto-vectorizer, that code ran half its products as
//! scalars and spent about one instruction per 4-bit weight, and at 4 bits
//! the instructions, not the memory, set the pace.
//!
//! One difference in form, none in value: a group's two sums start from
//! its first products instead of from zero plus them. They differ only in
//! the sign of a zero sum, and the row's sum starts from +0, which absorbs
//! it (`-0 · s + 0 = +0`, as `+0 · s + 0` is).
//!
//! A block's lanes are its 8 words for 2, 4 and 8 bits; for 3, 5 and 6
//! bits they are 3 or 5 bytes apart, and byte shuffles put each lane's
//! 32-bit windows into a vector (see [`Blocks`]).

use super::num::Float;
use super::qgemv::{
    block_words, finish, lane_bytes, lane_group_shift, prefetch_ahead, shifted_down, window, Args,
    LANES,
};
use std::arch::x86_64::*;

/// Rows `r0..r0 + out.len()` with `BITS` in 2..=6 or 8 (`P` values a lane,
/// see `qgemv::lane_values`) and whole blocks in a row (`qgemv::blocked`).
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`](super::simd::has_fma)).
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn rows<S: Float, const BITS: u32, const P: usize>(
    a: &Args<'_, S>,
    r0: usize,
    out: &mut [f32],
) {
    let (wpg, bw) = (a.p.words_per_group(), block_words(BITS));
    for (r, o) in (r0..).zip(out.iter_mut()) {
        let (words, scales, biases) = a.row(r);
        prefetch_ahead(words);
        let blocks = Blocks::<BITS>::of_row(a, r);
        let acc = if wpg == bw {
            // A block per group (4 bits in groups of 64, 8 in groups of 32).
            fixed_groups::<S, BITS, P, 1>(&blocks, a.xp, scales)
        } else if wpg == 2 * bw {
            // Two (4 bits in groups of 128, 8 in groups of 64).
            fixed_groups::<S, BITS, P, 2>(&blocks, a.xp, scales)
        } else if wpg > bw {
            // Several blocks per group: one scale for the group's lanes.
            let per = wpg / bw;
            let mut acc = _mm256_setzero_ps();
            let groups = a.xp.chunks_exact(per * LANES * P).zip(scales);
            for (g, (gx, &s)) in groups.enumerate() {
                let mut xs = gx.chunks_exact(LANES * P);
                let x0 = xs.next().expect("a group holds a block");
                let mut d = first_block::<BITS, P>(blocks.at(g * per), x0);
                for (b, xb) in (g * per + 1..).zip(xs) {
                    block::<BITS, P>(blocks.at(b), xb, &mut d);
                }
                let sum = _mm256_add_ps(d[0], d[1]);
                acc = _mm256_fmadd_ps(sum, _mm256_set1_ps(s.to_f32()), acc);
            }
            acc
        } else {
            // Several groups per block: a scale per lane.
            let mut acc = _mm256_setzero_ps();
            let shift = lane_group_shift(a.p);
            let xs = a.xp.chunks_exact(LANES * P).take(words.len() / bw);
            for (b, xb) in xs.enumerate() {
                let d = first_block::<BITS, P>(blocks.at(b), xb);
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
    blocks: &Blocks<'_, BITS>,
    xp: &[f32],
    scales: &[S],
) -> __m256 {
    let mut acc = _mm256_setzero_ps();
    let groups = xp.chunks_exact(B * LANES * P).zip(scales);
    for (g, (gx, &s)) in groups.enumerate() {
        let mut xs = gx.chunks_exact(LANES * P);
        let x0 = xs.next().expect("a group holds a block");
        let mut d = first_block::<BITS, P>(blocks.at(g * B), x0);
        for (b, xb) in (g * B + 1..).zip(xs) {
            block::<BITS, P>(blocks.at(b), xb, &mut d);
        }
        let sum = _mm256_add_ps(d[0], d[1]);
        acc = _mm256_fmadd_ps(sum, _mm256_set1_ps(s.to_f32()), acc);
    }
    acc
}

/// A row's blocks, each loaded as its lanes' 32-bit windows. The loads of
/// 3- and 5-byte lanes read a few bytes past the block (into the next row,
/// or the next block); where the matrix ends first, the block is copied
/// into a zero-padded buffer.
struct Blocks<'a, const BITS: u32> {
    /// The row's words and every word after it in the matrix.
    rest: &'a [u32],
    /// Blocks whose loads stay inside `rest`: all of a row's, but for 3-
    /// and 5-byte lanes perhaps not the matrix's last.
    inside: usize,
}

impl<'a, const BITS: u32> Blocks<'a, BITS> {
    /// Words a block's load reads from its start: two 16-byte loads 12
    /// bytes apart for 3-byte lanes, 20 and 25 bytes past their halves'
    /// starts for 5-byte lanes.
    const READ: usize = match lane_bytes(BITS) {
        3 => 7,
        5 => 11,
        _ => LANES,
    };

    fn of_row<S>(a: &Args<'a, S>, r: usize) -> Self {
        let rest = &a.w.packed[r * a.row_words..];
        let inside = match rest.len().checked_sub(Self::READ) {
            Some(spare) => spare / block_words(BITS) + 1,
            None => 0,
        };
        debug_assert!(lane_bytes(BITS) != 4 || inside * block_words(BITS) >= a.row_words);
        Blocks { rest, inside }
    }

    /// Block `b` of the row's windows: `[0]` from each lane's first byte,
    /// `[1]` from its third (5 bits only; see `qgemv::window`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn at(&self, b: usize) -> [__m256i; 2] {
        let from = b * block_words(BITS);
        if lane_bytes(BITS) == 4 || b < self.inside {
            // SAFETY: `inside` counts the blocks whose `READ` words lie in
            // `rest` (one check a row); a row holds all of its blocks'
            // words, which are all 4-byte lanes read.
            unsafe { windows::<BITS>(self.rest.as_ptr().add(from).cast()) }
        } else {
            self.padded(from)
        }
    }

    /// [`Blocks::at`] for a block whose loads would pass the matrix's end:
    /// its words copied into a zero-padded buffer first.
    #[cold]
    #[inline(never)]
    #[target_feature(enable = "avx2,fma")]
    fn padded(&self, from: usize) -> [__m256i; 2] {
        let tail = &self.rest[from..];
        let mut padded = [0u32; 12];
        padded[..tail.len()].copy_from_slice(tail);
        // SAFETY: `padded` holds 12 >= `READ` words.
        unsafe { windows::<BITS>(padded.as_ptr().cast()) }
    }
}

/// The windows of the block at `p` (see [`Blocks::at`]).
///
/// # Safety
/// `p` must start `Blocks::<BITS>::READ` readable words.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn windows<const BITS: u32>(p: *const u8) -> [__m256i; 2] {
    // SAFETY (each arm): the caller's `READ` words cover the bytes each
    // load reads (checked against `READ`'s doc: 12 + 16 <= 28; 25 + 16 <=
    // 44; 32).
    match lane_bytes(BITS) {
        3 => unsafe {
            // Halves: bytes 0..16 and 12..28, lanes 3 bytes apart.
            let v = halves(p, 0, 12);
            let lanes = per_half(THREE_BYTE_LANES);
            [_mm256_shuffle_epi8(v, lanes), _mm256_setzero_si256()]
        },
        5 => unsafe {
            // Half h holds lanes 4h..4h+4 (bytes 20h..20h+20): its first
            // three lanes' windows from bytes 20h.. (`lo`), its last one's
            // from bytes 20h+5.. (`hi`, where they start 5 bytes earlier).
            let (lo, hi) = (halves(p, 0, 20), halves(p, 5, 25));
            let window = |w: usize| {
                let [firsts, last] = FIVE_BYTE_LANES[w].map(|pattern| per_half(pattern));
                _mm256_or_si256(
                    _mm256_shuffle_epi8(lo, firsts),
                    _mm256_shuffle_epi8(hi, last),
                )
            };
            [window(0), window(1)]
        },
        _ => {
            // SAFETY: see above (32 bytes).
            let v = unsafe { _mm256_loadu_si256(p.cast()) };
            [v, _mm256_setzero_si256()]
        }
    }
}

/// The byte shuffle that fills dword `q` of a 128-bit half with bytes
/// `starts[q]..starts[q] + 4` (zeros where a start is negative).
const fn dwords_from(starts: [i8; 4]) -> [i8; 16] {
    let mut pattern = [-1i8; 16];
    let mut i = 0;
    while i < 16 {
        if starts[i / 4] >= 0 {
            pattern[i] = starts[i / 4] + (i % 4) as i8;
        }
        i += 1;
    }
    pattern
}

/// 3-byte lanes: each dword from its lane's first byte.
const THREE_BYTE_LANES: [i8; 16] = dwords_from([0, 3, 6, 9]);

/// 5-byte lanes, per window (from the lane's first byte, from its third):
/// the first three lanes' dwords from `lo`, the last one's from `hi`.
const FIVE_BYTE_LANES: [[[i8; 16]; 2]; 2] = [
    [dwords_from([0, 5, 10, -1]), dwords_from([-1, -1, -1, 10])],
    [dwords_from([2, 7, 12, -1]), dwords_from([-1, -1, -1, 12])],
];

/// `pattern` in both 128-bit halves (a byte shuffle works within halves).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn per_half(pattern: [i8; 16]) -> __m256i {
    // SAFETY: `pattern` is 16 bytes, what an unaligned 128-bit load reads.
    _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(pattern.as_ptr().cast()) })
}

/// 16 bytes from `p + lo` and 16 from `p + hi` as one vector's halves.
///
/// # Safety
/// Both 16-byte runs must be readable.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn halves(p: *const u8, lo: usize, hi: usize) -> __m256i {
    // SAFETY: the caller's.
    unsafe {
        _mm256_inserti128_si256::<1>(
            _mm256_castsi128_si256(_mm_loadu_si128(p.add(lo).cast())),
            _mm_loadu_si128(p.add(hi).cast()),
        )
    }
}

/// Value `j` of each of a block's 8 lanes as f32, times `2^t` (masked in
/// place at bit `t` of its window, or shifted down; see `qgemv::permute`),
/// and its 8 permuted inputs.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn plane<const BITS: u32, const P: usize>(
    windows: &[__m256i; 2],
    xb: &[f32],
    j: usize,
) -> (__m256, __m256) {
    let xs: &[f32; LANES] = xb[j * LANES..(j + 1) * LANES].try_into().expect("8");
    // SAFETY: `xs` is 8 f32, what a 256-bit load reads.
    let x = unsafe { _mm256_loadu_ps(xs.as_ptr()) };
    let (byte, shift) = window(BITS, j);
    let words = windows[usize::from(byte != 0)];
    let q = if shifted_down(BITS, j) {
        _mm256_srl_epi32(words, _mm_cvtsi32_si128(shift as i32))
    } else {
        let mask = ((1u32 << BITS) - 1) << shift;
        _mm256_and_si256(words, _mm256_set1_epi32(mask as i32))
    };
    // Below 2^31, so the signed conversion is exact.
    (_mm256_cvtepi32_ps(q), x)
}

/// The first block of a group (`xb`: its `8 P` permuted inputs): `d[j % 2]
/// = Σ q_j · xp_j` over the values `j` of the lanes.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn first_block<const BITS: u32, const P: usize>(windows: [__m256i; 2], xb: &[f32]) -> [__m256; 2] {
    let (q0, x0) = plane::<BITS, P>(&windows, xb, 0);
    let (q1, x1) = plane::<BITS, P>(&windows, xb, 1);
    let mut d = [_mm256_mul_ps(q0, x0), _mm256_mul_ps(q1, x1)];
    for j in 2..P {
        let (q, x) = plane::<BITS, P>(&windows, xb, j);
        d[j % 2] = _mm256_fmadd_ps(q, x, d[j % 2]);
    }
    d
}

/// A later block of a group: `d[j % 2] += q_j · xp_j`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn block<const BITS: u32, const P: usize>(windows: [__m256i; 2], xb: &[f32], d: &mut [__m256; 2]) {
    for j in 0..P {
        let (q, x) = plane::<BITS, P>(&windows, xb, j);
        d[j % 2] = _mm256_fmadd_ps(q, x, d[j % 2]);
    }
}
