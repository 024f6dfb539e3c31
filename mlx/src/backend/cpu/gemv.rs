//! One row times a matrix (`x @ W`, float32): the shape of a batch-1 linear
//! layer. It reads every byte of `W` once, so it is bound by memory
//! bandwidth; `gemm` treats it as a thin matrix product and reaches about
//! half of what two cores can stream. For `x @ W` the rows of `W` are split
//! into fixed chunks whose partial sums are added in chunk order; for
//! `x @ W.T` each output is one dot product computed by one task. Either
//! way the result does not depend on the number of threads. The kernels
//! are written with intrinsics: a loop left to `with_fma` compiled to SSE
//! when its closure was not inlined.

use rayon::prelude::*;

/// Multiply-adds above which the work is spread over threads.
const PAR_WORK: usize = 1 << 18;
/// Elements of `W` per parallel task (1 MiB of f32).
const TASK_ELEMS: usize = 1 << 18;
/// Multiply-adds above which the dot products of `x @ W.T` are spread
/// over threads (fewer than `PAR_WORK`: each task is one pass over rows).
pub const PAR_WORK_DOTS: usize = 1 << 16;
/// At most this many partial rows are kept for a row-major `W`.
const MAX_PARTIALS: usize = 16;
/// Rows (or columns) of `W` that every entry of a [`shared`] group reads
/// in turn while they stay in the first-level cache.
pub(super) const SUB_STRETCH: usize = 16;

/// `W` as a strided `k x n` view of `w`, in elements.
#[derive(Clone, Copy)]
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

/// Row `j` of `W.T` (column-contiguous layout): `W`'s column `j`, `k` values.
fn row_along_k<'a>(w: &Strided<'a>, j: usize) -> &'a [f32] {
    let start = w.offset + j * w.col_stride as usize;
    &w.w[start..start + w.k]
}

/// How far ahead of the rows it reads the batched one-row product asks
/// for them: a decode step's key/value cache is cold (every layer's
/// weights streamed through the cache since the last step) and its rows
/// are short, so the hardware prefetcher, which starts over at each
/// stretch, leaves it waiting on memory. 4 KB ahead took a 256-slot
/// cache's two products (`q @ K.T`, `p @ V`) in a 4-bit decode step
/// from 16-17 and 12.5 to 15-16 and 11 µs a layer (the lines asked into
/// the second-level cache).
const SHARED_AHEAD_BYTES: usize = 4 << 10;

/// Rows `SHARED_AHEAD_BYTES` ahead for rows `stride` values apart (at
/// least one).
fn rows_ahead(stride: isize) -> usize {
    (SHARED_AHEAD_BYTES / (4 * stride.unsigned_abs()).max(1)).max(1)
}

/// Asks for the cache lines of `len` values (at most 128) from `start` in
/// `w`'s buffer (past `w.offset`), which may lie past its end.
#[inline(always)]
fn prefetch_run(w: &Strided<'_>, start: usize, len: usize) {
    let p = w.w.as_ptr().wrapping_add(w.offset + start);
    super::simd::prefetch_lines(p.cast(), 4 * len.min(128));
}

/// `acc += x[rows] @ W[rows, :]`, four rows per sweep over `acc`.
pub(super) fn accumulate_rows(
    x: &[f32],
    w: &Strided<'_>,
    rows: std::ops::Range<usize>,
    acc: &mut [f32],
) {
    let mut i = rows.start;
    #[cfg(target_arch = "x86_64")]
    if let Some(axpy4) = lanes::axpy4() {
        while i + 4 <= rows.end {
            let (xs, rs) = (
                std::array::from_fn(|q| x[i + q]),
                std::array::from_fn(|q| row(w, i + q)),
            );
            // SAFETY: `lanes::axpy4` offers only kernels the CPU runs.
            unsafe { axpy4(xs, rs, acc) };
            i += 4;
        }
    }
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
    if w.k * w.n < PAR_WORK_DOTS {
        return dots(x, w, 0, out, 0);
    }
    // Equal shares, a few per thread so a thread slowed by the machine's
    // other work hands some of its share over.
    let tasks = rayon::current_num_threads() * 4;
    let rows = w.n.div_ceil(tasks).next_multiple_of(4);
    out.par_chunks_mut(rows)
        .enumerate()
        .for_each(|(c, o)| dots(x, w, c * rows, o, 0));
}

/// `out[i] = x . W[j0 + i, :]` for `W`'s rows contiguous along k (in any
/// summation order: MLX leaves a float32 product's order to BLAS).
/// With `ahead` > 0, the rows that many ahead are asked into cache as
/// each four are read.
pub(super) fn dots(x: &[f32], w: &Strided<'_>, j0: usize, out: &mut [f32], ahead: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(dot4) = lanes::dot4() {
        for (q, o) in out.chunks_mut(4).enumerate() {
            let j = j0 + 4 * q;
            if ahead > 0 {
                for r in j + ahead..j + ahead + 4 {
                    prefetch_run(w, r * w.col_stride as usize, w.k);
                }
            }
            // A last group of fewer than four rows repeats its last row.
            let rows = std::array::from_fn(|r| row_along_k(w, j + r.min(o.len() - 1)));
            // SAFETY: `lanes::dot4` offers only kernels the CPU runs.
            let sums = unsafe { dot4(x, rows) };
            o.copy_from_slice(&sums[..o.len()]);
        }
        return;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = super::simd::dot_lanes(x, row_along_k(w, j0 + i));
    }
}

/// One pass over a stretch of `W` for several rows `xs` that share it: the
/// entries of a batched one-row product that read one matrix (a decode
/// step's query heads sharing a key/value cache), in either layout.
pub(super) mod shared {
    use super::{accumulate_rows, dots, rows_ahead, Strided, SUB_STRETCH};
    use std::ops::Range;

    /// `sums[e * w.n..][..w.n] += xs[e] @ W[rows, :]` for each entry `e`,
    /// `W`'s rows contiguous.
    pub fn accumulate(xs: &[&[f32]], w: &Strided<'_>, rows: Range<usize>, sums: &mut [f32]) {
        let n = w.n;
        debug_assert!(sums.len() == xs.len() * n);
        if n == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if super::super::simd::has_avx512() {
            for (xs, sums) in xs.chunks(4).zip(sums.chunks_mut(4 * n)) {
                let run = match xs.len() {
                    1 => super::lanes::accumulate_shared_512::<1>,
                    2 => super::lanes::accumulate_shared_512::<2>,
                    3 => super::lanes::accumulate_shared_512::<3>,
                    _ => super::lanes::accumulate_shared_512::<4>,
                };
                // SAFETY: the CPU has AVX-512F.
                unsafe { run(xs, w, rows.clone(), sums) };
            }
            return;
        }
        for sub in rows.clone().step_by(SUB_STRETCH) {
            let sub = sub..(sub + SUB_STRETCH).min(rows.end);
            for (x, o) in xs.iter().zip(sums.chunks_mut(n)) {
                accumulate_rows(x, w, sub.clone(), o);
            }
        }
    }

    /// `out[e * cols.len() + j - cols.start] = xs[e] . W[:, j]` for each
    /// entry `e` and column `j` in `cols`, `W`'s columns contiguous: a
    /// few columns at a time, read by every entry while they stay in the
    /// first-level cache.
    pub fn dot(xs: &[&[f32]], w: &Strided<'_>, cols: Range<usize>, out: &mut [f32]) {
        let width = cols.len();
        debug_assert!(out.len() == xs.len() * width);
        if width == 0 {
            return;
        }
        let ahead = rows_ahead(w.col_stride);
        for sub in cols.clone().step_by(SUB_STRETCH) {
            let sub = sub..(sub + SUB_STRETCH).min(cols.end);
            for (e, (x, o)) in xs.iter().zip(out.chunks_mut(width)).enumerate() {
                dots(
                    x,
                    w,
                    sub.start,
                    &mut o[sub.start - cols.start..sub.end - cols.start],
                    if e == 0 { ahead } else { 0 },
                );
            }
        }
    }
}

/// The two layouts' kernels, four rows of `W` streamed at once: four dot
/// products sharing `x` (rows along k), or four scaled rows added into one
/// accumulator row (rows along n).
#[cfg(target_arch = "x86_64")]
mod lanes {
    use std::arch::x86_64::*;

    /// Four dot products sharing `x` (see [`dot4_512`]).
    pub type Dot4 = unsafe fn(&[f32], [&[f32]; 4]) -> [f32; 4];
    /// `acc += Σ x[r] * rows[r]` (see [`axpy4_512`]).
    pub type Axpy4 = unsafe fn([f32; 4], [&[f32]; 4], &mut [f32]);

    /// The widest [`Dot4`] this CPU runs; None without AVX2 and FMA.
    pub fn dot4() -> Option<Dot4> {
        use super::super::simd::{has_avx512, has_fma};
        match (has_avx512(), has_fma()) {
            (true, _) => Some(dot4_512),
            (false, true) => Some(dot4_256),
            _ => None,
        }
    }

    /// The widest [`Axpy4`] this CPU runs; None without AVX2 and FMA.
    pub fn axpy4() -> Option<Axpy4> {
        use super::super::simd::{has_avx512, has_fma};
        match (has_avx512(), has_fma()) {
            (true, _) => Some(axpy4_512),
            (false, true) => Some(axpy4_256),
            _ => None,
        }
    }

    /// `acc += x[0] * rows[0] + ... + x[3] * rows[3]`.
    ///
    /// # Safety
    /// The CPU must have AVX-512F. Each row holds at least `acc.len()` values.
    #[target_feature(enable = "avx2,fma,avx512f")]
    pub unsafe fn axpy4_512(x: [f32; 4], rows: [&[f32]; 4], acc: &mut [f32]) {
        let n = acc.len();
        assert!(rows.iter().all(|r| r.len() >= n));
        let xs = x.map(|v| _mm512_set1_ps(v));
        for j in (0..n).step_by(16) {
            let mask = if j + 16 <= n {
                !0
            } else {
                ((1u32 << (n - j)) - 1) as __mmask16
            };
            // SAFETY: the mask reads and writes only j..n, within acc and every row.
            let p = acc.as_mut_ptr().add(j);
            let mut t = _mm512_maskz_loadu_ps(mask, p);
            for (xv, r) in xs.iter().zip(&rows) {
                t = _mm512_fmadd_ps(*xv, _mm512_maskz_loadu_ps(mask, r.as_ptr().add(j)), t);
            }
            _mm512_mask_storeu_ps(p, mask, t);
        }
    }

    /// [`axpy4_512`] in 256-bit vectors.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA. Each row holds at least `acc.len()` values.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy4_256(x: [f32; 4], rows: [&[f32]; 4], acc: &mut [f32]) {
        let n = acc.len();
        assert!(rows.iter().all(|r| r.len() >= n));
        let xs = x.map(|v| _mm256_set1_ps(v));
        let full = n / 8 * 8;
        for j in (0..full).step_by(8) {
            // SAFETY: j + 8 <= n, within acc and every row.
            let p = acc.as_mut_ptr().add(j);
            let mut t = _mm256_loadu_ps(p);
            for (xv, r) in xs.iter().zip(&rows) {
                t = _mm256_fmadd_ps(*xv, _mm256_loadu_ps(r.as_ptr().add(j)), t);
            }
            _mm256_storeu_ps(p, t);
        }
        for j in full..n {
            acc[j] = x
                .iter()
                .zip(&rows)
                .fold(acc[j], |a, (&xv, r)| xv.mul_add(r[j], a));
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F. Each row holds at least `x.len()` values.
    #[target_feature(enable = "avx2,fma,avx512f")]
    pub unsafe fn dot4_512(x: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        let k = x.len();
        assert!(rows.iter().all(|r| r.len() >= k));
        let mut acc = [_mm512_setzero_ps(); 4];
        let mut kk = 0;
        while kk + 16 <= k {
            // SAFETY: kk + 16 <= k, within x and every row.
            let xv = _mm512_loadu_ps(x.as_ptr().add(kk));
            for (a, r) in acc.iter_mut().zip(&rows) {
                *a = _mm512_fmadd_ps(xv, _mm512_loadu_ps(r.as_ptr().add(kk)), *a);
            }
            kk += 16;
        }
        if kk < k {
            let mask = ((1u32 << (k - kk)) - 1) as __mmask16;
            // SAFETY: the mask reads only kk..k.
            let xv = _mm512_maskz_loadu_ps(mask, x.as_ptr().add(kk));
            for (a, r) in acc.iter_mut().zip(&rows) {
                *a = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(mask, r.as_ptr().add(kk)), *a);
            }
        }
        acc.map(|a| _mm512_reduce_add_ps(a))
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA. Each row holds at least `x.len()` values.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot4_256(x: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        let k = x.len();
        assert!(rows.iter().all(|r| r.len() >= k));
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut kk = 0;
        while kk + 8 <= k {
            // SAFETY: kk + 8 <= k, within x and every row.
            let xv = _mm256_loadu_ps(x.as_ptr().add(kk));
            for (a, r) in acc.iter_mut().zip(&rows) {
                *a = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r.as_ptr().add(kk)), *a);
            }
            kk += 8;
        }
        let mut sums = [0f32; 4];
        for (s, (a, r)) in sums.iter_mut().zip(acc.iter().zip(&rows)) {
            let mut lanes = [0f32; 8];
            // SAFETY: `lanes` holds 8 values.
            _mm256_storeu_ps(lanes.as_mut_ptr(), *a);
            *s = lanes.iter().sum::<f32>() + (kk..k).map(|i| x[i] * r[i]).sum::<f32>();
        }
        sums
    }

    /// `sums[e * w.n..][..w.n] += xs[e] @ W[rows, :]` for the `E` entries
    /// of `xs`, 64 columns at a time, each entry's 64 sums in registers
    /// through all of `rows`.
    ///
    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx2,fma,avx512f")]
    pub unsafe fn accumulate_shared_512<const E: usize>(
        xs: &[&[f32]],
        w: &super::Strided<'_>,
        rows: std::ops::Range<usize>,
        sums: &mut [f32],
    ) {
        let n = w.n;
        assert!(xs.len() == E && sums.len() == E * n && xs.iter().all(|x| x.len() >= rows.end));
        let ahead = super::rows_ahead(w.row_stride);
        for c0 in (0..n).step_by(64) {
            // The columns of each of the four vectors inside the row.
            let masks: [__mmask16; 4] = std::array::from_fn(|q| {
                let (lo, hi) = ((c0 + 16 * q).min(n), (c0 + 16 * q + 16).min(n));
                ((1u32 << (hi - lo)) - 1) as __mmask16
            });
            let mut acc = [[_mm512_setzero_ps(); 4]; E];
            for r in rows.clone() {
                let row = super::row(w, r).as_ptr().wrapping_add(c0);
                super::prefetch_run(
                    w,
                    (r + ahead) * w.row_stride as usize + c0,
                    (n - c0).min(64),
                );
                // SAFETY: the masks read only columns c0.. below n, inside
                // the row (masked-off lanes are not read and cannot fault).
                let mut v = [_mm512_setzero_ps(); 4];
                for (q, v) in v.iter_mut().enumerate() {
                    *v = unsafe { _mm512_maskz_loadu_ps(masks[q], row.wrapping_add(16 * q)) };
                }
                for (a, x) in acc.iter_mut().zip(xs) {
                    let b = _mm512_set1_ps(x[r]);
                    for (a, v) in a.iter_mut().zip(&v) {
                        *a = _mm512_fmadd_ps(b, *v, *a);
                    }
                }
            }
            for (a, s) in acc.iter().zip(sums.chunks_mut(n)) {
                for (q, a) in a.iter().enumerate() {
                    let p = s.as_mut_ptr().wrapping_add(c0 + 16 * q);
                    // SAFETY: as for the row, the masks keep to s[..n].
                    unsafe {
                        let t = _mm512_add_ps(_mm512_maskz_loadu_ps(masks[q], p), *a);
                        _mm512_mask_storeu_ps(p, masks[q], t);
                    }
                }
            }
        }
    }
}
