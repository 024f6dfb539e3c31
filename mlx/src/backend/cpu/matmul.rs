//! Batched matrix products: `gemm` crate or our own kernels.
//!
//! Operands are read in place through their strides (a transposed view
//! costs nothing; a broadcast batch has stride 0). f32 goes to
//! `sgemm512` on CPUs with AVX-512 (the `gemm` crate
//! uses AVX-512 only on nightly Rust: 2048^3 at 0.51x numpy's speed,
//! 0.9-1.0x with `sgemm512`), else, with f64 and complex64, to `gemm`; bfloat16 and
//! float16 (summed in MLX's order) go to [`panel_gemm`](super::panel_gemm).
//! A batch-1 row times a matrix goes to [`gemv`](super::gemv). Large
//! products use every rayon thread inside one call; many small ones are
//! spread over the batch instead.

use crate::array::Data;
use crate::backend::cpu::copy::for_each_row;
use crate::backend::cpu::num::Num;
use crate::buffer::Buffer;
use crate::{Complex64, Dtype, Element, Error, Result};
use gemm::Parallelism;
use rayon::prelude::*;

/// Multiply-adds per product above which one `gemm` call is split across threads.
const PAR_FLOPS: usize = 1 << 18;

/// One operand of a batched product: a strided view of a buffer.
pub struct MatrixView<'a> {
    /// The array's data (buffer, strides, offset) with the full batch shape.
    pub data: &'a Data,
    /// The view's shape: batch dims (equal to the output's) then rows, cols.
    pub shape: &'a [i32],
}

/// `alpha * (a @ b) + beta * c` over the last two axes, batched over the
/// leading axes, as a row-major buffer of `out_shape`. `c`, when given,
/// has the output's shape (broadcast views allowed); without it alpha is
/// applied and beta ignored.
pub fn addmm(
    a: MatrixView<'_>,
    b: MatrixView<'_>,
    c: Option<MatrixView<'_>>,
    alpha: f32,
    beta: f32,
    dtype: Dtype,
    out_shape: &[i32],
) -> Result<Data> {
    let nd = out_shape.len();
    if nd < 2 || a.shape.len() != nd || b.shape.len() != nd {
        return Err(Error::invalid(
            "Matmul",
            format!(
                "operands {:?} and {:?} do not fit the output {out_shape:?}",
                a.shape, b.shape
            ),
        ));
    }
    let size: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut buf = Buffer::zeroed(size * dtype.size());
    if size == 0 {
        return Ok(Data::contiguous(buf, out_shape));
    }
    if dtype == Dtype::Float32 && c.is_none() && one_row_gemv(&a, &b, alpha, out_shape, &mut buf) {
        return Ok(Data::contiguous(buf, out_shape));
    }
    match dtype {
        Dtype::Float32 => run::<f32>(&mut buf, &a, &b, c.as_ref(), alpha, beta, out_shape),
        Dtype::Float64 => run::<f64>(
            &mut buf,
            &a,
            &b,
            c.as_ref(),
            alpha as f64,
            beta as f64,
            out_shape,
        ),
        Dtype::Complex64 => run::<Complex64>(
            &mut buf,
            &a,
            &b,
            c.as_ref(),
            Complex64::new(alpha, 0.0),
            Complex64::new(beta, 0.0),
            out_shape,
        ),
        // gemm's f16 kernel and a widened f32 product round differently
        // from MLX; half types take MLX's own order.
        Dtype::Float16 | Dtype::Bfloat16 => {
            super::panel_gemm::addmm(&mut buf, dtype, &a, &b, c.as_ref(), alpha, beta, out_shape)
        }
        other => {
            return Err(Error::invalid(
                "Matmul",
                format!("matrix products need a floating point dtype, found {other}"),
            ))
        }
    }
    Ok(Data::contiguous(buf, out_shape))
}

/// `x @ W` for one row per batch entry (a batch-1 linear layer, or a
/// decode step's attention over its heads), run by [`gemv`](super::gemv)
/// when `W`'s layout allows; false leaves `out` alone.
fn one_row_gemv(
    a: &MatrixView<'_>,
    b: &MatrixView<'_>,
    alpha: f32,
    out_shape: &[i32],
    out: &mut Buffer,
) -> bool {
    let nd = out_shape.len();
    if out_shape[nd - 2] != 1 {
        return false;
    }
    let (k, n) = (a.shape[nd - 1] as usize, out_shape[nd - 1] as usize);
    let w = super::gemv::Strided {
        w: b.data.buffer.as_slice::<f32>(),
        offset: 0,
        row_stride: b.data.strides[nd - 2],
        col_stride: b.data.strides[nd - 1],
        k,
        n,
    };
    if !w.supported() {
        return false;
    }
    if k == 0 {
        // Empty sums (the offsets may point past empty buffers).
        let dst = out.as_mut_slice::<f32>().expect("heap buffer");
        dst.fill(0.0 * alpha);
        return true;
    }
    let batch = &out_shape[..nd - 2];
    let a_off = batch_offsets(batch, &a.data.strides[..nd - 2], a.data.offset);
    let b_off = batch_offsets(batch, &b.data.strides[..nd - 2], b.data.offset);
    let src = a.data.buffer.as_slice::<f32>();
    let step = a.data.strides[nd - 1];
    let x_of = |i: usize| -> std::borrow::Cow<'_, [f32]> {
        if step == 1 {
            src[a_off[i] as usize..][..k].into()
        } else {
            (0..k as isize)
                .map(|j| src[(a_off[i] + j * step) as usize])
                .collect()
        }
    };
    let dst = out.as_mut_slice::<f32>().expect("heap buffer");
    if a_off.len() == 1 {
        // One product: it spreads over threads itself.
        let w = super::gemv::Strided {
            offset: b_off[0] as usize,
            ..w
        };
        super::gemv::gemv(&x_of(0), &w, alpha, dst);
        return true;
    }
    // Many entries. Entries that read the same matrix (a broadcast batch
    // axis: grouped-query attention's query heads sharing a key/value
    // head) run together over one stretch of its memory at a time, so the
    // stretch comes from memory once, in address order, and then from
    // cache; stretches are the parallel tasks. (A decode step's key/value
    // caches are cold: the weights streamed through the cache since the
    // last step, so reading them in order matters most.)
    // Each entry's row, gathered once if strided (a group reads it per stretch).
    let xs: Vec<std::borrow::Cow<'_, [f32]>> = (0..a_off.len()).map(x_of).collect();
    let groups = same_offset_runs(&b_off);
    // W's rows (k) lie one after another when they are contiguous, else
    // its columns (n) do: stretches split that axis.
    let along_k = w.col_stride == 1;
    let (len, other) = if along_k { (k, n) } else { (n, k) };
    let sub = super::gemv::SUB_STRETCH;
    let per = (STRETCH_BYTES / (4 * other.max(1))).clamp(sub, len.max(sub));
    let tasks: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = groups
        .iter()
        .flat_map(|g| {
            (0..len)
                .step_by(per)
                .map(move |s| (g.clone(), s..(s + per).min(len)))
        })
        .collect();
    // A task's sums for its group's entries, `g.len()` rows: partial sums
    // over its rows of W (n each), or the sums of its columns.
    let run = |(g, part): &(std::ops::Range<usize>, std::ops::Range<usize>)| -> Vec<f32> {
        let width = if along_k { n } else { part.len() };
        let mut sums = vec![0f32; g.len() * width];
        let base = super::gemv::Strided {
            offset: b_off[g.start] as usize,
            ..w
        };
        let xs: Vec<&[f32]> = xs[g.clone()].iter().map(|x| &**x).collect();
        if along_k {
            super::gemv::shared::accumulate(&xs, &base, part.clone(), &mut sums);
        } else {
            super::gemv::shared::dot(&xs, &base, part.clone(), &mut sums);
        }
        sums
    };
    let parts: Vec<Vec<f32>> = if a_off.len() * k * n >= super::gemv::PAR_WORK_DOTS {
        tasks.par_iter().map(run).collect()
    } else {
        tasks.iter().map(run).collect()
    };
    if along_k {
        dst.fill(0.0);
    }
    for ((g, part), sums) in tasks.iter().zip(&parts) {
        let width = sums.len() / g.len();
        for (i, p) in g.clone().zip(sums.chunks(width)) {
            let row = &mut dst[i * n..(i + 1) * n];
            if along_k {
                // Partial sums over stretches of rows, added in order.
                row.iter_mut().zip(p).for_each(|(o, &v)| *o += v);
            } else {
                row[part.clone()].copy_from_slice(p);
            }
        }
    }
    if alpha != 1.0 {
        dst.iter_mut().for_each(|o| *o *= alpha);
    }
    true
}

/// Bytes of a matrix one task of a shared one-row product reads.
const STRETCH_BYTES: usize = 32 << 10;

/// Runs of consecutive equal values, as index ranges.
fn same_offset_runs(offsets: &[isize]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=offsets.len() {
        if i == offsets.len() || offsets[i] != offsets[start] {
            runs.push(start..i);
            start = i;
        }
    }
    runs
}

/// Element offsets of every batch entry, in row-major batch order.
pub(super) fn batch_offsets(batch: &[i32], strides: &[isize], offset: usize) -> Vec<isize> {
    let mut out = Vec::with_capacity(batch.iter().map(|&d| d as usize).product());
    if batch.is_empty() {
        out.push(offset as isize);
        return out;
    }
    for_each_row(batch, strides, offset, |base, len, stride| {
        for i in 0..len as isize {
            out.push(base + i * stride);
        }
    });
    out
}

/// Whether the batch entries sit one after another along the row axis, so
/// the whole batch is one tall matrix with `batch * rows` rows.
fn rows_merge(offsets: &[isize], rows: usize, row_stride: isize) -> bool {
    let step = rows as isize * row_stride;
    offsets
        .iter()
        .enumerate()
        .all(|(i, &o)| o == offsets[0] + i as isize * step)
}

/// A raw pointer shared by the parallel batch loop.
#[derive(Clone, Copy)]
struct Ptr<T>(*mut T);
// SAFETY: the operands are only read, and each batch entry writes its own
// disjoint block of the output.
unsafe impl<T> Send for Ptr<T> {}
unsafe impl<T> Sync for Ptr<T> {}

fn run<T: Element + Num>(
    out: &mut Buffer,
    a: &MatrixView<'_>,
    b: &MatrixView<'_>,
    c: Option<&MatrixView<'_>>,
    alpha: T,
    beta: T,
    out_shape: &[i32],
) {
    let nd = out_shape.len();
    let (m, n) = (out_shape[nd - 2] as usize, out_shape[nd - 1] as usize);
    let k = a.shape[nd - 1] as usize;
    let batch = &out_shape[..nd - 2];
    let dst = out.as_mut_slice::<T>().expect("heap buffer");

    // With c, the output starts as a copy of c and gemm accumulates into it.
    if let Some(c) = c {
        let src = c.data.buffer.as_slice::<T>();
        let mut i = 0;
        for_each_row(
            out_shape,
            &c.data.strides,
            c.data.offset,
            |base, len, stride| {
                for j in 0..len as isize {
                    dst[i] = src[(base + j * stride) as usize];
                    i += 1;
                }
            },
        );
    }
    let read_dst = c.is_some();
    if k == 0 {
        // No products: the result is beta * c (or zeros).
        if read_dst {
            dst.iter_mut().for_each(|x| *x = x.mul(beta));
        }
        return;
    }

    let (a_s, b_s) = (&a.data.strides, &b.data.strides);
    let a_off = batch_offsets(batch, &a_s[..nd - 2], a.data.offset);
    let b_off = batch_offsets(batch, &b_s[..nd - 2], b.data.offset);
    let (a_rs, a_cs) = (a_s[nd - 2], a_s[nd - 1]);
    let (b_rs, b_cs) = (b_s[nd - 2], b_s[nd - 1]);
    let ap = Ptr(a.data.buffer.as_slice::<T>().as_ptr() as *mut T);
    let bp = Ptr(b.data.buffer.as_slice::<T>().as_ptr() as *mut T);
    let dp = Ptr(dst.as_mut_ptr());
    let nb = a_off.len();

    // gemm computes dst := s_dst * dst + s_prod * (lhs @ rhs).
    let gemm_one = move |a_o: isize, b_o: isize, d_o: usize, rows: usize, par: Parallelism| {
        let (ap, bp, dp) = (ap, bp, dp);
        #[cfg(target_arch = "x86_64")]
        if T::DTYPE == Dtype::Float32 && super::sgemm512::available() {
            use super::sgemm512::{gemm, Out, View};
            let view = |p: *mut T, o: isize, rs: isize, cs: isize| View {
                // SAFETY: T is f32 (its dtype says so); the offset lies
                // inside the buffer, as for `gemm` below.
                ptr: unsafe { p.offset(o) } as *const f32,
                rs,
                cs,
            };
            let out = Out {
                // SAFETY: as for `gemm` below.
                ptr: unsafe { dp.0.add(d_o) } as *mut f32,
                ld: n,
                read: read_dst,
                beta: beta.to_f64() as f32,
            };
            let (a, b) = (view(ap.0, a_o, a_rs, a_cs), view(bp.0, b_o, b_rs, b_cs));
            let parallel = !matches!(par, Parallelism::None);
            // SAFETY: the CPU has AVX-512 (checked); the views and the
            // output block are those `gemm` would be given.
            unsafe { gemm(rows, n, k, a, b, alpha.to_f64() as f32, out, parallel) };
            return;
        }
        // SAFETY: offsets and strides come from views that lie inside their
        // buffers; the destination block [d_o, d_o + rows * n) lies inside
        // the output and is written by this call only.
        unsafe {
            gemm::gemm(
                rows,
                n,
                k,
                dp.0.add(d_o),
                1,
                n as isize,
                read_dst,
                ap.0.offset(a_o),
                a_cs,
                a_rs,
                bp.0.offset(b_o),
                b_cs,
                b_rs,
                beta,
                alpha,
                false,
                false,
                false,
                par,
            )
        }
    };

    // A shared right operand and a left operand whose batch stacks into
    // rows: one tall product (the common `x @ W` with batched x).
    let b_shared = b_off.iter().all(|&o| o == b_off[0]);
    if nb > 1 && b_shared && rows_merge(&a_off, m, a_rs) {
        gemm_one(a_off[0], b_off[0], 0, nb * m, parallelism(nb * m * n * k));
        return;
    }
    if m * n * k >= PAR_FLOPS || nb == 1 {
        let par = parallelism(m * n * k);
        for i in 0..nb {
            gemm_one(a_off[i], b_off[i], i * m * n, m, par);
        }
        return;
    }
    let one = |i: usize| gemm_one(a_off[i], b_off[i], i * m * n, m, Parallelism::None);
    if nb * m * n * k >= PAR_FLOPS {
        (0..nb).into_par_iter().for_each(one);
    } else {
        (0..nb).for_each(one);
    }
}

/// Threads for one product of `flops` multiply-adds.
fn parallelism(flops: usize) -> Parallelism {
    if flops >= PAR_FLOPS && rayon::current_num_threads() > 1 {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    }
}
