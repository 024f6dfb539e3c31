//! Reduction kernels: sum, prod, min, max, and, or over any set of axes of
//! a strided input, argmin/argmax along one axis, and (in submodules) the
//! fused last-axis kernels for softmax and logsumexp.
//!
//! A reduction is first *planned*: size-1 dimensions are dropped, the kept
//! dimensions stay in output order, the reduced ones are sorted by stride, and
//! neighbours that are contiguous with each other are merged. Three loops
//! then cover every layout:
//!
//! - **row**: the innermost reduced run has stride 1 (reducing the last axis
//!   of a row-major array, or everything). Each output folds contiguous
//!   slices with 8 independent lanes (vectorises) combined pairwise.
//! - **column**: the innermost kept run has stride 1 (reducing leading axes).
//!   A block of outputs is accumulated row by row, vectorised across outputs,
//!   with a second level of block accumulators so long sums stay accurate.
//! - **general**: anything else, one output at a time.
//!
//! Work is split across threads (rayon) above [`PAR_THRESHOLD`] input
//! elements, over outputs, or inside the reduction when there are few outputs.

mod elems;
mod softmax;

pub use elems::{Limits, SumElem, Truthy};
pub use softmax::{logsumexp_last, softmax_last};

use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::backend::cpu::num::Num;
use crate::buffer::Buffer;
use crate::Element;
use rayon::prelude::*;

/// One reduction: how elements fold into an accumulator and what comes out.
pub trait Reducer<T: Element>: Sync {
    /// The accumulator (wider than `T` where that matters: f32 for half types).
    type Acc: Copy + Send + Sync;
    /// The output element.
    type Out: Element;
    /// Whether the fold must run in MLX's order: one accumulator per output,
    /// elements added one after another (each contiguous run into a fresh
    /// partial that then joins the running total), never split across lanes,
    /// blocks or threads. MLX's CPU reductions do exactly this on x86 (its
    /// SIMD width there is 1), so float sums and products round as MLX's do
    /// only in this order: an 8-lane sum of squares differed from MLX in the
    /// last f32 bit, which flipped bf16 roundings of RMSNorm's decomposition.
    const IN_ORDER: bool = false;
    fn init() -> Self::Acc;
    fn fold(a: Self::Acc, x: T) -> Self::Acc;
    fn combine(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn finish(a: Self::Acc) -> Self::Out;
}

/// Sum; integers of 4 bytes or less accumulate in (wrapping) 32 bits, half
/// types in f32, bool counts.
pub struct SumR;
/// Product, with the accumulators of [`SumR`].
pub struct ProdR;
/// Maximum; NaN propagates.
pub struct MaxR;
/// Minimum; NaN propagates.
pub struct MinR;
/// Whether every element is non-zero.
pub struct AndR;
/// Whether any element is non-zero.
pub struct OrR;

impl<T: SumElem> Reducer<T> for SumR {
    const IN_ORDER: bool = T::ROUNDS;
    type Acc = T::Acc;
    type Out = T::Out;
    #[inline(always)]
    fn init() -> T::Acc {
        T::acc_zero()
    }
    #[inline(always)]
    fn fold(a: T::Acc, x: T) -> T::Acc {
        T::acc_add(a, x.to_acc())
    }
    #[inline(always)]
    fn combine(a: T::Acc, b: T::Acc) -> T::Acc {
        T::acc_add(a, b)
    }
    #[inline(always)]
    fn finish(a: T::Acc) -> T::Out {
        T::acc_out(a)
    }
}

impl<T: SumElem> Reducer<T> for ProdR {
    const IN_ORDER: bool = T::ROUNDS;
    type Acc = T::Acc;
    type Out = T::Out;
    #[inline(always)]
    fn init() -> T::Acc {
        T::acc_one()
    }
    #[inline(always)]
    fn fold(a: T::Acc, x: T) -> T::Acc {
        T::acc_mul(a, x.to_acc())
    }
    #[inline(always)]
    fn combine(a: T::Acc, b: T::Acc) -> T::Acc {
        T::acc_mul(a, b)
    }
    #[inline(always)]
    fn finish(a: T::Acc) -> T::Out {
        T::acc_out(a)
    }
}

impl<T: Limits + Num> Reducer<T> for MaxR {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init() -> T {
        T::lowest()
    }
    #[inline(always)]
    fn fold(a: T, x: T) -> T {
        a.max(x)
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.max(b)
    }
    #[inline(always)]
    fn finish(a: T) -> T {
        a
    }
}

impl<T: Limits + Num> Reducer<T> for MinR {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init() -> T {
        T::highest()
    }
    #[inline(always)]
    fn fold(a: T, x: T) -> T {
        a.min(x)
    }
    #[inline(always)]
    fn combine(a: T, b: T) -> T {
        a.min(b)
    }
    #[inline(always)]
    fn finish(a: T) -> T {
        a
    }
}

impl<T: Truthy> Reducer<T> for AndR {
    type Acc = bool;
    type Out = bool;
    #[inline(always)]
    fn init() -> bool {
        true
    }
    #[inline(always)]
    fn fold(a: bool, x: T) -> bool {
        a & x.truthy()
    }
    #[inline(always)]
    fn combine(a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn finish(a: bool) -> bool {
        a
    }
}

impl<T: Truthy> Reducer<T> for OrR {
    type Acc = bool;
    type Out = bool;
    #[inline(always)]
    fn init() -> bool {
        false
    }
    #[inline(always)]
    fn fold(a: bool, x: T) -> bool {
        a | x.truthy()
    }
    #[inline(always)]
    fn combine(a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn finish(a: bool) -> bool {
        a
    }
}

/// A run of elements: (length, stride in elements).
type Dim = (usize, isize);

/// How one reduction walks its input.
#[derive(Debug)]
struct Plan {
    /// Kept dimensions in output (row-major) order, merged; input strides.
    kept: Vec<Dim>,
    /// Reduced dimensions, merged, innermost (smallest stride) last.
    red: Vec<Dim>,
}

/// Merges neighbours `(n0, s0), (n1, s1)` into one run when `s0 == n1 * s1`.
fn merge(dims: Vec<Dim>) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::with_capacity(dims.len());
    for (n, s) in dims {
        match out.last_mut() {
            Some(last) if last.1 == s * n as isize => *last = (last.0 * n, s),
            _ => out.push((n, s)),
        }
    }
    out
}

fn plan(shape: &[i32], strides: &[isize], axes: &[usize]) -> Plan {
    let mut kept = Vec::new();
    let mut red = Vec::new();
    for (i, (&n, &s)) in shape.iter().zip(strides).enumerate() {
        if n == 1 {
            continue;
        }
        if axes.contains(&i) {
            red.push((n as usize, s));
        } else {
            kept.push((n as usize, s));
        }
    }
    // The order of reduced runs is free: put the smallest |stride| innermost.
    red.sort_by_key(|&(_, s)| std::cmp::Reverse(s.unsigned_abs()));
    Plan {
        kept: merge(kept),
        red: merge(red),
    }
}

/// Offset of row-major linear index `i` over `dims`.
#[inline]
fn loc(mut i: usize, dims: &[Dim]) -> isize {
    let mut off = 0isize;
    for &(n, s) in dims.iter().rev() {
        off += (i % n) as isize * s;
        i /= n;
    }
    off
}

/// Calls `f(offset)` for every index of `dims` in row-major order (once for no dims).
#[inline]
fn for_each_offset(dims: &[Dim], mut f: impl FnMut(isize)) {
    if dims.iter().any(|&(n, _)| n == 0) {
        return;
    }
    let mut idx = vec![0usize; dims.len()];
    let mut off = 0isize;
    loop {
        f(off);
        let mut ax = dims.len();
        loop {
            if ax == 0 {
                return;
            }
            ax -= 1;
            idx[ax] += 1;
            off += dims[ax].1;
            if idx[ax] < dims[ax].0 {
                break;
            }
            off -= dims[ax].1 * dims[ax].0 as isize;
            idx[ax] = 0;
        }
    }
}

/// Lanes of independent accumulators in the contiguous fold.
const LANES: usize = 8;
/// Slices up to this length are folded directly; longer ones are halved (pairwise).
const PAIRWISE_BLOCK: usize = 1024;

/// Folds a contiguous slice: 8 lanes, pairwise above [`PAIRWISE_BLOCK`];
/// element after element when the reducer wants [`Reducer::IN_ORDER`].
#[inline]
pub fn fold_slice<T: Element, R: Reducer<T>>(x: &[T]) -> R::Acc {
    if R::IN_ORDER {
        return x.iter().fold(R::init(), |a, &v| R::fold(a, v));
    }
    if x.len() > PAIRWISE_BLOCK {
        let mid = (x.len() / 2).next_multiple_of(LANES);
        let (a, b) = x.split_at(mid);
        return R::combine(fold_slice::<T, R>(a), fold_slice::<T, R>(b));
    }
    let mut lanes = [R::init(); LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = R::fold(*l, v);
        }
    }
    let mut acc = R::combine(
        R::combine(
            R::combine(lanes[0], lanes[1]),
            R::combine(lanes[2], lanes[3]),
        ),
        R::combine(
            R::combine(lanes[4], lanes[5]),
            R::combine(lanes[6], lanes[7]),
        ),
    );
    for &v in rest {
        acc = R::fold(acc, v);
    }
    acc
}

/// Reduces `data` (shaped `shape`) over `axes` (normalised, distinct) with
/// `R`. The result is row-major with the reduced axes kept as size 1.
pub fn reduce<T: Element, R: Reducer<T>>(data: &Data, shape: &[i32], axes: &[usize]) -> Data {
    let out_shape: Vec<i32> = shape
        .iter()
        .enumerate()
        .map(|(i, &n)| if axes.contains(&i) { 1 } else { n })
        .collect();
    let n_out: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut buf = Buffer::for_elements::<R::Out>(n_out);
    let out = buf.as_mut_slice::<R::Out>().expect("heap buffer");
    if n_out > 0 {
        let src = data.buffer.as_slice::<T>();
        let p = plan(shape, &data.strides, axes);
        if p.red.iter().any(|&(n, _)| n == 0) {
            out.fill(R::finish(R::init()));
        } else {
            run::<T, R>(&p, src, data.offset as isize, out);
        }
    }
    Data::contiguous(buf, &out_shape)
}

fn run<T: Element, R: Reducer<T>>(p: &Plan, src: &[T], base: isize, out: &mut [R::Out]) {
    let n_red: usize = p.red.iter().map(|d| d.0).product();
    let total = n_red * out.len();
    let parallel = total >= PAR_THRESHOLD;
    match (p.red.last(), p.kept.last()) {
        (Some(&(n, 1)), _) => {
            let mid = &p.red[..p.red.len() - 1];
            row::<T, R>(&p.kept, mid, n, src, base, out, parallel)
        }
        (_, Some(&(m, 1))) => {
            let outer = &p.kept[..p.kept.len() - 1];
            column::<T, R>(outer, m, &p.red, src, base, out, parallel)
        }
        _ => general::<T, R>(&p.kept, &p.red, src, base, out, parallel),
    }
}

/// Output chunk length for parallel loops over outputs costing `per` each.
fn out_chunk(n_out: usize, per: usize) -> usize {
    (PAR_THRESHOLD / per.max(1)).clamp(1, n_out.div_ceil(rayon::current_num_threads()).max(1))
}

/// Innermost reduced run is contiguous: fold slices of length `n`.
fn row<T: Element, R: Reducer<T>>(
    kept: &[Dim],
    mid: &[Dim],
    n: usize,
    src: &[T],
    base: isize,
    out: &mut [R::Out],
    parallel: bool,
) {
    let slice = |off: isize| &src[off as usize..off as usize + n];
    let one = |k: usize| -> R::Acc {
        let b = base + loc(k, kept);
        let mut acc = R::init();
        for_each_offset(mid, |o| {
            acc = R::combine(acc, fold_slice::<T, R>(slice(b + o)))
        });
        acc
    };
    let n_mid: usize = mid.iter().map(|d| d.0).product();
    if !parallel {
        out.iter_mut()
            .enumerate()
            .for_each(|(k, o)| *o = R::finish(one(k)));
    } else if out.len() >= 2 * rayon::current_num_threads() || R::IN_ORDER {
        // (An in-order fold may not be split, so few outputs stay whole here.)
        let chunk = out_chunk(out.len(), n * n_mid);
        out.par_chunks_mut(chunk).enumerate().for_each(|(c, o)| {
            for (i, o) in o.iter_mut().enumerate() {
                *o = R::finish(one(c * chunk + i));
            }
        });
    } else {
        // Few outputs: split each reduction into pieces across threads.
        const PIECE: usize = 1 << 16;
        let pieces = n.div_ceil(PIECE);
        for (k, o) in out.iter_mut().enumerate() {
            let b = base + loc(k, kept);
            let acc = (0..n_mid * pieces)
                .into_par_iter()
                .map(|it| {
                    let off = b + loc(it / pieces, mid);
                    let s = slice(off);
                    let lo = (it % pieces) * PIECE;
                    fold_slice::<T, R>(&s[lo..(lo + PIECE).min(n)])
                })
                .reduce(R::init, R::combine);
            *o = R::finish(acc);
        }
    }
}

/// Rows folded into block accumulators before joining the running total.
const COLUMN_BLOCK: usize = 64;
/// Outputs accumulated together in the column loop (the accumulators stay in cache).
const COLUMN_WIDTH: usize = 4096;

/// Innermost kept run is contiguous (length `m`): accumulate whole rows,
/// streaming through memory. Work is split over outer indices, over column
/// chunks, or (few outputs) over pieces of the reduced rows.
fn column<T: Element, R: Reducer<T>>(
    outer: &[Dim],
    m: usize,
    red: &[Dim],
    src: &[T],
    base: isize,
    out: &mut [R::Out],
    parallel: bool,
) {
    let n_red: usize = red.iter().map(|d| d.0).product();
    let threads = rayon::current_num_threads();
    // Rows [r0, r1) of the reduction, columns [b, b + len) of the input.
    let accumulate = |b: isize, len: usize, r0: usize, r1: usize| -> Vec<R::Acc> {
        let mut total = vec![R::init(); len];
        let mut block = vec![R::init(); len];
        let mut rows = 0;
        for r in r0..r1 {
            let off = (b + loc(r, red)) as usize;
            for (a, &v) in block.iter_mut().zip(&src[off..off + len]) {
                *a = R::fold(*a, v);
            }
            rows += 1;
            // Block partials would reorder an in-order fold: fold straight
            // into the total (`total` stays at init and joins it once below).
            if rows == COLUMN_BLOCK && !R::IN_ORDER {
                for (t, a) in total.iter_mut().zip(block.iter_mut()) {
                    *t = R::combine(*t, *a);
                    *a = R::init();
                }
                rows = 0;
            }
        }
        for (t, a) in total.iter_mut().zip(block) {
            *t = R::combine(*t, a);
        }
        total
    };
    // Outputs `o` = columns [j0, j0 + o.len()) of outer index k.
    let unit = |k: usize, j0: usize, o: &mut [R::Out], split_rows: bool| {
        let b = base + loc(k, outer) + j0 as isize;
        let len = o.len();
        let acc = if split_rows && !R::IN_ORDER {
            let piece = n_red.div_ceil(4 * threads).max(COLUMN_BLOCK);
            (0..n_red.div_ceil(piece))
                .into_par_iter()
                .map(|p| accumulate(b, len, p * piece, ((p + 1) * piece).min(n_red)))
                .reduce(
                    || vec![R::init(); len],
                    |mut x, y| {
                        x.iter_mut()
                            .zip(y)
                            .for_each(|(a, b)| *a = R::combine(*a, b));
                        x
                    },
                )
        } else {
            accumulate(b, len, 0, n_red)
        };
        for (o, a) in o.iter_mut().zip(acc) {
            *o = R::finish(a);
        }
    };
    let w = m.min(COLUMN_WIDTH);
    let n_outer = out.len() / m;
    if parallel && n_outer >= 2 * threads {
        out.par_chunks_mut(m).enumerate().for_each(|(k, row)| {
            for (c, o) in row.chunks_mut(w).enumerate() {
                unit(k, c * w, o, false);
            }
        });
    } else if parallel && m.div_ceil(w) >= 2 * threads {
        for (k, row) in out.chunks_mut(m).enumerate() {
            row.par_chunks_mut(w)
                .enumerate()
                .for_each(|(c, o)| unit(k, c * w, o, false));
        }
    } else {
        for (k, row) in out.chunks_mut(m).enumerate() {
            for (c, o) in row.chunks_mut(w).enumerate() {
                unit(k, c * w, o, parallel);
            }
        }
    }
}

/// Any layout: one output at a time, walking the reduced runs.
fn general<T: Element, R: Reducer<T>>(
    kept: &[Dim],
    red: &[Dim],
    src: &[T],
    base: isize,
    out: &mut [R::Out],
    parallel: bool,
) {
    let one = |k: usize| {
        let b = base + loc(k, kept);
        let mut acc = R::init();
        for_each_offset(red, |r| acc = R::fold(acc, src[(b + r) as usize]));
        R::finish(acc)
    };
    if parallel {
        let n_red: usize = red.iter().map(|d| d.0).product();
        let chunk = out_chunk(out.len(), n_red);
        out.par_chunks_mut(chunk).enumerate().for_each(|(c, o)| {
            for (i, o) in o.iter_mut().enumerate() {
                *o = one(c * chunk + i);
            }
        });
    } else {
        out.iter_mut().enumerate().for_each(|(k, o)| *o = one(k));
    }
}

/// Index of the first maximum (`max = true`) or minimum along `axis`, as
/// uint32, with `axis` kept as size 1. A NaN counts as the extreme: the first
/// NaN's index is the answer (MLX 0.32.4 and numpy agree).
pub fn arg_reduce<T: Element + Num>(data: &Data, shape: &[i32], axis: usize, max: bool) -> Data {
    let mut out_shape = shape.to_vec();
    out_shape[axis] = 1;
    let n_out: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut buf = Buffer::zeroed(n_out * 4);
    let out = buf.as_mut_slice::<u32>().expect("heap buffer");
    let (n, s) = (shape[axis] as usize, data.strides[axis]);
    let kept: Vec<Dim> = shape
        .iter()
        .zip(&data.strides)
        .enumerate()
        .filter(|&(i, _)| i != axis)
        .map(|(_, (&n, &s))| (n as usize, s))
        .collect();
    let src = data.buffer.as_slice::<T>();
    let base = data.offset as isize;
    let one = |k: usize| -> u32 {
        if n == 0 {
            return 0;
        }
        let b = base + loc(k, &kept);
        let mut best = src[b as usize];
        let mut at = 0u32;
        for j in 1..n {
            let v = src[(b + j as isize * s) as usize];
            // `x != x` only for NaN: the first NaN wins, as in numpy.
            #[allow(clippy::eq_op)]
            let better = (v != v && best == best) || if max { best.lt(v) } else { v.lt(best) };
            if better {
                best = v;
                at = j as u32;
            }
        }
        at
    };
    if n_out * n >= PAR_THRESHOLD {
        let chunk = out_chunk(n_out, n);
        out.par_chunks_mut(chunk).enumerate().for_each(|(c, o)| {
            for (i, o) in o.iter_mut().enumerate() {
                *o = one(c * chunk + i);
            }
        });
    } else {
        out.iter_mut().enumerate().for_each(|(k, o)| *o = one(k));
    }
    Data::contiguous(buf, &out_shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_contiguous_runs() {
        let p = plan(&[2, 3, 4], &[12, 4, 1], &[1, 2]);
        assert_eq!(p.kept, vec![(2, 12)]);
        assert_eq!(p.red, vec![(12, 1)]);
        let p = plan(&[4, 3], &[1, 4], &[0]);
        assert_eq!(p.kept, vec![(3, 4)]);
        assert_eq!(p.red, vec![(4, 1)]);
    }

    #[test]
    fn float_sums_fold_in_order() {
        // MLX's CPU order: one running f32 total, element after element.
        let x: Vec<f32> = (0..5000).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
        let seq = x.iter().fold(0.0f32, |a, &v| a + v);
        assert_eq!(fold_slice::<f32, SumR>(&x).to_bits(), seq.to_bits());
        let data = Data::contiguous(Buffer::from_slice(&x), &[5000]);
        let out = reduce::<f32, SumR>(&data, &[5000], &[0]);
        assert_eq!(out.buffer.as_slice::<f32>()[0].to_bits(), seq.to_bits());
        // Integer sums keep the lanes (any order gives the same bits).
        let n: Vec<i32> = (0..100).collect();
        assert_eq!(fold_slice::<i32, SumR>(&n), 4950);
    }
}
