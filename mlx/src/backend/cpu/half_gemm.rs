//! Matrix products of bfloat16 and float16 operands in MLX's order.
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
//! laid out `k`-major, then rows of `a` sweep it, `ROWS` at a time, with
//! `BLOCK` accumulators each. Every output element is computed by one task
//! in one order, so the result does not depend on the thread count.

use super::matmul::{batch_offsets, MatrixView};
use super::num::Float;
use rayon::prelude::*;

/// Columns per panel (two 8-lane vectors).
const BLOCK: usize = 16;
/// Rows of `a` sharing one pass over a panel.
const ROWS: usize = 4;
/// Multiply-adds above which the blocks are spread over threads.
const PAR_WORK: usize = 1 << 18;

/// `dst = alpha * (a @ b) + beta * c` over the last two axes, batched over the
/// leading ones; `dst` is row-major `out_shape`. Without `c`, beta is ignored.
pub fn addmm<T: Float>(
    dst: &mut [T],
    a: &MatrixView<'_>,
    b: &MatrixView<'_>,
    c: Option<&MatrixView<'_>>,
    alpha: f32,
    beta: f32,
    out_shape: &[i32],
) {
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
    let a_src = a.data.buffer.as_slice::<T>();
    let lhs: Vec<f32> = a_off
        .iter()
        .flat_map(|&o| {
            (0..m as isize).flat_map(move |i| {
                (0..k as isize).map(move |j| a_src[(o + i * a_rs + j * a_cs) as usize].to_f32())
            })
        })
        .collect();
    let (b_rs, b_cs) = (b.data.strides[nd - 2], b.data.strides[nd - 1]);
    let b_src = b.data.buffer.as_slice::<T>();
    let blocks = n.div_ceil(BLOCK);
    let task = |t: usize| -> Vec<f32> {
        let (e, j0) = (t / blocks, (t % blocks) * BLOCK);
        let width = BLOCK.min(n - j0);
        let mut panel = vec![0f32; k * BLOCK];
        for jj in 0..width {
            let base = b_off[e] + (j0 + jj) as isize * b_cs;
            for (kk, p) in panel.iter_mut().skip(jj).step_by(BLOCK).enumerate() {
                *p = b_src[(base + kk as isize * b_rs) as usize].to_f32();
            }
        }
        sweep(&lhs[e * m * k..(e + 1) * m * k], &panel, m, k)
    };
    let tasks = a_off.len() * blocks;
    let sums: Vec<Vec<f32>> = if a_off.len() * m * n * k >= PAR_WORK {
        (0..tasks).into_par_iter().with_min_len(4).map(task).collect()
    } else {
        (0..tasks).map(task).collect()
    };
    for (t, sum) in sums.iter().enumerate() {
        let (e, j0) = (t / blocks, (t % blocks) * BLOCK);
        let width = BLOCK.min(n - j0);
        for i in 0..m {
            let at = e * m * n + i * n + j0;
            for jj in 0..width {
                let s = alpha * sum[i * BLOCK + jj];
                dst[at + jj] = T::from_f32(match &c_in {
                    Some(c) => s + beta * c[at + jj],
                    None => s,
                });
            }
        }
    }
}

/// `lhs (m x k) @ panel (k x BLOCK)` as `m x BLOCK` sums, each in `k` order.
fn sweep(lhs: &[f32], panel: &[f32], m: usize, k: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * BLOCK];
    super::simd::with_fma(|| {
        let mut i = 0;
        while i + ROWS <= m {
            let mut acc = [[0f32; BLOCK]; ROWS];
            for (kk, p) in panel.chunks_exact(BLOCK).enumerate() {
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = lhs[(i + r) * k + kk];
                    for (s, &w) in acc.iter_mut().zip(p) {
                        *s += x * w;
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                out[(i + r) * BLOCK..(i + r + 1) * BLOCK].copy_from_slice(acc);
            }
            i += ROWS;
        }
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
    });
    out
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
