//! Affine quantization kernels: quantize (MLX's exact CPU algorithm and bit
//! packing), dequantize, and the quantized matrix product.
//!
//! Packing: the quantized values of a row form one little-endian bit
//! stream, value `j` at bit `j * bits`, stored as uint32 words. For 2, 4 and
//! 8 bits that is "lowest bits first in each word"; for 3, 5 and 6 bits it is
//! MLX's byte packing (8 values in 3 or 5 bytes, 4 values in 3 bytes), which
//! is the same stream. Every group (32, 64 or 128 values) fills whole words.

use super::fast::{mlx_round, Tile};
use super::scratch::{with_scratch, Slot};
use super::simd::with_fma;
use crate::backend::cpu::PAR_THRESHOLD;
use rayon::prelude::*;

/// Quantization parameters checked by the primitives before any kernel runs.
#[derive(Clone, Copy, Debug)]
pub struct QParams {
    /// Values per scale/bias pair (consecutive along the last axis).
    pub group_size: usize,
    /// Bits per value.
    pub bits: usize,
}

impl QParams {
    /// uint32 words holding one group.
    pub fn words_per_group(self) -> usize {
        self.group_size * self.bits / 32
    }
}

/// Affine quantization of `w` (rows of `groups * group_size` values, any
/// count) into packed words, scales and biases, computed in f32 exactly as
/// MLX's CPU kernel does (see mlxfn-format.md §9, Quantize).
pub fn quantize(w: &[f32], p: QParams) -> (Vec<u32>, Vec<f32>, Vec<f32>) {
    let n_groups = w.len() / p.group_size;
    let wpg = p.words_per_group();
    let mut packed = vec![0u32; n_groups * wpg];
    let mut scales = vec![0f32; n_groups];
    let mut biases = vec![0f32; n_groups];
    let one = |((g, words), (s, b)): ((usize, &mut [u32]), (&mut f32, &mut f32))| {
        let vals = &w[g * p.group_size..(g + 1) * p.group_size];
        let (scale, bias) = group_scale_bias(vals, p.bits);
        let n_bins = ((1u32 << p.bits) - 1) as f32;
        for (j, &x) in vals.iter().enumerate() {
            let q = mlx_round((x - bias) / scale).clamp(0.0, n_bins);
            put_bits(words, j * p.bits, p.bits, q as u32);
        }
        *s = scale;
        *b = bias;
    };
    if w.len() >= PAR_THRESHOLD {
        packed
            .par_chunks_mut(wpg.max(1))
            .enumerate()
            .zip(scales.par_iter_mut().zip(biases.par_iter_mut()))
            .for_each(one);
    } else {
        packed
            .chunks_mut(wpg.max(1))
            .enumerate()
            .zip(scales.iter_mut().zip(biases.iter_mut()))
            .for_each(one);
    }
    (packed, scales, biases)
}

/// MLX's scale and bias of one group: the extreme of larger magnitude is
/// represented exactly (it maps to 0 or `2^bits - 1`); one-bit groups use
/// (max − min, min) as MLX 0.32.4 does.
fn group_scale_bias(vals: &[f32], bits: usize) -> (f32, f32) {
    let n_bins = ((1u32 << bits) - 1) as f32;
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &x in vals {
        // std::max(a, b) / std::min(a, b): the first argument wins ties and NaN.
        hi = if hi < x { x } else { hi };
        lo = if x < lo { x } else { lo };
    }
    if bits == 1 {
        // MLX 0.32.4 maps one-bit groups onto [min, max] directly.
        return (((hi - lo) / n_bins).max(1e-7), lo);
    }
    let mask = lo.abs() > hi.abs();
    let mut scale = ((hi - lo) / n_bins).max(1e-7);
    if !mask {
        scale = -scale;
    }
    let edge = if mask { lo } else { hi };
    let q0 = mlx_round(edge / scale);
    if q0 != 0.0 {
        (edge / q0, edge)
    } else {
        (scale, 0.0)
    }
}

/// ORs `v` (of `bits` bits) into the stream at bit `pos`.
#[inline]
fn put_bits(words: &mut [u32], pos: usize, bits: usize, v: u32) {
    let (w, s) = (pos / 32, pos % 32);
    words[w] |= v << s;
    if s + bits > 32 {
        words[w + 1] |= v >> (32 - s);
    }
}

/// The value of `bits` bits at bit `pos` of the stream.
#[inline]
pub fn get_bits(words: &[u32], pos: usize, bits: usize) -> u32 {
    let (w, s) = (pos / 32, pos % 32);
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    };
    let mut v = words[w] >> s;
    if s + bits > 32 {
        v |= words[w + 1] << (32 - s);
    }
    v & mask
}

/// The stream from bit `pos` on, at least 40 bits of it where `pos % 32
/// <= 24` (a byte boundary is): the pair of words holding `pos`, shifted
/// down. Bits past the last word read as zero.
#[inline(always)]
pub(super) fn bits_from(words: &[u32], pos: usize) -> u64 {
    let (w, shift) = (pos / 32, pos % 32);
    let pair = words[w] as u64 | (words.get(w + 1).copied().unwrap_or(0) as u64) << 32;
    pair >> shift
}

/// Unpacks one group into `out` as f32 integers.
#[inline]
pub(super) fn unpack_group(words: &[u32], bits: usize, out: &mut [f32]) {
    if bits == 4 || bits == 8 || bits == 2 {
        // Fast path: values never straddle words.
        let per = 32 / bits;
        let mask = (1u32 << bits) - 1;
        for (i, o) in out.chunks_mut(per).enumerate() {
            let mut w = words[i];
            for x in o {
                *x = (w & mask) as f32;
                w >>= bits;
            }
        }
        return;
    }
    match bits {
        3 | 5 | 6 if out.len().is_multiple_of(8) => unpack_lanes(words, bits, out, |q| q),
        _ => {
            for (j, o) in out.iter_mut().enumerate() {
                *o = get_bits(words, j * bits, bits) as f32;
            }
        }
    }
}

/// `out[j] = f(q_j)` for one group of 3, 5 or 6 bits (a multiple of 8
/// values).
#[inline(always)]
fn unpack_lanes(words: &[u32], bits: usize, out: &mut [f32], f: impl Fn(f32) -> f32) {
    match bits {
        3 => unpack_bytes::<3, 8>(words, out, f),
        5 => unpack_bytes::<5, 8>(words, out, f),
        _ => unpack_bytes::<6, 4>(words, out, f),
    }
}

/// [`unpack_lanes`] `P` values (whole bytes: 3, 5 or 3 of them, starting
/// on a byte) at a time: the run of bytes is one [`bits_from`] away, and
/// its values are shifts of that.
#[inline(always)]
fn unpack_bytes<const BITS: usize, const P: usize>(
    words: &[u32],
    out: &mut [f32],
    f: impl Fn(f32) -> f32,
) {
    let mask = (1u64 << BITS) - 1;
    for (l, o) in out.chunks_exact_mut(P).enumerate() {
        let lane = bits_from(words, l * BITS * P);
        for (j, o) in o.iter_mut().enumerate() {
            *o = f(((lane >> (BITS * j)) & mask) as f32);
        }
    }
}

/// Dequantizes rows of packed words: `out[i] = round(round(s * q) + b)`
/// where each step rounds to the output type through `round_t` (identity
/// for f32), which reproduces MLX's Multiply-then-Add in the scales' dtype.
pub fn dequantize(
    packed: &[u32],
    scales: &[f32],
    biases: &[f32],
    p: QParams,
    round_t: fn(f32) -> f32,
) -> Vec<f32> {
    let n_groups = scales.len();
    let wpg = p.words_per_group();
    let mut out = vec![0f32; n_groups * p.group_size];
    let one = |(g, o): (usize, &mut [f32])| {
        let words = &packed[g * wpg..(g + 1) * wpg];
        let (s, b) = (scales[g], biases[g]);
        if round_t(0.1) == 0.1 {
            // f32 output: no rounding steps (and no call per element).
            dequantize_group(words, p.bits, s, b, o);
        } else {
            unpack_group(words, p.bits, o);
            o.iter_mut().for_each(|x| *x = round_t(round_t(s * *x) + b));
        }
    };
    if out.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(p.group_size).enumerate().for_each(one);
    } else {
        out.chunks_mut(p.group_size).enumerate().for_each(one);
    }
    out
}

/// [`dequantize`] in f32 on the calling thread, into `out`: a tile of a
/// product, dequantized by the task that multiplies it (splitting it
/// further over threads cost more than the work).
fn dequantize_tile(packed: &[u32], scales: &[f32], biases: &[f32], p: QParams, out: &mut [f32]) {
    let wpg = p.words_per_group();
    with_fma(|| {
        for (g, o) in out.chunks_exact_mut(p.group_size).enumerate() {
            dequantize_group(
                &packed[g * wpg..(g + 1) * wpg],
                p.bits,
                scales[g],
                biases[g],
                o,
            );
        }
    })
}

/// `out[i] = s * q_i + b` in f32 for one group's words.
#[inline(always)]
fn dequantize_group(words: &[u32], bits: usize, s: f32, b: f32, out: &mut [f32]) {
    match bits {
        2 => dequantize_words::<2>(words, s, b, out),
        4 => dequantize_words::<4>(words, s, b, out),
        8 => dequantize_words::<8>(words, s, b, out),
        3 | 5 | 6 if out.len().is_multiple_of(8) => unpack_lanes(words, bits, out, |q| s * q + b),
        _ => {
            unpack_group(words, bits, out);
            out.iter_mut().for_each(|x| *x = s * *x + b);
        }
    }
}

/// [`dequantize_group`] for `BITS` in {2, 4, 8}, whole words: each
/// word's values are independent shifts, which vectorize.
#[inline(always)]
fn dequantize_words<const BITS: usize>(words: &[u32], s: f32, b: f32, out: &mut [f32]) {
    let mask = (1u32 << BITS) - 1;
    for (&w, o) in words.iter().zip(out.chunks_exact_mut(32 / BITS)) {
        for (j, o) in o.iter_mut().enumerate() {
            *o = s * ((w >> (BITS * j)) & mask) as f32 + b;
        }
    }
}

/// One quantized matrix: packed words, scales and biases of one batch entry.
#[derive(Clone, Copy)]
pub struct QMatrix<'a> {
    /// Packed rows (`rows * row_words` words).
    pub packed: &'a [u32],
    /// Scales, `rows * cols / group_size`.
    pub scales: &'a [f32],
    /// Biases, like scales.
    pub biases: &'a [f32],
    /// Rows of the stored (packed) matrix.
    pub rows: usize,
    /// Unpacked columns of the stored matrix.
    pub cols: usize,
}

/// Rows of x below which `x @ W.T` uses per-group dot products instead of
/// dequantizing tiles for gemm.
const DIRECT_ROWS: usize = 4;
/// Output columns per dequantized tile.
const TILE: usize = 32;

/// `out (m × n) = x (m × k) @ W.T` where W (n × k) is stored quantized
/// (`transpose = true`, nn.QuantizedLinear's layout), or `x @ W` with W
/// (k × n) stored quantized (`transpose = false`). Computed in f32.
pub fn qmm(x: &[f32], m: usize, w: QMatrix<'_>, p: QParams, transpose: bool, out: &mut [f32]) {
    let (k, n) = if transpose {
        (w.cols, w.rows)
    } else {
        (w.rows, w.cols)
    };
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.iter_mut().for_each(|o| *o = 0.0);
        return;
    }
    if transpose && m <= DIRECT_ROWS {
        return qmv_t(x, m, w, p, out);
    }
    // Dequantize a tile of output columns, then one gemm per tile.
    let par = m * n * k >= PAR_THRESHOLD * 8;
    let tiles: Vec<usize> = if transpose {
        (0..n).step_by(TILE).collect()
    } else {
        // A tile must hold whole groups along n.
        (0..n).step_by(TILE.max(p.group_size)).collect()
    };
    let step = if transpose {
        TILE
    } else {
        TILE.max(p.group_size)
    };
    let dst = Tile::new(out);
    // With AVX-512, the kernels of `sgemm512` (x packed once).
    #[cfg(target_arch = "x86_64")]
    let packed = super::sgemm512::PackedA::new(x, m, k);
    // The product of one tile: `k x nb`, with strides (rs, cs).
    let times_tile = |n0: usize, nb: usize, tile: &[f32], (rhs_rs, rhs_cs): (isize, isize)| {
        #[cfg(target_arch = "x86_64")]
        if let Some(packed) = &packed {
            use super::sgemm512::{Out, View};
            let b = View {
                ptr: tile.as_ptr(),
                rs: rhs_rs,
                cs: rhs_cs,
            };
            let out = Out {
                ptr: dst.column(n0),
                ld: n,
                read: false,
                beta: 0.0,
            };
            // SAFETY: `tile` is the k x nb matrix the strides describe; each
            // tile writes the disjoint column block n0..n0+nb of out.
            return unsafe { packed.times(b, nb, out) };
        }
        // SAFETY: each tile writes the disjoint column block n0..n0+nb of out.
        unsafe { dst.gemm_block(m, nb, k, n0, n, x, k as isize, tile, rhs_rs, rhs_cs) };
    };
    let run = |&n0: &usize| {
        let nb = step.min(n - n0);
        if !transpose {
            return times_tile(n0, nb, &dequantize_columns(w, p, n0, nb), (nb as isize, 1));
        }
        // Rows n0..n0+nb of W: nb × k, used as k × nb with strides (1, k),
        // dequantized into this thread's kept buffer (a fresh one faulted
        // in its pages on every tile).
        let row_words = k * p.bits / 32;
        let gpr = k / p.group_size;
        with_scratch(Slot::Dequantized, nb * k, |tile| {
            dequantize_tile(
                &w.packed[n0 * row_words..(n0 + nb) * row_words],
                &w.scales[n0 * gpr..(n0 + nb) * gpr],
                &w.biases[n0 * gpr..(n0 + nb) * gpr],
                p,
                tile,
            );
            times_tile(n0, nb, tile, (1, k as isize))
        })
    };
    if par {
        tiles.par_iter().for_each(run);
    } else {
        tiles.iter().for_each(run);
    }
}

/// Columns n0..n0+nb (whole groups) of a k × n quantized W, as a k × nb
/// row-major f32 matrix.
fn dequantize_columns(w: QMatrix<'_>, p: QParams, n0: usize, nb: usize) -> Vec<f32> {
    let (k, n) = (w.rows, w.cols);
    let row_words = n * p.bits / 32;
    let gpr = n / p.group_size;
    let wpg = p.words_per_group();
    let mut out = vec![0f32; k * nb];
    for r in 0..k {
        let words = &w.packed[r * row_words..(r + 1) * row_words];
        for g in n0 / p.group_size..(n0 + nb) / p.group_size {
            let (s, b) = (w.scales[r * gpr + g], w.biases[r * gpr + g]);
            let dst = &mut out[r * nb + g * p.group_size - n0..][..p.group_size];
            dequantize_group(&words[g * wpg..(g + 1) * wpg], p.bits, s, b, dst);
        }
    }
    out
}

/// Output columns per task of [`qmv_t`].
const COLS_PER_TASK: usize = 32;

/// Few rows of x times W.T: for each output column and group,
/// `s · Σ x·q + b · Σ x` (the group sums of x are computed once). Columns
/// run in parallel; the inner loops use AVX2 + FMA when the CPU has them.
fn qmv_t(x: &[f32], m: usize, w: QMatrix<'_>, p: QParams, out: &mut [f32]) {
    let n = w.rows;
    let xsums: Vec<f32> = x
        .chunks(p.group_size)
        .map(|c| c.iter().sum::<f32>())
        .collect();
    let a = QmvArgs {
        x,
        m,
        w,
        p,
        xsums: &xsums,
    };
    let columns = select_columns();
    // Results column-major (n × m), transposed into `out` at the end.
    let mut out_t = vec![0f32; n * m];
    let chunk = COLS_PER_TASK * m;
    if n * w.cols >= PAR_THRESHOLD {
        out_t
            .par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, o)| columns(&a, i * COLS_PER_TASK, o));
    } else {
        out_t
            .chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, o)| columns(&a, i * COLS_PER_TASK, o));
    }
    for (c, col) in out_t.chunks(m).enumerate() {
        for (r, &v) in col.iter().enumerate() {
            out[r * n + c] = v;
        }
    }
}

/// Operands of [`qmv_t`] shared by its tasks.
struct QmvArgs<'a> {
    x: &'a [f32],
    m: usize,
    w: QMatrix<'a>,
    p: QParams,
    xsums: &'a [f32],
}

/// Computes columns c0.. (as many as `out` holds, m values each).
type ColumnsFn = fn(&QmvArgs<'_>, usize, &mut [f32]);

/// The column kernel for this CPU.
fn select_columns() -> ColumnsFn {
    #[cfg(target_arch = "x86_64")]
    if crate::backend::cpu::simd::has_fma() {
        // SAFETY: has_fma() checked the CPU supports AVX2 and FMA, the
        // features columns_avx2 is compiled for.
        return |a, c0, out| unsafe { columns_avx2(a, c0, out) };
    }
    columns_impl
}

/// [`columns_impl`] compiled with AVX2 + FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`has_fma`](crate::backend::cpu::simd::has_fma)).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn columns_avx2(a: &QmvArgs<'_>, c0: usize, out: &mut [f32]) {
    columns_impl(a, c0, out)
}

#[inline(always)]
fn columns_impl(a: &QmvArgs<'_>, c0: usize, out: &mut [f32]) {
    let (k, gs, bits) = (a.w.cols, a.p.group_size, a.p.bits);
    let gpr = k / gs;
    let row_words = k * bits / 32;
    let wpg = a.p.words_per_group();
    let mut vals = vec![0f32; gs];
    for (ci, acc) in out.chunks_mut(a.m).enumerate() {
        let c = c0 + ci;
        let words = &a.w.packed[c * row_words..(c + 1) * row_words];
        acc.iter_mut().for_each(|v| *v = 0.0);
        for g in 0..gpr {
            let gw = &words[g * wpg..(g + 1) * wpg];
            let (s, b) = (a.w.scales[c * gpr + g], a.w.biases[c * gpr + g]);
            if !matches!(bits, 2 | 4 | 8) {
                unpack_group(gw, bits, &mut vals);
            }
            for (r, o) in acc.iter_mut().enumerate() {
                let xs = &a.x[r * k + g * gs..][..gs];
                let dot = match bits {
                    4 => dot_packed::<4, 8>(gw, xs),
                    8 => dot_packed::<8, 4>(gw, xs),
                    2 => dot_packed::<2, 16>(gw, xs),
                    _ => super::simd::dot_lanes(&vals, xs),
                };
                *o += s * dot + b * a.xsums[r * gpr + g];
            }
        }
    }
}

/// Σ q·x over words holding `P = 32 / BITS` values each, lowest bits
/// first; one accumulator per lane so the loop vectorises.
#[inline(always)]
fn dot_packed<const BITS: u32, const P: usize>(words: &[u32], x: &[f32]) -> f32 {
    let mask = (1u32 << BITS) - 1;
    let mut acc = [0f32; P];
    for (&wd, xs) in words.iter().zip(x.chunks_exact(P)) {
        for j in 0..P {
            acc[j] += ((wd >> (BITS * j as u32)) & mask) as f32 * xs[j];
        }
    }
    acc.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every width's unpacking reads the values `get_bits` reads.
        #[test]
        fn unpack_group_reads_the_bit_stream(
            bits in prop::sample::select(vec![1usize, 2, 3, 4, 5, 6, 8]),
            gs in prop::sample::select(vec![32usize, 64, 128]),
            words in prop::collection::vec(any::<u32>(), 48),
        ) {
            let words = &words[..gs * bits / 32];
            let mut got = vec![f32::NAN; gs];
            unpack_group(words, bits, &mut got);
            let want: Vec<f32> = (0..gs).map(|j| get_bits(words, j * bits, bits) as f32).collect();
            prop_assert_eq!(got, want);
        }

        /// The dequantized-tile path of `qmm` (more than `DIRECT_ROWS`
        /// rows, `x @ W.T`) against sums in f64 of `x` times the values
        /// `get_bits` reads, scaled and shifted. Each case runs on the
        /// thread's kept buffers as the last left them (other shapes,
        /// other values), so a value the kernels did not write shows.
        #[test]
        fn tiled_product_matches_f64_sums(
            bits in prop::sample::select(vec![2usize, 3, 4, 6, 8]),
            gs in prop::sample::select(vec![32usize, 64]),
            m in 5usize..20,
            n in 1usize..70,
            groups in 1usize..5,
            seed in any::<u32>(),
        ) {
            let k = groups * gs;
            let p = QParams { group_size: gs, bits };
            let mut state = seed as u64 | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let words: Vec<u32> = (0..n * k * bits / 32).map(|_| next() as u32).collect();
            let unit = |v: u64| (v % 2001) as f32 / 1000.0 - 1.0;
            let scales: Vec<f32> = (0..n * groups).map(|_| unit(next()) / 8.0).collect();
            let biases: Vec<f32> = (0..n * groups).map(|_| unit(next())).collect();
            let x: Vec<f32> = (0..m * k).map(|_| unit(next())).collect();
            let w = QMatrix { packed: &words, scales: &scales, biases: &biases, rows: n, cols: k };
            let mut got = vec![f32::NAN; m * n];
            qmm(&x, m, w, p, true, &mut got);
            let row_bits = k * bits;
            for i in 0..m {
                for j in 0..n {
                    let (mut want, mut size) = (0f64, 0f64);
                    for c in 0..k {
                        let g = j * groups + c / gs;
                        let q = get_bits(&words, j * row_bits + c * bits, bits) as f64;
                        let t = x[i * k + c] as f64 * (scales[g] as f64 * q + biases[g] as f64);
                        want += t;
                        size += t.abs();
                    }
                    let err = (got[i * n + j] as f64 - want).abs();
                    prop_assert!(err <= 1e-5 * size + 1e-6, "({i}, {j}): {} vs {want}", got[i * n + j]);
                }
            }
        }
    }
}
