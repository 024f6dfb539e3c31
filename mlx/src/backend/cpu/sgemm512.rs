//! f32 matrix products on CPUs with AVX-512: packed operands and an
//! 8 x 32 register tile, blocked for the caches as BLIS-style GEMMs are.
//!
//! `A` is packed into panels of [`MR`] rows and `B` into slabs of [`NR`]
//! columns, both k-major, so the tile kernel reads two unit-stride streams
//! whatever the operands' strides (a transposed weight costs a transpose
//! while packing, nothing after). The tile keeps 16 vector accumulators (8
//! rows by two 16-lane vectors); each step of k loads two vectors of `B`
//! and broadcasts 8 values of `A`: 16 fused multiply-adds for 10 loads, so
//! the FMA ports set the pace, not the loads.
//!
//! Blocking: k in equal steps of at most [`KC`] ([`k_step`]; a slab's
//! step, up to 64 KiB, and the panels of a block of [`MC`] rows stay in
//! L2); columns in blocks of at most [`MAX_NC`] per task, each task packing
//! its own block of `B` (so a large weight is never copied whole); `A` is
//! packed once and shared.
//! Each output is summed in k order within a step and the steps are added
//! in order: the result depends on the shapes only, not on the threads.
//! (MLX leaves a float32 product's order to BLAS.)

use super::scratch::{floats, keep, take, values, with_scratch, Line, Slot};
use super::simd::transpose8;
use rayon::prelude::*;
use std::arch::x86_64::*;

/// Rows of a tile (and of a packed panel of `A`).
const MR: usize = 8;
/// Columns of a tile (and of a packed slab of `B`): two 16-lane vectors.
const NR: usize = 32;
/// Most steps of k per packed block. 512 rather than 256 (a slab in L1)
/// halves how often each output tile is read and written back: a 2048³
/// product on a 2-core Xeon went from 221-250 to 230-272 GFLOP/s
/// (alternated binaries), and its L2 holds the 64 KiB slab.
const KC: usize = 512;
/// Rows of `A` swept per slab of `B` (their panels, up to 256 KiB, stay in L2).
const MC: usize = 128;
/// Most columns a task packs and computes.
const MAX_NC: usize = 512;

/// Whether this CPU runs [`gemm`].
pub fn available() -> bool {
    super::simd::has_avx512()
}

/// A strided `rows x cols` f32 matrix: element `(i, j)` at
/// `ptr + i * rs + j * cs`.
#[derive(Clone, Copy)]
pub struct View {
    pub ptr: *const f32,
    pub rs: isize,
    pub cs: isize,
}

impl View {
    /// # Safety
    /// `(i, j)` must lie inside the view's matrix.
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> f32 {
        *self.ptr.offset(i as isize * self.rs + j as isize * self.cs)
    }
}

/// The output: a row-major `m x n` block, rows `ld` apart. Unless
/// `read`, its values are not read (`beta` is then ignored).
#[derive(Clone, Copy)]
pub struct Out {
    pub ptr: *mut f32,
    pub ld: usize,
    pub read: bool,
    pub beta: f32,
}

// SAFETY: shared between the tasks of one product, which write disjoint
// columns of the output and only read the operands.
unsafe impl Send for View {}
unsafe impl Sync for View {}
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

/// `out := alpha * (a @ b) + beta * out` (the last term only when
/// `out.read`) for `a` `m x k` and `b` `k x n`; over the rayon threads
/// when `parallel`.
///
/// # Safety
/// The CPU must have AVX-512F ([`available`]); every element of the two
/// views must be readable and every element of `out` writable, and `out`
/// must not overlap them.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm(
    m: usize,
    n: usize,
    k: usize,
    a: View,
    b: View,
    alpha: f32,
    out: Out,
    parallel: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        for i in 0..m {
            for j in 0..n {
                let o = out.ptr.add(i * out.ld + j);
                *o = if out.read { out.beta * *o } else { 0.0 };
            }
        }
        return;
    }
    with_scratch(Slot::PackedA, padded_rows(m) * k, |packed_a| {
        pack_a(a, m, k, parallel, packed_a);
        let packed_a = &*packed_a;
        let threads = if parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        // A few tasks a thread, so a thread slowed by other work hands some over.
        let nc = n
            .div_ceil(4 * threads)
            .next_multiple_of(NR)
            .clamp(NR, MAX_NC);
        let product = Product {
            packed_a,
            m,
            k,
            b,
            alpha,
            out,
        };
        let task = |t: usize| {
            let j0 = t * nc;
            product.columns(j0, nc.min(n - j0));
        };
        let tasks = n.div_ceil(nc);
        if parallel && tasks > 1 {
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
    })
}

/// A left operand packed once for several products: quantized weights
/// arrive a tile at a time (dequantized in cache), each tile multiplied by
/// the same rows.
pub struct PackedA {
    lines: Vec<Line>,
    m: usize,
    k: usize,
}

impl PackedA {
    /// `x` (`m x k`, row-major) packed; None when the CPU lacks AVX-512.
    pub fn new(x: &[f32], m: usize, k: usize) -> Option<PackedA> {
        assert!(x.len() >= m * k);
        if !available() || m == 0 || k == 0 {
            return None;
        }
        // The calling thread's kept buffer, handed back on drop: a fresh
        // one faulted in its pages on every quantized product.
        let mut lines = take(Slot::PackedA, padded_rows(m) * k);
        let view = View {
            ptr: x.as_ptr(),
            rs: k as isize,
            cs: 1,
        };
        // SAFETY: the CPU has AVX-512 (checked); `x` holds the m x k view.
        unsafe { pack_a(view, m, k, false, floats(&mut lines)) };
        Some(PackedA { lines, m, k })
    }

    /// `out := x @ b` for `b` `k x n`, on the calling thread.
    ///
    /// # Safety
    /// Every element of `b` must be readable and every element of `out`
    /// (`m x n`) writable.
    pub unsafe fn times(&self, b: View, n: usize, out: Out) {
        let product = Product {
            packed_a: values(&self.lines),
            m: self.m,
            k: self.k,
            b,
            alpha: 1.0,
            out,
        };
        // SAFETY: the CPU has AVX-512 (`new` checked); the rest the caller's.
        product.columns(0, n);
    }
}

impl Drop for PackedA {
    fn drop(&mut self) {
        keep(Slot::PackedA, std::mem::take(&mut self.lines));
    }
}

/// Steps of k per packed block for a product over `k`: as few blocks as
/// [`KC`] allows, of equal length (576 is two of 288, not 512 and 64, whose
/// short block would pay a whole block's tile writes for an eighth of the
/// work).
fn k_step(k: usize) -> usize {
    k.div_ceil(k.div_ceil(KC).max(1)).max(1)
}

/// Rows of `A` rounded up to whole panels.
fn padded_rows(m: usize) -> usize {
    m.next_multiple_of(MR)
}

/// `A` packed: for each step of k ([`k_step`], from `k0`, `kc` long), the
/// panels in row order, each `kc x MR` (k-major; rows past `m` are zero).
/// The panel `p` of the step at `k0` starts at
/// `k0 * padded_rows(m) + p * MR * kc`.
///
/// # Safety
/// As for [`gemm`].
unsafe fn pack_a(a: View, m: usize, k: usize, parallel: bool, packed: &mut [f32]) {
    let (mp, kc_full) = (padded_rows(m), k_step(k));
    let step = |(s, dst): (usize, &mut [f32])| {
        let k0 = s * kc_full;
        let kc = kc_full.min(k - k0);
        for (p, panel) in dst.chunks_exact_mut(MR * kc).enumerate() {
            // SAFETY: the caller's.
            unsafe { pack_panel(a, m, p * MR, k0, kc, panel) };
        }
    };
    let packed = &mut packed[..mp * k];
    if parallel && mp * k >= 1 << 16 {
        packed
            .par_chunks_mut(mp * kc_full)
            .enumerate()
            .for_each(step);
    } else {
        packed.chunks_mut(mp * kc_full).enumerate().for_each(step);
    }
}

/// Rows `i0..i0 + MR` of `A` at `k0..k0 + kc` into `panel` (`kc x MR`).
///
/// # Safety
/// As for [`gemm`].
#[target_feature(enable = "avx2,fma,avx512f")]
unsafe fn pack_panel(a: View, m: usize, i0: usize, k0: usize, kc: usize, panel: &mut [f32]) {
    let rows = MR.min(m - i0);
    let base = panel.as_mut_ptr();
    let mut kk = 0;
    if a.cs == 1 && rows == MR {
        // Rows contiguous along k: 8 x 8 blocks transposed in registers.
        while kk + 8 <= kc {
            transpose_block(
                |r| a.ptr.offset((i0 + r) as isize * a.rs).add(k0 + kk),
                |i| base.add((kk + i) * MR),
            );
            kk += 8;
        }
    }
    for kk in kk..kc {
        for r in 0..MR {
            panel[kk * MR + r] = if r < rows { a.at(i0 + r, k0 + kk) } else { 0.0 };
        }
    }
}

/// Eight rows of eight f32 (row `r` at `src(r)`) stored as eight columns
/// (column `i` at `dst(i)`).
///
/// # Safety
/// Each row must be readable and each column writable, 8 f32.
#[inline(always)]
unsafe fn transpose_block(src: impl Fn(usize) -> *const f32, dst: impl Fn(usize) -> *mut f32) {
    // SAFETY: the CPU has AVX-512 (the caller's), so AVX too.
    let rows: [__m256; 8] = std::array::from_fn(|r| _mm256_loadu_ps(src(r)));
    for (i, col) in transpose8(rows).iter().enumerate() {
        _mm256_storeu_ps(dst(i), *col);
    }
}

/// One product's operands once `A` is packed: what each task reads.
#[derive(Clone, Copy)]
struct Product<'a> {
    /// [`pack_a`]'s.
    packed_a: &'a [f32],
    m: usize,
    k: usize,
    b: View,
    alpha: f32,
    out: Out,
}

impl Product<'_> {
    /// Columns `j0..j0 + nc` of the product, all rows.
    ///
    /// # Safety
    /// As for [`gemm`].
    unsafe fn columns(&self, j0: usize, nc: usize) {
        let (slabs, step) = (nc.div_ceil(NR), k_step(self.k));
        with_scratch(Slot::Slabs, step * slabs * NR, |slabs_buf| {
            // SAFETY: the caller's; the buffer holds `slabs` slabs of a step.
            unsafe { self.columns_with(j0, nc, step, slabs_buf) }
        })
    }

    /// [`Product::columns`] with k in blocks of `step` ([`k_step`]) and a
    /// buffer for the packed slabs of `B`.
    ///
    /// # Safety
    /// As for [`Product::columns`].
    #[target_feature(enable = "avx2,fma,avx512f")]
    unsafe fn columns_with(&self, j0: usize, nc: usize, step: usize, slabs_buf: &mut [f32]) {
        let (m, k, out) = (self.m, self.k, self.out);
        let mp = padded_rows(m);
        let slabs = nc.div_ceil(NR);
        for k0 in (0..k).step_by(step) {
            let kc = step.min(k - k0);
            for (s, slab) in slabs_buf.chunks_exact_mut(kc * NR).take(slabs).enumerate() {
                let cols = NR.min(nc - s * NR);
                pack_slab(self.b, k0, kc, j0 + s * NR, cols, slab);
            }
            for i0 in (0..mp).step_by(MC) {
                for s in 0..slabs {
                    let cols = NR.min(nc - s * NR);
                    let slab = &slabs_buf[s * kc * NR..][..kc * NR];
                    for p in i0 / MR..(i0 + MC).min(mp) / MR {
                        let panel = &self.packed_a[k0 * mp + p * MR * kc..][..MR * kc];
                        let acc = tile(kc, panel, slab);
                        let at = out.ptr.add(p * MR * out.ld + j0 + s * NR);
                        store(&acc, at, out, MR.min(m - p * MR), cols, self.alpha, k0 == 0);
                    }
                }
            }
        }
    }
}

/// Columns `j0..j0 + cols` of `B` at `k0..k0 + kc` into `slab`
/// (`kc x NR`; columns past `cols` are zero).
///
/// # Safety
/// As for [`gemm`].
#[inline(always)]
unsafe fn pack_slab(b: View, k0: usize, kc: usize, j0: usize, cols: usize, slab: &mut [f32]) {
    let full = cols == NR;
    let base = slab.as_mut_ptr();
    if full && b.cs == 1 {
        // Rows contiguous along n: a copy per step of k.
        for kk in 0..kc {
            let src = b.ptr.offset((k0 + kk) as isize * b.rs).add(j0);
            std::ptr::copy_nonoverlapping(src, base.add(kk * NR), NR);
        }
        return;
    }
    let mut kk = 0;
    if full && b.rs == 1 {
        // Columns contiguous along k (`x @ W.T`): 8 x 8 blocks transposed.
        while kk + 8 <= kc {
            for g in 0..NR / 8 {
                transpose_block(
                    |r| b.ptr.offset((j0 + 8 * g + r) as isize * b.cs).add(k0 + kk),
                    |i| base.add((kk + i) * NR + 8 * g),
                );
            }
            kk += 8;
        }
    }
    for kk in kk..kc {
        for jj in 0..NR {
            slab[kk * NR + jj] = if jj < cols {
                b.at(k0 + kk, j0 + jj)
            } else {
                0.0
            };
        }
    }
}

/// One panel times one slab: `MR x NR` sums over `kc` steps, as
/// `[row][half]` vectors.
#[inline(always)]
unsafe fn tile(kc: usize, panel: &[f32], slab: &[f32]) -> [[__m512; 2]; MR] {
    debug_assert!(panel.len() >= kc * MR && slab.len() >= kc * NR);
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    let (a, b) = (panel.as_ptr(), slab.as_ptr());
    for kk in 0..kc {
        // SAFETY: kk < kc, inside both buffers (checked above).
        let b0 = _mm512_loadu_ps(b.add(kk * NR));
        let b1 = _mm512_loadu_ps(b.add(kk * NR + 16));
        for (r, acc) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*a.add(kk * MR + r));
            acc[0] = _mm512_fmadd_ps(x, b0, acc[0]);
            acc[1] = _mm512_fmadd_ps(x, b1, acc[1]);
        }
    }
    acc
}

/// Writes a tile's first `rows x cols` sums at `at` (rows `out.ld`
/// apart): `alpha * sum`, plus `beta * out` on the first step of k when
/// the output is read, plus the sums so far on later steps.
///
/// # Safety
/// `rows x cols` outputs from `at` must be writable.
#[inline(always)]
unsafe fn store(
    acc: &[[__m512; 2]; MR],
    at: *mut f32,
    out: Out,
    rows: usize,
    cols: usize,
    alpha: f32,
    first: bool,
) {
    let (alpha, beta) = (_mm512_set1_ps(alpha), _mm512_set1_ps(out.beta));
    let mask = |from: usize| -> __mmask16 {
        let c = cols.saturating_sub(from).min(16);
        ((1u32 << c) - 1) as __mmask16
    };
    let masks = [mask(0), mask(16)];
    for (r, acc) in acc.iter().enumerate().take(rows) {
        for (h, (&sum, &mask)) in acc.iter().zip(&masks).enumerate() {
            let p = at.add(r * out.ld + 16 * h);
            let v = if !first {
                _mm512_fmadd_ps(sum, alpha, _mm512_maskz_loadu_ps(mask, p))
            } else if out.read {
                _mm512_fmadd_ps(
                    _mm512_maskz_loadu_ps(mask, p),
                    beta,
                    _mm512_mul_ps(sum, alpha),
                )
            } else {
                _mm512_mul_ps(sum, alpha)
            };
            _mm512_mask_storeu_ps(p, mask, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `alpha * a @ b + beta * c` in f64, with Σ |terms| for the tolerance.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        a: &[f32],
        (a_rs, a_cs): (usize, usize),
        b: &[f32],
        (b_rs, b_cs): (usize, usize),
        c: Option<&[f32]>,
        (m, n, k): (usize, usize, usize),
        alpha: f32,
        beta: f32,
    ) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut mag) = (0f64, 0f64);
                for kk in 0..k {
                    let t = a[i * a_rs + kk * a_cs] as f64 * b[kk * b_rs + j * b_cs] as f64;
                    s += t;
                    mag += t.abs();
                }
                let (mut v, mut mag) = (alpha as f64 * s, (alpha as f64 * mag).abs());
                if let Some(c) = c {
                    v += beta as f64 * c[i * n + j] as f64;
                    mag += (beta as f64 * c[i * n + j] as f64).abs();
                }
                out.push((v, mag));
            }
        }
        out
    }

    fn values(len: usize, seed: u64) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let h = (i as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Every layout the packers take (rows or columns contiguous, for
        /// both operands), edges in every dimension, k across steps, the
        /// output read or not, one thread or many.
        #[test]
        fn matches_f64_reference(
            m in 1usize..40,
            n in 1usize..80,
            k in prop_oneof![1usize..20, 250usize..300, 500usize..540, 1020usize..1060],
            a_t in any::<bool>(),
            b_t in any::<bool>(),
            read in any::<bool>(),
            parallel in any::<bool>(),
            seed in any::<u64>(),
        ) {
            // (A CPU without AVX-512 has nothing to test here.)
            if !available() {
                return Ok(());
            }
            let a = values(m * k, seed);
            let b = values(k * n, seed ^ 1);
            let (a_rs, a_cs) = if a_t { (1, m) } else { (k, 1) };
            let (b_rs, b_cs) = if b_t { (1, k) } else { (n, 1) };
            let mut c = values(m * n, seed ^ 2);
            let c0 = c.clone();
            let (alpha, beta) = (0.75, -1.5);
            let view = |v: &[f32], rs: usize, cs: usize| View { ptr: v.as_ptr(), rs: rs as isize, cs: cs as isize };
            let out = Out { ptr: c.as_mut_ptr(), ld: n, read, beta };
            // SAFETY: the views and the output cover their vectors exactly.
            unsafe { gemm(m, n, k, view(&a, a_rs, a_cs), view(&b, b_rs, b_cs), alpha, out, parallel) };
            let want = naive(&a, (a_rs, a_cs), &b, (b_rs, b_cs), read.then_some(&c0[..]), (m, n, k), alpha, beta);
            for (got, (v, mag)) in c.iter().zip(want) {
                prop_assert!((*got as f64 - v).abs() <= 1e-6 * mag + 1e-30, "{got} vs {v}");
            }
        }
    }

    /// One, two and three equal blocks of k, the last one shorter when
    /// k does not divide.
    #[test]
    fn k_is_split_into_equal_blocks() {
        assert_eq!(
            [1, 300, 512, 513, 576, 1536, 2048, 2049].map(k_step),
            [1, 300, 512, 257, 288, 512, 512, 410]
        );
    }

    /// An empty sum leaves `beta * out` (or zeros).
    #[test]
    fn empty_k_scales_the_output() {
        if !available() {
            return;
        }
        let mut c = vec![2.0f32, -4.0];
        let v = View {
            ptr: [].as_ptr(),
            rs: 0,
            cs: 0,
        };
        let out = Out {
            ptr: c.as_mut_ptr(),
            ld: 2,
            read: true,
            beta: 0.5,
        };
        // SAFETY: k = 0 reads nothing; the output is 1 x 2.
        unsafe { gemm(1, 2, 0, v, v, 3.0, out, false) };
        assert_eq!(c, [1.0, -2.0]);
    }
}
