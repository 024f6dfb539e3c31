//! One row times the transpose of an affine-quantized matrix (`x @ W.T`,
//! W packed as in [`quantized`](super::quantized)): the batch-1 linear layer
//! of a quantized model. Bound by memory bandwidth, so the packed words are
//! streamed once, in place, and never dequantized into a matrix.
//!
//! Each output row is `Σ_g s_g · (q_g · x_g) + Σ_g b_g · Σ x_g`. For 2 to
//! 6 and 8 bits a row is read in blocks of 8 lanes: lane `i` of a block
//! holds `P` consecutive values (a word of 2, 4 or 8 bits; the fewest whole
//! bytes for 3, 5 and 6 bits, see [`lane_values`]), and the `j`-th value of
//! every lane is one mask away in a 32-bit window of the lane's bytes, so
//! `x` is permuted once per call to put the matching inputs side by side
//! (`xp[j * 8 + i] = x[i * P + j]` in each block of `8 P` values; see
//! [`permute`] for the scaling that replaces the shift). The loops are
//! plain 8-lane arrays compiled with AVX2 and FMA when the CPU has them
//! (so results on CPUs without FMA differ in rounding). Every row is
//! computed by one task in a fixed order, so the result does not depend on
//! the number of threads.

// Scales and biases (f32, f16 or bf16) are read in place through
// `Float::to_f32`, exact for each.
use super::num::Float;
use super::quantized::{bits_from, unpack_group, QParams};
use rayon::prelude::*;

/// W (n × k) stored quantized, row-major: `n * k * bits / 32` words and
/// `n * k / group_size` scales and biases.
#[derive(Clone, Copy)]
pub struct QRows<'a, S> {
    /// Packed rows.
    pub packed: &'a [u32],
    /// One scale per group.
    pub scales: &'a [S],
    /// One bias per group.
    pub biases: &'a [S],
    /// Rows (outputs).
    pub n: usize,
    /// Unpacked columns (inputs).
    pub k: usize,
}

/// Packed bytes per parallel task (whole rows; at least one row).
const TASK_BYTES: usize = 32 << 10;
/// Packed bytes below which the product stays on the calling thread.
const PAR_BYTES: usize = 40 << 10;
/// Lanes of a block of the blocked kernels (one 256-bit vector of f32).
pub(super) const LANES: usize = 8;

/// Values in one lane of a block: a word's for 2, 4 and 8 bits, and for
/// 3, 5 and 6 bits those of the fewest whole bytes (8 in 3 bytes, 8 in 5,
/// 4 in 3), so that blocks are whole words and lanes never share a value.
#[inline(always)]
pub(super) const fn lane_values(bits: u32) -> usize {
    match bits {
        2 => 16,
        6 | 8 => 4,
        _ => 8,
    }
}

/// Bytes of one lane.
#[inline(always)]
pub(super) const fn lane_bytes(bits: u32) -> usize {
    bits as usize * lane_values(bits) / 8
}

/// Words of one block.
#[inline(always)]
pub(super) const fn block_words(bits: u32) -> usize {
    LANES * lane_bytes(bits) / 4
}

/// Where value `j` of a lane is read: the byte of the lane its 32-bit
/// window starts at (byte 2 for the last two 5-bit values, which end past
/// the lane's first four bytes; else 0), and the value's lowest bit in
/// that window.
#[inline(always)]
pub(super) const fn window(bits: u32, j: usize) -> (usize, u32) {
    let byte = if bits == 5 && j >= 6 { 2 } else { 0 };
    (byte, bits * j as u32 - 8 * byte as u32)
}

/// Whether value `j` is shifted down instead of masked in place: it ends
/// at its window's top bit (the last value of a 2/4/8-bit word), where in
/// place it could reach 2^31 and the signed conversion would misread it.
#[inline(always)]
pub(super) const fn shifted_down(bits: u32, j: usize) -> bool {
    window(bits, j).1 + bits == 32
}

/// Whether rows of `row_words` in groups of `p` take the blocked kernels:
/// a width they have, whole blocks, and groups that are whole blocks or
/// whole fractions of one.
fn blocked(p: QParams, row_words: usize) -> bool {
    let bits = p.bits as u32;
    if !matches!(bits, 2..=6 | 8) {
        return false;
    }
    let (bw, wpg) = (block_words(bits), p.words_per_group());
    row_words.is_multiple_of(bw)
        && if wpg >= bw {
            wpg.is_multiple_of(bw)
        } else {
            bw.is_multiple_of(wpg) && (LANES * wpg / bw).is_power_of_two()
        }
}

/// `out = x @ W.T`; `x` has `k` values and `out` has `n`.
pub fn qgemv<S: Float>(x: &[f32], w: &QRows<'_, S>, p: QParams, out: &mut [f32]) {
    qgemv_with(x, std::slice::from_ref(w), p, &mut [out], Isa::best())
}

/// `outs[m] = x @ ws[m].T` for matrices of one `k` and layout `p`: the
/// projections of one input (a layer's queries, keys and values), run as
/// one product. `x` is prepared once and the rows of all of them are one
/// set of parallel tasks, so small matrices do not each pay a hand-over
/// to the other threads and wait for the slowest task.
pub fn qgemv_many<S: Float>(x: &[f32], ws: &[QRows<'_, S>], p: QParams, outs: &mut [&mut [f32]]) {
    qgemv_with(x, ws, p, outs, Isa::best())
}

/// The instructions a kernel is compiled for, each a superset of the one
/// before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Isa {
    /// Baseline x86-64 (or any other architecture).
    Portable,
    /// AVX2 + FMA.
    Avx2,
    /// AVX-512F/DQ besides AVX2 + FMA: 2/4/8-bit blocked rows two at a time.
    Avx512,
    /// AVX-512 BW, VL and VNNI besides: 2-6 and 8-bit rows as integer
    /// products (3, 5 and 6 bits with VBMI; see `qgemv_vnni`), where the
    /// inputs allow.
    Vnni,
}

impl Isa {
    /// The widest this CPU has.
    fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if super::qgemv_vnni::available() {
            return Isa::Vnni;
        }
        if super::simd::has_avx512() {
            Isa::Avx512
        } else if super::simd::has_fma() {
            Isa::Avx2
        } else {
            Isa::Portable
        }
    }
}

/// [`qgemv_many`] with the kernels for `isa`, which the CPU must have
/// (tests run each).
fn qgemv_with<S: Float>(
    x: &[f32],
    ws: &[QRows<'_, S>],
    p: QParams,
    outs: &mut [&mut [f32]],
    isa: Isa,
) {
    let (k, gs) = (x.len(), p.group_size);
    debug_assert!(ws.len() == outs.len() && k % gs == 0);
    debug_assert!(ws.iter().zip(outs.iter()).all(|(w, o)| w.k == k
        && o.len() == w.n
        && w.packed.len() == w.n * k * p.bits / 32
        && w.scales.len() == w.n * k / gs));
    let xsums = group_sums(x, gs);
    let row_words = k * p.bits / 32;
    let row_bytes = row_words * 4;
    let args = |xp| Args::each(ws, x, xp, &xsums, p, row_words);
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Vnni && super::qgemv_vnni::supports(p.bits, gs) {
        use super::qgemv_vnni::{rows, rows_vbmi, split};
        // SAFETY (all calls): `isa` is Vnni only where
        // `qgemv_vnni::available()`, and `supports` takes 3, 5 and 6 bits
        // only with VBMI.
        if let Some(d) = unsafe { split(x, p.bits, gs) } {
            let rows = match p.bits {
                2 => rows::<S, 2>,
                3 => rows_vbmi::<S, 3>,
                4 => rows::<S, 4>,
                5 => rows_vbmi::<S, 5>,
                6 => rows_vbmi::<S, 6>,
                _ => rows::<S, 8>,
            };
            let a = args(&[]);
            return in_tasks(row_bytes, outs, |m, r0, o| unsafe {
                rows(&a[m], &d, r0, o)
            });
        }
    }
    // The float kernels: the permuted `x` for the blocked layouts.
    let blocked = blocked(p, row_words);
    let xp = if blocked { permute(x, p.bits) } else { vec![] };
    let a = args(&xp);
    let rows = select_rows::<S>(blocked, p.bits, isa.min(Isa::Avx512));
    in_tasks(row_bytes, outs, |m, r0, o| rows(&a[m], r0, o));
}

/// Runs `rows(m, r0, out)` over the rows of every `outs[m]`: in parallel
/// tasks of about [`TASK_BYTES`] packed bytes (each inside one matrix), or
/// on this thread below [`PAR_BYTES`] in all.
fn in_tasks(
    row_bytes: usize,
    outs: &mut [&mut [f32]],
    rows: impl Fn(usize, usize, &mut [f32]) + Sync,
) {
    let total: usize = outs.iter().map(|o| o.len() * row_bytes).sum();
    if total < PAR_BYTES {
        for (m, o) in outs.iter_mut().enumerate() {
            rows(m, 0, o);
        }
        return;
    }
    let per_task = (TASK_BYTES / row_bytes.max(1)).max(1);
    let tasks: Vec<(usize, usize, &mut [f32])> = outs
        .iter_mut()
        .enumerate()
        .flat_map(|(m, o)| {
            o.chunks_mut(per_task)
                .enumerate()
                .map(move |(t, o)| (m, t * per_task, o))
        })
        .collect();
    tasks.into_par_iter().for_each(|(m, r0, o)| rows(m, r0, o));
}

/// Computes rows `r0..r0 + out.len()`.
type RowsFn<S> = fn(&Args<'_, S>, usize, &mut [f32]);

/// The row kernel for this width and instruction set.
fn select_rows<S: Float>(blocked: bool, bits: usize, isa: Isa) -> RowsFn<S> {
    #[cfg(target_arch = "x86_64")]
    {
        use super::qgemv256::rows as rows256;
        use super::qgemv512::rows as rows512;
        // SAFETY (each arm): `isa` is one the CPU has (see `qgemv_with`):
        // AVX-512F/DQ with AVX2 and FMA, or AVX2 and FMA, the features
        // these functions are compiled for.
        match (isa, blocked, bits) {
            (Isa::Avx512, true, 2) => return |a, r0, o| unsafe { rows512::<S, 2, 16>(a, r0, o) },
            (Isa::Avx512, true, 4) => return |a, r0, o| unsafe { rows512::<S, 4, 8>(a, r0, o) },
            (Isa::Avx512, true, 8) => return |a, r0, o| unsafe { rows512::<S, 8, 4>(a, r0, o) },
            (Isa::Portable, ..) => {}
            (_, true, 2) => return |a, r0, o| unsafe { rows256::<S, 2, 16>(a, r0, o) },
            // 3, 5 and 6 bits run the 256-bit kernel on AVX-512 CPUs too.
            (_, true, 3) => return |a, r0, o| unsafe { rows256::<S, 3, 8>(a, r0, o) },
            (_, true, 4) => return |a, r0, o| unsafe { rows256::<S, 4, 8>(a, r0, o) },
            (_, true, 5) => return |a, r0, o| unsafe { rows256::<S, 5, 8>(a, r0, o) },
            (_, true, 6) => return |a, r0, o| unsafe { rows256::<S, 6, 4>(a, r0, o) },
            (_, true, 8) => return |a, r0, o| unsafe { rows256::<S, 8, 4>(a, r0, o) },
            _ => return |a, r0, o| unsafe { grouped_fma(a, r0, o) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = isa;
    match (blocked, bits) {
        (true, 2) => rows_blocked::<S, 2, 16, false>,
        (true, 3) => rows_blocked::<S, 3, 8, false>,
        (true, 4) => rows_blocked::<S, 4, 8, false>,
        (true, 5) => rows_blocked::<S, 5, 8, false>,
        (true, 6) => rows_blocked::<S, 6, 4, false>,
        (true, 8) => rows_blocked::<S, 8, 4, false>,
        _ => rows_grouped,
    }
}

/// [`rows_blocked`] compiled with AVX2 + FMA, using fused multiply-adds:
/// the bits `qgemv256` (and, row by row, `qgemv512`) must give.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`](super::simd::has_fma)).
#[cfg(all(test, target_arch = "x86_64"))]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_fma<S: Float, const BITS: u32, const P: usize>(
    a: &Args<'_, S>,
    r0: usize,
    out: &mut [f32],
) {
    rows_blocked::<S, BITS, P, true>(a, r0, out)
}

/// [`rows_grouped`] compiled with AVX2 + FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`](super::simd::has_fma)).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn grouped_fma<S: Float>(a: &Args<'_, S>, r0: usize, out: &mut [f32]) {
    rows_grouped(a, r0, out)
}

/// Operands shared by the tasks.
pub(super) struct Args<'a, S> {
    pub(super) x: &'a [f32],
    /// `x` permuted and scaled for the blocked kernel (empty otherwise).
    pub(super) xp: &'a [f32],
    /// Σ x over each group.
    pub(super) xsums: &'a [f32],
    pub(super) w: &'a QRows<'a, S>,
    pub(super) p: QParams,
    pub(super) row_words: usize,
}

impl<'a, S> Args<'a, S> {
    /// The arguments of each of `ws`, which share the rest.
    fn each(
        ws: &'a [QRows<'a, S>],
        x: &'a [f32],
        xp: &'a [f32],
        xsums: &'a [f32],
        p: QParams,
        row_words: usize,
    ) -> Vec<Args<'a, S>> {
        ws.iter()
            .map(|w| Args {
                x,
                xp,
                xsums,
                w,
                p,
                row_words,
            })
            .collect()
    }

    /// Row `r` of W: its packed words, its scales and its biases (one per
    /// group of `x`, as `xsums` holds).
    #[inline(always)]
    pub(super) fn row(&self, r: usize) -> (&'a [u32], &'a [S], &'a [S]) {
        let (rw, gpr) = (self.row_words, self.xsums.len());
        let groups = r * gpr..(r + 1) * gpr;
        (
            &self.w.packed[r * rw..(r + 1) * rw],
            &self.w.scales[groups.clone()],
            &self.w.biases[groups],
        )
    }
}

/// `x` reordered so that value `j` of lane `i` in each block of
/// [`LANES`] lanes (`P` values a lane, see [`lane_values`]) meets its
/// input at `j * 8 + i`, and scaled by `2^-t` where value `j` lies at bit
/// `t` of its window ([`window`]): the kernel masks the value in place
/// instead of shifting it down, which multiplies it by `2^t` (exactly: a
/// power of two). A value at the window's top is shifted down instead
/// ([`shifted_down`]) and its input kept. The products are the same; one
/// instruction a value less.
fn permute(x: &[f32], bits: usize) -> Vec<f32> {
    match bits {
        2 => permute_planes::<2, 16>(x),
        3 => permute_planes::<3, 8>(x),
        4 => permute_planes::<4, 8>(x),
        5 => permute_planes::<5, 8>(x),
        6 => permute_planes::<6, 4>(x),
        _ => permute_planes::<8, 4>(x),
    }
}

/// [`permute`] with `P` values a lane: fixed-size blocks, so the copy is
/// unrolled and unchecked.
fn permute_planes<const BITS: u32, const P: usize>(x: &[f32]) -> Vec<f32> {
    // 2^-t, exactly: an exponent field of 127 - t.
    let scales: [f32; P] = std::array::from_fn(|j| {
        if shifted_down(BITS, j) {
            1.0
        } else {
            f32::from_bits((127 - window(BITS, j).1) << 23)
        }
    });
    let mut xp = vec![0f32; x.len()];
    let blocks = x
        .chunks_exact(LANES * P)
        .zip(xp.chunks_exact_mut(LANES * P));
    for (src, dst) in blocks {
        for i in 0..LANES {
            for (j, &scale) in scales.iter().enumerate() {
                dst[j * LANES + i] = src[i * P + j] * scale;
            }
        }
    }
    xp
}

/// Σ x over each group of `gs`: [`LANES`] partial sums, then the rest of
/// the group, then the partial sums in order (a chain of additions an
/// eighth as long as one running sum's).
fn group_sums(x: &[f32], gs: usize) -> Vec<f32> {
    x.chunks(gs)
        .map(|g| {
            let rows = g.chunks_exact(LANES);
            let tail: f32 = rows.remainder().iter().sum();
            let mut lanes = [0f32; LANES];
            for v in rows {
                for i in 0..LANES {
                    lanes[i] += v[i];
                }
            }
            lanes.iter().sum::<f32>() + tail
        })
        .collect()
}

/// Σ_g b_g · Σ x_g for one row's biases: [`LANES`] partial sums (so the
/// loop is one vector multiply and add per 8 groups), then the rest of the
/// groups, then the partial sums in order.
#[inline(always)]
pub(super) fn bias_term<S: Float>(biases: &[S], xsums: &[f32]) -> f32 {
    let (b8, s8) = (biases.chunks_exact(LANES), xsums.chunks_exact(LANES));
    let tail: f32 = (b8.remainder().iter().zip(s8.remainder()))
        .map(|(&b, &s)| b.to_f32() * s)
        .sum();
    let mut lanes = [0f32; LANES];
    for (b, s) in b8.zip(s8) {
        for i in 0..LANES {
            lanes[i] += b[i].to_f32() * s[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A row's result from the lanes of its scaled group sums: their sum in
/// order, then the bias term (the blocked kernels' last step).
#[inline(always)]
pub(super) fn finish<S: Float>(lanes: &[f32], biases: &[S], xsums: &[f32]) -> f32 {
    lanes.iter().sum::<f32>() + bias_term(biases, xsums)
}

/// `a * b + c`, fused when `FMA` (only in code compiled for FMA: elsewhere
/// it would be a library call).
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// Rows `r0..r0 + out.len()` with `BITS` in 2..=6 or 8 (`P` values a
/// lane, see [`lane_values`]) and whole blocks in a row ([`blocked`]).
#[inline(always)]
pub(super) fn rows_blocked<S: Float, const BITS: u32, const P: usize, const FMA: bool>(
    a: &Args<'_, S>,
    r0: usize,
    out: &mut [f32],
) {
    let (wpg, bw) = (a.p.words_per_group(), block_words(BITS));
    for (r, o) in (r0..).zip(out.iter_mut()) {
        let (words, scales, biases) = a.row(r);
        if FMA {
            prefetch_ahead(words);
        }
        let mut acc = [0f32; LANES];
        if wpg >= bw {
            // Whole blocks per group: one scale for the group's lanes.
            for (g, (gw, xg)) in words
                .chunks_exact(wpg)
                .zip(a.xp.chunks_exact(wpg / bw * LANES * P))
                .enumerate()
            {
                let mut d = [[0f32; LANES]; 2];
                for (bw, bx) in gw.chunks_exact(bw).zip(xg.chunks_exact(LANES * P)) {
                    block_dot::<BITS, P, FMA>(bw, bx, &mut d);
                }
                let s = scales[g].to_f32();
                for i in 0..LANES {
                    acc[i] = madd::<FMA>(d[0][i] + d[1][i], s, acc[i]);
                }
            }
        } else {
            // Several groups per block: a scale per lane.
            let shift = lane_group_shift(a.p);
            for (b, (bw, bx)) in words
                .chunks_exact(bw)
                .zip(a.xp.chunks_exact(LANES * P))
                .enumerate()
            {
                let mut d = [[0f32; LANES]; 2];
                block_dot::<BITS, P, FMA>(bw, bx, &mut d);
                for i in 0..LANES {
                    let s = scales[(b * LANES + i) >> shift].to_f32();
                    acc[i] = madd::<FMA>(d[0][i] + d[1][i], s, acc[i]);
                }
            }
        }
        *o = finish(&acc, biases, a.xsums);
    }
}

/// For groups shorter than a block: log2 of the lanes a group spans, so
/// that lane `i` of block `b` lies in group `(b * LANES + i) >> shift`.
pub(super) fn lane_group_shift(p: QParams) -> u32 {
    let lanes = LANES * p.words_per_group() / block_words(p.bits as u32);
    lanes.trailing_zeros()
}

/// How far ahead of a row the packed words are fetched into cache: the
/// hardware prefetcher restarts on every task's rows and falls behind.
const PREFETCH_BYTES: usize = 2048;

/// Asks for the cache lines [`PREFETCH_BYTES`] past each of `row`'s.
#[inline(always)]
pub(super) fn prefetch_ahead(row: &[u32]) {
    let ahead = row.as_ptr().cast::<i8>().wrapping_add(PREFETCH_BYTES);
    super::simd::prefetch_lines(ahead, row.len() * 4);
}

/// `d[j % 2][i] += q_ij · 2^t · xp[j * 8 + i]` for one block (`q_ij`:
/// value `j` of lane `i`, masked in place at bit `t` of its window; one at
/// the window's top shifted down, see [`permute`]). Two accumulators halve
/// the chain of dependent additions.
#[inline(always)]
fn block_dot<const BITS: u32, const P: usize, const FMA: bool>(
    words: &[u32],
    xp: &[f32],
    d: &mut [[f32; LANES]; 2],
) {
    let mask = (1u32 << BITS) - 1;
    for j in 0..P {
        let xs: &[f32; LANES] = xp[j * LANES..(j + 1) * LANES].try_into().expect("8");
        let (byte, shift) = window(BITS, j);
        for i in 0..LANES {
            let w = lane_window::<BITS>(words, i, byte);
            let q = if shifted_down(BITS, j) {
                w >> shift
            } else {
                w & (mask << shift)
            };
            // Below 2^31, so the signed conversion (which vectorises) is exact.
            let q = q as i32 as f32;
            d[j % 2][i] = madd::<FMA>(q, xs[i], d[j % 2][i]);
        }
    }
}

/// The 32 bits of a block's packed stream (little-endian) from byte
/// `byte` of lane `i`; bytes past the block read as zero (no value of the
/// lane lies there).
#[inline(always)]
fn lane_window<const BITS: u32>(block: &[u32], i: usize, byte: usize) -> u32 {
    if lane_bytes(BITS) == 4 {
        return block[i];
    }
    bits_from(block, 8 * (i * lane_bytes(BITS) + byte)) as u32
}

/// Rows `r0..r0 + out.len()` for any width: each group unpacked to f32,
/// then a dot product with `x`.
#[inline(always)]
fn rows_grouped<S: Float>(a: &Args<'_, S>, r0: usize, out: &mut [f32]) {
    let (wpg, gs) = (a.p.words_per_group(), a.p.group_size);
    let mut vals = vec![0f32; gs];
    for (r, o) in (r0..).zip(out.iter_mut()) {
        let (words, scales, biases) = a.row(r);
        let mut acc = 0f32;
        for ((gw, xg), &s) in words
            .chunks_exact(wpg)
            .zip(a.x.chunks_exact(gs))
            .zip(scales)
        {
            unpack_group(gw, a.p.bits, &mut vals);
            acc += s.to_f32() * super::simd::dot_lanes(&vals, xg);
        }
        *o = acc + bias_term(biases, a.xsums);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};
    use proptest::prelude::*;

    /// Dequantize each row value by value, then dot with `x`, in f64; also
    /// Σ |term| for the tolerance.
    fn naive(x: &[f32], w: &QRows<'_, f32>, p: QParams) -> Vec<(f64, f64)> {
        let row_words = w.k * p.bits / 32;
        (0..w.n)
            .map(|r| {
                let words = &w.packed[r * row_words..(r + 1) * row_words];
                let (mut sum, mut mag) = (0f64, 0f64);
                for (j, &xj) in x.iter().enumerate() {
                    let g = r * (w.k / p.group_size) + j / p.group_size;
                    let q = super::super::quantized::get_bits(words, j * p.bits, p.bits);
                    let v = w.scales[g] as f64 * q as f64 + w.biases[g] as f64;
                    sum += v * xj as f64;
                    mag += (v * xj as f64).abs();
                }
                (sum, mag)
            })
            .collect()
    }

    /// The instruction sets this CPU can run.
    fn isas() -> Vec<Isa> {
        let best = Isa::best();
        [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .chain([Isa::Vnni])
            .filter(|&i| i <= best)
            .collect()
    }

    /// Runs the kernel for `isa` with scales and biases stored as `S`.
    fn run<S: Float>(
        x: &[f32],
        w: &QRows<'_, f32>,
        p: QParams,
        conv: fn(f32) -> S,
        isa: Isa,
    ) -> Vec<f32> {
        let s: Vec<S> = w.scales.iter().map(|&v| conv(v)).collect();
        let b: Vec<S> = w.biases.iter().map(|&v| conv(v)).collect();
        let q = QRows {
            packed: w.packed,
            scales: &s,
            biases: &b,
            n: w.n,
            k: w.k,
        };
        let mut out = vec![f32::NAN; w.n];
        qgemv_with(x, std::slice::from_ref(&q), p, &mut [&mut out[..]], isa);
        out
    }

    fn case() -> impl Strategy<Value = (usize, usize, usize, usize, u64, usize)> {
        (
            prop::sample::select(vec![1usize, 2, 3, 4, 5, 6, 8]),
            // MLX's group sizes, and one that is not a power of two (the
            // kernels are public; a vector of words may start mid-group).
            prop::sample::select(vec![32usize, 64, 96, 128]),
            // Rows of more than 16 groups too (the VNNI kernel reads a
            // row's scales and biases 16 at a time).
            prop_oneof![1usize..7, 17usize..41],
            // Odd and even row counts; the largest take the parallel path.
            prop_oneof![1usize..40, 300usize..700],
            any::<u64>(),
            0usize..3,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn matches_dequantize_then_dot((bits, gs, groups, n, seed, dtype) in case()) {
            let k = gs * groups;
            let p = QParams { group_size: gs, bits };
            let mut state = seed | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let unit = |v: u64| (v >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            let packed: Vec<u32> = (0..n * k * bits / 32).map(|_| next() as u32).collect();
            let round = |v: f32| match dtype {
                1 => f16::from_f32(v).to_f32(),
                2 => bf16::from_f32(v).to_f32(),
                _ => v,
            };
            // Scales and biases exactly representable in the stored dtype.
            let scales: Vec<f32> = (0..n * groups).map(|_| round(unit(next()) * 0.1)).collect();
            let biases: Vec<f32> = (0..n * groups).map(|_| round(unit(next()))).collect();
            let x: Vec<f32> = (0..k).map(|_| unit(next()) * 4.0).collect();
            let w = QRows { packed: &packed, scales: &scales, biases: &biases, n, k };
            let want = naive(&x, &w, p);
            let mut by_isa = Vec::new();
            for isa in isas() {
                let got = match dtype {
                    1 => run(&x, &w, p, f16::from_f32, isa),
                    2 => run(&x, &w, p, bf16::from_f32, isa),
                    _ => run(&x, &w, p, |v| v, isa),
                };
                for (r, (&g, &(want, mag))) in got.iter().zip(&want).enumerate() {
                    let err = (g as f64 - want).abs();
                    prop_assert!(err <= 1e-5 * mag + 1e-6, "{isa:?} row {r}: {g} vs {want} (bits {bits}, gs {gs}, k {k})");
                }
                by_isa.push((isa, got));
            }
            // The two-row AVX-512 kernel does each row's arithmetic exactly
            // as the AVX2 kernel does: the same bits.
            if let [_, (Isa::Avx2, a), (Isa::Avx512, b), ..] = &by_isa[..] {
                let (a, b): (Vec<u32>, Vec<u32>) = (
                    a.iter().map(|v| v.to_bits()).collect(),
                    b.iter().map(|v| v.to_bits()).collect(),
                );
                prop_assert_eq!(a, b, "bits {} gs {} k {} n {}", bits, gs, k, n);
            }
        }
    }

    /// Products sharing `x` as one call give each product's own bits, in
    /// one set of parallel tasks (above the threshold in all, not in each)
    /// and below it.
    #[test]
    fn many_products_of_one_row_give_each_products_bits() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for (bits, rows) in [
            (4, vec![192, 64, 192]),
            (3, vec![7, 300, 5]),
            (8, vec![2, 3]),
        ] {
            let (gs, k) = (64, 576);
            let p = QParams {
                group_size: gs,
                bits,
            };
            let x: Vec<f32> = (0..k).map(|_| next() * 4.0).collect();
            let mats: Vec<(Vec<u32>, Vec<f32>, Vec<f32>)> = rows
                .iter()
                .map(|&n| {
                    let packed = (0..n * k * bits / 32).map(|_| next().to_bits()).collect();
                    let scales = (0..n * k / gs).map(|_| next() * 0.1).collect();
                    let biases = (0..n * k / gs).map(|_| next()).collect();
                    (packed, scales, biases)
                })
                .collect();
            let ws: Vec<QRows<'_, f32>> = mats
                .iter()
                .zip(&rows)
                .map(|((packed, scales, biases), &n)| QRows {
                    packed,
                    scales,
                    biases,
                    n,
                    k,
                })
                .collect();
            let mut outs: Vec<Vec<f32>> = rows.iter().map(|&n| vec![f32::NAN; n]).collect();
            let mut refs: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[..]).collect();
            qgemv_many(&x, &ws, p, &mut refs);
            for (w, got) in ws.iter().zip(&outs) {
                let mut want = vec![f32::NAN; w.n];
                qgemv(&x, w, p, &mut want);
                let raw = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(raw(got), raw(&want), "bits {bits} rows {rows:?}");
            }
        }
    }

    /// The portable blocked kernel compiled with FMA, over all of `w`.
    #[cfg(target_arch = "x86_64")]
    fn portable_fma<S: Float>(x: &[f32], w: &QRows<'_, S>, p: QParams) -> Vec<f32> {
        let xsums = group_sums(x, p.group_size);
        let xp = permute(x, p.bits);
        let a = Args {
            x,
            xp: &xp,
            xsums: &xsums,
            w,
            p,
            row_words: w.k * p.bits / 32,
        };
        let mut out = vec![f32::NAN; w.n];
        // SAFETY: the caller checked `has_fma`.
        unsafe {
            match p.bits {
                2 => rows_fma::<S, 2, 16>(&a, 0, &mut out),
                3 => rows_fma::<S, 3, 8>(&a, 0, &mut out),
                4 => rows_fma::<S, 4, 8>(&a, 0, &mut out),
                5 => rows_fma::<S, 5, 8>(&a, 0, &mut out),
                6 => rows_fma::<S, 6, 4>(&a, 0, &mut out),
                _ => rows_fma::<S, 8, 4>(&a, 0, &mut out),
            }
        }
        out
    }

    /// The AVX2 intrinsics (`qgemv256`) do the portable kernel's arithmetic
    /// in its order: the same bits, for every blocked layout, scale type
    /// and the zero and negative-zero sums that start a group differently.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_intrinsics_give_the_portable_kernels_bits() {
        if !super::super::simd::has_fma() {
            return;
        }
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (bits, gs) in [2, 3, 4, 5, 6, 8]
            .into_iter()
            .flat_map(|bits| [32, 64, 128].map(|gs| (bits, gs)))
        {
            let p = QParams {
                group_size: gs,
                bits,
            };
            // The last row's last block is where 3- and 5-byte lanes'
            // loads would pass the matrix's end.
            let (n, k) = (37, 4 * 128);
            assert!(blocked(p, k * bits / 32), "bits {bits} gs {gs}");
            // Every fourth word zero (q = 0 against negative inputs gives
            // -0 products); x negative throughout its second group.
            let packed: Vec<u32> = (0..n * k * bits / 32)
                .map(|i| if i % 4 == 0 { 0 } else { next() as u32 })
                .collect();
            let x: Vec<f32> = (0..k)
                .map(|i| {
                    let v = (next() >> 40) as f32 / (1u64 << 24) as f32;
                    if (gs..2 * gs).contains(&i) {
                        -v
                    } else {
                        v - 0.5
                    }
                })
                .collect();
            let groups = n * k / gs;
            let scales: Vec<f32> = (0..groups).map(|g| 0.01 + (g % 9) as f32 / 64.0).collect();
            let biases: Vec<f32> = (0..groups).map(|g| (g % 5) as f32 / 4.0 - 0.5).collect();
            let check = |got: Vec<f32>, want: Vec<f32>, what: &str| {
                let bits_of = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits_of(&got), bits_of(&want), "{what}: bits {bits} gs {gs}");
            };
            let w = QRows {
                packed: &packed,
                scales: &scales,
                biases: &biases,
                n,
                k,
            };
            check(
                run(&x, &w, p, |v| v, Isa::Avx2),
                portable_fma(&x, &w, p),
                "f32",
            );
            let (s16, b16): (Vec<bf16>, Vec<bf16>) = (
                scales.iter().map(|&v| bf16::from_f32(v)).collect(),
                biases.iter().map(|&v| bf16::from_f32(v)).collect(),
            );
            let w16 = QRows {
                packed: &packed,
                scales: &s16,
                biases: &b16,
                n,
                k,
            };
            let widen = |v: &[bf16]| v.iter().map(|h| h.to_f32()).collect::<Vec<f32>>();
            let (s32, b32) = (widen(&s16), widen(&b16));
            let w32 = QRows {
                packed: &packed,
                scales: &s32,
                biases: &b32,
                n,
                k,
            };
            check(
                run(&x, &w32, p, bf16::from_f32, Isa::Avx2),
                portable_fma(&x, &w16, p),
                "bf16",
            );
            // A zero input: every product is +0 or -0, the rows Σ b · 0.
            let zeros = vec![0f32; k];
            check(
                run(&zeros, &w, p, |v| v, Isa::Avx2),
                portable_fma(&zeros, &w, p),
                "zero x",
            );
        }
    }

    /// A fixed 4-bit, group-64 matrix of `n` rows (values cycling through
    /// 0..15, scales and biases exactly representable).
    fn fixed(n: usize, k: usize) -> (Vec<u32>, Vec<f32>, Vec<f32>) {
        let packed = (0..n * k / 8)
            .map(|i| (i as u32).wrapping_mul(0x9E37_79B9))
            .collect();
        let groups = n * k / 64;
        let scales = (0..groups).map(|g| 0.25 + (g % 5) as f32 / 8.0).collect();
        let biases = (0..groups).map(|g| (g % 3) as f32 - 1.0).collect();
        (packed, scales, biases)
    }

    /// Runs every instruction set on `x` and checks each row against the
    /// f64 reference (NaN where it is NaN, equal where it is infinite).
    fn check_all_isas(x: &[f32], n: usize) {
        let k = x.len();
        let p = QParams {
            group_size: 64,
            bits: 4,
        };
        let (packed, scales, biases) = fixed(n, k);
        let w = QRows {
            packed: &packed,
            scales: &scales,
            biases: &biases,
            n,
            k,
        };
        let want = naive(x, &w, p);
        for isa in isas() {
            let got = run(x, &w, p, |v| v, isa);
            for (r, (&g, &(want, mag))) in got.iter().zip(&want).enumerate() {
                if !want.is_finite() {
                    // Σ_g s Σ q x + b Σ x: an infinite x times q = 0 is NaN
                    // there, where (s q + b) x is infinite.
                    assert!(!g.is_finite(), "{isa:?} row {r}: {g} vs {want}");
                } else {
                    let err = (g as f64 - want).abs();
                    assert!(err <= 1e-5 * mag + 1e-30, "{isa:?} row {r}: {g} vs {want}");
                }
            }
        }
    }

    #[test]
    fn non_finite_inputs_give_what_the_float_sums_give() {
        // NaN and infinities leave the integer kernel for the float ones.
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut x: Vec<f32> = (0..256).map(|i| (i % 7) as f32 - 3.0).collect();
            x[70] = bad;
            check_all_isas(&x, 6);
        }
    }

    #[test]
    fn outliers_and_extreme_ranges_keep_their_precision() {
        // An outlier 1000 times the rest of its group; a group of values
        // near f32's smallest normal (below the integer kernel's range); a
        // group near its largest finite magnitude (above it); a zero group.
        let mut x: Vec<f32> = (0..512)
            .map(|i| ((i * 37) % 101) as f32 / 101.0 - 0.5)
            .collect();
        x[3] = 500.0;
        for v in &mut x[64..128] {
            *v *= 1e-36;
        }
        for v in &mut x[128..192] {
            *v *= 1e37;
        }
        x[192..256].fill(0.0);
        check_all_isas(&x, 6);
        // Each on its own, so the integer kernel takes the outlier alone.
        check_all_isas(&x[..64], 6);
        check_all_isas(&[&x[..64], &x[192..256]].concat(), 6);
    }
}
