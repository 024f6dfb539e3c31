//! One row times a matrix (`x @ W`, float32): the shape of a batch-1 linear
//! layer. It reads every byte of `W` once, so it is bound by memory
//! bandwidth; `gemm` treats it as a thin matrix product and reaches about
//! half of what two cores can stream. Here the rows of `W` are split into
//! fixed chunks whose partial sums are added in chunk order, so the result
//! does not depend on the number of threads.

use rayon::prelude::*;

/// Multiply-adds above which the work is spread over threads.
const PAR_WORK: usize = 1 << 18;
/// Elements of `W` per parallel task (1 MiB of f32).
const TASK_ELEMS: usize = 1 << 18;
/// At most this many partial rows are kept for a row-major `W`.
const MAX_PARTIALS: usize = 16;

/// `W` as a strided `k x n` view of `w`, in elements.
pub struct Strided<'a> {
    pub w: &'a [f32],
    pub offset: usize,
    pub row_stride: isize,
    pub col_stride: isize,
    pub k: usize,
    pub n: usize,
}

impl Strided<'_> {
    /// Whether one of the two layouts this module runs applies: rows
    /// contiguous (`x @ W`) or columns contiguous (`x @ W.T` of a row-major
    /// weight), with the other stride non-negative.
    pub fn supported(&self) -> bool {
        (self.col_stride == 1 && self.row_stride >= 0)
            || (self.row_stride == 1 && self.col_stride >= 0)
    }
}

/// `out = alpha * (x @ W)`; `x` has `k` elements, `out` has `n`.
/// The caller checked [`Strided::supported`].
pub fn gemv(x: &[f32], w: &Strided<'_>, alpha: f32, out: &mut [f32]) {
    debug_assert!(w.supported() && x.len() == w.k && out.len() == w.n);
    if w.col_stride == 1 {
        rows_contiguous(x, w, out);
    } else {
        columns_contiguous(x, w, out);
    }
    if alpha != 1.0 {
        out.iter_mut().for_each(|o| *o *= alpha);
    }
}

/// Row `i` of `W` (row-contiguous layout).
fn row<'a>(w: &Strided<'a>, i: usize) -> &'a [f32] {
    let start = w.offset + i * w.row_stride as usize;
    &w.w[start..start + w.n]
}

/// `acc += x[rows] @ W[rows, :]`, four rows per sweep over `acc`.
fn accumulate_rows(x: &[f32], w: &Strided<'_>, rows: std::ops::Range<usize>, acc: &mut [f32]) {
    super::simd::with_fma(|| {
        let mut i = rows.start;
        while i + 4 <= rows.end {
            let (r0, r1, r2, r3) = (row(w, i), row(w, i + 1), row(w, i + 2), row(w, i + 3));
            let (x0, x1, x2, x3) = (x[i], x[i + 1], x[i + 2], x[i + 3]);
            for j in 0..acc.len() {
                acc[j] += (x0 * r0[j] + x1 * r1[j]) + (x2 * r2[j] + x3 * r3[j]);
            }
            i += 4;
        }
        for (i, &xi) in x.iter().enumerate().take(rows.end).skip(i) {
            let r = row(w, i);
            acc.iter_mut().zip(r).for_each(|(a, &v)| *a += xi * v);
        }
    })
}

fn rows_contiguous(x: &[f32], w: &Strided<'_>, out: &mut [f32]) {
    out.fill(0.0);
    if w.k * w.n < PAR_WORK {
        return accumulate_rows(x, w, 0..w.k, out);
    }
    let chunk = (TASK_ELEMS / w.n.max(1))
        .max(w.k.div_ceil(MAX_PARTIALS))
        .max(1);
    let partials: Vec<Vec<f32>> = (0..w.k.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let mut acc = vec![0f32; w.n];
            accumulate_rows(x, w, c * chunk..((c + 1) * chunk).min(w.k), &mut acc);
            acc
        })
        .collect();
    for p in &partials {
        out.iter_mut().zip(p).for_each(|(o, &v)| *o += v);
    }
}

fn columns_contiguous(x: &[f32], w: &Strided<'_>, out: &mut [f32]) {
    let column = |j: usize| {
        let start = w.offset + j * w.col_stride as usize;
        super::simd::with_fma(|| super::simd::dot_lanes(x, &w.w[start..start + w.k]))
    };
    if w.k * w.n < PAR_WORK {
        out.iter_mut().enumerate().for_each(|(j, o)| *o = column(j));
    } else {
        out.par_iter_mut()
            .with_min_len((TASK_ELEMS / w.k.max(1)).max(1))
            .enumerate()
            .for_each(|(j, o)| *o = column(j));
    }
}
