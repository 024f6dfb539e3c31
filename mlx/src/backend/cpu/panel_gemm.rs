//! Matrix products through widened panels: bfloat16 and float16 in MLX's
//! order (f32 products go to `sgemm512` or `gemm`).
//!
//! MLX's CPU build (x86 and Linux, no Accelerate) multiplies half-precision
//! matrices in f32: every output element is `Σ_k a[i,k] * b[k,j]` summed
//! strictly in `k` order, each product rounded to f32 before it is added
//! (one accumulator per element, no fused multiply-add), then
//! `alpha * sum (+ beta * c)` rounded to the half type once. Doing the same
//! gives MLX's bits, and it streams the half-precision weights in place: a
//! batch-1 layer (`x @ W.T`, a decode step) reads each weight once instead
//! of widening the whole matrix to f32 first.
//!
//! Columns are taken in blocks: a block of `b` is widened into an f32 panel
//! laid out `k`-major, then rows of `a` sweep it, up to 12 at a time, with
//! `BLOCK` accumulators each; with AVX-512 a task takes two blocks and 12
//! rows sweep both panels at once. Every output element is computed by one
//! task in one order, so the result does not depend on the thread count.
//!
//! Rows of `a` are stored in groups, k-major, and k is taken in steps
//! that keep a group's and a panel's slices in L1 ([`grouped`], [`KC`]).
//!
//! Both operands are half-precision values, so each product has at most 22
//! significant bits and is an f32 exactly unless it overflows or falls
//! below f32's normal range. Where the values of a panel and of `a` rule
//! that out (always for finite float16; for bfloat16, checked per panel),
//! a fused multiply-add gives the same bits as the product rounded and then
//! added, with half the instructions.

use super::matmul::{batch_offsets, MatrixView};
use super::num::Float;
use crate::buffer::Buffer;
use crate::Dtype;
use half::{bf16, f16};
use rayon::prelude::*;

/// Columns per panel (two 8-lane vectors).
const BLOCK: usize = 16;
/// Multiply-adds above which the blocks are spread over threads.
const PAR_WORK: usize = 1 << 18;
/// The same for one row per batch entry (a decode step's layers and
/// attention), which streams two bytes of `b` per multiply-add: from 64 KiB
/// of `b` read, two threads' bandwidth outweighs the hand-over.
const PAR_WORK_ONE_ROW: usize = 1 << 15;
/// Steps of k a kernel call takes (its group and panel slices, 12-16 KiB
/// each, stay in L1).
const KC: usize = 256;
/// Bytes of the left operand's rows (as f32) that one task sweeps: about
/// half of a core's L2 cache (1-2 MiB on current x86 cores).
const LHS_BYTES: usize = 1 << 20;

/// `out = alpha * (a @ b) + beta * c` over the last two axes, batched over the
/// leading ones; `out` is a row-major buffer of `out_shape` in `dtype`
/// (bfloat16 or float16). Without `c`, beta is ignored.
#[allow(clippy::too_many_arguments)]
pub fn addmm(
    out: &mut Buffer,
    dtype: Dtype,
    a: &MatrixView<'_>,
    b: &MatrixView<'_>,
    c: Option<&MatrixView<'_>>,
    alpha: f32,
    beta: f32,
    out_shape: &[i32],
) {
    let heap = "heap buffer";
    match dtype {
        Dtype::Bfloat16 => {
            let dst = out.as_mut_slice::<bf16>().expect(heap);
            addmm_typed(dst, a, b, c, alpha, beta, out_shape)
        }
        _ => {
            let dst = out.as_mut_slice::<f16>().expect(heap);
            addmm_typed(dst, a, b, c, alpha, beta, out_shape)
        }
    }
}

fn addmm_typed<T: Operand>(
    dst: &mut [T],
    a: &MatrixView<'_>,
    b: &MatrixView<'_>,
    c: Option<&MatrixView<'_>>,
    alpha: f32,
    beta: f32,
    out_shape: &[i32],
) {
    if dst.is_empty() {
        return;
    }
    let nd = out_shape.len();
    let (m, n) = (out_shape[nd - 2] as usize, out_shape[nd - 1] as usize);
    let k = a.shape[nd - 1] as usize;
    let batch = &out_shape[..nd - 2];
    let a_off = batch_offsets(batch, &a.data.strides[..nd - 2], a.data.offset);
    let b_off = batch_offsets(batch, &b.data.strides[..nd - 2], b.data.offset);
    let c_in = c.map(|c| widened::<T>(c, out_shape));
    // The left operands in f32, row-major (m x k per batch entry): small
    // beside the product, and read `n / BLOCK` times.
    let (a_rs, a_cs) = (a.data.strides[nd - 2], a.data.strides[nd - 1]);
    let lhs = widen_rows::<T>(a.data.buffer.as_slice::<T>(), &a_off, m, k, a_rs, a_cs);
    let lhs = grouped(lhs, m, k);
    let lhs_range = Magnitudes::of(&lhs);
    let (b_rs, b_cs) = (b.data.strides[nd - 2], b.data.strides[nd - 1]);
    let b_src = b.data.buffer.as_slice::<T>();
    let blocks = n.div_ceil(BLOCK);
    // Rows are taken in chunks whose f32 values fit in a core's L2 cache;
    // consecutive tasks share a chunk, so each chunk is read from memory once.
    let chunk_rows = if m * k * 4 <= LHS_BYTES {
        m
    } else {
        (LHS_BYTES / (4 * k) / 12 * 12).max(12)
    };
    let chunks = m.div_ceil(chunk_rows);
    // A task takes `per_task` neighbouring blocks: two where a kernel
    // sweeps two panels at once (see `sweep`), else one.
    let per_task = if sweeps_pairs(m) { 2 } else { 1 };
    let task_blocks = blocks.div_ceil(per_task);
    // Task `t`: batch entry `e`, rows from `i0`, blocks from `b0`.
    let place = |t: usize| {
        let (e, rc, tb) = (
            t / (task_blocks * chunks),
            t / task_blocks % chunks,
            t % task_blocks,
        );
        let i0 = rc * chunk_rows;
        let b0 = tb * per_task;
        (e, i0, chunk_rows.min(m - i0), b0, per_task.min(blocks - b0))
    };
    // Block `j0` of batch entry `e`: where column `jj` starts (`b`'s rows
    // along k), and where panel row `kk` starts (columns contiguous: `x @ W`,
    // attention's `scores @ V`; 16 neighbouring values of one row of `b`).
    let b_off = b_off.as_slice();
    let column = |e: usize, j0: usize| move |jj: usize| b_off[e] + (j0 + jj) as isize * b_cs;
    let panel_row =
        |e: usize, j0: usize| move |kk: usize| b_off[e] + kk as isize * b_rs + j0 as isize;
    let columns_contiguous = |j0: usize| b_cs == 1 && b_rs != 1 && BLOCK <= n - j0;
    // The sums of one block (`rows x BLOCK`) where one row reads `b` in
    // place, rows along k or columns contiguous; None where it goes
    // through a panel. (k = 0 leaves nothing to read: the panel's scalar
    // loop does nothing.)
    let in_place = |(e, j0): (usize, usize)| -> Option<[f32; BLOCK]> {
        if m != 1 || BLOCK > n - j0 || k == 0 {
            return None;
        }
        let x = &lhs[e * k..(e + 1) * k];
        if b_rs == 1 {
            row_times_rows(b_src, k, column(e, j0), x)
        } else if columns_contiguous(j0) {
            row_times_columns(b_src, k, panel_row(e, j0), x)
        } else {
            None
        }
    };
    // Block `j0`'s columns of `b`, widened into a `k x BLOCK` panel.
    let panel_of = |(e, j0): (usize, usize)| -> Vec<f32> {
        let mut panel = vec![0f32; k * BLOCK];
        if !(columns_contiguous(j0) && widen_columns(b_src, k, panel_row(e, j0), &mut panel)) {
            let width = BLOCK.min(n - j0);
            fill_panel(b_src, k, width, column(e, j0), b_rs, &mut panel);
        }
        panel
    };
    // The sums of rows `i0..i0 + rows` of entry `e` over the blocks at
    // `starts`, each widened into a panel and swept.
    let through_panels = |e: usize,
                          i0: usize,
                          rows: usize,
                          starts: &mut dyn Iterator<Item = (usize, usize)>|
     -> Vec<Vec<f32>> {
        let panels: Vec<Vec<f32>> = starts.map(panel_of).collect();
        let panels: Vec<&[f32]> = panels.iter().map(|p| p.as_slice()).collect();
        let fused = panels
            .iter()
            .all(|p| lhs_range.products_exact(&Magnitudes::of(p)));
        let lhs = &lhs[(e * m + i0) * k..(e * m + i0 + rows) * k];
        sweep(lhs, &panels, rows, k, fused)
    };
    if m == 1 && c_in.is_none() {
        // One row per batch entry (a decode step): each block's sums go
        // straight into `dst`, with no per-block buffers to gather.
        let one_block = |e: usize, j0: usize, out: &mut [T]| {
            let mut sums = in_place((e, j0)).unwrap_or_else(|| {
                let swept = through_panels(e, 0, 1, &mut std::iter::once((e, j0)));
                swept[0]
                    .as_slice()
                    .try_into()
                    .expect("one row of BLOCK sums")
            });
            let sums = &mut sums[..out.len()];
            if alpha != 1.0 {
                sums.iter_mut().for_each(|s| *s *= alpha);
            }
            narrow(sums, out);
        };
        let entries = dst.chunks_mut(n).enumerate();
        if a_off.len() * n * k >= PAR_WORK_ONE_ROW {
            let tasks: Vec<(usize, usize, &mut [T])> = entries
                .flat_map(|(e, row)| {
                    row.chunks_mut(BLOCK)
                        .enumerate()
                        .map(move |(b, out)| (e, b * BLOCK, out))
                })
                .collect();
            tasks
                .into_par_iter()
                .with_min_len(4)
                .for_each(|(e, j0, out)| one_block(e, j0, out));
        } else {
            for (e, row) in entries {
                for (b, out) in row.chunks_mut(BLOCK).enumerate() {
                    one_block(e, b * BLOCK, out);
                }
            }
        }
        return;
    }
    // Task `t`'s sums, `rows x BLOCK` per block.
    let sums_of = |(e, i0, rows, b0, nb): (usize, usize, usize, usize, usize)| -> Vec<Vec<f32>> {
        let mut starts = (b0..b0 + nb).map(|b| (e, b * BLOCK));
        let in_place = |start| in_place(start).map(|s| s.to_vec());
        if let Some(sums) = starts.clone().map(in_place).collect::<Option<Vec<_>>>() {
            return sums;
        }
        through_panels(e, i0, rows, &mut starts)
    };
    // One block's `rows x width` outputs (columns from `j0`) from its sums,
    // in the output type.
    let finish = |e: usize, i0: usize, rows: usize, j0: usize, mut sums: Vec<f32>| -> Vec<T> {
        let width = BLOCK.min(n - j0);
        let mut out = vec![T::zero(); rows * width];
        for (i, (sums, out)) in sums
            .chunks_exact_mut(BLOCK)
            .zip(out.chunks_exact_mut(width))
            .enumerate()
        {
            let sums = &mut sums[..width];
            if let Some(c) = &c_in {
                let at = (e * m + i0 + i) * n + j0;
                for (s, &c) in sums.iter_mut().zip(&c[at..at + width]) {
                    *s = alpha * *s + beta * c;
                }
            } else if alpha != 1.0 {
                // (x * 1 is x, NaN payloads included: the common case skips it.)
                sums.iter_mut().for_each(|s| *s *= alpha);
            }
            narrow(sums, out);
        }
        out
    };
    // Task `t`'s outputs, one `Vec` per block.
    let block = |t: usize| -> Vec<Vec<T>> {
        let (e, i0, rows, b0, nb) = place(t);
        let sums = sums_of((e, i0, rows, b0, nb));
        sums.into_iter()
            .enumerate()
            .map(|(b, sums)| finish(e, i0, rows, (b0 + b) * BLOCK, sums))
            .collect()
    };
    let tasks = a_off.len() * chunks * task_blocks;
    let parallel = a_off.len() * m * n * k >= PAR_WORK;
    let outs: Vec<Vec<Vec<T>>> = if parallel {
        (0..tasks)
            .into_par_iter()
            .with_min_len(4 / per_task)
            .map(block)
            .collect()
    } else {
        (0..tasks).map(block).collect()
    };
    // Blocks in order: (batch entry, row chunk, block).
    let outs: Vec<Vec<T>> = outs.into_iter().flatten().collect();
    // Output row `r` (batch entry r / m, row r % m) from its blocks.
    let write_row = |(r, dst): (usize, &mut [T])| {
        let (e, i) = (r / m, r % m);
        let (rc, i) = (i / chunk_rows, i % chunk_rows);
        let outs = &outs[(e * chunks + rc) * blocks..];
        for (out, dst) in outs.iter().zip(dst.chunks_mut(BLOCK)) {
            dst.copy_from_slice(&out[i * dst.len()..(i + 1) * dst.len()]);
        }
    };
    if n == 0 {
        // No columns: nothing to write (and no rows to chunk).
    } else if parallel {
        dst.par_chunks_mut(n).enumerate().for_each(write_row);
    } else {
        dst.chunks_mut(n).enumerate().for_each(write_row);
    }
}

/// Whether `m` rows are many enough for a task to sweep two panels at
/// once (a group of rows the pair kernel takes), on this CPU.
fn sweeps_pairs(m: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if lanes::pair_kernel(false).is_some() {
        return m >= lanes::PAIR_ROWS;
    }
    let _ = m;
    false
}

/// `lhs (m x k, rows in groups: [`grouped`]) @ panel (k x BLOCK)` for each
/// panel, as `m x BLOCK` sums each, every sum in `k` order.
/// `fused`: every product of an `lhs` and a `panel` value is exact in f32
/// ([`Magnitudes::products_exact`]), so a fused multiply-add rounds each
/// step as the product-then-sum does.
///
/// Two panels are swept together where the CPU has a kernel for it: each
/// row value read is multiplied into both, which halves the loads per
/// multiply-add (the one-panel kernel waits on loads, not arithmetic).
fn sweep(lhs: &[f32], panels: &[&[f32]], m: usize, k: usize, fused: bool) -> Vec<Vec<f32>> {
    let mut outs = vec![vec![0f32; m * BLOCK]; panels.len()];
    let mut start = 0;
    #[cfg(target_arch = "x86_64")]
    if let ([a, b], [out_a, out_b], Some(kernel)) =
        (panels, outs.as_mut_slice(), lanes::pair_kernel(fused))
    {
        let rows = lanes::PAIR_ROWS;
        while start + rows <= m {
            let group = &lhs[start * k..(start + rows) * k];
            let sums = start * BLOCK..(start + rows) * BLOCK;
            let (out_a, out_b) = (&mut out_a[sums.clone()], &mut out_b[sums]);
            // Half of `KC`: two panels' slices stay in L1 beside the group's.
            for k0 in (0..k).step_by(KC / 2) {
                let kc = (KC / 2).min(k - k0);
                let at = k0 * BLOCK..(k0 + kc) * BLOCK;
                // SAFETY: `pair_kernel` gives only a kernel whose
                // instructions the CPU has; slices as in `sweep_one`.
                unsafe {
                    kernel(
                        &group[k0 * rows..(k0 + kc) * rows],
                        [&a[at.clone()], &b[at]],
                        kc,
                        [&mut *out_a, &mut *out_b],
                    )
                };
            }
            start += rows;
        }
    }
    for (panel, out) in panels.iter().zip(&mut outs) {
        sweep_one(lhs, panel, m, k, fused, start, out);
    }
    outs
}

/// [`sweep`] for one panel and the rows from `start` on (those before are
/// done), into `out` (`m x BLOCK`).
fn sweep_one(
    lhs: &[f32],
    panel: &[f32],
    m: usize,
    k: usize,
    fused: bool,
    start: usize,
    out: &mut [f32],
) {
    let mut i = start;
    #[cfg(target_arch = "x86_64")]
    for (rows, kernel) in lanes::kernels(fused) {
        while i + rows <= m {
            // k in steps of KC: a step's slices of the group and the panel
            // stay in L1 while the group's sums carry on from the last step.
            let group = &lhs[i * k..(i + rows) * k];
            let sums = &mut out[i * BLOCK..(i + rows) * BLOCK];
            for k0 in (0..k).step_by(KC) {
                let kc = KC.min(k - k0);
                // SAFETY: `kernels` lists only kernels whose instructions
                // the CPU has; the group is k-major, so its values at
                // k0..k0 + kc are `rows * kc` neighbours; the panel's are
                // `kc * BLOCK`.
                unsafe {
                    kernel(
                        &group[k0 * rows..(k0 + kc) * rows],
                        &panel[k0 * BLOCK..(k0 + kc) * BLOCK],
                        kc,
                        sums,
                    )
                };
            }
            i += rows;
        }
    }
    let _ = fused;
    // Without the vector kernels: the same sums, plain loops.
    for i in i..m {
        let mut acc = [0f32; BLOCK];
        let row = &lhs[i * k..(i + 1) * k];
        for (p, &x) in panel.chunks_exact(BLOCK).zip(row) {
            for (s, &w) in acc.iter_mut().zip(p) {
                *s += x * w;
            }
        }
        out[i * BLOCK..(i + 1) * BLOCK].copy_from_slice(&acc);
    }
}

/// The rows `a_off[e] + i * rs` (`i < m`, `k` values `cs` apart) of `src`,
/// widened to f32, one after another.
fn widen_rows<T: Operand>(
    src: &[T],
    a_off: &[isize],
    m: usize,
    k: usize,
    rs: isize,
    cs: isize,
) -> Vec<f32> {
    let mut out = vec![0f32; a_off.len() * m * k];
    let starts = a_off
        .iter()
        .flat_map(|&o| (0..m as isize).map(move |i| o + i * rs));
    for (start, dst) in starts.zip(out.chunks_exact_mut(k.max(1))) {
        if cs == 1 {
            T::widen_slice(&src[start as usize..][..k], dst);
        } else {
            for (j, d) in dst.iter_mut().enumerate() {
                *d = src[(start + j as isize * cs) as usize].to_f32();
            }
        }
    }
    out
}

/// `rows` (row-major, `m x k` per batch entry) in the kernels' layout:
/// each entry's rows taken in groups of the kernels' row counts, largest
/// first ([`lanes::kernels`]; 12, 4, 1 with AVX-512), each group k-major
/// (its rows' values at k side by side). A kernel then reads one stream
/// at fixed offsets instead of a pointer per row; a group of one row, and
/// every row without vector kernels, is the row as it was.
fn grouped(rows: Vec<f32>, m: usize, k: usize) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    let sizes: Vec<usize> = lanes::kernels(false).iter().map(|&(r, _)| r).collect();
    #[cfg(not(target_arch = "x86_64"))]
    let sizes: Vec<usize> = Vec::new();
    // Only groups of one row fit (a decode step's m = 1): nothing moves.
    if sizes.iter().all(|&r| r == 1 || r > m) || k == 0 {
        return rows;
    }
    let mut out = vec![0f32; rows.len()];
    let entry = |(src, dst): (&[f32], &mut [f32])| {
        let mut i = 0;
        for &r in &sizes {
            while i + r <= m {
                let group = &mut dst[i * k..(i + r) * k];
                for (j, row) in src[i * k..(i + r) * k].chunks_exact(k).enumerate() {
                    for (d, &x) in group.iter_mut().skip(j).step_by(r).zip(row) {
                        *d = x;
                    }
                }
                i += r;
            }
        }
    };
    let pairs = rows.chunks_exact(m * k).zip(out.chunks_exact_mut(m * k));
    if rows.len() >= PAR_WORK {
        pairs.par_bridge().for_each(entry);
    } else {
        pairs.for_each(entry);
    }
    out
}

/// The largest and the smallest nonzero magnitude among some f32 values
/// (as bits without the sign; `smallest` is 0 when all are zero).
#[derive(Clone, Copy, Debug)]
struct Magnitudes {
    largest: u32,
    smallest: u32,
}

impl Magnitudes {
    fn of(v: &[f32]) -> Magnitudes {
        #[cfg(target_arch = "x86_64")]
        if super::simd::has_fma() {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { lanes::magnitudes(v) };
        }
        Magnitudes::of_values(v)
    }

    /// [`Magnitudes::of`], one value at a time.
    fn of_values(v: &[f32]) -> Magnitudes {
        // Zero minus one wraps to the top, so zeros never give the minimum.
        let (mut largest, mut below_smallest) = (0u32, u32::MAX);
        for x in v {
            let bits = x.to_bits() & 0x7FFF_FFFF;
            largest = largest.max(bits);
            below_smallest = below_smallest.min(bits.wrapping_sub(1));
        }
        Magnitudes {
            largest,
            smallest: below_smallest.wrapping_add(1),
        }
    }

    /// The magnitudes of both sets together.
    fn join(self, o: Magnitudes) -> Magnitudes {
        Magnitudes {
            largest: self.largest.max(o.largest),
            smallest: self
                .smallest
                .wrapping_sub(1)
                .min(o.smallest.wrapping_sub(1))
                .wrapping_add(1),
        }
    }

    /// Whether every product of a value of `self`'s set and one of
    /// `other`'s is an f32 exactly, so that a fused multiply-add gives the
    /// bits of a product rounded and then added. A product of two
    /// half-precision values has at most 22 significant bits, which f32's
    /// 24 hold, so it is exact when all values are finite and the extreme
    /// products lie in f32's normal range, [2^-126, 2^128). Always true
    /// for finite float16 values; for bfloat16 (f32's exponent range) it
    /// rules out products that overflow or fall below 2^-126.
    fn products_exact(&self, other: &Magnitudes) -> bool {
        const INF: u32 = 0x7F80_0000;
        if self.largest >= INF || other.largest >= INF {
            return false;
        }
        if self.smallest == 0 || other.smallest == 0 {
            // One side is all zeros: every product is zero.
            return true;
        }
        // The extreme products, exactly (f64 holds 2 x 24 bits).
        let product = |a: u32, b: u32| f32::from_bits(a) as f64 * f32::from_bits(b) as f64;
        product(self.largest, other.largest) < 2f64.powi(128)
            && product(self.smallest, other.smallest) >= 2f64.powi(-126)
    }
}

/// `c` (a view with the output's shape) as row-major f32.
fn widened<T: Float>(c: &MatrixView<'_>, out_shape: &[i32]) -> Vec<f32> {
    let src = c.data.buffer.as_slice::<T>();
    let mut out = Vec::with_capacity(out_shape.iter().map(|&d| d as usize).product());
    super::copy::for_each_row(out_shape, &c.data.strides, c.data.offset, |base, len, s| {
        out.extend((0..len as isize).map(|j| src[(base + j * s) as usize].to_f32()));
    });
    out
}

/// The element types this module multiplies: bfloat16 and float16.
#[cfg(target_arch = "x86_64")]
pub trait Operand: Float + lanes::Widen8 {
    /// `dst[i] = src[i]` as f32, a slice at a time (vector instructions
    /// where the CPU has them).
    fn widen_slice(src: &[Self], dst: &mut [f32]);
}
/// The element types this module multiplies: bfloat16 and float16.
#[cfg(not(target_arch = "x86_64"))]
pub trait Operand: Float {
    /// `dst[i] = src[i]` as f32, a slice at a time.
    fn widen_slice(src: &[Self], dst: &mut [f32]);
}
impl Operand for bf16 {
    fn widen_slice(src: &[Self], dst: &mut [f32]) {
        half::slice::HalfFloatSliceExt::convert_to_f32_slice(src, dst)
    }
}
impl Operand for f16 {
    fn widen_slice(src: &[Self], dst: &mut [f32]) {
        half::slice::HalfFloatSliceExt::convert_to_f32_slice(src, dst)
    }
}

/// `dst[i] = src[i]` rounded as MLX rounds (`Float::from_f32`, branch-free
/// for both types), in a loop compiled for AVX2 so that it vectorizes.
fn narrow<T: Float>(src: &[f32], dst: &mut [T]) {
    super::simd::with_fma(
        #[inline(always)]
        || {
            for (d, &x) in dst.iter_mut().zip(src) {
                *d = T::from_f32(x);
            }
        },
    )
}

/// Fills the first `width` columns of `panel` (`k x BLOCK`, k-major):
/// column `jj` holds `src[row(jj) + kk * rs]` for `kk < k`, as f32. Rows
/// contiguous along k (`rs` = 1) are transposed in registers, 16 at a time.
fn fill_panel<T: Operand>(
    src: &[T],
    k: usize,
    width: usize,
    row: impl Fn(usize) -> isize,
    rs: isize,
    panel: &mut [f32],
) {
    if rs == 1 && width == BLOCK && k > 0 && transpose_widen(src, k, &row, panel) {
        return;
    }
    for jj in 0..width {
        let base = row(jj);
        for (kk, p) in panel.iter_mut().skip(jj).step_by(BLOCK).take(k).enumerate() {
            *p = src[(base + kk as isize * rs) as usize].to_f32();
        }
    }
}

/// Fills `panel` (`k x BLOCK`, k-major) with the f32 values of `BLOCK` rows
/// of `src` that are contiguous along k, row `jj` starting at `row(jj)`,
/// eight by eight through in-register transposes. False (and `panel`
/// untouched) when the CPU lacks the instructions.
fn transpose_widen<T: Operand>(
    src: &[T],
    k: usize,
    row: impl Fn(usize) -> isize,
    panel: &mut [f32],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if lanes::available() {
        // SAFETY: the CPU has AVX2 and F16C (checked just above).
        unsafe { lanes::pack::<T>(src, k, row, panel) };
        return true;
    }
    let _ = (src, k, row, panel);
    false
}

/// Fills `panel` (`k x BLOCK`) with the f32 values of `BLOCK` neighbouring
/// values at `start(kk)` for each `kk`, widened eight at a time. False (and
/// `panel` untouched) when the CPU lacks the instructions.
fn widen_columns<T: Operand>(
    src: &[T],
    k: usize,
    start: impl Fn(usize) -> isize,
    panel: &mut [f32],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if lanes::available() {
        // SAFETY: the CPU has AVX2 and F16C (checked just above).
        unsafe { lanes::widen_columns::<T>(src, k, start, panel) };
        return true;
    }
    let _ = (src, k, start, panel);
    false
}

/// `x . row(jj)` for the `BLOCK` rows (contiguous along k) a batch-1 layer
/// `x @ W.T` reads, without a panel: each 8 x 8 block is transposed in
/// registers and added in k order. None when the CPU lacks the instructions.
fn row_times_rows<T: Operand>(
    src: &[T],
    k: usize,
    row: impl Fn(usize) -> isize,
    x: &[f32],
) -> Option<[f32; BLOCK]> {
    #[cfg(target_arch = "x86_64")]
    {
        let (first, stride) = (row(0), row(1) - row(0));
        if std::mem::size_of::<T>() == 2 && stride >= 0 && first >= 0 {
            // SAFETY: a two-byte Operand is bfloat16 or float16, plain
            // 16-bit patterns; the view covers the same memory as `src`.
            let bits = unsafe { std::slice::from_raw_parts(src.as_ptr() as *const u16, src.len()) };
            let (first, stride) = (first as usize, stride as usize);
            if super::simd::has_avx512() {
                // SAFETY: the CPU has AVX-512F and AVX2 (checked just above).
                return Some(unsafe {
                    if T::SPLITS_BY_MASK {
                        super::half_rows512::dot16::<true>(bits, first, stride, k, x)
                    } else {
                        super::half_rows512::dot16::<false>(bits, first, stride, k, x)
                    }
                });
            }
            if lanes::available() {
                // SAFETY: the CPU has AVX2 and F16C (checked just above).
                return Some(unsafe { lanes::dot16::<T>(bits, first, stride, k, x) });
            }
        }
    }
    let _ = (src, k, row, x);
    None
}

/// `x @ W[:, j0..j0 + BLOCK]` for one row `x`, where the `BLOCK` values of
/// `W`'s row `kk` are neighbours at `start(kk)` (a decode step's
/// `scores @ V`): each sum in k order, products rounded before they are
/// added, read in place without a panel. None when the CPU lacks the
/// instructions.
fn row_times_columns<T: Operand>(
    src: &[T],
    k: usize,
    start: impl Fn(usize) -> isize,
    x: &[f32],
) -> Option<[f32; BLOCK]> {
    #[cfg(target_arch = "x86_64")]
    {
        let (first, stride) = (start(0), start(1) - start(0));
        if lanes::available() && first >= 0 && stride >= 0 {
            // SAFETY: the CPU has AVX2 and F16C (checked just above).
            return Some(unsafe { lanes::axpy16::<T>(src, first as usize, stride as usize, k, x) });
        }
    }
    let _ = (src, k, start, x);
    None
}

#[cfg(target_arch = "x86_64")]
mod lanes {
    use super::super::simd::transpose8;
    use super::BLOCK;
    use std::arch::x86_64::*;

    /// Whether the CPU has what the vector paths use (AVX2, F16C).
    pub fn available() -> bool {
        super::super::simd::has_fma() && is_x86_feature_detected!("f16c")
    }

    /// Eight values at a pointer as f32 vector lanes.
    pub trait Widen8: super::Float {
        /// # Safety
        /// `p..p + 8` must be readable; the caller's target features must
        /// cover the instructions (AVX2, and F16C for float16).
        unsafe fn widen8(p: *const Self) -> __m256;

        /// Whether a 32-bit word holding two values widens to two f32 by
        /// a shift and a mask, no shuffle (true of bfloat16, the top half
        /// of an f32).
        const SPLITS_BY_MASK: bool = false;
    }

    impl Widen8 for half::bf16 {
        const SPLITS_BY_MASK: bool = true;

        /// A bfloat16 is the top half of an f32.
        #[inline(always)]
        unsafe fn widen8(p: *const Self) -> __m256 {
            let v = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
            _mm256_castsi256_ps(_mm256_slli_epi32(v, 16))
        }
    }

    impl Widen8 for half::f16 {
        #[inline(always)]
        unsafe fn widen8(p: *const Self) -> __m256 {
            _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
        }
    }

    /// See [`super::transpose_widen`].
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn pack<T: Widen8>(
        src: &[T],
        k: usize,
        row: impl Fn(usize) -> isize,
        panel: &mut [f32],
    ) {
        assert!(panel.len() >= k * BLOCK);
        let rows: [&[T]; BLOCK] = std::array::from_fn(|jj| &src[row(jj) as usize..][..k]);
        let full = k / 8 * 8;
        for half in 0..BLOCK / 8 {
            let rows = &rows[half * 8..half * 8 + 8];
            for kk in (0..full).step_by(8) {
                // SAFETY: kk + 8 <= k = each row's length; the CPU checks
                // are the caller's.
                let r: [__m256; 8] = std::array::from_fn(|j| T::widen8(rows[j].as_ptr().add(kk)));
                let c = transpose8(r);
                for (i, col) in c.iter().enumerate() {
                    // SAFETY: (kk + i) * BLOCK + half * 8 + 8 <= k * BLOCK <= panel.len().
                    _mm256_storeu_ps(panel.as_mut_ptr().add((kk + i) * BLOCK + half * 8), *col);
                }
            }
        }
        for (jj, r) in rows.iter().enumerate() {
            for kk in full..k {
                panel[kk * BLOCK + jj] = r[kk].to_f32();
            }
        }
    }

    /// See [`super::widen_columns`].
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn widen_columns<T: Widen8>(
        src: &[T],
        k: usize,
        start: impl Fn(usize) -> isize,
        panel: &mut [f32],
    ) {
        for (kk, dst) in panel.chunks_exact_mut(BLOCK).take(k).enumerate() {
            let from = &src[start(kk) as usize..][..BLOCK];
            // SAFETY: `from` and `dst` hold BLOCK = 16 values each.
            _mm256_storeu_ps(dst.as_mut_ptr(), T::widen8(from.as_ptr()));
            _mm256_storeu_ps(dst.as_mut_ptr().add(8), T::widen8(from.as_ptr().add(8)));
        }
    }

    /// See [`super::row_times_columns`]: row `kk`'s sixteen values at
    /// `src[first + kk * stride..]`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn axpy16<T: Widen8>(
        src: &[T],
        first: usize,
        stride: usize,
        k: usize,
        x: &[f32],
    ) -> [f32; BLOCK] {
        assert!(x.len() >= k);
        assert!(k == 0 || first + (k - 1) * stride + BLOCK <= src.len());
        let mut from = src.as_ptr().add(first);
        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for &xk in &x[..k] {
            let xv = _mm256_set1_ps(xk);
            // SAFETY: `from` is row kk's block, inside `src` (asserted above).
            lo = _mm256_add_ps(lo, _mm256_mul_ps(xv, T::widen8(from)));
            hi = _mm256_add_ps(hi, _mm256_mul_ps(xv, T::widen8(from.add(8))));
            from = from.wrapping_add(stride);
        }
        let mut out = [0f32; BLOCK];
        // SAFETY: `out` holds BLOCK = 16 f32.
        _mm256_storeu_ps(out.as_mut_ptr(), lo);
        _mm256_storeu_ps(out.as_mut_ptr().add(8), hi);
        out
    }

    /// See [`super::row_times_rows`]: the sixteen rows
    /// `src[first + j * stride..][..k]` of `T`'s bits.
    ///
    /// # Safety
    /// The CPU must have AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub unsafe fn dot16<T: Widen8>(
        src: &[u16],
        first: usize,
        stride: usize,
        k: usize,
        x: &[f32],
    ) -> [f32; BLOCK] {
        assert!(x.len() >= k && first + (BLOCK - 1) * stride + k <= src.len());
        let base = src.as_ptr().add(first);
        let row = |j: usize| base.add(j * stride);
        // The next sixteen rows, walked linearly a kilobyte per 32 values
        // of k (all of them when rows are contiguous): a decode layer's
        // rows are short, and sixteen interleaved row streams defeat the
        // hardware's stream detection. A hint: addresses past the matrix
        // are fine.
        let next = base.wrapping_add(BLOCK * stride) as *const i8;
        let prefetch = |kk: usize| {
            if kk.is_multiple_of(32) {
                super::super::simd::prefetch_lines(next.wrapping_add(kk / 32 * 1024), 1024);
            }
        };
        let full = k / 8 * 8;
        // Two independent accumulators (rows 0-7, 8-15) hide the add latency.
        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut start = 0;
        if T::SPLITS_BY_MASK {
            // 16 values of k a row, taken as 8 words of two: one 8 x 8
            // word transpose per 8 rows gives, per word, the 8 rows'
            // values at k (low halves) and k + 1 (high halves); a shift and
            // a mask widen them. A third of the shuffles of widening first.
            let pairs = k / 16 * 16;
            let high = _mm256_set1_epi32(0xFFFF_0000u32 as i32);
            // SAFETY (both loads): kk + 16 <= k, inside each row (asserted above).
            let words = |j: usize, kk: usize| _mm256_loadu_ps(row(j).add(kk) as *const f32);
            for kk in (0..pairs).step_by(16) {
                prefetch(kk);
                let a = transpose8(std::array::from_fn(|j| words(j, kk)));
                let b = transpose8(std::array::from_fn(|j| words(8 + j, kk)));
                for i in 0..8 {
                    // SAFETY: kk + 2i + 1 < kk + 16 <= k <= x.len().
                    let (x0, x1) = (
                        _mm256_set1_ps(*x.get_unchecked(kk + 2 * i)),
                        _mm256_set1_ps(*x.get_unchecked(kk + 2 * i + 1)),
                    );
                    let (a, b) = (_mm256_castps_si256(a[i]), _mm256_castps_si256(b[i]));
                    let even = |w| _mm256_castsi256_ps(_mm256_slli_epi32::<16>(w));
                    let odd = |w| _mm256_castsi256_ps(_mm256_and_si256(w, high));
                    lo = _mm256_add_ps(lo, _mm256_mul_ps(x0, even(a)));
                    hi = _mm256_add_ps(hi, _mm256_mul_ps(x0, even(b)));
                    lo = _mm256_add_ps(lo, _mm256_mul_ps(x1, odd(a)));
                    hi = _mm256_add_ps(hi, _mm256_mul_ps(x1, odd(b)));
                }
            }
            start = pairs;
        }
        for kk in (start..full).step_by(8) {
            prefetch(kk);
            // SAFETY: kk + 8 <= k, inside each row (asserted above).
            let widen = |j: usize| T::widen8(row(j).add(kk) as *const T);
            let a = transpose8(std::array::from_fn(widen));
            let b = transpose8(std::array::from_fn(|j| widen(8 + j)));
            for i in 0..8 {
                // SAFETY: kk + i < kk + 8 <= k <= x.len().
                let xi = _mm256_set1_ps(*x.get_unchecked(kk + i));
                lo = _mm256_add_ps(lo, _mm256_mul_ps(xi, a[i]));
                hi = _mm256_add_ps(hi, _mm256_mul_ps(xi, b[i]));
            }
        }
        let mut out = [0f32; BLOCK];
        _mm256_storeu_ps(out.as_mut_ptr(), lo);
        _mm256_storeu_ps(out.as_mut_ptr().add(8), hi);
        for (j, o) in out.iter_mut().enumerate() {
            for (kk, &xk) in x.iter().enumerate().take(k).skip(full) {
                // SAFETY: kk < k, inside row j (asserted above).
                *o += xk * (*(row(j).add(kk) as *const T)).to_f32();
            }
        }
        out
    }

    /// A kernel `out (R x BLOCK) += rows (R x k, k-major) @ panel (k x BLOCK)` for
    /// some row count R: every sum in k order, each product rounded before
    /// it is added or, fused, added exactly where the caller has checked
    /// that the product is an f32 already.
    pub type Kernel = unsafe fn(&[f32], &[f32], usize, &mut [f32]);

    /// The kernels this CPU runs, most rows first (the last takes one
    /// row); empty without AVX2 + FMA.
    pub fn kernels(fused: bool) -> &'static [(usize, Kernel)] {
        const WIDE: &[(usize, Kernel)] = &[
            (12, wide::<12, false>),
            (4, wide::<4, false>),
            (1, wide::<1, false>),
        ];
        const WIDE_FUSED: &[(usize, Kernel)] = &[
            (12, wide::<12, true>),
            (4, wide::<4, true>),
            (1, wide::<1, true>),
        ];
        const NARROW: &[(usize, Kernel)] = &[(6, narrow::<6, false>), (1, narrow::<1, false>)];
        const NARROW_FUSED: &[(usize, Kernel)] = &[(6, narrow::<6, true>), (1, narrow::<1, true>)];
        use super::super::simd::{has_avx512, has_fma};
        match (has_avx512(), has_fma(), fused) {
            (true, _, false) => WIDE,
            (true, _, true) => WIDE_FUSED,
            (false, true, false) => NARROW,
            (false, true, true) => NARROW_FUSED,
            (false, false, _) => &[],
        }
    }

    /// A kernel `out[p] (R x BLOCK) += rows (R x k, k-major) @ panel[p]
    /// (k x BLOCK)` for two panels p at once, each sum as in [`Kernel`].
    pub type PairKernel = unsafe fn(&[f32], [&[f32]; 2], usize, [&mut [f32]; 2]);

    /// Rows the two-panel kernel takes at once.
    pub const PAIR_ROWS: usize = 12;

    /// The two-panel kernel, with AVX-512 (its 24 accumulators need 32
    /// registers).
    pub fn pair_kernel(fused: bool) -> Option<PairKernel> {
        if !super::super::simd::has_avx512() {
            return None;
        }
        Some(if fused {
            wide_pair::<PAIR_ROWS, true>
        } else {
            wide_pair::<PAIR_ROWS, false>
        })
    }

    /// [`PairKernel`] on 16-lane vectors: per step of k, two panel loads
    /// and `R` row values, each broadcast once for `2R` multiply-adds.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `rows` must hold `R * k` values,
    /// each panel `k * BLOCK`, each `out` `R * BLOCK`.
    #[target_feature(enable = "avx2,fma,avx512f")]
    unsafe fn wide_pair<const R: usize, const FUSED: bool>(
        rows: &[f32],
        panels: [&[f32]; 2],
        k: usize,
        out: [&mut [f32]; 2],
    ) {
        assert!(rows.len() >= R * k);
        assert!(panels.iter().all(|p| p.len() >= k * BLOCK));
        assert!(out.iter().all(|o| o.len() >= R * BLOCK));
        let [pa, pb] = panels.map(|p| p.as_ptr());
        // SAFETY: r * BLOCK + 16 <= R * BLOCK <= each out's length.
        let mut acc: [[__m512; 2]; R] = std::array::from_fn(|r| {
            [
                _mm512_loadu_ps(out[0].as_ptr().add(r * BLOCK)),
                _mm512_loadu_ps(out[1].as_ptr().add(r * BLOCK)),
            ]
        });
        for kk in 0..k {
            // SAFETY: kk < k, so kk * BLOCK + 16 <= each panel's length and
            // kk * R + r < R * k <= rows.len() (asserted above).
            let (a, b) = (
                _mm512_loadu_ps(pa.add(kk * BLOCK)),
                _mm512_loadu_ps(pb.add(kk * BLOCK)),
            );
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_ps(*rows.get_unchecked(kk * R + r));
                *acc = [madd::<FUSED>(x, a, acc[0]), madd::<FUSED>(x, b, acc[1])];
            }
        }
        let [oa, ob] = out;
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: r * BLOCK + 16 <= R * BLOCK <= each out's length.
            _mm512_storeu_ps(oa.as_mut_ptr().add(r * BLOCK), acc[0]);
            _mm512_storeu_ps(ob.as_mut_ptr().add(r * BLOCK), acc[1]);
        }
    }

    /// [`Kernel`] on 8-lane vectors, two per row of the panel.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `rows` must hold `R * k` values (k-major: R per k),
    /// `panel` `k * BLOCK`, `out` `R * BLOCK`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn narrow<const R: usize, const FUSED: bool>(
        rows: &[f32],
        panel: &[f32],
        k: usize,
        out: &mut [f32],
    ) {
        assert!(rows.len() >= R * k && panel.len() >= k * BLOCK && out.len() >= R * BLOCK);
        let mut acc: [[__m256; 2]; R] = std::array::from_fn(|r| {
            // SAFETY: r * BLOCK + 16 <= R * BLOCK <= out.len().
            let o = out.as_ptr().add(r * BLOCK);
            [_mm256_loadu_ps(o), _mm256_loadu_ps(o.add(8))]
        });
        for kk in 0..k {
            // SAFETY: kk < k, so kk * BLOCK + 16 <= panel.len() and
            // kk * R + r < R * k <= rows.len() (asserted above).
            let p = panel.as_ptr().add(kk * BLOCK);
            let (b0, b1) = (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_set1_ps(*rows.get_unchecked(kk * R + r));
                if FUSED {
                    acc[0] = _mm256_fmadd_ps(x, b0, acc[0]);
                    acc[1] = _mm256_fmadd_ps(x, b1, acc[1]);
                } else {
                    acc[0] = _mm256_add_ps(acc[0], _mm256_mul_ps(x, b0));
                    acc[1] = _mm256_add_ps(acc[1], _mm256_mul_ps(x, b1));
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: r * BLOCK + 16 <= R * BLOCK <= out.len().
            _mm256_storeu_ps(out.as_mut_ptr().add(r * BLOCK), acc[0]);
            _mm256_storeu_ps(out.as_mut_ptr().add(r * BLOCK + 8), acc[1]);
        }
    }

    /// [`Kernel`] on 16-lane vectors, one per row of the panel: twice the
    /// work per instruction of [`narrow`], and 32 registers hold 12 rows.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; sizes as for [`narrow`].
    #[target_feature(enable = "avx2,fma,avx512f")]
    unsafe fn wide<const R: usize, const FUSED: bool>(
        rows: &[f32],
        panel: &[f32],
        k: usize,
        out: &mut [f32],
    ) {
        assert!(rows.len() >= R * k && panel.len() >= k * BLOCK && out.len() >= R * BLOCK);
        // SAFETY: r * BLOCK + 16 <= R * BLOCK <= out.len().
        let mut acc: [__m512; R] =
            std::array::from_fn(|r| _mm512_loadu_ps(out.as_ptr().add(r * BLOCK)));
        for kk in 0..k {
            // SAFETY: as in `narrow`.
            let b = _mm512_loadu_ps(panel.as_ptr().add(kk * BLOCK));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_ps(*rows.get_unchecked(kk * R + r));
                *acc = madd::<FUSED>(x, b, *acc);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: r * BLOCK + 16 <= R * BLOCK <= out.len().
            _mm512_storeu_ps(out.as_mut_ptr().add(r * BLOCK), *acc);
        }
    }

    /// `acc + x * b` on 16 lanes: fused, or the product rounded before the
    /// sum (see [`Kernel`]).
    ///
    /// # Safety
    /// Called from code compiled with AVX-512F (it is inlined there).
    #[inline(always)]
    unsafe fn madd<const FUSED: bool>(x: __m512, b: __m512, acc: __m512) -> __m512 {
        if FUSED {
            _mm512_fmadd_ps(x, b, acc)
        } else {
            _mm512_add_ps(acc, _mm512_mul_ps(x, b))
        }
    }

    /// [`super::Magnitudes::of`], eight values at a time.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn magnitudes(v: &[f32]) -> super::Magnitudes {
        let abs = _mm256_set1_epi32(0x7FFF_FFFF);
        let one = _mm256_set1_epi32(1);
        let (mut largest, mut below_smallest) = (_mm256_setzero_si256(), _mm256_set1_epi32(-1));
        let chunks = v.chunks_exact(8);
        let rest = super::Magnitudes::of_values(chunks.remainder());
        for c in chunks {
            // SAFETY: a chunk holds 8 values.
            let bits = _mm256_and_si256(_mm256_loadu_si256(c.as_ptr() as *const __m256i), abs);
            largest = _mm256_max_epu32(largest, bits);
            below_smallest = _mm256_min_epu32(below_smallest, _mm256_sub_epi32(bits, one));
        }
        let (mut hi, mut lo) = ([0u32; 8], [0u32; 8]);
        _mm256_storeu_si256(hi.as_mut_ptr() as *mut __m256i, largest);
        _mm256_storeu_si256(lo.as_mut_ptr() as *mut __m256i, below_smallest);
        let lanes = super::Magnitudes {
            largest: hi.into_iter().max().unwrap_or(0),
            smallest: lo.into_iter().min().unwrap_or(u32::MAX).wrapping_add(1),
        };
        lanes.join(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::Magnitudes;

    fn exact(a: &[f32], b: &[f32]) -> bool {
        Magnitudes::of(a).products_exact(&Magnitudes::of(b))
    }

    #[test]
    fn products_are_exact_only_inside_f32s_normal_range() {
        let p = |e: i32| 2f32.powi(e);
        // Largest: 2^63 * 1.99 * 2^64 < 2^128 is an f32; 2^64 * 2^64 is not.
        assert!(exact(&[p(63) * 1.992_187_5], &[p(64)]));
        assert!(!exact(&[p(64)], &[p(64)]));
        // Smallest: 2^-63 * 2^-63 = 2^-126 is normal; 2^-64 * 2^-63 is not.
        assert!(exact(&[p(-63), 1.0], &[p(-63)]));
        assert!(!exact(&[p(-64), 1.0], &[p(-63)]));
        // A product below 2^-126, infinities and NaN rule fusing out;
        // zeros do not.
        assert!(!exact(&[f32::from_bits(1)], &[1.0]));
        assert!(!exact(&[1.0, f32::INFINITY], &[1.0]));
        assert!(!exact(&[1.0], &[f32::NAN]));
        assert!(exact(&[0.0, -0.0], &[p(100), -p(-100)]));
        assert!(exact(&[], &[1.0]));
        // Every finite float16 value: 65504 and 2^-24 at the extremes.
        assert!(exact(&[65504.0, -(p(-24))], &[-65504.0, p(-24)]));
    }

    #[test]
    fn the_vector_scan_agrees_with_the_plain_one() {
        let mut x = 0x2545_F491u32;
        for len in 0..70 {
            let v: Vec<f32> = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Every third value zero (either sign), the rest any bits.
                    match i % 3 {
                        0 => f32::from_bits(x & 0x8000_0000),
                        _ => f32::from_bits(x),
                    }
                })
                .collect();
            let (a, b) = (Magnitudes::of(&v), Magnitudes::of_values(&v));
            assert_eq!((a.largest, a.smallest), (b.largest, b.smallest), "{v:?}");
        }
    }
}
