//! Recognition of the graphs MLX's CPU build records for `fast.rms_norm`
//! and `fast.rope` (it exports their decomposition, not the fused
//! primitives): each such subgraph of an imported trace (float32, bfloat16
//! or float16) becomes one [`Recognized`] entry whose kernel does the same
//! arithmetic, operation for operation, in one pass. The results are the bits the plain entries
//! give; what goes is the dispatch and the intermediate arrays of a dozen
//! small kernels per layer, which a decode step pays with cold caches.
//! Both ropes are recognised: on the halves of the last axis and, as
//! `traditional`, on its even and odd elements, over all of the axis or
//! its first `dims` (the rest passed through).
//!
//! Matched only where every intermediate has no other reader, so no work
//! is done twice and the entries the kernel replaces can be dropped.

use super::fused::{Operand, Step};
use super::recognized::{is_kernel_dtype, Kind, Recognized};
use super::tape::{input_index, reader_counts, spec_of_ref, Tape, TapeEntry, ValueRef};
use crate::primitives::reduce::{Reduce, ReduceType};
use crate::primitives::shape::{Broadcast, Concatenate, Slice};
use crate::primitives::unary::Sqrt;
use crate::{Array, Dtype};

/// Rewrites the rms-norm and rope subgraphs of `tape` as [`Recognized`]
/// entries (before `fuse`, which would otherwise take their element-wise
/// steps apart into chains).
pub fn recognize(tape: &mut Tape, constants: &[Array]) {
    let readers = reader_counts(tape);
    let g = Graph {
        tape,
        constants,
        readers: &readers,
    };
    let found: Vec<(usize, TapeEntry)> = (0..tape.entries.len())
        .filter_map(|k| {
            let (kind, ext, interior) = g
                .rms_norm(k)
                .or_else(|| g.rope(k))
                .or_else(|| g.rope_pairs(k))?;
            Some((k, g.entry_for(kind, ext, interior)))
        })
        .collect();
    if found.is_empty() {
        return;
    }
    for (k, e) in found {
        tape.entries[k] = e;
    }
    super::simplify::remove_dead(tape);
}

/// The start, end and stride along the last axis of a slice of a value
/// shaped `xs` that takes every element of each other axis; None for any
/// other slice.
fn last_axis_range(sl: &Slice, xs: &[i32]) -> Option<(i32, i32, i32)> {
    let n = xs.len();
    let parts = [&sl.start_indices, &sl.end_indices, &sl.strides];
    if n == 0 || parts.iter().any(|v| v.len() != n) {
        return None;
    }
    let whole = (0..n - 1)
        .all(|i| sl.start_indices[i] == 0 && sl.end_indices[i] == xs[i] && sl.strides[i] == 1);
    whole.then(|| {
        (
            sl.start_indices[n - 1],
            sl.end_indices[n - 1],
            sl.strides[n - 1],
        )
    })
}

/// Whether `axis` names the last of `ndim` axes.
fn is_last_axis(axis: i32, ndim: usize) -> bool {
    axis == -1 || axis == ndim as i32 - 1
}

/// A match: the kernel, its inputs in the kernel's order, and the entries
/// it replaces (the root last).
type Match = (Kind, Vec<ValueRef>, Vec<usize>);

/// The tape read-only, with each entry's number of readers.
struct Graph<'a> {
    tape: &'a Tape,
    constants: &'a [Array],
    readers: &'a [usize],
}

impl Graph<'_> {
    /// Entry `r` reads, when `r` is an entry of `name` that only one entry
    /// reads.
    fn sole(&self, r: ValueRef, name: &str) -> Option<(usize, &TapeEntry)> {
        let ValueRef::Entry { entry, output: 0 } = r else {
            return None;
        };
        let e = &self.tape.entries[entry];
        (e.primitive.name() == name && self.readers[entry] == 1 && e.outputs.len() == 1)
            .then_some((entry, e))
    }

    /// Whether every value in `refs` and every output of the entries `ids`
    /// is of `dtype`.
    fn all_of(&self, dtype: Dtype, refs: &[ValueRef], ids: &[usize]) -> bool {
        let of = |r: &ValueRef| spec_of_ref(self.tape, self.constants, r).dtype == dtype;
        refs.iter().all(of)
            && ids
                .iter()
                .all(|&i| self.tape.entries[i].outputs[0].dtype == dtype)
    }

    /// [`Self::sole`] for one of a binary entry's two operands, with the
    /// other operand.
    fn either(&self, ins: &[ValueRef], name: &str) -> Option<((usize, &TapeEntry), ValueRef)> {
        let [a, b] = ins else { return None };
        self.sole(*a, name)
            .map(|m| (m, *b))
            .or_else(|| self.sole(*b, name).map(|m| (m, *a)))
    }

    fn shape(&self, r: ValueRef) -> Vec<i32> {
        spec_of_ref(self.tape, self.constants, &r).shape
    }

    /// Whether `r`'s shape passes `test`, or that of the value `r` is a
    /// broadcast of.
    fn shape_or_source(&self, r: ValueRef, test: impl Fn(&[i32]) -> bool) -> bool {
        if test(&self.shape(r)) {
            return true;
        }
        let ValueRef::Entry { entry, .. } = r else {
            return false;
        };
        let e = &self.tape.entries[entry];
        e.primitive.as_any().is::<Broadcast>() && test(&self.shape(e.inputs[0]))
    }

    /// Whether every element of `r` is the same value: it has one, or it
    /// is a broadcast of one.
    fn is_uniform(&self, r: ValueRef) -> bool {
        self.shape_or_source(r, |s| s.iter().product::<i32>() == 1)
    }

    /// Whether `r` (shaped like x, `d` values a row) holds the same row
    /// for every row of x: one row, or a broadcast of one.
    fn is_one_row(&self, r: ValueRef, d: i32) -> bool {
        self.shape_or_source(r, |s| {
            s.iter().product::<i32>() == d && s.last() == Some(&d)
        })
    }

    /// `x · rsqrt(sum(x²) · a + eps) · w` over the last axis, as MLX's
    /// fallback records it (`a` = 1 / d, `a`, `eps` one value each), rooted
    /// at the last multiply `k`. The statistics are float32; a half-precision
    /// norm rounds `x · rsqrt(..)` to its type (a cast) before the weight.
    fn rms_norm(&self, k: usize) -> Option<Match> {
        let root = &self.tape.entries[k];
        let dtype = root.outputs[0].dtype;
        if root.primitive.name() != "Multiply" || !is_kernel_dtype(dtype) {
            return None;
        }
        let shape = &root.outputs[0].shape;
        let d = *shape.last()?;
        let either = |ins: &[ValueRef], name: &str| self.either(ins, name);
        let sole = |r, name: &str| self.sole(r, name);
        // root = cast(y) · w (or y · w in float32), y = x · broadcast(r)
        let (cast, ((y, ye), w)) = if dtype == Dtype::Float32 {
            (None, either(&root.inputs, "Multiply")?)
        } else {
            let ((c, ce), w) = either(&root.inputs, "AsType")?;
            (Some(c), (sole(ce.inputs[0], "Multiply")?, w))
        };
        let ((rb, rbe), x) = either(&ye.inputs, "Broadcast")?;
        let (r, re) = sole(rbe.inputs[0], "Sqrt")?;
        // r = rsqrt(m + eps), m = sum(x²) · a
        let (m2, m2e) = sole(re.inputs[0], "Add")?;
        let ((m1, m1e), eps) = either(&m2e.inputs, "Multiply")?;
        let ((s, se), a) = either(&m1e.inputs, "Reduce")?;
        let (sq, sqe) = sole(se.inputs[0], "Square")?;
        let recip = re.primitive.as_any().downcast_ref::<Sqrt>()?.recip;
        let red = se.primitive.as_any().downcast_ref::<Reduce>()?;
        let last = shape.len() as i32 - 1;
        let row_sum = red.reduce_type == ReduceType::Sum && red.axes == [last];
        let fits = recip
            && row_sum
            && sqe.inputs[0] == x
            && self.shape(x) == *shape
            && self.shape(w) == *shape
            && self.all_of(Dtype::Float32, &[x, a, eps], &[sq, s, m1, m2, r, rb, y])
            && self.all_of(
                dtype,
                &[w],
                &cast.into_iter().chain([k]).collect::<Vec<_>>(),
            )
            && self.is_uniform(a)
            && self.is_uniform(eps)
            && self.is_one_row(w, d);
        fits.then(|| {
            let mut interior = vec![sq, s, m1, m2, r, rb, y];
            interior.extend(cast);
            interior.push(k);
            (Kind::RmsNorm, vec![x, a, eps, w], interior)
        })
    }

    /// MLX's rope (not `traditional`) on the two halves of the first
    /// `dims` of x's last axis: `concat(x1 · c − x2 · s, x1 · s + x2 · c)`,
    /// then x's other elements when `dims` is less than the axis, rooted at
    /// the concatenate `k`.
    fn rope(&self, k: usize) -> Option<Match> {
        let root = &self.tape.entries[k];
        let cat = root.primitive.as_any().downcast_ref::<Concatenate>()?;
        let out = &root.outputs[0];
        if !is_last_axis(cat.axis, out.shape.len()) {
            return None;
        }
        let (o1, o2, tail) = match root.inputs[..] {
            [o1, o2] => (o1, o2, None),
            [o1, o2, t] => (o1, o2, Some(t)),
            _ => return None,
        };
        let (x, c, s, mut interior, dims) = self.rotation(o1, o2, false)?;
        let tail = self.rest(tail, x, dims)?;
        (self.shape(x) == out.shape).then(|| {
            interior.extend(tail);
            interior.push(k);
            (Kind::RopeHalves, vec![x, c, s], interior)
        })
    }

    /// MLX's `traditional` rope, on the even and odd elements of the first
    /// `dims` of x's last axis: each of `x1 · c − x2 · s` and
    /// `x1 · s + x2 · c` given a trailing axis, the two concatenated on it
    /// and the pairs reshaped back, rooted at that reshape `k`, or at the
    /// concatenate `k` that appends x's other elements when `dims` is less
    /// than the axis.
    fn rope_pairs(&self, k: usize) -> Option<Match> {
        let root = &self.tape.entries[k];
        let out = &root.outputs[0];
        let (reshape, tail) = match root.primitive.as_any().downcast_ref::<Concatenate>() {
            Some(cat) if is_last_axis(cat.axis, out.shape.len()) => {
                let [r, t] = root.inputs[..] else {
                    return None;
                };
                (self.sole(r, "Reshape")?.0, Some(t))
            }
            _ => (k, None),
        };
        let re = &self.tape.entries[reshape];
        if re.primitive.name() != "Reshape" {
            return None;
        }
        let (cat, cate) = self.sole(re.inputs[0], "Concatenate")?;
        let axis = cate.primitive.as_any().downcast_ref::<Concatenate>()?.axis;
        let [e1, e2] = cate.inputs[..] else {
            return None;
        };
        // `expand_dims(o, -1)`: o's shape and a trailing 1.
        let expanded = |e| {
            let (i, ee) = self.sole(e, "ExpandDims")?;
            let mut shape = self.shape(ee.inputs[0]);
            shape.push(1);
            (ee.outputs[0].shape == shape).then_some((i, ee.inputs[0]))
        };
        let ((e1, o1), (e2, o2)) = (expanded(e1)?, expanded(e2)?);
        let (x, c, s, mut interior, dims) = self.rotation(o1, o2, true)?;
        let tail = self.rest(tail, x, dims)?;
        let mut rotated = self.shape(x);
        *rotated.last_mut()? = dims;
        let fits = is_last_axis(axis, cate.outputs[0].shape.len())
            && re.outputs[0].shape == rotated
            && self.shape(x) == out.shape;
        fits.then(|| {
            interior.extend([e1, e2, cat]);
            interior.extend(tail);
            if reshape != k {
                interior.push(reshape);
            }
            interior.push(k);
            (Kind::RopePairs, vec![x, c, s], interior)
        })
    }

    /// The rotation of both ropes: `o1 = x1 · c − x2 · s` and
    /// `o2 = x1 · s + x2 · c`, x1 and x2 the halves of the first `dims` of
    /// x's last axis (`pairs` false) or their even and odd elements (true),
    /// all in one of the kernels' dtypes. Returns x, c, s, the matched
    /// entries and `dims`.
    fn rotation(
        &self,
        o1: ValueRef,
        o2: ValueRef,
        pairs: bool,
    ) -> Option<(ValueRef, ValueRef, ValueRef, Vec<usize>, i32)> {
        let (o1i, o1e) = self.sole(o1, "Subtract")?;
        let (o2i, o2e) = self.sole(o2, "Add")?;
        let dtype = o1e.outputs[0].dtype;
        if !is_kernel_dtype(dtype) {
            return None;
        }
        let product = |r| {
            let (i, e) = self.sole(r, "Multiply")?;
            Some((i, e.inputs[0], e.inputs[1]))
        };
        let part = |a, b, which| {
            self.part(a, b, which, pairs)
                .or_else(|| self.part(b, a, which, pairs))
        };
        // x1 · c and x2 · s, either operand first.
        let (m1, p, q) = product(o1e.inputs[0])?;
        let (m2, u, v) = product(o1e.inputs[1])?;
        let (x, x1, x1e, c, dims) = part(p, q, 0)?;
        let (x_, x2, x2e, s, dims_) = part(u, v, 1)?;
        let (m3, a3, b3) = product(o2e.inputs[0])?;
        let (m4, a4, b4) = product(o2e.inputs[1])?;
        let has = |a, b, want: [ValueRef; 2]| {
            (a, b) == (want[0], want[1]) || (b, a) == (want[0], want[1])
        };
        // x1 · s + x2 · c, either product first.
        let second = (has(a3, b3, [x1, s]) && has(a4, b4, [x2, c]))
            || (has(a3, b3, [x2, c]) && has(a4, b4, [x1, s]));
        let half_shape = self.shape(x1);
        let fits = x == x_
            && dims == dims_
            && second
            && self.shape(c) == half_shape
            && self.shape(s) == half_shape
            && self.all_of(dtype, &[x, c, s], &[m1, m2, m3, m4, o1i, o2i]);
        fits.then(|| (x, c, s, vec![x1e, x2e, m1, m2, m3, m4, o1i, o2i], dims))
    }

    /// When `slice` is part `which` (0 or 1) of the first `dims` (even) of
    /// the last axis of some x, read only by the two products of the rope:
    /// their first or second half, or (`pairs`) their even or odd elements.
    /// Returns (x, the slice, its entry, the other operand, `dims`).
    fn part(
        &self,
        slice: ValueRef,
        other: ValueRef,
        which: i32,
        pairs: bool,
    ) -> Option<(ValueRef, ValueRef, usize, ValueRef, i32)> {
        let ValueRef::Entry { entry, output: 0 } = slice else {
            return None;
        };
        let e = &self.tape.entries[entry];
        let sl = e.primitive.as_any().downcast_ref::<Slice>()?;
        let x = e.inputs[0];
        let xs = self.shape(x);
        if self.readers[entry] != 2 {
            return None;
        }
        let (start, end, stride) = last_axis_range(sl, &xs)?;
        // The rotated width, and the start and stride it implies.
        let (dims, want) = if pairs {
            (end, (which, 2))
        } else if which == 0 {
            (2 * end, (0, 1))
        } else {
            (2 * start, (start, 1))
        };
        let fits = (start, stride) == want
            && dims > 0
            && dims % 2 == 0
            && dims <= *xs.last()?
            && (pairs || end == (which + 1) * dims / 2);
        fits.then_some((x, slice, entry, other, dims))
    }

    /// The entries that carry x's elements past the rotated `dims`: none
    /// when `tail` is absent and `dims` spans the axis; the slice
    /// `x[..., dims:]` when `tail` is that slice, read only by the rope's
    /// concatenate. None when neither holds.
    fn rest(&self, tail: Option<ValueRef>, x: ValueRef, dims: i32) -> Option<Option<usize>> {
        let xs = self.shape(x);
        let width = *xs.last()?;
        let Some(t) = tail else {
            return (dims == width).then_some(None);
        };
        let (i, e) = self.sole(t, "Slice")?;
        let sl = e.primitive.as_any().downcast_ref::<Slice>()?;
        let fits =
            e.inputs[0] == x && dims < width && last_axis_range(sl, &xs)? == (dims, width, 1);
        fits.then_some(Some(i))
    }

    /// The entry that replaces a match: its steps are the matched entries,
    /// reading `ext` (the kernel's inputs) and each other.
    fn entry_for(&self, kind: Kind, mut ext: Vec<ValueRef>, mut interior: Vec<usize>) -> TapeEntry {
        let root = *interior.last().expect("a match has a root");
        interior.sort_unstable();
        let steps: Vec<Step> = interior
            .iter()
            .map(|&i| {
                let e = &self.tape.entries[i];
                let ops = e
                    .inputs
                    .iter()
                    .map(|r| match *r {
                        ValueRef::Entry { entry, .. } if interior.contains(&entry) => {
                            Operand::Step(interior.binary_search(&entry).expect("sorted"))
                        }
                        other => Operand::Input(input_index(&mut ext, other)),
                    })
                    .collect();
                (e.primitive.clone(), ops)
            })
            .collect();
        TapeEntry {
            primitive: Box::new(Recognized::new(kind, steps)),
            inputs: ext,
            outputs: self.tape.entries[root].outputs.clone(),
        }
    }
}
