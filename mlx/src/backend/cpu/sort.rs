//! Sort, ArgSort, Partition and ArgPartition along one axis.
//!
//! The order is MLX's: the natural order of the dtype with NaNs after every
//! number (floats; complex numbers whose real part is NaN), and `-0.0` equal
//! to `0.0`. Sorts are stable, so equal elements keep their input order and
//! the result is unique, bit for bit. Complex numbers compare
//! lexicographically (real, then imaginary part); a NaN imaginary part
//! compares equal to everything, where MLX's order is not well defined.

use super::copy::to_contiguous_vec;
use super::PAR_THRESHOLD;
use crate::array::Data;
use crate::buffer::Buffer;
use crate::{Array, Complex64, Element, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::cmp::Ordering;

/// An element type with MLX's sort order.
pub trait SortElem: Element {
    /// Strict "sorts before" (NaNs last).
    fn less(self, other: Self) -> bool;
    /// The three-way comparison derived from [`SortElem::less`].
    #[inline]
    fn order(self, other: Self) -> Ordering {
        if self.less(other) {
            Ordering::Less
        } else if other.less(self) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }
}

macro_rules! plain_order {
    ($($t:ty),*) => {$(
        impl SortElem for $t {
            #[inline]
            fn less(self, other: Self) -> bool { self < other }
        }
    )*};
}
plain_order!(bool, u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float_order {
    ($($t:ty),*) => {$(
        impl SortElem for $t {
            #[inline]
            fn less(self, other: Self) -> bool {
                if self.is_nan() {
                    return false;
                }
                other.is_nan() || self < other
            }
        }
    )*};
}
float_order!(f32, f64, f16, bf16);

impl SortElem for Complex64 {
    #[inline]
    fn less(self, other: Self) -> bool {
        if self.re.is_nan() {
            return false;
        }
        if other.re.is_nan() {
            return true;
        }
        other.re > self.re || (other.re == self.re && other.im > self.im)
    }
}

/// The layout of a sort: `outer` blocks of `n * inner` elements (row-major),
/// each holding `inner` lanes of `n` elements spaced `inner` apart.
#[derive(Clone, Copy)]
struct Lanes {
    n: usize,
    inner: usize,
}

impl Lanes {
    fn new(shape: &[i32], axis: usize) -> Lanes {
        Lanes {
            n: shape[axis] as usize,
            inner: shape[axis + 1..].iter().map(|&d| d as usize).product(),
        }
    }
    fn block(self) -> usize {
        self.n * self.inner
    }
}

/// Applies `f(lane_in, lane_out)` to every lane: `lane_in` holds the lane's
/// input elements in order, `lane_out` receives the lane's output.
fn per_lane<T: Element, U: Element>(
    x: &[T],
    out: &mut [U],
    lanes: Lanes,
    f: impl Fn(&mut Vec<T>, &mut Vec<U>) + Sync,
) {
    let (n, inner, block) = (lanes.n, lanes.inner, lanes.block());
    if block == 0 {
        return;
    }
    let run = |(xb, ob): (&[T], &mut [U])| {
        let mut lane = Vec::with_capacity(n);
        let mut res = Vec::with_capacity(n);
        for i in 0..inner {
            lane.clear();
            res.clear();
            lane.extend((0..n).map(|k| xb[k * inner + i]));
            f(&mut lane, &mut res);
            for (k, &r) in res.iter().enumerate() {
                ob[k * inner + i] = r;
            }
        }
    };
    if x.len() >= PAR_THRESHOLD {
        x.par_chunks(block)
            .zip(out.par_chunks_mut(block))
            .for_each(run);
    } else {
        x.chunks(block).zip(out.chunks_mut(block)).for_each(run);
    }
}

fn finish<U: Element>(out: Vec<U>, shape: &[i32]) -> Data {
    Data::contiguous(Buffer::from_slice(&out), shape)
}

/// Stable sort of `a` along `axis`.
pub fn sort<T: SortElem>(a: &Array, axis: usize) -> Result<Data> {
    let x = to_contiguous_vec::<T>(&a.data()?, a.shape());
    let mut out = vec![T::default(); x.len()];
    per_lane(&x, &mut out, Lanes::new(a.shape(), axis), |lane, res| {
        lane.sort_by(|p, q| p.order(*q));
        res.extend_from_slice(lane);
    });
    Ok(finish(out, a.shape()))
}

/// The uint32 indices that stably sort `a` along `axis`.
pub fn argsort<T: SortElem>(a: &Array, axis: usize) -> Result<Data> {
    let x = to_contiguous_vec::<T>(&a.data()?, a.shape());
    let mut out = vec![0u32; x.len()];
    per_lane(&x, &mut out, Lanes::new(a.shape(), axis), |lane, res| {
        res.extend(0..lane.len() as u32);
        res.sort_by(|&p, &q| lane[p as usize].order(lane[q as usize]));
    });
    Ok(finish(out, a.shape()))
}

/// `a` with every lane along `axis` rearranged so that element `kth` is the
/// one a sort would put there, none before it sorts after it and none after
/// it sorts before it. The order inside the two parts is unspecified.
pub fn partition<T: SortElem>(a: &Array, axis: usize, kth: usize) -> Result<Data> {
    let x = to_contiguous_vec::<T>(&a.data()?, a.shape());
    let mut out = vec![T::default(); x.len()];
    per_lane(&x, &mut out, Lanes::new(a.shape(), axis), |lane, res| {
        lane.select_nth_unstable_by(kth, |p, q| p.order(*q));
        res.extend_from_slice(lane);
    });
    Ok(finish(out, a.shape()))
}

/// The uint32 indices that partition `a` along `axis` around `kth` (ties
/// ordered by index, as a stable sort would).
pub fn argpartition<T: SortElem>(a: &Array, axis: usize, kth: usize) -> Result<Data> {
    let x = to_contiguous_vec::<T>(&a.data()?, a.shape());
    let mut out = vec![0u32; x.len()];
    per_lane(&x, &mut out, Lanes::new(a.shape(), axis), |lane, res| {
        res.extend(0..lane.len() as u32);
        res.select_nth_unstable_by(kth, |&p, &q| {
            lane[p as usize].order(lane[q as usize]).then(p.cmp(&q))
        });
    });
    Ok(finish(out, a.shape()))
}

/// Binary search of `x` in the sorted `seq` (MLX's order, NaNs last): the
/// first index whose element is not below `x` (`right`: not ≤ `x`).
pub fn search_sorted<T: SortElem>(seq: &[T], x: T, right: bool) -> u32 {
    let (mut lo, mut hi) = (0usize, seq.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let m = seq[mid];
        let below = if right { !x.less(m) } else { m.less(x) };
        if below {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo as u32
}
